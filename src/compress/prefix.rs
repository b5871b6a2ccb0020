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
//!   window 0, the default level, names and trace indexes global): dedup, merges and JSON
//!   references cannot reach past it, so its output depends on its own bytes and position only;
//! - the messages after the last frozen block are kept verbatim (at most
//!   `recencyWindow + PREFIX_BLOCK − 1` of them);
//! - a budget is checked, not chased: if the stable output fits, it is returned; if not, the
//!   whole conversation goes through the ordinary budget loop, `stats.prefixStable` is false and
//!   a warning says so (the prefix changes at that call; once it fits again, later calls are
//!   stable again).
//!
//! So for calls on `m` and on `m` grown by new messages (same options), the first
//! `stats.prefixMessages` output messages of the first call are byte-identical in the second,
//! whenever both report `prefixStable: true`. Each frozen block is a cache entry (keyed by its
//! messages, position, options and query), so with a cache a grown conversation costs only its
//! new blocks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::budget::{self, Tuning};
use super::counter::Tokens;
use super::options::PREFIX_BLOCK;
use super::summarize::{Level, Query};
use super::{message_text, CompressOptions, CompressStats, Decision, Out, Plan};
use crate::error::{Error, ErrorKind};

/// The pipeline of one call: prefix-stable when asked for, else the budget loop.
pub(super) fn run(
    raws: &[&RawValue],
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    if !options.prefix_stable {
        return budget::run(raws, options, query, tok);
    }
    let n = raws.len();
    let tokens = |r: &RawValue| -> Result<usize, Error> {
        let v: serde_json::Value = serde_json::from_str(r.get())
            .map_err(|e| Error::new(ErrorKind::InvalidJson, "messages", e.to_string()))?;
        Ok(tok.count(&message_text(&v)))
    };
    let frozen_end = frozen_end(n, options.recency_window);
    let mut messages: Vec<Out> = Vec::with_capacity(n);
    let mut verbatim: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut trace: Vec<Decision> = Vec::new();
    let mut stats = CompressStats {
        messages_before: n,
        ..CompressStats::default()
    };
    let mut before = 0;
    let mut after = 0;
    let below_min = {
        let mut total = 0;
        for r in raws {
            total += tokens(r)?;
        }
        total <= options.min_tokens
    };
    let stable_end = if below_min { 0 } else { frozen_end };
    let mut requests = Vec::new();
    for start in (0..stable_end).step_by(PREFIX_BLOCK) {
        let end = (start + PREFIX_BLOCK).min(stable_end);
        let block = block_plan(&raws[start..end], start, options, query, tok)?;
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
        before += s.tokens_before;
        after += s.tokens_after;
        stats.preserved += s.preserved;
        stats.summarized += s.summarized;
        stats.deduped += s.deduped;
        stats.merged += s.merged;
        stats.code_split += s.code_split;
    }
    let prefix_messages = messages.len();
    let window_from = n.saturating_sub(options.recency_window);
    for (i, raw) in raws.iter().enumerate().skip(stable_end) {
        let t = tokens(raw)?;
        before += t;
        after += t;
        stats.preserved += 1;
        messages.push(Out::Keep(i));
        trace.push(Decision {
            index: i,
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
    let budget = options.token_budget.or_else(|| {
        options
            .target_ratio
            .map(|r| (before as f64 * r).floor() as usize)
    });
    if let Some(b) = budget {
        if after > budget::target(b, tok) {
            let mut whole = budget::run(raws, options, query, tok)?;
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

/// One frozen block compressed on its own (through the cache when there is one).
fn block_plan(
    raws: &[&RawValue],
    offset: usize,
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    let tuning = Tuning {
        recency_window: 0,
        offset,
        ..Tuning::base(options)
    };
    debug_assert_eq!(tuning.level, Level::DEFAULT);
    // Summary requests (abstractive / hybrid, phase 1) are not stored with a block: such
    // blocks are planned every time.
    if !query.memo.has_cache() || options.method.is_abstractive() {
        return super::plan(raws, options, tuning, query, tok);
    }
    let options_json = serde_json::to_string(options).unwrap_or_default();
    let fingerprint = query.fingerprint();
    let offset_bytes = (offset as u64).to_le_bytes();
    let mut parts: Vec<&[u8]> = vec![
        b"prefix_block",
        &offset_bytes,
        options_json.as_bytes(),
        fingerprint.as_bytes(),
    ];
    parts.extend(raws.iter().map(|r| r.get().as_bytes()));
    let mut failed: Option<Error> = None;
    let stored = query.memo.text(&parts, || {
        match super::plan(raws, options, tuning, query, tok) {
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
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    match serde_json::from_str::<StoredPlan>(&stored) {
        Ok(p)
            if p.messages.iter().all(|m| match m {
                StoredOut::Keep(i) => *i < raws.len(),
                StoredOut::New(_) => true,
            }) =>
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
        _ => super::plan(raws, options, tuning, query, tok),
    }
}
