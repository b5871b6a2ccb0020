//! `prepareContext` (docs/design.md, "The compress pipeline"): a token budget shared across
//! chunks of context by relevance, each chunk compressed to its share.
//!
//! 1. **Relevance** of each chunk to `query`, in [0, 1]: BM25 over the chunks (the retrieval
//!    analyser: stemmed, stop words out), divided by the best chunk's score; with an
//!    [`Embedder`], the cosine of the query's vector with the chunk's (negative cosines are 0).
//!    Without a query every chunk has relevance 1.
//! 2. **Allocation**: when everything fits (chunks and separators), every chunk is kept whole.
//!    Otherwise chunk `i` keeps the fraction `min(1, λ·wᵢ)` of its tokens, with weight
//!    `wᵢ = 0.25 + 0.75·relevanceᵢ` (an irrelevant chunk still keeps a quarter of what the most
//!    relevant keeps, proportionally) and `λ` the largest value whose shares fit the budget left
//!    by the separators (water-filling: a chunk that is kept whole frees budget for the rest).
//! 3. **Graceful degradation**: a chunk whose share would be under [`MIN_SHARE`] tokens (or
//!    its whole size, if smaller) is dropped whole, least relevant first (ties: the later
//!    chunk), and the budget shared again among the others.
//! 4. **Compression**: each chunk to its share with the extractive summariser (`compress`'s
//!    sentence scorer, query-aware by term overlap; code fences kept when they fit), shrunk
//!    until its estimated tokens are within the share.
//! 5. **Assembly**: the kept chunks in input order joined by `separator`. The assembled text's
//!    estimated tokens are measured; if they exceed the budget (the estimate is not exactly
//!    additive over joins), the shares are reduced and steps 2–5 repeated, then chunks dropped.
//!    `stats.fits` is measured on the final text, so it tells the truth.
//!
//! Deterministic: the same chunks, options and embedder give the same bytes on every host.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::summarize::{self, Level, Query};
use crate::embed::{cosine, Embedder};
use crate::error::{read_json, read_value, Error, ErrorKind};
use crate::retrieve::analyze::{Analyzer, TermCache};
use crate::retrieve::bm25::{Bm25, Bm25Params};
use crate::text::{estimate_tokens, fences};

/// A kept chunk's share is at least this many tokens (or its whole size); below, it is dropped.
pub const MIN_SHARE: usize = 16;

/// Options of `prepareContext`. JSON keys are camelCase; unknown keys are refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PrepareContextOptions {
    /// What the context is for: chunks relevant to it get larger shares. Default none (every
    /// chunk equally relevant).
    pub query: Option<String>,
    /// The budget of the assembled text in estimated tokens (`text::tokens`). Required.
    pub token_budget: Option<usize>,
    /// Put between chunks (counted in the budget). Default `"\n\n"`.
    pub separator: String,
}

impl Default for PrepareContextOptions {
    fn default() -> Self {
        PrepareContextOptions {
            query: None,
            token_budget: None,
            separator: "\n\n".into(),
        }
    }
}

impl PrepareContextOptions {
    /// Reads options from JSON text; errors name the field (`options.tokenBudget`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] for unknown keys, wrong types or a missing `tokenBudget`.
    pub fn from_json(json: &str) -> Result<PrepareContextOptions, Error> {
        let o: PrepareContextOptions = read_json(json, ErrorKind::InvalidOptions, "options")?;
        o.check()?;
        Ok(o)
    }

    /// Reads options from a JSON value.
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_value(value: &Value) -> Result<PrepareContextOptions, Error> {
        let o: PrepareContextOptions = if value.is_null() {
            PrepareContextOptions::default()
        } else {
            read_value(value, ErrorKind::InvalidOptions, "options")?
        };
        o.check()?;
        Ok(o)
    }

    fn check(&self) -> Result<(), Error> {
        if self.token_budget.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "options.tokenBudget",
                "required: the budget of the assembled text in tokens",
            ));
        }
        Ok(())
    }
}

/// What happened to one chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkReport {
    /// The chunk's `id` (its index as text when it had none).
    pub id: String,
    /// Relevance to the query in [0, 1] (1 without a query).
    pub relevance: f64,
    /// Tokens allocated to it (0 when dropped).
    pub share: usize,
    /// Its estimated tokens.
    pub tokens_before: usize,
    /// Estimated tokens of what went into the text (0 when dropped).
    pub tokens_after: usize,
    /// Whether it was compressed (false: kept whole, or dropped).
    pub compressed: bool,
    /// Whether it was left out (the budget could not give it a useful share).
    pub dropped: bool,
}

/// Totals of a `prepareContext` call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrepareContextStats {
    /// Estimated tokens of all chunks joined by the separator.
    pub tokens_before: usize,
    /// Estimated tokens of the assembled text.
    pub tokens_after: usize,
    /// The budget.
    pub budget: usize,
    /// `tokensAfter ≤ budget` (measured on the text).
    pub fits: bool,
    /// Chunks compressed.
    pub compressed: usize,
    /// Chunks dropped.
    pub dropped: usize,
}

/// The result of [`prepare_context`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrepareContextResult {
    /// The assembled context.
    pub text: String,
    /// One report per input chunk, in input order.
    pub chunks: Vec<ChunkReport>,
    /// Totals.
    pub stats: PrepareContextStats,
}

struct Chunk {
    id: String,
    text: String,
}

/// Reads chunks: an array of strings or of `{id?, text, …}` objects (other fields ignored).
fn read_chunks(chunks: &Value) -> Result<Vec<Chunk>, Error> {
    let Value::Array(items) = chunks else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "chunks",
            "expected an array of chunks (strings or {id, text} objects)",
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(Chunk {
                id: i.to_string(),
                text: s.clone(),
            }),
            Value::Object(o) => {
                let text = match o.get("text") {
                    Some(Value::String(s)) => s.clone(),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidInput,
                            format!("chunks[{i}].text"),
                            "expected a string",
                        ))
                    }
                };
                let id = match o.get("id") {
                    None | Some(Value::Null) => i.to_string(),
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    Some(_) => {
                        return Err(Error::new(
                            ErrorKind::InvalidInput,
                            format!("chunks[{i}].id"),
                            "expected a string or a number",
                        ))
                    }
                };
                Ok(Chunk { id, text })
            }
            _ => Err(Error::new(
                ErrorKind::InvalidInput,
                format!("chunks[{i}]"),
                "expected a string or an object with `text`",
            )),
        })
        .collect()
}

/// Shares a token budget across chunks by relevance and compresses each to its share (see the
/// module docs). `chunks`: an array of strings or `{id?, text}` objects.
///
/// ```
/// use condense::compress::prepare::{prepare_context, PrepareContextOptions};
/// let chunks = serde_json::json!([
///     {"id": "auth", "text": "Tokens are rotated every 24 hours by the auth_rotator job. \
///         The rotation window is configurable with ROTATE_HOURS. Old tokens stay valid for \
///         ten minutes. Clients must refresh before expiry or get HTTP 401."},
///     {"id": "css", "text": "The buttons use the brand palette. Primary buttons are blue, \
///         secondary ones grey. Hover states darken by ten percent. Focus rings are two \
///         pixels wide and always visible for keyboard users."}
/// ]);
/// let options = PrepareContextOptions { query: Some("token rotation".into()), token_budget: Some(60),
///     ..PrepareContextOptions::default() };
/// let out = prepare_context(&chunks, &options, None)?;
/// assert!(out.stats.fits && out.stats.tokens_after <= 60);
/// assert!(out.chunks[0].relevance > out.chunks[1].relevance);
/// assert!(out.chunks[0].share > out.chunks[1].share);
/// # Ok::<(), condense::Error>(())
/// ```
///
/// # Errors
/// [`ErrorKind::InvalidInput`] for chunks of the wrong shape (with their path),
/// [`ErrorKind::InvalidOptions`] without `tokenBudget`; an embedder failure is `internal`.
pub fn prepare_context(
    chunks: &Value,
    options: &PrepareContextOptions,
    embedder: Option<&Embedder>,
) -> Result<PrepareContextResult, Error> {
    options.check()?;
    let budget = options.token_budget.unwrap_or(0);
    let chunks = read_chunks(chunks)?;
    let relevance = relevance(&chunks, options.query.as_deref(), embedder)?;
    let terms = summarize::query_terms(options.query.as_deref());
    let tokens: Vec<usize> = chunks.iter().map(|c| estimate_tokens(&c.text)).collect();
    let sep_tokens = estimate_tokens(&options.separator);
    let all: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let tokens_before = estimate_tokens(&all.join(&options.separator));

    let mut reports: Vec<ChunkReport> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| ChunkReport {
            id: c.id.clone(),
            relevance: relevance[i],
            share: tokens[i],
            tokens_before: tokens[i],
            tokens_after: tokens[i],
            compressed: false,
            dropped: false,
        })
        .collect();
    if tokens_before <= budget {
        let text = all.join(&options.separator);
        return Ok(finish(text, reports, budget, tokens_before));
    }

    // Least relevant first (ties: the later chunk): the order chunks are dropped in.
    let mut drop_order: Vec<usize> = (0..chunks.len()).collect();
    drop_order.sort_by(|&a, &b| {
        relevance[a]
            .partial_cmp(&relevance[b])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(b.cmp(&a))
    });
    let mut dropped = vec![false; chunks.len()];
    // Starved chunks (a share under MIN_SHARE tokens) are dropped least relevant first until
    // none is: dropping a chunk only grows the others' shares, so the fewest to drop is found
    // by bisection (linear in the chunks, where dropping one at a time was quadratic).
    let starved = |dropped_n: usize| -> bool {
        let mut gone = vec![false; chunks.len()];
        for &i in &drop_order[..dropped_n] {
            gone[i] = true;
        }
        let active: Vec<usize> = (0..chunks.len()).filter(|&i| !gone[i]).collect();
        if active.is_empty() {
            return false;
        }
        let seps = sep_tokens * (active.len() - 1);
        let room = budget.saturating_sub(seps);
        let shares = allocate(&active, &tokens, &relevance, room);
        active
            .iter()
            .zip(&shares)
            .any(|(&i, &s)| s < MIN_SHARE.min(tokens[i]))
    };
    let (mut lo, mut hi) = (0usize, chunks.len());
    if starved(0) {
        // Invariant: dropping `lo` starves a chunk, dropping `hi` (all) does not.
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if starved(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    } else {
        hi = 0;
    }
    for &i in &drop_order[..hi] {
        dropped[i] = true;
    }
    // Tokens withheld from the shares after an assembled text came out over the budget.
    let mut slack = 0usize;
    loop {
        let active: Vec<usize> = (0..chunks.len()).filter(|&i| !dropped[i]).collect();
        if active.is_empty() {
            for r in reports.iter_mut() {
                r.dropped = true;
                r.share = 0;
                r.tokens_after = 0;
                r.compressed = false;
            }
            return Ok(finish(String::new(), reports, budget, tokens_before));
        }
        let seps = sep_tokens * (active.len() - 1);
        let room = budget.saturating_sub(seps).saturating_sub(slack);
        let shares = allocate(&active, &tokens, &relevance, room);
        // A share too small to be useful (after withholding): drop the least relevant active
        // chunk, share again.
        let starved_now = active
            .iter()
            .zip(&shares)
            .any(|(&i, &s)| s < MIN_SHARE.min(tokens[i]));
        if starved_now {
            if let Some(&victim) = drop_order.iter().find(|&&i| !dropped[i]) {
                dropped[victim] = true;
                slack = 0;
                continue;
            }
        }
        let mut parts: Vec<String> = Vec::with_capacity(active.len());
        for (&i, &share) in active.iter().zip(&shares) {
            let (text, compressed) = if share >= tokens[i] {
                (chunks[i].text.clone(), false)
            } else {
                (shrink(&chunks[i].text, share, &terms), true)
            };
            let r = &mut reports[i];
            r.share = share;
            r.tokens_after = estimate_tokens(&text);
            r.compressed = compressed;
            r.dropped = false;
            parts.push(text);
        }
        let text = parts.join(&options.separator);
        let after = estimate_tokens(&text);
        if after <= budget {
            for (i, r) in reports.iter_mut().enumerate() {
                if dropped[i] {
                    r.dropped = true;
                    r.share = 0;
                    r.tokens_after = 0;
                    r.compressed = false;
                }
            }
            return Ok(finish(text, reports, budget, tokens_before));
        }
        // Over (the estimate is not additive over joins): withhold the overshoot and retry;
        // when nothing is left to withhold, drop the least relevant chunk.
        let over = after - budget;
        if slack + over < room {
            slack += over;
        } else if let Some(&victim) = drop_order.iter().find(|&&i| !dropped[i]) {
            dropped[victim] = true;
            slack = 0;
        }
    }
}

/// [`prepare_context`] on JSON text of the chunks.
///
/// # Errors
/// As [`prepare_context`]; invalid JSON is [`ErrorKind::InvalidJson`].
pub fn prepare_context_json(
    json: &str,
    options: &PrepareContextOptions,
    embedder: Option<&Embedder>,
) -> Result<PrepareContextResult, Error> {
    let chunks: Value = read_json(json, ErrorKind::InvalidJson, "chunks")?;
    prepare_context(&chunks, options, embedder)
}

fn finish(
    text: String,
    reports: Vec<ChunkReport>,
    budget: usize,
    tokens_before: usize,
) -> PrepareContextResult {
    let tokens_after = estimate_tokens(&text);
    let stats = PrepareContextStats {
        tokens_before,
        tokens_after,
        budget,
        fits: tokens_after <= budget,
        compressed: reports.iter().filter(|r| r.compressed).count(),
        dropped: reports.iter().filter(|r| r.dropped).count(),
    };
    PrepareContextResult {
        text,
        chunks: reports,
        stats,
    }
}

/// Relevance of each chunk in [0, 1] (see the module docs).
fn relevance(
    chunks: &[Chunk],
    query: Option<&str>,
    embedder: Option<&Embedder>,
) -> Result<Vec<f64>, Error> {
    let Some(q) = query.filter(|q| !q.trim().is_empty()) else {
        return Ok(vec![1.0; chunks.len()]);
    };
    if chunks.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(embedder) = embedder {
        let mut batch: Vec<&str> = vec![q];
        batch.extend(chunks.iter().map(|c| c.text.as_str()));
        let vectors = embedder.embed(&batch)?;
        let Some((qv, rest)) = vectors.split_first() else {
            return Ok(vec![1.0; chunks.len()]);
        };
        return Ok(rest
            .iter()
            .map(|v| f64::from(cosine(qv, v).clamp(0.0, 1.0)))
            .collect());
    }
    let analyzer = Analyzer::english();
    let mut cache = TermCache::default();
    let mut bm25 = Bm25::new(Bm25Params::default())?;
    for c in chunks {
        bm25.add(&analyzer.terms_cached(&c.text, &mut cache));
    }
    let scores = bm25.scores(&analyzer.terms_cached(q, &mut cache));
    let best = scores.iter().copied().fold(0.0f32, f32::max);
    Ok(scores
        .iter()
        .map(|&s| if best > 0.0 { f64::from(s / best) } else { 0.0 })
        .collect())
}

/// Shares of `room` tokens for the `active` chunks: `min(tokens, ⌊λ·w·tokens⌋)` with the
/// largest `λ` (bisection) whose shares sum to at most `room`.
fn allocate(active: &[usize], tokens: &[usize], relevance: &[f64], room: usize) -> Vec<usize> {
    let weight = |i: usize| 0.25 + 0.75 * relevance[i].clamp(0.0, 1.0);
    let shares = |lambda: f64| -> Vec<usize> {
        active
            .iter()
            .map(|&i| {
                let t = tokens[i] as f64;
                (lambda * weight(i) * t).min(t).floor() as usize
            })
            .collect()
    };
    let total = |s: &[usize]| s.iter().sum::<usize>();
    // λ = 4 keeps everything (w ≥ 0.25).
    let (mut lo, mut hi) = (0.0f64, 4.0f64);
    if total(&shares(hi)) <= room {
        return shares(hi);
    }
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if total(&shares(mid)) <= room {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    shares(lo)
}

/// `text` summarised to at most `share` estimated tokens (extractive; code fences kept when the
/// code-split summary fits).
fn shrink(text: &str, share: usize, terms: &Query) -> String {
    if share == 0 {
        return String::new();
    }
    let chars = text.chars().count();
    let tokens = estimate_tokens(text).max(1);
    let mut budget = (share * chars / tokens).max(1);
    // The sentences scored once, packed into each budget tried.
    let prepared = summarize::Prepared::new(text, terms, false);
    let fenced = fences::has_fence(text);
    for _ in 0..12 {
        let level = Level::exact(budget);
        let s = if fenced {
            summarize::code_split(text, level, terms)
                .filter(|s| estimate_tokens(s) <= share)
                .unwrap_or_else(|| prepared.pack(budget, false))
        } else {
            prepared.pack(budget, false)
        };
        let t = estimate_tokens(&s);
        if t <= share {
            return s;
        }
        // Shrink in proportion to the overshoot (at least one character).
        let next = budget * share / t;
        budget = next.min(budget.saturating_sub(1));
        if budget == 0 {
            break;
        }
    }
    // Last resort: a cut at a word boundary that fits.
    let mut max = share;
    loop {
        let s = summarize::cut_at_word(text.trim(), max);
        if estimate_tokens(&s) <= share || max == 0 {
            return if estimate_tokens(&s) <= share {
                s
            } else {
                String::new()
            };
        }
        max /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, text: &str) -> Value {
        serde_json::json!({"id": id, "text": text})
    }

    fn opts(q: Option<&str>, budget: usize) -> PrepareContextOptions {
        PrepareContextOptions {
            query: q.map(str::to_string),
            token_budget: Some(budget),
            ..PrepareContextOptions::default()
        }
    }

    const A: &str = "Tokens are rotated every 24 hours by the auth_rotator job. The rotation \
        window is configurable with ROTATE_HOURS. Old tokens stay valid for ten minutes after \
        rotation. Clients must refresh before expiry or they get HTTP 401 from the gateway.";
    const B: &str = "The buttons use the brand palette. Primary buttons are blue, secondary \
        ones grey. Hover states darken by ten percent. Focus rings are two pixels wide and \
        always visible for keyboard users, whatever the theme is.";

    #[test]
    fn everything_fits_whole() {
        let out = prepare_context(
            &serde_json::json!([A, B]),
            &opts(Some("token rotation"), 10_000),
            None,
        )
        .unwrap();
        assert_eq!(out.text, format!("{A}\n\n{B}"));
        assert!(out.stats.fits);
        assert_eq!(out.stats.compressed, 0);
        assert_eq!(out.chunks[1].id, "1");
    }

    #[test]
    fn relevant_chunks_get_more() {
        let chunks = serde_json::json!([chunk("css", B), chunk("auth", A)]);
        let out = prepare_context(&chunks, &opts(Some("token rotation hours"), 70), None).unwrap();
        assert!(out.stats.fits, "{:?}", out.stats);
        assert!(
            out.chunks[1].share > out.chunks[0].share,
            "{:?}",
            out.chunks
        );
        assert!(out.text.contains("ROTATE_HOURS") || out.text.contains("24 hours"));
    }

    #[test]
    fn tiny_budgets_drop_the_least_relevant_and_never_overflow() {
        let chunks = serde_json::json!([chunk("css", B), chunk("auth", A)]);
        for budget in 0..80 {
            let out =
                prepare_context(&chunks, &opts(Some("token rotation"), budget), None).unwrap();
            assert!(out.stats.fits, "budget {budget}: {:?}", out.stats);
            assert!(estimate_tokens(&out.text) <= budget);
            if out.chunks[1].dropped {
                assert!(
                    out.chunks[0].dropped,
                    "the relevant chunk went first at {budget}"
                );
            }
        }
        let out = prepare_context(&chunks, &opts(Some("token rotation"), 20), None).unwrap();
        assert!(
            out.chunks[0].dropped && !out.chunks[1].dropped,
            "{:?}",
            out.chunks
        );
    }

    #[test]
    fn bad_input_names_the_field() {
        let e =
            prepare_context(&serde_json::json!([{"text": 3}]), &opts(None, 5), None).unwrap_err();
        assert_eq!(e.path(), "chunks[0].text");
        let e = prepare_context(&serde_json::json!({}), &opts(None, 5), None).unwrap_err();
        assert_eq!(e.path(), "chunks");
        let e = PrepareContextOptions::from_json(r#"{"query":"x"}"#).unwrap_err();
        assert_eq!(e.path(), "options.tokenBudget");
        let e = PrepareContextOptions::from_json(r#"{"tokenBudget":5,"nope":1}"#).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidOptions);
    }
}
