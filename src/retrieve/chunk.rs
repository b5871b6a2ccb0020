//! Documents → [`Chunk`]s.
//!
//! **Markdown** is split by its header hierarchy. ATX headers (`#` … `######` followed by a
//! space or the end of the line, up to three spaces of indentation) and setext headers (a
//! one-line paragraph underlined with `===` or `---`, three characters at least) start a
//! section; headers inside code fences are code, not headers. Every section knows the headers
//! above it, outermost first (its `header_path`, its own header last); text before the first
//! header has an empty path.
//!
//! Each section is cut into *units* that are never split further:
//! - a header line, which always stays with the unit under it (a chunk never ends with a header
//!   when the section has more text);
//! - a code fence, from its opening to its closing fence line — **never split**, however long;
//! - a paragraph (blank-line separated) of at most `max_chars`; a longer paragraph is cut into
//!   sentences ([`crate::text::sentences`]); a sentence longer than `max_chars` is cut at the last
//!   white space before the limit (or at the limit itself inside a longer run without spaces).
//!
//! Units are packed greedily, in order, into chunks of at most `max_chars` characters (Unicode
//! scalar values, counted over the chunk's text including the white space between units). Then
//! neighbouring chunks merge while one of them is under `min_chars` and the result stays within
//! `max_chars`: first only chunks of sibling sections or of a section and its parent (as close
//! to the same parent section as possible), then any neighbours. **A merged chunk's
//! `header_path` is the longest common prefix of the merged paths**: it names the section that
//! holds all of the chunk's text (two `## Linux`/`## Mac` subsections of `# Install` give
//! `["Install"]`), never a section that holds only part of it.
//!
//! **Plain text** is the same with no headers: paragraphs packed up to `max_chars`, long
//! paragraphs by sentences, over-long sentences at a word boundary.
//!
//! Guarantees (tested): a text that is empty or white space gives no chunk; a document whose
//! trimmed text is shorter than `min_chars` gives one chunk; a chunk's text is a trimmed slice of
//! the document (never rewritten, so highlights map back) and the chunks, in order, cover every
//! non-white-space character of the document exactly once; every code fence is whole in exactly
//! one chunk; chunk ids are `{doc_id}#{ordinal}`; the output depends only on the input. A chunk
//! is at most `max_chars` long, except (1) a chunk holding a code fence longer than
//! `max_chars`, and (2) a header glued to a unit that alone (nearly) fills `max_chars`: then the
//! chunk may exceed `max_chars` by that header's length. A chunk may be shorter than
//! `min_chars` when no neighbour could absorb it within `max_chars`.

use std::ops::Range;

use super::Chunk;
use crate::error::{Error, ErrorKind};
use crate::text::{fences, sentences};

/// Chunk size bounds, in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkOptions {
    /// Chunks under this size merge with a neighbour when the result fits `max_chars`.
    pub min_chars: usize,
    /// Target maximum chunk size (see the [module docs](self) for the two exceptions).
    pub max_chars: usize,
}

impl Default for ChunkOptions {
    /// 200 to 1500 characters (docs/design.md, "Retrieval").
    fn default() -> Self {
        ChunkOptions {
            min_chars: 200,
            max_chars: 1500,
        }
    }
}

impl ChunkOptions {
    /// Checks `max_chars >= 1` and `min_chars <= max_chars`; errors name the field.
    ///
    /// [`chunk_document`] itself never fails: it reads `max_chars` as at least 1 and
    /// `min_chars` as at most `max_chars`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.max_chars == 0 {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "maxChars",
                "expected at least 1",
            ));
        }
        if self.min_chars > self.max_chars {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "minChars",
                format!(
                    "expected at most maxChars ({}), got {}",
                    self.max_chars, self.min_chars
                ),
            ));
        }
        Ok(())
    }
}

/// What a unit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnitKind {
    Header,
    Text,
}

/// An unsplittable piece of a section: a trimmed byte range of the document.
#[derive(Clone, Debug)]
struct Unit {
    range: Range<usize>,
    kind: UnitKind,
}

/// A chunk under construction.
#[derive(Clone, Debug)]
struct Piece {
    range: Range<usize>,
    chars: usize,
    header_path: Vec<String>,
}

/// A section: the units under one header (or before the first header).
#[derive(Debug, Default)]
struct Section {
    header_path: Vec<String>,
    units: Vec<Unit>,
}

/// Splits a document into chunks; see the [module docs](self) for the rules.
///
/// ```
/// use condense::retrieve::chunk::{chunk_document, ChunkOptions};
/// let text = "# Guide\nIntro.\n## Install\nRun it.\n";
/// let chunks = chunk_document("doc", Some("guide.md"), text, &ChunkOptions::default());
/// assert_eq!(chunks.len(), 1);
/// assert_eq!(chunks[0].id, "doc#0");
/// assert_eq!(chunks[0].header_path, ["Guide"]);
/// assert_eq!(chunks[0].text, text.trim());
/// ```
pub fn chunk_document(
    doc_id: &str,
    path: Option<&str>,
    text: &str,
    options: &ChunkOptions,
) -> Vec<Chunk> {
    let max = options.max_chars.max(1);
    let min = options.min_chars.min(max);
    let sections = sections(text, max);
    let mut pieces = Vec::new();
    for section in &sections {
        pack(text, section, max, &mut pieces);
    }
    let pieces = merge(text, pieces, min, max, true);
    let pieces = merge(text, pieces, min, max, false);
    pieces
        .into_iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let body = text.get(p.range)?;
            let ordinal = u32::try_from(i).unwrap_or(u32::MAX);
            Some(Chunk {
                id: format!("{doc_id}#{ordinal}"),
                doc_id: doc_id.to_string(),
                path: path.map(str::to_string),
                header_path: p.header_path,
                text: body.to_string(),
                ordinal,
            })
        })
        .collect()
}

/// Characters of `text[range]` (0 for a range that is not a slice of `text`).
fn chars(text: &str, range: Range<usize>) -> usize {
    text.get(range).map_or(0, |s| s.chars().count())
}

/// `range` shrunk to its non-white-space content (`None` when nothing is left).
fn trimmed(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let s = text.get(range.clone())?;
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    (!t.is_empty()).then(|| range.start + lead..range.start + lead + t.len())
}

/// A header line: `(level, title)`, for ATX headers.
fn atx_header(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = line.get(indent..)?;
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = rest.get(level..)?;
    if !(after.trim().is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    // Optional closing sequence: spaces then #s.
    let title = after.trim();
    let without_close = title.trim_end_matches('#');
    let title = if without_close.is_empty() || without_close.ends_with([' ', '\t']) {
        without_close.trim_end()
    } else {
        title
    };
    Some((level, title.to_string()))
}

/// A setext underline: level 1 (`===`) or 2 (`---`), three characters at least.
fn setext_underline(line: &str) -> Option<usize> {
    let t = line.trim();
    if line.len() - line.trim_start_matches(' ').len() > 3 || t.len() < 3 {
        return None;
    }
    if t.bytes().all(|b| b == b'=') {
        Some(1)
    } else if t.bytes().all(|b| b == b'-') {
        Some(2)
    } else {
        None
    }
}

/// Whether a line can be the title line of a setext header (plain paragraph text).
fn can_be_setext_title(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty()
        && line.len() - line.trim_start_matches(' ').len() <= 3
        && !t.starts_with(['#', '>', '-', '*', '+', '|'])
        && atx_header(line).is_none()
}

/// Parses the document into sections of units.
fn sections(text: &str, max: usize) -> Vec<Section> {
    let mut out = vec![Section::default()];
    // (level, title) of the headers above the current position.
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut offset = 0;
    for segment in fences::split(text) {
        let (body, is_code) = match segment {
            fences::Segment::Prose(p) => (p, false),
            fences::Segment::Code(c) => (c, true),
        };
        let base = offset;
        offset += body.len();
        if is_code {
            if let (Some(range), Some(section)) = (trimmed(text, base..offset), out.last_mut()) {
                section.units.push(Unit {
                    range,
                    kind: UnitKind::Text,
                });
            }
            continue;
        }
        // Lines of the prose segment, as byte ranges of `text` (newline included).
        let mut lines = Vec::new();
        let mut pos = base;
        for line in body.split_inclusive('\n') {
            lines.push(pos..pos + line.len());
            pos += line.len();
        }
        let line_str = |i: usize| lines.get(i).and_then(|r| text.get(r.clone())).unwrap_or("");
        let mut text_start = base;
        let mut i = 0;
        while i < lines.len() {
            let line = line_str(i);
            let header = if let Some((level, title)) = atx_header(line) {
                Some((level, title, i, i + 1))
            } else if let Some(level) = (i + 1 < lines.len())
                .then(|| setext_underline(line_str(i + 1)))
                .flatten()
            {
                // A one-line paragraph: the first line of the segment (after a fence or at the
                // start of the text) or after a blank line.
                let starts_paragraph = i == 0 || line_str(i - 1).trim().is_empty();
                (starts_paragraph && can_be_setext_title(line))
                    .then(|| (level, line.trim().to_string(), i, i + 2))
            } else {
                None
            };
            let Some((level, title, first, end)) = header else {
                i += 1;
                continue;
            };
            let (Some(first_range), Some(last_range)) = (lines.get(first), lines.get(end - 1))
            else {
                break;
            };
            let (header_start, header_end) = (first_range.start, last_range.end);
            // Text before the header belongs to the current section.
            if let Some(section) = out.last_mut() {
                push_text_units(text, text_start..header_start, max, &mut section.units);
            }
            while stack.last().is_some_and(|(l, _)| *l >= level) {
                stack.pop();
            }
            stack.push((level, title));
            let mut section = Section {
                header_path: stack.iter().map(|(_, t)| t.clone()).collect(),
                units: Vec::new(),
            };
            if let Some(range) = trimmed(text, header_start..header_end) {
                section.units.push(Unit {
                    range,
                    kind: UnitKind::Header,
                });
            }
            out.push(section);
            text_start = header_end;
            i = end;
        }
        if let Some(section) = out.last_mut() {
            push_text_units(text, text_start..offset, max, &mut section.units);
        }
    }
    out
}

/// Appends the paragraph / sentence / word units of `text[range]`.
fn push_text_units(text: &str, range: Range<usize>, max: usize, units: &mut Vec<Unit>) {
    let Some(slice) = text.get(range.clone()) else {
        return;
    };
    for para in sentences::paragraphs(slice) {
        let para = range.start + para.start..range.start + para.end;
        if chars(text, para.clone()) <= max {
            units.push(Unit {
                range: para,
                kind: UnitKind::Text,
            });
            continue;
        }
        let Some(para_text) = text.get(para.clone()) else {
            continue;
        };
        for sentence in sentences::split(para_text) {
            let s = para.start + sentence.span.start..para.start + sentence.span.end;
            if chars(text, s.clone()) <= max {
                units.push(Unit {
                    range: s,
                    kind: UnitKind::Text,
                });
            } else {
                for w in split_words(text, s, max) {
                    units.push(Unit {
                        range: w,
                        kind: UnitKind::Text,
                    });
                }
            }
        }
    }
}

/// Cuts `text[range]` into trimmed pieces of at most `max` characters, at the last white space
/// before the limit (at the limit itself when a piece has no white space).
fn split_words(text: &str, range: Range<usize>, max: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let Some(slice) = text.get(range.clone()) else {
        return out;
    };
    let mut start = 0; // byte offset in slice
    while start < slice.len() {
        let rest = slice.get(start..).unwrap_or("");
        let rest_trim = rest.trim_start();
        start += rest.len() - rest_trim.len();
        if rest_trim.is_empty() {
            break;
        }
        if rest_trim.chars().nth(max).is_none() {
            if let Some(r) = trimmed(text, range.start + start..range.end) {
                out.push(r);
            }
            break;
        }
        // Byte offset (in rest_trim) just past the max-th character, and the last white space
        // at or before it.
        let mut limit = rest_trim.len();
        let mut last_space = None;
        for (n, (i, c)) in rest_trim.char_indices().enumerate() {
            if n == max {
                limit = i;
                if c.is_whitespace() {
                    last_space = Some(i);
                }
                break;
            }
            if c.is_whitespace() && n > 0 {
                last_space = Some(i);
            }
        }
        let cut = last_space.unwrap_or(limit).max(1);
        // Never cut inside a character.
        let cut = (cut..=rest_trim.len())
            .find(|&c| rest_trim.is_char_boundary(c))
            .unwrap_or(rest_trim.len());
        if let Some(r) = trimmed(text, range.start + start..range.start + start + cut) {
            out.push(r);
        }
        start += cut;
    }
    out
}

/// Packs a section's units greedily into pieces of at most `max` characters; a header unit is
/// never left alone while the section has more units.
fn pack(text: &str, section: &Section, max: usize, out: &mut Vec<Piece>) {
    let mut current: Option<(Piece, bool)> = None; // (piece, holds only a header)
    for unit in &section.units {
        let unit_chars = chars(text, unit.range.clone());
        current = Some(match current.take() {
            None => (
                Piece {
                    range: unit.range.clone(),
                    chars: unit_chars,
                    header_path: section.header_path.clone(),
                },
                unit.kind == UnitKind::Header,
            ),
            Some((mut piece, header_only)) => {
                let joined =
                    piece.chars + chars(text, piece.range.end..unit.range.start) + unit_chars;
                if joined <= max || header_only {
                    piece.range.end = unit.range.end;
                    piece.chars = joined;
                    (piece, false)
                } else {
                    out.push(piece);
                    (
                        Piece {
                            range: unit.range.clone(),
                            chars: unit_chars,
                            header_path: section.header_path.clone(),
                        },
                        unit.kind == UnitKind::Header,
                    )
                }
            }
        });
    }
    if let Some((piece, _)) = current {
        out.push(piece);
    }
}

/// The longest common prefix of two header paths.
fn common_prefix(a: &[String], b: &[String]) -> Vec<String> {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.clone())
        .collect()
}

/// Merges neighbouring pieces while one is under `min` and the result fits `max`. With
/// `close_only`, only siblings or a section and its parent merge.
fn merge(text: &str, pieces: Vec<Piece>, min: usize, max: usize, close_only: bool) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if let Some(last) = out.last_mut() {
            if last.chars < min || piece.chars < min {
                let joined =
                    last.chars + chars(text, last.range.end..piece.range.start) + piece.chars;
                let prefix = common_prefix(&last.header_path, &piece.header_path);
                let close = prefix.len() + 1 >= last.header_path.len().max(piece.header_path.len());
                if joined <= max && (close || !close_only) {
                    last.range.end = piece.range.end;
                    last.chars = joined;
                    last.header_path = prefix;
                    continue;
                }
            }
        }
        out.push(piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(min: usize, max: usize) -> ChunkOptions {
        ChunkOptions {
            min_chars: min,
            max_chars: max,
        }
    }

    #[test]
    fn headers() {
        assert_eq!(atx_header("# A"), Some((1, "A".into())));
        assert_eq!(atx_header("### B ###"), Some((3, "B".into())));
        assert_eq!(atx_header("## C#"), Some((2, "C#".into())));
        assert_eq!(atx_header("#hashtag"), None);
        assert_eq!(atx_header("####### seven"), None);
        assert_eq!(atx_header("    # code"), None);
        assert_eq!(atx_header("#"), Some((1, String::new())));
        assert_eq!(setext_underline("==="), Some(1));
        assert_eq!(setext_underline("---\n"), Some(2));
        assert_eq!(setext_underline("--"), None);
    }

    #[test]
    fn empty_and_short() {
        assert!(chunk_document("d", None, "", &ChunkOptions::default()).is_empty());
        assert!(chunk_document("d", None, " \n\t\n ", &ChunkOptions::default()).is_empty());
        let c = chunk_document("d", None, "\n  Hello there.  \n", &ChunkOptions::default());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].text, "Hello there.");
        assert!(c[0].header_path.is_empty());
    }

    #[test]
    fn setext_sections() {
        let text = "Title\n=====\n\nIntro text.\n\nPart\n----\nBody.\n";
        let c = chunk_document("d", None, text, &opts(0, 1000));
        let paths: Vec<_> = c.iter().map(|c| c.header_path.clone()).collect();
        assert_eq!(
            paths,
            [
                vec!["Title".to_string()],
                vec!["Title".into(), "Part".into()]
            ]
        );
    }

    #[test]
    fn word_split() {
        let text = "aaaa bbbb cccc dddd";
        let r = split_words(text, 0..text.len(), 9);
        let parts: Vec<_> = r.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(parts, ["aaaa bbbb", "cccc dddd"]);
        let text = "abcdefghij";
        let r = split_words(text, 0..text.len(), 4);
        let parts: Vec<_> = r.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(parts, ["abcd", "efgh", "ij"]);
        let text = "ééééé";
        let r = split_words(text, 0..text.len(), 2);
        assert_eq!(r.len(), 3);
    }
}
