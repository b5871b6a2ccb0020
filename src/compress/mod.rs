//! `compress`: deterministic conversation compression (DESIGN.md §3, seeds 002 and 004).
//!
//! The pipeline, as seed 002 describes it, on both providers' shapes:
//!
//! 1. **Classify** every message, and in Anthropic messages every text and tool-result block,
//!    in the seed's order: preserved roles, the recency window, tool calls, short content,
//!    already-compressed content, importance (opt-in, `importance.rs`), duplicates,
//!    superseded by a later correction (opt-in, `contradiction.rs`), code fences (code-split
//!    when there are 80+ characters of prose), hard verbatim content (code, JSON, SQL, diffs,
//!    stack traces, secrets, tables), caller patterns — then compress.
//! 2. **Dedup**: the same text twice (and, opt-in, near-duplicates) is replaced by a reference
//!    to the newest copy: `[dup#id: same as msg_7 — 1234 chars]`.
//! 3. **Merge** consecutive compressible prose messages of one role, then **summarise**: the
//!    extractive summary for prose, structure-aware summaries for tool output (JSON fields,
//!    status lines, paths and ids), code fences kept verbatim.
//! 4. **Size guard**: a summary replaces its original only when it is shorter in tokens (and,
//!    with `minConfidence`, keeps enough of its key tokens; with `preserveQuotes`, its quotes).
//!
//! Every rewritten message carries its id in its marker (`[summary#3f9a0c21b7e4: …]`) and its
//! originals go into `verbatim`, so [`uncompress()`] restores the input byte for byte. Messages
//! that are kept are returned as they came.
//!
//! 5. **Token budget** (`tokenBudget` / `targetRatio`, see `budget.rs`): every compressible
//!    text summarised to the same, largest share of its size that fits, key tokens listed
//!    within it; then less kept verbatim (recency window 2 → 1 → condensed tool-call
//!    arguments → 0 → the oldest messages folded into one `user` summary), truncation, and
//!    finally everything but preserved-role messages folded. A fold's marker lists what the
//!    next turn most likely needs (`[summary#1c9e04aa 5 messages folded | 83214 94016]`;
//!    comma-separated when a value has a space in it; the label goes first when values need
//!    the room).
//!
//! Query relevance: term overlap (English stop words left out), or with [`compress_with`] and
//! an [`Embedder`] the cosine of the query with each sentence; and wherever key tokens are
//! listed under a budget (a budget summary, a fold) the values of JSON tool output under fields
//! the query names come first (`order_id` for "cancel my order"; see `values.rs`).
//!
//! Token counting (`counter.rs`): the estimator by default, the embedder's tokenizer
//! (`tokenCounter: "model"`) or a caller's [`TokenCounter`] in a [`CompressContext`]; one
//! counter for the budget, the size guard and every stat. Methods (`method.rs`): extractive,
//! hierarchical, and the summariser protocol of abstractive and hybrid ([`method`]).
//!
//! The incremental cache (`cache.rs`, [`compress_cached`]), prefix-stable mode (`prefix.rs`)
//! and [`prepare_context`] (`prepare.rs`). A caller's token counter bypasses the cache.
//! Opt-in stages: importance scoring (`importance.rs`), superseded-by-correction
//! (`contradiction.rs`), quotes kept verbatim (`quotes.rs`), `minConfidence`.

mod budget;
pub mod cache;
pub mod contradiction;
mod counter;
mod dedup;
pub mod importance;
mod json;
pub mod method;
mod options;
mod prefix;
pub mod prepare;
pub mod quotes;
pub mod summarize;
mod uncompress;
mod values;

use budget::Tuning;
use counter::Tokens;
use summarize::Query;

pub use cache::CompressCache;
#[cfg(feature = "embed")]
pub use counter::ModelCounter;
pub use counter::{bad_count, Estimator, MaybeSendSync, TokenCounter, TokenCounterKind};
pub use method::{Method, Summarizer, SummarizerStats, SummaryRequest};
pub use options::{CompressOptions, PREFIX_BLOCK};
pub use prepare::{prepare_context, prepare_context_json, PrepareOptions, PrepareOutput};
pub use uncompress::{uncompress, uncompress_json};

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::embed::Embedder;
use crate::error::{join_index, Error, ErrorKind};
use crate::message::{
    raw_texts, resolve_format, views_from_raws, BlockKind, Format, RawDocument, Role,
};
use crate::text::{detect, fences, hash, keys, sentences};

/// What `compress` did, in counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressStats {
    /// Messages in the input.
    pub messages_before: usize,
    /// Messages in the output.
    pub messages_after: usize,
    /// Tokens of the messages' text before (see [`message_text`]), in the call's counter
    /// (the estimator unless `tokenCounter` or a caller's counter says otherwise).
    pub tokens_before: usize,
    /// Tokens after, in the same counter.
    pub tokens_after: usize,
    /// `tokens_before / tokens_after` (1 when nothing changed).
    pub ratio: f64,
    /// Messages kept verbatim.
    pub preserved: usize,
    /// Texts replaced by a summary.
    pub summarized: usize,
    /// Texts replaced by a duplicate reference.
    pub deduped: usize,
    /// Messages merged into the message before them.
    pub merged: usize,
    /// Texts whose prose was summarised around verbatim code fences.
    pub code_split: usize,
    /// Messages replaced by a short marker because a later message corrects them
    /// (`contradictionDetection`).
    pub superseded: usize,
    /// Texts cut to a preview by the budget's last step.
    pub truncated: usize,
    /// Messages whose tool-call arguments were condensed to a reference by the budget's last
    /// steps (`{"_condensed":"[call#id]"}`; the call ids, names and pairing stay).
    pub condensed_calls: usize,
    /// The oldest messages folded into one `user` summary message by the budget's very last
    /// step (only where the provider's rules still hold after the fold).
    pub folded: usize,
    /// The token budget applied (`tokenBudget`, or `targetRatio` × `tokensBefore`).
    pub budget: Option<usize>,
    /// Whether `tokensAfter` ≤ `budget` (absent without a budget).
    pub fits: Option<bool>,
    /// How far the budget loop escalated (0: the default pass was enough).
    pub escalation: usize,
    /// With `method: "hierarchical"` under a budget: the level every compressible text was
    /// summarised at (0: 50%, 1: 25%, 2: 12.5% of its size); absent when the default pass
    /// was used or the budget needed more than level 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// With `method` `abstractive` or `hybrid` and summaries: what became of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<SummarizerStats>,
    /// What the caller should know (a method that fell back, a summariser that failed).
    /// With a cache: summaries (and prefix-stable blocks) reused from it (see `cache.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hits: Option<usize>,
    /// With a cache: summaries (and blocks) computed and stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_misses: Option<usize>,
    /// With `prefixStable`: whether the stable rule held (false: the stable output did not
    /// meet the budget and the conversation was compressed as a whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_stable: Option<bool>,
    /// With `prefixStable` (and `prefixStable: true`): how many output messages form the
    /// frozen prefix — the same bytes in every later call on the grown conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_messages: Option<usize>,
    /// Things the caller should know (a cache ignored and rebuilt, a prefix re-compressed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One classification decision (with `trace: true`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The input message's index.
    pub index: usize,
    /// The block, for a decision about one block of an Anthropic message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    /// `preserved`, `summarized`, `deduped`, `merged`, `code_split`, `superseded`,
    /// `truncated`, `condensed` or `folded`.
    pub action: String,
    /// Why, e.g. `recency window`, `hard verbatim: json`, `summary not shorter`.
    pub reason: String,
}

/// The result of [`compress`].
#[derive(Clone, Debug, PartialEq)]
pub struct CompressOutput {
    /// The compressed messages, in the input's shape.
    pub messages: Vec<Value>,
    /// The originals of every rewritten message, by the id in its marker.
    pub verbatim: BTreeMap<String, Vec<Value>>,
    /// Counts.
    pub stats: CompressStats,
    /// One record per decision, when `trace` was asked for.
    pub trace: Option<Vec<Decision>>,
}

/// The result of [`compress_json`]: the same as JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressJsonOutput {
    /// The compressed document (array or request body), untouched messages byte-identical.
    pub json: String,
    /// `{id: [original message JSON, …]}` as JSON text, originals byte-identical.
    pub verbatim: String,
    /// Counts.
    pub stats: CompressStats,
    /// Decisions, when asked for.
    pub trace: Option<Vec<Decision>>,
}

/// What a call may use besides its options: an embedder (query relevance, and its tokenizer
/// for `tokenCounter: "model"`), a caller's token counter, a summariser (`abstractive`,
/// `hybrid`). The default is none of them.
#[derive(Clone, Copy, Default)]
pub struct CompressContext<'a> {
    /// The embedder for `options.query` (see [`compress_with`]) and `tokenCounter: "model"`.
    pub embedder: Option<&'a Embedder>,
    /// A caller's token counter: budgets, `minTokens` and stats in its tokens (memoised per
    /// call). Giving one together with `tokenCounter: "model"` is an error.
    pub counter: Option<&'a dyn TokenCounter>,
    /// The summariser of `abstractive` and `hybrid` (both phases run within the call).
    pub summarizer: Option<&'a dyn Summarizer>,
}

impl std::fmt::Debug for CompressContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressContext")
            .field("embedder", &self.embedder.map(Embedder::kind))
            .field("counter", &self.counter.is_some())
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

/// Compresses an array of messages.
pub fn compress(messages: &[Value], options: &CompressOptions) -> Result<CompressOutput, Error> {
    compress_with(messages, options, None)
}

/// [`compress`] with an embedder for `options.query`: a sentence's relevance is the cosine
/// between the query's vector and its own (every unique candidate sentence embedded once per
/// call, in one batch with the query). Without an embedder (or without a query) relevance is
/// query-term overlap. Deterministic for a given embedder.
///
/// # Errors
/// As [`compress`]; an embedder failure is [`ErrorKind::Internal`].
pub fn compress_with(
    messages: &[Value],
    options: &CompressOptions,
    embedder: Option<&Embedder>,
) -> Result<CompressOutput, Error> {
    compress_in(
        messages,
        options,
        CompressContext {
            embedder,
            ..CompressContext::default()
        },
    )
}

/// [`compress`] with a [`CompressContext`]: an embedder, a caller's token counter, a
/// summariser.
///
/// # Errors
/// As [`compress`]; `invalid_options` at `options.tokenCounter` for `"model"` without an
/// embedder that has a tokenizer (or with a caller's counter too); a counter's own error.
pub fn compress_in(
    messages: &[Value],
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<CompressOutput, Error> {
    compress_values(messages, options, ctx, None)
}

/// [`compress_with`] over the caller's incremental cache: the same result, byte for byte,
/// with the summaries of earlier calls reused and this call's stored (`stats.cacheHits`,
/// `stats.cacheMisses`). The cache is updated in place and bounded to
/// `options.cacheLimit` entries. See [`cache`].
///
/// ```
/// use condense::compress::{compress_cached, CompressCache, CompressOptions};
/// let messages: Vec<serde_json::Value> = (0..8)
///     .map(|i| serde_json::json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
///         "content": format!("Message {i}: the deploy of service_{i} failed after 30 seconds \
///             because parse_config returned an empty map. We retried it twice. \
///             It worked on the third attempt, see src/worker.rs:88 for the retry loop.")}))
///     .collect();
/// let mut cache = CompressCache::new();
/// let options = CompressOptions::default();
/// let first = compress_cached(&messages, &options, None, &mut cache)?;
/// let again = compress_cached(&messages, &options, None, &mut cache)?;
/// assert_eq!(first.messages, again.messages);
/// assert_eq!(again.stats.cache_misses, Some(0));
/// assert!(again.stats.cache_hits.unwrap() > 0);
/// # Ok::<(), condense::Error>(())
/// ```
///
/// # Errors
/// As [`compress_with`].
pub fn compress_cached(
    messages: &[Value],
    options: &CompressOptions,
    embedder: Option<&Embedder>,
    cache: &mut CompressCache,
) -> Result<CompressOutput, Error> {
    compress_in_cached(
        messages,
        options,
        CompressContext {
            embedder,
            ..CompressContext::default()
        },
        cache,
    )
}

/// [`compress_in`] over the caller's incremental cache (see [`compress_cached`]).
///
/// # Errors
/// As [`compress_in`].
pub fn compress_in_cached(
    messages: &[Value],
    options: &CompressOptions,
    ctx: CompressContext<'_>,
    cache: &mut CompressCache,
) -> Result<CompressOutput, Error> {
    compress_values(messages, options, ctx, Some(cache))
}

fn compress_values(
    messages: &[Value],
    options: &CompressOptions,
    ctx: CompressContext<'_>,
    cache: Option<&mut CompressCache>,
) -> Result<CompressOutput, Error> {
    let texts = raw_texts(messages)?;
    let raws: Vec<&RawValue> = texts.iter().map(|b| b.as_ref()).collect();
    let plan = run_cached(&raws, options, &ctx, cache)?;
    let parse = |t: &str| {
        serde_json::from_str::<Value>(t)
            .map_err(|e| Error::new(ErrorKind::Internal, "messages", e.to_string()))
    };
    let out = plan
        .messages
        .iter()
        .map(|p| match p {
            Out::Keep(i) => Ok(messages[*i].clone()),
            Out::New(text) => parse(text),
        })
        .collect::<Result<_, _>>()?;
    let mut verbatim = BTreeMap::new();
    for (id, originals) in &plan.verbatim {
        verbatim.insert(
            id.clone(),
            originals.iter().map(|&i| messages[i].clone()).collect(),
        );
    }
    Ok(CompressOutput {
        messages: out,
        verbatim,
        stats: plan.stats,
        trace: plan.trace,
    })
}

/// Compresses a JSON document: an array of messages or a request body with `messages`.
pub fn compress_json(json: &str, options: &CompressOptions) -> Result<CompressJsonOutput, Error> {
    compress_json_with(json, options, None)
}

/// [`compress_json`] with an embedder for `options.query` (see [`compress_with`]).
///
/// # Errors
/// As [`compress_json`]; an embedder failure is [`ErrorKind::Internal`].
pub fn compress_json_with(
    json: &str,
    options: &CompressOptions,
    embedder: Option<&Embedder>,
) -> Result<CompressJsonOutput, Error> {
    compress_json_in(
        json,
        options,
        CompressContext {
            embedder,
            ..CompressContext::default()
        },
    )
}

/// [`compress_json`] with a [`CompressContext`] (see [`compress_in`]).
///
/// # Errors
/// As [`compress_in`].
pub fn compress_json_in(
    json: &str,
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<CompressJsonOutput, Error> {
    compress_json_inner(json, options, &ctx, None)
}

/// [`compress_json_with`] over the caller's incremental cache (see [`compress_cached`]).
///
/// # Errors
/// As [`compress_json_with`].
pub fn compress_json_cached(
    json: &str,
    options: &CompressOptions,
    embedder: Option<&Embedder>,
    cache: &mut CompressCache,
) -> Result<CompressJsonOutput, Error> {
    let ctx = CompressContext {
        embedder,
        ..CompressContext::default()
    };
    compress_json_inner(json, options, &ctx, Some(cache))
}

/// The query, the pipeline (prefix-stable or not, budget loop) and the cache's bookkeeping.
fn run_cached(
    raws: &[&RawValue],
    options: &CompressOptions,
    ctx: &CompressContext<'_>,
    cache: Option<&mut CompressCache>,
) -> Result<Plan, Error> {
    let mut query = build_query(raws, options, ctx.embedder)?;
    let pipeline = |query: &Query| {
        with_tokens(options, ctx, |tok| {
            run_all(raws, options, query, tok, ctx.summarizer)
        })
    };
    // A caller's counter has no identity a cache key could hold: its summaries are not
    // cached (the cache comes back unchanged).
    let Some(cache) = cache.filter(|_| ctx.counter.is_none()) else {
        if options.token_budget.is_none() && options.target_ratio.is_none() {
            // No budget loop: every sentence and text is looked at once.
            query.memo.set_single_pass();
        }
        return pipeline(&query);
    };
    let warning = cache.warning().map(str::to_string);
    query.memo = cache::Memo::with_cache(std::mem::take(cache));
    let result = pipeline(&query);
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
}

/// How the result of a bare JSON array is made of its input (see [`compress_parts`]: the JS
/// entry builds its result from the caller's own objects or slices of the caller's string
/// instead of decoding the whole output back from wasm memory).
#[derive(Clone, Debug)]
pub struct CompressParts {
    /// The output messages in order: the index of an input message kept as it is, or `None` for
    /// the next text of `fresh`.
    pub messages: Vec<Option<usize>>,
    /// The JSON texts of the new messages, in output order.
    pub fresh: Vec<String>,
    /// `verbatim` as `(id, input indices)`, in id order.
    pub verbatim: Vec<(String, Vec<usize>)>,
    /// The byte span of every input message in the input text.
    pub spans: Vec<std::ops::Range<usize>>,
    /// Counts.
    pub stats: CompressStats,
    /// Decisions, when asked for.
    pub trace: Option<Vec<Decision>>,
}

/// The result of [`compress_parts`]: parts for a bare array, the written text for a request
/// body.
#[derive(Clone, Debug)]
pub enum Compressed {
    /// A bare array's result as parts of its input.
    Parts(CompressParts),
    /// A request body's result, written.
    Written(CompressJsonOutput),
}

/// [`compress_json_in`] as parts when `json` is a bare array: the same output, for a host that
/// already holds the input (the npm package's JS entry, a proxy) and can build the result from
/// it instead of copying the whole text back. [`CompressParts::messages`] and
/// [`CompressParts::verbatim`] joined as [`compress_json_in`] joins them (`[` `,` `]`, and
/// `{"id":[…],…}` with the id as a JSON string) give its text; a test checks it.
///
/// # Errors
/// As [`compress_json_in`].
pub fn compress_parts(
    json: &str,
    options: &CompressOptions,
    ctx: &CompressContext<'_>,
) -> Result<Compressed, Error> {
    let doc = RawDocument::parse(json)?;
    if doc.is_body() {
        return compress_doc(json, &doc, options, ctx, None).map(Compressed::Written);
    }
    let plan = run_cached(&doc.messages, options, ctx, None)?;
    let base = json.as_ptr() as usize;
    let spans = doc
        .messages
        .iter()
        .map(|r| {
            let start = (r.get().as_ptr() as usize).saturating_sub(base);
            start..start + r.get().len()
        })
        .collect();
    let mut fresh = Vec::new();
    let messages = plan
        .messages
        .into_iter()
        .map(|o| match o {
            Out::Keep(i) => Some(i),
            Out::New(t) => {
                fresh.push(t);
                None
            }
        })
        .collect();
    Ok(Compressed::Parts(CompressParts {
        messages,
        fresh,
        verbatim: plan.verbatim.into_iter().collect(),
        spans,
        stats: plan.stats,
        trace: plan.trace,
    }))
}

fn compress_json_inner(
    json: &str,
    options: &CompressOptions,
    ctx: &CompressContext<'_>,
    cache: Option<&mut CompressCache>,
) -> Result<CompressJsonOutput, Error> {
    compress_doc(json, &RawDocument::parse(json)?, options, ctx, cache)
}

/// [`compress_json_inner`] on the document `json` parsed to.
fn compress_doc(
    json: &str,
    doc: &RawDocument<'_>,
    options: &CompressOptions,
    ctx: &CompressContext<'_>,
    cache: Option<&mut CompressCache>,
) -> Result<CompressJsonOutput, Error> {
    let plan = run_cached(&doc.messages, options, ctx, cache)?;
    let text = doc.write_messages(
        json.len(),
        plan.messages.iter().map(|p| match p {
            Out::Keep(i) => doc.messages[*i].get(),
            Out::New(t) => t.as_str(),
        }),
    );
    let mut verbatim = String::from("{");
    for (n, (id, originals)) in plan.verbatim.iter().enumerate() {
        if n > 0 {
            verbatim.push(',');
        }
        verbatim.push_str(&Value::String(id.clone()).to_string());
        verbatim.push_str(":[");
        for (k, &i) in originals.iter().enumerate() {
            if k > 0 {
                verbatim.push(',');
            }
            verbatim.push_str(doc.messages[i].get());
        }
        verbatim.push(']');
    }
    verbatim.push('}');
    Ok(CompressJsonOutput {
        json: text,
        verbatim,
        stats: plan.stats,
        trace: plan.trace,
    })
}

/// Phase 1 of the summariser protocol ([`method`]): the texts the pipeline summarises with
/// these options (budget included), one [`SummaryRequest`] each, in message order. Empty unless
/// `options.method` is `abstractive` or `hybrid`; `options.summaries` is ignored.
///
/// # Errors
/// As [`compress_json_in`].
pub fn summary_requests_json(
    json: &str,
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<Vec<SummaryRequest>, Error> {
    let doc = RawDocument::parse(json)?;
    let query = build_query(&doc.messages, options, ctx.embedder)?;
    let options = CompressOptions {
        summaries: None,
        ..options.clone()
    };
    with_tokens(&options, &ctx, |tok| {
        prefix::run(&doc.messages, &options, &query, tok).map(|p| p.requests)
    })
}

/// Runs `f` with the call's counter: the caller's, the model's tokenizer, or the estimator.
/// A counter's error wins over `f`'s result.
fn with_tokens<R>(
    options: &CompressOptions,
    ctx: &CompressContext<'_>,
    f: impl FnOnce(&Tokens<'_>) -> Result<R, Error>,
) -> Result<R, Error> {
    let path = "options.tokenCounter";
    #[cfg(feature = "embed")]
    let model;
    let counter: Option<&dyn TokenCounter> = match (ctx.counter, options.token_counter) {
        (Some(c), TokenCounterKind::Estimate) => Some(c),
        (Some(_), TokenCounterKind::Model) => {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                path,
                "\"model\" and a caller's counter (countTokens) were both given: give one",
            ))
        }
        (None, TokenCounterKind::Estimate) => None,
        (None, TokenCounterKind::Model) => {
            #[cfg(feature = "embed")]
            {
                match ctx.embedder.and_then(Embedder::tokenizer) {
                    Some(t) => {
                        model = ModelCounter(t);
                        Some(&model as &dyn TokenCounter)
                    }
                    None => return Err(no_model_tokenizer(path)),
                }
            }
            #[cfg(not(feature = "embed"))]
            return Err(no_model_tokenizer(path));
        }
    };
    let tok = Tokens::new(counter);
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

/// The pipeline with the budget loop; with a native summariser, both phases of the protocol.
fn run_all(
    raws: &[&RawValue],
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
    summarizer: Option<&dyn Summarizer>,
) -> Result<Plan, Error> {
    let Some(summarizer) = summarizer.filter(|_| options.method.is_abstractive()) else {
        return prefix::run(raws, options, query, tok);
    };
    let phase1 = CompressOptions {
        summaries: None,
        ..options.clone()
    };
    let requests = prefix::run(raws, &phase1, query, tok)?.requests;
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
    let mut plan = prefix::run(raws, &phase2, query, tok)?;
    let stats = plan.stats.summarizer.get_or_insert_with(Default::default);
    stats.requested = requests.len();
    stats.failed = failures.len();
    plan.stats.warnings.extend(failures);
    Ok(plan)
}

/// The text of a message as the budget counts it: string content; text, thinking, tool_use
/// (`name` + input JSON) and tool_result blocks; OpenAI tool calls (`name` + arguments).
pub fn message_text(message: &Value) -> String {
    fn block_text(b: &Value) -> String {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Some("thinking") => b
                .get("thinking")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Some("tool_use") => format!(
                "{} {}",
                b.get("name").and_then(Value::as_str).unwrap_or(""),
                b.get("input")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "{}".into())
            ),
            Some("tool_result") => match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(block_text)
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            },
            _ => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }
    }
    let mut parts = Vec::new();
    match message.get("content") {
        Some(Value::String(s)) => parts.push(s.clone()),
        Some(Value::Array(blocks)) => {
            parts.extend(blocks.iter().map(block_text).filter(|s| !s.is_empty()))
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for c in calls {
            let f = c.get("function");
            parts.push(format!(
                "{} {}",
                f.and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                f.and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ));
        }
    }
    parts.join("\n")
}

/// The tokens of [`message_text`]: a message whose text is its string content (no tool calls)
/// is counted without a copy.
fn message_tokens(message: &Value, tok: &Tokens<'_>) -> usize {
    match message.get("content") {
        Some(Value::String(s)) if !has_tool_calls(message) => tok.count(s),
        _ => tok.count(&message_text(message)),
    }
}

/// Whether an (OpenAI-shape) message carries tool calls: then its text for the budget is more
/// than its string content.
fn has_tool_calls(message: &Value) -> bool {
    matches!(message.get("tool_calls"), Some(Value::Array(c)) if !c.is_empty())
}

// ------------------------------------------------------------------------------------ plan

enum Out {
    Keep(usize),
    New(String),
}

struct Plan {
    messages: Vec<Out>,
    verbatim: BTreeMap<String, Vec<usize>>,
    stats: CompressStats,
    trace: Option<Vec<Decision>>,
    /// The summariser's requests (`abstractive` / `hybrid`).
    requests: Vec<SummaryRequest>,
}

impl Plan {
    /// The output's text as the budget counts it (messages joined by newlines).
    fn text(&self, raws: &[&RawValue]) -> Result<String, Error> {
        let mut parts = Vec::with_capacity(self.messages.len());
        for o in &self.messages {
            let t = match o {
                Out::Keep(i) => raws.get(*i).map(|r| r.get()).unwrap_or("null"),
                Out::New(t) => t.as_str(),
            };
            let v: Value = serde_json::from_str(t)
                .map_err(|e| Error::new(ErrorKind::Internal, "messages", e.to_string()))?;
            parts.push(message_text(&v));
        }
        Ok(parts.join("\n"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnitKind {
    Prose,
    ToolOutput,
}

/// A compressible text: a message's string content or one of its blocks.
struct Unit {
    msg: usize,
    block: Option<usize>,
    kind: UnitKind,
    text: String,
}

/// What happens to a unit.
enum Fate {
    Keep(String),
    Replace {
        body: String,
        action: &'static str,
    },
    Dup {
        of: usize,
        similarity: Option<u32>,
    },
    /// Corrected by a later message: the marker body, a compact fallback, the trace reason.
    Superseded {
        full: String,
        compact: String,
        reason: String,
    },
    Truncate,
}

const MARKERS: [&str; 5] = ["[summary", "[dup#", "[dup of", "[truncated", "[condense:"];

/// The messages of one plan, parsed: borrowed views and owned values. The budget loop plans the
/// same messages many times (a bisection per stage), so it parses them once ([`Parsed::new`])
/// and plans with [`plan_parsed`].
struct Parsed<'a> {
    views: Vec<crate::message::MessageView<'a>>,
    /// Its error is reported where [`plan`] always reported it: after the format and the
    /// caller's patterns are checked.
    values: Result<Vec<Value>, Error>,
    /// [`message_tokens`] of each value, counted on first use (the counter is the call's).
    counts: std::cell::OnceCell<Vec<usize>>,
    /// Dedup answers per unit.
    dedup: dedup::DedupMemo,
    /// The 8-digit id of each message range that became one summary or fold, by
    /// `(start, end)`: the same on every pass of the budget loop, and FNV-1a over the raw
    /// messages is a serial chain of multiplications (a tenth of a budgeted call's time).
    ids: std::cell::RefCell<hash::FastMap<(usize, usize), String>>,
    /// Each message's relevance to the query ([`message_relevance`]), computed on first use.
    relevance: std::cell::OnceCell<Vec<f64>>,
}

impl Parsed<'_> {
    /// [`hash::short_id`] of `raws[range]` (the raws this was parsed from), cut to 8 digits.
    fn range_id(&self, raws: &[&RawValue], range: std::ops::Range<usize>) -> String {
        let key = (range.start, range.end);
        if let Some(id) = self.ids.borrow().get(&key) {
            return id.clone();
        }
        let mut id = hash::short_id(raws.get(range).unwrap_or_default().iter().map(|r| r.get()));
        id.truncate(8);
        self.ids.borrow_mut().insert(key, id.clone());
        id
    }
}

impl<'a> Parsed<'a> {
    fn new(raws: &[&'a RawValue]) -> Result<Parsed<'a>, Error> {
        let views = views_from_raws(raws)?;
        let values = raws
            .iter()
            .enumerate()
            .map(|(i, r)| {
                serde_json::from_str(r.get())
                    .map_err(|e| Error::json(join_index("messages", i), &e))
            })
            .collect::<Result<_, _>>();
        Ok(Parsed {
            views,
            values,
            counts: std::cell::OnceCell::new(),
            dedup: dedup::DedupMemo::default(),
            ids: std::cell::RefCell::default(),
            relevance: std::cell::OnceCell::new(),
        })
    }
}

fn plan(
    raws: &[&RawValue],
    options: &CompressOptions,
    tuning: Tuning,
    terms: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    plan_parsed(raws, &Parsed::new(raws)?, options, tuning, terms, tok)
}

/// [`plan`] on messages already parsed (`parsed` is [`Parsed::new`] of `raws`).
fn plan_parsed(
    raws: &[&RawValue],
    parsed: &Parsed<'_>,
    options: &CompressOptions,
    tuning: Tuning,
    terms: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    let views = &parsed.views;
    let format = resolve_format(views, options.format)?;
    let patterns = options.patterns()?;
    let values: &[Value] = parsed.values.as_ref().map_err(Error::clone)?;
    let n = values.len();
    // Each message's tokens ([`message_tokens`]), counted once per parse: the stats read them
    // all, and the size guard reuses the count of a unit that is a message's whole text.
    let counts: &[usize] = parsed
        .counts
        .get_or_init(|| values.iter().map(|v| message_tokens(v, tok)).collect());
    let unit_tokens = |unit: &Unit| -> usize {
        // A unit without a block is its message's string content, which is the message's
        // whole text for `message_tokens` unless the message also carries tool calls.
        let whole = unit.block.is_none() && !values.get(unit.msg).is_some_and(has_tool_calls);
        match counts.get(unit.msg) {
            Some(&c) if whole => c,
            _ => tok.count(&unit.text),
        }
    };
    let mut trace: Vec<Decision> = Vec::new();
    let mut decide = |index: usize, block: Option<usize>, action: &str, reason: String| {
        trace.push(Decision {
            index,
            block,
            action: action.into(),
            reason,
        })
    };

    // The messages' texts, for importance scoring and contradiction detection (opt-in).
    let texts: Vec<String> = if options.importance_scoring || options.contradiction_detection {
        values.iter().map(message_text).collect()
    } else {
        Vec::new()
    };
    // Importance (seed 002, step 6): content that is not short and not already compressed,
    // scored against the whole conversation.
    let important = |i: usize| -> Option<f64> {
        if !(options.importance_scoring && tuning.importance) {
            return None;
        }
        let t = texts.get(i)?;
        if t.chars().count() < options.min_chars
            || MARKERS.iter().any(|m| t.trim_start().starts_with(m))
        {
            return None;
        }
        let score = importance::score(&texts, i);
        (score >= options.importance_threshold).then_some(score)
    };

    // 1. Message-level preservation.
    let recency_from = n.saturating_sub(tuning.recency_window);
    let mut preserved = vec![false; n];
    // Messages whose tool calls get condensed arguments (the budget's last resort).
    let mut condense = vec![false; n];
    // The oldest messages folded into one summary (the budget's very last resort).
    let fold = fold_range(views, options, format, tuning.fold);
    for (i, view) in views.iter().enumerate() {
        let reason = if fold.contains(&i) {
            None
        } else if options
            .preserve_roles
            .iter()
            .any(|r| r == view.role.as_ref())
        {
            Some(format!("preserved role {}", view.role))
        } else if i >= recency_from {
            Some("recency window".to_string())
        } else if tuning.condense_calls
            && (!view.tool_calls().is_empty()
                || view.blocks().iter().any(|b| b.kind() == BlockKind::ToolUse))
        {
            condense[i] = true;
            None
        } else if !view.tool_calls().is_empty() {
            Some("carries tool calls".to_string())
        } else {
            important(i).map(|score| {
                format!(
                    "importance {score:.2} ≥ threshold {}",
                    options.importance_threshold
                )
            })
        };
        if let Some(reason) = reason {
            preserved[i] = true;
            decide(i, None, "preserved", reason);
        }
    }
    let folded = |i: usize| fold.contains(&i);
    // Superseded by a later correction (seed 002, step 8), among the messages not preserved.
    let superseded = if options.contradiction_detection {
        let roles: Vec<&str> = views.iter().map(|v| v.role.as_ref()).collect();
        let eligible: Vec<bool> = (0..n).map(|i| !preserved[i] && !folded(i)).collect();
        contradiction::find(&texts, &roles, &eligible)
    } else {
        BTreeMap::new()
    };

    // 2. Units of the other messages.
    let mut units: Vec<Unit> = Vec::new();
    for (i, value) in values.iter().enumerate() {
        if preserved[i] || folded(i) {
            continue;
        }
        let tool_message = views[i].role() == Some(Role::Tool);
        match value.get("content") {
            Some(Value::String(s)) => units.push(Unit {
                msg: i,
                block: None,
                kind: if tool_message {
                    UnitKind::ToolOutput
                } else {
                    UnitKind::Prose
                },
                text: s.clone(),
            }),
            Some(Value::Array(blocks)) => {
                for (b, block) in blocks.iter().enumerate() {
                    let kind = views[i].blocks().get(b).map(|v| v.kind());
                    match (kind, block.get("text"), block.get("content")) {
                        (Some(BlockKind::Text), Some(Value::String(t)), _) => units.push(Unit {
                            msg: i,
                            block: Some(b),
                            kind: if tool_message {
                                UnitKind::ToolOutput
                            } else {
                                UnitKind::Prose
                            },
                            text: t.clone(),
                        }),
                        (Some(BlockKind::ToolResult), _, Some(Value::String(t))) => {
                            units.push(Unit {
                                msg: i,
                                block: Some(b),
                                kind: UnitKind::ToolOutput,
                                text: t.clone(),
                            })
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    // 3. Dedup: exact (and fuzzy) against every text of the conversation, newest copy kept.
    let mut fates: Vec<Option<Fate>> = (0..units.len()).map(|_| None).collect();
    if (options.dedup || tuning.fuzzy) && tuning.level.ratio > 0.0 {
        let found = dedup::find(
            &units,
            values,
            options.min_chars,
            tuning.fuzzy.then_some(options.fuzzy_threshold),
            &parsed.dedup,
        );
        for (fate, dup) in fates.iter_mut().zip(found) {
            if let Some((of, similarity)) = dup {
                *fate = Some(Fate::Dup { of, similarity });
            }
        }
    }

    // 4. Classify the rest and summarise. Large values repeated in newer JSON tool outputs
    //    are rendered as references to the newest copy.
    let mut seen = summarize::SeenValues::default();
    for (i, value) in values.iter().enumerate() {
        let name = match value.get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => format!("msg_{}", i + tuning.offset),
        };
        for text in tool_outputs(value, views[i].role() == Some(Role::Tool)) {
            if let Ok(v @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text)
            {
                seen.add(&v, i, &name);
            }
        }
    }
    // Budget-fill mode lists key tokens; those of the messages kept verbatim are not repeated.
    let known: Known = if tuning.level.fill {
        let kept: Vec<String> = (0..n)
            .filter(|&i| preserved[i])
            .map(|i| message_text(&values[i]))
            .collect();
        Known::new(
            terms
                .memo
                .keys(&kept.join("\n"))
                .iter()
                .map(|(k, _)| k.clone())
                .collect(),
            terms,
        )
    } else {
        Known::new(HashSet::new(), terms)
    };
    let mut truncations = tuning.truncate_oldest;
    for (u, unit) in units.iter().enumerate() {
        if fates[u].is_some() {
            continue;
        }
        let level = if unit.msg < tuning.older_than {
            tuning.older_level
        } else {
            tuning.level
        };
        let t = unit.text.as_str();
        let keep = |reason: &str| Fate::Keep(reason.to_string());
        let fate = if t.chars().count() < options.min_chars {
            keep("short content")
        } else if MARKERS.iter().any(|m| t.trim_start().starts_with(m)) {
            keep("already compressed")
        } else if truncations > 0 {
            // The budget's last resort: the oldest texts, whatever they are, cut to a preview.
            truncations -= 1;
            Fate::Truncate
        } else if level.ratio <= 0.0 {
            keep("below minTokens")
        } else if let (UnitKind::Prose, Some((by, signal))) = (unit.kind, superseded.get(&unit.msg))
        {
            let by_name = match values[*by].get("id").and_then(Value::as_str) {
                Some(id) => id.to_string(),
                None => format!("msg_{by}"),
            };
            // What was said, briefly: the correction is what counts now.
            let summary = if level.fill {
                fill_prose(t, level, terms, &known)
            } else {
                summarize::prose(t, level.tighter(), terms)
            };
            Fate::Superseded {
                full: format!("superseded by {by_name} ({signal}) — {summary}"),
                compact: format!("superseded by {by_name} — {signal}"),
                reason: format!("corrected by message {by} ({signal})"),
            }
        } else if patterns.iter().any(|p| p.is_match(t)) {
            keep("preserve pattern")
        } else if level.fill {
            fill_fate(unit, level, terms, &known, &seen, options)
        } else if options.preserve_code && fences::has_fence(t) {
            if fences::prose_chars(t) >= 80 {
                match cached_code_split(t, level, terms, &known) {
                    Some(body) => Fate::Replace {
                        body,
                        action: "code_split",
                    },
                    None => keep("code fences"),
                }
            } else {
                keep("code fences with little prose")
            }
        } else if unit.kind == UnitKind::ToolOutput {
            match serde_json::from_str::<Value>(t) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => Fate::Replace {
                    body: if tuning.lossy_json {
                        known.cached("json", t, level, terms, || {
                            summarize::json(&v, level, t.chars().count(), terms)
                        })
                    } else {
                        summarize::json_compact(
                            &v,
                            level,
                            &seen,
                            unit.msg,
                            options.preserve_numbers,
                        )
                    },
                    action: "summarized",
                },
                _ if detect::is_structured(t) => Fate::Replace {
                    body: known.cached("structured", t, level, terms, || {
                        summarize::structured(t, level)
                    }),
                    action: "summarized",
                },
                _ => match detect::hard(t) {
                    Some(h) => Fate::Keep(format!("hard verbatim: {}", h.as_str())),
                    None => Fate::Replace {
                        body: known.cached("prose", t, level, terms, || {
                            summarize::prose(t, level, terms)
                        }),
                        action: "summarized",
                    },
                },
            }
        } else if let Some(h) = detect::hard(t) {
            Fate::Keep(format!("hard verbatim: {}", h.as_str()))
        } else {
            Fate::Replace {
                body: known.cached("prose", t, level, terms, || {
                    summarize::prose(t, level, terms)
                }),
                action: "summarized",
            }
        };
        fates[u] = Some(judge(fate, t, options));
    }

    // 5. Merge runs of whole-message prose summaries of one role (seed 002's groups).
    let whole: HashMap<usize, usize> = units
        .iter()
        .enumerate()
        .filter(|(u, unit)| {
            unit.block.is_none()
                && unit.kind == UnitKind::Prose
                && views[unit.msg].tool_calls().is_empty()
                && matches!(
                    fates[*u],
                    Some(Fate::Replace {
                        action: "summarized",
                        ..
                    })
                )
        })
        .map(|(u, unit)| (unit.msg, u))
        .collect();
    let mut group_of: Vec<usize> = (0..n).collect(); // message → first message of its group
    for i in 1..n {
        if whole.contains_key(&i)
            && whole.contains_key(&(i - 1))
            && views[i].role == views[i - 1].role
            && format == Format::OpenAi
        {
            group_of[i] = group_of[i - 1];
        }
    }

    // 6. Build the output.
    let mut by_msg: HashMap<usize, Vec<usize>> = HashMap::new();
    for (u, unit) in units.iter().enumerate() {
        by_msg.entry(unit.msg).or_default().push(u);
    }
    let mut stats = CompressStats {
        messages_before: n,
        ..CompressStats::default()
    };
    let mut out: Vec<Out> = Vec::with_capacity(n);
    let mut verbatim: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut abstractive = Abstractive {
        method: options.method,
        summaries: options.summaries.as_ref(),
        requests: Vec::new(),
    };
    let name = |i: usize| -> String {
        match values[i].get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => format!("msg_{}", i + tuning.offset),
        }
    };
    let mut i = 0;
    while i < n {
        if i == fold.start && !fold.is_empty() {
            let id = parsed.range_id(raws, fold.clone());
            // What the next turn most likely needs first: the values of the folded tool
            // outputs, newest first, then the key tokens of every folded message, newest first
            // or, under a query, the most relevant message first (newest first among equals):
            // the next turn's keys 45 -> 56 of 109 on sharegpt_dev_next at a 25% budget.
            let mut chars = 0;
            let mut candidates: Vec<String> = Vec::new();
            let mut listed: HashSet<String> = HashSet::new();
            let mut order: Vec<usize> = fold.clone().rev().collect();
            if !(terms.is_empty() && terms.cosines.is_empty()) {
                let relevance = parsed
                    .relevance
                    .get_or_init(|| message_relevance(values, terms));
                let of = |g: usize| relevance.get(g).copied().unwrap_or(0.0);
                order.sort_by(|&a, &b| of(b).total_cmp(&of(a)));
            }
            for g in fold.clone().rev() {
                for text in tool_outputs(&values[g], views[g].role() == Some(Role::Tool)) {
                    for k in values::tool_values_for(text, terms) {
                        if !known.set.contains(&k) && listed.insert(k.clone()) {
                            candidates.push(k);
                        }
                    }
                }
            }
            for &g in &order {
                let text = message_text(&values[g]);
                chars += text.chars().count();
                for k in known.fill_keys(&text, terms) {
                    if listed.insert(k.clone()) {
                        candidates.push(k);
                    }
                }
            }
            let budget = tuning
                .fold_chars
                .unwrap_or_else(|| tuning.level.budget(chars));
            let count = fold.len();
            let body = fold_body(count, &candidates, budget);
            // No colon after the id (unlike other summaries): under the tightest budgets
            // its token is a value.
            let text = if body.is_empty() {
                format!("[summary#{id}]")
            } else {
                format!("[summary#{id} {body}]")
            };
            let before: usize = counts.get(fold.clone()).unwrap_or_default().iter().sum();
            if tok.count(&text) >= before {
                // Size guard: the run stays as it is.
                for g in fold.clone() {
                    decide(g, None, "preserved", "fold not shorter".into());
                    stats.preserved += 1;
                    out.push(Out::Keep(g));
                }
                i = fold.end;
                continue;
            }
            let msg = serde_json::json!({"role": "user", "content": text});
            out.push(Out::New(msg.to_string()));
            verbatim.insert(id, fold.clone().collect());
            stats.folded += count;
            for g in fold.clone() {
                decide(g, None, "folded", "token budget: oldest messages".into());
            }
            i = fold.end;
            continue;
        }
        let mut end = i + 1;
        while end < n && group_of[end] == i {
            end += 1;
        }
        let group: Vec<usize> = (i..end).collect();
        let id = parsed.range_id(raws, i..end);
        if group.len() > 1 {
            // One summary of the whole run.
            let joined: String = group
                .iter()
                .filter_map(|g| values[*g].get("content").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n");
            let level = if i < tuning.older_than {
                tuning.older_level
            } else {
                tuning.level
            };
            let body = if level.fill {
                fill_prose(&joined, level, terms, &known)
            } else {
                known.cached("prose", &joined, level, terms, || {
                    summarize::prose(&joined, level, terms)
                })
            };
            let body = if options.preserve_quotes {
                quotes::keep(body, &joined)
            } else {
                body
            };
            let mut marker = format!("[summary#{id}: {body} ({} messages merged)]", group.len());
            let before: usize = group.iter().filter_map(|&g| counts.get(g)).sum();
            if tok.count(&marker) < before
                && (options.min_confidence <= 0.0
                    || confidence(&body, &joined) >= options.min_confidence)
            {
                let n = group.len();
                if let Some(m) = abstractive.take(
                    &joined,
                    &body,
                    &marker,
                    (i, None, views[i].role.as_ref(), "merged"),
                    (
                        &|s: &str| format!("[summary#{id}: {s} ({n} messages merged)]"),
                        before,
                    ),
                    tok,
                    &mut stats,
                ) {
                    marker = m;
                }
                let mut msg = values[i].clone();
                if let Some(obj) = msg.as_object_mut() {
                    obj.insert("content".into(), Value::String(marker));
                }
                out.push(Out::New(msg.to_string()));
                verbatim.insert(id, group.clone());
                stats.summarized += 1;
                stats.merged += group.len() - 1;
                for g in &group {
                    decide(
                        *g,
                        None,
                        if *g == i { "summarized" } else { "merged" },
                        format!(
                            "merged with messages {}..{}",
                            i + tuning.offset,
                            end - 1 + tuning.offset
                        ),
                    );
                }
                i = end;
                continue;
            }
            // The merged summary is not shorter: fall back to message by message.
            end = i + 1;
        }
        let no_units = Vec::new();
        let unit_ids = match by_msg.get(&i) {
            Some(ids) => ids,
            None if condense[i] => &no_units,
            None => {
                if !preserved[i] {
                    decide(i, None, "preserved", "nothing compressible".into());
                }
                stats.preserved += 1;
                out.push(Out::Keep(i));
                i = end;
                continue;
            }
        };
        let mut msg = values[i].clone();
        let mut changed = false;
        for &u in unit_ids {
            let unit = &units[u];
            let replacement = match fates[u].take() {
                Some(Fate::Keep(reason)) => {
                    decide(i, unit.block, "preserved", reason);
                    None
                }
                Some(Fate::Dup { of, similarity }) => {
                    let size = unit.text.chars().count();
                    let text = match similarity {
                        None => format!("[dup#{id}: same as {} — {size} chars]", name(of)),
                        Some(s) => format!("[dup#{id}: ~{s}% like {} — {size} chars]", name(of)),
                    };
                    Some((
                        text,
                        "deduped",
                        format!("duplicate of message {}", of + tuning.offset),
                        None,
                    ))
                }
                Some(Fate::Replace { body, action }) => {
                    let text = format!("[summary#{id}: {body}]");
                    Some((text, action, "compressed".to_string(), Some(body)))
                }
                Some(Fate::Superseded {
                    full,
                    compact,
                    reason,
                }) => {
                    let text = format!("[summary#{id}: {full}]");
                    let text = if tok.count(&text) < unit_tokens(unit) {
                        text
                    } else {
                        format!("[summary#{id}: {compact}]")
                    };
                    Some((text, "superseded", reason, None))
                }
                Some(Fate::Truncate) => {
                    let size = unit.text.chars().count();
                    let preview = summarize::cut_at_word(unit.text.trim(), 60);
                    let text = format!("[truncated#{id} — {size} chars: {preview}]");
                    Some((text, "truncated", "token budget".to_string(), None))
                }
                None => None,
            };
            let Some((mut text, action, mut reason, body)) = replacement else {
                continue;
            };
            // Size guard: only when shorter in tokens.
            if tok.count(&text) >= unit_tokens(unit) {
                decide(i, unit.block, "preserved", "summary not shorter".into());
                continue;
            }
            if let Some(body) = body.filter(|_| action == "summarized") {
                let kind = match unit.kind {
                    UnitKind::Prose => Some("prose"),
                    UnitKind::ToolOutput => plain_tool_output(&unit.text).then_some("tool_output"),
                };
                if let Some(kind) = kind {
                    if let Some(m) = abstractive.take(
                        &unit.text,
                        &body,
                        &text,
                        (i, unit.block, views[i].role.as_ref(), kind),
                        (&|s: &str| format!("[summary#{id}: {s}]"), unit_tokens(unit)),
                        tok,
                        &mut stats,
                    ) {
                        text = m;
                        reason = "compressed by the summarizer".into();
                    }
                }
            }
            set_unit_text(&mut msg, unit, text);
            changed = true;
            match action {
                "deduped" => stats.deduped += 1,
                "code_split" => stats.code_split += 1,
                "superseded" => stats.superseded += 1,
                "truncated" => stats.truncated += 1,
                _ => stats.summarized += 1,
            }
            decide(i, unit.block, action, reason);
        }
        if condense[i] && condense_calls(&mut msg, &id, tok) {
            changed = true;
            stats.condensed_calls += 1;
            decide(
                i,
                None,
                "condensed",
                "token budget: tool call arguments".into(),
            );
        }
        if changed {
            out.push(Out::New(msg.to_string()));
            verbatim.insert(id, vec![i]);
        } else {
            stats.preserved += 1;
            out.push(Out::Keep(i));
        }
        i = end;
    }

    stats.messages_after = out.len();
    // Each input message counted once: a kept message's count is its count before.
    stats.tokens_before = counts.iter().sum();
    stats.tokens_after = out
        .iter()
        .map(|o| match o {
            Out::Keep(i) => counts.get(*i).copied().unwrap_or(0),
            Out::New(t) => serde_json::from_str::<Value>(t)
                .map(|v| message_tokens(&v, tok))
                .unwrap_or(0),
        })
        .sum();
    if options.method.is_abstractive() && options.summaries.is_none() {
        stats
            .warnings
            .push(method::no_summarizer_warning(options.method));
    }
    stats.ratio = if stats.tokens_after == 0 {
        1.0
    } else {
        stats.tokens_before as f64 / stats.tokens_after as f64
    };
    for d in &mut trace {
        d.index += tuning.offset;
    }
    trace.sort_by_key(|d| (d.index, d.block));
    Ok(Plan {
        messages: out,
        verbatim,
        stats,
        trace: options.trace.then_some(trace),
        requests: abstractive.requests,
    })
}

/// Tool output the summariser may rewrite: plain text (not JSON, not line-structured output,
/// whose deterministic summaries keep every path and status line).
fn plain_tool_output(text: &str) -> bool {
    !matches!(
        serde_json::from_str::<Value>(text),
        Ok(Value::Object(_) | Value::Array(_))
    ) && !detect::is_structured(text)
}

/// The summariser's part of one pass (`abstractive` / `hybrid`): the requests it records and
/// the summaries it uses.
struct Abstractive<'o> {
    method: Method,
    summaries: Option<&'o method::Summaries>,
    requests: Vec<SummaryRequest>,
}

impl Abstractive<'_> {
    /// Records the request for a text the pass summarises (`original`, summarised as `body`
    /// in `marker`), and returns the marker of the caller's summary of it (`wrap(summary)`)
    /// when there is one that is non-empty and whose marker is shorter than `bound` (the
    /// tokens of what it replaces: the size guard), counting it in `stats.summarizer`.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        original: &str,
        body: &str,
        marker: &str,
        (index, block, role, kind): (usize, Option<usize>, &str, &str),
        (wrap, bound): (&dyn Fn(&str) -> String, usize),
        tok: &Tokens<'_>,
        stats: &mut CompressStats,
    ) -> Option<String> {
        if !self.method.is_abstractive() {
            return None;
        }
        let id = method::request_id(original);
        let original_tokens = tok.count(original);
        let given = self.summaries.map(|m| m.get(&id));
        self.requests.push(SummaryRequest {
            text: if self.method == Method::Hybrid {
                body.to_string()
            } else {
                original.to_string()
            },
            id,
            target_tokens: tok.count(marker).min(original_tokens),
            original_tokens,
            role: role.to_string(),
            kind: kind.to_string(),
            index,
            block,
        });
        let s = given??.trim();
        let counts = stats.summarizer.get_or_insert_with(Default::default);
        let wrapped = wrap(s);
        if !s.is_empty() && tok.count(&wrapped) < bound {
            counts.accepted += 1;
            Some(wrapped)
        } else {
            counts.rejected += 1;
            None
        }
    }
}

/// The tool output texts of a message: a tool message's content, tool_result contents.
fn tool_outputs(value: &Value, tool_message: bool) -> Vec<&str> {
    match value.get("content") {
        Some(Value::String(s)) if tool_message => vec![s.as_str()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .filter_map(|b| b.get("content").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

fn set_unit_text(msg: &mut Value, unit: &Unit, text: String) {
    let Some(obj) = msg.as_object_mut() else {
        return;
    };
    match unit.block {
        None => {
            obj.insert("content".into(), Value::String(text));
        }
        Some(b) => {
            if let Some(Value::Object(block)) = obj.get_mut("content").and_then(|c| c.get_mut(b)) {
                let key = if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                    "content"
                } else {
                    "text"
                };
                block.insert(key.into(), Value::String(text));
            }
        }
    }
}

/// A unit's fate in budget-fill mode: every kind of text aims at `level.ratio` of its
/// characters, its key tokens (those not kept verbatim elsewhere) listed within that share.
fn fill_fate(
    unit: &Unit,
    level: summarize::Level,
    terms: &Query,
    known: &Known,
    seen: &summarize::SeenValues,
    options: &CompressOptions,
) -> Fate {
    let t = unit.text.as_str();
    let chars = t.chars().count();
    let budget = level.budget(chars);
    let summarized = |body: String| Fate::Replace {
        body,
        action: "summarized",
    };
    if options.preserve_code && fences::has_fence(t) {
        return match cached_code_split(t, level, terms, known) {
            Some(body) => Fate::Replace {
                body,
                action: "code_split",
            },
            None => Fate::Keep("code fences".into()),
        };
    }
    if unit.kind == UnitKind::ToolOutput {
        if let Ok(v @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(t) {
            // Every number when the whole rendering fits the share; else the default rendering
            // (long numeric arrays summarised) with the key tokens it left out, in the share.
            let all = summarize::json_compact(&v, level, seen, unit.msg, true);
            if all.chars().count() <= budget {
                return summarized(all);
            }
            // The values under fields the query names first, then the key tokens.
            let mut candidates: Vec<String> = values::named_by_query(&v, terms)
                .into_iter()
                .filter(|k| !known.set.contains(k))
                .collect();
            for k in known.fill_keys(t, terms) {
                if !candidates.contains(&k) {
                    candidates.push(k);
                }
            }
            let compact =
                summarize::json_compact(&v, level, seen, unit.msg, options.preserve_numbers);
            if compact.chars().count() <= budget {
                return summarized(summarize::fill(compact, &candidates, budget));
            }
            let share = summarize::sentence_share(&candidates, budget);
            let body = summarize::json(&v, summarize::Level::exact(share), chars, terms);
            return summarized(summarize::fill(body, &candidates, budget));
        }
        if detect::is_structured(t) {
            let level = summarize::Level::exact(budget);
            return summarized(known.cached("structured", t, level, terms, || {
                summarize::structured(t, level)
            }));
        }
        // Other tool output: its values (both ends of a listing first) before its sentences.
        let candidates: Vec<String> = values::tool_values_for(t, terms)
            .into_iter()
            .filter(|k| !known.set.contains(k))
            .collect();
        let keys: usize = candidates.iter().map(|k| k.chars().count() + 2).sum();
        let share = budget.saturating_sub(keys + 8);
        let body = if share == 0 {
            String::new()
        } else {
            summarize::prose(t, summarize::Level::exact(share), terms)
        };
        return summarized(summarize::fill(body, &candidates, budget));
    }
    summarized(fill_prose(t, level, terms, known))
}

/// Budget-fill prose: the best sentences, then the key tokens they left out, within
/// `level.ratio` of the text.
fn fill_prose(text: &str, level: summarize::Level, terms: &Query, known: &Known) -> String {
    known.cached_with_known("fill_prose", text, level, terms, || {
        let budget = level.budget(text.chars().count());
        let candidates = known.fill_keys(text, terms);
        let share = summarize::sentence_share(&candidates, budget);
        let body = if share == 0 {
            String::new()
        } else {
            summarize::prose(text, summarize::Level::exact(share), terms)
        };
        summarize::fill(body, &candidates, budget)
    })
}

/// The key tokens of the messages kept verbatim (budget-fill mode), with the fingerprints
/// cache keys need.
struct Known {
    set: HashSet<String>,
    /// The sorted set, hashed (budget-fill summaries depend on it).
    fp: String,
    /// The query's fingerprint.
    query: String,
}

impl Known {
    fn new(set: HashSet<String>, terms: &Query) -> Known {
        let (fp, query) = if terms.memo.has_cache() {
            let mut sorted: Vec<&str> = set.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            (
                cache::key(&[sorted.join("\u{0}").as_bytes()]),
                terms.fingerprint(),
            )
        } else {
            (String::new(), String::new())
        };
        Known { set, fp, query }
    }

    /// [`summarize::fill_keys`] over the call's memo.
    fn fill_keys(&self, text: &str, terms: &Query) -> Vec<String> {
        terms
            .memo
            .keys(text)
            .iter()
            .filter(|(k, kind)| {
                (*kind != keys::KeyKind::Code || k.len() <= 40) && !self.set.contains(k)
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// A summary of `text` at `level` from the cache (keyed by the summariser, the text, the
    /// level and the query), else computed.
    fn cached(
        &self,
        tag: &str,
        text: &str,
        level: summarize::Level,
        terms: &Query,
        f: impl FnOnce() -> String,
    ) -> String {
        terms.memo.text(
            &[
                tag.as_bytes(),
                text.as_bytes(),
                &level_bytes(level),
                self.query.as_bytes(),
            ],
            f,
        )
    }

    /// As [`cached`](Self::cached), also keyed by the key tokens kept verbatim.
    fn cached_with_known(
        &self,
        tag: &str,
        text: &str,
        level: summarize::Level,
        terms: &Query,
        f: impl FnOnce() -> String,
    ) -> String {
        terms.memo.text(
            &[
                tag.as_bytes(),
                text.as_bytes(),
                &level_bytes(level),
                self.query.as_bytes(),
                self.fp.as_bytes(),
            ],
            f,
        )
    }
}

/// A level as bytes (cache keys): every field that changes a summary.
fn level_bytes(level: summarize::Level) -> Vec<u8> {
    let mut b = Vec::with_capacity(33);
    b.extend_from_slice(&level.ratio.to_bits().to_le_bytes());
    b.extend_from_slice(&(level.min_chars as u64).to_le_bytes());
    b.extend_from_slice(&(level.max_chars as u64).to_le_bytes());
    b.extend_from_slice(&(level.max_keys as u64).to_le_bytes());
    b.push(u8::from(level.fill));
    b
}

/// [`summarize::code_split`] through the cache (`None` stored as an empty marker).
fn cached_code_split(
    text: &str,
    level: summarize::Level,
    terms: &Query,
    known: &Known,
) -> Option<String> {
    let v = known.cached(
        "code_split",
        text,
        level,
        terms,
        || match summarize::code_split(text, level, terms) {
            Some(s) => format!("1{s}"),
            None => "0".into(),
        },
    );
    v.strip_prefix('1').map(str::to_string)
}

/// The body of a folded summary within `budget` characters: `N messages folded | a b c`, the
/// label dropped when it would crowd out values (a tiny budget), `N messages folded` when no
/// value fits, nothing when not even that fits. Values are separated by one space (a comma
/// costs a token of its own, and under the tightest budgets that token is a value), or by `, `
/// when a candidate has white space in it (`94016, San Francisco`), so the list stays
/// readable.
fn fold_body(count: usize, candidates: &[String], budget: usize) -> String {
    let label = format!("{count} messages folded");
    let sep = if candidates
        .iter()
        .any(|k| k.chars().any(char::is_whitespace))
    {
        ", "
    } else {
        " "
    };
    let list = |room: usize| {
        let mut out = String::new();
        let mut used = 0;
        for k in candidates {
            let len = k.chars().count() + if out.is_empty() { 0 } else { sep.len() };
            if used + len > room || keys::contains_token(&out, k) {
                continue;
            }
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(k);
            used += len;
        }
        out
    };
    let with_label = list(budget.saturating_sub(label.len() + 3));
    let alone = list(budget);
    if alone.is_empty() {
        if label.len() <= budget {
            label
        } else {
            String::new()
        }
    } else if with_label == alone {
        format!("{label} | {alone}")
    } else {
        alone
    }
}

/// `preserveQuotes` and `minConfidence` on a unit's fate: quotes the summary left out are
/// appended; a summary whose confidence is below `minConfidence` is not used.
fn judge(fate: Fate, original: &str, options: &CompressOptions) -> Fate {
    let Fate::Replace { body, action } = fate else {
        return fate;
    };
    let body = if options.preserve_quotes {
        quotes::keep(body, original)
    } else {
        body
    };
    let c = if options.min_confidence > 0.0 {
        confidence(&body, original)
    } else {
        1.0
    };
    if c < options.min_confidence {
        return Fate::Keep(format!(
            "confidence {c:.2} below minConfidence {}",
            options.min_confidence
        ));
    }
    Fate::Replace { body, action }
}

/// The confidence of a summary (`minConfidence`): the share of the original's distinct key
/// tokens it still contains, 1 when the original has none.
pub fn confidence(summary: &str, original: &str) -> f64 {
    let mut all: Vec<String> = keys::extract(original)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    all.sort();
    all.dedup();
    if all.is_empty() {
        return 1.0;
    }
    let kept = all
        .iter()
        .filter(|k| keys::contains_token(summary, k))
        .count();
    kept as f64 / all.len() as f64
}

/// The argument object of a condensed tool call.
fn condensed_args(id: &str) -> String {
    format!("{{\"_condensed\":\"[call#{id}]\"}}")
}

/// Condenses the arguments of a message's tool calls (OpenAI `tool_calls[].function.arguments`,
/// Anthropic `tool_use.input`) to a reference to `verbatim`, where that is shorter; ids, names
/// and the call/result pairing stay. Whether anything changed.
fn condense_calls(msg: &mut Value, id: &str, tok: &Tokens<'_>) -> bool {
    let new_args = condensed_args(id);
    let new_tokens = tok.count(&new_args);
    let mut changed = false;
    if let Some(Value::Array(calls)) = msg.get_mut("tool_calls") {
        for call in calls {
            if let Some(Value::String(args)) = call
                .get_mut("function")
                .and_then(|f| f.get_mut("arguments"))
            {
                if new_tokens < tok.count(args) {
                    *args = new_args.clone();
                    changed = true;
                }
            }
        }
    }
    if let Some(Value::Array(blocks)) = msg.get_mut("content") {
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            let Some(input) = block.get_mut("input") else {
                continue;
            };
            if new_tokens < tok.count(&input.to_string()) {
                let mut obj = serde_json::Map::new();
                obj.insert("_condensed".into(), Value::String(format!("[call#{id}]")));
                *input = Value::Object(obj);
                changed = true;
            }
        }
    }
    changed
}

/// The messages `[start, end)` the budget loop folds: the oldest ones after the leading
/// preserved-role messages, ending at the largest valid cut at most `start + want`. A cut is
/// valid when the `user` summary that replaces the run keeps the provider's rules: OpenAI —
/// the next message is not a tool result (its call would be gone); Anthropic — the next
/// message is an assistant message and the run ends with a user message (alternation, and
/// every tool result stays with its tool use). The newest message is folded only when `want`
/// is `usize::MAX`; a preserved-role message never is.
fn fold_range(
    views: &[crate::message::MessageView<'_>],
    options: &CompressOptions,
    format: Format,
    want: usize,
) -> std::ops::Range<usize> {
    let preserved_role = |i: usize| {
        options
            .preserve_roles
            .iter()
            .any(|r| r == views[i].role.as_ref())
    };
    let start = (0..views.len())
        .find(|&i| !preserved_role(i))
        .unwrap_or(views.len());
    if want == 0 || views.len() < 2 {
        return start..start;
    }
    // OpenAI's rules only where the shape is unmistakably OpenAI's; otherwise cuts that keep
    // both providers' rules.
    let openai_only = format == Format::OpenAi
        && views
            .iter()
            .any(|v| v.role() == Some(Role::Tool) || !v.tool_calls().is_empty());
    let mut best = start;
    // `usize::MAX`: everything may go, the newest message too (the budget's very last step).
    let end = if want == usize::MAX {
        views.len() + 1
    } else {
        views.len()
    };
    for c in start + 1..end {
        if c - start > want || preserved_role(c - 1) {
            break;
        }
        let ok = if c == views.len() {
            true
        } else if openai_only {
            views[c].role() != Some(Role::Tool)
        } else {
            views[c].role() == Some(Role::Assistant) && views[c - 1].role() == Some(Role::User)
        };
        if ok {
            best = c;
        }
    }
    start..best
}

/// The texts of a message that sentence relevance looks at: its string content, or its
/// blocks' `text` and string `content` (tool results).
fn content_texts(value: &Value) -> Vec<&str> {
    let mut texts: Vec<&str> = Vec::new();
    match value.get("content") {
        Some(Value::String(s)) => texts.push(s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if let Some(Value::String(t)) = b.get("text") {
                    texts.push(t);
                } else if let Some(Value::String(t)) = b.get("content") {
                    texts.push(t);
                }
            }
        }
        _ => {}
    }
    texts
}

/// Each message's relevance to the query, for the order in which a fold lists the key tokens
/// of the messages it replaces (the most relevant first): the share of the query's terms the
/// message's text contains (tool calls included), plus, with an embedder, the largest cosine
/// of one of its sentences with the query. All 0 without a query.
fn message_relevance(values: &[Value], terms: &Query) -> Vec<f64> {
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

/// The query of a call: its terms, and with an embedder the cosine of the query with every
/// unique sentence of the messages' texts (string contents, text blocks, string tool results),
/// embedded in one batch.
fn build_query(
    raws: &[&RawValue],
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
    let mut unique: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for (i, raw) in raws.iter().enumerate() {
        let value: Value = serde_json::from_str(raw.get())
            .map_err(|e| Error::json(join_index("messages", i), &e))?;
        let texts = content_texts(&value);
        for t in texts {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The text [`compress_json_inner`] writes, assembled from [`compress_parts`] as the JS
    /// entry assembles it (byte spans here, UTF-16 spans there).
    fn assemble(json: &str, p: &CompressParts) -> (String, String) {
        let mut fresh = p.fresh.iter();
        let messages: Vec<&str> = p
            .messages
            .iter()
            .map(|m| match m {
                Some(i) => &json[p.spans[*i].clone()],
                None => fresh.next().map_or("", String::as_str),
            })
            .collect();
        let verbatim: Vec<String> = p
            .verbatim
            .iter()
            .map(|(id, originals)| {
                let texts: Vec<&str> = originals
                    .iter()
                    .map(|&i| &json[p.spans[i].clone()])
                    .collect();
                format!("{}:[{}]", Value::String(id.clone()), texts.join(","))
            })
            .collect();
        (
            format!("[{}]", messages.join(",")),
            format!("{{{}}}", verbatim.join(",")),
        )
    }

    #[test]
    fn parts_assemble_to_the_written_text() {
        let sets = [
            include_str!("../../tests/fixtures/sharegpt_sample.jsonl"),
            include_str!("../../tests/fixtures/tool_sessions_openai_sample.jsonl"),
            include_str!("../../tests/fixtures/tool_sessions_anthropic_sample.jsonl"),
        ];
        let budget = CompressOptions::from_json(r#"{"targetRatio": 0.3, "query": "order id"}"#)
            .expect("options");
        let ctx = CompressContext::default();
        let mut checked = 0;
        for line in sets
            .iter()
            .flat_map(|s| s.lines())
            .filter(|l| !l.trim().is_empty())
        {
            let record: Value = serde_json::from_str(line).expect("fixture line");
            let messages = &record["messages"];
            let compact = messages.to_string();
            let pretty = serde_json::to_string_pretty(messages).expect("pretty");
            for (json, options) in [
                (compact.clone(), CompressOptions::default()),
                (pretty, CompressOptions::default()),
                (compact, budget.clone()),
            ] {
                {
                    let written =
                        compress_json_inner(&json, &options, &ctx, None).expect("written");
                    let Compressed::Parts(parts) =
                        compress_parts(&json, &options, &ctx).expect("parts")
                    else {
                        panic!("a bare array gives parts");
                    };
                    assert_eq!(assemble(&json, &parts), (written.json, written.verbatim));
                    assert_eq!(parts.stats, written.stats);
                    checked += 1;
                }
            }
        }
        assert!(checked >= 12, "{checked}");
        // A request body is written in the core.
        let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        assert!(matches!(
            compress_parts(body, &CompressOptions::default(), &ctx),
            Ok(Compressed::Written(_))
        ));
    }
}
