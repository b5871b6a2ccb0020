//! The Anthropic side of the watermark planner: tool_use/tool_result blocks, thinking,
//! `cache_control` markers and the merging of same-role runs.

use crate::text::hash::{FastMap as HashMap, FastSet as HashSet};

use super::plan::{
    apply_pairs, as_object, survives, Act, Acts, CacheMove, Draft, Edit, Pair, Planned, Pruner,
    Results,
};
use super::Warning;
use crate::error::Error;
use crate::message::{BlockKind, ContentView, MessageView, Role, Slot};

impl<'a> Pruner<'a, '_> {
    pub(super) fn anthropic(&mut self) -> Result<Vec<Planned>, Error> {
        let views = self.views;
        let w = self.w;
        // Pairs of the prefix; results of prefix calls found anywhere pin or join them.
        let mut pairs: Vec<Pair> = Vec::new();
        let mut by_id: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(w, Default::default());
        let mut acts = Acts::keep_all(&views[..w]);
        for (i, view) in views[..w].iter().enumerate() {
            for (b, block) in view.blocks().iter().enumerate() {
                let kind = block.kind();
                if matches!(kind, BlockKind::ToolUse | BlockKind::ServerToolUse) {
                    let id = block.id.as_deref().unwrap_or("");
                    by_id.insert(id, pairs.len());
                    pairs.push(Pair {
                        name: block.name.as_deref().unwrap_or(""),
                        id,
                        call: (i, b),
                        results: Results::default(),
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
                            if let Some(act) = acts.get_mut(i, b) {
                                *act = Act::Remove;
                            }
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
                        if let Some(act) = acts.get_mut(i, b) {
                            *act = Act::Remove;
                        }
                        self.stats.thinking_removed += 1;
                    }
                }
            }
        }

        // Roles must alternate into the watermark message, which cannot change: while the last
        // surviving prefix message has its role, keep the newest removed pair whole.
        // (Pairs own disjoint blocks, none of them thinking or orphan results: applying them
        // again after a change is applying the new decisions to the acts before them.)
        loop {
            apply_pairs(&pairs, &mut acts);
            let last = (0..w).rev().find(|&i| survives(&views[i], acts.of(i)));
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
        let mut markers: HashMap<(usize, usize), Slot<'a>> = HashMap::default();
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
        let mut incoming: HashMap<usize, Vec<(Option<usize>, Slot<'a>)>> = HashMap::default();
        for (from, to) in &moves {
            if let Some(marker) = markers.remove(from) {
                incoming.entry(to.0).or_default().push((to.1, marker));
            }
        }

        let mut drafts: Vec<Draft<'a>> = Vec::with_capacity(w);
        for (i, view) in views[..w].iter().enumerate() {
            let act = acts.of(i);
            let role = view.role().unwrap_or(Role::User);
            if !survives(view, act) {
                self.stats.messages_dropped += 1;
                continue;
            }
            let arriving = if incoming.is_empty() {
                None
            } else {
                incoming.remove(&i)
            };
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
                match act.get(b).copied().unwrap_or(Act::Keep) {
                    Act::Remove => {
                        changed = true;
                        continue;
                    }
                    Act::Placeholder => {
                        let pair = placeholder_of.get(&(i, b)).map(|&n| &pairs[n]);
                        let (name, id) = pair.map(|p| (p.name, p.id)).unwrap_or(("tool", ""));
                        let path = format!("messages[{i}].content[{b}]");
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
    fn relocate_cache_control(&mut self, acts: &Acts) -> Vec<CacheMove> {
        let views = self.views;
        let w = self.w;
        let kept_block = |i: usize, b: usize| acts.of(i).get(b).is_some_and(|a| *a != Act::Remove);
        let string_content = |i: usize| matches!(views[i].content, ContentView::Text { .. });
        let mut moves = Vec::new();
        let mut targets: HashSet<(usize, Option<usize>)> = HashSet::default();
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
}
