//! The driver: one call from its inputs to its [`Plan`] — the combination rules of the
//! context, the query, the counter, the cache, the summariser's two phases, then the stages
//! (prefix-stable blocks, or the budget over one parse).

use serde_json::value::RawValue;
use serde_json::Value;

use super::api::CompressContext;
use super::budget;
use super::cache;
use super::classify::Classes;
use super::counter::{TokenCounter, TokenCounterKind, Tokens};
use super::env::Env;
use super::method::Summarizer;
use super::options::CompressOptions;
use super::output::Plan;
use super::parse::{Parsed, Units};
use super::prefix;
use super::relevance;
use super::summarize::Query;
use crate::embed::Embedder;
use crate::error::{Error, ErrorKind};

/// The plan of one call on `values` (with their input text `raws` on the JSON path).
///
/// The context's combination rules, decided here once for every host: a caller's counter and
/// `tokenCounter: "model"` are exclusive (`invalid_options`); `"model"` needs an embedder with
/// a tokenizer; a cache goes with any counter and any summariser (what it stores does not
/// depend on them: summaries are keyed by their text and level, and prefix-stable blocks by the
/// counter's identity — a caller's counter has none, so its blocks are not stored; a
/// summariser's own summaries are never stored).
pub(super) fn plan(
    raws: Option<&[&RawValue]>,
    values: &[Value],
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<Plan, Error> {
    let CompressContext {
        embedder,
        counter,
        model_counter,
        summarizer,
        cache,
    } = ctx;
    with_tokens(options, embedder, (counter, model_counter), |tok| {
        let mut query = relevance::build_query(values, options, embedder)?;
        let Some(cache) = cache else {
            if options.token_budget.is_none() && options.target_ratio.is_none() {
                // No budget: every sentence and text is looked at once.
                query.memo.set_single_pass();
            }
            return phases(raws, values, options, &query, tok, summarizer);
        };
        let warning = cache.warning().map(str::to_string);
        query.memo = cache::Memo::with_cache(std::mem::take(cache));
        let result = phases(raws, values, options, &query, tok, summarizer);
        // The cache comes back whatever happened (an error leaves it as it was, plus what the
        // call computed before failing: every entry is still correct).
        if let Some(back) = query.memo.take_cache(options.cache_limit) {
            *cache = back;
        }
        let mut plan = result?;
        let (hits, misses) = query.memo.counts();
        plan.stats.cache_hits = Some(hits);
        plan.stats.cache_misses = Some(misses);
        if let Some(w) = warning {
            plan.stats.warnings.insert(0, w);
        }
        Ok(plan)
    })
}

/// The stages once, or with a native summariser both phases of the protocol (see
/// [`method`](super::method)).
fn phases(
    raws: Option<&[&RawValue]>,
    values: &[Value],
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
    summarizer: Option<&dyn Summarizer>,
) -> Result<Plan, Error> {
    let Some(summarizer) = summarizer.filter(|_| options.method.is_abstractive()) else {
        return stages(raws, values, options, query, tok);
    };
    let phase1 = CompressOptions {
        summaries: None,
        ..options.clone()
    };
    let requests = stages(raws, values, &phase1, query, tok)?.requests;
    let mut summaries = options.summaries.clone().unwrap_or_default();
    let mut failures = Vec::new();
    for r in &requests {
        if summaries.contains_key(&r.id) {
            continue;
        }
        match summarizer.summarize(r) {
            Ok(text) => {
                summaries.insert(r.id.clone(), text);
            }
            Err(e) => failures.push(format!("summarizer failed for {}: {e}", r.id)),
        }
    }
    let phase2 = CompressOptions {
        summaries: Some(summaries),
        ..options.clone()
    };
    let mut plan = stages(raws, values, &phase2, query, tok)?;
    let stats = plan.stats.summarizer.get_or_insert_with(Default::default);
    stats.requested = requests.len();
    stats.failed = failures.len();
    plan.stats.warnings.extend(failures);
    Ok(plan)
}

/// Parse, classify, then prefix-stable blocks or the budget's choice, rendered.
fn stages(
    raws: Option<&[&RawValue]>,
    values: &[Value],
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    let parsed = Parsed::new(raws, values, options, tok, 0)?;
    let whole = || {
        let units = Units::new(&parsed, options);
        let classes = Classes::new(&parsed, &units, options);
        let budgeted = options.token_budget.is_some() || options.target_ratio.is_some();
        let env = Env::new(&parsed, &units, &classes, options, query, tok, budgeted);
        Ok(budget::run(&env))
    };
    if options.prefix_stable {
        prefix::run(&parsed, options, query, tok, whole)
    } else {
        whole()
    }
}

/// Runs `f` with the call's counter: the caller's, the model's tokenizer, or the estimator.
/// A counter's error wins over `f`'s result.
fn with_tokens<R>(
    options: &CompressOptions,
    embedder: Option<&Embedder>,
    (counter, model_counter): (Option<&dyn TokenCounter>, Option<&dyn TokenCounter>),
    f: impl FnOnce(&Tokens<'_>) -> Result<R, Error>,
) -> Result<R, Error> {
    let path = "options.tokenCounter";
    #[cfg(feature = "embed")]
    let model;
    let (counter, identity): (Option<&dyn TokenCounter>, Option<String>) =
        match (counter, options.token_counter) {
            (Some(c), TokenCounterKind::Estimate) => (Some(c), None),
            (Some(_), TokenCounterKind::Model) => {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    path,
                    "\"model\" and a caller's counter (countTokens) were both given: give one",
                ))
            }
            (None, TokenCounterKind::Estimate) => (None, Some("estimate".into())),
            (None, TokenCounterKind::Model) if model_counter.is_some() => {
                let id = embedder
                    .and_then(|e| e.identity().model_sha256.clone())
                    .map(|sha| format!("model:{sha}"));
                (model_counter, id)
            }
            (None, TokenCounterKind::Model) => {
                #[cfg(feature = "embed")]
                {
                    match embedder.and_then(|e| e.tokenizer().map(|t| (e, t))) {
                        Some((e, t)) => {
                            model = super::counter::ModelCounter(t);
                            let id = format!(
                                "model:{}",
                                e.identity().model_sha256.as_deref().unwrap_or("")
                            );
                            (Some(&model as &dyn TokenCounter), Some(id))
                        }
                        None => return Err(no_model_tokenizer(path)),
                    }
                }
                #[cfg(not(feature = "embed"))]
                {
                    let _ = embedder;
                    return Err(no_model_tokenizer(path));
                }
            }
        };
    let tok = Tokens::new(counter, identity);
    let result = f(&tok);
    tok.check()?;
    result
}

fn no_model_tokenizer(path: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOptions,
        path,
        "\"model\" needs an embedder with a tokenizer (loadEmbedder(), --model-dir); the lexical \
         embedder has none",
    )
}
