//! The watermark planner: decides on structural views, rewrites only what changes.
//!
//! 1. Read every message's [`MessageView`] (no texts are copied).
//! 2. Find the current watermark and the newest checkpoint call after it.
//! 3. Before the watermark message, decide per tool pair: remove (default), placeholder, or
//!    keep whole (`excludeTools`, `keepLastToolResults`, a result at or after the watermark,
//!    the current turn's opening call, the pair that keeps roles alternating).
//! 4. Move `cache_control` markers off removed blocks; parse, rewrite and merge only the
//!    messages that change. Everything else is `Planned::Keep(i)`: the input's own bytes.

use std::collections::{HashMap, HashSet};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::options::{Matchers, WatermarkOptions, WatermarkState};
use super::{Warning, WatermarkStats};
use crate::error::{join_index, Error};
use crate::message::{resolve_format, BlockKind, ContentView, Format, MessageView, Role};
use crate::text::{count_chars, estimate_tokens};

/// One message of the output.
#[derive(Clone, Debug, PartialEq)]
pub enum Planned {
    /// Input message `i`, unchanged (its bytes are copied on the string path).
    Keep(usize),
    /// A rewritten message, as a value and as compact JSON text.
    New {
        /// The message.
        value: Value,
        /// `value` as compact JSON.
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
}

/// The fate of one block (Anthropic) or one tool call / tool message (OpenAI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Keep,
    Remove,
    Placeholder,
}

/// A `cache_control` move: from (message, block) to (message, block, or `None` for string
/// content).
type CacheMove = ((usize, usize), (usize, Option<usize>));

/// A tool call before the watermark with where its results are.
struct Pair {
    name: String,
    id: String,
    call: (usize, usize),
    results: Vec<(usize, usize)>,
    server: bool,
    /// Must stay whole (excluded, kept last, result at/after the watermark, protected turn).
    keep: bool,
    act: Act,
}

/// Plans the watermark over raw messages. The hosts' entry points call this.
pub fn plan_watermark(
    raws: &[&RawValue],
    state: &WatermarkState,
    options: &WatermarkOptions,
) -> Result<WatermarkPlan, Error> {
    let matchers = options.matchers()?;
    let views: Vec<MessageView<'_>> = raws
        .iter()
        .enumerate()
        .map(|(i, r)| MessageView::from_raw(r, &join_index("messages", i)))
        .collect::<Result<_, _>>()?;
    let format = resolve_format(&views, options.format)?;
    let measures: Vec<(usize, usize)> = raws
        .iter()
        .map(|r| (count_chars(r.get()), estimate_tokens(r.get())))
        .collect();
    let mut stats = WatermarkStats {
        messages_before: raws.len(),
        chars_before: measures.iter().map(|m| m.0).sum(),
        tokens_before: measures.iter().map(|m| m.1).sum(),
        ..WatermarkStats::default()
    };

    // Every tool call in order: (message index, id, name).
    let calls: Vec<(usize, &str, &str)> = views
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            let blocks = v
                .blocks()
                .iter()
                .filter(|b| b.kind() == BlockKind::ToolUse)
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
            Planned::New { text, .. } => (count_chars(text), estimate_tokens(text)),
        };
        stats.chars_after += c;
        stats.tokens_after += t;
    }
    Ok(WatermarkPlan {
        messages,
        state: new_state,
        stats,
        warnings,
    })
}

struct Pruner<'a, 'v> {
    raws: &'a [&'a RawValue],
    views: &'a [MessageView<'v>],
    w: usize,
    options: &'a WatermarkOptions,
    matchers: &'a Matchers,
    stats: WatermarkStats,
    warnings: Vec<Warning>,
}

/// A prefix message under construction.
struct Draft {
    role: Role,
    /// `None`: the input message, untouched.
    value: Option<Value>,
    source: usize,
}

impl Pruner<'_, '_> {
    fn parse(&self, i: usize) -> Result<Value, Error> {
        serde_json::from_str(self.raws[i].get())
            .map_err(|e| Error::json(join_index("messages", i), &e))
    }

    /// Marks pairs to keep whole: excluded names, pinned ones, then the last N of the rest.
    fn decide(&mut self, pairs: &mut [Pair]) {
        let keep_last = self.options.keep_last_tool_results;
        let mut prunable = 0usize;
        for pair in pairs.iter_mut().rev() {
            if !pair.keep && self.matchers.is_excluded(&pair.name) {
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

    /// Replaces `slot` (a tool result's content) by the placeholder when that is shorter.
    fn placehold(&mut self, slot: Option<&mut Value>, name: &str, id: &str) {
        let Some(slot) = slot else { return };
        let text = match &*slot {
            // Already our marker for this call: leave it (idempotence).
            Value::String(s) if s.starts_with(&Self::placeholder_prefix(name, id)) => return,
            other => other.to_string(),
        };
        let (chars, tokens) = (count_chars(&text), estimate_tokens(&text));
        // The size named is the text's own (a string without its quotes), the comparison is
        // between JSON forms.
        let size = match &*slot {
            Value::String(s) => count_chars(s),
            _ => chars,
        };
        let marker = Self::placeholder_text(name, id, size);
        let marker_json = Value::String(marker.clone()).to_string();
        // Used only when shorter in characters and in tokens.
        if count_chars(&marker_json) < chars && estimate_tokens(&marker_json) < tokens {
            *slot = Value::String(marker);
            self.stats.placeholders += 1;
        }
    }

    fn clear_input(&mut self, slot: Option<&mut Value>) {
        if !self.options.clear_tool_inputs {
            return;
        }
        if let Some(slot) = slot {
            let empty = match slot {
                Value::Object(m) => m.is_empty(),
                Value::String(s) => s.trim() == "{}",
                Value::Null => true,
                _ => false,
            };
            if !empty {
                *slot = match slot {
                    Value::String(_) => Value::String("{}".into()),
                    _ => Value::Object(Map::new()),
                };
                self.stats.inputs_cleared += 1;
            }
        }
    }

    fn count_kept(&mut self, pairs: &[Pair]) {
        self.stats.pairs_kept = pairs.iter().filter(|p| p.act == Act::Keep).count();
    }

    // ---------------------------------------------------------------- Anthropic

    fn anthropic(&mut self) -> Result<Vec<Planned>, Error> {
        let views = self.views;
        let w = self.w;
        // Pairs of the prefix; results of prefix calls found anywhere pin or join them.
        let mut pairs: Vec<Pair> = Vec::new();
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        let mut acts: Vec<Vec<Act>> = views[..w]
            .iter()
            .map(|v| vec![Act::Keep; v.blocks().len()])
            .collect();
        for (i, view) in views[..w].iter().enumerate() {
            for (b, block) in view.blocks().iter().enumerate() {
                let kind = block.kind();
                if matches!(kind, BlockKind::ToolUse | BlockKind::ServerToolUse) {
                    let id = block.id.as_deref().unwrap_or("");
                    by_id.insert(id, pairs.len());
                    pairs.push(Pair {
                        name: block.name.as_deref().unwrap_or("").to_string(),
                        id: id.to_string(),
                        call: (i, b),
                        results: Vec::new(),
                        server: kind == BlockKind::ServerToolUse,
                        keep: false,
                        act: Act::Remove,
                    });
                }
            }
        }
        for (i, view) in views.iter().enumerate() {
            for (b, block) in view.blocks().iter().enumerate() {
                if matches!(
                    block.kind(),
                    BlockKind::ToolResult | BlockKind::ServerToolResult
                ) {
                    let id = block.tool_use_id.as_deref().unwrap_or("");
                    match by_id.get(id) {
                        Some(&p) if i < w => pairs[p].results.push((i, b)),
                        Some(&p) => pairs[p].keep = true,
                        // An orphan result before the watermark goes with the tool history.
                        None if i < w => {
                            acts[i][b] = Act::Remove;
                            self.stats.tool_results_removed += 1;
                        }
                        None => {}
                    }
                }
            }
        }

        // The current tool turn: from the first assistant message after the last user message
        // that says something (not only tool results). Its opening thinking is never touched.
        let says_something = |v: &MessageView<'_>| match &v.content {
            ContentView::Blocks(blocks) => blocks.iter().any(|b| b.kind() != BlockKind::ToolResult),
            _ => true,
        };
        let turn_open = views
            .iter()
            .rposition(|v| v.role() == Some(Role::User) && says_something(v))
            .and_then(|u| (u + 1..views.len()).find(|&j| views[j].role() == Some(Role::Assistant)));
        let protected = turn_open
            .filter(|&t| t < w && views[t].blocks().iter().any(|b| b.kind().is_thinking()));
        if let Some(t) = protected {
            for pair in pairs.iter_mut().filter(|p| p.call.0 == t) {
                pair.keep = true;
            }
        }
        self.decide(&mut pairs);

        // Thinking before the watermark goes, unless kept or protected.
        if !self.options.keep_thinking {
            for (i, view) in views[..w].iter().enumerate() {
                if Some(i) == protected {
                    continue;
                }
                for (b, block) in view.blocks().iter().enumerate() {
                    if block.kind().is_thinking() {
                        acts[i][b] = Act::Remove;
                        self.stats.thinking_removed += 1;
                    }
                }
            }
        }

        // Roles must alternate into the watermark message, which cannot change: while the last
        // surviving prefix message has its role, keep the newest removed pair whole.
        loop {
            let mut trial = acts.clone();
            apply_pairs(&pairs, &mut trial);
            let last = (0..w).rev().find(|&i| survives(&views[i], &trial[i]));
            let clash = last.is_some_and(|i| views[i].role == views[w].role);
            if !clash {
                break;
            }
            match pairs.iter_mut().rev().find(|p| p.act == Act::Remove) {
                Some(pair) => {
                    pair.keep = true;
                    pair.act = Act::Keep;
                }
                None => break,
            }
        }
        apply_pairs(&pairs, &mut acts);
        self.count_kept(&pairs);
        for pair in &pairs {
            if pair.act == Act::Remove {
                self.stats.tool_calls_removed += 1;
                self.stats.tool_results_removed += pair.results.len();
            }
        }

        // cache_control: move markers of removed blocks to the nearest kept block.
        let moves = self.relocate_cache_control(&acts);

        // Rewrite what changes.
        let mut values: Vec<Option<Value>> = vec![None; w];
        let touched: HashSet<usize> = moves.iter().map(|m| m.1 .0).collect();
        for i in 0..w {
            if acts[i].iter().any(|a| *a != Act::Keep) || touched.contains(&i) {
                values[i] = Some(self.parse(i)?);
            }
        }
        for (from, to) in &moves {
            let marker = values[from.0]
                .as_ref()
                .and_then(|v| v.get("content"))
                .and_then(|c| c.get(from.1))
                .and_then(|blk| blk.get("cache_control"))
                .cloned();
            let (Some(marker), Some(Some(target))) = (marker, values.get_mut(to.0)) else {
                continue;
            };
            set_cache_control(target, to.1, marker);
        }
        let placeholder_pairs: HashMap<(usize, usize), (&str, &str)> = pairs
            .iter()
            .filter(|p| p.act == Act::Placeholder)
            .flat_map(|p| {
                std::iter::once((p.call, (p.name.as_str(), p.id.as_str()))).chain(
                    p.results
                        .iter()
                        .map(move |r| (*r, (p.name.as_str(), p.id.as_str()))),
                )
            })
            .collect();

        let mut drafts: Vec<Draft> = Vec::with_capacity(w);
        for (i, act) in acts.iter().enumerate() {
            let role = views[i].role().unwrap_or(Role::User);
            let Some(mut value) = values[i].take() else {
                drafts.push(Draft {
                    role,
                    value: None,
                    source: i,
                });
                continue;
            };
            let mut changed = touched.contains(&i);
            if let Some(Value::Array(blocks)) = value.get_mut("content") {
                let old = std::mem::take(blocks);
                for (b, mut block) in old.into_iter().enumerate() {
                    match act.get(b).copied().unwrap_or(Act::Keep) {
                        Act::Remove => {
                            changed = true;
                            continue;
                        }
                        Act::Placeholder => {
                            let (name, id) = placeholder_pairs
                                .get(&(i, b))
                                .copied()
                                .unwrap_or(("tool", ""));
                            let before = (self.stats.placeholders, self.stats.inputs_cleared);
                            if views[i].blocks()[b].kind() == BlockKind::ToolResult {
                                self.placehold(block.get_mut("content"), name, id);
                            } else {
                                self.clear_input(block.get_mut("input"));
                            }
                            changed |=
                                before != (self.stats.placeholders, self.stats.inputs_cleared);
                        }
                        Act::Keep => {}
                    }
                    blocks.push(block);
                }
                if blocks.is_empty() {
                    self.stats.messages_dropped += 1;
                    continue;
                }
            }
            drafts.push(Draft {
                role,
                value: changed.then_some(value),
                source: i,
            });
        }

        // Merge the same-role runs that dropping messages created.
        let mut merged: Vec<Draft> = Vec::with_capacity(drafts.len());
        for draft in drafts {
            match merged.last_mut() {
                Some(prev) if prev.role == draft.role => {
                    if prev.value.is_none() {
                        prev.value = Some(self.parse(prev.source)?);
                    }
                    let next = match draft.value {
                        Some(v) => v,
                        None => self.parse(draft.source)?,
                    };
                    if let Some(Value::Object(into)) = prev.value.as_mut() {
                        if let Value::Object(from) = next {
                            self.merge(into, from, draft.source);
                        }
                    }
                    self.stats.messages_merged += 1;
                }
                _ => merged.push(draft),
            }
        }
        Ok(merged.into_iter().map(finish).collect())
    }

    /// Plans the `cache_control` moves: (removed block, target (message, block or `None` for
    /// string content)). Drops moves beyond the provider's limit of 4 markers.
    fn relocate_cache_control(&mut self, acts: &[Vec<Act>]) -> Vec<CacheMove> {
        let views = self.views;
        let w = self.w;
        let kept_block = |i: usize, b: usize| acts[i].get(b).is_some_and(|a| *a != Act::Remove);
        let string_content = |i: usize| matches!(views[i].content, ContentView::Text { .. });
        let mut moves = Vec::new();
        let mut targets: HashSet<(usize, Option<usize>)> = HashSet::new();
        let mut removed_markers = 0usize;
        for i in 0..w {
            for (b, block) in views[i].blocks().iter().enumerate() {
                if !block.has_cache_control() || kept_block(i, b) {
                    continue;
                }
                removed_markers += 1;
                // Nearest kept block before, else after, within the prefix.
                let before = (0..=i).rev().find_map(|j| {
                    if string_content(j) {
                        return Some((j, None));
                    }
                    let end = if j == i { b } else { views[j].blocks().len() };
                    (0..end)
                        .rev()
                        .find(|&c| kept_block(j, c))
                        .map(|c| (j, Some(c)))
                });
                let after = || {
                    (i..w).find_map(|j| {
                        if string_content(j) {
                            return Some((j, None));
                        }
                        let start = if j == i { b + 1 } else { 0 };
                        (start..views[j].blocks().len())
                            .find(|&c| kept_block(j, c))
                            .map(|c| (j, Some(c)))
                    })
                };
                match before.or_else(after) {
                    Some(target) => {
                        let already = target
                            .1
                            .is_some_and(|c| views[target.0].blocks()[c].has_cache_control());
                        if !already && targets.insert(target) {
                            moves.push(((i, b), target));
                        }
                    }
                    None => self.warnings.push(Warning {
                        code: "cache_control_dropped".into(),
                        message:
                            "a cache_control marker of a removed block had no kept block to move to"
                                .into(),
                        path: Some(format!("messages[{i}].content[{b}].cache_control")),
                    }),
                }
            }
        }
        let existing: usize = views
            .iter()
            .map(|v| v.blocks().iter().filter(|b| b.has_cache_control()).count())
            .sum();
        let mut total = existing - removed_markers + moves.len();
        while total > 4 && !moves.is_empty() {
            let ((i, b), _) = moves.remove(0);
            total -= 1;
            self.warnings.push(Warning {
                code: "cache_control_dropped".into(),
                message:
                    "moving this marker would exceed the provider's limit of 4 cache breakpoints"
                        .into(),
                path: Some(format!("messages[{i}].content[{b}].cache_control")),
            });
        }
        self.stats.cache_control_moved = moves.len();
        moves
    }

    /// Merges message `from` (input index `source`) into `into`: blocks appended (tool results
    /// first, thinking first), fields `into` lacks copied, conflicting fields reported.
    fn merge(&mut self, into: &mut Map<String, Value>, from: Map<String, Value>, source: usize) {
        let mut extra = Vec::new();
        let mut add = Vec::new();
        for (key, value) in from {
            match key.as_str() {
                "role" => {}
                "content" => add = into_blocks(value),
                _ => match into.get(&key) {
                    None => extra.push((key, value)),
                    Some(v) if *v == value => {}
                    Some(_) => self.warnings.push(Warning {
                        code: "merge_field_conflict".into(),
                        message: format!(
                            "messages[{source}] was merged into the message before it; its {key:?} differs and the earlier value was kept"
                        ),
                        path: Some(format!("messages[{source}].{key}")),
                    }),
                },
            }
        }
        let mut blocks = into_blocks(into.remove("content").unwrap_or(Value::Null));
        blocks.extend(add);
        // Tool results first (Anthropic), thinking first (extended thinking).
        blocks.sort_by_key(|b| match b.get("type").and_then(Value::as_str) {
            Some("tool_result") | Some("thinking") | Some("redacted_thinking") => 0,
            _ => 1,
        });
        into.insert("content".into(), Value::Array(blocks));
        for (k, v) in extra {
            into.insert(k, v);
        }
    }

    // ---------------------------------------------------------------- OpenAI

    fn openai(&mut self) -> Result<Vec<Planned>, Error> {
        let views = self.views;
        let w = self.w;
        let mut pairs: Vec<Pair> = Vec::new();
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        for (i, view) in views[..w].iter().enumerate() {
            for (c, call) in view.tool_calls().iter().enumerate() {
                let id = call.id.as_deref().unwrap_or("");
                by_id.insert(id, pairs.len());
                pairs.push(Pair {
                    name: call.name().to_string(),
                    id: id.to_string(),
                    call: (i, c),
                    results: Vec::new(),
                    server: false,
                    keep: false,
                    act: Act::Remove,
                });
            }
        }
        // Tool messages: (index) → pair, or orphan.
        let mut orphan_tools: HashSet<usize> = HashSet::new();
        for (i, view) in views.iter().enumerate() {
            if view.role() != Some(Role::Tool) {
                continue;
            }
            let id = view.tool_call_id.as_deref().unwrap_or("");
            match by_id.get(id) {
                Some(&p) if i < w => pairs[p].results.push((i, 0)),
                Some(&p) => pairs[p].keep = true,
                None if i < w => {
                    orphan_tools.insert(i);
                }
                None => {}
            }
        }
        self.decide(&mut pairs);
        self.count_kept(&pairs);

        let mut call_acts: HashMap<(usize, usize), usize> = HashMap::new();
        let mut tool_acts: HashMap<usize, usize> = HashMap::new();
        for (p, pair) in pairs.iter().enumerate() {
            call_acts.insert(pair.call, p);
            for r in &pair.results {
                tool_acts.insert(r.0, p);
            }
        }

        let mut out = Vec::with_capacity(w);
        for (i, view) in views[..w].iter().enumerate() {
            if view.role() == Some(Role::Tool) {
                let act = match tool_acts.get(&i) {
                    Some(&p) => pairs[p].act,
                    None if orphan_tools.contains(&i) => Act::Remove,
                    None => Act::Keep,
                };
                match act {
                    Act::Keep => out.push(Planned::Keep(i)),
                    Act::Remove => {
                        self.stats.tool_results_removed += 1;
                        self.stats.messages_dropped += 1;
                    }
                    Act::Placeholder => {
                        let p = tool_acts.get(&i).copied().unwrap_or(0);
                        let (name, id) = (pairs[p].name.clone(), pairs[p].id.clone());
                        let mut value = self.parse(i)?;
                        let before = self.stats.placeholders;
                        self.placehold(value.get_mut("content"), &name, &id);
                        if self.stats.placeholders == before {
                            out.push(Planned::Keep(i));
                        } else {
                            out.push(finish_value(value));
                        }
                    }
                }
                continue;
            }
            let calls = view.tool_calls();
            if calls.is_empty() {
                out.push(Planned::Keep(i));
                continue;
            }
            let acts: Vec<Act> = (0..calls.len())
                .map(|c| {
                    call_acts
                        .get(&(i, c))
                        .map(|&p| pairs[p].act)
                        .unwrap_or(Act::Keep)
                })
                .collect();
            let clears = self.options.clear_tool_inputs && acts.contains(&Act::Placeholder);
            if acts.iter().all(|a| *a == Act::Keep) || (!clears && !acts.contains(&Act::Remove)) {
                out.push(Planned::Keep(i));
                continue;
            }
            let mut value = self.parse(i)?;
            let Some(obj) = value.as_object_mut() else {
                out.push(Planned::Keep(i));
                continue;
            };
            if let Some(Value::Array(list)) = obj.get_mut("tool_calls") {
                let old = std::mem::take(list);
                for (c, mut call) in old.into_iter().enumerate() {
                    match acts.get(c).copied().unwrap_or(Act::Keep) {
                        Act::Remove => {
                            self.stats.tool_calls_removed += 1;
                            continue;
                        }
                        Act::Placeholder => {
                            let slot = call
                                .get_mut("function")
                                .and_then(|f| f.get_mut("arguments"));
                            self.clear_input(slot);
                        }
                        Act::Keep => {}
                    }
                    list.push(call);
                }
                if list.is_empty() {
                    obj.remove("tool_calls");
                }
            }
            let empty_content = match obj.get("content") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                Some(_) => false,
            };
            if empty_content && !obj.contains_key("tool_calls") {
                self.stats.messages_dropped += 1;
                continue;
            }
            out.push(finish_value(value));
        }
        Ok(out)
    }
}

/// Applies pair decisions to the per-block acts.
fn apply_pairs(pairs: &[Pair], acts: &mut [Vec<Act>]) {
    for pair in pairs {
        for &(i, b) in std::iter::once(&pair.call).chain(pair.results.iter()) {
            if let Some(slot) = acts.get_mut(i).and_then(|a| a.get_mut(b)) {
                *slot = pair.act;
            }
        }
    }
}

/// Whether a message survives its block acts.
fn survives(view: &MessageView<'_>, acts: &[Act]) -> bool {
    match &view.content {
        ContentView::Blocks(_) => acts.iter().any(|a| *a != Act::Remove),
        _ => true,
    }
}

/// Content as blocks: a string becomes one text block; null or missing, none.
fn into_blocks(content: Value) -> Vec<Value> {
    match content {
        Value::Array(blocks) => blocks,
        Value::String(s) => {
            let mut block = Map::new();
            block.insert("type".into(), Value::String("text".into()));
            block.insert("text".into(), Value::String(s));
            vec![Value::Object(block)]
        }
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// Sets `cache_control` on block `block` of `message` (or, for string content, turns the
/// string into a text block carrying it).
fn set_cache_control(message: &mut Value, block: Option<usize>, marker: Value) {
    let Some(obj) = message.as_object_mut() else {
        return;
    };
    match block {
        Some(b) => {
            if let Some(Value::Object(blk)) = obj.get_mut("content").and_then(|c| c.get_mut(b)) {
                blk.insert("cache_control".into(), marker);
            }
        }
        None => {
            let content = obj.remove("content").unwrap_or(Value::Null);
            let mut blocks = into_blocks(content);
            if let Some(Value::Object(last)) = blocks.last_mut() {
                last.insert("cache_control".into(), marker);
            }
            obj.insert("content".into(), Value::Array(blocks));
        }
    }
}

fn finish_value(value: Value) -> Planned {
    let text = value.to_string();
    Planned::New { value, text }
}

fn finish(draft: Draft) -> Planned {
    match draft.value {
        None => Planned::Keep(draft.source),
        Some(value) => finish_value(value),
    }
}
