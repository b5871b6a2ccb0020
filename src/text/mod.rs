//! Text utilities shared by every operation: token estimation, code fences, sentences and
//! key tokens.

pub mod detect;
pub mod facts;
pub mod fences;
pub mod hash;
pub mod keys;
pub(crate) mod lines;
pub mod score;
pub mod sentences;
pub mod tokens;
pub mod words;

pub use tokens::{count_chars, estimate_tokens, measure};

/// Test texts made of generated words, each followed by a separator taken in turn (the
/// proptests of the scorer and the detectors build their inputs this way).
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn interleave(words: &[String], seps: &[String]) -> String {
    let mut text = String::new();
    for (i, w) in words.iter().enumerate() {
        text.push_str(w);
        if let Some(sep) = seps.get(i % seps.len().max(1)) {
            text.push_str(sep);
        }
    }
    text
}
