//! The entry points: one per kind of input — values ([`compress`]), JSON text
//! ([`compress_json`]) and, for hosts that hold the input already, its parts
//! ([`compress_parts`]) — each with the same [`CompressContext`].

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use super::cache::CompressCache;
use super::counter::TokenCounter;
use super::method::Summarizer;
use super::options::CompressOptions;
use super::output::{CompressJsonResult, CompressResult, CompressStats, Decision, Out, Plan};
use super::parse::parse_values;
use super::run;
use crate::embed::Embedder;
use crate::error::{Error, ErrorKind};
use crate::message::RawDocument;

/// What a call may use besides its options: an embedder (query relevance by cosine, and its
/// tokenizer for `tokenCounter: "model"`), a caller's token counter, a summariser (`abstractive`,
/// `hybrid`), and the incremental cache (see [`cache`](super::cache)). The default is none of
/// them.
///
/// Every combination is allowed except a caller's counter with `tokenCounter: "model"`
/// (`invalid_options`); see [`compress`] for what each combination does.
///
/// ```
/// use condense::compress::{compress, CompressCache, CompressContext, CompressOptions};
/// let messages = vec![serde_json::json!({"role": "user", "content": "hello"})];
/// let mut cache = CompressCache::new();
/// let ctx = CompressContext::new().with_cache(&mut cache);
/// let out = compress(&messages, &CompressOptions::default(), ctx)?;
/// assert_eq!(out.messages, messages);
/// assert_eq!(out.stats.cache_misses, Some(0));
/// # Ok::<(), condense::Error>(())
/// ```
#[derive(Default)]
pub struct CompressContext<'a> {
    /// The embedder for `options.query` (cosine relevance) and `tokenCounter: "model"`.
    pub embedder: Option<&'a Embedder>,
    /// A caller's token counter: budgets, `minTokens` and stats in its tokens (memoised per
    /// call). Giving one together with `tokenCounter: "model"` is an error.
    pub counter: Option<&'a dyn TokenCounter>,
    /// The model's own counter for `tokenCounter: "model"`, where the embedder runs elsewhere
    /// and has no tokenizer here (the npm package's engine module); natively the embedder's
    /// tokenizer serves.
    pub model_counter: Option<&'a dyn TokenCounter>,
    /// The summariser of `abstractive` and `hybrid` (both phases run within the call).
    pub summarizer: Option<&'a dyn Summarizer>,
    /// The incremental cache, read and updated in place.
    pub cache: Option<&'a mut CompressCache>,
}

impl<'a> CompressContext<'a> {
    /// No embedder, counter, summariser or cache.
    pub fn new() -> CompressContext<'a> {
        CompressContext::default()
    }

    /// With an embedder (`None`: without).
    pub fn with_embedder(self, embedder: impl Into<Option<&'a Embedder>>) -> CompressContext<'a> {
        CompressContext {
            embedder: embedder.into(),
            ..self
        }
    }

    /// With a caller's token counter.
    pub fn with_counter(self, counter: &'a dyn TokenCounter) -> CompressContext<'a> {
        CompressContext {
            counter: Some(counter),
            ..self
        }
    }

    /// With a summariser.
    pub fn with_summarizer(self, summarizer: &'a dyn Summarizer) -> CompressContext<'a> {
        CompressContext {
            summarizer: Some(summarizer),
            ..self
        }
    }

    /// With the incremental cache (`None`: without).
    pub fn with_cache(
        self,
        cache: impl Into<Option<&'a mut CompressCache>>,
    ) -> CompressContext<'a> {
        CompressContext {
            cache: cache.into(),
            ..self
        }
    }
}

impl std::fmt::Debug for CompressContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressContext")
            .field("embedder", &self.embedder.map(Embedder::kind))
            .field("counter", &self.counter.is_some())
            .field("summarizer", &self.summarizer.is_some())
            .field("cache", &self.cache.as_ref().map(|c| c.len()))
            .finish()
    }
}

/// Compresses an array of messages (either provider's shape, detected per message or forced by
/// `options.format`); see the [module docs](super) for the pipeline.
///
/// What the context adds:
/// - an **embedder**: with `options.query`, a sentence's relevance is the cosine between the
///   query's vector and its own (every unique sentence embedded once per call, in one batch);
///   without one relevance is query-term overlap. `tokenCounter: "model"` counts with its
///   tokenizer;
/// - a **counter**: budgets, `minTokens`, the size guard and every stat in its tokens;
/// - a **summariser**: with `method` `abstractive` or `hybrid`, both phases of the protocol
///   run within the call (without one, `result.requests` lists what a summariser would be
///   asked, for a host that runs the phases itself);
/// - a **cache**: the same result, byte for byte, with the work of earlier calls reused
///   (`stats.cacheHits`, `stats.cacheMisses`); it is updated in place and bounded to
///   `options.cacheLimit` entries.
///
/// The bytes of `message`'s JSON when they are over
/// [`MAX_MESSAGE_BYTES`](crate::message::MAX_MESSAGE_BYTES) (counted as it is written, up to
/// just past the limit), else `None`.
fn over_the_size_limit(message: &Value) -> Option<usize> {
    /// Counts what is written; refuses past the limit, so a huge message is not written whole.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > crate::message::MAX_MESSAGE_BYTES {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, message)
        .is_err()
        .then_some(count.0)
}

/// ```
/// use condense::compress::{compress, uncompress, CompressContext, CompressOptions};
/// let messages: Vec<serde_json::Value> = (0..8)
///     .map(|i| serde_json::json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
///         "content": format!("Message {i}: the deploy of service_{i} failed after 30 seconds \
///             because parse_config returned an empty map. We retried it twice. \
///             It worked on the third attempt, see src/worker.rs:88 for the retry loop.")}))
///     .collect();
/// let out = compress(&messages, &CompressOptions::default(), CompressContext::new())?;
/// assert!(out.stats.tokens_after < out.stats.tokens_before);
/// assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
/// # Ok::<(), condense::Error>(())
/// ```
///
/// # Errors
/// `invalid_message` / `invalid_json` / `mixed_format` for messages that are not either
/// provider's (with the path), `invalid_options` for options that do not go together (a
/// caller's counter with `tokenCounter: "model"`, `"model"` without an embedder that has a
/// tokenizer, an invalid `preservePatterns` regex); `too_large` for a message whose JSON is
/// over [`MAX_MESSAGE_BYTES`](crate::message::MAX_MESSAGE_BYTES), as the text entry points have
/// it; a counter's, summariser's or embedder's own error.
pub fn compress(
    messages: &[Value],
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<CompressResult, Error> {
    for (i, m) in messages.iter().enumerate() {
        if let Some(len) = over_the_size_limit(m) {
            return Err(crate::message::message_too_large(i, len));
        }
    }
    let plan = run::plan(None, messages, options, ctx)?;
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
    Ok(CompressResult {
        messages: out,
        verbatim,
        stats: plan.stats,
        trace: plan.trace,
        requests: plan.requests,
    })
}

/// Compresses a JSON document: an array of messages or a provider request body with a
/// `messages` array (every other member copied as it is). Messages kept are copied byte for
/// byte; `verbatim` holds the originals' exact input bytes. As [`compress`] otherwise.
///
/// # Errors
/// As [`compress`]; `invalid_json` / `invalid_input` for a document that is not JSON or holds
/// no messages.
pub fn compress_json(
    json: &str,
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<CompressJsonResult, Error> {
    let doc = RawDocument::parse(json)?;
    let plan = plan_raws(&doc.messages, options, ctx)?;
    Ok(write(json, &doc, plan))
}

/// The plan of messages given as raw JSON.
fn plan_raws(
    raws: &[&RawValue],
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<Plan, Error> {
    let values = parse_values(raws)?;
    run::plan(Some(raws), &values, options, ctx)
}

/// The output text of a plan over `doc`.
fn write(json: &str, doc: &RawDocument<'_>, plan: Plan) -> CompressJsonResult {
    let text = doc.write_messages(
        json.len(),
        plan.messages.iter().map(|p| match p {
            Out::Keep(i) => doc.messages[*i].get(),
            Out::New(t) => t.as_str(),
        }),
    );
    let verbatim = verbatim_text(
        plan.verbatim
            .iter()
            .map(|(id, v)| (id.as_str(), v.as_slice())),
        |i| doc.messages[i].get(),
    );
    CompressJsonResult {
        json: text,
        verbatim,
        stats: plan.stats,
        trace: plan.trace,
        requests: plan.requests,
    }
}

/// `verbatim` as compress_json writes it: `{"id":[original, …],…}`, the ids as JSON strings,
/// each original the input message's text (`text_of(index)`).
fn verbatim_text<'a, 'b>(
    verbatim: impl Iterator<Item = (&'b str, &'b [usize])>,
    text_of: impl Fn(usize) -> &'a str,
) -> String {
    let mut out = String::from("{");
    for (n, (id, originals)) in verbatim.enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(id.to_string()).to_string());
        out.push_str(":[");
        for (k, &i) in originals.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            out.push_str(text_of(i));
        }
        out.push(']');
    }
    out.push('}');
    out
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
    /// The summariser's requests (see [`CompressResult::requests`]).
    pub requests: Vec<super::method::SummaryRequest>,
}

impl CompressParts {
    /// The parts joined into [`compress_json`]'s result for the same input: `json` is the text
    /// the parts were made from (a span outside it reads as `null`).
    pub fn into_written(self, json: &str) -> CompressJsonResult {
        let slice = |i: usize| {
            self.spans
                .get(i)
                .and_then(|r| json.get(r.clone()))
                .unwrap_or("null")
        };
        let mut fresh = self.fresh.iter();
        let mut text = String::with_capacity(json.len());
        text.push('[');
        for (n, m) in self.messages.iter().enumerate() {
            if n > 0 {
                text.push(',');
            }
            match m {
                Some(i) => text.push_str(slice(*i)),
                None => text.push_str(fresh.next().map_or("null", String::as_str)),
            }
        }
        text.push(']');
        let verbatim = verbatim_text(
            self.verbatim
                .iter()
                .map(|(id, v)| (id.as_str(), v.as_slice())),
            slice,
        );
        CompressJsonResult {
            json: text,
            verbatim,
            stats: self.stats,
            trace: self.trace,
            requests: self.requests,
        }
    }
}

/// The result of [`compress_parts`]: parts for a bare array, the written text for a request
/// body.
#[derive(Clone, Debug)]
pub enum Compressed {
    /// A bare array's result as parts of its input.
    Parts(CompressParts),
    /// A request body's result, written.
    Written(CompressJsonResult),
}

/// [`compress_json`] as parts when `json` is a bare array: the same output, for a host that
/// already holds the input (the npm package's JS entry, a proxy) and can build the result from
/// it instead of copying the whole text back. [`CompressParts::messages`] and
/// [`CompressParts::verbatim`] joined as [`compress_json`] joins them (`[` `,` `]`, and
/// `{"id":[…],…}` with the id as a JSON string) give its text; a test checks it.
///
/// # Errors
/// As [`compress_json`].
pub fn compress_parts(
    json: &str,
    options: &CompressOptions,
    ctx: CompressContext<'_>,
) -> Result<Compressed, Error> {
    let doc = RawDocument::parse(json)?;
    let plan = plan_raws(&doc.messages, options, ctx)?;
    if doc.is_body() {
        return Ok(Compressed::Written(write(json, &doc, plan)));
    }
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
        requests: plan.requests,
    }))
}
