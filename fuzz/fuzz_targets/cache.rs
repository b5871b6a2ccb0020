//! Fuzz target `cache`: see `condense_fuzz::cache` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| condense_fuzz::cache(data));
