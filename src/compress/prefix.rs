//! Prefix-stable mode (`options.prefixStable`): the output of a conversation's old messages
//! never changes when the conversation grows.
//!
//! What normally changes earlier output when a conversation grows: the recency window moves
//! (a message kept verbatim gets compressed), dedup keeps the newest copy (an old message
//! becomes a reference to a new one), JSON references point at newer copies, merge groups grow,
//! the budget's shares shift, and (with an embedder) nothing else: query relevance is per
//! sentence. This mode removes each cause:
//!
//! - the messages are cut into fixed blocks of [`PREFIX_BLOCK`] from the first message; a
//!   block is *frozen* once its last message is older than the recency window
//!   (`end ≤ n − recencyWindow`), so the frozen prefix only ever grows, by whole blocks;
//! - a frozen block is compressed on its own, as a conversation of its messages (recency
//!   window 0, the default level, names, marker ids and trace indexes global): dedup, merges
//!   and JSON references cannot reach past it, so its output depends on its own bytes and
//!   position only;
//! - the messages after the last frozen block are kept verbatim (at most
//!   `recencyWindow + PREFIX_BLOCK − 1` of them);
//! - a budget is checked, not chased: if the stable output fits, it is returned; if not, the
//!   whole conversation goes through the ordinary budget, `stats.prefixStable` is false and a
//!   warning says so (the prefix changes at that call; once it fits again, later calls are
//!   stable again).
//!
//! So for calls on `m` and on `m` grown by new messages (same options), the first
//! `stats.prefixMessages` output messages of the first call are byte-identical in the second,
//! whenever both report `prefixStable: true`. Each frozen block is a cache entry (keyed by its
//! messages, position, options, query and token counter), so with a cache a grown
//! conversation costs only its new blocks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::budget;
use super::classify::Classes;
use super::counter::Tokens;
use super::env::Env;
use super::options::{CompressOptions, PREFIX_BLOCK};
use super::output::{CompressStats, Decision, Out, Plan};
use super::parse::{Parsed, Units};
use super::render::{self, Shape};
use super::summarize::Query;
use crate::error::Error;

/// The pipeline of one call in prefix-stable mode (`whole` plans the whole conversation, for
/// when the stable output does not meet a budget).
pub(super) fn run(
    parsed: &Parsed<'_>,
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
    whole: impl FnOnce() -> Result<Plan, Error>,
) -> Result<Plan, Error> {
    let n = parsed.len();
    let before: usize = parsed.counts.iter().sum();
    let below_min = before <= options.min_tokens;
    let stable_end = if below_min {
        0
    } else {
        frozen_end(n, options.recency_window)
    };
    let mut messages: Vec<Out> = Vec::with_capacity(n);
    let mut verbatim: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut trace: Vec<Decision> = Vec::new();
    let mut requests = Vec::new();
    let mut stats = CompressStats {
        messages_before: n,
        ..CompressStats::default()
    };
    let mut after = 0;
    for start in (0..stable_end).step_by(PREFIX_BLOCK) {
        let end = (start + PREFIX_BLOCK).min(stable_end);
        let block = block_plan(parsed, start..end, options, query, tok)?;
        for m in block.messages {
            messages.push(match m {
                Out::Keep(i) => Out::Keep(i + start),
                Out::New(t) => Out::New(t),
            });
        }
        for (id, idx) in block.verbatim {
            verbatim.insert(id, idx.into_iter().map(|i| i + start).collect());
        }
        if let Some(t) = block.trace {
            trace.extend(t);
        }
        requests.extend(block.requests);
        let s = block.stats;
        after += s.tokens_after;
        stats.preserved += s.preserved;
        stats.summarized += s.summarized;
        stats.deduped += s.deduped;
        stats.merged += s.merged;
        stats.code_split += s.code_split;
    }
    let prefix_messages = messages.len();
    let window_from = n.saturating_sub(options.recency_window);
    for i in stable_end..n {
        after += parsed.counts[i];
        stats.preserved += 1;
        messages.push(Out::Keep(i));
        trace.push(Decision {
            index: i + parsed.offset,
            block: None,
            action: "preserved".into(),
            reason: if below_min {
                "below minTokens".into()
            } else if i >= window_from {
                "recency window".into()
            } else {
                "prefix-stable: block not complete".into()
            },
        });
    }
    stats.messages_after = messages.len();
    stats.tokens_before = before;
    stats.tokens_after = after;
    stats.ratio = if after == 0 {
        1.0
    } else {
        before as f64 / after as f64
    };
    if let Some(b) = budget::stated(options, before) {
        if after > budget::target(b, tok) {
            let mut whole = whole()?;
            whole.stats.prefix_stable = Some(false);
            whole.stats.warnings.push(format!(
                "prefixStable: the stable output ({after} tokens) does not meet the budget \
                 ({b}); the conversation was compressed as a whole and earlier messages changed"
            ));
            return Ok(whole);
        }
        stats.budget = Some(b);
        stats.fits = Some(true);
    }
    if options.method.is_abstractive() && options.summaries.is_none() {
        stats
            .warnings
            .push(super::method::no_summarizer_warning(options.method));
    }
    stats.prefix_stable = Some(true);
    stats.prefix_messages = Some(prefix_messages);
    trace.sort_by_key(|d| (d.index, d.block));
    Ok(Plan {
        messages,
        verbatim,
        stats,
        trace: options.trace.then_some(trace),
        requests,
    })
}

/// Where the frozen blocks end for `n` messages: the last block boundary at or before the
/// recency window's start.
pub(super) fn frozen_end(n: usize, recency_window: usize) -> usize {
    (n.saturating_sub(recency_window) / PREFIX_BLOCK) * PREFIX_BLOCK
}

/// A block's plan as the cache stores it.
#[derive(Serialize, Deserialize)]
struct StoredPlan {
    /// Per output message: a kept input index (local), or the new message's JSON text.
    messages: Vec<StoredOut>,
    verbatim: BTreeMap<String, Vec<usize>>,
    stats: CompressStats,
    trace: Option<Vec<Decision>>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StoredOut {
    Keep(usize),
    New(String),
}

/// The block `range` of the conversation compressed on its own (recency window 0, the default
/// pass), through the caller's cache when there is one.
fn block_plan(
    parsed: &Parsed<'_>,
    range: std::ops::Range<usize>,
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    let compute = || -> Result<Plan, Error> {
        let values: &[Value] = &parsed.values[range.clone()];
        let raws: Option<&[&RawValue]> = parsed.raws.and_then(|r| r.get(range.clone()));
        let block = Parsed::new(raws, values, options, tok, parsed.offset + range.start)?;
        let units = Units::new(&block, options);
        let classes = Classes::new(&block, &units, options);
        let env = Env::new(&block, &units, &classes, options, query, tok, false);
        let shape = Shape {
            recency_window: 0,
            ..Shape::base(options)
        };
        Ok(render::plan(&env, &shape))
    };
    // Summary requests (abstractive / hybrid, phase 1) are not stored with a block, and a
    // caller's counter has no identity a key could hold: such blocks are planned every time.
    let Some(counter) = tok.identity().filter(|_| query.memo.has_cache()) else {
        return compute();
    };
    if options.method.is_abstractive() {
        return compute();
    }
    let options_json = serde_json::to_string(options).unwrap_or_default();
    let fingerprint = query.fingerprint();
    let offset_bytes = ((parsed.offset + range.start) as u64).to_le_bytes();
    let mut parts: Vec<&[u8]> = vec![
        b"prefix_block",
        &offset_bytes,
        options_json.as_bytes(),
        fingerprint.as_bytes(),
        counter.as_bytes(),
    ];
    let texts: Vec<String> = (range.clone()).map(|i| parsed.json_of(i)).collect();
    parts.extend(texts.iter().map(|t| t.as_bytes()));
    let mut failed: Option<Error> = None;
    let stored = query.memo.text(&parts, || match compute() {
        Ok(p) => serde_json::to_string(&StoredPlan {
            messages: p
                .messages
                .into_iter()
                .map(|m| match m {
                    Out::Keep(i) => StoredOut::Keep(i),
                    Out::New(t) => StoredOut::New(t),
                })
                .collect(),
            verbatim: p.verbatim,
            stats: p.stats,
            trace: p.trace,
        })
        .unwrap_or_default(),
        Err(e) => {
            failed = Some(e);
            String::new()
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    match serde_json::from_str::<StoredPlan>(&stored) {
        Ok(p)
            if p.messages.iter().all(|m| match m {
                StoredOut::Keep(i) => *i < range.len(),
                StoredOut::New(_) => true,
            }) && p.verbatim.values().flatten().all(|&i| i < range.len()) =>
        {
            Ok(Plan {
                messages: p
                    .messages
                    .into_iter()
                    .map(|m| match m {
                        StoredOut::Keep(i) => Out::Keep(i),
                        StoredOut::New(t) => Out::New(t),
                    })
                    .collect(),
                verbatim: p.verbatim,
                stats: p.stats,
                requests: Vec::new(),
                trace: p.trace,
            })
        }
        // An entry that is not a block's plan (it can only come from a forged cache with a
        // valid checksum): computed afresh.
        _ => compute(),
    }
}
