//! Result compression (docs/design.md, "Result compression"): `compressResults(candidates,
//! question, options)`.
//!
//! The input is a ranked candidate list, best first (from `query`'s fusion or from any other
//! engine: a vector database, a search cluster). Its order is kept, ties as given. The stages
//! run in this order, each counted in [`QueryStats`]:
//!
//! 1. **`minScore`** (default 0.3): candidates with `score < minScore` go.
//! 2. **n-gram near-duplicates** (`ngramThreshold` 0.7, `ngramSize` 3): a candidate whose set
//!    of word `ngramSize`-shingles (Unicode words, lower-cased; a text shorter than
//!    `ngramSize` words is one shingle) has Jaccard similarity ≥ `ngramThreshold` with an
//!    earlier *kept* candidate goes. Two texts without any word are never near-duplicates
//!    (their Jaccard similarity is 0), except at threshold 0.
//! 3. **semantic dedup** (`similarityThreshold` 0.85): greedy clustering in rank order: a
//!    candidate whose cosine similarity with a kept candidate is ≥ the threshold joins that
//!    cluster and goes, so each cluster keeps its best-ranked member. Candidates without an
//!    `embedding` are embedded with the given [`Embedder`], all in one
//!    [`embed`](Embedder::embed) call (only those that reached this stage).
//! 4. **`maxChunksPerDoc`** (default 2, 0 = no limit): the first N of each `docId` stay.
//! 5. **`topN`** (default 5): the first N stay.
//! 6. **truncation** of factual questions' results (see [`classify`](super::classify)), unless
//!    `truncate: false` or `queryKind: "conceptual"`: see [`truncate_at_word`].
//!
//! Every stage sees every survivor of the stage before it (the stats count each stage over the
//! whole list, as retrieval tools report them), so the two dedup stages cost
//! O(survivors × kept) comparisons: `minScore` first keeps that small, and `query` passes at
//! most its fused pool ([`compression_pool`](super::index::compression_pool): 10 × `topN`,
//! between 50 and 200).
//!
//! A threshold of exactly 1 switches its dedup stage off (see
//! [`options`](super::options)): with `{minScore: 0, ngramThreshold: 1,
//! similarityThreshold: 1, maxChunksPerDoc: 0}` the results are the first `topN` candidates.
//!
//! ```
//! use condense::embed::Embedder;
//! use condense::retrieve::options::QueryOptions;
//! use condense::retrieve::results::{compress_results, Candidate};
//!
//! let candidates = Candidate::list_from_json(r#"[
//!   {"chunkId": "auth#0", "docId": "auth", "path": "docs/auth.md",
//!    "headerPath": ["Configuration", "Authentication"], "score": 0.92,
//!    "content": "Authentication is configured in the auth section of config.toml."},
//!   {"id": "auth#1", "docId": "auth", "score": 0.9,
//!    "text": "Authentication is configured in the auth section of config.toml."},
//!   {"id": "misc#0", "docId": "misc", "score": 0.1, "text": "Unrelated."}
//! ]"#)?;
//! let out = compress_results(candidates, "configure authentication",
//!                            &QueryOptions::default(), &Embedder::lexical())?;
//! assert_eq!(out.results.len(), 1);
//! assert_eq!(out.stats.removed_by_min_score, 1);
//! assert_eq!(out.stats.removed_as_near_duplicate, 1);
//! assert!(out.text.starts_with("[1] docs/auth.md § Configuration > Authentication (0.92)\n"));
//! # Ok::<(), condense::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
#[cfg(test)]
use unicode_segmentation::UnicodeSegmentation;

use super::classify::{classify, QueryKind};
use super::format;
use super::options::QueryOptions;
use super::Chunk;
use crate::embed::Embedder;
use crate::error::{read_json, read_value, Error, ErrorKind};
use crate::text::measure;

/// What marks a truncated result's end (the usual `...`).
pub const ELLIPSIS: &str = "...";

/// One ranked input of [`compress_results`].
///
/// JSON form (camelCase, unknown keys refused):
/// `{chunkId | id, docId, path?, headerPath?, score, content | text, embedding?}`, where
/// `headerPath` is an array of headers (outermost first) or one string split at `>`
/// (`"Configuration > Authentication"`), `score` a number in \[0, 1\] and
/// `embedding` an array of finite numbers, the same length for every candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Candidate {
    /// The chunk's id (JSON `chunkId` or `id`).
    #[serde(alias = "id")]
    pub chunk_id: String,
    /// The document the chunk belongs to (what `maxChunksPerDoc` counts by).
    pub doc_id: String,
    /// The document's path or title, if any.
    #[serde(default)]
    pub path: Option<String>,
    /// Section headers above the chunk, outermost first.
    #[serde(default, deserialize_with = "de_header_path")]
    pub header_path: Vec<String>,
    /// Relevance, already normalised to \[0, 1\].
    #[serde(deserialize_with = "de_score")]
    pub score: f32,
    /// The chunk's text (JSON `content` or `text`).
    #[serde(alias = "text")]
    pub content: String,
    /// The chunk's embedding (JSON `embedding`), if the caller has one; otherwise semantic
    /// dedup embeds the content. When some candidates have one and others not, the given
    /// ones must come from the same embedder as the one passed to [`compress_results`].
    #[serde(
        default,
        rename = "embedding",
        deserialize_with = "de_embedding",
        skip_serializing_if = "Option::is_none"
    )]
    pub vector: Option<Vec<f32>>,
}

impl Candidate {
    /// A candidate from an index chunk and its score (no embedding).
    pub fn from_chunk(chunk: &Chunk, score: f32) -> Candidate {
        Candidate {
            chunk_id: chunk.id.clone(),
            doc_id: chunk.doc_id.clone(),
            path: chunk.path.clone(),
            header_path: chunk.header_path.clone(),
            score,
            content: chunk.text.clone(),
            vector: None,
        }
    }

    /// Reads a JSON array of candidates; errors name the field (`candidates[3].score`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidJson`] for malformed JSON; [`ErrorKind::InvalidInput`] for a
    /// missing, unknown or ill-typed field, a score outside \[0, 1\], a non-finite embedding
    /// value or embeddings of different lengths.
    pub fn list_from_json(json: &str) -> Result<Vec<Candidate>, Error> {
        let list: Vec<Candidate> = read_json(json, ErrorKind::InvalidInput, "candidates")?;
        check_candidates(&list)?;
        Ok(list)
    }

    /// Like [`list_from_json`](Candidate::list_from_json), from a JSON value.
    ///
    /// # Errors
    /// As [`list_from_json`](Candidate::list_from_json).
    pub fn list_from_value(value: &serde_json::Value) -> Result<Vec<Candidate>, Error> {
        let list: Vec<Candidate> = read_value(value, ErrorKind::InvalidInput, "candidates")?;
        check_candidates(&list)?;
        Ok(list)
    }
}

fn de_score<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    let v = f64::deserialize(d)?;
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        // In [0, 1] the conversion cannot overflow.
        Ok(v as f32)
    } else {
        Err(de::Error::custom("must be a finite number between 0 and 1"))
    }
}

fn de_embedding<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<f32>>, D::Error> {
    let v: Option<Vec<f64>> = Option::deserialize(d)?;
    match v {
        None => Ok(None),
        Some(v) => {
            let mut out = Vec::with_capacity(v.len());
            for (i, x) in v.into_iter().enumerate() {
                let y = x as f32;
                if !y.is_finite() {
                    return Err(de::Error::custom(format!(
                        "element {i} is not a finite 32-bit number"
                    )));
                }
                out.push(y);
            }
            Ok(Some(out))
        }
    }
}

fn de_header_path<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct HeaderPath;
    impl<'de> Visitor<'de> for HeaderPath {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of strings, a string or null")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: de::Error>(self) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<String>, E> {
            Ok(split_header_path(s))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(h) = seq.next_element::<String>()? {
                out.push(h);
            }
            Ok(out)
        }
    }
    d.deserialize_any(HeaderPath)
}

/// `"Configuration > Authentication"` → `["Configuration", "Authentication"]` (empty parts
/// dropped).
pub fn split_header_path(s: &str) -> Vec<String> {
    s.split('>')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
}

/// Checks what serde cannot: finite scores in \[0, 1\] (Rust callers build candidates by
/// hand), finite non-empty embeddings, all of one length.
fn check_candidates(list: &[Candidate]) -> Result<(), Error> {
    let mut dims: Option<(usize, usize)> = None;
    for (i, c) in list.iter().enumerate() {
        if !(c.score.is_finite() && (0.0..=1.0).contains(&c.score)) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("candidates[{i}].score"),
                "must be a finite number between 0 and 1",
            ));
        }
        let Some(v) = &c.vector else { continue };
        let path = || format!("candidates[{i}].embedding");
        if v.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                path(),
                "must not be empty",
            ));
        }
        if let Some(j) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                path(),
                format!("element {j} is not a finite number"),
            ));
        }
        match dims {
            None => dims = Some((i, v.len())),
            Some((first, n)) if n != v.len() => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    path(),
                    format!(
                        "has {} dimensions but candidates[{first}].embedding has {n}",
                        v.len()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// When some candidates have an embedding and others do not, the missing ones are made by
/// `embedder`, so the given ones must have its dimensions.
fn check_mixed_dims(list: &[Candidate], embedder: &Embedder) -> Result<(), Error> {
    if !list.iter().any(|c| c.vector.is_none()) {
        return Ok(());
    }
    for (i, c) in list.iter().enumerate() {
        if let Some(v) = &c.vector {
            if v.len() != embedder.dims() {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("candidates[{i}].embedding"),
                    format!(
                        "has {} dimensions; candidates without an embedding are embedded with \
                         {} dimensions, so give every candidate an embedding or none",
                        v.len(),
                        embedder.dims()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The checks every query-side entry point makes first: the options in range and a question
/// with something in it (`question`, [`ErrorKind::InvalidInput`]).
pub(crate) fn check_query(question: &str, options: &QueryOptions) -> Result<(), Error> {
    options.validate()?;
    if question.trim().is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "question",
            "must not be empty",
        ));
    }
    Ok(())
}

/// Serialises an `f32` as the `f64` nearest its shortest decimal form (`0.4458292`, not
/// `0.44582921266555786`): JSON and JS numbers are f64, and this keeps both builds' output
/// identical and readable.
fn f32_shortest<S: serde::Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
    let shortest: f64 = v.to_string().parse().unwrap_or(f64::from(*v));
    s.serialize_f64(shortest)
}

/// One returned result. JSON keys are camelCase:
/// `{chunkId, docId, path, headerPath, score, content, truncated}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// The chunk's id.
    pub chunk_id: String,
    /// Its document's id.
    pub doc_id: String,
    /// Its document's path, if any (`null` in JSON otherwise).
    pub path: Option<String>,
    /// Section headers above it, outermost first.
    pub header_path: Vec<String>,
    /// Its score in \[0, 1\], as given. Serialised as the shortest decimal that reads back
    /// as this `f32`, so native JSON and JS numbers from wasm print the same digits.
    #[serde(serialize_with = "f32_shortest")]
    pub score: f32,
    /// Its content, truncated for factual questions (then ending in `...`).
    pub content: String,
    /// Whether `content` was truncated.
    pub truncated: bool,
}

/// What each stage did. JSON keys are camelCase. The counts add up:
/// `candidates = afterMinScore + removedByMinScore`,
/// `afterMinScore = afterNgramDedup + removedAsNearDuplicate`,
/// `afterNgramDedup = afterSemanticDedup + removedAsSemanticDuplicate`,
/// `afterSemanticDedup = afterPerDocLimit + removedByPerDocLimit`,
/// `afterPerDocLimit = returned + removedByTopN`, `truncated ≤ returned`.
///
/// The `compression_stats` fields retrieval tools commonly report are given too, camelCased
/// (docs/design.md, "Result compression"):
///
/// | usual name | here | equals |
/// |---|---|---|
/// | `original_count` | `originalCount` | `candidates` |
/// | `after_threshold` | `afterThreshold` | `afterMinScore` |
/// | `after_dedup` | `afterDedup` | `afterSemanticDedup` (after both dedup stages) |
/// | `clusters_merged` | `clustersMerged` | `removedAsNearDuplicate + removedAsSemanticDuplicate` |
///
/// (`clustersMerged` = `afterThreshold − afterDedup`, as in the example of the design
/// notes: 23 after the
/// score filter, 12 after deduplication, 11 merged.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryStats {
    /// Candidates in.
    pub candidates: usize,
    /// Left after the score filter.
    pub after_min_score: usize,
    /// Left after n-gram near-duplicate removal.
    pub after_ngram_dedup: usize,
    /// Left after semantic dedup.
    pub after_semantic_dedup: usize,
    /// Left after the per-document limit.
    pub after_per_doc_limit: usize,
    /// Results returned.
    pub returned: usize,
    /// Removed by `minScore`.
    pub removed_by_min_score: usize,
    /// Removed as n-gram near-duplicates of a better-ranked result.
    pub removed_as_near_duplicate: usize,
    /// Removed as members of a semantic cluster whose best was kept.
    pub removed_as_semantic_duplicate: usize,
    /// Removed by `maxChunksPerDoc`.
    pub removed_by_per_doc_limit: usize,
    /// Removed by `topN`.
    pub removed_by_top_n: usize,
    /// Returned results whose content was truncated.
    pub truncated: usize,
    /// Characters (Unicode scalar values) of all candidates' content.
    pub chars_before: usize,
    /// Characters of the returned results' content (after truncation).
    pub chars_after: usize,
    /// Estimated tokens ([`estimate_tokens`](crate::text::estimate_tokens)) of all
    /// candidates' content.
    pub tokens_before: usize,
    /// Estimated tokens of the returned results' content.
    pub tokens_after: usize,
    /// `100 × (tokensBefore − tokensAfter) / tokensBefore`, one decimal (0 without tokens;
    /// negative only if truncation marks outweigh what they removed).
    pub reduction_percent: f64,
    /// The usual `original_count`: `candidates`.
    pub original_count: usize,
    /// The usual `after_threshold`: `afterMinScore`.
    pub after_threshold: usize,
    /// The usual `after_dedup`: `afterSemanticDedup`.
    pub after_dedup: usize,
    /// The usual `clusters_merged`: results removed by both dedup stages.
    pub clusters_merged: usize,
}

/// The output of `query` and [`compress_results`]. JSON keys are camelCase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResult {
    /// The results, best first.
    pub results: Vec<SearchResult>,
    /// The results laid out in `options.format` (see [`super::format`]).
    pub text: String,
    /// What each stage did.
    pub stats: QueryStats,
    /// How the question was classified (or `options.queryKind`).
    pub query_kind: QueryKind,
}

/// Runs the result-compression stages (see the [module docs](self)) on ranked candidates.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] for an empty (or blank) `question` (path `question`), a
/// candidate score that is not finite in \[0, 1\], an embedding that is empty or not finite,
/// embeddings of different lengths, or given embeddings of another dimension than
/// `embedder`'s when some candidates lack one (path `candidates[i]...`);
/// [`ErrorKind::InvalidOptions`] for options out of range; [`ErrorKind::Internal`] if the
/// embedder fails.
pub fn compress_results(
    candidates: Vec<Candidate>,
    question: &str,
    options: &QueryOptions,
    embedder: &Embedder,
) -> Result<QueryResult, Error> {
    check_query(question, options)?;
    check_candidates(&candidates)?;
    check_mixed_dims(&candidates, embedder)?;
    let query_kind = options.query_kind.unwrap_or_else(|| classify(question));

    let mut stats = QueryStats {
        candidates: candidates.len(),
        ..QueryStats::default()
    };
    for c in &candidates {
        let (chars, tokens) = measure(&c.content);
        stats.chars_before += chars;
        stats.tokens_before += tokens;
    }

    // 1. minScore
    let items: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| f64::from(c.score) >= options.min_score)
        .collect();
    stats.after_min_score = items.len();

    // 2. n-gram near-duplicates
    let items = ngram_dedup(items, options);
    stats.after_ngram_dedup = items.len();

    // 3. semantic dedup
    let items = semantic_dedup(items, options, embedder)?;
    stats.after_semantic_dedup = items.len();

    // 4. maxChunksPerDoc
    let items = per_doc_limit(items, options.max_chunks_per_doc);
    stats.after_per_doc_limit = items.len();

    // 5. topN
    let items: Vec<&Candidate> = items.into_iter().take(options.top_n).collect();
    stats.returned = items.len();

    // 6. truncation
    let truncate = options.truncate && query_kind == QueryKind::Factual;
    let results: Vec<SearchResult> = items
        .into_iter()
        .map(|c| {
            let cut = if truncate {
                truncate_at_word(&c.content, options.truncate_chars)
            } else {
                None
            };
            let truncated = cut.is_some();
            SearchResult {
                chunk_id: c.chunk_id.clone(),
                doc_id: c.doc_id.clone(),
                path: c.path.clone(),
                header_path: c.header_path.clone(),
                score: c.score,
                content: cut.unwrap_or_else(|| c.content.clone()),
                truncated,
            }
        })
        .collect();

    for r in &results {
        let (chars, tokens) = measure(&r.content);
        stats.chars_after += chars;
        stats.tokens_after += tokens;
        stats.truncated += usize::from(r.truncated);
    }
    stats.removed_by_min_score = stats.candidates - stats.after_min_score;
    stats.removed_as_near_duplicate = stats.after_min_score - stats.after_ngram_dedup;
    stats.removed_as_semantic_duplicate = stats.after_ngram_dedup - stats.after_semantic_dedup;
    stats.removed_by_per_doc_limit = stats.after_semantic_dedup - stats.after_per_doc_limit;
    stats.removed_by_top_n = stats.after_per_doc_limit - stats.returned;
    stats.reduction_percent = reduction_percent(stats.tokens_before, stats.tokens_after);
    stats.original_count = stats.candidates;
    stats.after_threshold = stats.after_min_score;
    stats.after_dedup = stats.after_semantic_dedup;
    stats.clusters_merged = stats.removed_as_near_duplicate + stats.removed_as_semantic_duplicate;

    let text = format::render(&results, options.format)?;
    Ok(QueryResult {
        results,
        text,
        stats,
        query_kind,
    })
}

/// [`compress_results`] over JSON values (the wasm and CLI form): `candidates` is an array of
/// candidates ([`Candidate`]'s JSON form), `options` a [`QueryOptions`] object or `null`.
///
/// # Errors
/// As [`Candidate::list_from_value`], [`QueryOptions::from_value`] and [`compress_results`].
pub fn compress_results_value(
    candidates: &serde_json::Value,
    question: &str,
    options: &serde_json::Value,
    embedder: &Embedder,
) -> Result<QueryResult, Error> {
    let options = QueryOptions::from_value(options)?;
    let candidates = Candidate::list_from_value(candidates)?;
    compress_results(candidates, question, &options, embedder)
}

fn reduction_percent(before: usize, after: usize) -> f64 {
    if before == 0 {
        return 0.0;
    }
    // Plain arithmetic (and `round`, which is exact): identical natively and in wasm.
    let ratio = (before as f64 - after as f64) * 100.0 / before as f64;
    (ratio * 10.0).round() / 10.0
}

/// The sorted, distinct hashes of the word `n`-shingles of `text` (Unicode words,
/// lower-cased). A text of fewer than `n` words is one shingle; a text without words has none.
pub fn shingles(text: &str, n: usize) -> Vec<u64> {
    // Each word is hashed once (FNV-1a of its lower-case bytes: ASCII words lowered inside the
    // hash loop, the others through `str::to_lowercase`), then each window's hash combines its
    // words' hashes in order ([`window_hash`]).
    let mut hashes: Vec<u64> = Vec::with_capacity(text.len() / 6 + 1);
    for word in crate::text::words::words(text) {
        let h = if word.is_ascii() {
            fnv1a_lower(word.as_bytes())
        } else {
            crate::text::hash::fnv1a(word.to_lowercase().as_bytes())
        };
        hashes.push(h);
    }
    if hashes.is_empty() {
        return Vec::new();
    }
    let n = n.clamp(1, hashes.len());
    let mut out: Vec<u64> = hashes.windows(n).map(window_hash).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// FNV-1a 64 ([`crate::text::hash::fnv1a`]) of the ASCII lower case of `bytes`.
fn fnv1a_lower(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h = (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
    }
    h
}

/// One shingle's hash from its words' hashes, in order: a multiply-rotate chain (order
/// matters: `a b` and `b a` differ) and a final avalanche (MurmurHash3's `fmix64`), so that
/// distinct shingles collide with probability ~2⁻⁶⁴ per pair.
fn window_hash(words: &[u64]) -> u64 {
    let mut h = FNV_OFFSET;
    for &w in words {
        h = (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// FNV-1a 64 ([`crate::text::hash::fnv1a`]'s constants), for hashing a word without copying it.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// [`shingles`] written plainly (the crate's word segmentation, a `String` per word): what it
/// must equal.
#[cfg(test)]
fn shingles_reference(text: &str, n: usize) -> Vec<u64> {
    let words: Vec<String> = text.unicode_words().map(str::to_lowercase).collect();
    if words.is_empty() {
        return Vec::new();
    }
    let hashes: Vec<u64> = words
        .iter()
        .map(|w| crate::text::hash::fnv1a(w.as_bytes()))
        .collect();
    let n = n.clamp(1, words.len());
    let mut out: Vec<u64> = hashes.windows(n).map(window_hash).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Jaccard similarity of two sorted, distinct sets (0 when both are empty).
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        0.0
    } else {
        common as f64 / union as f64
    }
}

fn ngram_dedup<'a>(items: Vec<&'a Candidate>, options: &QueryOptions) -> Vec<&'a Candidate> {
    if !options.ngram_dedup_enabled() {
        return items;
    }
    // An inverted index of the kept results' shingles: a candidate is compared only with the
    // kept results it shares a shingle with, and the intersection sizes come from the postings
    // (the same Jaccard values as `jaccard`, without a merge per pair). Lookups only: the
    // iteration order of the map never reaches the output. Each shingle's postings are a chain
    // through `entries` (kept result, next entry), so adding one allocates nothing.
    const END: usize = usize::MAX;
    let mut head: crate::text::hash::FastMap<u64, usize> = Default::default();
    let mut entries: Vec<(usize, usize)> = Vec::new();
    let mut kept: Vec<(&Candidate, usize)> = Vec::with_capacity(items.len());
    let mut common: Vec<usize> = Vec::new();
    // Every candidate is shingled once; sized up front, the map never grows while filling.
    let all: Vec<Vec<u64>> = items
        .iter()
        .map(|c| shingles(&c.content, options.ngram_size))
        .collect();
    let total: usize = all.iter().map(Vec::len).sum();
    head.reserve(total);
    entries.reserve(total);
    for (c, s) in items.into_iter().zip(all) {
        common.clear();
        common.resize(kept.len(), 0);
        for h in &s {
            let mut e = head.get(h).copied().unwrap_or(END);
            while let Some(&(k, next)) = entries.get(e) {
                if let Some(n) = common.get_mut(k) {
                    *n += 1;
                }
                e = next;
            }
        }
        let duplicate = kept.iter().zip(&common).any(|((_, len), &both)| {
            let union = s.len() + len - both;
            let j = if union == 0 {
                0.0
            } else {
                both as f64 / union as f64
            };
            j >= options.ngram_threshold
        });
        if !duplicate {
            let k = kept.len();
            for &h in &s {
                let e = entries.len();
                let next = head.insert(h, e).unwrap_or(END);
                entries.push((k, next));
            }
            kept.push((c, s.len()));
        }
    }
    kept.into_iter().map(|(c, _)| c).collect()
}

fn semantic_dedup<'a>(
    items: Vec<&'a Candidate>,
    options: &QueryOptions,
    embedder: &Embedder,
) -> Result<Vec<&'a Candidate>, Error> {
    if !options.semantic_dedup_enabled() || items.len() < 2 {
        return Ok(items);
    }
    let missing: Vec<&str> = items
        .iter()
        .filter(|c| c.vector.is_none())
        .map(|c| c.content.as_str())
        .collect();
    let embedded = if missing.is_empty() {
        Vec::new()
    } else {
        embedder.embed(&missing)?
    };
    if embedded.len() != missing.len() {
        return Err(Error::new(
            ErrorKind::Internal,
            "",
            "the embedder returned a wrong number of vectors",
        ));
    }
    let mut fresh = embedded.iter();
    // Unit copies, so that the cosine of a pair is one fixed-order dot product
    // (`vector::dot`: SIMD-friendly, identical natively and in wasm) instead of three sums.
    let unit = |v: &[f32]| -> Vec<f32> {
        let norm = crate::retrieve::vector::dot(v, v).sqrt();
        if norm > 0.0 {
            v.iter().map(|x| x / norm).collect()
        } else {
            vec![0.0; v.len()]
        }
    };
    let mut kept: Vec<(&Candidate, Vec<f32>)> = Vec::with_capacity(items.len());
    for c in items {
        let v: &[f32] = match &c.vector {
            Some(v) => v,
            None => match fresh.next() {
                Some(v) => v,
                None => {
                    return Err(Error::new(
                        ErrorKind::Internal,
                        "",
                        "a candidate lost its vector",
                    ))
                }
            },
        };
        let v = unit(v);
        if !kept.iter().any(|(_, k)| {
            f64::from(crate::retrieve::vector::dot(&v, k)) >= options.similarity_threshold
        }) {
            kept.push((c, v));
        }
    }
    Ok(kept.into_iter().map(|(c, _)| c).collect())
}

fn per_doc_limit(items: Vec<&Candidate>, max: usize) -> Vec<&Candidate> {
    if max == 0 {
        return items;
    }
    let mut per_doc: BTreeMap<&str, usize> = BTreeMap::new();
    items
        .into_iter()
        .filter(|c| {
            let n = per_doc.entry(c.doc_id.as_str()).or_insert(0);
            *n += 1;
            *n <= max
        })
        .collect()
}

/// Truncates `content` to at most `max_chars` characters at a word boundary and appends
/// [`ELLIPSIS`]; `None` when it is short enough (or there is nothing to cut).
///
/// The design notes this follows (docs/design.md, "Result compression") cut at `max_chars`
/// characters, strip trailing white space and append `...` (and name word-boundary truncation
/// as their next step). Here the cut never falls inside a word (a word being a run of non-white-space
/// characters):
/// - if the character after the first `max_chars` is white space, the cut is there; otherwise
///   it moves back to the last white space within them;
/// - trailing white space is stripped before the `...`, so the kept part (without the
///   ellipsis) has at most `max_chars` characters;
/// - if the first word alone is longer than `max_chars` (a long URL), the cut is at the end of
///   that word, so the kept part may be longer;
/// - if what would be cut away is only white space, or the whole content is one word,
///   nothing is truncated.
///
/// So a truncated result is always `prefix + "..."` where `prefix` is a non-empty prefix of
/// the content followed in the content by white space.
///
/// ```
/// use condense::retrieve::results::truncate_at_word;
/// let text = "Retrieves a user by their unique identifier.";
/// assert_eq!(truncate_at_word(text, 20).as_deref(), Some("Retrieves a user by..."));
/// assert_eq!(truncate_at_word(text, 100), None);
/// ```
pub fn truncate_at_word(content: &str, max_chars: usize) -> Option<String> {
    // Byte offset of the character after the first `max_chars`; None: short enough.
    let (end, next) = content.char_indices().nth(max_chars)?;
    let head = content.get(..end)?;
    let mut cut = if next.is_whitespace() {
        head
    } else {
        match head.rfind(char::is_whitespace) {
            Some(at) => head.get(..at)?,
            None => "",
        }
    }
    .trim_end();
    if cut.is_empty() {
        // The first word is longer than the limit: cut at its end.
        let start = content.len() - content.trim_start().len();
        let word_len = content.get(start..)?.find(char::is_whitespace)?;
        cut = content.get(..start + word_len)?;
    }
    let rest = content.get(cut.len()..)?;
    if rest.trim().is_empty() {
        return None;
    }
    Some(format!("{cut}{ELLIPSIS}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::options::ResultFormat;

    fn cand(id: &str, doc: &str, score: f32, content: &str) -> Candidate {
        Candidate {
            chunk_id: id.into(),
            doc_id: doc.into(),
            path: None,
            header_path: Vec::new(),
            score,
            content: content.into(),
            vector: None,
        }
    }

    fn with_vec(mut c: Candidate, v: &[f32]) -> Candidate {
        c.vector = Some(v.to_vec());
        c
    }

    /// Pseudo-random distinct words, so that different ids give unrelated texts.
    fn words(seed: u64, n: usize) -> String {
        const SYL: [&str; 16] = [
            "ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "ve", "zu", "bri", "dax", "fen", "gor",
            "hul", "jit",
        ];
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(1);
        let mut out = Vec::new();
        for _ in 0..n {
            let mut w = String::new();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.push_str(SYL[(x % 16) as usize]);
            }
            out.push(w);
        }
        out.join(" ")
    }

    fn off() -> QueryOptions {
        QueryOptions {
            min_score: 0.0,
            ngram_threshold: 1.0,
            similarity_threshold: 1.0,
            max_chunks_per_doc: 0,
            top_n: 100,
            truncate: false,
            ..QueryOptions::default()
        }
    }

    fn run(cands: Vec<Candidate>, question: &str, options: &QueryOptions) -> QueryResult {
        match compress_results(cands, question, options, &Embedder::lexical()) {
            Ok(out) => out,
            Err(e) => panic!("{e}"),
        }
    }

    fn ids(out: &QueryResult) -> Vec<&str> {
        out.results.iter().map(|r| r.chunk_id.as_str()).collect()
    }

    fn adds_up(s: &QueryStats) {
        assert_eq!(s.candidates, s.after_min_score + s.removed_by_min_score);
        assert_eq!(
            s.after_min_score,
            s.after_ngram_dedup + s.removed_as_near_duplicate
        );
        assert_eq!(
            s.after_ngram_dedup,
            s.after_semantic_dedup + s.removed_as_semantic_duplicate
        );
        assert_eq!(
            s.after_semantic_dedup,
            s.after_per_doc_limit + s.removed_by_per_doc_limit
        );
        assert_eq!(s.after_per_doc_limit, s.returned + s.removed_by_top_n);
        assert!(s.truncated <= s.returned);
        assert_eq!(s.original_count, s.candidates);
        assert_eq!(s.after_threshold, s.after_min_score);
        assert_eq!(s.after_dedup, s.after_semantic_dedup);
        assert_eq!(s.clusters_merged, s.after_threshold - s.after_dedup);
    }

    // --- stage 1: minScore (keep `r.score >= min_score`)

    #[test]
    fn min_score_keeps_scores_at_or_above_the_threshold() {
        let o = QueryOptions {
            min_score: 0.5,
            ..off()
        };
        let out = run(
            vec![
                cand("a", "1", 0.95, &words(1, 12)),
                cand("b", "2", 0.5, &words(2, 12)),
                cand("c", "3", 0.49, &words(3, 12)),
                cand("d", "4", 0.82, &words(4, 12)),
            ],
            "q",
            &o,
        );
        assert_eq!(ids(&out), ["a", "b", "d"]);
        assert_eq!(out.stats.removed_by_min_score, 1);
        adds_up(&out.stats);
    }

    #[test]
    fn min_score_may_leave_nothing() {
        // The filtered set may be empty.
        let out = run(
            vec![cand("a", "1", 0.1, "x"), cand("b", "1", 0.2, "y")],
            "q",
            &QueryOptions::default(),
        );
        assert!(out.results.is_empty());
        assert_eq!(out.text, "");
        assert_eq!(out.stats.removed_by_min_score, 2);
        adds_up(&out.stats);
    }

    // --- stage 2: n-gram near-duplicates (Jaccard, threshold 0.7, before semantic)

    #[test]
    fn shingles_equal_the_reference() {
        let texts = [
            "",
            "one",
            "One two",
            "The Quick brown fox, jumps over the lazy dog. THE QUICK BROWN FOX!",
            "ΣΊΣΥΦΟΣ and ὈΔΥΣΣΕΎΣ met İstanbul's DŽungla ǅ at 3.14 o'clock",
            "mixed ÀÉÎ àéî Straße STRASSE ﬁne 東京 タワー 🙂 x_y foo-bar",
            "a b a b a b",
        ];
        for text in texts {
            for n in 0..6 {
                assert_eq!(
                    shingles(text, n),
                    shingles_reference(text, n),
                    "{text:?} n={n}"
                );
            }
        }
        let long = words(7, 300);
        assert_eq!(shingles(&long, 3), shingles_reference(&long, 3));
    }

    #[test]
    fn shingles_and_jaccard() {
        assert_eq!(shingles("", 3), Vec::<u64>::new());
        assert_eq!(shingles("One two", 3).len(), 1);
        assert_eq!(shingles("a b c d", 3).len(), 2);
        assert_eq!(shingles("A B C", 3), shingles("a, b; c!", 3));
        assert_eq!(shingles("a b a b a b", 2).len(), 2);
        assert_eq!(jaccard(&[], &[]), 0.0);
        assert_eq!(jaccard(&[1, 2, 3], &[2, 3, 4]), 0.5);
        assert_eq!(jaccard(&[1, 2], &[1, 2]), 1.0);
    }

    #[test]
    fn near_duplicates_of_a_kept_result_go() {
        let base = words(7, 20);
        // One word changed at the end: 17 of 19 shingles shared (0.89 ≥ 0.7).
        let near = format!("{} {}", words(7, 19), "different");
        let o = QueryOptions {
            ngram_threshold: 0.7,
            ..off()
        };
        let out = run(
            vec![
                cand("a", "1", 0.9, &base),
                cand("b", "2", 0.8, &words(8, 20)),
                cand("c", "3", 0.7, &near),
            ],
            "q",
            &o,
        );
        assert_eq!(ids(&out), ["a", "b"]);
        assert_eq!(out.stats.removed_as_near_duplicate, 1);
        assert_eq!(out.stats.clusters_merged, 1);
        adds_up(&out.stats);
    }

    #[test]
    fn ngram_comparisons_are_against_kept_results_only() {
        // b is a near-duplicate of a and goes; c resembles b but not a, so it stays.
        let a = format!("{} {}", words(1, 10), words(2, 10));
        let b = format!("{} {}", words(2, 10), words(3, 10));
        let c = format!("{} {}", words(3, 10), words(4, 10));
        let o = QueryOptions {
            ngram_threshold: 0.25,
            ..off()
        };
        // 8 of 28 distinct shingles shared: 0.29; a and c share none.
        let j_ab = jaccard(&shingles(&a, 3), &shingles(&b, 3));
        let j_ac = jaccard(&shingles(&a, 3), &shingles(&c, 3));
        assert!(j_ab >= 0.25 && j_ac < 0.25, "{j_ab} {j_ac}");
        let out = run(
            vec![
                cand("a", "1", 0.9, &a),
                cand("b", "2", 0.8, &b),
                cand("c", "3", 0.7, &c),
            ],
            "q",
            &o,
        );
        assert_eq!(ids(&out), ["a", "c"]);
    }

    #[test]
    fn ngram_threshold_one_keeps_identical_texts() {
        let t = words(5, 30);
        let out = run(
            vec![cand("a", "1", 0.9, &t), cand("b", "2", 0.8, &t)],
            "q",
            &off(),
        );
        assert_eq!(ids(&out), ["a", "b"]);
    }

    // --- stage 3: semantic dedup (sim ≥ 0.85 = same cluster, keep the best)

    #[test]
    fn semantic_clusters_keep_their_best() {
        let o = QueryOptions {
            similarity_threshold: 0.85,
            ..off()
        };
        let out = run(
            vec![
                with_vec(cand("a", "1", 0.9, "alpha"), &[1.0, 0.0, 0.0]),
                with_vec(cand("b", "2", 0.8, "beta"), &[0.0, 1.0, 0.0]),
                // cos(a, c) = 0.9: same cluster as a.
                with_vec(cand("c", "3", 0.7, "gamma"), &[0.9, 0.435_889_9, 0.0]),
                // cos(b, d) = 0.8: a cluster of its own.
                with_vec(cand("d", "4", 0.6, "delta"), &[0.0, 0.8, 0.6]),
            ],
            "q",
            &o,
        );
        assert_eq!(ids(&out), ["a", "b", "d"]);
        assert_eq!(out.stats.removed_as_semantic_duplicate, 1);
        assert_eq!(out.stats.clusters_merged, 1);
        adds_up(&out.stats);
    }

    #[test]
    fn semantic_dedup_embeds_candidates_without_vectors() {
        // The lexical embedder gives identical texts identical vectors (cosine 1).
        let t = words(11, 25);
        let o = QueryOptions {
            similarity_threshold: 0.85,
            ..off()
        };
        let out = run(
            vec![
                cand("a", "1", 0.9, &t),
                cand("b", "2", 0.8, &words(12, 25)),
                cand("c", "3", 0.7, &t),
            ],
            "q",
            &o,
        );
        assert_eq!(ids(&out), ["a", "b"]);
        assert_eq!(out.stats.removed_as_semantic_duplicate, 1);
    }

    #[test]
    fn similarity_threshold_one_keeps_identical_vectors() {
        let out = run(
            vec![
                with_vec(cand("a", "1", 0.9, "x"), &[0.6, 0.8]),
                with_vec(cand("b", "2", 0.8, "x"), &[0.6, 0.8]),
            ],
            "q",
            &off(),
        );
        assert_eq!(ids(&out), ["a", "b"]);
    }

    #[test]
    fn mixed_embeddings_must_have_the_embedders_dimensions() {
        let err = compress_results(
            vec![
                with_vec(cand("a", "1", 0.9, "x"), &[0.6, 0.8]),
                cand("b", "2", 0.8, "y"),
            ],
            "q",
            &QueryOptions::default(),
            &Embedder::lexical(),
        )
        .err();
        assert_eq!(
            err.map(|e| (e.kind(), e.path().to_string())),
            Some((ErrorKind::InvalidInput, "candidates[0].embedding".into()))
        );
    }

    // --- stage 4: maxChunksPerDoc (2 per doc, 0 = no limit)

    #[test]
    fn per_doc_limit_keeps_each_documents_best() {
        let o = QueryOptions {
            max_chunks_per_doc: 2,
            ..off()
        };
        let cands = vec![
            cand("a1", "a", 0.9, &words(1, 10)),
            cand("a2", "a", 0.85, &words(2, 10)),
            cand("b1", "b", 0.8, &words(3, 10)),
            cand("a3", "a", 0.75, &words(4, 10)),
            cand("b2", "b", 0.7, &words(5, 10)),
            cand("b3", "b", 0.65, &words(6, 10)),
        ];
        let out = run(cands.clone(), "q", &o);
        assert_eq!(ids(&out), ["a1", "a2", "b1", "b2"]);
        assert_eq!(out.stats.removed_by_per_doc_limit, 2);
        adds_up(&out.stats);
        let out = run(cands, "q", &off());
        assert_eq!(out.results.len(), 6);
    }

    // --- stage 5: topN

    #[test]
    fn top_n_keeps_the_first() {
        let cands: Vec<Candidate> = (0..8)
            .map(|i| cand(&format!("c{i}"), &format!("d{i}"), 0.9, &words(i, 8)))
            .collect();
        let o = QueryOptions { top_n: 3, ..off() };
        let out = run(cands, "q", &o);
        assert_eq!(ids(&out), ["c0", "c1", "c2"]);
        assert_eq!(out.stats.removed_by_top_n, 5);
        adds_up(&out.stats);
    }

    // --- stage 6: truncation (docs/design.md, "Result compression")

    /// The full content of the truncation example of the design notes (docs/design.md, "Result
    /// compression"). The notes call it 487 characters
    /// and its output "200 chars", but as printed the content has 463 characters and the
    /// output is its first 192 (then `...`): the notes' counts are off (its block probably
    /// lost indentation), its algorithm and its text are what the tests check.
    const GET_USER: &str = "getUserById(id: string): User | null\n\nRetrieves a user by their unique identifier. Returns null if the user\ndoes not exist. This function performs a database lookup and includes\nrelated profile data in the response. The function is cached for 60\nseconds to reduce database load. Use getUserByIdUncached() for\nreal-time data.\n\nExample:\n  const user = getUserById(\"user-123\");\n  if (user) {\n    console.log(user.name);\n  }\n\nThrows: DatabaseError if connection fails";

    /// The notes' own algorithm: `content[:max].rstrip() + "..."`.
    fn seed_truncate(content: &str, max: usize) -> String {
        let head: String = content.chars().take(max).collect();
        format!("{}...", head.trim_end())
    }

    /// The notes' printed "Truncated (200 chars)" output.
    const GET_USER_SEED_CUT: &str = "getUserById(id: string): User | null\n\nRetrieves a user by their unique identifier. Returns null if the user\ndoes not exist. This function performs a database lookup and includes\nrelated profil...";

    #[test]
    fn seed_003_truncation_example() {
        assert_eq!(GET_USER.chars().count(), 463);
        // The notes' algorithm reproduces their printed output at the cut it actually made.
        assert_eq!(seed_truncate(GET_USER, 192), GET_USER_SEED_CUT);
        // Ours never cuts inside a word: `profil` goes, the rest is the notes' output.
        assert_eq!(
            truncate_at_word(GET_USER, 192),
            Some(GET_USER_SEED_CUT.replace(" profil...", "..."))
        );
        // At the default 200 characters the cut falls inside `in`: back to `data`.
        assert_eq!(
            seed_truncate(GET_USER, 200),
            GET_USER_SEED_CUT.replace("profil...", "profile data i...")
        );
        assert_eq!(
            truncate_at_word(GET_USER, 200),
            Some(GET_USER_SEED_CUT.replace("profil...", "profile data..."))
        );
    }

    #[test]
    fn seed_003_factual_query_truncates_conceptual_does_not() {
        let c = || {
            let mut c = cand("api#3", "api", 0.93, GET_USER);
            c.path = Some("docs/api.md".into());
            c.header_path = vec!["Users".into(), "getUserById".into()];
            c
        };
        let out = run(vec![c()], "getUserById function", &QueryOptions::default());
        assert_eq!(out.query_kind, QueryKind::Factual);
        assert!(out.results.iter().all(|r| r.truncated));
        assert_eq!(out.stats.truncated, 1);
        assert!(out.stats.chars_after < out.stats.chars_before);
        assert!(out.stats.reduction_percent > 50.0);
        adds_up(&out.stats);

        let out = run(
            vec![c()],
            "why use JWT authentication?",
            &QueryOptions::default(),
        );
        assert_eq!(out.query_kind, QueryKind::Conceptual);
        assert_eq!(
            out.results.first().map(|r| r.content.as_str()),
            Some(GET_USER)
        );
        assert_eq!(out.stats.truncated, 0);
        assert_eq!(out.stats.reduction_percent, 0.0);

        // `truncate: false` and a queryKind override.
        let o = QueryOptions {
            truncate: false,
            ..QueryOptions::default()
        };
        let out = run(vec![c()], "getUserById function", &o);
        assert_eq!(out.stats.truncated, 0);
        let o = QueryOptions {
            query_kind: Some(QueryKind::Factual),
            ..QueryOptions::default()
        };
        let out = run(vec![c()], "why use JWT authentication?", &o);
        assert_eq!(out.query_kind, QueryKind::Factual);
        assert_eq!(out.stats.truncated, 1);
    }

    #[test]
    fn truncation_edge_cases() {
        // Short enough: untouched.
        assert_eq!(truncate_at_word("short text", 10), None);
        assert_eq!(truncate_at_word("", 20), None);
        // The cut falls exactly before a space.
        assert_eq!(
            truncate_at_word("aaaa bbbb cccc", 4).as_deref(),
            Some("aaaa...")
        );
        // Trailing white space before the cut is stripped.
        assert_eq!(
            truncate_at_word("aaaa   bbbb", 6).as_deref(),
            Some("aaaa...")
        );
        // Only white space would be cut away: untouched.
        assert_eq!(truncate_at_word("aaaa bbbb      ", 9), None);
        // First word longer than the limit: cut at its end.
        assert_eq!(
            truncate_at_word("https://example.com/a/very/long/url and more", 10).as_deref(),
            Some("https://example.com/a/very/long/url...")
        );
        assert_eq!(
            truncate_at_word("  https://example.com/x more", 5).as_deref(),
            Some("  https://example.com/x...")
        );
        // One long word: nothing to cut at.
        assert_eq!(truncate_at_word("abcdefghijklmnopqrstuvwxyz", 5), None);
        // Characters, not bytes.
        assert_eq!(
            truncate_at_word("héé ààà ççç", 8).as_deref(),
            Some("héé ààà...")
        );
        assert_eq!(
            truncate_at_word("日本語 の テキスト です", 6).as_deref(),
            Some("日本語 の...")
        );
    }

    // --- the whole pipeline

    #[test]
    fn seed_003_compression_stats_example() {
        // "Original results: 47, after score filter (≥0.3): 23, after deduplication: 12,
        //  after document limit (2 per doc): 8, clusters merged: 11."
        let mut cands = Vec::new();
        // 12 distinct results: docs d0..d3 with 2 each (8) + d0..d3 with one more each (4
        // removed by the per-document limit).
        let mut distinct = Vec::new();
        for i in 0..12u64 {
            let doc = format!("d{}", i % 4);
            distinct.push(cand(
                &format!("k{i}"),
                &doc,
                0.9 - i as f32 * 0.01,
                &words(100 + i, 30),
            ));
        }
        cands.extend(distinct.iter().cloned());
        // 11 duplicates: 6 near-duplicates (n-gram) and 5 exact copies with n-gram dedup
        // bypassed by a changed word order, caught by their vectors.
        for i in 0..11u64 {
            let src = &distinct[i as usize];
            let mut d = src.clone();
            d.chunk_id = format!("dup{i}");
            d.doc_id = format!("dupdoc{i}");
            d.score = 0.5;
            if i < 6 {
                d.content = format!("{} zzz", words(100 + i, 29));
            } else {
                let mut w: Vec<&str> = src.content.split(' ').collect();
                w.reverse();
                d.content = w.join(" ");
                d.vector = None;
            }
            cands.push(d);
        }
        // 24 below the threshold.
        for i in 0..24u64 {
            cands.push(cand(&format!("low{i}"), "low", 0.29, &words(500 + i, 30)));
        }
        assert_eq!(cands.len(), 47);
        // Give every candidate a vector: distinct ones orthogonal-ish, reversed copies their
        // source's vector.
        let dims = 16;
        let vec_of = |i: usize| {
            let mut v = vec![0.0f32; dims];
            if let Some(x) = v.get_mut(i % dims) {
                *x = 1.0;
            }
            v
        };
        for (n, c) in cands.iter_mut().enumerate() {
            let key = if let Some(i) = c.chunk_id.strip_prefix("dup") {
                i.parse::<usize>().unwrap_or(0)
            } else if let Some(i) = c.chunk_id.strip_prefix('k') {
                i.parse::<usize>().unwrap_or(0)
            } else {
                12 + n % 4
            };
            c.vector = Some(vec_of(key));
        }
        let o = QueryOptions {
            top_n: 10,
            ..QueryOptions::default()
        };
        let out = run(cands, "how to configure authentication", &o);
        let s = &out.stats;
        assert_eq!(s.original_count, 47);
        assert_eq!(s.after_threshold, 23);
        assert_eq!(s.after_dedup, 12);
        assert_eq!(s.after_per_doc_limit, 8);
        assert_eq!(s.clusters_merged, 11);
        assert_eq!(s.removed_as_near_duplicate, 6);
        assert_eq!(s.removed_as_semantic_duplicate, 5);
        assert_eq!(s.returned, 8);
        adds_up(s);
        assert_eq!(out.query_kind, QueryKind::Conceptual);
    }

    #[test]
    fn disabling_compression_gives_the_plain_ranking() {
        let t = words(3, 40);
        let cands = vec![
            cand("a", "1", 0.0, &t),
            cand("b", "1", 0.1, &t),
            cand("c", "1", 1.0, &t),
            cand("d", "1", 0.2, &t),
        ];
        let o = QueryOptions {
            min_score: 0.0,
            ngram_threshold: 1.0,
            similarity_threshold: 1.0,
            max_chunks_per_doc: 0,
            top_n: 3,
            ..QueryOptions::default()
        };
        let out = run(cands, "why", &o);
        assert_eq!(ids(&out), ["a", "b", "c"]);
        assert!(out.results.iter().all(|r| r.content == t && !r.truncated));
    }

    #[test]
    fn empty_input_and_question_errors() {
        let out = run(Vec::new(), "anything", &QueryOptions::default());
        assert!(out.results.is_empty());
        assert_eq!(out.stats, QueryStats::default());
        for q in ["", "  \n"] {
            let e = compress_results(
                Vec::new(),
                q,
                &QueryOptions::default(),
                &Embedder::lexical(),
            )
            .err();
            assert_eq!(
                e.map(|e| (e.kind(), e.path().to_string())),
                Some((ErrorKind::InvalidInput, "question".into()))
            );
        }
        let bad = QueryOptions {
            top_n: 0,
            ..QueryOptions::default()
        };
        let e = compress_results(Vec::new(), "q", &bad, &Embedder::lexical()).err();
        assert_eq!(e.map(|e| e.path().to_string()), Some("options.topN".into()));
    }

    #[test]
    fn rust_built_candidates_are_checked() {
        let check = |c: Vec<Candidate>| {
            compress_results(c, "q", &QueryOptions::default(), &Embedder::lexical())
                .err()
                .map(|e| (e.kind(), e.path().to_string()))
        };
        assert_eq!(
            check(vec![
                cand("a", "1", 0.5, "x"),
                cand("b", "1", f32::NAN, "y")
            ]),
            Some((ErrorKind::InvalidInput, "candidates[1].score".into()))
        );
        assert_eq!(
            check(vec![cand("a", "1", 1.5, "x")]),
            Some((ErrorKind::InvalidInput, "candidates[0].score".into()))
        );
        assert_eq!(
            check(vec![with_vec(cand("a", "1", 0.5, "x"), &[f32::INFINITY])]),
            Some((ErrorKind::InvalidInput, "candidates[0].embedding".into()))
        );
        assert_eq!(
            check(vec![
                with_vec(cand("a", "1", 0.5, "x"), &[1.0, 0.0]),
                with_vec(cand("b", "1", 0.5, "x"), &[1.0]),
            ]),
            Some((ErrorKind::InvalidInput, "candidates[1].embedding".into()))
        );
        assert_eq!(
            check(vec![with_vec(cand("a", "1", 0.5, "x"), &[])]),
            Some((ErrorKind::InvalidInput, "candidates[0].embedding".into()))
        );
    }

    // --- the JSON form of candidates

    fn json_err(json: &str) -> Option<(ErrorKind, String)> {
        Candidate::list_from_json(json)
            .err()
            .map(|e| (e.kind(), e.path().to_string()))
    }

    #[test]
    fn candidates_read_both_spellings() {
        let list = Candidate::list_from_json(
            r#"[{"chunkId": "a#0", "docId": "a", "path": "docs/a.md",
                 "headerPath": ["H1", "H2"], "score": 1, "content": "x", "embedding": [1, 0]},
                {"id": "b#0", "docId": "b", "headerPath": "Components > IndexManager",
                 "score": 0, "text": "y", "embedding": [0.5, 0.5]},
                {"id": "c#0", "docId": "c", "path": null, "headerPath": null, "score": 0.25,
                 "text": "z", "embedding": null}]"#,
        );
        let list = match list {
            Ok(l) => l,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(list.len(), 3);
        let (a, b, c) = (&list[0], &list[1], &list[2]);
        assert_eq!(a.chunk_id, "a#0");
        assert_eq!(a.header_path, ["H1", "H2"]);
        assert_eq!(a.vector.as_deref(), Some(&[1.0f32, 0.0][..]));
        assert_eq!(b.chunk_id, "b#0");
        assert_eq!(b.content, "y");
        assert_eq!(b.header_path, ["Components", "IndexManager"]);
        assert_eq!(c.path, None);
        assert!(c.header_path.is_empty());
        assert_eq!(c.vector, None);
        assert_eq!(c.score, 0.25);
    }

    #[test]
    fn candidate_errors_name_the_field() {
        let ok = r#"{"id": "a", "docId": "d", "score": 0.5, "text": "x"}"#;
        let bad = |field: &str| format!("[{ok}, {ok}, {ok}, {field}]");
        let p = |s: &str| Some((ErrorKind::InvalidInput, s.to_string()));
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": 1.5, "text": "x"}"#
            )),
            p("candidates[3].score")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": "high", "text": "x"}"#
            )),
            p("candidates[3].score")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": -0.1, "text": "x"}"#
            )),
            p("candidates[3].score")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": 7, "score": 0.5, "text": "x"}"#
            )),
            p("candidates[3].docId")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": 0.5, "text": "x", "headerPath": ["a", 2]}"#
            )),
            p("candidates[3].headerPath[1]")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": 0.5, "text": "x", "embedding": [1, "x"]}"#
            )),
            p("candidates[3].embedding[1]")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": 0.5, "text": "x", "embedding": [1e300]}"#
            )),
            p("candidates[3].embedding")
        );
        // Missing fields are reported at the candidate.
        assert_eq!(
            json_err(&bad(r#"{"id": "a", "docId": "d", "text": "x"}"#)),
            p("candidates[3]")
        );
        assert_eq!(
            json_err(&bad(r#"{"id": "a", "docId": "d", "score": 0.5}"#)),
            p("candidates[3]")
        );
        assert_eq!(
            json_err(&bad(
                r#"{"id": "a", "docId": "d", "score": 0.5, "text": "x", "extra": 1}"#
            )),
            p("candidates[3].extra")
        );
        assert_eq!(json_err(r#"{"id": "a"}"#), p("candidates"));
        assert_eq!(json_err("[").map(|(k, _)| k), Some(ErrorKind::InvalidJson));
        // Embeddings of different lengths.
        assert_eq!(
            json_err(
                r#"[{"id": "a", "docId": "d", "score": 0.5, "text": "x", "embedding": [1, 0]},
                    {"id": "b", "docId": "d", "score": 0.5, "text": "x", "embedding": [1]}]"#
            ),
            p("candidates[1].embedding")
        );
    }

    #[test]
    fn value_entry_point() {
        let cands = serde_json::json!([{"id": "a", "docId": "d", "score": 0.9, "text": "x y z"}]);
        let out = compress_results_value(
            &cands,
            "q",
            &serde_json::json!({"format": "json"}),
            &Embedder::lexical(),
        );
        let out = match out {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            out.text,
            r#"[{"chunkId":"a","docId":"d","path":null,"headerPath":[],"score":0.9,"content":"x y z","truncated":false}]"#
        );
        let e = compress_results_value(
            &cands,
            "q",
            &serde_json::json!({"format": "xml"}),
            &Embedder::lexical(),
        )
        .err();
        assert_eq!(
            e.map(|e| e.path().to_string()),
            Some("options.format".into())
        );
        let o = QueryOptions {
            format: ResultFormat::Json,
            ..QueryOptions::default()
        };
        assert_eq!(o.format, ResultFormat::Json);
    }

    #[test]
    fn output_serialises_in_camel_case() {
        let out = run(
            vec![cand("a", "1", 0.9, "hello world")],
            "q",
            &QueryOptions::default(),
        );
        let v = serde_json::to_value(&out).unwrap_or_default();
        assert_eq!(v["queryKind"], "factual");
        assert_eq!(v["results"][0]["chunkId"], "a");
        assert_eq!(v["stats"]["removedByTopN"], 0);
        assert_eq!(v["stats"]["clustersMerged"], 0);
        assert_eq!(v["stats"]["afterDedup"], 1);
    }
}
