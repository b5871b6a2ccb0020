//! Unicode words (UAX #29), with a fast path for ASCII text.
//!
//! [`words`] yields exactly what `unicode-segmentation`'s `unicode_words()` yields (the word
//! segments that contain a letter or a digit), and delegates to it for any text with a
//! non-ASCII byte. For ASCII text it applies the rules of UAX #29 that ASCII characters can
//! trigger, byte by byte, instead of the crate's general state machine and table lookups:
//! at the size of query results (tens of kilobytes per query) the crate's segmentation was
//! a third of the n-gram dedup stage's time.
//!
//! **The ASCII rules.** Word_Break classes of ASCII: letters are ALetter, digits Numeric, `_`
//! ExtendNumLet, `:` MidLetter, `,` and `;` MidNum, `.` MidNumLet, `'` Single_Quote; the rest
//! break (WB999), or are line ends and spaces (WB3–WB3d), which never join a word. So:
//! - letters, digits and `_` join one another in any order (WB5, WB8–WB10, WB13a, WB13b);
//! - one `:`, `.` or `'` joins when a letter is on both sides (WB6, WB7);
//! - one `,`, `;`, `.` or `'` joins when a digit is on both sides (WB11, WB12);
//! - a segment is yielded when it has a letter or a digit (a lone `_` run is not a word).
//!
//! The property test below checks this against the crate on random ASCII strings drawn from
//! every class.

use unicode_segmentation::{UnicodeSegmentation, UnicodeWords};

/// The words of `text`, in order: the same `&str`s as `text.unicode_words()`.
pub fn words(text: &str) -> Words<'_> {
    if text.is_ascii() {
        Words::Ascii { text, pos: 0 }
    } else {
        Words::Unicode(text.unicode_words())
    }
}

/// The iterator of [`words`].
#[derive(Debug)]
pub enum Words<'a> {
    /// An ASCII text and the byte where the scan resumes.
    Ascii {
        /// The text (ASCII only).
        text: &'a str,
        /// Where the next segment may start.
        pos: usize,
    },
    /// Any other text: the crate's segmentation.
    Unicode(UnicodeWords<'a>),
}

/// Letters, digits and `_`: the ASCII characters that join one another.
const JOIN: u8 = 1;
/// A letter (ALetter).
const LETTER: u8 = 2;
/// A digit (Numeric).
const DIGIT: u8 = 4;
/// Joins two letters: `:`, `.`, `'` (MidLetter, MidNumLet, Single_Quote).
const MID_LETTER: u8 = 8;
/// Joins two digits: `,`, `;`, `.`, `'` (MidNum, MidNumLet, Single_Quote).
const MID_NUM: u8 = 16;

/// The classes of every byte (non-ASCII bytes have none; they never reach the ASCII path).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c.is_ascii_alphabetic() {
            JOIN | LETTER
        } else if c.is_ascii_digit() {
            JOIN | DIGIT
        } else if c == b'_' {
            JOIN
        } else if c == b'.' || c == b'\'' {
            MID_LETTER | MID_NUM
        } else if c == b':' {
            MID_LETTER
        } else if c == b',' || c == b';' {
            MID_NUM
        } else {
            0
        };
        b += 1;
    }
    t
};

#[inline]
fn class(b: u8) -> u8 {
    CLASS[b as usize]
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let (text, pos) = match self {
            Words::Unicode(w) => return w.next(),
            Words::Ascii { text, pos } => (*text, pos),
        };
        let bytes = text.as_bytes();
        loop {
            // A word starts with a letter, a digit or `_`: the middle characters join only
            // between two of those, so they never begin a segment of more than one byte.
            while *pos < bytes.len() && class(bytes[*pos]) & JOIN == 0 {
                *pos += 1;
            }
            if *pos >= bytes.len() {
                return None;
            }
            let start = *pos;
            let mut alnum = false;
            while let Some(&b) = bytes.get(*pos) {
                let c = class(b);
                if c & JOIN != 0 {
                    alnum |= c & (LETTER | DIGIT) != 0;
                    *pos += 1;
                    continue;
                }
                let (Some(&before), Some(&after)) = (bytes.get(*pos - 1), bytes.get(*pos + 1))
                else {
                    break;
                };
                let (before, after) = (class(before), class(after));
                let letters = before & after & LETTER != 0 && c & MID_LETTER != 0;
                let digits = before & after & DIGIT != 0 && c & MID_NUM != 0;
                if letters || digits {
                    *pos += 1;
                } else {
                    break;
                }
            }
            if alnum {
                return text.get(start..*pos);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;

    fn both(text: &str) -> (Vec<&str>, Vec<&str>) {
        (words(text).collect(), text.unicode_words().collect())
    }

    #[test]
    fn examples_match_the_crate() {
        for text in [
            "",
            "_",
            "__init__",
            "can't stop, won't stop",
            "e.g. a.b.c a..b a.1 1.a 3.14 1,000,000.5 1;2 a:b a::b x_1 _a a_ a_.b",
            "http://example.com/a_b?c=1&d=2#frag",
            "end. 'quoted' \"double\" tab\tline\r\nnext",
            "3rd 2nd x86_64 foo-bar foo/bar foo\\bar",
            "'a' a' 'a 1' '1 1'2 a'1",
        ] {
            let (fast, crate_words) = both(text);
            assert_eq!(fast, crate_words, "{text:?}");
        }
    }

    #[test]
    fn non_ascii_text_goes_to_the_crate() {
        let text = "café naïve 東京 a.b";
        assert!(matches!(words(text), Words::Unicode(_)));
        let (fast, crate_words) = both(text);
        assert_eq!(fast, crate_words);
    }

    // proptest is a native-only dev-dependency (the lib's unit tests also build for wasm32).
    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn ascii_words_equal_the_crate(
            text in proptest::collection::vec(
                prop_oneof![
                    Just("a"), Just("Z"), Just("q"), Just("0"), Just("7"), Just("_"),
                    Just(":"), Just("."), Just(","), Just(";"), Just("'"), Just("\""),
                    Just(" "), Just("  "), Just("\t"), Just("\n"), Just("\r\n"), Just("\r"),
                    Just("-"), Just("/"), Just("!"), Just("#"), Just("@"), Just("\u{b}"),
                    Just("\u{c}"), Just("\u{0}"), Just("\u{7f}"), Just("ab"), Just("12"),
                ],
                0..40,
            )
        ) {
            let text: String = text.concat();
            let (fast, crate_words) = both(&text);
            prop_assert_eq!(fast, crate_words, "{:?}", text);
        }
    }
}
