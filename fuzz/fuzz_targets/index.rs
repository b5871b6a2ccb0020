//! Fuzz target `index`: see `condense_fuzz::index` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| condense_fuzz::index(data));
