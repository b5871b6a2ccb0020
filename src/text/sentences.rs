//! Paragraphs and sentences, as byte spans of the original text.
//!
//! Paragraphs are separated by blank lines. Inside a paragraph, a list item or a line that
//! starts a new block (`- `, `* `, `1. `, `#`, `|`) starts a new sentence, and a sentence ends
//! at `.`, `!` or `?` followed by white space and then a capital, a digit, a quote or a bracket
//! — except after common abbreviations (`e.g.`, `Mr.`, `vs.`), single initials and a numbered
//! list item's own number (`2. Install it` is one sentence, not `2.` and `Install it`).

use std::ops::Range;

/// A sentence: its span in the text, its paragraph, and its index within the paragraph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sentence {
    /// Byte span in the original text (trimmed of surrounding white space).
    pub span: Range<usize>,
    /// Index of its paragraph.
    pub paragraph: usize,
    /// Index within its paragraph.
    pub index: usize,
}

const ABBREVIATIONS: [&str; 24] = [
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "no", "fig",
    "approx", "inc", "ltd", "co", "cf", "al", "eq", "vol", "pp", "ca",
];

/// Paragraph spans (trimmed, non-empty), separated by blank lines.
pub fn paragraphs(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last_end = 0;
    let mut pos = 0;
    for line in super::lines::inclusive(text) {
        let blank = line.trim().is_empty();
        if blank {
            if let Some(s) = start.take() {
                out.push(s..last_end);
            }
        } else {
            if start.is_none() {
                start = Some(pos + (line.len() - line.trim_start().len()));
            }
            last_end = pos + line.trim_end().len();
        }
        pos += line.len();
    }
    if let Some(s) = start {
        out.push(s..last_end);
    }
    out
}

fn starts_block(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("- ")
        || t.starts_with("* ")
        || t.starts_with("+ ")
        || t.starts_with('#')
        || t.starts_with('|')
        || t.starts_with('>')
        || item_number_digits(t).is_some_and(|d| matches!(t.as_bytes().get(d), Some(b'.' | b')')))
}

/// The digits a numbered list item's number starts `t` with (one to three), if it does.
fn item_number_digits(t: &str) -> Option<usize> {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (1..4).contains(&digits).then_some(digits)
}

/// Splits `text` into sentences.
///
/// ```
/// use condense::text::sentences::split;
/// let text = "The fix is in src/app.rs. Tests pass, e.g. the login test!\n\nNext: deploy v1.2.";
/// let s: Vec<&str> = split(text).iter().map(|s| &text[s.span.clone()]).collect();
/// assert_eq!(s, ["The fix is in src/app.rs.", "Tests pass, e.g. the login test!", "Next: deploy v1.2."]);
/// ```
pub fn split(text: &str) -> Vec<Sentence> {
    let mut out = Vec::new();
    for (p, para) in paragraphs(text).into_iter().enumerate() {
        let mut index = 0;
        let mut push = |range: Range<usize>, out: &mut Vec<Sentence>| {
            let slice = &text[range.clone()];
            let lead = slice.len() - slice.trim_start().len();
            let trail = slice.len() - slice.trim_end().len();
            let span = range.start + lead..range.end - trail;
            if span.start < span.end {
                out.push(Sentence {
                    span,
                    paragraph: p,
                    index,
                });
                index += 1;
            }
        };
        // Lines that start blocks split first.
        let mut line_starts = vec![para.start];
        let mut pos = para.start;
        for line in text[para.clone()].split_inclusive('\n') {
            let next = pos + line.len();
            // A line that starts a block begins a sentence; a header or table row ends one.
            let ends_line = matches!(line.trim_start().as_bytes().first(), Some(b'#' | b'|'));
            if next < para.end && (ends_line || starts_block(&text[next..para.end])) {
                line_starts.push(next);
            }
            pos = next;
        }
        line_starts.push(para.end);
        for w in line_starts.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mut start = a;
            for end in sentence_ends(&text[a..b]) {
                push(start..a + end, &mut out);
                start = a + end;
            }
            push(start..b, &mut out);
        }
    }
    out
}

/// Byte offsets (exclusive ends) of sentence ends inside `s`, excluding its own end.
fn sentence_ends(s: &str) -> Vec<usize> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Jump from terminator to terminator (memchr's SIMD scan: most bytes are not one).
    while let Some(off) = memchr::memchr3(b'.', b'!', b'?', &bytes[i..]) {
        let (j, ends) = terminator_run(s, i + off);
        if ends {
            out.push(j);
        }
        i = j;
    }
    out
}

/// At a terminator (`.`, `!`, `?`) at byte `i` of `s`: the end of its run (`?!`, `...`, with
/// closing quotes and brackets), and whether a sentence ends there — white space follows, then
/// a capital, a digit, a quote or a bracket, and a `.` does not close an abbreviation.
fn terminator_run(s: &str, i: usize) -> (usize, bool) {
    let bytes = s.as_bytes();
    let mut j = i + 1;
    while j < bytes.len() && matches!(bytes[j], b'.' | b'!' | b'?' | b'"' | b'\'' | b')') {
        j += 1;
    }
    let ws = bytes
        .get(j..)
        .unwrap_or_default()
        .iter()
        .take_while(|c| c.is_ascii_whitespace())
        .count();
    if ws == 0 || j + ws >= bytes.len() {
        return (j, false);
    }
    let next = s[j + ws..].chars().next().unwrap_or(' ');
    let opens = next.is_uppercase()
        || next.is_ascii_digit()
        || matches!(next, '"' | '\'' | '(' | '[' | '`' | '*');
    let abbreviation =
        bytes.get(i) == Some(&b'.') && (is_abbreviation(&s[..i]) || is_item_number(&s[..i]));
    (j, opens && !abbreviation)
}

/// Whether what comes before a `.` is a numbered list item's number: one to three digits
/// alone at the start of a line (`starts_block`'s item numbers).
fn is_item_number(before: &str) -> bool {
    let line = before.rsplit('\n').next().unwrap_or(before).trim_start();
    item_number_digits(line) == Some(line.len())
}

/// Whether the word just before a `.` is an abbreviation or a single initial.
fn is_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    if word.chars().count() == 1 && word.chars().all(char::is_alphabetic) {
        return true;
    }
    let lower = word.to_ascii_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;

    /// The byte-by-byte search for terminators `sentence_ends` had before it jumped with
    /// memchr3 (the oracle; each terminator is judged by the same `terminator_run`).
    #[cfg(not(target_arch = "wasm32"))]
    fn sentence_ends_bytewise(s: &str) -> Vec<usize> {
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if matches!(bytes[i], b'.' | b'!' | b'?') {
                let (j, ends) = terminator_run(s, i);
                if ends {
                    out.push(j);
                }
                i = j;
            } else {
                i += 1;
            }
        }
        out
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Jumping between terminators finds the ends the byte-by-byte scan finds.
        #[test]
        fn sentence_ends_equal_the_bytewise_scan(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("."), Just("!"), Just("?"), Just("..."), Just(" "), Just("\n"), Just("\t"),
                    Just("\""), Just("'"), Just(")"), Just("("), Just("A"), Just("a"), Just("7"),
                    Just("e.g"), Just("Mr"), Just("x"), Just("É"), Just("é"), Just("東"), Just("`"),
                    Just("*"), Just("["), Just("word"), Just("Word"),
                ],
                0..60,
            )
        ) {
            let text: String = parts.concat();
            prop_assert_eq!(sentence_ends(&text), sentence_ends_bytewise(&text), "{:?}", text);
        }
    }

    fn texts(text: &str) -> Vec<&str> {
        split(text).iter().map(|s| &text[s.span.clone()]).collect()
    }

    #[test]
    fn lists_and_headers_split() {
        let t = "Steps:\n- install it\n- run it. Then check.\n# Notes\nDone";
        assert_eq!(
            texts(t),
            [
                "Steps:",
                "- install it",
                "- run it.",
                "Then check.",
                "# Notes",
                "Done"
            ]
        );
    }

    #[test]
    fn a_numbered_item_is_one_sentence_with_its_number() {
        let t = "Here are steps:\n1. Follow blogs: read them. Some are good.\n2. Join forums.\n10. Rest.";
        assert_eq!(
            texts(t),
            [
                "Here are steps:",
                "1. Follow blogs: read them.",
                "Some are good.",
                "2. Join forums.",
                "10. Rest."
            ]
        );
        // Not an item's number: mid-line, or a year.
        assert_eq!(
            texts("It was step 2. Then 3.\n2024. A year."),
            ["It was step 2.", "Then 3.", "2024.", "A year."]
        );
    }

    #[test]
    fn no_split_inside_numbers_paths_and_initials() {
        assert_eq!(
            texts("Version 3.14 is at www.x.com now. J. R. R. Tolkien wrote it."),
            [
                "Version 3.14 is at www.x.com now.",
                "J. R. R. Tolkien wrote it."
            ]
        );
    }

    #[test]
    fn paragraph_indices() {
        let s = split("Alpha. Beta.\n\nGamma.");
        assert_eq!(
            s.iter().map(|x| (x.paragraph, x.index)).collect::<Vec<_>>(),
            [(0, 0), (0, 1), (1, 0)]
        );
        assert!(split("").is_empty());
        assert!(split("\n\n  \n").is_empty());
    }
}
