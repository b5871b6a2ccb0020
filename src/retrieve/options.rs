//! Options of `query` and `compressResults`: one struct shared by Rust, wasm and the CLI.
//!
//! The result-compression stages run in this order, each with its option and default
//! (docs/design.md, "Result compression"):
//!
//! | stage | option | default | off |
//! |---|---|---|---|
//! | score filter | `minScore` | 0.3 | 0 |
//! | n-gram near-duplicates | `ngramThreshold`, `ngramSize` | 0.7, 3 | 1 |
//! | semantic dedup | `similarityThreshold` | 0.85 | 1 |
//! | per-document limit | `maxChunksPerDoc` | 2 | 0 |
//! | result count | `topN` | 5 | – |
//! | factual truncation | `truncate`, `truncateChars` | true, 200 | `false` |
//!
//! **Thresholds of 1.0 switch their stage off.** A dedup threshold of exactly `1.0`
//! removes nothing, not even identical texts: cosine similarity of two identical vectors is
//! 1 only up to float rounding, so "≥ 1.0" would depend on rounding; and the design notes this
//! follows document `similarity_threshold: 1.0` as the way to disable dedup. Hence
//! `{minScore: 0, ngramThreshold: 1, similarityThreshold: 1, maxChunksPerDoc: 0}` gives the
//! plain ranking (its first `topN` candidates, in order).
//!
//! The retrieval-side fields (`lexicalWeight`, `denseWeight`, `fusion`, `rrfK`, `feedback`,
//! `feedbackTerms`, `candidates`) are read
//! and validated here and used by `query`'s fusion; `compressResults` ignores them.
//!
//! ```
//! use condense::retrieve::options::{QueryOptions, ResultFormat};
//! let o = QueryOptions::from_json(r#"{"topN": 3, "format": "verbose"}"#)?;
//! assert_eq!(o.top_n, 3);
//! assert_eq!(o.format, ResultFormat::Verbose);
//! assert_eq!(o.min_score, 0.3);
//! let err = QueryOptions::from_json(r#"{"topN": 0}"#).unwrap_err();
//! assert_eq!(err.path(), "options.topN");
//! # Ok::<(), condense::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::classify::QueryKind;
use crate::error::{read_json, read_value, Error, ErrorKind};

/// How [`QueryResult::text`](super::results::QueryResult::text) is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultFormat {
    /// `[1] docs/auth.md § Configuration > Authentication (0.92)` then the content.
    #[default]
    Compact,
    /// Every field: rank, ids, path, headers, score to 4 decimals, truncation flag, content.
    Verbose,
    /// The results array as JSON text.
    Json,
}

/// How `query` combines its lexical and dense candidate lists
/// ([`fuse`](super::fuse), where both are described and measured).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FusionMethod {
    /// Each side's scores normalised by its own list for this query, then a weighted sum
    /// (the lexical side a quarter, before `lexicalWeight` and `denseWeight`). The default.
    #[default]
    Convex,
    /// Reciprocal Rank Fusion with constant `rrfK` (ranks only).
    Rrf,
}

/// Options of `query` and `compressResults` (see the [module docs](self) for the stage order).
/// JSON keys are camelCase; unknown keys are refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct QueryOptions {
    /// Candidates scoring below this (0–1) are dropped. Default 0.3; 0 keeps all.
    pub min_score: f64,
    /// Jaccard similarity of word shingles from which a later result is a near-duplicate of an
    /// earlier kept one (0–1). Default 0.7; 1 switches the stage off.
    pub ngram_threshold: f64,
    /// Words per shingle of the n-gram stage (1–8). Default 3.
    pub ngram_size: usize,
    /// Cosine similarity from which two results belong to one cluster, which keeps its best
    /// (0–1). Default 0.85; 1 switches the stage off.
    pub similarity_threshold: f64,
    /// At most this many results per document. Default 2; 0 means no limit.
    pub max_chunks_per_doc: usize,
    /// At most this many results (1–100). Default 5.
    pub top_n: usize,
    /// Truncate the results of factual queries. Default true.
    pub truncate: bool,
    /// Characters a truncated result keeps at most (before the `...`), cut at a word boundary
    /// (at least 20). Default 200.
    pub truncate_chars: usize,
    /// Layout of the `text` output. Default `compact`.
    pub format: ResultFormat,
    /// `query` only: weight of the BM25 list in the fusion (≥ 0). Default 1.
    pub lexical_weight: f64,
    /// `query` only: weight of the embedding list in the fusion (≥ 0). Default (`None`): 1 for
    /// a model embedder (MiniLM), 0 for the lexical embedder, whose hashed n-gram vectors only
    /// repeat what BM25 already knows (fused with weight 0.1–0.5 they lowered nDCG@10 on MED by
    /// .008–.035; docs/benchmarks.md, "query"). `null` in JSON means the default.
    pub dense_weight: Option<f64>,
    /// `query` only: how the lexical and dense lists are combined, `"convex"` (normalised
    /// scores, weighted: the default) or `"rrf"` (Reciprocal Rank Fusion).
    pub fusion: FusionMethod,
    /// `query` only: the Reciprocal Rank Fusion constant k (≥ 1), used with `fusion: "rrf"`.
    /// Default 60.
    pub rrf_k: f64,
    /// `query` only: pseudo-relevance feedback on the lexical side (RM3-style): the words of
    /// the first fusion's top chunks make an expanded BM25 query whose list is fused as a
    /// third list ([`feedback`](super::feedback)). Default true; applies to `fusion:
    /// "convex"` with a lexical weight above 0 (`"rrf"` ignores it).
    pub feedback: bool,
    /// `query` only: how many expansion terms feedback adds (1–100). Default 10.
    pub feedback_terms: usize,
    /// `query` only: how many hits of each list are fused (1–10000). Default 1000 (fusing
    /// deeper lists raised nDCG@10 and R@100 on the dev IR sets; the fused list handed to result
    /// compression is cut at [`compression_pool`](super::index::compression_pool)`(topN)`).
    pub candidates: usize,
    /// Overrides the query classification (`"factual"` or `"conceptual"`). Default: classify
    /// the question (the rules of [`classify`](super::classify::classify)).
    pub query_kind: Option<QueryKind>,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            min_score: 0.3,
            ngram_threshold: 0.7,
            ngram_size: 3,
            similarity_threshold: 0.85,
            max_chunks_per_doc: 2,
            top_n: 5,
            truncate: true,
            truncate_chars: 200,
            format: ResultFormat::Compact,
            lexical_weight: 1.0,
            dense_weight: None,
            fusion: FusionMethod::Convex,
            rrf_k: 60.0,
            feedback: true,
            feedback_terms: super::feedback::DEFAULT_FEEDBACK_TERMS,
            candidates: 1000,
            query_kind: None,
        }
    }
}

fn invalid(field: &str, reason: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOptions,
        format!("options.{field}"),
        reason,
    )
}

fn unit(value: f64, field: &str) -> Result<(), Error> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(invalid(field, "must be between 0 and 1"))
    }
}

impl QueryOptions {
    /// Reads options from JSON text and validates them; errors name the field
    /// (`options.topN`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidJson`] for malformed JSON, [`ErrorKind::InvalidOptions`] for an
    /// unknown key, a wrong type or a value out of range.
    pub fn from_json(json: &str) -> Result<QueryOptions, Error> {
        let o: QueryOptions = read_json(json, ErrorKind::InvalidOptions, "options")?;
        o.validate()?;
        Ok(o)
    }

    /// Reads options from a JSON value (`null` is the defaults) and validates them.
    ///
    /// # Errors
    /// As [`from_json`](QueryOptions::from_json).
    pub fn from_value(value: &serde_json::Value) -> Result<QueryOptions, Error> {
        if value.is_null() {
            return Ok(QueryOptions::default());
        }
        let o: QueryOptions = read_value(value, ErrorKind::InvalidOptions, "options")?;
        o.validate()?;
        Ok(o)
    }

    /// Checks every range; the error's path names the field (`options.truncateChars`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] for the first field out of range (NaN is out of every
    /// range).
    pub fn validate(&self) -> Result<(), Error> {
        unit(self.min_score, "minScore")?;
        unit(self.ngram_threshold, "ngramThreshold")?;
        if !(1..=8).contains(&self.ngram_size) {
            return Err(invalid("ngramSize", "must be between 1 and 8"));
        }
        unit(self.similarity_threshold, "similarityThreshold")?;
        if !(1..=100).contains(&self.top_n) {
            return Err(invalid("topN", "must be between 1 and 100"));
        }
        if self.truncate_chars < 20 {
            return Err(invalid("truncateChars", "must be at least 20"));
        }
        for (value, field) in [
            (self.lexical_weight, "lexicalWeight"),
            (self.dense_weight.unwrap_or(0.0), "denseWeight"),
        ] {
            if !(value >= 0.0 && value.is_finite()) {
                return Err(invalid(field, "must be a finite number of at least 0"));
            }
        }
        if !(self.rrf_k >= 1.0 && self.rrf_k.is_finite()) {
            return Err(invalid("rrfK", "must be a finite number of at least 1"));
        }
        if !(1..=100).contains(&self.feedback_terms) {
            return Err(invalid("feedbackTerms", "must be between 1 and 100"));
        }
        if !(1..=10_000).contains(&self.candidates) {
            return Err(invalid("candidates", "must be between 1 and 10000"));
        }
        Ok(())
    }

    /// True when the n-gram stage runs (`ngramThreshold` below 1).
    pub fn ngram_dedup_enabled(&self) -> bool {
        self.ngram_threshold < 1.0
    }

    /// True when the semantic stage runs (`similarityThreshold` below 1).
    pub fn semantic_dedup_enabled(&self) -> bool {
        self.similarity_threshold < 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(json: &str) -> String {
        match QueryOptions::from_json(json) {
            Ok(_) => String::new(),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::InvalidOptions, "{e}");
                e.path().to_string()
            }
        }
    }

    #[test]
    fn defaults_are_the_seed_defaults() {
        let o = QueryOptions::default();
        assert_eq!(o.min_score, 0.3);
        assert_eq!(o.ngram_threshold, 0.7);
        assert_eq!(o.ngram_size, 3);
        assert_eq!(o.similarity_threshold, 0.85);
        assert_eq!(o.max_chunks_per_doc, 2);
        assert_eq!(o.top_n, 5);
        assert!(o.truncate);
        assert_eq!(o.truncate_chars, 200);
        assert_eq!(o.format, ResultFormat::Compact);
        assert_eq!(o.rrf_k, 60.0);
        assert_eq!(o.candidates, 1000);
        assert!(o.feedback);
        assert_eq!(o.feedback_terms, 10);
        assert_eq!(o.query_kind, None);
        assert!(o.validate().is_ok());
        assert_eq!(QueryOptions::from_json("{}").ok(), Some(o.clone()));
        assert_eq!(
            QueryOptions::from_value(&serde_json::Value::Null).ok(),
            Some(o)
        );
    }

    #[test]
    fn reads_every_field_in_camel_case() {
        let o = QueryOptions::from_json(
            r#"{"minScore": 0, "ngramThreshold": 1, "ngramSize": 2, "similarityThreshold": 1.0,
                "maxChunksPerDoc": 0, "topN": 100, "truncate": false, "truncateChars": 20,
                "format": "json", "lexicalWeight": 0, "denseWeight": 2.5, "rrfK": 1,
                "feedback": false, "feedbackTerms": 100, "candidates": 10000, "queryKind": "conceptual"}"#,
        );
        let o = match o {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(o.format, ResultFormat::Json);
        assert_eq!(o.query_kind, Some(QueryKind::Conceptual));
        assert!(!o.ngram_dedup_enabled());
        assert!(!o.semantic_dedup_enabled());
        assert_eq!(o.ngram_size, 2);
        assert!(!o.feedback);
        assert_eq!(o.feedback_terms, 100);
    }

    #[test]
    fn out_of_range_values_name_their_field() {
        assert_eq!(path_of(r#"{"minScore": 1.5}"#), "options.minScore");
        assert_eq!(path_of(r#"{"minScore": -0.1}"#), "options.minScore");
        assert_eq!(
            path_of(r#"{"ngramThreshold": 2}"#),
            "options.ngramThreshold"
        );
        assert_eq!(path_of(r#"{"ngramSize": 0}"#), "options.ngramSize");
        assert_eq!(path_of(r#"{"ngramSize": 9}"#), "options.ngramSize");
        assert_eq!(
            path_of(r#"{"similarityThreshold": 1.01}"#),
            "options.similarityThreshold"
        );
        assert_eq!(path_of(r#"{"topN": 0}"#), "options.topN");
        assert_eq!(path_of(r#"{"topN": 101}"#), "options.topN");
        assert_eq!(path_of(r#"{"truncateChars": 19}"#), "options.truncateChars");
        assert_eq!(path_of(r#"{"lexicalWeight": -1}"#), "options.lexicalWeight");
        assert_eq!(path_of(r#"{"denseWeight": -1}"#), "options.denseWeight");
        assert_eq!(path_of(r#"{"rrfK": 0.5}"#), "options.rrfK");
        assert_eq!(path_of(r#"{"feedbackTerms": 0}"#), "options.feedbackTerms");
        assert_eq!(
            path_of(r#"{"feedbackTerms": 101}"#),
            "options.feedbackTerms"
        );
        assert_eq!(path_of(r#"{"feedback": "yes"}"#), "options.feedback");
        assert_eq!(path_of(r#"{"candidates": 0}"#), "options.candidates");
        assert_eq!(path_of(r#"{"candidates": 10001}"#), "options.candidates");
    }

    #[test]
    fn wrong_types_and_unknown_keys_name_their_field() {
        assert_eq!(path_of(r#"{"topN": "5"}"#), "options.topN");
        assert_eq!(
            path_of(r#"{"maxChunksPerDoc": -1}"#),
            "options.maxChunksPerDoc"
        );
        assert_eq!(path_of(r#"{"format": "markdown"}"#), "options.format");
        assert_eq!(path_of(r#"{"queryKind": "vague"}"#), "options.queryKind");
        let e = QueryOptions::from_json(r#"{"top_n": 5}"#).err();
        assert_eq!(e.map(|e| e.kind()), Some(ErrorKind::InvalidOptions));
    }

    #[test]
    fn nan_is_out_of_range_for_rust_callers() {
        let o = QueryOptions {
            min_score: f64::NAN,
            ..QueryOptions::default()
        };
        assert_eq!(
            o.validate().err().map(|e| e.path().to_string()),
            Some("options.minScore".into())
        );
        let o = QueryOptions {
            rrf_k: f64::INFINITY,
            ..QueryOptions::default()
        };
        assert_eq!(
            o.validate().err().map(|e| e.path().to_string()),
            Some("options.rrfK".into())
        );
    }
}
