//! The watermark planner: decides on structural views, rewrites only what changes.
//!
//! 1. Read every message's [`MessageView`] (no texts are copied).
//! 2. Find the current watermark and the newest checkpoint call after it.
//! 3. Before the watermark message, decide per tool pair: remove (default), placeholder, or
//!    keep whole (`excludeTools`, `keepLastToolResults`, a result at or after the watermark,
//!    the current turn's opening call, the pair that keeps roles alternating).
//! 4. Move `cache_control` markers off removed blocks; parse, rewrite and merge only the
//!    messages that change. Everything else is `Planned::Keep(i)`: the input's own bytes.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::options::{Matchers, WatermarkOptions, WatermarkState};
use super::{Warning, WatermarkStats};
use crate::error::{join_index, Error};
use crate::message::{
    resolve_format, views_from_raws, BlockKind, BlockView, ContentView, Format, MessageView,
    RawObject, Role, Slot,
};
use crate::text::{count_chars, estimate_tokens, measure};

/// One message of the output.
#[derive(Clone, Debug, PartialEq)]
pub enum Planned {
    /// Input message `i`, unchanged (its bytes are copied on the string path).
    Keep(usize),
    /// A rewritten message as JSON text: members it did not change keep their input bytes.
    New {
        /// The message's JSON text.
        text: String,
    },
}

/// What [`plan_watermark`] decided.
#[derive(Clone, Debug, PartialEq)]
pub struct WatermarkPlan {
    /// The output messages in order.
    pub messages: Vec<Planned>,
    /// The state for the next call.
    pub state: WatermarkState,
    /// Counts.
    pub stats: WatermarkStats,
    /// Warnings.
    pub warnings: Vec<Warning>,
    /// The characters of each input message (what the wasm entry needs to map byte offsets
    /// to JS string offsets).
    pub(crate) input_chars: Vec<usize>,
}

/// The fate of one block (Anthropic) or one tool call / tool message (OpenAI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    Keep,
    Remove,
    Placeholder,
}

/// A `cache_control` move: from (message, block) to (message, block, or `None` for string
/// content).
pub(super) type CacheMove = ((usize, usize), (usize, Option<usize>));

/// A tool call before the watermark with where its results are.
pub(super) struct Pair<'a> {
    pub(super) name: &'a str,
    pub(super) id: &'a str,
    pub(super) call: (usize, usize),
    pub(super) results: Results,
    pub(super) server: bool,
    /// Must stay whole (excluded, kept last, result at/after the watermark, protected turn).
    pub(super) keep: bool,
    pub(super) act: Act,
}

/// Where a pair's results are, in the order found: the first inline (a call almost always has
/// one result), any more in a list (no allocation per pair).
#[derive(Default)]
pub(super) struct Results {
    first: Option<(usize, usize)>,
    more: Vec<(usize, usize)>,
}

impl Results {
    pub(super) fn push(&mut self, at: (usize, usize)) {
        if self.first.is_none() {
            self.first = Some(at);
        } else {
            self.more.push(at);
        }
    }

    pub(super) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &(usize, usize)> {
        self.first.iter().chain(self.more.iter())
    }
}

/// The acts of every block of the prefix messages, in one list: message `i`'s are
/// `all[start[i]..start[i + 1]]` (one allocation, not one per message).
pub(super) struct Acts {
    start: Vec<usize>,
    all: Vec<Act>,
}

impl Acts {
    /// `Keep` for every block of `views`.
    pub(super) fn keep_all(views: &[MessageView<'_>]) -> Acts {
        let mut start = Vec::with_capacity(views.len() + 1);
        let mut n = 0;
        start.push(0);
        for v in views {
            n += v.blocks().len();
            start.push(n);
        }
        Acts {
            start,
            all: vec![Act::Keep; n],
        }
    }

    /// Message `i`'s acts (none past the end).
    pub(super) fn of(&self, i: usize) -> &[Act] {
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.all[a..b],
            _ => &[],
        }
    }

    /// The act of block `b` of message `i`.
    pub(super) fn get_mut(&mut self, i: usize, b: usize) -> Option<&mut Act> {
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&end)) if a + b < end => self.all.get_mut(a + b),
            _ => None,
        }
    }
}

/// Plans the watermark over raw messages. The hosts' entry points call this.
pub fn plan_watermark(
    raws: &[&RawValue],
    state: &WatermarkState,
    options: &WatermarkOptions,
) -> Result<WatermarkPlan, Error> {
    let texts: Vec<&str> = raws.iter().map(|r| r.get()).collect();
    plan_views(&texts, views_from_raws(raws)?, state, options)
}

/// [`plan_watermark`] over the messages' JSON texts and their views (already read).
pub(crate) fn plan_views<'a>(
    raws: &[&'a str],
    views: Vec<MessageView<'a>>,
    state: &WatermarkState,
    options: &WatermarkOptions,
) -> Result<WatermarkPlan, Error> {
    let matchers = options.matchers()?;
    let format = resolve_format(&views, options.format)?;
    let measures: Vec<(usize, usize)> = raws.iter().map(|r| measure(r)).collect();
    let mut stats = WatermarkStats {
        messages_before: raws.len(),
        chars_before: measures.iter().map(|m| m.0).sum(),
        tokens_before: measures.iter().map(|m| m.1).sum(),
        ..WatermarkStats::default()
    };

    // Every tool call in order: (message index, id, name). Only what the provider runs as a
    // call: an assistant message's `tool_use` blocks (Anthropic) or `tool_calls` (OpenAI). A
    // `tool_use` block in a user message, or in an OpenAI conversation, calls nothing, so it
    // cannot be a checkpoint (validate reports it as `misplaced_block`).
    let calls: Vec<(usize, &str, &str)> = views
        .iter()
        .enumerate()
        .filter(|(_, v)| v.role() == Some(Role::Assistant))
        .flat_map(|(i, v)| {
            let blocks = v
                .blocks()
                .iter()
                .filter(move |b| format == Format::Anthropic && b.kind() == BlockKind::ToolUse)
                .map(move |b| {
                    (
                        i,
                        b.id.as_deref().unwrap_or(""),
                        b.name.as_deref().unwrap_or(""),
                    )
                });
            let oa = v
                .tool_calls()
                .iter()
                .filter(move |_| format == Format::OpenAi)
                .map(move |c| (i, c.id.as_deref().unwrap_or(""), c.name()));
            blocks.chain(oa)
        })
        .collect();

    let identity = |stats: WatermarkStats, warnings: Vec<Warning>| {
        let mut stats = stats;
        stats.messages_after = stats.messages_before;
        stats.chars_after = stats.chars_before;
        stats.tokens_after = stats.tokens_before;
        WatermarkPlan {
            messages: (0..raws.len()).map(Planned::Keep).collect(),
            state: state.clone(),
            stats,
            warnings,
            input_chars: measures.iter().map(|m| m.0).collect(),
        }
    };

    let search_from = match state.watermark.as_deref() {
        None => 0,
        Some(id) => match calls.iter().position(|c| c.1 == id) {
            Some(p) => p + 1,
            None => {
                let warning = Warning {
                    code: "watermark_not_found".into(),
                    message: format!(
                        "the watermark {id:?} is not a tool call of these messages; nothing was pruned"
                    ),
                    path: Some("state.watermark".into()),
                };
                return Ok(identity(stats, vec![warning]));
            }
        },
    };
    let newest = calls[search_from..]
        .iter()
        .rposition(|c| matchers.is_checkpoint(c.2))
        .map(|p| search_from + p);
    let (watermark_id, w) = match (newest, search_from) {
        (Some(p), _) => {
            stats.advanced = true;
            (calls[p].1.to_string(), calls[p].0)
        }
        (None, 0) => return Ok(identity(stats, Vec::new())),
        (None, p) => (calls[p - 1].1.to_string(), calls[p - 1].0),
    };
    stats.watermark_index = Some(w);
    let new_state = WatermarkState {
        watermark: Some(watermark_id),
    };

    let mut pruner = Pruner {
        raws,
        views: &views,
        w,
        options,
        matchers: &matchers,
        stats,
        warnings: Vec::new(),
    };
    let prefix = match format {
        Format::Anthropic => pruner.anthropic()?,
        Format::OpenAi => pruner.openai()?,
    };
    let Pruner {
        mut stats,
        warnings,
        ..
    } = pruner;
    stats.blocks_removed =
        stats.tool_calls_removed + stats.tool_results_removed + stats.thinking_removed;

    let mut messages = prefix;
    messages.extend((w..raws.len()).map(Planned::Keep));
    stats.messages_after = messages.len();
    for p in &messages {
        let (c, t) = match p {
            Planned::Keep(i) => measures[*i],
            Planned::New { text, .. } => measure(text),
        };
        stats.chars_after += c;
        stats.tokens_after += t;
    }
    Ok(WatermarkPlan {
        messages,
        state: new_state,
        stats,
        warnings,
        input_chars: measures.iter().map(|m| m.0).collect(),
    })
}

pub(super) struct Pruner<'a, 'v> {
    pub(super) raws: &'a [&'a str],
    pub(super) views: &'a [MessageView<'v>],
    pub(super) w: usize,
    pub(super) options: &'a WatermarkOptions,
    pub(super) matchers: &'a Matchers,
    pub(super) stats: WatermarkStats,
    pub(super) warnings: Vec<Warning>,
}

/// A prefix message under construction.
pub(super) struct Draft<'a> {
    pub(super) role: Role,
    pub(super) source: usize,
    /// `None`: the input message, untouched.
    pub(super) edit: Option<Edit<'a>>,
}

/// A message being rewritten: its members, and its content blocks once they are edited.
pub(super) struct Edit<'a> {
    pub(super) obj: RawObject<'a>,
    /// The content as blocks with their kinds, once edited; written as `content`.
    pub(super) blocks: Option<Vec<(Slot<'a>, BlockKind)>>,
    /// Blocks of several messages were joined: tool results and thinking go first.
    pub(super) merged: bool,
}

impl<'a> Edit<'a> {
    /// The content as blocks: a string becomes one text block (its raw text reused), null or
    /// missing content none.
    pub(super) fn blocks<'v: 'a>(
        &mut self,
        view: &MessageView<'v>,
    ) -> &mut Vec<(Slot<'a>, BlockKind)> {
        if self.blocks.is_none() {
            let content = self.obj.get("content").and_then(Slot::json_text);
            let blocks = match (&view.content, content) {
                // Read by the one-pass scanner: the blocks' texts are known.
                (ContentView::Blocks(views), Some(raw))
                    if view.content_text.is_some_and(|t| same_slice(t, raw))
                        && views.iter().all(|b| b.text_json.is_some()) =>
                {
                    views
                        .iter()
                        .filter_map(|b| Some((Slot::Text(b.text_json?), b.kind())))
                        .collect()
                }
                (ContentView::Blocks(views), Some(raw)) => Slot::elements_of(raw)
                    .unwrap_or_default()
                    .into_iter()
                    .zip(views.iter().map(BlockView::kind))
                    .collect(),
                (ContentView::Text { .. }, Some(raw)) => vec![(text_block(raw), BlockKind::Text)],
                _ => Vec::new(),
            };
            self.blocks = Some(blocks);
        }
        self.blocks.get_or_insert_with(Vec::new)
    }

    pub(super) fn finish(mut self) -> Planned {
        if let Some(mut blocks) = self.blocks.take() {
            if self.merged {
                // Tool results first (Anthropic), thinking first (extended thinking).
                blocks.sort_by_key(|(_, kind)| match kind {
                    BlockKind::ToolResult | BlockKind::Thinking | BlockKind::RedactedThinking => 0,
                    _ => 1,
                });
            }
            let slots = blocks.into_iter().map(|(slot, _)| slot).collect();
            self.obj.set("content", Slot::Array(slots));
        }
        let mut text = String::new();
        self.obj.write(&mut text);
        Planned::New { text }
    }
}

/// Whether `a` and `b` are the very same slice (not only equal text).
fn same_slice(a: &str, b: &str) -> bool {
    std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()
}

/// `{"type":"text","text":<raw string>}`.
pub(super) fn text_block(raw: &str) -> Slot<'_> {
    let mut obj = RawObject::default();
    obj.set("type", Slot::Owned(Value::String("text".into())));
    obj.set("text", Slot::Text(raw));
    Slot::Object(obj)
}

/// The slot as an object under edit (parsing a raw object's members on first use).
pub(super) fn as_object<'s, 'a>(
    slot: &'s mut Slot<'a>,
    path: &str,
) -> Result<&'s mut RawObject<'a>, Error> {
    if let Some(text) = slot.json_text() {
        *slot = Slot::Object(RawObject::parse_at(text, || path.to_string())?);
    }
    match slot {
        Slot::Object(obj) => Ok(obj),
        _ => Err(Error::new(
            crate::ErrorKind::InvalidMessage,
            path,
            "expected a JSON object",
        )),
    }
}

impl<'a> Pruner<'a, '_> {
    /// Opens message `i` for rewriting.
    pub(super) fn open(&self, i: usize) -> Result<Edit<'a>, Error> {
        let known = self.views.get(i).and_then(|v| v.content_text);
        Ok(Edit {
            obj: RawObject::parse_known(self.raws[i], known, || join_index("messages", i))?,
            blocks: None,
            merged: false,
        })
    }

    /// Marks pairs to keep whole: excluded names, pinned ones, then the last N of the rest.
    pub(super) fn decide(&mut self, pairs: &mut [Pair<'_>]) {
        let keep_last = self.options.keep_last_tool_results;
        let mut prunable = 0usize;
        for pair in pairs.iter_mut().rev() {
            if !pair.keep && self.matchers.is_excluded(pair.name) {
                pair.keep = true;
            }
            if !pair.keep && prunable < keep_last {
                prunable += 1;
                pair.keep = true;
            }
        }
        for pair in pairs.iter_mut() {
            pair.act = if pair.keep {
                Act::Keep
            } else if self.options.placeholder && !pair.server {
                Act::Placeholder
            } else {
                Act::Remove
            };
        }
    }

    fn placeholder_prefix(name: &str, id: &str) -> String {
        format!("[condense: {name} result {id} pruned, ")
    }

    fn placeholder_text(name: &str, id: &str, original_chars: usize) -> String {
        format!(
            "{}{original_chars} chars]",
            Self::placeholder_prefix(name, id)
        )
    }

    /// The placeholder for a tool result's content, when it is shorter (in characters and in
    /// estimated tokens) than the content and the content is not already our marker.
    pub(super) fn placeholder(
        &mut self,
        content: Option<&Slot<'_>>,
        name: &str,
        id: &str,
    ) -> Option<Slot<'a>> {
        let text = content?.to_json();
        let prefix = Self::placeholder_prefix(name, id);
        // The size named is the text's own (a string without quotes and escapes); the
        // comparison is between JSON forms.
        let size = if text.starts_with('"') {
            let s: String = serde_json::from_str(&text).ok()?;
            if s.starts_with(&prefix) {
                return None; // already our marker: idempotent
            }
            count_chars(&s)
        } else {
            count_chars(&text)
        };
        let marker = Value::String(Self::placeholder_text(name, id, size));
        let marker_json = marker.to_string();
        if count_chars(&marker_json) < count_chars(&text)
            && estimate_tokens(&marker_json) < estimate_tokens(&text)
        {
            self.stats.placeholders += 1;
            Some(Slot::Owned(marker))
        } else {
            None
        }
    }

    /// `{}` (or `"{}"` for OpenAI's string arguments) for a non-empty tool input. Judged on
    /// the raw text, so an input of any size or depth is never parsed.
    pub(super) fn cleared_input(&mut self, input: Option<&Slot<'_>>) -> Option<Slot<'a>> {
        if !self.options.clear_tool_inputs {
            return None;
        }
        let text = input?.to_json();
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let replacement = match compact.as_str() {
            "{}" | "null" | "\"{}\"" | "\"\"" => return None,
            s if s.starts_with('"') => Value::String("{}".into()),
            _ => Value::Object(Map::new()),
        };
        self.stats.inputs_cleared += 1;
        Some(Slot::Owned(replacement))
    }

    pub(super) fn count_kept(&mut self, pairs: &[Pair<'_>]) {
        self.stats.pairs_kept = pairs.iter().filter(|p| p.act == Act::Keep).count();
    }
}

/// Applies pair decisions to the per-block acts.
pub(super) fn apply_pairs(pairs: &[Pair<'_>], acts: &mut Acts) {
    for pair in pairs {
        for &(i, b) in std::iter::once(&pair.call).chain(pair.results.iter()) {
            if let Some(slot) = acts.get_mut(i, b) {
                *slot = pair.act;
            }
        }
    }
}

/// Whether a message survives its block acts.
pub(super) fn survives(view: &MessageView<'_>, acts: &[Act]) -> bool {
    match &view.content {
        ContentView::Blocks(_) => acts.iter().any(|a| *a != Act::Remove),
        _ => true,
    }
}
