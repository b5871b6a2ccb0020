//! What `compress` returns: the output types, and the plan every entry point turns into them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::method::{SummarizerStats, SummaryRequest};

/// What `compress` did, in counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressStats {
    /// Messages in the input.
    pub messages_before: usize,
    /// Messages in the output.
    pub messages_after: usize,
    /// Tokens of the messages' text before (see [`message_text`](super::message_text)), in
    /// the call's counter (the estimator unless `tokenCounter` or a caller's counter says
    /// otherwise).
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
    /// How far the budget escalated (0: the default pass was enough; 1–6: the stages that
    /// keep less verbatim, in order; 7: truncation; 8: everything folded).
    pub escalation: usize,
    /// With `method: "hierarchical"` under a budget: the level every compressible text was
    /// summarised at (0: 50%, 1: 25%, 2: 12.5% of its size); absent when the default pass
    /// was used or the budget needed more than level 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// With `method` `abstractive` or `hybrid` and summaries: what became of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<SummarizerStats>,
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
    /// Things the caller should know (a cache ignored and rebuilt, a prefix re-compressed, a
    /// method that fell back, a summariser that failed).
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

/// The result of [`compress`](super::compress).
#[derive(Clone, Debug, PartialEq)]
pub struct CompressResult {
    /// The compressed messages, in the input's shape.
    pub messages: Vec<Value>,
    /// The originals of every rewritten message, by the id in its marker.
    pub verbatim: BTreeMap<String, Vec<Value>>,
    /// Counts.
    pub stats: CompressStats,
    /// One record per decision, when `trace` was asked for.
    pub trace: Option<Vec<Decision>>,
    /// With `method` `abstractive` or `hybrid`: the texts a summariser may condense (phase 1
    /// of the protocol, see [`method`](super::method)); empty otherwise.
    pub requests: Vec<SummaryRequest>,
}

/// The result of [`compress_json`](super::compress_json): the same as JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressJsonResult {
    /// The compressed document (array or request body), untouched messages byte-identical.
    pub json: String,
    /// `{id: [original message JSON, …]}` as JSON text, originals byte-identical.
    pub verbatim: String,
    /// Counts.
    pub stats: CompressStats,
    /// Decisions, when asked for.
    pub trace: Option<Vec<Decision>>,
    /// The summariser's requests (see [`CompressResult::requests`]).
    pub requests: Vec<SummaryRequest>,
}

/// One output message of a plan: an input message kept as it is, or a new one.
#[derive(Clone, Debug)]
pub(crate) enum Out {
    /// The input message at this index, unchanged.
    Keep(usize),
    /// A new message's JSON text.
    New(String),
}

/// A plan: the output messages, the originals of each rewritten one (by input index), counts,
/// decisions and summary requests. Every entry point turns it into its own output.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    pub messages: Vec<Out>,
    pub verbatim: BTreeMap<String, Vec<usize>>,
    pub stats: CompressStats,
    pub trace: Option<Vec<Decision>>,
    pub requests: Vec<SummaryRequest>,
}
