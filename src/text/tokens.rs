//! Token counting.
//!
//! [`estimate_tokens`] is the fast default, one pass over the bytes, fitted to the o200k
//! tokenizer (the one budgets are judged in) so that it errs on the high side:
//! - a run of letters costs one token per camel-case part, plus one per further 6 letters of a
//!   part (`the` → 1, `internationalization` → 4, `parseConfigFile` → 3); a run with more than
//!   three inner capitals (random ids such as `pYNr2kXMJrhb`) costs one per 3 letters; a run of
//!   two or more capitals alone (codes such as `SFO`, `AAPL`, `ZRFRE`, which o200k splits into
//!   pieces of about two letters) costs one per 2 letters plus one (`SFO` → 2, `AAPL` → 3);
//!   Latin-1 and Latin Extended letters (`é`, `ł`) count as letters;
//! - a run of digits costs one token per 3 digits, plus one for a space before it;
//! - a run of 2+ spaces or tabs costs 1, a run of white space with a line break costs 1, a
//!   single space nothing (it joins the next word);
//! - any other ASCII character 1, any other character 1 (2 outside the Basic Multilingual
//!   Plane: emoji).
//!
//! Measured against o200k (gpt-tokenizer 4.0.0) on the dev conversations with
//! `bench/token_error.mjs` (sharegpt and tool sessions in both shapes, 230 conversations):
//! whole conversations 1.06× to 1.56× the o200k count (median 1.29×); after `compress`
//! 1.08× to 1.59×; after `targetRatio: 0.25` 1.02× to 1.55×, and every result the estimate
//! says fits is within its budget in o200k tokens (`compress` also keeps 1/32 of a budget in
//! reserve with the estimator). Single message texts: 0.67× to 2.14× (median 1.29×; 26 of
//! 2834 under 1.0, short texts of rare words). Callers who need a hard limit in a tokenizer
//! pass their own
//! counter (`compress::TokenCounter`, JS `countTokens`).

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
    measure_with(text)
}

/// The run-at-a-time estimator [`measure`] must agree with (kept as the specification): the
/// scalar loop alone, without the 64-bytes-at-a-time block path and the SWAR path for
/// lower-case runs.
#[cfg(test)]
pub(crate) fn measure_reference(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut tokens = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        i = run_at::<false>(bytes, i, &mut tokens);
    }
    (count_chars(text), tokens)
}

/// The estimator: 64 bytes at a time as bit masks (every complete run of an ASCII block
/// counted with bit arithmetic, no branch per run), the scalar loop for blocks with non-ASCII
/// bytes and for runs longer than a block.
fn measure_with(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut tokens = 0usize;
    let mut chars = 0usize;
    // Invariant: `i` is the start of a run (the scalar loop also stops only at run starts).
    let mut i = 0;
    while i < n {
        let len = (n - i).min(64);
        let mut padded = [b'!'; 64];
        let block = match bytes
            .get(i..i + 64)
            .and_then(|b| <&[u8; 64]>::try_from(b).ok())
        {
            Some(block) => block,
            None => {
                // The tail: padding of `!` (one-byte runs, never counted; not a control
                // character, which would make the masks take their second pass).
                padded[..len].copy_from_slice(&bytes[i..i + len]);
                &padded
            }
        };
        let m = Masks::of(block);
        let valid = if len == 64 {
            u64::MAX
        } else {
            (1u64 << len) - 1
        };
        let high = m.high & valid;
        if high != 0 {
            // Non-ASCII: the scalar loop up to and including the first such byte.
            let (from, target) = (i, i + high.trailing_zeros() as usize + 1);
            while i < target {
                i = run_at::<true>(bytes, i, &mut tokens);
            }
            chars += count_chars_of(&bytes[from..i]);
            continue;
        }
        let prev_space = i > 0 && bytes[i - 1] == b' ';
        match m.count(len, prev_space) {
            Some((done, t)) => {
                // All ASCII: one character per byte.
                tokens += t;
                chars += done;
                i += done;
            }
            // One run fills the block: the scalar loop takes it whole.
            None => {
                let from = i;
                i = run_at::<true>(bytes, i, &mut tokens);
                chars += count_chars_of(&bytes[from..i]);
            }
        }
    }
    (chars, tokens)
}

/// Class masks of a 64-byte block: bit `j` is byte `j`.
struct Masks {
    high: u64,
    digit: u64,
    lower: u64,
    upper: u64,
    blank: u64,
    newline: u64,
    space: u64,
}

impl Masks {
    /// The masks with wasm SIMD: sixteen bytes per compare, `i8x16.bitmask` to gather. Letters
    /// are one range on `b | 0x20` (capitals are letters that are not lower case); tabs and
    /// line breaks, which compact JSON has none of, take a second pass only when the block has a
    /// control character.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline(always)]
    fn of(block: &[u8; 64]) -> Masks {
        use core::arch::wasm32::{
            i8x16_lt, u64x2, u8x16_add, u8x16_bitmask, u8x16_eq, u8x16_splat, v128, v128_or,
        };
        // `lo <= b < lo + count` as one signed compare: `b + (0x80 - lo)` wraps the range to
        // the bottom of the signed bytes.
        let in_range = |v: v128, lo: u8, count: u8| {
            u8x16_bitmask(i8x16_lt(
                u8x16_add(v, u8x16_splat(0x80u8.wrapping_sub(lo))),
                u8x16_splat(0x80u8.wrapping_add(count)),
            ))
        };
        // 16 bytes of the block as one vector (read without alignment assumptions).
        let load = |chunk: &[u8]| {
            let mut lo = [0u8; 8];
            let mut hi = [0u8; 8];
            lo.copy_from_slice(&chunk[..8]);
            hi.copy_from_slice(&chunk[8..]);
            u64x2(u64::from_le_bytes(lo), u64::from_le_bytes(hi))
        };
        let mut high = 0u64;
        let mut digit = 0u64;
        let mut letter = 0u64;
        let mut lower = 0u64;
        let mut space = 0u64;
        let mut control = 0u64;
        for (k, chunk) in block.chunks_exact(16).enumerate() {
            let v = load(chunk);
            let shift = 16 * k;
            high |= u64::from(u8x16_bitmask(v)) << shift;
            digit |= u64::from(in_range(v, b'0', 10)) << shift;
            letter |= u64::from(in_range(v128_or(v, u8x16_splat(0x20)), b'a', 26)) << shift;
            lower |= u64::from(in_range(v, b'a', 26)) << shift;
            space |= u64::from(u8x16_bitmask(u8x16_eq(v, u8x16_splat(b' ')))) << shift;
            control |= u64::from(in_range(v, 0, 0x20)) << shift;
        }
        let (mut blank, mut newline) = (space, 0u64);
        if control != 0 {
            // Tabs and line breaks (none in compact JSON): their masks in a second pass.
            for (k, chunk) in block.chunks_exact(16).enumerate() {
                let v = load(chunk);
                let shift = 16 * k;
                let breaks = v128_or(
                    u8x16_eq(v, u8x16_splat(b'\n')),
                    u8x16_eq(v, u8x16_splat(b'\r')),
                );
                blank |= u64::from(in_range(v, b'\t', 5)) << shift;
                newline |= u64::from(u8x16_bitmask(breaks)) << shift;
            }
        }
        Masks {
            high,
            digit,
            lower,
            upper: letter & !lower,
            blank,
            newline,
            space,
        }
    }

    /// The masks in portable SWAR, eight bytes per word.
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    #[inline]
    fn of(block: &[u8; 64]) -> Masks {
        const LOW: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        /// The high bit of each byte of `x`, as 8 bits (bit j = byte j).
        fn gather(x: u64) -> u64 {
            ((x & HIGH) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
        }
        let mut m = Masks {
            high: 0,
            digit: 0,
            lower: 0,
            upper: 0,
            blank: 0,
            newline: 0,
            space: 0,
        };
        for (w, chunk) in block.chunks_exact(8).enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let x = u64::from_le_bytes(word);
            let shift = 8 * w;
            m.high |= gather(x) << shift;
            // The ranges below are only meaningful for ASCII bytes: clear the high bits first
            // so that no addition carries into the next byte.
            let x = x & !HIGH;
            let ge = |c: u8| x.wrapping_add(LOW * u64::from(0x80 - c));
            let digit = ge(b'0') & !ge(b'9' + 1);
            let upper = ge(b'A') & !ge(b'Z' + 1);
            let lower = ge(b'a') & !ge(b'z' + 1);
            let space = ge(b' ') & !ge(b' ' + 1);
            let newline = (ge(b'\n') & !ge(b'\n' + 1)) | (ge(b'\r') & !ge(b'\r' + 1));
            let blank = (ge(b'\t') & !ge(b'\r' + 1)) | space;
            m.digit |= gather(digit) << shift;
            m.upper |= gather(upper) << shift;
            m.lower |= gather(lower) << shift;
            m.space |= gather(space) << shift;
            m.newline |= gather(newline) << shift;
            m.blank |= gather(blank) << shift;
        }
        m
    }

    /// The tokens of the complete runs of an all-ASCII block that starts at a run start:
    /// `(bytes counted, tokens)`, `None` when the block is one run that may go on.
    #[inline]
    fn count(&self, len: usize, prev_space: bool) -> Option<(usize, usize)> {
        let (digit, blank) = (self.digit, self.blank);
        let letter = self.lower | self.upper;
        // Byte j continues the run of byte j - 1 (other characters are runs of one).
        let continues = (digit & digit << 1) | (letter & letter << 1) | (blank & blank << 1);
        let starts = !continues & !1;
        if starts == 0 {
            return None;
        }
        // Runs that start before the last start are complete (a block shorter than 64 bytes
        // ends with zero padding, one-byte runs: everything up to `len` is complete).
        let done = (63 - starts.leading_zeros() as usize).min(len);
        let counted = (1u64 << done) - 1;
        let other = !(digit | letter | blank);
        let mut tokens = (other & counted).count_ones() as usize;

        // Digits: one token per 3 (at run offsets 0, 3, 6, …), one more after a space.
        let digit_starts = digit & !(digit << 1);
        let digit3 = digit & digit << 1 & digit << 2;
        tokens += (every(digit_starts, digit3, 3) & counted).count_ones() as usize;
        let after_space = self.space << 1 | u64::from(prev_space);
        tokens += (digit_starts & after_space & counted).count_ones() as usize;

        // Blanks: one per run, except a lone blank that is not a line break.
        let blank_starts = blank & !(blank << 1);
        let lone = blank_starts & !(blank >> 1) & !self.newline;
        tokens += (blank_starts & counted).count_ones() as usize;
        tokens -= (lone & counted).count_ones() as usize;

        // Letters: parts start at a run start or at an upper-case letter after a lower-case
        // one; one token per 6 letters of a part (offsets 0, 6, 12, …).
        let letter_starts = letter & !(letter << 1);
        let part_starts = letter_starts | (self.upper & self.lower << 1);
        let inside = letter & !part_starts;
        let inside6 = inside & inside << 1 & inside << 2 & inside << 3 & inside << 4 & inside << 5;
        let part_tokens = every(part_starts, inside6, 6) & counted;
        tokens += part_tokens.count_ones() as usize;
        // Runs with inner capitals: capitals alone (`SFO`, `ZRFRE`) cost one token per two
        // letters plus one; more than three inner capitals (random ids) one per 3 letters.
        let caps = self.upper & counted;
        let inner_upper = caps & letter << 1;
        if inner_upper.count_ones() > 3 || caps & caps << 1 != 0 {
            // Only the runs with an inner capital can change: spread the inner capitals back
            // to their runs' starts (a segmented prefix over the letter runs, six steps).
            let mut marked = inner_upper;
            let mut pass = letter;
            for step in [1u32, 2, 4, 8, 16, 32] {
                marked |= pass & (marked >> step);
                pass &= pass >> step;
            }
            let mut runs = letter_starts & counted & marked;
            while runs != 0 {
                let start = runs.trailing_zeros();
                runs &= runs - 1;
                let from = u64::MAX << start;
                let end = (!letter & from).trailing_zeros();
                let run = from & !(u64::MAX.checked_shl(end).unwrap_or(0));
                let len = run.count_ones() as usize;
                let cost = if len >= 2 && run & self.lower == 0 {
                    (len + 2) / 2
                } else if (inner_upper & run).count_ones() > 3 {
                    len.div_ceil(3)
                } else {
                    continue;
                };
                tokens -= (part_tokens & run).count_ones() as usize;
                tokens += cost;
            }
        }
        Some((done, tokens))
    }
}

/// `starts`, and every position `step` bytes after a marked one while `keep` holds there
/// (`keep` says the `step` bytes up to the position all continue the same stretch).
#[inline]
fn every(starts: u64, keep: u64, step: u32) -> u64 {
    let mut all = starts;
    let mut t = starts;
    loop {
        t = (t << step) & keep;
        if t == 0 {
            return all;
        }
        all |= t;
    }
}

/// One run of the scalar loop starting at `i`: adds its tokens, returns where it ends.
/// `FAST` adds the SWAR path for runs of lower-case letters.
#[inline]
fn run_at<const FAST: bool>(bytes: &[u8], mut i: usize, tokens: &mut usize) -> usize {
    let n = bytes.len();
    let class = CLASS[bytes[i] as usize];
    if FAST && class == LOWER {
        // Fast path: a run of ASCII lower-case letters found eight bytes at a time. If the
        // run goes on with a capital or a Latin letter, the general path below redoes it.
        let end = lower_run_end(bytes, i);
        match bytes.get(end).map(|&b| CLASS[b as usize]) {
            Some(UPPER) | Some(LATIN) => {}
            _ => {
                *tokens += 1 + (end - i - 1) / 6;
                return end;
            }
        }
    }
    match class {
        LOWER | UPPER | LATIN => {
            // A run of letters; parts split at lower→upper transitions.
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
            *tokens += if letters >= 2 && bytes[start..i].iter().all(u8::is_ascii_uppercase) {
                // Capitals alone (`SFO`, `AAPL`, `ZRFRE`): o200k splits codes like these
                // into pieces of about two letters.
                (letters + 2) / 2
            } else if inner_upper > 3 {
                letters.div_ceil(3)
            } else {
                parts
            };
            i.min(n)
        }
        DIGIT => {
            let start = i;
            while i < n && bytes[i].is_ascii_digit() {
                i += 1;
            }
            *tokens += (i - start).div_ceil(3);
            if start > 0 && bytes[start - 1] == b' ' {
                *tokens += 1;
            }
            i
        }
        BLANK => {
            let start = i;
            let mut newline = false;
            while i < n && CLASS[bytes[i] as usize] == BLANK {
                newline |= bytes[i] == b'\n' || bytes[i] == b'\r';
                i += 1;
            }
            if newline || i - start >= 2 {
                *tokens += 1;
            }
            i
        }
        CONTINUATION => i + 1,
        WIDE => {
            *tokens += 2;
            i + 1
        }
        _ => {
            *tokens += 1;
            i + 1
        }
    }
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
    count_chars_of(text.as_bytes())
}

/// Every byte that is not a UTF-8 continuation byte (`10xxxxxx`) starts a character. Eight
/// bytes at a time: a byte is a continuation byte when its bit 7 is set and its bit 6 is not,
/// which `w & !(w << 1)` puts in bit 7 of each byte (`popcnt` on wasm32 too, where `usize`
/// words, as `str::chars().count()` takes them, are four bytes).
fn count_chars_of(bytes: &[u8]) -> usize {
    let (words, rest) = bytes.as_chunks::<8>();
    let mut continuation = 0usize;
    for w in words {
        let w = u64::from_le_bytes(*w);
        continuation += ((w & !(w << 1)) & 0x8080_8080_8080_8080).count_ones() as usize;
    }
    continuation += rest.iter().filter(|b| (**b & 0xC0) == 0x80).count();
    bytes.len() - continuation
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

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Runs of every class and length across the 64-byte blocks of the fast path.
        #[test]
        fn the_block_path_agrees_with_the_reference(text in "([a-z]{0,70}|[A-Z]{1,9}|[a-zA-Z]{1,20}|[0-9]{1,70}|[ \t\n\r]{1,70}|[ \u{b}\u{c}]|[.,:\"{}_-]{1,5}|[éÉłŁ]|[a-z]{1,6}[éÉ][A-Z]|日|🎉){0,40}") {
            proptest::prop_assert_eq!(measure(&text), measure_reference(&text));
        }

        #[test]
        fn the_block_path_agrees_on_ascii_soup(text in "[a-cA-C0-2 \t\n\r.\"]{0,300}") {
            proptest::prop_assert_eq!(measure(&text), measure_reference(&text));
        }
    }

    #[test]
    fn the_block_path_agrees_at_block_edges() {
        // Every offset of a run against the 64-byte block boundary.
        for pad in 0..70 {
            for run in [
                "abcdefghijklm",
                "ABCDEFGHIJ",
                "parseConfigFileNowAndThen",
                "pYNr2kXMJrhbTKxChm",
                "1234567",
                " 1234",
                "      ",
                " \n ",
                "caf\u{e9}Bar",
            ] {
                for filler in ["", "x", ".", " "] {
                    let text = format!("{}{run}{filler}{run}", ".".repeat(pad));
                    assert_eq!(measure(&text), measure_reference(&text), "{text:?}");
                    let text = format!("{}{run}{filler}", "a".repeat(pad));
                    assert_eq!(measure(&text), measure_reference(&text), "{text:?}");
                }
            }
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
        assert_eq!(estimate_tokens("SFO AAPL"), 5);
        assert_eq!(estimate_tokens("I WARNING ZRFRE"), 1 + 4 + 3);
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
                t += if j - i >= 2 && cs[i..j].iter().all(char::is_ascii_uppercase) {
                    (j - i + 2) / 2
                } else if upper > 3 {
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
            proptest::prop_assert_eq!(count_chars(&text), text.chars().count());
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
