//! Stage 6, render: one message in one form ([`message`]), and a whole plan from a [`Shape`]
//! ([`plan`]) — or only its tokens ([`total`]), which is what the budget compares.
//!
//! `total` and `plan` read the same per-message renderings, so a plan's tokens are never more
//! than its total (a merged run is accepted only when it is not longer than its messages'
//! own summaries): the budget chooses on totals and renders once.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::classify::{Dup, Preservation};
use super::env::Env;
use super::fate::{self, Fate, Known, Rung, Situation};
use super::merge;
use super::method::{self, Abstractive, SummarizerStats, SummaryRequest};
use super::output::{CompressStats, Decision, Out, Plan};
use super::parse::{has_tool_calls, message_text, UnitKind};
use super::{fold, summarize};
use crate::message::Format;

/// The characters of a cut text's preview unless the budget leaves room for more.
pub(super) const PREVIEW: usize = 60;

/// How hard a plan compresses: the budget's knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Shape {
    /// How compressible texts are summarised.
    pub rung: Rung,
    /// The last N messages are kept verbatim.
    pub recency_window: usize,
    /// Tool-call arguments outside the recency window are condensed to a reference.
    pub condense_calls: bool,
    /// Up to this many of the oldest messages are folded into one (`usize::MAX`: all but the
    /// preserved-role ones).
    pub fold: usize,
    /// The folded summary's size in characters (else the rung's share of the folded text).
    pub fold_chars: Option<usize>,
    /// The oldest messages with compressible text are cut to a preview, this many.
    pub truncate: usize,
    /// The characters of a cut text's preview, at most.
    pub preview: usize,
    /// `importanceScoring` may keep messages verbatim.
    pub importance: bool,
    /// Near-duplicates are deduplicated too.
    pub fuzzy: bool,
    /// Tool output may be summarised lossily.
    pub lossy: bool,
}

impl Shape {
    /// The default pass of `options`.
    pub(super) fn base(options: &super::options::CompressOptions) -> Shape {
        Shape {
            rung: Rung::Default,
            recency_window: options.recency_window,
            condense_calls: false,
            fold: 0,
            fold_chars: None,
            truncate: 0,
            preview: PREVIEW,
            importance: true,
            fuzzy: options.fuzzy_dedup,
            lossy: options.lossy_tool_output,
        }
    }
}

/// The memo key of one message's rendering: everything besides the message that decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct FormKey {
    rung: Rung,
    known: usize,
    condense: bool,
    /// Cut to a preview of this many characters at most.
    truncate: Option<usize>,
    fuzzy: bool,
    lossy: bool,
    superseded: Option<usize>,
}

/// One decision, its reason formatted only when a trace is asked for.
type Decided = (Option<usize>, &'static str, Cow<'static, str>);

/// A message rendered in one form.
#[derive(Default)]
pub(super) struct MsgOut {
    /// Whether it stays as it is (nothing was replaced).
    pub kept: bool,
    /// The new texts of its units, by block.
    pub replacements: Vec<(Option<usize>, String)>,
    /// Its tool-call arguments condensed to `[call#id]`: which of its OpenAI calls and
    /// Anthropic tool_use blocks.
    condensed: Option<(Vec<bool>, Vec<bool>)>,
    /// Its marker id.
    id: String,
    /// Tokens of its output text.
    pub tokens: usize,
    /// What its marker ids may cost beyond `tokens` ([`super::counter::Tokens::id_slack`] per
    /// id it holds): size guards compare `tokens + slack`, which does not depend on its
    /// position.
    pub slack: usize,
    /// Its output text ([`message_text`] of the output message; for a message that is one
    /// string, only when the call plans more than once).
    pub text: String,
    decisions: Vec<Decided>,
    counts: Counts,
    /// It is one whole-message prose summary (a merge candidate).
    pub mergeable: bool,
    pub requests: Vec<SummaryRequest>,
    pub accepted: usize,
    pub rejected: usize,
}

#[derive(Clone, Copy, Default)]
struct Counts {
    summarized: usize,
    deduped: usize,
    code_split: usize,
    superseded: usize,
    truncated: usize,
    condensed: usize,
}

/// What a plan decided per message before rendering: the preservation, the known key tokens,
/// the corrections, the duplicates, the truncated messages.
pub(super) struct Decisions {
    pub pres: Preservation,
    known_id: usize,
    pub known: Rc<Known>,
    superseded: Rc<BTreeMap<usize, (usize, String)>>,
    truncated: Vec<bool>,
}

/// Decides what `shape` keeps, folds and truncates.
pub(super) fn decide(env: &Env<'_, '_>, shape: &Shape) -> Decisions {
    let parsed = env.parsed;
    let n = parsed.len();
    let pres = env.classes.preserve(
        parsed,
        env.options,
        shape.recency_window,
        shape.condense_calls,
        shape.importance,
        shape.fold,
    );
    let (known_id, known) = if matches!(shape.rung, Rung::Fill(_)) {
        let kept: Vec<bool> = pres.kept.iter().map(Option::is_some).collect();
        env.known(&kept)
    } else {
        env.known(&[])
    };
    let superseded = if env.options.contradiction_detection {
        let eligible = (0..n)
            .map(|i| pres.kept[i].is_none() && !pres.fold.contains(&i))
            .collect();
        env.classes.superseded(eligible, parsed, env.options)
    } else {
        Rc::default()
    };
    let mut truncated = vec![false; n];
    if shape.truncate > 0 {
        let dups = dups(env, shape);
        let mut left = shape.truncate;
        for (i, t) in truncated.iter_mut().enumerate() {
            if left == 0 {
                break;
            }
            if pres.kept[i].is_some() || pres.fold.contains(&i) {
                continue;
            }
            let eligible = env.units.of_msg[i].clone().any(|u| {
                let info = env.classes.info(u, parsed, env.units, env.options);
                !info.short && !info.marker && dups.get(u).is_none_or(Option::is_none)
            });
            if eligible {
                *t = true;
                left -= 1;
            }
        }
    }
    Decisions {
        pres,
        known_id,
        known,
        superseded,
        truncated,
    }
}

/// The duplicates a shape replaces (none at the `None` rung).
fn dups<'e>(env: &'e Env<'_, '_>, shape: &Shape) -> &'e [Dup] {
    if shape.rung == Rung::None || !(env.options.dedup || shape.fuzzy) {
        return &[];
    }
    env.classes
        .dups(shape.fuzzy, env.parsed, env.units, env.options)
}

/// Message `m` (neither kept nor folded) rendered as `shape` and `d` decide.
pub(super) fn message(env: &Env<'_, '_>, m: usize, shape: &Shape, d: &Decisions) -> Rc<MsgOut> {
    let key = form_key(env, m, shape, d);
    if env.memoise {
        if let Some(out) = env.messages.borrow().get(&(m, key)) {
            return Rc::clone(out);
        }
    }
    let out = Rc::new(render_message(env, m, shape, d, key));
    if env.memoise {
        env.messages.borrow_mut().insert((m, key), Rc::clone(&out));
        env.message_tokens.borrow_mut().insert((m, key), out.tokens);
    }
    out
}

/// The tokens of message `m` in the form `shape` gives it: [`message`]'s `tokens`, remembering
/// only the count (see [`Env::message_tokens`]).
fn message_tokens(env: &Env<'_, '_>, m: usize, shape: &Shape, d: &Decisions) -> usize {
    if !env.memoise || env.keep_forms.get() {
        return message(env, m, shape, d).tokens;
    }
    let key = form_key(env, m, shape, d);
    if let Some(&tokens) = env.message_tokens.borrow().get(&(m, key)) {
        return tokens;
    }
    let tokens = render_message(env, m, shape, d, key).tokens;
    env.message_tokens.borrow_mut().insert((m, key), tokens);
    tokens
}

/// The memo key of message `m`'s rendering in the form `shape` gives it.
fn form_key(env: &Env<'_, '_>, m: usize, shape: &Shape, d: &Decisions) -> FormKey {
    FormKey {
        rung: shape.rung,
        known: env.known_class(m, d.known_id, &d.known),
        condense: d.pres.condense[m],
        truncate: d.truncated[m].then_some(shape.preview),
        fuzzy: shape.fuzzy,
        lossy: shape.lossy || matches!(shape.rung, Rung::Fill(_)),
        superseded: d.superseded.get(&m).map(|(by, _)| *by),
    }
}

fn render_message(
    env: &Env<'_, '_>,
    m: usize,
    shape: &Shape,
    d: &Decisions,
    key: FormKey,
) -> MsgOut {
    let parsed = env.parsed;
    let tok = env.tok;
    let value = &parsed.values[m];
    let units = env.units.of_msg[m].clone();
    let mut out = MsgOut::default();
    if units.is_empty() && !key.condense {
        out.kept = true;
        out.tokens = parsed.counts[m];
        out.decisions
            .push((None, "preserved", "nothing compressible".into()));
        return out;
    }
    let id = env.range_id(m..m + 1);
    // Asked only where a guard runs (a caller's counter is called for the id).
    let slack_cell = std::cell::OnceCell::new();
    let slack = || *slack_cell.get_or_init(|| tok.id_slack(&id));
    let dups = dups(env, shape);
    let situation = Situation {
        rung: shape.rung,
        truncate: key.truncate,
        lossy: key.lossy,
        superseded: d.superseded.get(&m),
        known: &d.known,
    };
    let whole_text = |block: Option<usize>| block.is_none() && !has_tool_calls(value);
    let mut abstractive = Abstractive::new(env.options);
    // The token count of the last replacement's text (a whole-text message's size, below).
    let mut last_tokens = 0;
    for u in units {
        let unit = env.units.all[u];
        let unit_tokens = || {
            if whole_text(unit.block) {
                parsed.counts[m]
            } else {
                env.unit_tokens(u)
            }
        };
        let dup = dups.get(u).copied().flatten();
        let fate = match dup {
            Some((of, similarity)) => Fate::Dup { of, similarity },
            None => fate::fate(env, u, &situation),
        };
        if unit.block.is_none()
            && unit.kind == UnitKind::Prose
            && !parsed.has_openai_calls(m)
            && matches!(
                fate,
                Fate::Replace {
                    action: "summarized",
                    ..
                }
            )
        {
            out.mergeable = true;
        }
        let Replacement {
            mut text,
            action,
            mut reason,
            body,
        } = match replacement(fate, unit.text, &id, &slack, parsed, tok, unit_tokens) {
            Ok(r) => r,
            Err(kept) => {
                out.decisions.push((unit.block, "preserved", kept));
                continue;
            }
        };
        // Size guard: only when shorter in tokens, whatever the id.
        let before = unit_tokens();
        let mut after = tok.count(&text);
        if after + slack() >= before {
            out.decisions
                .push((unit.block, "preserved", "summary not shorter".into()));
            continue;
        }
        if let Some(body) = body.filter(|_| action == "summarized") {
            let kind = match unit.kind {
                UnitKind::Prose => Some("prose"),
                UnitKind::ToolOutput => plain_tool_output(env, u).then_some("tool_output"),
            };
            if let Some(kind) = kind {
                let role = parsed.views[m].role.as_ref();
                let wrap = |s: &str| format!("[summary#{id}: {s}]");
                if let Some(t) = abstractive.take(
                    tok,
                    unit.text,
                    &body,
                    &text,
                    (m + parsed.offset, unit.block, role, kind),
                    (&wrap, before.saturating_sub(slack())),
                ) {
                    text = t;
                    after = tok.count(&text);
                    reason = "compressed by the summarizer".into();
                }
            }
        }
        match action {
            "deduped" => out.counts.deduped += 1,
            "code_split" => out.counts.code_split += 1,
            "superseded" => out.counts.superseded += 1,
            "truncated" => out.counts.truncated += 1,
            _ => out.counts.summarized += 1,
        }
        out.decisions.push((unit.block, action, reason));
        out.replacements.push((unit.block, text));
        last_tokens = after;
    }
    if key.condense {
        let condensed = condensable(value, &id, slack(), tok);
        if condensed.0.iter().chain(&condensed.1).any(|c| *c) {
            out.counts.condensed += 1;
            out.decisions.push((
                None,
                "condensed",
                "token budget: tool call arguments".into(),
            ));
            out.condensed = Some(condensed);
        }
    }
    (out.requests, out.accepted, out.rejected) = abstractive.finish();
    if out.replacements.is_empty() && out.condensed.is_none() {
        out.id = id;
        out.kept = true;
        out.tokens = parsed.counts[m];
        return out;
    }
    let condensed = out.condensed.as_ref().map_or(0, |(calls, blocks)| {
        calls.iter().chain(blocks).filter(|c| **c).count()
    });
    out.slack = slack() * (out.replacements.len() + condensed);
    out.id = id;
    if out.condensed.is_none() && out.replacements.len() == 1 && whole_text(out.replacements[0].0) {
        out.tokens = last_tokens;
        if env.memoise {
            out.text = out.replacements[0].1.clone();
        }
    } else {
        out.text = output_text(value, &out.replacements, out.condensed.as_ref(), &out.id);
        out.tokens = tok.count(&out.text);
    }
    out
}

/// A plan's token totals and ratio, and what the summariser did (or the warning that there was
/// none to ask).
fn totals(
    stats: &mut CompressStats,
    parsed: &super::parse::Parsed<'_>,
    tokens_after: usize,
    options: &super::options::CompressOptions,
    summarizer: SummarizerStats,
) {
    stats.tokens_before = parsed.counts.iter().sum();
    stats.tokens_after = tokens_after;
    stats.ratio = if tokens_after == 0 {
        1.0
    } else {
        stats.tokens_before as f64 / tokens_after as f64
    };
    if options.method.is_abstractive() {
        if options.summaries.is_none() {
            stats
                .warnings
                .push(method::no_summarizer_warning(options.method));
        } else if summarizer.accepted + summarizer.rejected > 0 {
            stats.summarizer = Some(summarizer);
        }
    }
}

/// A unit's marker text, what was done and why, and the summary body (for the summariser).
struct Replacement {
    text: String,
    action: &'static str,
    reason: Cow<'static, str>,
    body: Option<String>,
}

/// The marker a unit of text `original` gets for its fate, in the message whose marker id is
/// `id` (`tokens`: the unit's tokens, for a superseded unit's longer or shorter form); the
/// reason it is kept as it is for [`Fate::Keep`].
fn replacement(
    fate: Fate,
    original: &str,
    id: &str,
    slack: &dyn Fn() -> usize,
    parsed: &super::parse::Parsed<'_>,
    tok: &super::counter::Tokens<'_>,
    tokens: impl Fn() -> usize,
) -> Result<Replacement, Cow<'static, str>> {
    let done = |text: String, action: &'static str, reason: Cow<'static, str>, body| {
        Ok(Replacement {
            text,
            action,
            reason,
            body,
        })
    };
    match fate {
        Fate::Keep(reason) => Err(reason),
        Fate::Dup { of, similarity } => {
            let size = crate::text::count_chars(original);
            let name = parsed.name(of);
            let text = match similarity {
                None => format!("[dup#{id}: same as {name} — {size} chars]"),
                Some(s) => format!("[dup#{id}: ~{s}% like {name} — {size} chars]"),
            };
            let reason = format!("duplicate of message {}", of + parsed.offset);
            done(text, "deduped", reason.into(), None)
        }
        Fate::Replace { body, action } => {
            let text = format!("[summary#{id}: {body}]");
            done(text, action, "compressed".into(), Some(body))
        }
        Fate::Superseded {
            full,
            compact,
            reason,
        } => {
            let text = format!("[summary#{id}: {full}]");
            let text = if tok.count(&text) + slack() < tokens() {
                text
            } else {
                format!("[summary#{id}: {compact}]")
            };
            done(text, "superseded", reason.into(), None)
        }
        Fate::Truncate(chars) => {
            let size = crate::text::count_chars(original);
            let preview = summarize::cut_at_word(original.trim(), chars);
            let text = format!("[truncated#{id} — {size} chars: {preview}]");
            done(text, "truncated", "token budget".into(), None)
        }
    }
}

/// Tool output the summariser may rewrite: plain text (not JSON, not line-structured output,
/// whose deterministic renderings keep every value and path).
fn plain_tool_output(env: &Env<'_, '_>, u: usize) -> bool {
    let info = env.classes.info(u, env.parsed, env.units, env.options);
    info.json.is_none() && !info.structured
}

/// The argument object of a condensed tool call.
fn condensed_args(id: &str) -> String {
    format!("{{\"_condensed\":\"[call#{id}]\"}}")
}

/// Which of a message's tool calls (OpenAI `tool_calls[].function.arguments`, Anthropic
/// `tool_use.input`) get their arguments condensed to a reference: those where that is
/// shorter.
fn condensable(
    msg: &Value,
    id: &str,
    slack: usize,
    tok: &super::counter::Tokens<'_>,
) -> (Vec<bool>, Vec<bool>) {
    let new_tokens = tok.count(&condensed_args(id)) + slack;
    let calls = match msg.get("tool_calls") {
        Some(Value::Array(calls)) => calls
            .iter()
            .map(|call| {
                call.get("function")
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .is_some_and(|args| new_tokens < tok.count(args))
            })
            .collect(),
        _ => Vec::new(),
    };
    let blocks = match msg.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| {
                b.get("type").and_then(Value::as_str) == Some("tool_use")
                    && b.get("input")
                        .is_some_and(|input| new_tokens < tok.count(&input.to_string()))
            })
            .collect(),
        _ => Vec::new(),
    };
    (calls, blocks)
}

/// The output message: `msg` with its units' new texts and its condensed arguments (the texts
/// replaced are not copied).
fn rewrite(
    msg: &Value,
    replacements: &[(Option<usize>, String)],
    condensed: Option<&(Vec<bool>, Vec<bool>)>,
    id: &str,
) -> Value {
    let Value::Object(members) = msg else {
        return msg.clone();
    };
    let replaced = |b: Option<usize>| replacements.iter().find(|(k, _)| *k == b).map(|(_, t)| t);
    let mut out = serde_json::Map::with_capacity(members.len());
    for (k, v) in members {
        let v = match (k.as_str(), v) {
            ("content", Value::String(_)) => match replaced(None) {
                Some(t) => Value::String(t.clone()),
                None => v.clone(),
            },
            ("content", Value::Array(blocks)) => Value::Array(
                blocks
                    .iter()
                    .enumerate()
                    .map(|(b, block)| {
                        let condense = condensed.is_some_and(|(_, bs)| bs.get(b) == Some(&true));
                        match (replaced(Some(b)), block) {
                            (Some(t), Value::Object(fields)) => {
                                let key = if fields.get("type").and_then(Value::as_str)
                                    == Some("tool_result")
                                {
                                    "content"
                                } else {
                                    "text"
                                };
                                let mut f = serde_json::Map::with_capacity(fields.len());
                                for (fk, fv) in fields {
                                    if fk == key {
                                        f.insert(fk.clone(), Value::String(t.clone()));
                                    } else {
                                        f.insert(fk.clone(), fv.clone());
                                    }
                                }
                                Value::Object(f)
                            }
                            (None, Value::Object(fields)) if condense => {
                                let mut f = fields.clone();
                                let mut obj = serde_json::Map::new();
                                obj.insert(
                                    "_condensed".into(),
                                    Value::String(format!("[call#{id}]")),
                                );
                                f.insert("input".into(), Value::Object(obj));
                                Value::Object(f)
                            }
                            _ => block.clone(),
                        }
                    })
                    .collect(),
            ),
            ("tool_calls", Value::Array(calls)) if condensed.is_some() => {
                let flags = condensed.map(|(c, _)| c.as_slice()).unwrap_or(&[]);
                let mut calls = calls.clone();
                for (call, &c) in calls.iter_mut().zip(flags) {
                    if let (true, Some(Value::String(args))) = (
                        c,
                        call.get_mut("function")
                            .and_then(|f| f.get_mut("arguments")),
                    ) {
                        *args = condensed_args(id);
                    }
                }
                Value::Array(calls)
            }
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

/// [`message_text`] of the output message, without building it where the message is one
/// string.
fn output_text(
    msg: &Value,
    replacements: &[(Option<usize>, String)],
    condensed: Option<&(Vec<bool>, Vec<bool>)>,
    id: &str,
) -> String {
    if condensed.is_none() && !has_tool_calls(msg) {
        if let [(None, text)] = replacements {
            return text.clone();
        }
    }
    message_text(&rewrite(msg, replacements, condensed, id))
}

/// The fold of a plan: its marker text and tokens, or `None` when there is nothing to fold.
pub(super) struct FoldOut {
    pub id: String,
    pub text: String,
    pub tokens: usize,
    /// The fold is not shorter than the messages it would replace: they stay.
    pub rejected: bool,
}

/// The fold marker of `d`'s fold range.
pub(super) fn fold_out(env: &Env<'_, '_>, shape: &Shape, d: &Decisions) -> Option<FoldOut> {
    let range = d.pres.fold.clone();
    if range.is_empty() {
        return None;
    }
    let listed = env.fold_candidates(range.clone(), (d.known_id, &d.known));
    let budget = shape
        .fold_chars
        .unwrap_or_else(|| shape.rung.level().budget(listed.chars));
    let id = env.range_id(range.clone());
    let body = fold::body(range.len(), &listed, budget);
    let text = fold::marker(&id, &body);
    let tokens = env.tok.count(&text);
    let before: usize = env.parsed.counts[range].iter().sum();
    let rejected = tokens + env.tok.id_slack(&id) >= before;
    Some(FoldOut {
        id,
        text,
        tokens,
        rejected,
    })
}

/// The most characters the folded summary of `shape` can use: with more, `fold_chars` changes
/// nothing (0 when `shape` folds nothing).
pub(super) fn fold_chars_cap(env: &Env<'_, '_>, shape: &Shape) -> usize {
    let d = decide(env, shape);
    let range = d.pres.fold.clone();
    if range.is_empty() {
        return 0;
    }
    let listed = env.fold_candidates(range.clone(), (d.known_id, &d.known));
    fold::longest_body(range.len(), &listed.keys)
}

/// The characters of the longest text `shape` cuts to a preview (0 when it cuts none): past
/// that a longer preview changes nothing.
pub(super) fn preview_cap(env: &Env<'_, '_>, shape: &Shape) -> usize {
    let d = decide(env, shape);
    (0..env.parsed.len())
        .filter(|&m| d.truncated[m])
        .flat_map(|m| env.units.of_msg[m].clone())
        .map(|u| crate::text::count_chars(env.units.all[u].text.trim()))
        .max()
        .unwrap_or(0)
}

/// The tokens of the plan `shape` makes (an upper bound where runs are merged).
pub(super) fn total(env: &Env<'_, '_>, shape: &Shape) -> usize {
    let d = decide(env, shape);
    total_of(env, shape, &d)
}

/// [`total`] for decisions already made.
pub(super) fn total_of(env: &Env<'_, '_>, shape: &Shape, d: &Decisions) -> usize {
    let parsed = env.parsed;
    let mut sum = 0;
    for m in 0..parsed.len() {
        if d.pres.kept[m].is_some() || d.pres.fold.contains(&m) {
            if d.pres.kept[m].is_some() {
                sum += parsed.counts[m];
            }
            continue;
        }
        sum += message_tokens(env, m, shape, d);
    }
    if let Some(f) = fold_out(env, shape, d) {
        sum += if f.rejected {
            parsed.counts[d.pres.fold.clone()].iter().sum()
        } else {
            f.tokens
        };
    }
    sum
}

/// What each message adds to [`total`]'s sum for the plan `shape`: its tokens where the plan
/// keeps it, its rendering's where it renders it, 0 where it folds it (the fold's own tokens
/// are not in any message's).
pub(super) fn contributions(env: &Env<'_, '_>, shape: &Shape) -> Vec<usize> {
    let d = decide(env, shape);
    let parsed = env.parsed;
    (0..parsed.len())
        .map(|m| {
            if d.pres.kept[m].is_some() {
                parsed.counts[m]
            } else if d.pres.fold.contains(&m) {
                0
            } else {
                message_tokens(env, m, shape, &d)
            }
        })
        .collect()
}

/// The plan `shape` makes.
pub(super) fn plan(env: &Env<'_, '_>, shape: &Shape) -> Plan {
    let d = decide(env, shape);
    let parsed = env.parsed;
    let options = env.options;
    let n = parsed.len();
    let offset = parsed.offset;
    let mut stats = CompressStats {
        messages_before: n,
        ..CompressStats::default()
    };
    let mut trace: Vec<Decision> = Vec::new();
    let with_trace = options.trace;
    let mut decide_one = |index: usize, block: Option<usize>, action: &str, reason: &str| {
        if with_trace {
            trace.push(Decision {
                index: index + offset,
                block,
                action: action.into(),
                reason: reason.into(),
            });
        }
    };
    let mut out: Vec<Out> = Vec::with_capacity(n);
    let mut verbatim: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut requests: Vec<SummaryRequest> = Vec::new();
    let mut summarizer = SummarizerStats::default();
    let mut tokens_after = 0usize;
    // Each message's rendering (none for kept and folded ones).
    let rendered: Vec<Option<Rc<MsgOut>>> = (0..n)
        .map(|m| {
            (d.pres.kept[m].is_none() && !d.pres.fold.contains(&m))
                .then(|| message(env, m, shape, &d))
        })
        .collect();
    let groups = if parsed.format == Format::OpenAi {
        merge::groups(parsed, &rendered)
    } else {
        Vec::new()
    };
    let fold = fold_out(env, shape, &d);
    let mut group_at = groups.iter().peekable();
    let mut i = 0;
    while i < n {
        if let (Some(f), true) = (&fold, i == d.pres.fold.start) {
            let range = d.pres.fold.clone();
            if f.rejected {
                // Size guard: the run stays as it is.
                for g in range.clone() {
                    decide_one(g, None, "preserved", "fold not shorter");
                    stats.preserved += 1;
                    out.push(Out::Keep(g));
                    tokens_after += parsed.counts[g];
                }
            } else {
                let msg = serde_json::json!({"role": "user", "content": f.text});
                out.push(Out::New(msg.to_string()));
                verbatim.insert(f.id.clone(), range.clone().collect());
                stats.folded += range.len();
                tokens_after += f.tokens;
                for g in range.clone() {
                    decide_one(g, None, "folded", "token budget: oldest messages");
                }
            }
            i = range.end;
            continue;
        }
        if let Some(reason) = &d.pres.kept[i] {
            decide_one(i, None, "preserved", reason);
            stats.preserved += 1;
            out.push(Out::Keep(i));
            tokens_after += parsed.counts[i];
            i += 1;
            continue;
        }
        while group_at.peek().is_some_and(|g| g.start < i) {
            group_at.next();
        }
        if let Some(g) = group_at
            .peek()
            .filter(|g| g.start == i)
            .map(|g| (*g).clone())
        {
            if let Some(merged) = merge::merged(env, shape, &d, g.clone(), &rendered) {
                out.push(Out::New(merged.json));
                verbatim.insert(merged.id, g.clone().collect());
                stats.summarized += 1;
                stats.merged += g.len() - 1;
                tokens_after += merged.tokens;
                requests.extend(merged.requests);
                summarizer.accepted += merged.accepted;
                summarizer.rejected += merged.rejected;
                let reason = format!(
                    "merged with messages {}..{}",
                    g.start + offset,
                    g.end - 1 + offset
                );
                for m in g.clone() {
                    decide_one(
                        m,
                        None,
                        if m == g.start { "summarized" } else { "merged" },
                        &reason,
                    );
                }
                i = g.end;
                continue;
            }
        }
        let Some(r) = rendered[i].as_ref() else {
            i += 1;
            continue;
        };
        for (block, action, reason) in &r.decisions {
            decide_one(i, *block, action, reason);
        }
        requests.extend(r.requests.iter().cloned());
        summarizer.accepted += r.accepted;
        summarizer.rejected += r.rejected;
        stats.summarized += r.counts.summarized;
        stats.deduped += r.counts.deduped;
        stats.code_split += r.counts.code_split;
        stats.superseded += r.counts.superseded;
        stats.truncated += r.counts.truncated;
        stats.condensed_calls += r.counts.condensed;
        if r.kept {
            stats.preserved += 1;
            out.push(Out::Keep(i));
            tokens_after += parsed.counts[i];
        } else {
            let msg = rewrite(
                &parsed.values[i],
                &r.replacements,
                r.condensed.as_ref(),
                &r.id,
            );
            out.push(Out::New(msg.to_string()));
            verbatim.insert(r.id.clone(), vec![i]);
            tokens_after += r.tokens;
        }
        i += 1;
    }
    stats.messages_after = out.len();
    totals(&mut stats, parsed, tokens_after, options, summarizer);
    trace.sort_by_key(|d| (d.index, d.block));
    Plan {
        messages: out,
        verbatim,
        stats,
        trace: with_trace.then_some(trace),
        requests,
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::super::classify::Classes;
    use super::super::counter::Tokens;
    use super::super::options::CompressOptions;
    use super::super::parse::{Parsed, Units};
    use super::super::summarize::Query;
    use super::*;
    use serde_json::Value;

    /// A message's rendering memoised under one known set and served for another whose
    /// class is the same ([`Env::known_class`]) is the rendering that other set makes alone:
    /// each plan below is rendered in one environment after every plan before it, and again in
    /// an environment of its own.
    #[test]
    fn renderings_shared_across_known_sets_are_each_sets_own() {
        let text = include_str!("../../tests/fixtures/tool_sessions_openai_sample.jsonl");
        let options = CompressOptions::default();
        let query = Query::default();
        let tok = Tokens::new(None, Some("estimate".into()));
        // Messages whose class two different known sets share.
        let mut shared_classes = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let record: Value = serde_json::from_str(line).unwrap();
            let values: Vec<Value> = record["messages"].as_array().unwrap().clone();
            let parsed = Parsed::new(None, &values, &options, &tok, 0).unwrap();
            let units = Units::new(&parsed, &options);
            let classes = Classes::new(&parsed, &units, &options);
            let env = || Env::new(&parsed, &units, &classes, &options, &query, &tok, true);
            let shared = env();
            let mut seen: std::collections::HashMap<(usize, usize), usize> = Default::default();
            for share in [0.05, 0.2] {
                for (window, condense) in [(2, false), (1, false), (1, true), (0, true)] {
                    let shape = Shape {
                        rung: Rung::fill(share),
                        recency_window: window,
                        condense_calls: condense,
                        ..Shape::base(&options)
                    };
                    let d = decide(&shared, &shape);
                    let alone = env();
                    let d_alone = decide(&alone, &shape);
                    for m in 0..parsed.len() {
                        if d.pres.kept[m].is_some() || d.pres.fold.contains(&m) {
                            continue;
                        }
                        let class = form_key(&shared, m, &shape, &d).known;
                        if seen
                            .insert((m, class), d.known_id)
                            .is_some_and(|id| id != d.known_id)
                        {
                            shared_classes += 1;
                        }
                        let a = message(&shared, m, &shape, &d);
                        let b = message(&alone, m, &shape, &d_alone);
                        assert_eq!((a.kept, &a.text, a.tokens), (b.kept, &b.text, b.tokens));
                        assert_eq!(a.replacements, b.replacements);
                    }
                }
            }
        }
        // The test is about something: renderings were served across known sets.
        assert!(shared_classes > 0);
    }
}
