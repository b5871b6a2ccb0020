//! Fuzz target `messages`: see `condense_fuzz::messages` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| condense_fuzz::messages(data));
