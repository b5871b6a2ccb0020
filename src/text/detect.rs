//! What a text is, for the preservation rules of `compress`.
//!
//! *Hard* verbatim content must reach the model byte for byte, so a message holding it is kept
//! whole: source code outside fences, JSON documents, SQL, diffs, stack traces, secrets and keys,
//! markdown tables. *Soft* verbatim content — URLs, paths, e-mails, numbers, identifiers — only
//! needs its tokens kept: the message may be summarised as long as the summary carries them (the
//! key tokens of [`keys`](super::keys)).

/// A kind of hard verbatim content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hard {
    /// Source code outside fences (most lines look like code).
    Code,
    /// A JSON object or array.
    Json,
    /// SQL statements.
    Sql,
    /// A unified diff.
    Diff,
    /// A stack trace.
    StackTrace,
    /// A secret or key (`sk-…`, `AKIA…`, `ghp_…`, PEM blocks).
    Secret,
    /// A markdown table.
    Table,
}

impl Hard {
    /// The kind's name, as used in traces.
    pub const fn as_str(self) -> &'static str {
        match self {
            Hard::Code => "code",
            Hard::Json => "json",
            Hard::Sql => "sql",
            Hard::Diff => "diff",
            Hard::StackTrace => "stack_trace",
            Hard::Secret => "secret",
            Hard::Table => "table",
        }
    }
}

/// The first kind of hard verbatim content found in `text`, if any.
///
/// ```
/// use condense::text::detect::{hard, Hard};
/// assert_eq!(hard("SELECT id, name FROM users WHERE age > 30;"), Some(Hard::Sql));
/// assert_eq!(hard("Traceback (most recent call last):\n  File \"a.py\", line 3"), Some(Hard::StackTrace));
/// assert_eq!(hard("The build failed because the cache was stale."), None);
/// ```
pub fn hard(text: &str) -> Option<Hard> {
    let phrases = Phrases::of(text);
    if is_secret(text, &phrases) {
        return Some(Hard::Secret);
    }
    if is_json(text) {
        return Some(Hard::Json);
    }
    // The line rules of the kinds below, from one walk over the lines.
    let shape = LineShape::of(text);
    if phrases.has("Traceback (most recent call last)")
        || phrases.has("panicked at ")
        || shape.frames >= 2
    {
        return Some(Hard::StackTrace);
    }
    if shape.hunks >= 1 && shape.changed >= 2 {
        return Some(Hard::Diff);
    }
    if shape.rows >= 3 && shape.separator_row {
        return Some(Hard::Table);
    }
    if is_sql(&phrases) {
        return Some(Hard::Sql);
    }
    if code_share_reached(text, shape.lines) {
        return Some(Hard::Code);
    }
    None
}

/// A JSON object or array (not a bare scalar) of at least 2 characters.
pub fn is_json(text: &str) -> bool {
    let t = text.trim();
    (t.starts_with('{') && t.ends_with('}') || t.starts_with('[') && t.ends_with(']'))
        && serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok()
}

/// The fixed phrases [`hard`] looks for: the first four case-sensitive, the SQL ones
/// ASCII-case-insensitive (as `text.to_ascii_uppercase().contains(…)` would find them).
const PHRASES: [(&str, bool); 12] = [
    ("-----BEGIN ", true),
    (" KEY-----", true),
    ("Traceback (most recent call last)", true),
    ("panicked at ", true),
    ("SELECT ", false),
    (" FROM ", false),
    ("INSERT INTO ", false),
    ("UPDATE ", false),
    (" SET ", false),
    ("DELETE FROM ", false),
    ("CREATE TABLE ", false),
    ("ALTER TABLE ", false),
];

/// Which of [`PHRASES`] a text contains (bit `i` for phrase `i`).
#[derive(Clone, Copy)]
struct Phrases(u16);

impl Phrases {
    fn of(text: &str) -> Phrases {
        // One SIMD substring search per phrase (memchr's, on wasm32 too), each stopping at
        // its first occurrence; the case-insensitive ones over the text upper-cased once. (An
        // automaton over all twelve found every occurrence of every phrase: twice the
        // instructions on prose.)
        static FINDERS: std::sync::OnceLock<Vec<memchr::memmem::Finder<'static>>> =
            std::sync::OnceLock::new();
        let finders = FINDERS.get_or_init(|| {
            PHRASES
                .iter()
                .map(|(p, _)| memchr::memmem::Finder::new(p.as_bytes()))
                .collect()
        });
        let bytes = text.as_bytes();
        let mut upper: Option<Vec<u8>> = None;
        let mut found = 0u16;
        for (i, ((_, exact), finder)) in PHRASES.iter().zip(finders).enumerate() {
            let hay = if *exact {
                bytes
            } else {
                upper.get_or_insert_with(|| bytes.to_ascii_uppercase())
            };
            if finder.find(hay).is_some() {
                found |= 1 << i;
            }
        }
        Phrases(found)
    }

    /// The same answer with `str::contains` per phrase (the specification; tests compare).
    #[cfg(test)]
    fn slow(text: &str) -> Phrases {
        let upper = text.to_ascii_uppercase();
        let mut found = 0u16;
        for (i, (phrase, exact)) in PHRASES.iter().enumerate() {
            let hit = if *exact {
                text.contains(phrase)
            } else {
                upper.contains(phrase)
            };
            if hit {
                found |= 1 << i;
            }
        }
        Phrases(found)
    }

    fn has(self, phrase: &str) -> bool {
        PHRASES
            .iter()
            .position(|(p, _)| *p == phrase)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }
}

/// Token separators of [`is_secret`] among ASCII characters: white space and `"'`=:,`.
const SECRET_SEPARATOR: [bool; 128] =
    super::keys::ascii_table(super::keys::ASCII_WHITESPACE, b"\"'`=:,");

/// [`SECRET_SEPARATOR`] and non-ASCII white space, as `pieces` separators.
const SECRET_SEPARATORS: super::keys::Separators = super::keys::Separators::new(SECRET_SEPARATOR);

/// Prefixes of API keys and tokens; a token is a key when at least 16 bytes follow one.
const SECRET_PREFIXES: [&str; 10] = [
    "sk-",
    "sk_live_",
    "sk_test_",
    "ghp_",
    "gho_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
];

fn is_secret(text: &str, phrases: &Phrases) -> bool {
    if phrases.has("-----BEGIN ") && phrases.has(" KEY-----") {
        return true;
    }
    // The shortest token either rule can take is a 3-byte prefix and 16 more: shorter ones
    // (nearly every token of prose) are passed over on their length.
    super::keys::pieces_of_at_least(text, &SECRET_SEPARATORS, 19).any(is_secret_token)
}

/// Whether one token is a key: a known prefix and 16+ more bytes, or a long opaque token mixing
/// letters and digits (API keys, tokens, hashes).
fn is_secret_token(t: &str) -> bool {
    let prefixed = SECRET_PREFIXES
        .iter()
        .any(|p| t.starts_with(p) && t.len() >= p.len() + 16);
    let alnum = t.bytes().filter(|b| b.is_ascii_alphanumeric()).count();
    let opaque = t.len() >= 32
        && alnum * 10 >= t.len() * 9
        && t.bytes().any(|b| b.is_ascii_digit())
        && t.bytes().any(|b| b.is_ascii_uppercase())
        && t.bytes().any(|b| b.is_ascii_lowercase())
        && !t.contains('/');
    prefixed || opaque
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    super::lines::lines(text).filter(|l| !l.trim().is_empty())
}

/// What the line rules of [`hard`] count, from one walk over the non-empty lines: stack
/// frames, diff hunk headers and changed lines, table rows and whether one is a separator row.
#[derive(Default)]
struct LineShape {
    /// Non-empty lines.
    lines: usize,
    /// Stack frames: `at f (file:1)`, `File "a.py", line 3`, `Caused by:`.
    frames: usize,
    /// Diff headers: `@@ `, `diff --git `, `+++ `, `--- a/`.
    hunks: usize,
    /// Changed lines of a diff: `+x` or `-x` (not a `+ ` / `- ` bullet).
    changed: usize,
    /// Lines starting (after indentation) with `|`.
    rows: usize,
    /// Whether one of those rows is a separator (`|---|:--|`: `|-: ` only, with `---`).
    separator_row: bool,
}

impl LineShape {
    fn of(text: &str) -> LineShape {
        let mut s = LineShape::default();
        for l in lines(text) {
            s.lines += 1;
            let t = l.trim_start();
            if (t.starts_with("at ") && t.contains('(') && t.contains(':'))
                || (t.starts_with("File \"") && t.contains(", line "))
                || t.starts_with("Caused by:")
            {
                s.frames += 1;
            }
            if l.starts_with("@@ ")
                || l.starts_with("diff --git ")
                || l.starts_with("+++ ")
                || l.starts_with("--- a/")
            {
                s.hunks += 1;
            } else if (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("- ")
                && !l.starts_with("+ ")
            {
                s.changed += 1;
            }
            if t.starts_with('|') {
                s.rows += 1;
                if !s.separator_row {
                    let r = t.trim_end();
                    s.separator_row =
                        r.contains("---") && r.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
                }
            }
        }
        s
    }
}

fn is_sql(phrases: &Phrases) -> bool {
    let has = |s: &str| phrases.has(s);
    (has("SELECT ") && has(" FROM "))
        || has("INSERT INTO ")
        || (has("UPDATE ") && has(" SET "))
        || has("DELETE FROM ")
        || has("CREATE TABLE ")
        || has("ALTER TABLE ")
}

/// Whether at least 60% of the `total` non-empty lines of `text` look like code (3 lines at
/// least).
fn code_share_reached(text: &str, total: usize) -> bool {
    if total < 3 {
        return false;
    }
    // Stop as soon as the share is out of reach (prose fails after its first 40% of lines) or
    // reached.
    let need = (total * 6).div_ceil(10);
    let (mut code, mut seen) = (0usize, 0usize);
    for l in lines(text) {
        if code + (total - seen) < need || code >= need {
            break;
        }
        seen += 1;
        if is_code_line(l) {
            code += 1;
        }
    }
    code >= need
}

/// A line that looks like code: a statement or block end, a keyword start, a short assignment.
fn is_code_line(l: &str) -> bool {
    const STARTS: [&str; 21] = [
        "def ",
        "class ",
        "import ",
        "from ",
        "fn ",
        "let ",
        "const ",
        "var ",
        "function ",
        "return ",
        "if (",
        "for (",
        "while (",
        "#include",
        "public ",
        "private ",
        "}",
        "//",
        "pub fn ",
        "use ",
        "package ",
    ];
    let t = l.trim();
    let ends = t.ends_with(';')
        || t.ends_with('{')
        || t.ends_with('}')
        || t.ends_with("):")
        || t.ends_with(')');
    ends || STARTS.iter().any(|k| t.starts_with(k))
        // (`=` first, by memchr's SIMD scan: most lines have none, and `str::contains` is a
        // byte-at-a-time search on wasm32.)
        || (memchr::memchr(b'=', t.as_bytes()).is_some()
            && t.contains(" = ")
            && !t.contains(". ")
            && t.split_whitespace().count() <= 8)
}

/// Structured tool output (docs/design.md, "The compress pipeline"): 6+ non-empty lines, more than
/// one line per 80 characters, and more than half the lines structural (file:line references,
/// bullets, key-value pairs, status words, table rows).
pub fn is_structured(text: &str) -> bool {
    let all: Vec<&str> = lines(text).collect();
    if all.len() < 6 || all.len() * 80 < text.len() {
        return false;
    }
    let structural = all.iter().filter(|l| is_structural_line(l)).count();
    structural * 2 > all.len()
}

/// A line of structured output: a `path:line` reference, a bullet, `key: value` or `key=value`,
/// a status word, a table row, or a listing entry (one token).
pub fn is_structural_line(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() {
        return false;
    }
    let first = t.split_whitespace().next().unwrap_or("");
    let grep = first.contains(':')
        && first
            .split(':')
            .nth(1)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let bullet = t.starts_with("- ") || t.starts_with("* ") || t.starts_with("• ");
    let kv = t.split_once([':', '=']).is_some_and(|(k, v)| {
        !k.trim().is_empty() && !k.trim().contains(' ') && !v.trim().is_empty()
    });
    let status = [
        "PASS", "FAIL", "ok", "OK", "ERROR", "WARN", "WARNING", "SKIP", "error:", "warning:",
        "test ",
    ]
    .iter()
    .any(|s| t.starts_with(s));
    let row = t.starts_with('|');
    let single = !t.contains(' ') && t.len() < 120;
    grep || bullet || kv || status || row || single
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_separator_nibbles_agree() {
        assert!(SECRET_SEPARATORS.nibbles_agree());
    }

    /// The code rule as first written: every line judged, then the share (the oracle).
    #[cfg(not(target_arch = "wasm32"))]
    fn code_by_share(text: &str) -> bool {
        let all: Vec<&str> = lines(text).collect();
        all.len() >= 3 && all.iter().filter(|l| is_code_line(l)).count() * 10 >= all.len() * 6
    }

    /// [`hard`] as first written, one walk over the lines per rule (the oracle of the single
    /// walk of [`LineShape`]).
    #[cfg(not(target_arch = "wasm32"))]
    fn hard_by_rule(text: &str) -> Option<Hard> {
        let phrases = Phrases::of(text);
        let stack_trace = || {
            phrases.has("Traceback (most recent call last)")
                || phrases.has("panicked at ")
                || lines(text)
                    .filter(|l| {
                        let t = l.trim_start();
                        (t.starts_with("at ") && t.contains('(') && t.contains(':'))
                            || (t.starts_with("File \"") && t.contains(", line "))
                            || t.starts_with("Caused by:")
                    })
                    .count()
                    >= 2
        };
        let diff = || {
            let (mut hunks, mut changed) = (0, 0);
            for l in lines(text) {
                if l.starts_with("@@ ")
                    || l.starts_with("diff --git ")
                    || l.starts_with("+++ ")
                    || l.starts_with("--- a/")
                {
                    hunks += 1;
                } else if (l.starts_with('+') || l.starts_with('-'))
                    && !l.starts_with("- ")
                    && !l.starts_with("+ ")
                {
                    changed += 1;
                }
            }
            hunks >= 1 && changed >= 2
        };
        let table = || {
            let rows: Vec<&str> = lines(text)
                .filter(|l| l.trim_start().starts_with('|'))
                .collect();
            rows.len() >= 3
                && rows.iter().any(|r| {
                    let t = r.trim();
                    t.contains("---") && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
                })
        };
        if is_secret(text, &phrases) {
            Some(Hard::Secret)
        } else if is_json(text) {
            Some(Hard::Json)
        } else if stack_trace() {
            Some(Hard::StackTrace)
        } else if diff() {
            Some(Hard::Diff)
        } else if table() {
            Some(Hard::Table)
        } else if is_sql(&phrases) {
            Some(Hard::Sql)
        } else if code_by_share(text) {
            Some(Hard::Code)
        } else {
            None
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// Stopping early decides as judging every line does.
        #[test]
        fn code_stops_early_as_the_share_decides(
            lines in proptest::collection::vec(
                "let x = 1;|fn main\\(\\) \\{|\\}|Some prose here\\.|return y|a = b|  |import os|The end\\. Next = 2",
                0..14,
            )
        ) {
            let text = lines.join("\n");
            let total = super::lines(&text).count();
            proptest::prop_assert_eq!(code_share_reached(&text, total), code_by_share(&text), "{:?}", text);
        }

        /// One walk over the lines finds the kind the rules one walk each find.
        #[test]
        fn one_walk_finds_what_a_walk_per_rule_finds(
            lines in proptest::collection::vec(
                "  at f \\(a\\.js:1\\)|File \"a\\.py\", line 3|Caused by: x|@@ -1 \\+1 @@|diff --git a b|\\+\\+\\+ b|--- a/x|\\+new|-old|- item|\\+ item|\\| a \\| b \\||\\|---\\|:-:\\||  \\| 1 \\| 2 \\| |let x = 1;|\\}|Some prose\\.|SELECT a FROM t|\\{\"k\": 1\\}|  |é",
                0..12,
            ),
            crlf in proptest::bool::ANY,
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            proptest::prop_assert_eq!(hard(&text), hard_by_rule(&text), "{:?}", text);
        }
    }

    /// [`is_secret`]'s token rule over `str::split`, every token looked at (the oracle).
    #[cfg(not(target_arch = "wasm32"))]
    fn secret_by_split(text: &str) -> bool {
        text.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '=' | ':' | ','))
            .any(is_secret_token)
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// The length filter and the byte-level splitter find the tokens `str::split` finds.
        #[test]
        fn secret_tokens_as_split_finds_them(
            words in proptest::collection::vec(
                "sk-[A-Za-z0-9]{10,20}|AKIA[A-Z0-9]{12,20}|[A-Za-z0-9]{28,40}|[a-z]{1,8}|ghp_[a-z0-9]{14,18}|\
                 [A-Za-z0-9/+]{30,36}|\u{a0}|\u{3000}|é",
                0..12,
            ),
            seps in proptest::collection::vec("( |=|:|,|\"|'|`|\n|\u{2003}|-|_|;)", 12),
        ) {
            let text = crate::text::interleave(&words, &seps);
            proptest::prop_assert_eq!(is_secret(&text, &Phrases::of(&text)), secret_by_split(&text));
        }
    }

    #[test]
    fn hard_kinds() {
        assert_eq!(hard(r#"{"a": [1, 2]}"#), Some(Hard::Json));
        assert_eq!(hard("[1, 2"), None);
        assert_eq!(hard("key: sk-abcdefghijklmnopqrstu123"), Some(Hard::Secret));
        assert_eq!(
            hard("diff --git a/x b/x\n@@ -1,2 +1,2 @@\n-old line\n+new line\n"),
            Some(Hard::Diff)
        );
        assert_eq!(hard("| a | b |\n|---|---|\n| 1 | 2 |"), Some(Hard::Table));
        assert_eq!(
            hard("fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}"),
            Some(Hard::Code)
        );
        assert_eq!(hard("I think we should:\n- go\n- stay\nand decide."), None);
        assert_eq!(hard("Error: at line 3 (x)"), None);
    }

    #[test]
    fn phrases_agree_with_a_search_per_phrase() {
        let texts = [
            "select name from users",
            "Select id FROM t; update x set y = 1",
            "-----BEGIN RSA PRIVATE KEY-----\nabc",
            "-----begin rsa private key-----",
            "Traceback (most recent call last):\n  File \"a.py\"",
            "traceback (Most recent call last)",
            "thread 'main' panicked at src/main.rs:2:5",
            "DELETE FROM logs; CREATE TABLE a (x int); ALTER TABLE a ADD y",
            "insert into t values (1); \u{e9}t\u{e9} UPDATE  SET",
            " FROM  FROM SELECT SELECT ",
            "",
        ];
        for t in texts {
            assert_eq!(Phrases::of(t).0, Phrases::slow(t).0, "{t:?}");
        }
        assert_eq!(
            hard("select name from users where id = 3;"),
            Some(Hard::Sql)
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn phrases_agree_on_any_text(
            parts in proptest::collection::vec(
                "(?i)select |from |insert into |update |set |delete from |create table |alter table |-----BEGIN | KEY-----|panicked at |[a-z ]{0,6}",
                0..12,
            )
        ) {
            let t = parts.concat();
            proptest::prop_assert_eq!(Phrases::of(&t).0, Phrases::slow(&t).0);
        }
    }

    #[test]
    fn structured() {
        let grep = "src/a.rs:10: fn a\nsrc/a.rs:20: fn b\nsrc/b.rs:3: fn c\nsrc/c.rs:7: x\nsrc/d.rs:9: y\nsrc/e.rs:1: z\n";
        assert!(is_structured(grep));
        let prose = "This is a long paragraph.\nIt spans lines.\nBut it is prose, written by a person.\nIt has sentences.\nAnd more of them.\nThe end of it.";
        assert!(!is_structured(prose));
    }
}
