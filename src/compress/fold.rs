//! Stage 5, fold: the budget's last resort replaces the oldest messages with one `user`
//! message that lists what the next turn most likely needs from them
//! (`[summary#1c9e04aa 5 messages folded | 83214 94016]`).

use crate::text::hash::FastSet;
use std::ops::Range;

use super::fate::Known;
use super::options::CompressOptions;
use super::parse::{message_text, tool_outputs, Parsed};
use super::summarize::Query;
use crate::message::{Format, Role};
use crate::text::keys;

/// The messages `[start, end)` a plan folds: the oldest ones after the leading preserved-role
/// messages, ending at the largest valid cut at most `start + want`. A cut is valid when the
/// `user` summary that replaces the run keeps the provider's rules: OpenAI — the next message
/// is not a tool result (its call would be gone); Anthropic — the next message is an assistant
/// message and the run ends with a user message (alternation, and every tool result stays with
/// its tool use). The newest message is folded only when `want` is `usize::MAX`; a
/// preserved-role message never is.
pub(super) fn range(parsed: &Parsed<'_>, options: &CompressOptions, want: usize) -> Range<usize> {
    let n = parsed.len();
    let views = &parsed.views;
    let start = (0..n)
        .find(|&i| !parsed.preserved_role(i, options))
        .unwrap_or(n);
    if want == 0 || n < 2 {
        return start..start;
    }
    // OpenAI's rules only where the shape is unmistakably OpenAI's; otherwise cuts that keep
    // both providers' rules.
    let openai_only = parsed.format == Format::OpenAi
        && views
            .iter()
            .any(|v| v.role() == Some(Role::Tool) || !v.tool_calls().is_empty());
    let mut best = start;
    // `usize::MAX`: everything may go, the newest message too (the budget's very last step).
    let end = if want == usize::MAX { n + 1 } else { n };
    for c in start + 1..end {
        if c - start > want || parsed.preserved_role(c - 1, options) {
            break;
        }
        let ok = if c == n {
            true
        } else if openai_only {
            views[c].role() != Some(Role::Tool)
        } else {
            views[c].role() == Some(Role::Assistant) && views[c - 1].role() == Some(Role::User)
        };
        if ok {
            best = c;
        }
    }
    start..best
}

/// What a fold lists, most needed first, with what the folded summary's key list needs to be
/// made again in any room.
pub(super) struct Listed {
    /// The candidates, most needed first.
    pub keys: Vec<String>,
    /// The folded messages' characters.
    pub chars: usize,
    /// For each candidate, the earlier ones that hold it as a token ([`keys::TokenHolders`]),
    /// from when the list is made a second time (a list made once is decided as it goes), as
    /// far as a list has looked.
    holders: std::cell::RefCell<Option<keys::TokenHolders>>,
    /// Whether the list was made once already.
    made: std::cell::Cell<bool>,
    /// The list's separator ([`separator`]).
    sep: &'static str,
    /// Each candidate's characters.
    lens: Vec<usize>,
    /// The fewest characters of a candidate from each position on: a list whose room is
    /// smaller than that (with a separator) takes none of them.
    fewest_after: Vec<usize>,
}

impl Listed {
    pub(super) fn new(keys: Vec<String>, chars: usize) -> Listed {
        let lens: Vec<usize> = keys.iter().map(|k| k.chars().count()).collect();
        let mut fewest_after = lens.clone();
        for i in (0..fewest_after.len().saturating_sub(1)).rev() {
            fewest_after[i] = fewest_after[i].min(fewest_after[i + 1]);
        }
        Listed {
            holders: std::cell::RefCell::new(None),
            made: std::cell::Cell::new(false),
            sep: separator(&keys),
            keys,
            chars,
            lens,
            fewest_after,
        }
    }
}

/// What one message gives the folds that take it in: its tool outputs' values (as
/// `values` gives them: the query's first, output after output), its key tokens and its
/// characters. Made once per message for all the folds a budget measures.
pub(super) struct Parts {
    values: Vec<String>,
    keys: std::rc::Rc<Vec<(String, keys::KeyKind)>>,
    chars: usize,
}

impl Parts {
    pub(super) fn new<'v>(
        parsed: &Parsed<'v>,
        g: usize,
        terms: &Query,
        values: impl Fn(&'v str) -> Vec<String>,
    ) -> Parts {
        let values = tool_outputs(&parsed.values[g], parsed.is_tool_message(g))
            .into_iter()
            .flat_map(values)
            .collect();
        let text = message_text(&parsed.values[g]);
        Parts {
            values,
            keys: terms.memo.keys(&text),
            chars: crate::text::count_chars(&text),
        }
    }
}

/// What a fold of `range` lists, most needed first: the values of the folded tool outputs,
/// newest first, then the key tokens of every folded message — newest first or, under a query,
/// the most relevant message first (newest first among equals). Key tokens kept verbatim
/// elsewhere (`known`) are left out. Also the folded messages' characters. `parts` gives each
/// message's [`Parts`].
pub(super) fn candidates(
    range: Range<usize>,
    known: &Known,
    relevance: Option<&[f64]>,
    parts: impl Fn(usize) -> std::rc::Rc<Parts>,
) -> Listed {
    let mut chars = 0;
    let mut out: Vec<String> = Vec::new();
    // Each message's parts, newest first: the list borrows its candidates from them.
    let newest_first: Vec<(usize, std::rc::Rc<Parts>)> =
        range.clone().rev().map(|g| (g, parts(g))).collect();
    let of = |g: usize| &newest_first[range.end - 1 - g].1;
    let mut listed: FastSet<&str> = FastSet::default();
    let mut order: Vec<usize> = range.clone().rev().collect();
    if let Some(relevance) = relevance {
        let of = |g: usize| relevance.get(g).copied().unwrap_or(0.0);
        order.sort_by(|&a, &b| of(b).total_cmp(&of(a)));
    }
    for (_, p) in &newest_first {
        for k in &p.values {
            if !known.set.contains(k) && listed.insert(k) {
                out.push(k.clone());
            }
        }
    }
    for &g in &order {
        let p = of(g);
        chars += p.chars;
        for k in known.fill_keys_in(&p.keys) {
            if listed.insert(k) {
                out.push(k.to_string());
            }
        }
    }
    drop(listed);
    Listed::new(out, chars)
}

/// The body of a folded summary within `budget` characters: `N messages folded | a b c`, the
/// label dropped when it would crowd out values (a tiny budget), `N messages folded` when no
/// value fits, nothing when not even that fits. Values are separated by one space (a comma
/// costs a token of its own, and under the tightest budgets that token is a value), or by `, `
/// when a candidate has white space in it (`94016, San Francisco`), so the list stays
/// readable.
pub(super) fn body(count: usize, listed: &Listed, budget: usize) -> String {
    let label = format!("{count} messages folded");
    let list = |room: usize| greedy_list(listed, room);
    let (alone, used) = list(budget);
    if alone.is_empty() {
        return if label.len() <= budget {
            label
        } else {
            String::new()
        };
    }
    // The label stays when the same list fits beside it. The greedy makes the same choices
    // within any room the full list fits in, so the list is only made again when it does not.
    let room = budget.saturating_sub(label.len() + 3);
    if used <= room || list(room).0 == alone {
        format!("{label} | {alone}")
    } else {
        alone
    }
}

/// The length in characters of the longest body [`body`] makes of `candidates`: every one of
/// them listed beside the label. Any budget at least this long gives the same body.
pub(super) fn longest_body(count: usize, candidates: &[String]) -> usize {
    let sep = separator(candidates).len();
    let listed: usize = candidates.iter().map(|k| k.chars().count() + sep).sum();
    format!("{count} messages folded | ").len() + listed.saturating_sub(sep)
}

/// `", "` when a candidate has white space in it, else `" "` (see [`body`]).
fn separator(candidates: &[String]) -> &'static str {
    if candidates
        .iter()
        .any(|k| k.chars().any(char::is_whitespace))
    {
        ", "
    } else {
        " "
    }
}

/// The candidates that fit in `room` characters, in order, each skipped when it does not fit or
/// an appended one already holds it as a token; and the characters the list uses.
fn greedy_list(listed: &Listed, room: usize) -> (String, usize) {
    let again = listed.made.replace(true);
    let mut holders = listed.holders.borrow_mut();
    let mut appended = if again {
        let holders = holders.get_or_insert_with(|| keys::TokenHolders::new(&listed.keys));
        Appended::Flags(holders, vec![false; listed.keys.len()])
    } else {
        Appended::Tokens(keys::AppendedTokens::default())
    };
    let sep = listed.sep;
    let mut out = String::new();
    let mut used = 0;
    for (i, k) in listed.keys.iter().enumerate() {
        let gap = if out.is_empty() { 0 } else { sep.len() };
        // No candidate from here on fits in what is left.
        if used + gap + listed.fewest_after[i] > room {
            break;
        }
        let len = listed.lens[i] + gap;
        if used + len > room || appended.holds(&listed.keys, i, k) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(k);
        appended.add(i, k);
        used += len;
    }
    (out, used)
}

/// The keys [`greedy_list`] appended so far: split into their tokens as it goes (a list made
/// once), or flags over the list's [`keys::TokenHolders`] (a list made again).
enum Appended<'l> {
    Tokens(keys::AppendedTokens<'l>),
    Flags(&'l mut keys::TokenHolders, Vec<bool>),
}

impl<'l> Appended<'l> {
    /// Whether an appended key holds key `i`, `k`, of `keys` as a token.
    fn holds(&mut self, keys: &[String], i: usize, k: &str) -> bool {
        match self {
            Appended::Tokens(t) => t.contains(k),
            Appended::Flags(holders, flags) => holders.held(keys, i, flags),
        }
    }

    fn add(&mut self, i: usize, k: &'l str) {
        match self {
            Appended::Tokens(t) => t.add(k),
            Appended::Flags(_, flags) => flags[i] = true,
        }
    }
}

/// The fold's marker text (no colon after the id, unlike other summaries: under the tightest
/// budgets its token is a value).
pub(super) fn marker(id: &str, body: &str) -> String {
    if body.is_empty() {
        format!("[summary#{id}]")
    } else {
        format!("[summary#{id} {body}]")
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The key list as first written: each appended key split into its tokens as it goes.
    fn greedy_reference(candidates: &[String], sep: &str, room: usize) -> String {
        let mut out = String::new();
        let mut used = 0;
        let mut appended = keys::AppendedTokens::default();
        for k in candidates {
            let len = k.chars().count() + if out.is_empty() { 0 } else { sep.len() };
            if used + len > room || appended.contains(k) {
                continue;
            }
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(k);
            appended.add(k);
            used += len;
        }
        out
    }

    /// `body` as first written: both lists made as they go, the label kept when they are equal.
    fn body_reference(count: usize, candidates: &[String], budget: usize) -> String {
        let label = format!("{count} messages folded");
        let sep = separator(candidates);
        let with_label = greedy_reference(candidates, sep, budget.saturating_sub(label.len() + 3));
        let alone = greedy_reference(candidates, sep, budget);
        if alone.is_empty() {
            if label.len() <= budget {
                label
            } else {
                String::new()
            }
        } else if with_label == alone {
            format!("{label} | {alone}")
        } else {
            alone
        }
    }

    proptest! {
        /// Making the labelled list only when the full one does not fit beside the label, and
        /// deciding each key by its holders when the list is made again, change nothing.
        #[test]
        fn body_is_the_two_list_greedy(
            count in 1usize..2000,
            candidates in prop::collection::vec("[a-z0-9_./-]{1,12}( [A-Z][a-z]{1,6})?|[a-z]{1,3}|[a-z0-9_./ -]{40,60}", 0..24),
            budget in 0usize..160,
        ) {
            let mut seen = std::collections::HashSet::new();
            let candidates: Vec<String> = candidates.into_iter().filter(|k| seen.insert(k.clone())).collect();
            let listed = Listed::new(candidates.clone(), 0);
            let want = body_reference(count, &candidates, budget);
            // Made once (keys split as the list goes), then again (decided by their holders).
            prop_assert_eq!(&body(count, &listed, budget), &want);
            prop_assert_eq!(&body(count, &listed, budget), &want);
        }

        /// Past [`longest_body`] a larger budget changes nothing, and the longest body is that
        /// long.
        #[test]
        fn longest_body_is_the_cap(
            count in 1usize..2000,
            candidates in prop::collection::vec("[a-z0-9_./-]{1,12}( [A-Z][a-z]{1,6})?", 1..24),
            more in 0usize..400,
        ) {
            let listed = Listed::new(candidates.clone(), 0);
            let cap = longest_body(count, &candidates);
            let at_cap = body(count, &listed, cap);
            prop_assert_eq!(&body(count, &listed, cap + more), &at_cap);
            prop_assert!(at_cap.chars().count() <= cap);
        }
    }
}
