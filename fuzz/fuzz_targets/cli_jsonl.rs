//! Fuzz target `cli_jsonl`: see `condense_fuzz::cli_jsonl` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| condense_fuzz::cli_jsonl(data));
