//! Stage 7, relevance: the call's query (`options.query`) — its terms, and with an embedder
//! the cosine of the query with every sentence — and each message's relevance to it.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::options::CompressOptions;
use super::parse::{content_texts, message_text};
use super::summarize::{self, Query};
use crate::embed::Embedder;
use crate::error::Error;
use crate::text::sentences;

/// The query of a call: its terms, and with an embedder the cosine of the query with every
/// unique sentence of the messages' texts (string contents, text blocks, string tool results),
/// embedded in one batch.
///
/// # Errors
/// An embedder failure.
pub(super) fn build_query(
    values: &[Value],
    options: &CompressOptions,
    embedder: Option<&Embedder>,
) -> Result<Query, Error> {
    let mut query = summarize::query_terms(options.query.as_deref());
    let (Some(q), Some(embedder)) = (options.query.as_deref(), embedder) else {
        return Ok(query);
    };
    query.cosine_source = format!(
        "{q}\u{0}{}",
        serde_json::to_string(embedder.identity()).unwrap_or_default()
    );
    let mut unique: BTreeSet<String> = BTreeSet::new();
    for value in values {
        for t in content_texts(value) {
            for s in sentences::split(t) {
                unique.insert(t[s.span].trim().to_string());
            }
        }
    }
    let sentences: Vec<String> = unique.into_iter().collect();
    let mut batch: Vec<&str> = Vec::with_capacity(sentences.len() + 1);
    batch.push(q);
    batch.extend(sentences.iter().map(String::as_str));
    let vectors = embedder.embed(&batch)?;
    let Some((qv, rest)) = vectors.split_first() else {
        return Ok(query);
    };
    query.cosines = sentences
        .into_iter()
        .zip(rest)
        .map(|(s, v)| (s, crate::embed::cosine(qv, v)))
        .collect();
    Ok(query)
}

/// Each message's relevance to the query, for the order in which a fold lists the key tokens
/// of the messages it replaces (the most relevant first): the share of the query's terms the
/// message's text contains (tool calls included), plus, with an embedder, the largest cosine
/// of one of its sentences with the query. All 0 without a query.
pub(super) fn message_relevance(values: &[Value], terms: &Query) -> Vec<f64> {
    values
        .iter()
        .map(|v| {
            let share = if terms.is_empty() {
                0.0
            } else {
                let text = message_text(v).to_lowercase();
                let found: HashSet<&str> = text
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .filter(|w| terms.contains(w))
                    .collect();
                found.len() as f64 / terms.terms.len() as f64
            };
            let cosine = if terms.cosines.is_empty() {
                0.0
            } else {
                content_texts(v)
                    .into_iter()
                    .flat_map(|t| {
                        sentences::split(t)
                            .into_iter()
                            .filter_map(|s| terms.cosines.get(t[s.span].trim()).copied())
                    })
                    .fold(0.0f64, |best, c| best.max(f64::from(c)))
            };
            share + cosine
        })
        .collect()
}
