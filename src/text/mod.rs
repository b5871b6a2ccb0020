//! Text utilities shared by every operation: token estimation, code fences, sentences and
//! key tokens.

pub mod detect;
pub mod fences;
pub mod hash;
pub mod keys;
pub mod score;
pub mod sentences;
pub mod tokens;

pub use tokens::{count_chars, estimate_tokens, measure};
