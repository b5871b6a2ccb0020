//! `method` (docs/design.md, "The compress pipeline"): how compressible texts are summarised, and
//! the summariser protocol of the LLM-backed methods.
//!
//! - `extractive` (the default): the deterministic sentence selection.
//! - `hierarchical`: under a budget, every compressible text is summarised at the shallowest
//!   of the levels 50% → 25% → 12.5% of its size that makes the conversation fit (the
//!   extractive path instead searches the largest share that fits, continuously); below 12.5%
//!   the budget loop's later stages (smaller recency window, folding, truncation) continue as
//!   for `extractive`. `stats.level` is the level used (0, 1 or 2). Without a budget it is the
//!   default pass.
//! - `abstractive`: a [`Summarizer`] (an LLM) rewrites each text the extractive pass would
//!   summarise, from the original text.
//! - `hybrid`: two stages, extract then abstract: the summariser rewrites the extractive
//!   summary of each such text.
//!
//! A summariser's text is used only when it is non-empty and shorter, in the call's tokens,
//! than the original it replaces; otherwise (and when the summariser fails) the deterministic
//! summary stays. Without a summariser `abstractive` and `hybrid` are `extractive`, with a
//! warning in `stats.warnings`.
//!
//! Because wasm is synchronous and a JS summariser is async, the protocol has two phases:
//! 1. [`compress`](super::compress) runs the pipeline and returns (in
//!    [`CompressResult::requests`](super::CompressResult::requests)) one [`SummaryRequest`] per text it summarised: an id (a hash of the original text), the
//!    text to give the summariser, the deterministic summary's size as a target;
//! 2. the caller obtains the summaries (in JS with a concurrency limit) and compresses with
//!    `options.summaries = {id: text}`: the same pipeline, each supplied summary in place of
//!    the deterministic one where accepted. The output is deterministic given the summaries,
//!    keeps the `[summary#id: …]` markers, and `uncompress` restores the input byte for byte.
//!
//! Natively, [`compress`](super::compress) with a [`Summarizer`] in the context runs
//! both phases.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::counter::MaybeSendSync;
use crate::error::Error;

/// `options.method`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CompressMethod {
    /// Deterministic sentence selection (the default).
    #[default]
    Extractive,
    /// A summariser rewrites each original text (extractive without one).
    Abstractive,
    /// A summariser rewrites each extractive summary (extractive without one).
    Hybrid,
    /// The levels 50% → 25% → 12.5% chosen by the budget.
    Hierarchical,
}

impl CompressMethod {
    /// Whether the method asks a summariser.
    pub fn is_abstractive(self) -> bool {
        matches!(self, CompressMethod::Abstractive | CompressMethod::Hybrid)
    }

    /// The option's JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            CompressMethod::Extractive => "extractive",
            CompressMethod::Abstractive => "abstractive",
            CompressMethod::Hybrid => "hybrid",
            CompressMethod::Hierarchical => "hierarchical",
        }
    }
}

/// The fractions of a text's size of the hierarchical levels 0, 1 and 2 (docs/design.md, "The
/// budget ladder").
pub const LEVELS: [f64; 3] = [0.5, 0.25, 0.125];

/// One text the summariser is asked to condense (phase 1 of the protocol).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    /// The key of its summary in `options.summaries` (a hash of the original text).
    pub id: String,
    /// What to condense: the original text (`abstractive`) or its extractive summary
    /// (`hybrid`).
    pub text: String,
    /// The size to aim at: the deterministic summary's tokens (in the call's counter).
    pub target_tokens: usize,
    /// The original's tokens: a summary is accepted only when shorter than this.
    pub original_tokens: usize,
    /// The role of the message (the first message of a merged run).
    pub role: String,
    /// `prose`, `tool_output` (plain-text tool output) or `merged` (a run of messages of one
    /// role, summarised as one).
    pub kind: String,
    /// The input index of the message (the first of a merged run).
    pub index: usize,
    /// The block of an Anthropic message, for a block's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
}

/// What happened to the summariser's summaries (`stats.summarizer`, with `abstractive` or
/// `hybrid` and summaries given).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummarizerStats {
    /// Texts the summariser was asked for (phase 1).
    pub requested: usize,
    /// Summaries used in the output.
    pub accepted: usize,
    /// Summaries given for a summarised text but not used: empty, or not shorter than the
    /// original.
    pub rejected: usize,
    /// Requests the summariser failed (threw, rejected, returned no string).
    pub failed: usize,
    // Under a budget the final plan can fold or truncate a text that phase 1 asked a summary
    // for: such summaries count in none of the three, so accepted + rejected + failed ≤
    // requested (equal without a budget).
}

/// An LLM (or any other) summariser for native callers of `abstractive` and `hybrid`.
/// Object-safe; `Send + Sync` natively.
pub trait Summarizer: MaybeSendSync {
    /// A summary of `request.text` in about `request.target_tokens` tokens.
    ///
    /// # Errors
    /// Any: the deterministic summary is kept, and the failure is counted in
    /// `stats.summarizer.failed` with a warning.
    fn summarize(&self, request: &SummaryRequest) -> Result<String, Error>;
}

/// The summaries of a call (`options.summaries`): id → text.
pub type Summaries = BTreeMap<String, String>;

/// The id of a summary request for `original` (stable on every host).
pub(crate) fn request_id(original: &str) -> String {
    crate::text::hash::short_id(["summary", original])
}

/// The warning when an LLM-backed method has no summariser.
pub(crate) fn no_summarizer_warning(method: CompressMethod) -> String {
    format!(
        "method \"{}\" without a summarizer: the deterministic extractive summaries are used",
        method.as_str()
    )
}

/// The summariser's part of one message (`abstractive` / `hybrid`): the requests it records
/// and the summaries it uses.
pub(super) struct Abstractive<'o> {
    method: CompressMethod,
    summaries: Option<&'o Summaries>,
    requests: Vec<SummaryRequest>,
    accepted: usize,
    rejected: usize,
}

impl<'o> Abstractive<'o> {
    /// The summariser's part under `options` (inactive unless the method is abstractive or
    /// hybrid).
    pub(super) fn new(options: &'o super::options::CompressOptions) -> Abstractive<'o> {
        Abstractive {
            method: options.method,
            summaries: options.summaries.as_ref(),
            requests: Vec::new(),
            accepted: 0,
            rejected: 0,
        }
    }

    /// Records the request for a text the pass summarises (`original`, summarised as `body`
    /// in `marker`), and returns the marker of the caller's summary of it (`wrap(summary)`)
    /// when there is one that is non-empty and whose marker is shorter than `bound` (the
    /// tokens of what it replaces: the size guard).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take(
        &mut self,
        tok: &super::counter::Tokens<'_>,
        original: &str,
        body: &str,
        marker: &str,
        (index, block, role, kind): (usize, Option<usize>, &str, &str),
        (wrap, bound): (&dyn Fn(&str) -> String, usize),
    ) -> Option<String> {
        if !self.method.is_abstractive() {
            return None;
        }
        let id = request_id(original);
        let original_tokens = tok.count(original);
        let given = self.summaries.map(|m| m.get(&id));
        self.requests.push(SummaryRequest {
            text: if self.method == CompressMethod::Hybrid {
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
        let wrapped = wrap(s);
        if !s.is_empty() && tok.count(&wrapped) < bound {
            self.accepted += 1;
            Some(wrapped)
        } else {
            self.rejected += 1;
            None
        }
    }
}

impl Abstractive<'_> {
    /// The requests recorded, and how many given summaries were accepted and rejected.
    pub(super) fn finish(self) -> (Vec<SummaryRequest>, usize, usize) {
        (self.requests, self.accepted, self.rejected)
    }
}
