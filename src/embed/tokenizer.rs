//! BERT WordPiece tokenizer read from a Hugging Face `tokenizer.json`.
//!
//! The pipeline is the one of the reference (the `tokenizers` package loading the same file),
//! stage for stage, so that token ids are equal (checked on `tests/fixtures/embed/reference.json`):
//!
//! 1. **Added tokens**: literal occurrences of the special tokens (`[CLS]`, `[SEP]`, `[MASK]`,
//!    `[UNK]`, `[PAD]`, exact case) in the raw text are kept as those tokens, as the reference does.
//! 2. **Normalizer** (`BertNormalizer`): drop NUL, U+FFFD and control/format/unassigned characters;
//!    map whitespace to a space; put spaces around CJK ideographs; NFD and drop nonspacing marks
//!    (accent stripping); lower-case.
//! 3. **Pre-tokenizer** (`BertPreTokenizer`): split on whitespace, isolate each punctuation character.
//! 4. **Model** (`WordPiece`): greedy longest-match-first with `##` continuations; a word longer than
//!    `max_input_chars_per_word` (100) characters, or one that cannot be covered, is one `[UNK]`.
//! 5. **Post-processor**: `[CLS] … [SEP]`, after truncating to `max_tokens - 2` word pieces.
//!
//! No padding: the shipped file pads to a fixed 128, which the embedder does not want (it pads a
//! batch to its own longest member). The truncation and padding settings of the file are ignored;
//! truncation is [`TokenizerOptions::max_tokens`].
//!
//! Long inputs cost what is kept, not what is given: the text is processed in whitespace-delimited
//! chunks of about 1 KiB and tokenizing stops once `max_tokens` pieces are produced, so a 1 MB text
//! is as fast as a short one.

use crate::text::hash::FastMap;

use serde::Deserialize;
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

use crate::{Error, ErrorKind};

/// The longest input the model accepts: BERT-family position embeddings stop at 512.
pub const MAX_MODEL_TOKENS: usize = 512;

/// Tokenizer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenizerOptions {
    /// Token budget of one text, `[CLS]` and `[SEP]` included; longer texts are truncated
    /// (their end is dropped). Default 256 (what the reference vectors use, and twice the
    /// training length of all-MiniLM-L6-v2); at most [`MAX_MODEL_TOKENS`], at least 2.
    pub max_tokens: usize,
}

impl Default for TokenizerOptions {
    fn default() -> Self {
        TokenizerOptions { max_tokens: 256 }
    }
}

/// A BERT WordPiece tokenizer (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct WordPiece {
    /// Whole vocabulary: word-initial pieces are looked up here.
    vocab: FastMap<String, u32>,
    /// Continuation pieces (`##xyz`) keyed without their prefix, so lookups need no allocation.
    continuations: FastMap<String, u32>,
    vocab_size: usize,
    unk_id: u32,
    cls_id: u32,
    sep_id: u32,
    pad_id: u32,
    max_input_chars_per_word: usize,
    /// Literal tokens matched in the raw text, longest first.
    added: Vec<(String, u32)>,
    normalizer: Normalizer,
    max_tokens: usize,
}

#[derive(Clone, Copy, Debug)]
struct Normalizer {
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

// ---- tokenizer.json, the parts we read -------------------------------------------------------

#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    post_processor: Option<serde_json::Value>,
    model: ModelSection,
}

#[derive(Deserialize)]
struct AddedToken {
    id: u32,
    content: String,
}

#[derive(Deserialize)]
struct ModelSection {
    #[serde(rename = "type")]
    kind: Option<String>,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    max_input_chars_per_word: Option<usize>,
    vocab: Option<FastMap<String, u32>>,
}

#[derive(Deserialize)]
struct BertNormalizerSection {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}

fn yes() -> bool {
    true
}

fn invalid(path: &str, reason: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidModel, path, reason)
}

impl WordPiece {
    /// Reads a `tokenizer.json` of a BERT WordPiece model (`model.type` `"WordPiece"`,
    /// `BertNormalizer`, `BertPreTokenizer`, a `[CLS] $A [SEP]` post-processor).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidModel`] if the bytes are not JSON of that shape (another model type such
    /// as BPE or Unigram, another normalizer, a vocabulary without `[UNK]`, …), with the path of
    /// the offending field, e.g. `tokenizer.model.type`; [`ErrorKind::InvalidOptions`] if
    /// `options.max_tokens` is out of range.
    pub fn from_json(json: &[u8], options: TokenizerOptions) -> Result<WordPiece, Error> {
        check_max_tokens(options.max_tokens)?;
        let file: TokenizerFile = serde_json::from_slice(json)
            .map_err(|e| invalid("tokenizer", format!("not a tokenizer.json: {e}")))?;

        let kind = file.model.kind.as_deref().unwrap_or("");
        if kind != "WordPiece" {
            return Err(invalid(
                "tokenizer.model.type",
                format!("expected a WordPiece model, found {kind:?}"),
            ));
        }
        let vocab = file
            .model
            .vocab
            .ok_or_else(|| invalid("tokenizer.model.vocab", "missing vocabulary"))?;
        let prefix = file
            .model
            .continuing_subword_prefix
            .unwrap_or_else(|| "##".to_string());
        let continuations = vocab
            .iter()
            .filter_map(|(k, &v)| k.strip_prefix(prefix.as_str()).map(|s| (s.to_string(), v)))
            .collect();
        let lookup = |path: &str, token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| invalid(path, format!("{token:?} is not in the vocabulary")))
        };
        let unk = file.model.unk_token.unwrap_or_else(|| "[UNK]".to_string());
        let unk_id = lookup("tokenizer.model.unk_token", &unk)?;
        let (cls_id, sep_id) = post_processor(file.post_processor.as_ref(), &lookup)?;
        let pad_id = vocab.get("[PAD]").copied().unwrap_or(0);

        let normalizer = match &file.normalizer {
            Some(v) => {
                let n: BertNormalizerSection = serde_json::from_value(v.clone())
                    .map_err(|e| invalid("tokenizer.normalizer", e.to_string()))?;
                if n.kind != "BertNormalizer" {
                    return Err(invalid(
                        "tokenizer.normalizer.type",
                        format!("expected BertNormalizer, found {:?}", n.kind),
                    ));
                }
                Normalizer {
                    clean_text: n.clean_text,
                    handle_chinese_chars: n.handle_chinese_chars,
                    strip_accents: n.strip_accents.unwrap_or(n.lowercase),
                    lowercase: n.lowercase,
                }
            }
            None => {
                return Err(invalid(
                    "tokenizer.normalizer",
                    "missing (expected BertNormalizer)",
                ))
            }
        };
        let pre = file
            .pre_tokenizer
            .as_ref()
            .and_then(|v| v.get("type"))
            .and_then(|t| t.as_str());
        if pre != Some("BertPreTokenizer") {
            return Err(invalid(
                "tokenizer.pre_tokenizer.type",
                format!("expected BertPreTokenizer, found {pre:?}"),
            ));
        }

        let mut added: Vec<(String, u32)> = file
            .added_tokens
            .into_iter()
            .filter(|t| !t.content.is_empty())
            .map(|t| (t.content, t.id))
            .collect();
        added.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));

        Ok(WordPiece {
            vocab_size: vocab.len(),
            vocab,
            continuations,
            unk_id,
            cls_id,
            sep_id,
            pad_id,
            max_input_chars_per_word: file.model.max_input_chars_per_word.unwrap_or(100),
            added,
            normalizer,
            max_tokens: options.max_tokens,
        })
    }

    /// The token budget of one text, `[CLS]` and `[SEP]` included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Changes the token budget (2..=512).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] when out of range.
    pub fn set_max_tokens(&mut self, max_tokens: usize) -> Result<(), Error> {
        check_max_tokens(max_tokens)?;
        self.max_tokens = max_tokens;
        Ok(())
    }

    /// Number of entries in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The id used to pad a batch (`[PAD]`, 0 for BERT).
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// Token ids of `text`: `[CLS]`, at most `max_tokens - 2` word pieces, `[SEP]`.
    /// Never fails: any string has a tokenization (unknown words become `[UNK]`).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let budget = self.max_tokens.saturating_sub(2);
        let mut ids = Vec::with_capacity(budget.min(text.len() / 3 + 2) + 2);
        ids.push(self.cls_id);
        let mut state = Scratch::default();
        for chunk in chunks(text, CHUNK_BYTES) {
            if ids.len() > budget {
                break;
            }
            self.encode_chunk(chunk, &mut ids, budget + 1, &mut state);
        }
        ids.truncate(budget + 1);
        ids.push(self.sep_id);
        ids
    }

    /// Number of tokens of `text` with `[CLS]` and `[SEP]`, after truncation.
    pub fn count(&self, text: &str) -> usize {
        self.encode(text).len()
    }

    /// Number of word pieces of the whole of `text`: no `[CLS]`/`[SEP]`, no truncation (the
    /// exact count `compress` uses with `tokenCounter: "model"`).
    ///
    /// ```no_run
    /// # let json = std::fs::read("models/tokenizer.json")?;
    /// let t = condense::embed::tokenizer::WordPiece::from_json(&json, Default::default())?;
    /// assert_eq!(t.count_pieces("hello world"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_pieces(&self, text: &str) -> usize {
        let mut count = 0;
        let mut ids = Vec::new();
        let mut state = Scratch::default();
        for chunk in chunks(text, CHUNK_BYTES) {
            self.encode_chunk(chunk, &mut ids, usize::MAX, &mut state);
            count += ids.len();
            ids.clear();
        }
        count
    }

    fn encode_chunk(&self, chunk: &str, ids: &mut Vec<u32>, limit: usize, s: &mut Scratch) {
        let mut rest = chunk;
        while !rest.is_empty() && ids.len() < limit {
            match self.find_added(rest) {
                Some((at, len, id)) => {
                    self.encode_plain(&rest[..at], ids, limit, s);
                    if ids.len() < limit {
                        ids.push(id);
                    }
                    rest = &rest[at + len..];
                }
                None => {
                    self.encode_plain(rest, ids, limit, s);
                    break;
                }
            }
        }
    }

    /// Leftmost, then longest, added token in `text`: (byte offset, byte length, id).
    fn find_added(&self, text: &str) -> Option<(usize, usize, u32)> {
        if self.added.is_empty() {
            return None;
        }
        for (at, _) in text.char_indices() {
            let tail = &text[at..];
            // `added` is sorted longest first: the first match is the longest.
            if let Some((tok, id)) = self
                .added
                .iter()
                .find(|(t, _)| tail.starts_with(t.as_str()))
            {
                return Some((at, tok.len(), *id));
            }
        }
        None
    }

    fn encode_plain(&self, text: &str, ids: &mut Vec<u32>, limit: usize, s: &mut Scratch) {
        if text.is_empty() {
            return;
        }
        s.normalized.clear();
        self.normalizer.run(text, &mut s.normalized, &mut s.tmp);
        let normalized = std::mem::take(&mut s.normalized);
        for word in pre_tokenize(&normalized) {
            if ids.len() >= limit {
                break;
            }
            self.word_piece(word, ids);
        }
        s.normalized = normalized;
    }

    fn word_piece(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > self.max_input_chars_per_word {
            ids.push(self.unk_id);
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                let piece = &word[start..end];
                let map = if start == 0 {
                    &self.vocab
                } else {
                    &self.continuations
                };
                if let Some(&id) = map.get(piece) {
                    found = Some(id);
                    break;
                }
                // Step back one character (`end` stays on a char boundary).
                end -= piece.chars().next_back().map_or(1, char::len_utf8);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(mark);
                    ids.push(self.unk_id);
                    return;
                }
            }
        }
    }
}

fn check_max_tokens(max_tokens: usize) -> Result<(), Error> {
    if (2..=MAX_MODEL_TOKENS).contains(&max_tokens) {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidOptions,
            "maxTokens",
            format!("must be between 2 and {MAX_MODEL_TOKENS}, got {max_tokens}"),
        ))
    }
}

/// Reads `[CLS]` and `[SEP]` from a `TemplateProcessing` (`[CLS] $A [SEP]`) or `BertProcessing`
/// post-processor; without one, from the vocabulary.
fn post_processor(
    pp: Option<&serde_json::Value>,
    lookup: &dyn Fn(&str, &str) -> Result<u32, Error>,
) -> Result<(u32, u32), Error> {
    let path = "tokenizer.post_processor";
    let Some(pp) = pp.filter(|v| !v.is_null()) else {
        return Ok((lookup(path, "[CLS]")?, lookup(path, "[SEP]")?));
    };
    let id_of = |v: &serde_json::Value| v.get(1).and_then(|x| x.as_u64()).map(|x| x as u32);
    match pp.get("type").and_then(|t| t.as_str()) {
        Some("BertProcessing") => {
            let cls = pp.get("cls").and_then(id_of);
            let sep = pp.get("sep").and_then(id_of);
            match (cls, sep) {
                (Some(c), Some(s)) => Ok((c, s)),
                _ => Err(invalid(path, "BertProcessing without cls/sep ids")),
            }
        }
        Some("TemplateProcessing") => {
            let single = pp
                .get("single")
                .and_then(|s| s.as_array())
                .ok_or_else(|| invalid(path, "TemplateProcessing without `single`"))?;
            let special = |item: &serde_json::Value| {
                item.get("SpecialToken")
                    .and_then(|t| t.get("id"))
                    .and_then(|t| t.as_str())
                    .map(str::to_string)
            };
            let is_seq = |item: &serde_json::Value| item.get("Sequence").is_some();
            let (first, last) = match single.as_slice() {
                [a, b, c] if is_seq(b) => match (special(a), special(c)) {
                    (Some(a), Some(c)) => (a, c),
                    _ => return Err(invalid(path, "expected the template [CLS] $A [SEP]")),
                },
                _ => return Err(invalid(path, "expected the template [CLS] $A [SEP]")),
            };
            let id = |name: &str| {
                pp.get("special_tokens")
                    .and_then(|s| s.get(name))
                    .and_then(|s| s.get("ids"))
                    .and_then(|s| s.as_array())
                    .and_then(|a| match a.as_slice() {
                        [x] => x.as_u64().map(|x| x as u32),
                        _ => None,
                    })
                    .map_or_else(|| lookup(path, name), Ok)
            };
            Ok((id(&first)?, id(&last)?))
        }
        other => Err(invalid(
            "tokenizer.post_processor.type",
            format!("expected TemplateProcessing or BertProcessing, found {other:?}"),
        )),
    }
}

#[derive(Default)]
struct Scratch {
    normalized: String,
    tmp: String,
}

impl Normalizer {
    /// `BertNormalizer`, appending to `out` (`tmp` is scratch space).
    fn run(&self, text: &str, out: &mut String, tmp: &mut String) {
        if text.is_ascii() {
            // No accents, no CJK, no non-ASCII whitespace or format characters: one pass.
            for b in text.bytes() {
                let c = b as char;
                if self.clean_text {
                    if c == '\0' || is_control(c) {
                        continue;
                    }
                    if is_whitespace(c) {
                        out.push(' ');
                        continue;
                    }
                }
                out.push(if self.lowercase {
                    c.to_ascii_lowercase()
                } else {
                    c
                });
            }
            return;
        }
        tmp.clear();
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    tmp.push(' ');
                    continue;
                }
            }
            if self.handle_chinese_chars && is_chinese_char(c) {
                tmp.push(' ');
                tmp.push(c);
                tmp.push(' ');
            } else {
                tmp.push(c);
            }
        }
        let push = |out: &mut String, c: char| {
            if self.lowercase {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
        };
        if self.strip_accents {
            for c in tmp.nfd() {
                if !c.is_mark_nonspacing() {
                    push(out, c);
                }
            }
        } else {
            for c in tmp.chars() {
                push(out, c);
            }
        }
    }
}

/// `BertPreTokenizer`: words split on whitespace, each punctuation character its own word.
fn pre_tokenize(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .flat_map(split_punctuation)
}

fn split_punctuation(word: &str) -> impl Iterator<Item = &str> {
    let mut rest = word;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let cut = if is_bert_punc(first) {
            first.len_utf8()
        } else {
            rest.char_indices()
                .find(|&(_, c)| is_bert_punc(c))
                .map_or(rest.len(), |(i, _)| i)
        };
        let (head, tail) = rest.split_at(cut);
        rest = tail;
        Some(head)
    })
}

fn is_bert_punc(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control in BERT's sense: Unicode categories Cc, Cf, Cn, Co, Cs, except tab, LF and CR.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// CJK Unified Ideographs and their extensions/compatibility blocks (as in BERT).
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// Chunks of about `size` bytes, cut just before a whitespace character (a Unicode starter, so
/// neither NFD nor word splitting can see across the cut). Text without whitespace is one chunk.
const CHUNK_BYTES: usize = 1024;

fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = if rest.len() <= size {
            rest.len()
        } else {
            let mut at = size;
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            rest[at..]
                .char_indices()
                .find(|&(_, c)| is_whitespace(c))
                .map_or(rest.len(), |(i, _)| at + i)
        };
        let (head, tail) = rest.split_at(cut);
        rest = tail;
        Some(head)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&str> {
        pre_tokenize(s).collect()
    }

    #[test]
    fn pre_tokenizer_isolates_punctuation() {
        assert_eq!(
            words("Hey friend!     How are you?!?"),
            ["Hey", "friend", "!", "How", "are", "you", "?", "!", "?"]
        );
        assert_eq!(words("a.b"), ["a", ".", "b"]);
        assert_eq!(words("..."), [".", ".", "."]);
        assert_eq!(words(""), Vec::<&str>::new());
    }

    #[test]
    fn chunks_cut_before_whitespace_and_cover_the_text() {
        let text = "word ".repeat(1000) + "é漢字 end";
        let parts: Vec<&str> = chunks(&text, 64).collect();
        assert_eq!(parts.concat(), text);
        assert!(parts[1..].iter().all(|p| p.starts_with(' ')));
        let solid = "x".repeat(5000);
        assert_eq!(chunks(&solid, 64).count(), 1);
    }

    #[test]
    fn normalizer_strips_accents_and_lowercases() {
        let n = Normalizer {
            clean_text: true,
            handle_chinese_chars: true,
            strip_accents: true,
            lowercase: true,
        };
        let mut out = String::new();
        n.run("Café\u{0}\tÆ漢", &mut out, &mut String::new());
        assert_eq!(out, "cafe æ 漢 ");
    }
}
