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
    for &b in text.as_bytes() {
        match CLASS[b as usize] {
            ALNUM => {
                tokens += run.is_multiple_of(4) as usize;
                run += 1;
            }
            SPACE => run = 0,
            // ASCII punctuation, or the first byte of a non-ASCII character.
            COUNTED => {
                tokens += 1;
                run = 0;
            }
            // A UTF-8 continuation byte: part of a character already counted.
            _ => run = 0,
        }
    }
    tokens
}

const ALNUM: u8 = 0;
const SPACE: u8 = 1;
const COUNTED: u8 = 2;
const CONTINUATION: u8 = 3;

/// The class of every byte, so the loop above is one table look-up per byte.
static CLASS: [u8; 256] = {
    let mut table = [COUNTED; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_alphanumeric() {
            ALNUM
        } else if c.is_ascii_whitespace() {
            SPACE
        } else if c & 0xC0 == 0x80 {
            CONTINUATION
        } else {
            COUNTED
        };
        b += 1;
    }
    table
};

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

    /// The table-driven loop against the rules written out one by one.
    #[test]
    fn table_matches_the_rules() {
        fn slow(text: &str) -> usize {
            let (mut tokens, mut run) = (0, 0);
            for b in text.bytes() {
                if b.is_ascii_alphanumeric() {
                    if run % 4 == 0 {
                        tokens += 1;
                    }
                    run += 1;
                } else {
                    run = 0;
                    if !b.is_ascii_whitespace() && (b < 0x80 || b & 0xC0 == 0xC0) {
                        tokens += 1;
                    }
                }
            }
            tokens
        }
        for text in [
            "",
            "a",
            "abcdefghi jk",
            "x=1; y = [\"é\", \"日本語\"] 🎉\n\tend",
            "a\u{7f}b\u{0}",
        ] {
            assert_eq!(estimate_tokens(text), slow(text), "{text:?}");
        }
    }
}
