//! Fuzz target `options`: see `condense_fuzz::options` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| condense_fuzz::options(data));
