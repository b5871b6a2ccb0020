//! Token counting.
//!
//! [`estimate_tokens`] is the fast default, one pass over the bytes, fitted to the o200k
//! tokenizer (the one budgets are judged in) so that it errs on the high side:
//! - a run of letters costs one token per camel-case part, plus one per further 6 letters of a
//!   part (`the` → 1, `internationalization` → 4, `parseConfigFile` → 3); a run with more than
//!   three inner capitals (random ids such as `pYNr2kXMJrhb`) costs one per 3 letters;
//!   Latin-1 and Latin Extended letters (`é`, `ł`) count as letters;
//! - a run of digits costs one token per 3 digits, plus one for a space before it;
//! - a run of 2+ spaces or tabs costs 1, a run of white space with a line break costs 1, a
//!   single space nothing (it joins the next word);
//! - any other ASCII character 1, any other character 1 (2 outside the Basic Multilingual
//!   Plane: emoji).
//!
//! Measured against o200k on the dev conversations (sharegpt, tool sessions in both shapes,
//! whole conversations before and after `compress`, 460 texts): 0.95× to 1.52× the o200k count,
//! median 1.27×, under 1.0 only on a few compressed outputs dense with hex ids. Budgets keep a
//! margin for that. Callers who budget in another tokenizer pass their own counter.

/// Estimates the number of tokens of `text` (see the module docs).
///
/// ```
/// use condense::text::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert_eq!(estimate_tokens("hello world"), 2);
/// assert_eq!(estimate_tokens("{\"a\": 12345}"), 9);
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    measure(text).1
}

/// `(count_chars(text), estimate_tokens(text))` in one pass over the bytes.
pub fn measure(text: &str) -> (usize, usize) {
    measure_with::<true>(text)
}

/// The byte-at-a-time estimator [`measure`] must agree with (kept as the specification): the
/// same loop without the eight-bytes-at-a-time path for lower-case runs.
#[cfg(test)]
pub(crate) fn measure_reference(text: &str) -> (usize, usize) {
    measure_with::<false>(text)
}

/// The estimator; `FAST` adds the SWAR path for runs of lower-case letters.
fn measure_with<const FAST: bool>(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    // Characters: every byte that is not a UTF-8 continuation byte (a separate, vectorisable
    // count over the same bytes while they are in cache).
    let chars = bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count();
    let mut tokens = 0usize;
    let mut i = 0;
    let n = bytes.len();
    while i < n {
        let class = CLASS[bytes[i] as usize];
        if FAST && class == LOWER {
            // Fast path: a run of ASCII lower-case letters found eight bytes at a time. If the
            // run goes on with a capital or a Latin letter, the general path below redoes it.
            let end = lower_run_end(bytes, i);
            match bytes.get(end).map(|&b| CLASS[b as usize]) {
                Some(UPPER) | Some(LATIN) => {}
                _ => {
                    tokens += 1 + (end - i - 1) / 6;
                    i = end;
                    continue;
                }
            }
        }
        match class {
            LOWER | UPPER | LATIN => {
                // A run of letters; parts split at lower→upper transitions. The common case,
                // a lower-case word, is one tight loop.
                let start = i;
                let mut parts = 0usize;
                let mut inner_upper = 0usize;
                let mut letters = 0usize;
                let mut part_letters = 0usize;
                while i < n {
                    match CLASS[bytes[i] as usize] {
                        LOWER => {
                            i += 1;
                            letters += 1;
                            part_letters += 1;
                        }
                        LATIN => {
                            i += 2;
                            letters += 1;
                            part_letters += 1;
                        }
                        UPPER => {
                            if i > start {
                                inner_upper += 1;
                                let prev = CLASS[bytes[i - 1] as usize];
                                if prev == LOWER || prev == CONTINUATION {
                                    parts += 1 + (part_letters - 1) / 6;
                                    part_letters = 0;
                                }
                            }
                            i += 1;
                            letters += 1;
                            part_letters += 1;
                        }
                        _ => break,
                    }
                }
                parts += 1 + (part_letters.max(1) - 1) / 6;
                tokens += if inner_upper > 3 {
                    letters.div_ceil(3)
                } else {
                    parts
                };
                i = i.min(n);
            }
            DIGIT => {
                let start = i;
                while i < n && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                tokens += (i - start).div_ceil(3);
                if start > 0 && bytes[start - 1] == b' ' {
                    tokens += 1;
                }
            }
            BLANK => {
                let start = i;
                let mut newline = false;
                while i < n && CLASS[bytes[i] as usize] == BLANK {
                    newline |= bytes[i] == b'\n' || bytes[i] == b'\r';
                    i += 1;
                }
                if newline || i - start >= 2 {
                    tokens += 1;
                }
            }
            CONTINUATION => i += 1,
            WIDE => {
                tokens += 2;
                i += 1;
            }
            _ => {
                tokens += 1;
                i += 1;
            }
        }
    }
    (chars, tokens)
}

/// The end of the run of ASCII lower-case letters starting at `i` (SWAR, eight bytes a step).
#[inline]
fn lower_run_end(bytes: &[u8], mut i: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // Per byte b < 0x80: b + 0x1f sets the high bit iff b >= 'a'; b + 0x05 iff b >= '{'.
        // No carry crosses a byte because every term stays below 0x100.
        let ge_a = x.wrapping_add(0x1f1f_1f1f_1f1f_1f1f);
        let ge_brace = x.wrapping_add(0x0505_0505_0505_0505);
        let lower = ge_a & !ge_brace & !x & HIGH;
        let other = !lower & HIGH;
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i].is_ascii_lowercase() {
        i += 1;
    }
    i
}

const LOWER: u8 = 0;
const DIGIT: u8 = 1;
const BLANK: u8 = 2;
const OTHER: u8 = 3;
const CONTINUATION: u8 = 4;
/// Lead byte of a 2-byte character in U+00C0..U+024F (Latin-1 letters, Latin Extended A/B).
const LATIN: u8 = 5;
/// Lead byte of a 4-byte character (outside the BMP).
const WIDE: u8 = 6;
const UPPER: u8 = 7;

/// The class of every byte, so the loop above is one table look-up per byte.
static CLASS: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_lowercase() {
            LOWER
        } else if c.is_ascii_uppercase() {
            UPPER
        } else if c.is_ascii_digit() {
            DIGIT
        } else if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' || c == 0x0B || c == 0x0C {
            BLANK
        } else if c & 0xC0 == 0x80 {
            CONTINUATION
        } else if c >= 0xC3 && c <= 0xC9 {
            LATIN
        } else if c >= 0xF0 {
            WIDE
        } else {
            OTHER
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
    fn the_fast_path_agrees_with_the_reference_on_real_text() {
        for text in [
            include_str!("../../tests/fixtures/watermark_sessions_dev.jsonl"),
            include_str!("../../tests/fixtures/sharegpt_sample.jsonl"),
            include_str!("../../tests/fixtures/retrieval/docs.jsonl"),
            include_str!("../../README.md"),
        ] {
            for line in text.lines() {
                assert_eq!(measure(line), measure_reference(line), "{line:.80}");
            }
            assert_eq!(measure(text), measure_reference(text));
        }
    }

    #[test]
    fn the_fast_path_agrees_at_the_edges() {
        for t in [
            "",
            "a",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "abcdefghijklmnopq",
            "abcdefghA",
            "abcdefgAbc",
            "caf\u{e9}",
            "abcdefgh\u{e9}x",
            "`abc",
            "\u{e2}`abcdefgh",
            "z{abcdefghz",
            "word word  word\n",
            "x9y",
            "parseConfigFileNow",
            "ab\u{1f600}cd",
        ] {
            assert_eq!(measure(t), measure_reference(t), "{t:?}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn the_fast_path_agrees_with_the_reference(text in "([a-z]{0,12}|[A-Z]{1,3}|[0-9]{1,4}|[ \t\n]{1,3}|[\\`{}~@_.,:;\"'-]|\\PC){0,40}") {
            proptest::prop_assert_eq!(measure(&text), measure_reference(&text));
        }
    }

    #[test]
    fn counts() {
        assert_eq!(estimate_tokens("the"), 1);
        assert_eq!(estimate_tokens("internationalization"), 4);
        assert_eq!(estimate_tokens("parseConfigFile"), 3);
        assert_eq!(estimate_tokens("pYNr2kXMJrhbTKxChm"), 8);
        assert_eq!(estimate_tokens("café crème"), 2);
        assert_eq!(estimate_tokens("日本"), 2);
        assert_eq!(estimate_tokens("🎉"), 2);
        assert_eq!(estimate_tokens("a,b"), 3);
        assert_eq!(estimate_tokens("x  y\n\nz"), 5);
        assert_eq!(estimate_tokens("price 1234567"), 5);
        assert_eq!(count_chars("héllo 日本"), 8);
        assert_eq!(measure("héllo 日本"), (8, 3));
    }

    /// The rules of the module docs, written plainly over chars.
    fn reference(text: &str) -> usize {
        let cs: Vec<char> = text.chars().collect();
        let latin = |c: char| ('\u{C0}'..='\u{27F}').contains(&c);
        let letter = |c: char| c.is_ascii_alphabetic() || latin(c);
        let (mut t, mut i) = (0, 0);
        while i < cs.len() {
            let c = cs[i];
            if letter(c) {
                let (mut j, mut upper, mut parts, mut part) = (i, 0, 0, 0usize);
                while j < cs.len() && letter(cs[j]) {
                    if j > i && cs[j].is_ascii_uppercase() {
                        upper += 1;
                        if cs[j - 1].is_ascii_lowercase() || latin(cs[j - 1]) {
                            parts += 1 + (part - 1) / 6;
                            part = 0;
                        }
                    }
                    part += 1;
                    j += 1;
                }
                parts += 1 + (part - 1) / 6;
                t += if upper > 3 {
                    (j - i).div_ceil(3)
                } else {
                    parts
                };
                i = j;
            } else if c.is_ascii_digit() {
                let mut j = i;
                while j < cs.len() && cs[j].is_ascii_digit() {
                    j += 1;
                }
                t += (j - i).div_ceil(3) + usize::from(i > 0 && cs[i - 1] == ' ');
                i = j;
            } else if matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}') {
                let mut j = i;
                let mut nl = false;
                while j < cs.len() && matches!(cs[j], ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
                {
                    nl |= matches!(cs[j], '\n' | '\r');
                    j += 1;
                }
                t += usize::from(nl || j - i >= 2);
                i = j;
            } else {
                t += if (c as u32) > 0xFFFF { 2 } else { 1 };
                i += 1;
            }
        }
        t
    }

    #[test]
    fn fast_loop_matches_the_rules() {
        for text in [
            "",
            "parseConfigFile and snake_case, 12345 items!\n\n  done",
            "café crème ÉLAN naïve CamelÉtude",
            "pYNr2kXMJrhbTKxChm2WEhBo 日本語 🎉🎉 x\ty",
            "{\"price\": 220.34, \"MA(5)\": [234.34, 212.46]}",
        ] {
            assert_eq!(estimate_tokens(text), reference(text), "{text:?}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn fast_loop_matches_the_rules_on_any_text(text in "[a-zA-Z0-9 \\n\\t.,:;{}\\[\\]\"'_éÉłŁ日🎉-]{0,80}") {
            proptest::prop_assert_eq!(estimate_tokens(&text), reference(&text));
            proptest::prop_assert_eq!(measure(&text).0, text.chars().count());
        }
    }

    #[test]
    fn never_reads_past_the_end() {
        // A Latin lead byte at the very end of a (valid) string, and every short string.
        for text in ["é", "aé", "Aé", "ÉÉ", "\u{24F}x"] {
            let _ = estimate_tokens(text);
        }
    }
}
