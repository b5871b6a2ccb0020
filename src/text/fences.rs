//! Markdown code fences: split a text into prose and fenced code, verbatim.

/// A piece of a text: prose or a fenced code block (fence lines included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    /// Text outside fences.
    Prose(&'a str),
    /// A fenced block from its opening fence line to its closing fence line (or the end of the
    /// text when it is never closed), exactly as written.
    Code(&'a str),
}

/// Splits `text` into prose and code segments, in order; concatenating them gives `text` back.
///
/// A fence is a line whose first non-space characters are three or more backticks or tildes;
/// it closes at the next line with at least as many of the same character and nothing else.
///
/// ```
/// use condense::text::fences::{split, Segment};
/// let parts = split("Run:\n```sh\nls -la\n```\nDone.");
/// assert_eq!(parts, vec![
///     Segment::Prose("Run:\n"),
///     Segment::Code("```sh\nls -la\n```\n"),
///     Segment::Prose("Done."),
/// ]);
/// ```
pub fn split(text: &str) -> Vec<Segment<'_>> {
    // Most texts have no fence character at all: one prose segment (or none).
    if memchr::memchr2(b'`', b'~', text.as_bytes()).is_none() {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![Segment::Prose(text)]
        };
    }
    split_lines(text)
}

/// [`split`] line by line.
fn split_lines(text: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut prose_start = 0;
    let mut pos = 0;
    let mut open: Option<(usize, u8, usize)> = None; // (start, fence char, fence length)
    while pos < text.len() {
        let end = memchr::memchr(b'\n', &text.as_bytes()[pos..])
            .map(|n| pos + n + 1)
            .unwrap_or(text.len());
        let line = &text[pos..end];
        let trimmed = line.trim_start();
        let fence = fence_of(trimmed);
        match (open, fence) {
            (None, Some((ch, len))) => {
                if prose_start < pos {
                    out.push(Segment::Prose(&text[prose_start..pos]));
                }
                open = Some((pos, ch, len));
            }
            (Some((start, ch, len)), Some((c2, l2)))
                if c2 == ch && l2 >= len && trimmed[l2..].trim().is_empty() =>
            {
                out.push(Segment::Code(&text[start..end]));
                open = None;
                prose_start = end;
            }
            _ => {}
        }
        pos = end;
    }
    match open {
        Some((start, _, _)) => out.push(Segment::Code(&text[start..])),
        None if prose_start < text.len() => out.push(Segment::Prose(&text[prose_start..])),
        None => {}
    }
    out
}

fn fence_of(line: &str) -> Option<(u8, usize)> {
    let first = *line.as_bytes().first()?;
    if first != b'`' && first != b'~' {
        return None;
    }
    let len = line.bytes().take_while(|&b| b == first).count();
    (len >= 3).then_some((first, len))
}

/// Whether `text` contains a code fence.
pub fn has_fence(text: &str) -> bool {
    split(text).iter().any(|s| matches!(s, Segment::Code(_)))
}

/// The characters of prose (non-whitespace) outside fences.
pub fn prose_chars(text: &str) -> usize {
    split(text)
        .iter()
        .map(|s| match s {
            Segment::Prose(p) => p.chars().filter(|c| !c.is_whitespace()).count(),
            Segment::Code(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_edges() {
        for text in [
            "",
            "no fences",
            "```\nunclosed",
            "a\n~~~~\n```\nstill code\n~~~~\nb",
            "  ```js\nx\n  ```\n",
            "````\n```\n````",
        ] {
            let joined: String = split(text)
                .iter()
                .map(|s| match s {
                    Segment::Prose(p) | Segment::Code(p) => *p,
                })
                .collect();
            assert_eq!(joined, text);
        }
        assert_eq!(split("a\n~~~~\n```\nstill code\n~~~~\nb").len(), 3);
        assert!(has_fence("x\n```\ny\n```"));
        assert_eq!(prose_chars("ab c\n```\ncode\n```\nd"), 4);
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// The segments tile the text, and the shortcut for texts without a fence character
        /// gives what the line walk gives.
        #[test]
        fn segments_tile_the_text(text in "([a-z ]{0,5}|\n|  |```|~~~~|`|~|é)*") {
            let segments = split(&text);
            let joined: String = segments
                .iter()
                .map(|s| match s {
                    Segment::Prose(p) | Segment::Code(p) => *p,
                })
                .collect();
            proptest::prop_assert_eq!(&joined, &text);
            proptest::prop_assert_eq!(segments, split_lines(&text));
        }
    }
}
