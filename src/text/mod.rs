//! Text utilities shared by every operation: token estimation (and, later, sentences,
//! scoring, shingles).

pub mod tokens;

pub use tokens::{count_chars, estimate_tokens};
