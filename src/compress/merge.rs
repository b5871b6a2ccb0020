//! Stage 4, merge: runs of consecutive whole-message prose summaries of one role (OpenAI's shape,
//! where such runs are legal) become one summary of the whole run (docs/design.md, "The compress
//! pipeline"): `[summary#id: … (3 messages merged)]`. Only messages whose fields other than
//! `content` are equal (the same `role`, `name`, and any other field) merge: the merged message
//! carries the first one's fields, so merging messages of two speakers would drop the second's
//! `name`.

use std::ops::Range;
use std::rc::Rc;

use serde_json::Value;

use super::env::Env;
use super::fate::{self, confidence};
use super::method::{Abstractive, SummaryRequest};
use super::parse::Parsed;
use super::quotes;
use super::render::{Decisions, MsgOut, Shape};
use crate::message::Role;

/// The runs of 2+ consecutive merge candidates of one role (see the module docs).
pub(super) fn groups(parsed: &Parsed<'_>, rendered: &[Option<Rc<MsgOut>>]) -> Vec<Range<usize>> {
    let mergeable = |i: usize| rendered[i].as_ref().is_some_and(|r| r.mergeable);
    let mut out = Vec::new();
    let mut i = 0;
    while i < rendered.len() {
        if !mergeable(i) {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < rendered.len()
            && mergeable(end)
            && parsed.views[end].role == parsed.views[end - 1].role
            && same_envelope(&parsed.values[end], &parsed.values[end - 1])
        {
            end += 1;
        }
        if end - i > 1 {
            out.push(i..end);
        }
        i = end;
    }
    out
}

/// Whether two messages are equal in every field but `content`.
fn same_envelope(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let others = |m: &serde_json::Map<String, Value>| {
                m.len() - usize::from(m.contains_key("content"))
            };
            others(a) == others(b)
                && a.iter()
                    .filter(|(k, _)| k.as_str() != "content")
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => false,
    }
}

/// A run merged into one message.
pub(super) struct Merged {
    pub id: String,
    pub json: String,
    pub tokens: usize,
    pub requests: Vec<SummaryRequest>,
    pub accepted: usize,
    pub rejected: usize,
}

/// The run `range` as one summary message, when that is shorter than the run (and than its
/// messages' own summaries) and confident enough (`minConfidence`); else `None`: its messages
/// stay one by one.
pub(super) fn merged(
    env: &Env<'_, '_>,
    shape: &Shape,
    d: &Decisions,
    range: Range<usize>,
    rendered: &[Option<Rc<MsgOut>>],
) -> Option<Merged> {
    let parsed = env.parsed;
    let options = env.options;
    let tok = env.tok;
    let joined: String = parsed.values[range.clone()]
        .iter()
        .filter_map(|v| v.get("content").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n\n");
    let user = parsed.views[range.start].role() == Some(Role::User);
    let body = fate::merged_body(env, &joined, shape.rung.level(), &d.known, user);
    let body = if options.preserve_quotes {
        quotes::keep(body, &joined)
    } else {
        body
    };
    let id = env.range_id(range.clone());
    let n = range.len();
    let mut marker = format!("[summary#{id}: {body} ({n} messages merged)]");
    let before: usize = parsed.counts[range.clone()].iter().sum();
    // Both sides with their ids at their costliest: whether messages merge does not hang on
    // where they sit.
    let separate: usize = range
        .clone()
        .filter_map(|m| rendered[m].as_ref().map(|r| r.tokens + r.slack))
        .sum();
    let slack = tok.id_slack(&id);
    let tokens = tok.count(&marker) + slack;
    if tokens >= before
        || tokens > separate
        || (options.min_confidence > 0.0 && confidence(&body, &joined) < options.min_confidence)
    {
        return None;
    }
    let mut abstractive = Abstractive::new(options);
    let wrap = |s: &str| format!("[summary#{id}: {s} ({n} messages merged)]");
    if let Some(m) = abstractive.take(
        tok,
        &joined,
        &body,
        &marker,
        (
            range.start + parsed.offset,
            None,
            parsed.views[range.start].role.as_ref(),
            "merged",
        ),
        // Not longer than the messages' own summaries either (a budget chose on those); the
        // id at its costliest, as above.
        (&wrap, before.min(separate + 1).saturating_sub(slack)),
    ) {
        marker = m;
    }
    let tokens = tok.count(&marker);
    let mut msg = parsed.values[range.start].clone();
    if let Some(obj) = msg.as_object_mut() {
        obj.insert("content".into(), Value::String(marker));
    }
    let (requests, accepted, rejected) = abstractive.finish();
    Some(Merged {
        id,
        json: msg.to_string(),
        tokens,
        requests,
        accepted,
        rejected,
    })
}
