//! `applyWatermark`: prune tool history before a checkpoint (docs/design.md, "Watermark rules").
//!
//! An agent calls a checkpoint tool (`compress_to_checkpoint`, `deactivate_augments`, or
//! `mcp__<server>__` + one of those) when it switches task. From then on, every request is
//! sent with the tool traffic before that call — `tool_use`/`tool_result` blocks (Anthropic),
//! `tool_calls` and `tool` messages (OpenAI) — removed, while every text the user and the
//! assistant wrote stays. The call's id is the *watermark*; the caller keeps it in
//! [`WatermarkState`] between requests (the API is stateless).
//!
//! What the output guarantees, whatever the options:
//! - the messages from the watermark message on are byte-identical to the input;
//! - every text block and string content of the prefix survives, in order (a merge of two
//!   same-role messages concatenates their blocks and is counted in the stats);
//! - the output passes [`validate`](crate::message::validate) whenever the input did: no
//!   orphan call or result, tool results first in their message, roles alternating where the
//!   provider requires it (emptied messages are dropped and the runs this leaves are merged;
//!   a run against the untouchable watermark message is avoided by keeping the last pair);
//! - the current tool turn's thinking is never touched;
//! - the watermark only moves forward, to the newest checkpoint call after it;
//! - running it again on its own output changes nothing.
//!
//! ```
//! use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};
//! let body = r#"[
//!  {"role":"user","content":"look at the logs"},
//!  {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read_logs","input":{}}]},
//!  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"…100 kB…"},
//!                           {"type":"text","text":"new task: fix the build"}]},
//!  {"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"compress_to_checkpoint","input":{}}]},
//!  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}
//! ]"#;
//! let out = apply_watermark_json(body, &WatermarkState::default(), &WatermarkOptions::default())?;
//! assert_eq!(out.state.watermark.as_deref(), Some("t2"));
//! assert_eq!(out.stats.blocks_removed, 2);
//! assert!(!out.json.contains("read_logs") && out.json.contains("new task: fix the build"));
//! # Ok::<(), condense::Error>(())
//! ```

mod anthropic;
// Used by src/wasm only, which the engine module (feature `engine-module`) leaves out.
#[cfg_attr(feature = "engine-module", allow(dead_code))]
pub(crate) mod layout;
mod openai;
mod options;
mod plan;
#[cfg_attr(feature = "engine-module", allow(dead_code))]
pub(crate) mod utf16;

pub use options::{WatermarkOptions, WatermarkState, DEFAULT_CHECKPOINT_TOOLS};
pub use plan::{plan_watermark, Planned, WatermarkPlan};

use plan::plan_views;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{Error, ErrorKind};
use crate::message::{raw_texts, scan_messages, MessageView, RawDocument};

/// Counts of what [`apply_watermark`] did. `chars*` and `tokens*` measure the JSON text of the
/// messages (each message's text as given, or compact for rewritten ones); tokens are
/// [`estimate_tokens`](crate::text::estimate_tokens) estimates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatermarkStats {
    /// Index of the watermark message in the input, when a watermark applies.
    pub watermark_index: Option<usize>,
    /// Whether this call moved the watermark to a newer checkpoint.
    pub advanced: bool,
    /// Tool calls, tool results and thinking blocks removed (the sum of the next three).
    pub blocks_removed: usize,
    /// Tool calls removed (`tool_use`/`server_tool_use` blocks, OpenAI `tool_calls` entries).
    pub tool_calls_removed: usize,
    /// Tool results removed (`tool_result`/`*_tool_result` blocks, OpenAI `tool` messages).
    pub tool_results_removed: usize,
    /// Thinking and redacted thinking blocks removed.
    pub thinking_removed: usize,
    /// Tool results whose content was replaced by a placeholder (`placeholder: true`).
    pub placeholders: usize,
    /// Tool call inputs replaced by `{}` (`clearToolInputs: true`).
    pub inputs_cleared: usize,
    /// Tool pairs kept whole before the watermark (`keepLastToolResults`, `excludeTools`,
    /// the pair that keeps roles alternating, the current turn's opening call).
    pub pairs_kept: usize,
    /// `cache_control` markers moved from a removed block to a kept one.
    pub cache_control_moved: usize,
    /// Messages in the input.
    pub messages_before: usize,
    /// Messages in the output.
    pub messages_after: usize,
    /// Messages removed: emptied by the pruning, or OpenAI `tool` messages.
    pub messages_dropped: usize,
    /// Messages merged into the message before them (same-role runs).
    pub messages_merged: usize,
    /// Characters (Unicode scalar values) of the messages' JSON before.
    pub chars_before: usize,
    /// Characters of the messages' JSON after.
    pub chars_after: usize,
    /// Estimated tokens before.
    pub tokens_before: usize,
    /// Estimated tokens after.
    pub tokens_after: usize,
}

/// Something the caller should know that did not stop the call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// A stable code: `watermark_not_found`, `merge_field_conflict` or
    /// `cache_control_dropped`.
    pub code: String,
    /// What happened, in words.
    pub message: String,
    /// The JSON path concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Every warning code.
pub const WARNING_CODES: [&str; 3] = [
    "watermark_not_found",
    "merge_field_conflict",
    "cache_control_dropped",
];

/// The result of [`apply_watermark`].
#[derive(Clone, Debug, PartialEq)]
pub struct WatermarkResult {
    /// The pruned messages.
    pub messages: Vec<Value>,
    /// The state to pass to the next call.
    pub state: WatermarkState,
    /// What was done.
    pub stats: WatermarkStats,
    /// What the caller should know.
    pub warnings: Vec<Warning>,
}

/// The result of [`apply_watermark_json`].
#[derive(Clone, Debug, PartialEq)]
pub struct WatermarkJsonResult {
    /// The pruned document, in the input's shape (array or request body). Untouched messages
    /// and body members are their input bytes; the separators between them are compact.
    pub json: String,
    /// The state to pass to the next call.
    pub state: WatermarkState,
    /// What was done.
    pub stats: WatermarkStats,
    /// What the caller should know.
    pub warnings: Vec<Warning>,
}

/// Applies the watermark to an array of messages.
///
/// Messages left alone are cloned; the others are rewritten. See the module docs for the
/// guarantees, [`WatermarkOptions`] for the knobs.
pub fn apply_watermark(
    messages: &[Value],
    state: &WatermarkState,
    options: &WatermarkOptions,
) -> Result<WatermarkResult, Error> {
    let texts = raw_texts(messages)?;
    let raws: Vec<&RawValue> = texts.iter().map(|b| b.as_ref()).collect();
    let plan = plan_watermark(&raws, state, options)?;
    let out = plan
        .messages
        .into_iter()
        .map(|p| match p {
            Planned::Keep(i) => Ok(messages[i].clone()),
            Planned::New { text } => serde_json::from_str(&text)
                .map_err(|e| Error::new(ErrorKind::Internal, "messages", e.to_string())),
        })
        .collect::<Result<_, _>>()?;
    Ok(WatermarkResult {
        messages: out,
        state: plan.state,
        stats: plan.stats,
        warnings: plan.warnings,
    })
}

/// Applies the watermark to a JSON document: an array of messages, or a provider request
/// body with a `messages` member (every other member is copied verbatim).
///
/// This is the fast path for proxies: messages the call leaves alone are never parsed into
/// values, only scanned, and are copied byte for byte.
pub fn apply_watermark_json(
    json: &str,
    state: &WatermarkState,
    options: &WatermarkOptions,
) -> Result<WatermarkJsonResult, Error> {
    let (plan, text) = match plan_json(json, state, options)? {
        (plan, Parsed::Scanned(texts)) => {
            let text = write_array(&texts, &plan, json.len());
            (plan, text)
        }
        (plan, Parsed::Document(doc)) => {
            let text = write_plan(&doc, &plan, json.len());
            (plan, text)
        }
    };
    Ok(WatermarkJsonResult {
        json: text,
        state: plan.state,
        stats: plan.stats,
        warnings: plan.warnings,
    })
}

/// How [`plan_json`] read the document.
pub(crate) enum Parsed<'a> {
    /// A bare array read in one pass ([`scan_messages`]): each message's text.
    Scanned(Vec<&'a str>),
    /// Anything else, read by serde.
    Document(RawDocument<'a>),
}

/// Plans the watermark over JSON text: a bare array of messages is read in one pass when the
/// scanner can; otherwise (and for every error) serde reads it, as it always did.
pub(crate) fn plan_json<'a>(
    json: &'a str,
    state: &WatermarkState,
    options: &WatermarkOptions,
) -> Result<(WatermarkPlan, Parsed<'a>), Error> {
    if let Some((texts, views)) = scan_messages(json) {
        if views.iter().all(MessageView::is_sound) {
            let plan = plan_views(&texts, views, state, options)?;
            return Ok((plan, Parsed::Scanned(texts)));
        }
    }
    let doc = RawDocument::parse(json)?;
    let plan = plan_watermark(&doc.messages, state, options)?;
    Ok((plan, Parsed::Document(doc)))
}

/// Writes a planned bare array (what [`RawDocument::write_messages`] writes for one).
fn write_array(texts: &[&str], plan: &WatermarkPlan, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    out.push('[');
    for (n, p) in plan.messages.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(match p {
            Planned::Keep(i) => texts[*i],
            Planned::New { text } => text.as_str(),
        });
    }
    out.push(']');
    out
}

/// Writes a planned document: kept messages as their input bytes, rewritten ones as planned.
pub(crate) fn write_plan(doc: &RawDocument<'_>, plan: &WatermarkPlan, capacity: usize) -> String {
    doc.write_messages(
        capacity,
        plan.messages.iter().map(|p| match p {
            Planned::Keep(i) => doc.messages[*i].get(),
            Planned::New { text } => text.as_str(),
        }),
    )
}
