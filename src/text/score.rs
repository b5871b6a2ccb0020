//! The deterministic sentence scorer of extractive summaries.
//!
//! The signals, per sentence (docs/design.md, "The compress pipeline"):
//!
//! | signal | points |
//! |---|---|
//! | camelCase, PascalCase or snake_case identifier | +3 each |
//! | emphasis word (`importantly`, `however`, `critical`, `must`, …) | +4 once |
//! | number with a unit (`10 seconds`, `500 MB`, `3x`) | +2 each |
//! | vowelless abbreviation of 3+ letters (`npm`, `ssh`) | +2 each |
//! | status word (`PASS`, `FAIL`, `ERROR`, `WARNING`, `WARN`) | +3 each |
//! | grep-style reference (`src/foo.ts:42`) | +2 each |
//! | length 40–120 characters | +2 |
//! | filler opening (`great`, `sure`, `ok`, `thanks`, …) | −10 |
//!
//! and: other key tokens (numbers, paths, URLs, code spans; see [`super::keys`])
//! +1 each, and informative length (+1 for 8–40 words, −2 under 4 words). Position and query
//! relevance are added by the summariser, which knows the document.

use super::keys::{self, KeyKind};

/// The emphasis words ([`is_emphasis`] matches them; a test checks that they agree).
#[cfg_attr(not(test), allow(dead_code))]
const EMPHASIS: [&str; 16] = [
    "important",
    "importantly",
    "however",
    "critical",
    "critically",
    "must",
    "never",
    "always",
    "required",
    "requires",
    "note",
    "warning",
    "key",
    "essential",
    "crucial",
    "but",
];
const FILLER: [&str; 14] = [
    "great",
    "sure",
    "ok",
    "okay",
    "thanks",
    "thank",
    "certainly",
    "absolutely",
    "hello",
    "hi",
    "glad",
    "awesome",
    "perfect",
    "cool",
];
const STATUS: [&str; 6] = ["PASS", "PASSED", "FAIL", "FAILED", "ERROR", "WARNING"];
/// The units ([`is_unit`] matches them; a test checks that they agree).
#[cfg_attr(not(test), allow(dead_code))]
const UNITS: [&str; 32] = [
    "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hour",
    "hours", "day", "days", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "b", "bytes", "%", "x",
    "px", "km", "m", "kg", "usd", "eur",
];

/// The score of one sentence (see the module docs).
///
/// ```
/// use condense::text::score::score_sentence;
/// assert!(score_sentence("The parseConfig call in src/app.ts:42 must FAIL after 30 seconds.") > 10.0);
/// assert!(score_sentence("Sure, happy to help!") < 0.0);
/// ```
pub fn score_sentence(sentence: &str) -> f64 {
    score_sentence_with(sentence, &mut keys::classify)
}

/// [`score_sentence`] with the key-token classifier given (`compress` passes a memoised
/// [`keys::classify`]: the same tokens come back in sentence after sentence).
pub fn score_sentence_with(
    sentence: &str,
    classify: &mut dyn FnMut(&str) -> Option<KeyKind>,
) -> f64 {
    score_sentence_keys(sentence, |f| keys::for_each_key_with(sentence, classify, f))
}

/// [`score_sentence`] with the sentence's key tokens given: `walk` calls its argument with
/// each of them, as [`keys::for_each_key_with`] on the sentence would (the summariser reads
/// them from one walk over the whole text, see `keys::TextKeys`).
pub(crate) fn score_sentence_keys(
    sentence: &str,
    walk: impl FnOnce(&mut dyn FnMut(&str, KeyKind)),
) -> f64 {
    let mut score = 0.0;
    // The white-space separated words, each looked at with the one after it (a unit).
    let mut words = keys::pieces(sentence, &keys::WHITESPACE).peekable();
    let mut count = 0usize;
    let mut first = None;
    let mut emphasis = false;
    while let Some(raw) = words.next() {
        count += 1;
        if first.is_none() {
            first = Some(raw);
        }
        let w = clean(raw);
        if w.is_empty() {
            continue;
        }
        let b = w.as_bytes();
        let shape = Shape::of(b);
        if shape.camel() || shape.pascal(b.len()) || (shape.has(UNDERSCORE) && is_snake(w)) {
            score += 3.0;
        }
        // Every list word is ASCII letters of 2 to 11 bytes (a cheap test before the lists).
        let may_list = (2..=11).contains(&b.len()) && b[0].is_ascii_alphabetic();
        if !emphasis && may_list && {
            let mut buf = [0u8; 16];
            lower(w, &mut buf).is_some_and(is_emphasis)
        } {
            emphasis = true;
            score += 4.0;
        }
        if may_list && b[0].is_ascii_uppercase() && (STATUS.contains(&w) || w == "WARN") {
            score += 3.0;
        }
        if shape.vowelless(b.len()) {
            score += 2.0;
        }
        // Number followed by a unit, or with the unit attached.
        if b[0].is_ascii_digit() {
            let digits = b
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b'.' || **b == b',')
                .count();
            let attached = &w[digits..];
            if (!attached.is_empty() && unit(attached))
                || words.peek().is_some_and(|n| unit(clean(n)))
            {
                score += 2.0;
            }
        }
        // `clean` only trims, so a word as long as its raw form is the raw form.
        if (raw.len() != w.len() || shape.has(COLON)) && is_grep_ref(raw) {
            score += 2.0;
        }
    }
    walk(&mut |key, kind| {
        let counted =
            kind == KeyKind::Identifier && (is_camel(key) || is_pascal(key) || is_snake(key));
        if !counted {
            score += 1.0;
        }
    });
    let len = super::count_chars(sentence);
    if (40..=120).contains(&len) {
        score += 2.0;
    }
    match count {
        0..=3 => score -= 2.0,
        8..=40 => score += 1.0,
        _ => {}
    }
    if let Some(first) = first {
        if in_list(&FILLER, clean(first)) {
            score -= 10.0;
        }
    }
    score
}

// Byte classes of the scorer's word tests ([`Shape`]).
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 4;
const UNDERSCORE: u8 = 8;
const COLON: u8 = 16;
/// A lower-case vowel (`y` included, as [`is_vowelless`] has it); such a byte is also `LOWER`.
const VOWEL: u8 = 32;
/// Anything else: punctuation, white space, non-ASCII bytes.
const OTHER: u8 = 64;

/// The class of every byte, one lookup per byte.
const CLASSES: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'a' | b'e' | b'i' | b'o' | b'u' | b'y' => LOWER | VOWEL,
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            b'_' => UNDERSCORE,
            b':' => COLON,
            _ => OTHER,
        };
        c += 1;
    }
    t
};

/// The byte classes of a word: of its first byte, its second, and the rest OR-ed together.
/// One pass answers [`is_camel`], [`is_pascal`] and [`is_vowelless`] exactly, and tells when
/// [`is_snake`] and [`is_grep_ref`] cannot hold, so most words skip their scans.
struct Shape {
    first: u8,
    second: u8,
    rest: u8,
}

impl Shape {
    fn of(b: &[u8]) -> Shape {
        let class = |i: usize| b.get(i).map_or(0, |&c| CLASSES[c as usize]);
        let rest = b
            .get(2..)
            .unwrap_or_default()
            .iter()
            .fold(0, |m, &c| m | CLASSES[c as usize]);
        Shape {
            first: class(0),
            second: class(1),
            rest,
        }
    }

    fn all(&self) -> u8 {
        self.first | self.second | self.rest
    }

    fn has(&self, class: u8) -> bool {
        self.all() & class != 0
    }

    /// Letters and digits only.
    fn alphanumeric(&self) -> bool {
        self.all() & (UNDERSCORE | COLON | OTHER) == 0
    }

    /// [`is_camel`].
    fn camel(&self) -> bool {
        self.first & LOWER != 0 && (self.second | self.rest) & UPPER != 0 && self.alphanumeric()
    }

    /// [`is_pascal`] of a word of `len` bytes.
    fn pascal(&self, len: usize) -> bool {
        len > 2
            && self.first & UPPER != 0
            && self.second & LOWER != 0
            && self.rest & UPPER != 0
            && self.alphanumeric()
    }

    /// [`is_vowelless`] of a word of `len` bytes.
    fn vowelless(&self, len: usize) -> bool {
        len >= 3 && self.all() & !LOWER == 0
    }
}

/// Whether `w` is one of `list`'s lower-case ASCII words, ignoring ASCII case.
fn in_list(list: &[&str], w: &str) -> bool {
    list.iter().any(|e| e.eq_ignore_ascii_case(w))
}

/// `w` lower-cased into `buf` when it is ASCII and fits (every list word does), for one
/// `match` against a list instead of a case-insensitive compare per list word.
fn lower<'b>(w: &str, buf: &'b mut [u8; 16]) -> Option<&'b [u8]> {
    let b = w.as_bytes();
    let out = buf.get_mut(..b.len())?;
    for (o, c) in out.iter_mut().zip(b) {
        *o = c.to_ascii_lowercase();
    }
    Some(out)
}

/// [`in_list`] of [`EMPHASIS`] on a lower-cased word.
fn is_emphasis(w: &[u8]) -> bool {
    matches!(
        w,
        b"important"
            | b"importantly"
            | b"however"
            | b"critical"
            | b"critically"
            | b"must"
            | b"never"
            | b"always"
            | b"required"
            | b"requires"
            | b"note"
            | b"warning"
            | b"key"
            | b"essential"
            | b"crucial"
            | b"but"
    )
}

/// [`in_list`] of [`UNITS`] on a lower-cased word.
fn is_unit(w: &[u8]) -> bool {
    matches!(
        w,
        b"ms"
            | b"s"
            | b"sec"
            | b"secs"
            | b"second"
            | b"seconds"
            | b"min"
            | b"mins"
            | b"minute"
            | b"minutes"
            | b"h"
            | b"hour"
            | b"hours"
            | b"day"
            | b"days"
            | b"kb"
            | b"mb"
            | b"gb"
            | b"tb"
            | b"kib"
            | b"mib"
            | b"gib"
            | b"b"
            | b"bytes"
            | b"%"
            | b"x"
            | b"px"
            | b"km"
            | b"m"
            | b"kg"
            | b"usd"
            | b"eur"
    )
}

/// Whether `w` is a unit (case-insensitive).
fn unit(w: &str) -> bool {
    let mut buf = [0u8; 16];
    lower(w, &mut buf).is_some_and(is_unit)
}

/// A word without the punctuation around it (no allocation: this runs for every word of every
/// sentence of every pass). Most words start and end with an ASCII letter or digit: those are
/// returned as they are without a look at Unicode's tables.
fn clean(w: &str) -> &str {
    let keep = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'%';
    if let (Some(&f), Some(&l)) = (w.as_bytes().first(), w.as_bytes().last()) {
        if keep(f) && keep(l) {
            return w;
        }
    }
    w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '%')
}

fn is_camel(w: &str) -> bool {
    let b = w.as_bytes();
    b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter().skip(1).any(u8::is_ascii_uppercase)
        && b.iter().all(u8::is_ascii_alphanumeric)
}

fn is_pascal(w: &str) -> bool {
    let b = w.as_bytes();
    b.len() > 2
        && b[0].is_ascii_uppercase()
        && b[1].is_ascii_lowercase()
        && b.iter().skip(2).any(u8::is_ascii_uppercase)
        && b.iter().all(u8::is_ascii_alphanumeric)
}

fn is_snake(w: &str) -> bool {
    // A plain byte loop first: most words have no underscore (see `is_grep_ref`).
    if !w.bytes().any(|b| b == b'_') {
        return false;
    }
    let t = w.trim_matches('_');
    t.contains('_')
        && t.split('_')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()))
        && t.bytes().any(|b| b.is_ascii_alphabetic())
}

/// A vowelless abbreviation (`npm`, `ssh`): the scorer asks [`Shape::vowelless`]; this is its
/// oracle in the tests.
#[cfg_attr(not(test), allow(dead_code))]
fn is_vowelless(w: &str) -> bool {
    w.len() >= 3
        && w.bytes().all(|b| b.is_ascii_lowercase())
        && !w
            .bytes()
            .any(|b| matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y'))
}

fn is_grep_ref(raw: &str) -> bool {
    // path:line or path:line:col (a plain byte loop first: most words have no colon, and a
    // memchr call per word costs more than it saves on words this short).
    if raw.len() < 5 || !raw.bytes().any(|b| b == b':') {
        return false;
    }
    let mut parts = raw.trim_end_matches([',', '.', ')']).split(':');
    let (Some(path), Some(line)) = (parts.next(), parts.next()) else {
        return false;
    };
    path.contains(['/', '.'])
        && path.len() > 2
        && !line.is_empty()
        && line.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;

    /// The scorer as first written (words collected, `str::split`, `trim_matches`, the lists
    /// searched for every word): the oracle of the faster one (its proptests run natively).
    #[cfg(not(target_arch = "wasm32"))]
    fn reference(sentence: &str) -> f64 {
        let mut score = 0.0;
        let clean = |w: &'_ str| -> String {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '%')
                .to_string()
        };
        let words: Vec<&str> = sentence
            .split(|c: char| c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        let mut emphasis = false;
        for (i, raw) in words.iter().enumerate() {
            let w = clean(raw);
            let w = w.as_str();
            if w.is_empty() {
                continue;
            }
            if is_camel(w) || is_pascal(w) || is_snake(w) {
                score += 3.0;
            }
            if !emphasis && in_list(&EMPHASIS, w) {
                emphasis = true;
                score += 4.0;
            }
            if STATUS.contains(&w) || w == "WARN" {
                score += 3.0;
            }
            if is_vowelless(w) {
                score += 2.0;
            }
            let digits = w
                .bytes()
                .take_while(|b| b.is_ascii_digit() || *b == b'.' || *b == b',')
                .count();
            if digits > 0 && w.as_bytes()[0].is_ascii_digit() {
                let attached = &w[digits..];
                let next = words.get(i + 1).map(|n| clean(n));
                if (!attached.is_empty() && in_list(&UNITS, attached))
                    || next.is_some_and(|n| in_list(&UNITS, &n))
                {
                    score += 2.0;
                }
            }
            if is_grep_ref(raw) {
                score += 2.0;
            }
        }
        let mut keys_seen = Vec::new();
        for (key, kind) in keys::extract(sentence) {
            let counted = kind == KeyKind::Identifier
                && (is_camel(&key) || is_pascal(&key) || is_snake(&key));
            if !counted {
                keys_seen.push(key);
            }
        }
        score += keys_seen.len() as f64;
        let len = sentence.chars().count();
        if (40..=120).contains(&len) {
            score += 2.0;
        }
        match words.len() {
            0..=3 => score -= 2.0,
            8..=40 => score += 1.0,
            _ => {}
        }
        if let Some(first) = words.first() {
            if in_list(&FILLER, &clean(first)) {
                score -= 10.0;
            }
        }
        score
    }

    #[test]
    fn list_matches_are_the_lists() {
        let mut buf = [0u8; 16];
        for w in EMPHASIS {
            assert!(lower(w, &mut buf).is_some_and(is_emphasis), "{w}");
            assert!(
                !lower(w, &mut buf).is_some_and(is_unit) || UNITS.contains(&w),
                "{w}"
            );
        }
        for w in UNITS {
            assert!(unit(w) && unit(&w.to_ascii_uppercase()), "{w}");
        }
        // And nothing else: every other word of the lists' alphabet up to 3 letters.
        let alphabet = b"abcdeghikmnorstuwxyz%";
        for len in 1..=3 {
            let mut idx = vec![0usize; len];
            loop {
                let w: String = idx.iter().map(|&i| alphabet[i] as char).collect();
                assert_eq!(unit(&w), in_list(&UNITS, &w), "{w}");
                assert_eq!(
                    lower(&w, &mut buf).is_some_and(is_emphasis),
                    in_list(&EMPHASIS, &w),
                    "{w}"
                );
                let mut k = 0;
                while k < len {
                    idx[k] += 1;
                    if idx[k] < alphabet.len() {
                        break;
                    }
                    idx[k] = 0;
                    k += 1;
                }
                if k == len {
                    break;
                }
            }
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        /// The scorer gives the oracle's score to the bit, on sentences of the words its
        /// signals look at, punctuation and Unicode white space and letters among them.
        #[test]
        fn score_agrees_with_the_reference(
            words in proptest::collection::vec(
                "(Sure|OK|thanks|However|MUST|note|Note|but|PASS|FAIL|WARN|WARNING|Passed|npm|ssh|the|a|\
                 10|3\\.5|1,200|500MB|30|ms|seconds|Mb|x|%|45%|parseConfig|WebSocket|snake_case|_x_|\
                 src/app\\.ts:42|a\\.rs:7:|time:12|`code`|v1\\.2\\.3|https://x\\.org|É|über|中文|😀|\
                 \\(ok\\)|\"Sure,\"|--flag|key\\.|\\[note\\]|\u{a0}|\u{2003}|\u{3000}|\
                 aB|Ab|AbC|xY:z|x:Yz|\\.\\./:12|\\(\\./x/:7|tsk|TsK|qq_r:s)",
                0..30,
            ),
            seps in proptest::collection::vec("( |  |\t|\n|\u{a0}|\u{2028}|, |\\. )", 30),
        ) {
            let text = crate::text::interleave(&words, &seps);
            prop_assert_eq!(score_sentence(&text).to_bits(), reference(&text).to_bits(), "{:?}", text);
        }

        /// Any text at all.
        #[test]
        fn score_agrees_with_the_reference_on_any_text(text in "\\PC{0,200}") {
            prop_assert_eq!(score_sentence(&text).to_bits(), reference(&text).to_bits(), "{:?}", text);
        }
    }

    #[test]
    fn signals() {
        assert!(is_camel("parseConfig") && !is_camel("parse"));
        assert!(is_pascal("WebSocket") && !is_pascal("Hello") && !is_pascal("HTTP"));
        assert!(is_snake("my_var") && !is_snake("_"));
        assert!(is_vowelless("npm") && !is_vowelless("the"));
        assert!(is_grep_ref("src/foo.ts:42:") && !is_grep_ref("time:12"));
        let plain = score_sentence("This is a sentence about nothing in particular at all today.");
        let rich = score_sentence("This is a sentence about parse_config and WebSocket at 10 ms.");
        assert!(rich > plain + 6.0, "{rich} vs {plain}");
        assert!(score_sentence("Thanks, that works.") < plain);
    }
}
