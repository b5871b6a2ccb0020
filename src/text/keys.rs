//! Key tokens: the identifiers, numbers, paths, URLs and code spans a reader (or an agent's
//! next tool call) needs verbatim. Summaries keep the sentences that carry them and append the
//! ones left out; dedup and scoring count them.
//!
//! A token is a run between separators (white space, quotes, brackets, `,;|*=` and backticks),
//! stripped of leading `(`/`[` and trailing `.:!?)]`. It is a key when it matches one of the
//! rules below, in order (first rule wins):
//!
//! | kind | examples |
//! |---|---|
//! | url | `https://x.org/a`, `www.rust-lang.org`, `ops@example.com` |
//! | number | `11/2022`, `2026-12-01`, `14:30`, `v1.2.3`, `$1,200.50`, `45%`, `500MB` (≥ 2 digits) |
//! | path | `src/app/main.rs`, `~/.config`, `../x`, `model.onnx` |
//! | identifier | `--dry-run`, `snake_case`, `camelCase`, `PascalCase`, `serde_json::Value`-like dotted names, `toolu_01ab`, `HTTP` |
//! | code | the content of a `` `code span` `` |

use std::sync::OnceLock;

use regex::Regex;

/// What a key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyKind {
    /// A URL or an e-mail address.
    Url,
    /// A number of two or more digits, a date, a time, a version, an amount.
    Number,
    /// A file path or a file name with a known extension.
    Path,
    /// An identifier: snake/camel/Pascal case, dotted name, letters with digits, ALLCAPS, a flag.
    Identifier,
    /// The content of an inline code span.
    Code,
}

const FILE_EXT: &str = "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|txt|csv|tsv|pdf|png|jpe?g|gif|svg|webp|ico|html?|css|scss|ya?ml|xml|toml|ini|cfg|conf|env|sh|bash|zsh|ps1|bat|rs|go|java|kt|kts|scala|c|h|cpp|hpp|cc|cs|rb|php|swift|m|sql|db|sqlite|log|lock|zip|gz|tgz|tar|whl|docx?|xlsx?|pptx?|mp3|mp4|wav|avi|mov|mkv|r|lua|pl|dart|vue|svelte|bin|exe|dll|so|dylib|onnx|pt|pth|pkl|npy|npz|parquet|wasm|tex|bib|rst|dxf|apk|jar|war|proto|graphql|gradle|tf|dockerfile|makefile|cmake|mk|patch|diff|pem|crt|key|pub|repo|service|plist|xib|sln|csproj|vcxproj";

struct Rules {
    /// The rules in order: the first whose anchored pattern matches decides. (One `RegexSet`
    /// of them scanned each token once for every rule at the same cost per token, and took as
    /// long to compile as the rules themselves: on the first call of a process or page.)
    rules: Vec<(KeyKind, Regex)>,
    ordinal: Option<Regex>,
    initials: Option<Regex>,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let src: Vec<(KeyKind, String)> = vec![
            (KeyKind::Url, r"^(?:https?://|www\.)[^ \t\n\r]{3,}$".into()),
            (KeyKind::Url, r"^[A-Za-z0-9_.+-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+$".into()),
            (
                KeyKind::Number,
                r"^(?:[0-9]{1,4}/[0-9]{1,2}(?:/[0-9]{2,4})?|[0-9]{1,4}\.[0-9]{1,2}(?:\.[0-9]{2,4})?|[0-9]{1,4}-[0-9]{1,2}(?:-[0-9]{2,4})?|[0-9]{1,2}/[0-9]{4})$".into(),
            ),
            (
                KeyKind::Path,
                r"^(?:~|\.{1,2})?/?[A-Za-z0-9_.@-]+(?:[/\\][A-Za-z0-9_.@-]+)+[/\\]?$".into(),
            ),
            (
                KeyKind::Path,
                format!(r"^[A-Za-z0-9_-]{{2,}}(?:\.[A-Za-z0-9_-]+)*\.(?i:{FILE_EXT})$"),
            ),
            (KeyKind::Number, r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9:.]+Z?)?$".into()),
            (KeyKind::Number, r"^[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?$".into()),
            (KeyKind::Number, r"^v?[0-9]+\.[0-9]+(?:\.[0-9]+)+$".into()),
            (
                KeyKind::Number,
                r"^[-+]?[$€£]?[0-9][0-9,]*(?:\.[0-9]+)?(?:%|[kKmMbBx]|ms|s|px|em|GB|MB|KB|GiB|MiB)?$".into(),
            ),
            (KeyKind::Identifier, r"^-{1,2}[A-Za-z][A-Za-z0-9_-]+$".into()),
            (KeyKind::Identifier, r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$".into()),
            (KeyKind::Identifier, r"^[a-z]+[A-Z][A-Za-z0-9]*$".into()),
            (KeyKind::Identifier, r"^[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*$".into()),
            (
                KeyKind::Identifier,
                r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$".into(),
            ),
        ];
        let rules: Vec<(KeyKind, Regex)> = src
            .into_iter()
            .filter_map(|(k, s)| Regex::new(&s).ok().map(|r| (k, r)))
            .collect();
        Rules {
            rules,
            ordinal: Regex::new(r"^[0-9]+(?:st|nd|rd|th|s|ST|ND|RD|TH|S)$").ok(),
            initials: Regex::new(r"^[A-Za-z](?:\.[A-Za-z])+$").ok(),
        }
    })
}

/// Whether `token` is a plain word: ASCII letters, none upper-case but the first (`the`,
/// `Hello`). No rule matches such a token (each needs a digit, a second capital, or one of
/// `./\@:_-$`), so [`classify`] answers `None` without running them: most tokens of prose.
fn plain_word(token: &str) -> bool {
    let b = token.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphabetic) && b[1..].iter().all(u8::is_ascii_lowercase)
}

/// The kind of a single token, if it is a key.
pub fn classify(token: &str) -> Option<KeyKind> {
    if plain_word(token) {
        return None;
    }
    if token.len() > MEMO_MAX_BYTES {
        return classify_rules(token);
    }
    CLASSIFIED.with(|memo| {
        if let Some(&kind) = memo.borrow().get(token) {
            return kind;
        }
        let kind = classify_rules(token);
        let mut memo = memo.borrow_mut();
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(token.into(), kind);
        kind
    })
}

/// Tokens longer than this (in bytes) are not memoised: no rule takes over 160 characters.
const MEMO_MAX_BYTES: usize = 160 * 4;
/// The memo is emptied when it holds this many tokens (a few MB at most).
const MEMO_ENTRIES: usize = 1 << 16;

thread_local! {
    /// [`classify_rules`]' answer for each token seen lately on this thread: the same tokens
    /// come back again and again (a tool output's field values, ids repeated across turns, a
    /// budget's plans reading the same messages), and each answer costs the rules' regex searches.
    /// A pure function's answers, so nothing depends on what the memo holds.
    static CLASSIFIED: std::cell::RefCell<crate::text::hash::FastMap<Box<str>, Option<KeyKind>>> =
        std::cell::RefCell::default();
}

/// [`classify`] without the plain-word shortcut.
fn classify_rules(token: &str) -> Option<KeyKind> {
    let len = token.chars().count();
    if !(2..=160).contains(&len) {
        return None;
    }
    let unescaped;
    let t = if token.contains("\\_") {
        unescaped = token.replace("\\_", "_");
        unescaped.as_str()
    } else {
        token
    };
    let r = rules();
    let matches = |re: &Option<Regex>| re.as_ref().is_some_and(|re| re.is_match(t));
    if matches(&r.ordinal) || matches(&r.initials) {
        return None;
    }
    // The first rule that matches decides (its checks may still refuse the token).
    if let Some(kind) = r
        .rules
        .iter()
        .find(|(_, re)| re.is_match(t))
        .map(|(k, _)| k)
    {
        match kind {
            KeyKind::Number if t.bytes().filter(u8::is_ascii_digit).count() < 2 => return None,
            KeyKind::Path if t.contains(['/', '\\']) => {
                let segs = t.split(['/', '\\']).filter(|s| !s.is_empty()).count();
                let rooted =
                    t.starts_with(['/', '\\', '~']) || t.starts_with("./") || t.starts_with("../");
                let has_ext = t.rsplit_once('.').is_some_and(|(_, e)| {
                    (1..=6).contains(&e.len()) && e.bytes().all(|b| b.is_ascii_alphanumeric())
                });
                if !rooted && segs < 3 && !has_ext && !t.bytes().any(|b| b.is_ascii_digit()) {
                    return None;
                }
            }
            _ => {}
        }
        return Some(*kind);
    }
    // Letters with digits (`toolu_01ab`, `card_3456`, `B0B1`), then ALLCAPS.
    let b = t.as_bytes();
    let ok_chars = b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
    if ok_chars
        && b.len() >= 3
        && b[0].is_ascii_alphanumeric()
        && b.iter().any(u8::is_ascii_alphabetic)
        && b.iter().any(u8::is_ascii_digit)
    {
        return Some(KeyKind::Identifier);
    }
    if b.len() >= 3
        && b[0].is_ascii_uppercase()
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
    {
        return Some(KeyKind::Identifier);
    }
    None
}

/// A table of ASCII characters for [`pieces`]: `base` with `chars` added.
pub(crate) const fn ascii_table(base: [bool; 128], chars: &[u8]) -> [bool; 128] {
    let mut t = base;
    let mut i = 0;
    while i < chars.len() {
        t[chars[i] as usize] = true;
        i += 1;
    }
    t
}

/// White space among ASCII characters, as `char::is_whitespace` has it.
pub(crate) const ASCII_WHITESPACE: [bool; 128] = ascii_table([false; 128], b" \t\n\x0b\x0c\r");

/// Token separators among ASCII characters: white space, quotes, brackets, `,;|*=` and the
/// backtick.
const ASCII_SEPARATOR: [bool; 128] = ascii_table(ASCII_WHITESPACE, b"\"'()[]{}<>,;|*=`");

/// White space ([`ASCII_WHITESPACE`] and beyond ASCII) as [`pieces`] separators.
pub(crate) const WHITESPACE: Separators = Separators::new(ASCII_WHITESPACE);

/// Token separators ([`ASCII_SEPARATOR`] and non-ASCII white space) as [`pieces`] separators.
const SEPARATORS: Separators = Separators::new(ASCII_SEPARATOR);

/// Whether byte `c` leads the UTF-8 of a non-ASCII white-space character (U+0085, U+00A0:
/// `C2`; U+1680: `E1`; U+2000–U+205F: `E2`; U+3000: `E3`). Other characters with these lead
/// bytes are not white space: the character is decoded where one is found.
const fn is_white_space_lead(c: u8) -> bool {
    matches!(c, 0xC2 | 0xE1 | 0xE2 | 0xE3)
}

/// The separators of [`pieces`]: an ASCII table, and beyond ASCII the lead bytes of white space
/// (`C2`, `E1`, `E2`, `E3`), which are decoded where found. Also as two 16-byte nibble tables
/// ("shufti"): byte `b` may separate exactly when `lo[b & 15] & hi[b >> 4]` is not 0, so wasm
/// SIMD tests sixteen bytes with two shuffles ([`Separators::find`]).
pub(crate) struct Separators {
    ascii: [bool; 128],
    #[cfg_attr(
        not(any(test, all(target_arch = "wasm32", target_feature = "simd128"))),
        allow(dead_code)
    )]
    lo: [u8; 16],
    #[cfg_attr(
        not(any(test, all(target_arch = "wasm32", target_feature = "simd128"))),
        allow(dead_code)
    )]
    hi: [u8; 16],
}

impl Separators {
    /// The separators of `ascii` with non-ASCII white space. Each high nibble that holds a
    /// separator gets a bit of its own (at most eight such nibbles, checked when the constant
    /// is built): `hi[h]` is that bit, `lo[l]` has it when byte `h << 4 | l` may separate.
    pub(crate) const fn new(ascii: [bool; 128]) -> Separators {
        let mut lo = [0u8; 16];
        let mut hi = [0u8; 16];
        let mut next_bit = 0u32;
        let mut h = 0;
        while h < 16 {
            let mut l = 0;
            while l < 16 {
                let b = h << 4 | l;
                let member = if b < 128 {
                    ascii[b]
                } else {
                    is_white_space_lead(b as u8)
                };
                if member {
                    if hi[h] == 0 {
                        assert!(next_bit < 8, "separators span more than eight high nibbles");
                        hi[h] = 1 << next_bit;
                        next_bit += 1;
                    }
                    lo[l] |= hi[h];
                }
                l += 1;
            }
            h += 1;
        }
        Separators { ascii, lo, hi }
    }

    /// Whether the nibble tables say what [`may_separate`](Self::may_separate) says, for every
    /// byte.
    #[cfg(test)]
    pub(crate) fn nibbles_agree(&self) -> bool {
        (0..=255u8).all(|b| {
            (self.lo[usize::from(b & 15)] & self.hi[usize::from(b >> 4)] != 0)
                == self.may_separate(b)
        })
    }

    /// Whether byte `c` may separate (an ASCII separator, or a lead byte of non-ASCII white
    /// space).
    #[inline]
    fn may_separate(&self, c: u8) -> bool {
        if c < 0x80 {
            self.ascii[c as usize]
        } else {
            is_white_space_lead(c)
        }
    }

    /// The first byte at or after `from` that may separate, a byte at a time.
    #[inline]
    fn find_scalar(&self, bytes: &[u8], from: usize) -> Option<usize> {
        let rest = bytes.get(from..)?;
        rest.iter()
            .position(|&c| self.may_separate(c))
            .map(|off| from + off)
    }

    /// The first byte at or after `from` that may separate.
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    #[inline]
    fn find(&self, bytes: &[u8], from: usize) -> Option<usize> {
        self.find_scalar(bytes, from)
    }

    /// The first byte at or after `from` that may separate: sixteen bytes at a time, each
    /// looked up by its two nibbles (`i8x16.swizzle`), the hits gathered with `i8x16.bitmask`.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline]
    fn find(&self, bytes: &[u8], from: usize) -> Option<usize> {
        use core::arch::wasm32::{
            i8x16_swizzle, u64x2, u8x16_bitmask, u8x16_eq, u8x16_shr, u8x16_splat, v128, v128_and,
        };
        let load = |chunk: &[u8; 16]| {
            let mut lo = [0u8; 8];
            let mut hi = [0u8; 8];
            lo.copy_from_slice(&chunk[..8]);
            hi.copy_from_slice(&chunk[8..]);
            u64x2(u64::from_le_bytes(lo), u64::from_le_bytes(hi))
        };
        let (lo, hi): (v128, v128) = (load(&self.lo), load(&self.hi));
        let mut i = from;
        while let Some(chunk) = bytes
            .get(i..i + 16)
            .and_then(|c| <&[u8; 16]>::try_from(c).ok())
        {
            let v = load(chunk);
            let classes = v128_and(
                i8x16_swizzle(lo, v128_and(v, u8x16_splat(0x0f))),
                i8x16_swizzle(hi, u8x16_shr(v, 4)),
            );
            let hits = !u8x16_bitmask(u8x16_eq(classes, u8x16_splat(0)));
            if hits != 0 {
                return Some(i + hits.trailing_zeros() as usize);
            }
            i += 16;
        }
        // The last bytes, fewer than sixteen.
        self.find_scalar(bytes, i)
    }
}

/// Checks [`pieces`] (in wasm, its SIMD search) against `str::split` on `texts` random texts
/// made from `seed`: ASCII words and separators, non-ASCII white space and other multi-byte
/// characters, across 16-byte blocks. The first text whose pieces differ is the error. The wasm
/// tests call it (`tests/wasm.rs`); natively a unit test does.
#[cfg(any(test, feature = "test-hooks"))]
#[doc(hidden)]
pub fn check_pieces(seed: u64, texts: usize) -> Result<(), String> {
    const PARTS: [&str; 40] = [
        "a",
        "bc",
        "defgh",
        "ijklmnopqrstuvwxyz0123",
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "\x0b",
        "\x0c",
        ",",
        ";",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "<",
        ">",
        "|",
        "*",
        "=",
        "`",
        "\"",
        "'",
        ":",
        "\u{85}",
        "\u{a0}",
        "\u{1680}",
        "\u{2003}",
        "\u{2028}",
        "\u{205f}",
        "\u{3000}",
        "é",
        "中",
        "😀",
        "\u{2030}",
        "\u{e3}",
    ];
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let separator = |c: char| {
        if c.is_ascii() {
            ASCII_SEPARATOR[c as usize]
        } else {
            c.is_whitespace()
        }
    };
    for _ in 0..texts {
        let len = (next() % 90) as usize;
        let text: String = (0..len)
            .map(|_| PARTS[(next() % PARTS.len() as u64) as usize])
            .collect();
        let cases: [(&str, Vec<&str>, Vec<&str>); 3] = [
            (
                "separators",
                pieces(&text, &SEPARATORS).collect(),
                text.split(separator).filter(|p| !p.is_empty()).collect(),
            ),
            (
                "white space",
                pieces(&text, &WHITESPACE).collect(),
                text.split(char::is_whitespace)
                    .filter(|p| !p.is_empty())
                    .collect(),
            ),
            (
                "at least 5 bytes",
                pieces_of_at_least(&text, &SEPARATORS, 5).collect(),
                text.split(separator).filter(|p| p.len() >= 5).collect(),
            ),
        ];
        for (what, got, want) in cases {
            if got != want {
                return Err(format!("{what} of {text:?}: {got:?}, not {want:?}"));
            }
        }
    }
    Ok(())
}

/// The non-empty pieces of `text` between separators: `table` decides for ASCII characters,
/// and beyond ASCII every white-space character separates. The same pieces as
/// `text.split(|c| if c.is_ascii() { table[c] } else { c.is_whitespace() })` without the empty
/// ones, found a byte at a time: only the lead bytes of non-ASCII white space (`C2`, `E1`, `E2`,
/// `E3`: U+0085, U+00A0, U+1680, U+2000–U+205F, U+3000) are decoded. Word splitting of the
/// sentence scorer and of [`walk_keys`] runs over every sentence a summary looks at.
pub(crate) fn pieces<'a>(text: &'a str, table: &'static Separators) -> Pieces<'a> {
    pieces_of_at_least(text, table, 1)
}

/// [`pieces`] of at least `min` bytes (`min` ≥ 1): the shorter ones are passed over inside the
/// scan.
pub(crate) fn pieces_of_at_least<'a>(
    text: &'a str,
    table: &'static Separators,
    min: usize,
) -> Pieces<'a> {
    Pieces {
        text,
        pos: 0,
        table,
        min: min.max(1),
    }
}

/// The iterator of [`pieces`].
pub(crate) struct Pieces<'a> {
    text: &'a str,
    pos: usize,
    table: &'static Separators,
    min: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let table = self.table;
        let mut start = self.pos;
        let mut i = start;
        loop {
            if self.min > 2 && i == start {
                // Long pieces only (the secret scan asks for 19+ bytes): jump to the first
                // window of `min` bytes free of separators, then scan on from its end.
                let Some(s) = self.window_from(start) else {
                    self.pos = bytes.len();
                    return None;
                };
                start = s;
                i = s + self.min;
            }
            // The next byte that may separate: an ASCII separator, or a lead byte of non-ASCII
            // white space (continuation bytes and other lead bytes never do).
            let Some(at) = table.find(bytes, i) else {
                // The last piece (none once `pos` is at the end).
                self.pos = bytes.len();
                return self.text.get(start..).filter(|p| p.len() >= self.min);
            };
            i = at;
            let width = match bytes.get(i) {
                Some(&c) if c < 0x80 => 1,
                _ => match self.text.get(i..).and_then(|r| r.chars().next()) {
                    Some(ch) if ch.is_whitespace() => ch.len_utf8(),
                    Some(ch) => {
                        i += ch.len_utf8();
                        continue;
                    }
                    None => {
                        i += 1;
                        continue;
                    }
                },
            };
            if i - start >= self.min {
                self.pos = i + width;
                return self.text.get(start..i);
            }
            // An empty (or short) piece: the next one starts after this separator.
            i += width;
            start = i;
        }
    }
}

impl Pieces<'_> {
    /// The width of the separator starting at byte `j` (0 when there is none): an ASCII
    /// separator of the table, or non-ASCII white space (decoded only at its lead bytes).
    #[inline]
    fn separator_at(&self, j: usize) -> usize {
        match self.text.as_bytes().get(j) {
            Some(&c) if c < 0x80 => usize::from(self.table.ascii[c as usize]),
            Some(&c) if is_white_space_lead(c) => {
                match self.text.get(j..).and_then(|r| r.chars().next()) {
                    Some(ch) if ch.is_whitespace() => ch.len_utf8(),
                    _ => 0,
                }
            }
            _ => 0,
        }
    }

    /// The first `s` ≥ `start` at a piece boundary with no separator in `s..s + min` (a piece
    /// of at least `min` bytes starts there), or `None` when no such window is left. Each
    /// window is read backwards from its end: the last separator in it moves the next window
    /// past it, so prose is passed over a few bytes per window instead of every byte.
    fn window_from(&self, start: usize) -> Option<usize> {
        let mut s = start;
        'window: loop {
            let end = s.checked_add(self.min).filter(|&e| e <= self.text.len())?;
            let mut j = end;
            while j > s {
                j -= 1;
                let width = self.separator_at(j);
                if width > 0 {
                    s = j + width;
                    continue 'window;
                }
            }
            return Some(s);
        }
    }
}

/// The key tokens of `text` with their kinds, unique, in order of first occurrence (code
/// spans first).
///
/// ```
/// use condense::text::keys::{extract, KeyKind};
/// let keys = extract("Booked flight 3426812 on 2026-12-01 via `book_flight`; see docs/api.md.");
/// assert_eq!(keys, vec![
///     ("book_flight".to_string(), KeyKind::Code),
///     ("3426812".to_string(), KeyKind::Number),
///     ("2026-12-01".to_string(), KeyKind::Number),
///     ("docs/api.md".to_string(), KeyKind::Path),
/// ]);
/// ```
pub fn extract(text: &str) -> Vec<(String, KeyKind)> {
    extract_with(text, &mut classify)
}

/// [`extract`] with the token classifier given (`compress` passes a memoised [`classify`]).
pub fn extract_with(
    text: &str,
    classify: &mut dyn FnMut(&str) -> Option<KeyKind>,
) -> Vec<(String, KeyKind)> {
    let mut out: Vec<(String, KeyKind)> = Vec::new();
    walk_keys(text, classify, |k, kind| out.push((k.to_string(), kind)));
    out
}

/// The key tokens of `text` as [`extract`] finds them (same keys, same order), passed to `f` as
/// slices of `text`: nothing is allocated for a text with few keys (the sentence scorer runs
/// this for every sentence).
pub fn for_each_key(text: &str, f: impl FnMut(&str, KeyKind)) {
    walk_keys(text, &mut classify, f);
}

/// [`for_each_key`] with the token classifier given (`compress` passes a memoised
/// [`classify`]).
pub fn for_each_key_with(
    text: &str,
    classify: &mut dyn FnMut(&str) -> Option<KeyKind>,
    f: impl FnMut(&str, KeyKind),
) {
    walk_keys(text, classify, f);
}

/// The one walk behind [`extract_with`] and [`for_each_key`]: code spans first, then the
/// separator-delimited tokens `classify` calls keys, each key once, in order.
fn walk_keys(
    text: &str,
    classify: &mut dyn FnMut(&str) -> Option<KeyKind>,
    mut f: impl FnMut(&str, KeyKind),
) {
    let mut seen = Seen::default();
    code_spans(text, |span| {
        if !seen.contains(span) {
            seen.insert(span);
            f(span, KeyKind::Code);
        }
    });
    for raw in pieces(text, &SEPARATORS) {
        let t = token_of(raw);
        if t.is_empty() || plain_word(t) || seen.contains(t) {
            continue;
        }
        if let Some(kind) = classify(t) {
            seen.insert(t);
            f(t, kind);
        }
    }
}

/// The code spans of `text` that may be keys, in order, repeats included: a backtick pair on
/// one line around 2 to 80 characters, trimmed, of at least two characters with a letter or
/// digit among them.
fn code_spans<'a>(text: &'a str, mut f: impl FnMut(&'a str)) {
    let mut rest = text;
    while let Some(open) = memchr::memchr(b'`', rest.as_bytes()) {
        let after = &rest[open + 1..];
        match memchr::memchr2(b'`', b'\n', after.as_bytes()) {
            Some(close) if after.as_bytes()[close] == b'`' => {
                let span = after[..close].trim();
                let n = after[..close].chars().count();
                if (2..=80).contains(&n)
                    && span.chars().count() >= 2
                    && span.bytes().any(|b| b.is_ascii_alphanumeric())
                {
                    f(span);
                }
                rest = &after[close + 1..];
            }
            Some(close) => rest = &after[close..],
            None => break,
        }
    }
}

/// A separator-delimited piece as a key candidate: opening brackets and closing punctuation
/// trimmed.
fn token_of(raw: &str) -> &str {
    let t = raw.trim_start_matches(['(', '[']);
    t.trim_end_matches(['.', ':', '!', '?', ')', ']'])
}

/// One walk over a text that answers both what [`extract_with`] finds in the whole text and
/// what [`for_each_key_with`] finds in each of its sentences, classifying every token once
/// (the summariser asks both, and the walk is most of a summary's time).
pub(crate) struct TextKeys<'a> {
    text: &'a str,
    /// Code spans ([`code_spans`]) with their byte offsets in `text`.
    spans: Vec<(usize, &'a str)>,
    /// The tokens classified as keys, with their byte offsets, repeats included.
    tokens: Vec<(usize, &'a str, KeyKind)>,
}

impl<'a> TextKeys<'a> {
    /// Walks `text` once.
    pub(crate) fn new(
        text: &'a str,
        classify: &mut dyn FnMut(&str) -> Option<KeyKind>,
    ) -> TextKeys<'a> {
        let offset = |piece: &str| piece.as_ptr() as usize - text.as_ptr() as usize;
        let mut spans = Vec::new();
        code_spans(text, |span| spans.push((offset(span), span)));
        let mut tokens = Vec::new();
        for raw in pieces(text, &SEPARATORS) {
            let t = token_of(raw);
            if t.is_empty() || plain_word(t) {
                continue;
            }
            if let Some(kind) = classify(t) {
                tokens.push((offset(t), t, kind));
            }
        }
        TextKeys {
            text,
            spans,
            tokens,
        }
    }

    /// The key tokens of the whole text: exactly [`extract_with`]'s.
    pub(crate) fn all(&self) -> Vec<(String, KeyKind)> {
        let mut out = Vec::new();
        self.emit(&self.spans, &self.tokens, |k, kind| {
            out.push((k.to_string(), kind))
        });
        out
    }

    /// Calls `f` with the key tokens of `text[range]` exactly as [`for_each_key_with`] on that
    /// slice would, and returns true; or returns false without calling `f` when the walk of the
    /// whole text cannot tell: the range does not start and end at separators (its tokens are
    /// not the whole text's), or its code spans pair up differently on their own.
    pub(crate) fn for_each_in(
        &self,
        range: std::ops::Range<usize>,
        f: impl FnMut(&str, KeyKind),
    ) -> bool {
        let Some(slice) = self.text.get(range.clone()) else {
            return false;
        };
        let separates = |c: char| {
            if c.is_ascii() {
                ASCII_SEPARATOR[c as usize]
            } else {
                c.is_whitespace()
            }
        };
        let before = self.text[..range.start].chars().next_back();
        let after = self.text[range.end..].chars().next();
        if !before.is_none_or(separates) || !after.is_none_or(separates) {
            return false;
        }
        let from = self.spans.partition_point(|s| s.0 < range.start);
        let to = self.spans.partition_point(|s| s.0 < range.end);
        let spans = &self.spans[from..to];
        let mut same = true;
        let mut k = 0;
        code_spans(slice, |span| {
            let offset = span.as_ptr() as usize - self.text.as_ptr() as usize;
            same &= spans.get(k).is_some_and(|s| s.0 == offset && s.1 == span);
            k += 1;
        });
        if !same || k != spans.len() {
            return false;
        }
        let from = self.tokens.partition_point(|t| t.0 < range.start);
        let to = self.tokens.partition_point(|t| t.0 < range.end);
        self.emit(spans, &self.tokens[from..to], f);
        true
    }

    /// [`walk_keys`]'s emission over a walk's spans and tokens: spans first, each key once.
    fn emit(
        &self,
        spans: &[(usize, &'a str)],
        tokens: &[(usize, &'a str, KeyKind)],
        mut f: impl FnMut(&str, KeyKind),
    ) {
        let mut seen = Seen::default();
        for &(_, span) in spans {
            if !seen.contains(span) {
                seen.insert(span);
                f(span, KeyKind::Code);
            }
        }
        for &(_, t, kind) in tokens {
            if !seen.contains(t) {
                seen.insert(t);
                f(t, kind);
            }
        }
    }
}

/// The keys [`walk_keys`] has passed on (foldhash past the short list: probed for every token
/// of every sentence scored): a short list, a set once there are many.
#[derive(Default)]
struct Seen<'a> {
    small: Vec<&'a str>,
    big: super::hash::FastSet<&'a str>,
}

impl<'a> Seen<'a> {
    const SMALL: usize = 32;

    fn contains(&self, k: &str) -> bool {
        if self.big.is_empty() {
            self.small.contains(&k)
        } else {
            self.big.contains(k)
        }
    }

    fn insert(&mut self, k: &'a str) {
        if !self.big.is_empty() {
            self.big.insert(k);
        } else if self.small.len() < Self::SMALL {
            self.small.push(k);
        } else {
            self.big.extend(self.small.drain(..));
            self.big.insert(k);
        }
    }
}

/// A byte of a word, for whole-token matches ([`contains_token`]): an ASCII letter or digit,
/// or `_`.
pub(crate) fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Below this many bytes [`contains_token`] compares at each occurrence of the key's first
/// byte; from it on it builds a substring searcher (building one costs about what scanning a
/// few hundred bytes does, and budget summaries ask about thousands of keys in short texts).
const SHORT_HAY: usize = 256;

/// Whether `hay` contains `key` as a whole token: no ASCII letter, digit or `_` right before or
/// after it (where the key itself starts or ends with one).
pub fn contains_token(hay: &str, key: &str) -> bool {
    if key.is_empty() {
        return false;
    }
    let word = word_byte;
    let kb = key.as_bytes();
    let (check_l, check_r) = (word(kb[0]), word(kb[kb.len() - 1]));
    let hb = hay.as_bytes();
    if hb.len() < SHORT_HAY {
        // A short text: each occurrence of the key's first byte (memchr, SIMD) compared, with no
        // searcher to build. A key's first byte starts a character, so every start it finds
        // is a character boundary, as the searcher's are.
        let mut from = 0;
        while let Some(off) = memchr::memchr(kb[0], &hb[from..]) {
            let i = from + off;
            let j = i + kb.len();
            if hb[i..].starts_with(kb)
                && (!check_l || i == 0 || !word(hb[i - 1]))
                && (!check_r || j >= hb.len() || !word(hb[j]))
            {
                return true;
            }
            from = i + 1;
        }
        return false;
    }
    // memchr's substring search (SIMD on wasm32 too, where `str::find` is not).
    let finder = memchr::memmem::Finder::new(kb);
    let mut from = 0;
    while let Some(off) = hb.get(from..).and_then(|rest| finder.find(rest)) {
        let i = from + off;
        let j = i + key.len();
        let ok_l = !check_l || i == 0 || !word(hb[i - 1]);
        let ok_r = !check_r || j >= hb.len() || !word(hb[j]);
        if ok_l && ok_r {
            return true;
        }
        from = i + hay[i..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The keys appended to a key list so far, to answer "does an appended key hold this one as a
/// whole token" ([`contains_token`] over each of them) with one hash lookup: every substring of
/// an appended key that [`contains_token`] could find is in a set (keys longer than
/// [`AppendedTokens::LONG`] bytes are searched instead). Budget summaries append keys while
/// checking thousands of candidates against what they hold; a substring search per candidate
/// over the growing list was quadratic. Occurrences that span two appended keys are not seen
/// (a key list has a separator between keys).
#[derive(Default)]
pub struct AppendedTokens<'a> {
    set: crate::text::hash::FastSet<&'a str>,
    long: Vec<&'a str>,
}

impl<'a> AppendedTokens<'a> {
    /// Longer keys are searched, not split into their substrings.
    pub const LONG: usize = 48;

    /// Records an appended key.
    pub fn add(&mut self, key: &'a str) {
        if key.len() > Self::LONG {
            self.long.push(key);
            return;
        }
        self.set.extend(token_substrings(key));
    }

    /// Whether an appended key holds `key` as a whole token.
    pub fn contains(&self, key: &str) -> bool {
        self.set.contains(key) || self.long.iter().any(|a| contains_token(a, key))
    }
}

/// Every substring of `key` that [`contains_token`] could find in it: those that start and end
/// at a token edge of `key`.
fn token_substrings(key: &str) -> impl Iterator<Item = &str> {
    let word = word_byte;
    let b = key.as_bytes();
    (0..b.len())
        .filter(move |&s| key.is_char_boundary(s))
        // contains_token's left edge: the key starts with a non-word byte, or the byte before it
        // is not a word byte.
        .filter(move |&s| !(word(b[s]) && s > 0 && word(b[s - 1])))
        .flat_map(move |s| {
            (s + 1..=b.len())
                .filter(move |&e| key.is_char_boundary(e))
                .filter(move |&e| !word(b[e - 1]) || e == b.len() || !word(b[e]))
                .map(move |e| &key[s..e])
        })
}

/// For each key of a list, the earlier keys that hold it as a whole token (what
/// [`AppendedTokens::contains`] would find had they been appended), once for the list: a key
/// list made again and again within different room (the budget's folded summary) then decides
/// each key by looking at a few flags instead of splitting every appended key.
pub fn token_holders<S: AsRef<str>>(keys: &[S]) -> Vec<Vec<u32>> {
    let mut h = TokenHolders::new(keys);
    h.extend_to(keys, keys.len());
    (0..keys.len()).map(|i| h.of(keys, i).collect()).collect()
}

/// [`token_holders`] made only as far as it is asked: a list made in a small room looks at its
/// first keys only, so the later keys' substrings are not looked up until a larger room gets
/// to them. Holds no borrow of the keys: every method is given the same list again.
pub struct TokenHolders {
    hasher: foldhash::fast::FixedState,
    /// Each distinct key's slot by its text's hash, with the first key of that text (a hit is
    /// confirmed by comparing the texts).
    slots: crate::text::hash::FastMap<u64, (u32, u32)>,
    /// Distinct keys whose hash an earlier distinct key has: (hash, slot, first key).
    collided: Vec<(u64, u32, u32)>,
    /// Each key's slot.
    slot_of: Vec<u32>,
    /// For each slot, the keys looked at so far that hold it as a token, in order.
    by_slot: Vec<Vec<u32>>,
    /// The keys longer than [`AppendedTokens::LONG`] bytes looked at so far (searched, not
    /// split).
    long: Vec<u32>,
    /// How many keys' substrings have been looked up.
    done: usize,
}

impl TokenHolders {
    /// Slots for the distinct keys of `keys`; nothing looked up yet.
    pub fn new<S: AsRef<str>>(keys: &[S]) -> TokenHolders {
        use std::hash::BuildHasher;
        let mut h = TokenHolders {
            hasher: foldhash::fast::FixedState::default(),
            slots: Default::default(),
            collided: Vec::new(),
            slot_of: Vec::with_capacity(keys.len()),
            by_slot: Vec::new(),
            long: Vec::new(),
            done: 0,
        };
        for (i, key) in keys.iter().enumerate() {
            let key = key.as_ref();
            let slot = match h.slot(keys, key) {
                Some(slot) => slot,
                None => {
                    let slot = h.by_slot.len() as u32;
                    h.by_slot.push(Vec::new());
                    let hash = h.hasher.hash_one(key);
                    match h.slots.entry(hash) {
                        std::collections::hash_map::Entry::Occupied(_) => {
                            h.collided.push((hash, slot, i as u32));
                        }
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert((slot, i as u32));
                        }
                    }
                    slot
                }
            };
            h.slot_of.push(slot);
        }
        h
    }

    /// The slot of text `t`, if it is one of the keys.
    fn slot<S: AsRef<str>>(&self, keys: &[S], t: &str) -> Option<u32> {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(t);
        let &(slot, first) = self.slots.get(&hash)?;
        if keys[first as usize].as_ref() == t {
            return Some(slot);
        }
        self.collided
            .iter()
            .find(|&&(h, _, first)| h == hash && keys[first as usize].as_ref() == t)
            .map(|&(_, slot, _)| slot)
    }

    /// Looks up the substrings of the keys before position `end`.
    pub fn extend_to<S: AsRef<str>>(&mut self, keys: &[S], end: usize) {
        while self.done < end.min(keys.len()) {
            let j = self.done as u32;
            let key = keys[self.done].as_ref();
            self.done += 1;
            if key.len() > AppendedTokens::LONG {
                self.long.push(j);
                continue;
            }
            for t in token_substrings(key) {
                if let Some(slot) = self.slot(keys, t) {
                    let holders = &mut self.by_slot[slot as usize];
                    if holders.last() != Some(&j) {
                        holders.push(j);
                    }
                }
            }
        }
    }

    /// The earlier keys that hold key `i` as a token (short ones first), once
    /// [`extend_to`](Self::extend_to) has looked at the keys before it.
    fn of<'h, S: AsRef<str>>(&'h self, keys: &'h [S], i: usize) -> impl Iterator<Item = u32> + 'h {
        let key = keys[i].as_ref();
        let i = i as u32;
        self.by_slot[self.slot_of[i as usize] as usize]
            .iter()
            .copied()
            .take_while(move |&j| j < i)
            .chain(
                self.long
                    .iter()
                    .copied()
                    .take_while(move |&j| j < i)
                    .filter(move |&j| contains_token(keys[j as usize].as_ref(), key)),
            )
    }

    /// Whether one of the earlier keys marked in `marked` holds key `i` as a token.
    pub fn held<S: AsRef<str>>(&mut self, keys: &[S], i: usize, marked: &[bool]) -> bool {
        self.extend_to(keys, i);
        let key = keys[i].as_ref();
        let short = &self.by_slot[self.slot_of[i] as usize];
        short
            .iter()
            .take_while(|&&j| (j as usize) < i)
            .any(|&j| marked[j as usize])
            || self
                .long
                .iter()
                .take_while(|&&j| (j as usize) < i)
                .any(|&j| marked[j as usize] && contains_token(keys[j as usize].as_ref(), key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;

    /// The nibble tables the SIMD search reads say, for every byte, what the ASCII table and
    /// the lead bytes say; and the search finds the pieces `str::split` does.
    #[test]
    fn separator_nibbles_and_search_agree() {
        assert!(WHITESPACE.nibbles_agree());
        assert!(SEPARATORS.nibbles_agree());
        check_pieces(0x5eed, 2000).unwrap();
        let text = "alpha beta,gamma\u{a0}delta(epsilon)`zeta`\u{3000}eta";
        for from in 0..text.len() {
            assert_eq!(
                SEPARATORS.find(text.as_bytes(), from),
                SEPARATORS.find_scalar(text.as_bytes(), from),
                "{from}"
            );
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        /// No rule takes a plain word: the shortcut that skips them answers what they would.
        #[test]
        fn the_plain_word_shortcut_agrees_with_the_rules(
            t in "[A-Za-z]{1,3}[a-zA-Z0-9_./@:$%~-]{0,10}|[a-z]{2,12}|[A-Z][a-z]{1,12}|(https?://|www\\.)?[a-z0-9./_-]{1,20}"
        ) {
            if plain_word(&t) {
                prop_assert_eq!(classify_rules(&t), None);
            }
        }

        /// `contains_token` finds a whole-token occurrence wherever one starts, overlapping
        /// matches included (checked against every character boundary in turn), in short texts
        /// and in texts long enough for the substring searcher (`SHORT_HAY`).
        #[test]
        fn contains_token_agrees_with_every_start(
            hay in "([ab_]{0,3}|[ .]|é){0,14}|([ab_]{0,6}|[ .]|é){60,140}",
            key in "[ab.é]{1,3}",
        ) {
            let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
            let (hb, kb) = (hay.as_bytes(), key.as_bytes());
            let expected = hay.char_indices().any(|(i, _)| {
                let j = i + key.len();
                hay[i..].starts_with(&key)
                    && (!word(kb[0]) || i == 0 || !word(hb[i - 1]))
                    && (!word(kb[kb.len() - 1]) || j >= hb.len() || !word(hb[j]))
            });
            prop_assert_eq!(contains_token(&hay, &key), expected);
        }

        /// Long pieces (the secret scan's windows) come out as `str::split` has them: words
        /// of up to 30 bytes, with non-ASCII letters and white space inside and around them.
        #[test]
        fn long_pieces_agree_with_split(
            text in "([a-zA-Z0-9_\\-]{0,30}|[ \t\n\"'`=:,]|\u{a0}|\u{2003}|\u{3000}|\u{2030}|\u{1680}|é|中|😀){0,40}",
            min in 3usize..24,
        ) {
            let sep = |c: char| if c.is_ascii() { ASCII_SEPARATOR[c as usize] } else { c.is_whitespace() };
            prop_assert_eq!(
                pieces_of_at_least(&text, &SEPARATORS, min).collect::<Vec<_>>(),
                text.split(sep).filter(|p| p.len() >= min).collect::<Vec<_>>()
            );
        }

        /// `pieces` gives the non-empty pieces `str::split` gives.
        #[test]
        fn pieces_agree_with_split(
            text in "([a-z]{0,4}|[ \t\n,;()`=\"']|\u{85}|\u{a0}|\u{1680}|\u{2003}|\u{2028}|\u{205f}|\u{3000}|é|中|😀|\u{e000}|\u{2030}|\u{e1}|\u{e3})*"
        ) {
            let sep = |c: char| if c.is_ascii() { ASCII_SEPARATOR[c as usize] } else { c.is_whitespace() };
            prop_assert_eq!(
                pieces(&text, &SEPARATORS).collect::<Vec<_>>(),
                text.split(sep).filter(|p| !p.is_empty()).collect::<Vec<_>>()
            );
            prop_assert_eq!(
                pieces(&text, &WHITESPACE).collect::<Vec<_>>(),
                text.split(char::is_whitespace).filter(|p| !p.is_empty()).collect::<Vec<_>>()
            );
            for min in [2, 3, 5, 8, 19] {
                prop_assert_eq!(
                    pieces_of_at_least(&text, &SEPARATORS, min).collect::<Vec<_>>(),
                    text.split(sep).filter(|p| p.len() >= min).collect::<Vec<_>>()
                );
            }
        }

        /// The allocation-free walk finds what `extract` finds, in the same order.
        #[test]
        fn for_each_key_agrees_with_extract(
            words in proptest::collection::vec(
                "`[a-z_]{1,6}`|[a-z]{1,8}|[A-Z]{2,5}|[a-z]+_[a-z0-9]+|[0-9]{2,6}|src/[a-z]{1,4}\\.rs|v[0-9]\\.[0-9]\\.[0-9]",
                0..80,
            )
        ) {
            let text = words.join(" ");
            let mut walked = Vec::new();
            for_each_key(&text, |k, kind| walked.push((k.to_string(), kind)));
            prop_assert_eq!(walked, extract(&text));
        }

        /// One walk of the whole text finds what `extract` finds in it and, for every range it
        /// answers for, what `for_each_key` finds in that slice; it answers for every range
        /// whose ends are at white space in a text without backticks.
        #[test]
        fn text_keys_agree_with_the_walks_they_replace(
            words in proptest::collection::vec(
                "`[a-z_ ]{0,6}|`[a-z_]{1,6}`|[a-z]{1,8}[.?!]?|[A-Z]{2,5}|\\(?[a-z]+_[a-z0-9]+\\)?|[0-9]{2,6}|src/[a-z]{1,4}\\.rs|v[0-9]\\.[0-9]|\n|\u{a0}|é",
                0..60,
            ),
            cuts in proptest::collection::vec((0usize..400, 0usize..400), 0..8),
        ) {
            let text = words.join(" ");
            let walk = TextKeys::new(&text, &mut classify);
            prop_assert_eq!(walk.all(), extract(&text));
            let mut ranges: Vec<std::ops::Range<usize>> = crate::text::sentences::split(&text)
                .into_iter()
                .map(|s| s.span)
                .collect();
            for (a, b) in cuts {
                let (a, b) = (a.min(b).min(text.len()), a.max(b).min(text.len()));
                if text.is_char_boundary(a) && text.is_char_boundary(b) {
                    ranges.push(a..b);
                }
            }
            for range in ranges {
                let mut from_walk = Vec::new();
                let known = walk.for_each_in(range.clone(), |k, kind| from_walk.push((k.to_string(), kind)));
                let mut direct = Vec::new();
                for_each_key(&text[range.clone()], |k, kind| direct.push((k.to_string(), kind)));
                if known {
                    prop_assert_eq!(from_walk, direct, "range {:?} of {:?}", range, text);
                } else {
                    prop_assert!(from_walk.is_empty());
                    let at_space = |c: Option<char>| c.is_none_or(char::is_whitespace);
                    prop_assert!(
                        !(at_space(text[..range.start].chars().next_back())
                            && at_space(text[range.end..].chars().next())
                            && !text.contains('`')),
                        "range {:?} of {:?} not answered", range, text
                    );
                }
            }
        }
    }

    #[test]
    fn every_pattern_compiles() {
        let r = rules();
        assert_eq!(r.rules.len(), 14);
        assert!(r.ordinal.is_some() && r.initials.is_some());
    }

    #[test]
    fn kinds() {
        let cases = [
            ("https://example.com/x", Some(KeyKind::Url)),
            ("ops@example.com", Some(KeyKind::Url)),
            ("11/2022", Some(KeyKind::Number)),
            ("v1.2.3", Some(KeyKind::Number)),
            ("$1,200.50", Some(KeyKind::Number)),
            ("45%", Some(KeyKind::Number)),
            ("7", None),
            ("1st", None),
            ("src/app/main.rs", Some(KeyKind::Path)),
            ("and/or", None),
            ("model.onnx", Some(KeyKind::Path)),
            ("--dry-run", Some(KeyKind::Identifier)),
            ("snake_case", Some(KeyKind::Identifier)),
            ("my\\_var", Some(KeyKind::Identifier)),
            ("camelCase", Some(KeyKind::Identifier)),
            ("WebSocket", Some(KeyKind::Identifier)),
            ("os.path.join", Some(KeyKind::Identifier)),
            ("serde.json", Some(KeyKind::Path)),
            ("toolu01ab", Some(KeyKind::Identifier)),
            ("HTTP", Some(KeyKind::Identifier)),
            ("e.g", None),
            ("Hello", None),
            ("the", None),
        ];
        for (t, want) in cases {
            assert_eq!(classify(t), want, "{t}");
        }
    }

    #[test]
    fn the_separator_table_is_the_rule() {
        let rule = |c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '"' | '\''
                        | '('
                        | ')'
                        | '['
                        | ']'
                        | '{'
                        | '}'
                        | '<'
                        | '>'
                        | ','
                        | ';'
                        | '|'
                        | '*'
                        | '='
                        | '`'
                )
        };
        // Every character, alone and between two letters: `pieces` splits exactly at the rule.
        for c in (0u32..=0x10FFFF).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            let got: Vec<&str> = pieces(&text, &SEPARATORS).collect();
            let want: Vec<&str> = text.split(rule).filter(|p| !p.is_empty()).collect();
            assert_eq!(got, want, "{c:?}");
            let ws: Vec<&str> = pieces(&text, &WHITESPACE).collect();
            let want_ws: Vec<&str> = text
                .split(char::is_whitespace)
                .filter(|p| !p.is_empty())
                .collect();
            assert_eq!(ws, want_ws, "{c:?}");
        }
    }

    #[test]
    fn whole_tokens() {
        assert!(contains_token("id=card_3456.", "card_3456"));
        assert!(!contains_token("card_34567", "card_3456"));
        assert!(contains_token("é card_3456", "card_3456"));
        assert!(!contains_token("", "x"));
        // The first occurrence is glued to a word; the overlapping next one stands alone.
        assert!(contains_token("ba.a.a", "a.a"));
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        /// A key's holders are the earlier keys that contain it as a token, duplicates in the
        /// list included.
        #[test]
        fn token_holders_are_the_earlier_containing_keys(
            keys in proptest::collection::vec("[a-c0-9_. é-]{1,8}|[a-c0-9_. -]{45,60}", 0..16),
        ) {
            let holders = token_holders(&keys);
            for (i, key) in keys.iter().enumerate() {
                let mut got = holders[i].clone();
                got.sort_unstable();
                let want: Vec<u32> = (0..i)
                    .filter(|&j| contains_token(&keys[j], key))
                    .map(|j| j as u32)
                    .collect();
                prop_assert_eq!(got, want, "{:?} in {:?}", key, keys);
            }
        }

        /// Made as far as asked, in any order of asking, the holders say what a search of
        /// every earlier marked key says.
        #[test]
        fn holders_made_as_far_as_asked_agree_with_a_search(
            keys in proptest::collection::vec("[a-c0-9_. é-]{1,8}|[a-c0-9_. -]{45,60}", 1..16),
            marked in proptest::collection::vec(proptest::bool::ANY, 16),
            asked in proptest::collection::vec(0usize..16, 1..10),
        ) {
            let mut h = TokenHolders::new(&keys);
            for i in asked.into_iter().map(|i| i % keys.len()) {
                let want = (0..i).any(|j| marked[j] && contains_token(&keys[j], &keys[i]));
                prop_assert_eq!(h.held(&keys, i, &marked), want, "{} of {:?}", i, keys);
            }
        }

        /// AppendedTokens finds what contains_token finds in any of the appended keys.
        #[test]
        fn appended_tokens_agree_with_contains_token(
            appended in proptest::collection::vec("[a-c0-9_. é-]{0,12}", 0..4),
            keys in proptest::collection::vec("[a-c0-9_. é-]{0,6}", 0..12),
        ) {
            let mut set = AppendedTokens::default();
            for a in &appended {
                set.add(a);
            }
            for k in &keys {
                let want = appended.iter().any(|a| contains_token(a, k));
                prop_assert_eq!(set.contains(k), want, "{:?} in {:?}", k, appended);
            }
        }
    }
}
