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
    let views = views_from_raws(raws)?;
    let format = resolve_format(&views, options.format)?;
    let measures: Vec<(usize, usize)> = raws.iter().map(|r| measure(r.get())).collect();
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
struct Draft<'a> {
    role: Role,
    source: usize,
    /// `None`: the input message, untouched.
    edit: Option<Edit<'a>>,
}

/// A message being rewritten: its members, and its content blocks once they are edited.
struct Edit<'a> {
    obj: RawObject<'a>,
    /// The content as blocks with their kinds, once edited; written as `content`.
    blocks: Option<Vec<(Slot<'a>, BlockKind)>>,
    /// Blocks of several messages were joined: tool results and thinking go first.
    merged: bool,
}

impl<'a> Edit<'a> {
    /// The content as blocks: a string becomes one text block (its raw text reused), null or
    /// missing content none.
    fn blocks(&mut self, view: &MessageView<'_>) -> &mut Vec<(Slot<'a>, BlockKind)> {
        if self.blocks.is_none() {
            let content = self.obj.get("content").and_then(Slot::raw);
            let blocks = match (&view.content, content) {
                (ContentView::Blocks(views), Some(raw)) => Slot::elements(raw)
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

    fn finish(mut self) -> Planned {
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

/// `{"type":"text","text":<raw string>}`.
fn text_block(raw: &RawValue) -> Slot<'_> {
    let mut obj = RawObject::default();
    obj.set("type", Slot::Owned(Value::String("text".into())));
    obj.set("text", Slot::Raw(raw));
    Slot::Object(obj)
}

/// The slot as an object under edit (parsing a raw object's members on first use).
fn as_object<'s, 'a>(slot: &'s mut Slot<'a>, path: &str) -> Result<&'s mut RawObject<'a>, Error> {
    if let Slot::Raw(raw) = *slot {
        *slot = Slot::Object(RawObject::parse(raw, path)?);
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
    fn open(&self, i: usize) -> Result<Edit<'a>, Error> {
        Ok(Edit {
            obj: RawObject::parse(self.raws[i], &join_index("messages", i))?,
            blocks: None,
            merged: false,
        })
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

    /// The placeholder for a tool result's content, when it is shorter (in characters and in
    /// estimated tokens) than the content and the content is not already our marker.
    fn placeholder(
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
    fn cleared_input(&mut self, input: Option<&Slot<'_>>) -> Option<Slot<'a>> {
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

        // Rewrite what changes; messages whose blocks all go are dropped without being read.
        let placeholder_of: HashMap<(usize, usize), usize> = pairs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.act == Act::Placeholder)
            .flat_map(|(n, p)| {
                std::iter::once((p.call, n)).chain(p.results.iter().map(move |r| (*r, n)))
            })
            .collect();
        let mut markers: HashMap<(usize, usize), Slot<'a>> = HashMap::new();
        for (from, _) in &moves {
            let mut edit = self.open(from.0)?;
            let blocks = edit.blocks(&views[from.0]);
            if let Some((slot, _)) = blocks.get_mut(from.1) {
                let path = format!("messages[{}].content[{}]", from.0, from.1);
                if let Some(marker) = as_object(slot, &path)?.get("cache_control") {
                    markers.insert(*from, marker.clone());
                }
            }
        }
        let mut incoming: HashMap<usize, Vec<(Option<usize>, Slot<'a>)>> = HashMap::new();
        for (from, to) in &moves {
            if let Some(marker) = markers.remove(from) {
                incoming.entry(to.0).or_default().push((to.1, marker));
            }
        }

        let mut drafts: Vec<Draft<'a>> = Vec::with_capacity(w);
        for (i, act) in acts.iter().enumerate() {
            let role = views[i].role().unwrap_or(Role::User);
            if !survives(&views[i], act) {
                self.stats.messages_dropped += 1;
                continue;
            }
            let arriving = incoming.remove(&i);
            if act.iter().all(|a| *a == Act::Keep) && arriving.is_none() {
                drafts.push(Draft {
                    role,
                    source: i,
                    edit: None,
                });
                continue;
            }
            let mut edit = self.open(i)?;
            let mut changed = false;
            let old = std::mem::take(edit.blocks(&views[i]));
            let mut kept = Vec::with_capacity(old.len());
            for (b, (mut slot, kind)) in old.into_iter().enumerate() {
                let path = format!("messages[{i}].content[{b}]");
                match act.get(b).copied().unwrap_or(Act::Keep) {
                    Act::Remove => {
                        changed = true;
                        continue;
                    }
                    Act::Placeholder => {
                        let pair = placeholder_of.get(&(i, b)).map(|&n| &pairs[n]);
                        let (name, id) = pair
                            .map(|p| (p.name.as_str(), p.id.as_str()))
                            .unwrap_or(("tool", ""));
                        let obj = as_object(&mut slot, &path)?;
                        if kind == BlockKind::ToolResult {
                            if let Some(marker) = self.placeholder(obj.get("content"), name, id) {
                                obj.set("content", marker);
                                changed = true;
                            }
                        } else if let Some(empty) = self.cleared_input(obj.get("input")) {
                            obj.set("input", empty);
                            changed = true;
                        }
                    }
                    Act::Keep => {}
                }
                kept.push((slot, kind));
            }
            for (target, marker) in arriving.into_iter().flatten() {
                // String content became one text block; blocks keep their indices among the
                // kept ones only if nothing before them went, so find the block by origin.
                let at = match target {
                    None => Some(kept.len().saturating_sub(1)),
                    Some(b) => {
                        let removed_before = act[..b].iter().filter(|a| **a == Act::Remove).count();
                        Some(b - removed_before)
                    }
                };
                if let Some((slot, _)) = at.and_then(|k| kept.get_mut(k)) {
                    let path = format!("messages[{i}].content");
                    as_object(slot, &path)?.set("cache_control", marker);
                    changed = true;
                }
            }
            *edit.blocks(&views[i]) = kept;
            drafts.push(Draft {
                role,
                source: i,
                edit: changed.then_some(edit),
            });
        }

        // Merge the same-role runs that dropping messages created, each run once.
        let mut merged: Vec<Draft<'a>> = Vec::with_capacity(drafts.len());
        for draft in drafts {
            match merged.last_mut() {
                Some(prev) if prev.role == draft.role => {
                    if prev.edit.is_none() {
                        prev.edit = Some(self.open(prev.source)?);
                    }
                    let next = match draft.edit {
                        Some(e) => e,
                        None => self.open(draft.source)?,
                    };
                    if let Some(into) = prev.edit.as_mut() {
                        self.merge(into, prev.source, next, draft.source);
                    }
                    self.stats.messages_merged += 1;
                }
                _ => merged.push(draft),
            }
        }
        Ok(merged
            .into_iter()
            .map(|d| match d.edit {
                None => Planned::Keep(d.source),
                Some(edit) => edit.finish(),
            })
            .collect())
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

    /// Merges message `from` (input index `source`) into `into` (input index `target`):
    /// blocks appended, fields `into` lacks copied, conflicting fields reported.
    fn merge(&mut self, into: &mut Edit<'a>, target: usize, mut from: Edit<'a>, source: usize) {
        let views = self.views;
        let add = std::mem::take(from.blocks(&views[source]));
        into.blocks(&views[target]).extend(add);
        into.merged = true;
        for (key, value) in from.obj.into_members() {
            if key == "role" || key == "content" {
                continue;
            }
            match into.obj.get(&key) {
                None => into.obj.set(&key, value),
                Some(v) if v.same_value(&value) => {}
                Some(_) => self.warnings.push(Warning {
                    code: "merge_field_conflict".into(),
                    message: format!(
                        "messages[{source}] was merged into the message before it; its {key:?} differs and the earlier value was kept"
                    ),
                    path: Some(format!("messages[{source}].{key}")),
                }),
            }
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
            let path = join_index("messages", i);
            if view.role() == Some(Role::Tool) {
                let pair = tool_acts.get(&i).map(|&p| &pairs[p]);
                let act = match pair {
                    Some(p) => p.act,
                    None if orphan_tools.contains(&i) => Act::Remove,
                    None => Act::Keep,
                };
                match (act, pair) {
                    (Act::Remove, _) => {
                        self.stats.tool_results_removed += 1;
                        self.stats.messages_dropped += 1;
                    }
                    (Act::Placeholder, Some(pair)) => {
                        let mut edit = self.open(i)?;
                        match self.placeholder(edit.obj.get("content"), &pair.name, &pair.id) {
                            Some(marker) => {
                                edit.obj.set("content", marker);
                                out.push(edit.finish());
                            }
                            None => out.push(Planned::Keep(i)),
                        }
                    }
                    _ => out.push(Planned::Keep(i)),
                }
                continue;
            }
            let calls = view.tool_calls();
            let acts: Vec<Act> = (0..calls.len())
                .map(|c| {
                    call_acts
                        .get(&(i, c))
                        .map(|&p| pairs[p].act)
                        .unwrap_or(Act::Keep)
                })
                .collect();
            let clears = self.options.clear_tool_inputs && acts.contains(&Act::Placeholder);
            if !acts.contains(&Act::Remove) && !clears {
                out.push(Planned::Keep(i));
                continue;
            }
            let mut edit = self.open(i)?;
            let mut changed = false;
            let list = edit
                .obj
                .get("tool_calls")
                .and_then(Slot::raw)
                .and_then(Slot::elements);
            let mut kept = Vec::new();
            for (c, mut call) in list.unwrap_or_default().into_iter().enumerate() {
                match acts.get(c).copied().unwrap_or(Act::Keep) {
                    Act::Remove => {
                        self.stats.tool_calls_removed += 1;
                        changed = true;
                        continue;
                    }
                    Act::Placeholder => {
                        let cpath = format!("{path}.tool_calls[{c}]");
                        let function = as_object(&mut call, &cpath)?.get_mut("function");
                        if let Some(function) = function {
                            let f = as_object(function, &format!("{cpath}.function"))?;
                            if let Some(empty) = self.cleared_input(f.get("arguments")) {
                                f.set("arguments", empty);
                                changed = true;
                            }
                        }
                    }
                    Act::Keep => {}
                }
                kept.push(call);
            }
            if !changed {
                out.push(Planned::Keep(i));
                continue;
            }
            let no_calls = kept.is_empty();
            if no_calls {
                edit.obj.remove("tool_calls");
            } else {
                edit.obj.set("tool_calls", Slot::Array(kept));
            }
            let empty_content = match &view.content {
                ContentView::Missing | ContentView::Null => true,
                ContentView::Text { empty } => *empty,
                ContentView::Blocks(blocks) => blocks.is_empty(),
            };
            if empty_content && no_calls {
                self.stats.messages_dropped += 1;
                continue;
            }
            out.push(edit.finish());
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
