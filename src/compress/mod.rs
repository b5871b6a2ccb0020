//! `compress`: deterministic conversation compression (docs/design.md, "The compress pipeline").
//!
//! One entry point per kind of input — [`compress`] on values, [`compress_json`] on JSON text
//! (an array of messages or a provider request body), [`compress_parts`] for hosts that hold the
//! input already — each with a [`CompressContext`] (an embedder, a token counter, a summariser,
//! the incremental cache, all optional); [`uncompress`](fn@uncompress) undoes any of them.
//!
//! The pass, as stages, on both providers' shapes:
//!
//! 1. **Parse** (`parse.rs`): the messages read once; their compressible texts ("units": a
//!    message's string content, a text block, a tool result's string content).
//! 2. **Classify** (`classify.rs`), in this order (docs/design.md, "The compress pipeline"):
//!    preserved roles, the recency window, tool calls, short content, already-compressed content, importance (opt-in,
//!    `importance.rs`), duplicates (`dedup.rs`), superseded by a later correction (opt-in,
//!    `contradiction.rs`), code fences (code kept, prose around it summarised), hard verbatim
//!    content (code, JSON, SQL, diffs, stack traces, secrets, tables), caller patterns.
//! 3. **Fate** (`fate.rs`): each unit kept, deduplicated (`[dup#id: same as msg_7 — 1234
//!    chars]`), or summarised: the extractive summary for prose (a user's statements of fact
//!    about themselves always kept), and for tool output a rendering that is lossless by
//!    default — JSON (and Python literals) without their syntax but with every value, plain
//!    output with every key token, line-structured output as it is. `lossyToolOutput` and a
//!    token budget allow lossy renderings (numeric series summarised, lines by status and
//!    paths).
//! 4. **Merge** (`merge.rs`): consecutive prose summaries of one role become one.
//! 5. **Fold** (`fold.rs`, budget only): the oldest messages folded into one `user` summary
//!    that lists what the next turn most likely needs (`[summary#1c9e04aa 5 messages folded |
//!    83214 94016]`).
//! 6. **Render** (`render.rs`): a summary replaces its original only when it is shorter in
//!    tokens (and, with `minConfidence`, keeps enough of its key tokens; with `preserveQuotes`,
//!    its quotes); the plan's messages, `verbatim`, stats and trace.
//! 7. **Relevance** (`relevance.rs`): with `query`, sentences score by its terms (or, with an
//!    embedder, by cosine), and folds list the most relevant messages' keys first.
//!
//! `run.rs` drives them; `budget.rs` chooses how hard to compress under `tokenBudget` /
//! `targetRatio` from measured per-message costs and renders once; `prefix.rs` is the
//! prefix-stable mode. Every rewritten message carries an id in its marker
//! (`[summary#3f9a0c21: …]`, see `ids.rs`) and its originals go into `verbatim`, so
//! [`uncompress()`] restores the input byte for byte; messages that are kept are returned as
//! they came.
//!
//! Token counting (`counter.rs`): the estimator by default, the embedder's tokenizer
//! (`tokenCounter: "model"`) or a caller's [`TokenCounter`]; one counter for the budget, the
//! size guard and every stat. Methods (`method.rs`): extractive, hierarchical, and the
//! summariser protocol of abstractive and hybrid. The incremental cache (`cache.rs`),
//! [`prepare_context`] (`prepare.rs`).

mod api;
mod budget;
pub mod cache;
mod classify;
mod contradiction;
mod counter;
mod dedup;
mod env;
mod fate;
mod fold;
mod ids;
mod importance;
mod json;
mod merge;
pub mod method;
mod options;
mod output;
mod parse;
mod prefix;
pub mod prepare;
mod pylit;
mod quotes;
mod relevance;
mod render;
mod run;
mod search;
mod summarize;
mod uncompress;
mod values;

pub use api::{
    compress, compress_json, compress_parts, CompressContext, CompressParts, Compressed,
};
pub use cache::CompressCache;
#[cfg(feature = "embed")]
pub use counter::ModelCounter;
pub use counter::{bad_count, Estimator, MaybeSendSync, TokenCounter, TokenCounterKind};
pub use method::{CompressMethod, Summarizer, SummarizerStats, SummaryRequest};
pub use options::{CompressOptions, PREFIX_BLOCK};
pub use output::{CompressJsonResult, CompressResult, CompressStats, Decision};
pub use parse::message_text;
pub use prepare::{
    prepare_context, prepare_context_json, PrepareContextOptions, PrepareContextResult,
};
pub use uncompress::{uncompress, uncompress_json};

/// The confidence of a summary (`minConfidence`): the share of the original's distinct key
/// tokens it still contains, 1 when the original has none.
///
/// ```
/// use condense::compress::confidence;
/// assert_eq!(confidence("see src/app.ts", "the bug is in src/app.ts at line 42"), 0.5);
/// ```
pub fn confidence(summary: &str, original: &str) -> f64 {
    fate::confidence(summary, original)
}

#[cfg(test)]
mod tests;
