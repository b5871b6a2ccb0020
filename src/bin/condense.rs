//! The `condense` CLI (DESIGN.md §7).
fn main() {}
