//! The CLI's own source (src/bin/condense.rs), compiled in so the `cli_jsonl` target drives its
//! JSONL loop in memory (`run_cli` over a reader and a writer, as `main` does over stdin and
//! stdout).

#[allow(dead_code)]
#[path = "../../src/bin/condense.rs"]
mod bin;

pub(crate) use bin::cli::run_cli;
