//! The OpenAI side of the watermark planner: tool calls and `tool` messages before the
//! watermark (no merges: OpenAI accepts same-role runs).

use crate::text::hash::{FastMap as HashMap, FastSet as HashSet};

use super::plan::{as_object, Act, Pair, Planned, Pruner, Results};
use crate::error::{join_index, Error};
use crate::message::{ContentView, Role, Slot};

impl Pruner<'_, '_> {
    pub(super) fn openai(&mut self) -> Result<Vec<Planned>, Error> {
        let views = self.views;
        let w = self.w;
        let mut pairs: Vec<Pair> = Vec::new();
        let mut by_id: HashMap<&str, usize> = HashMap::default();
        for (i, view) in views[..w].iter().enumerate() {
            for (c, call) in view.tool_calls().iter().enumerate() {
                let id = call.id.as_deref().unwrap_or("");
                by_id.insert(id, pairs.len());
                pairs.push(Pair {
                    name: call.name(),
                    id,
                    call: (i, c),
                    results: Results::default(),
                    server: false,
                    keep: false,
                    act: Act::Remove,
                });
            }
        }
        // Tool messages: (index) → pair, or orphan.
        let mut orphan_tools: HashSet<usize> = HashSet::default();
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

        let mut call_acts: HashMap<(usize, usize), usize> = HashMap::default();
        let mut tool_acts: HashMap<usize, usize> = HashMap::default();
        for (p, pair) in pairs.iter().enumerate() {
            call_acts.insert(pair.call, p);
            for r in pair.results.iter() {
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
                        match self.placeholder(edit.obj.get("content"), pair.name, pair.id) {
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
                .and_then(Slot::json_text)
                .and_then(Slot::elements_of);
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
