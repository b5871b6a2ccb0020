//! Token counting.
//!
//! [`estimate_tokens`] is the fast default: a single pass over the text that charges
//! - one token per started run of 4 ASCII letters or digits (`config` → 2, `a` → 1),
//! - one token per ASCII punctuation or symbol character,
//! - one token per non-ASCII character (CJK, emoji and accented text tokenise densely),
//!
//! and nothing for whitespace. It errs on the side of counting more than o200k / cl100k
//! tokenizers do on English prose and JSON, so that a budget it says is met is met.

/// Estimates the number of tokens of `text` (see the module docs).
///
/// ```
/// use condense::text::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert_eq!(estimate_tokens("hello world"), 4);
/// assert_eq!(estimate_tokens("{\"a\": 1}"), 7);
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    let mut tokens = 0usize;
    let mut run = 0usize;
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() {
            if run.is_multiple_of(4) {
                tokens += 1;
            }
            run += 1;
            continue;
        }
        run = 0;
        if b.is_ascii_whitespace() {
            continue;
        }
        if b < 0x80 || (b & 0xC0) == 0xC0 {
            // ASCII punctuation, or the first byte of a non-ASCII character.
            tokens += 1;
        }
    }
    tokens
}

/// The number of Unicode scalar values of `text` (what the stats call characters).
pub fn count_chars(text: &str) -> usize {
    // Every byte that is not a UTF-8 continuation byte starts a character.
    text.bytes().filter(|b| (b & 0xC0) != 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("日本"), 2);
        assert_eq!(estimate_tokens("a,b"), 3);
        assert_eq!(count_chars("héllo 日本"), 8);
    }
}
