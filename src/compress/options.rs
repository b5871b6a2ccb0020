//! Options of `compress`: one struct shared by Rust, wasm and the CLI.

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::counter::TokenCounterKind;
use super::method::{CompressMethod, Summaries};
use crate::error::{read_json, read_value, Error, ErrorKind};
use crate::message::Format;

/// Options of `compress`. JSON keys are camelCase; unknown keys are refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompressOptions {
    /// Roles whose messages are never compressed. Default `["system"]` (also `developer`).
    pub preserve_roles: Vec<String>,
    /// The last N messages are kept verbatim. Default 4.
    pub recency_window: usize,
    /// Content shorter than this many characters is kept. Default 120.
    pub min_chars: usize,
    /// Replace exact duplicates (the same text twice) by a reference to the newest copy.
    /// Default true.
    pub dedup: bool,
    /// Also replace near-duplicates (line Jaccard ≥ `fuzzyThreshold`). Default false.
    pub fuzzy_dedup: bool,
    /// Similarity from which two texts are near-duplicates (0–1). Default 0.85.
    pub fuzzy_threshold: f64,
    /// Regular expressions: content matching any is kept verbatim. Default none.
    pub preserve_patterns: Vec<String>,
    /// Relevance target: sentences and entries related to it are kept first. Default none.
    pub query: Option<String>,
    /// Code fences are kept verbatim (prose around them may be summarised). Default true.
    pub preserve_code: bool,
    /// Keep every number of tool output even where a lossy rendering is allowed (under a token
    /// budget, or with `lossyToolOutput`): long numeric arrays are otherwise summarised there by
    /// count, range, first and last values. The default pass keeps them all anyway. Default
    /// false.
    pub preserve_numbers: bool,
    /// Let the default pass summarise tool output lossily: arrays of 24+ numbers by count,
    /// range, first and last values (unless `preserveNumbers`), strings of 200+ characters in
    /// JSON as prose, line-structured output (grep, test, logs) by its status lines and paths,
    /// plain output as prose with up to 24 of its key tokens. By default (false) tool output
    /// keeps every value: JSON and Python literals are rendered without their syntax only,
    /// plain output keeps every key token, line-structured output stays as it is. A token
    /// budget may summarise lossily either way.
    pub lossy_tool_output: bool,
    /// A token budget the result must meet (tokens of the messages' text in the call's
    /// counter: the estimate of `text::tokens` unless `tokenCounter` or a caller's counter
    /// says otherwise): the pipeline escalates until it fits or nothing compressible is left,
    /// and `stats.fits` tells which. The budget is used, not just met: every compressible
    /// text gets the same, largest share of its size that fits (key tokens first listed within
    /// it), also when the default pass alone would fit with room to spare. The last steps
    /// condense old tool-call arguments to `{"_condensed":"[call#id]"}` and fold the oldest
    /// messages into one `user` summary message (both undone by `uncompress`). Default none.
    pub token_budget: Option<usize>,
    /// A budget as a fraction of the input's tokens (0.25: a quarter), used when `tokenBudget`
    /// is not given. Default none.
    pub target_ratio: Option<f64>,
    /// Conversations of at most this many tokens are returned unchanged. Default 0.
    pub min_tokens: usize,
    /// Importance scoring: messages whose importance score (0–1: key tokens reused
    /// later, decision and constraint language, key-token density; see `compress::importance`)
    /// reaches `importanceThreshold` are kept verbatim. Applies to the default pass; a token
    /// budget the default pass does not meet may still summarise them. Default false.
    pub importance_scoring: bool,
    /// The score from which a message is important (0–1). Default 0.65.
    pub importance_threshold: f64,
    /// Contradiction detection: an earlier message that a later message of the same
    /// role corrects ("actually, use port 8080 not 8000", "correction: …", "scratch that") is
    /// replaced by `[summary#id: superseded by <message> (<signal>) — <summary>]`. Default false.
    pub contradiction_detection: bool,
    /// Direct quotes (`"…"`, `“…”`, `> …` lines) are kept verbatim in summaries.
    /// Default false.
    pub preserve_quotes: bool,
    /// The lowest confidence a summary may have to replace its original ("minimum
    /// compression quality", 0–1): the confidence of a summary is the
    /// share of the original's key tokens (identifiers, numbers, paths, URLs, code spans) it
    /// still contains (1 without key tokens). Summaries below it are not used: the original
    /// stays. Duplicate references (lossless) and the budget's truncation and folding are not
    /// judged. Default 0 (every summary qualifies).
    pub min_confidence: f64,
    /// Return one decision record per message with its reason. Default false.
    pub trace: bool,
    /// Force a provider's shape instead of detecting it.
    pub format: Option<Format>,
    /// Which tokens budgets, `minTokens` and stats count: `estimate` (the fast estimator,
    /// fitted to o200k and erring high) or `model` (the embedder's tokenizer, exact in it;
    /// needs an embedder with a tokenizer). A caller's counter (JS `countTokens`,
    /// [`super::TokenCounter`]) takes precedence over both. Default `estimate`.
    pub token_counter: TokenCounterKind,
    /// How texts are summarised: `extractive`, `abstractive`, `hybrid` or `hierarchical`
    /// (see [`super::method`]). Default `extractive`.
    pub method: CompressMethod,
    /// Summaries from a summariser, by request id (phase 2 of the `abstractive` / `hybrid`
    /// protocol, see [`super::method`]): each used in place of the deterministic summary when
    /// non-empty and shorter than the original. Default none.
    pub summaries: Option<Summaries>,
    /// Prefix-stable mode: re-compressing the same conversation grown by new messages leaves
    /// every message of the earlier result's frozen prefix byte-identical (provider prompt
    /// caches keep hitting). The messages before the recency window are compressed in fixed
    /// blocks of [`PREFIX_BLOCK`] messages from the start, each block on its own (dedup,
    /// merges and JSON references stay inside it); a block is compressed once all its
    /// messages are older than the recency window, and never changes after; the messages
    /// after the last full block are kept verbatim. `stats.prefixMessages` is the frozen
    /// prefix's length in output messages. Under a budget the stable output is used while it
    /// fits; when it does not, the conversation is compressed as a whole (`stats.prefixStable:
    /// false` and a warning). Default false.
    pub prefix_stable: bool,
    /// The most entries the incremental cache keeps (the least recently used are evicted).
    /// Default 10,000; at most [`MAX_CACHE_ENTRIES`](super::cache::MAX_CACHE_ENTRIES).
    pub cache_limit: usize,
}

/// How many messages a prefix-stable block holds (see [`CompressOptions::prefix_stable`]).
pub const PREFIX_BLOCK: usize = 4;

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            preserve_roles: vec!["system".into(), "developer".into()],
            recency_window: 4,
            min_chars: 120,
            dedup: true,
            fuzzy_dedup: false,
            fuzzy_threshold: 0.85,
            preserve_patterns: Vec::new(),
            query: None,
            preserve_code: true,
            preserve_numbers: false,
            lossy_tool_output: false,
            token_budget: None,
            target_ratio: None,
            min_tokens: 0,
            importance_scoring: false,
            importance_threshold: 0.65,
            contradiction_detection: false,
            preserve_quotes: false,
            min_confidence: 0.0,
            trace: false,
            format: None,
            token_counter: TokenCounterKind::Estimate,
            method: CompressMethod::Extractive,
            summaries: None,
            prefix_stable: false,
            cache_limit: super::cache::DEFAULT_CACHE_LIMIT,
        }
    }
}

impl CompressOptions {
    /// Reads options from JSON text; errors name the field (`options.recencyWindow`).
    pub fn from_json(json: &str) -> Result<CompressOptions, Error> {
        let o: CompressOptions = read_json(json, ErrorKind::InvalidOptions, "options")?;
        o.check()?;
        Ok(o)
    }

    /// Reads options from a JSON value (`null` is the defaults).
    pub fn from_value(value: &serde_json::Value) -> Result<CompressOptions, Error> {
        if value.is_null() {
            return Ok(CompressOptions::default());
        }
        let o: CompressOptions = read_value(value, ErrorKind::InvalidOptions, "options")?;
        o.check()?;
        Ok(o)
    }

    fn check(&self) -> Result<(), Error> {
        if let Some(r) = self.target_ratio {
            if !(r > 0.0 && r <= 1.0) {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    "options.targetRatio",
                    "must be greater than 0 and at most 1",
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.fuzzy_threshold) {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "options.fuzzyThreshold",
                "must be between 0 and 1",
            ));
        }
        for (value, path) in [
            (self.importance_threshold, "options.importanceThreshold"),
            (self.min_confidence, "options.minConfidence"),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    path,
                    "must be between 0 and 1",
                ));
            }
        }
        if self.cache_limit > super::cache::MAX_CACHE_ENTRIES {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "options.cacheLimit",
                format!(
                    "must be at most {} (a cache's largest size)",
                    super::cache::MAX_CACHE_ENTRIES
                ),
            ));
        }
        self.patterns().map(|_| ())
    }

    /// Compiles `preservePatterns`.
    pub(crate) fn patterns(&self) -> Result<Vec<Regex>, Error> {
        self.preserve_patterns
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Regex::new(p).map_err(|e| {
                    Error::new(
                        ErrorKind::InvalidOptions,
                        format!("options.preservePatterns[{i}]"),
                        format!("invalid regular expression: {e}"),
                    )
                })
            })
            .collect()
    }
}
