//! `compress`: deterministic conversation compression (DESIGN.md §3, seeds 002 and 004).
//!
//! The pipeline, as seed 002 describes it, on both providers' shapes:
//!
//! 1. **Classify** every message, and in Anthropic messages every text and tool-result block,
//!    in the seed's order: preserved roles, the recency window, tool calls, short content,
//!    already-compressed content, duplicates, code fences (code-split when there are 80+
//!    characters of prose), hard verbatim content (code, JSON, SQL, diffs, stack traces,
//!    secrets, tables), caller patterns — then compress.
//! 2. **Dedup**: the same text twice (and, opt-in, near-duplicates) is replaced by a reference
//!    to the newest copy: `[dup#id: same as msg_7 — 1234 chars]`.
//! 3. **Merge** consecutive compressible prose messages of one role, then **summarise**: the
//!    extractive summary for prose, structure-aware summaries for tool output (JSON fields,
//!    status lines, paths and ids), code fences kept verbatim.
//! 4. **Size guard**: a summary replaces its original only when it is shorter in tokens.
//!
//! Every rewritten message carries its id in its marker (`[summary#3f9a0c21b7e4: …]`) and its
//! originals go into `verbatim`, so [`uncompress`] restores the input byte for byte. Messages
//! that are kept are returned as they came.
//!
//! Not built yet (issue 5 continues): the token-budget loop with hierarchical levels, the
//! incremental cache and prefix-stable mode, importance scoring, contradiction detection,
//! `prepareContext`, LLM summarisers, and embedding-based query relevance.

mod budget;
mod dedup;
mod json;
mod options;
pub mod summarize;
mod uncompress;

use budget::{run, Tuning};

pub use options::CompressOptions;
pub use uncompress::{uncompress, uncompress_json};

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{join_index, Error, ErrorKind};
use crate::message::{
    raw_texts, resolve_format, views_from_raws, BlockKind, Format, RawDocument, Role,
};
use crate::text::{detect, estimate_tokens, fences, hash};

/// What `compress` did, in counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressStats {
    /// Messages in the input.
    pub messages_before: usize,
    /// Messages in the output.
    pub messages_after: usize,
    /// Estimated tokens of the messages' text before (see [`message_text`]).
    pub tokens_before: usize,
    /// Estimated tokens after.
    pub tokens_after: usize,
    /// `tokens_before / tokens_after` (1 when nothing changed).
    pub ratio: f64,
    /// Messages kept verbatim.
    pub preserved: usize,
    /// Texts replaced by a summary.
    pub summarized: usize,
    /// Texts replaced by a duplicate reference.
    pub deduped: usize,
    /// Messages merged into the message before them.
    pub merged: usize,
    /// Texts whose prose was summarised around verbatim code fences.
    pub code_split: usize,
    /// Texts cut to a preview by the budget's last step.
    pub truncated: usize,
    /// The token budget applied (`tokenBudget`, or `targetRatio` × `tokensBefore`).
    pub budget: Option<usize>,
    /// Whether `tokensAfter` ≤ `budget` (absent without a budget).
    pub fits: Option<bool>,
    /// How far the budget loop escalated (0: the default pass was enough).
    pub escalation: usize,
}

/// One classification decision (with `trace: true`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The input message's index.
    pub index: usize,
    /// The block, for a decision about one block of an Anthropic message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    /// `preserved`, `summarized`, `deduped`, `merged` or `code_split`.
    pub action: String,
    /// Why, e.g. `recency window`, `hard verbatim: json`, `summary not shorter`.
    pub reason: String,
}

/// The result of [`compress`].
#[derive(Clone, Debug, PartialEq)]
pub struct CompressOutput {
    /// The compressed messages, in the input's shape.
    pub messages: Vec<Value>,
    /// The originals of every rewritten message, by the id in its marker.
    pub verbatim: BTreeMap<String, Vec<Value>>,
    /// Counts.
    pub stats: CompressStats,
    /// One record per decision, when `trace` was asked for.
    pub trace: Option<Vec<Decision>>,
}

/// The result of [`compress_json`]: the same as JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressJsonOutput {
    /// The compressed document (array or request body), untouched messages byte-identical.
    pub json: String,
    /// `{id: [original message JSON, …]}` as JSON text, originals byte-identical.
    pub verbatim: String,
    /// Counts.
    pub stats: CompressStats,
    /// Decisions, when asked for.
    pub trace: Option<Vec<Decision>>,
}

/// Compresses an array of messages.
pub fn compress(messages: &[Value], options: &CompressOptions) -> Result<CompressOutput, Error> {
    let texts = raw_texts(messages)?;
    let raws: Vec<&RawValue> = texts.iter().map(|b| b.as_ref()).collect();
    let plan = run(&raws, options)?;
    let parse = |t: &str| {
        serde_json::from_str::<Value>(t)
            .map_err(|e| Error::new(ErrorKind::Internal, "messages", e.to_string()))
    };
    let out = plan
        .messages
        .iter()
        .map(|p| match p {
            Out::Keep(i) => Ok(messages[*i].clone()),
            Out::New(text) => parse(text),
        })
        .collect::<Result<_, _>>()?;
    let mut verbatim = BTreeMap::new();
    for (id, originals) in &plan.verbatim {
        verbatim.insert(
            id.clone(),
            originals.iter().map(|&i| messages[i].clone()).collect(),
        );
    }
    Ok(CompressOutput {
        messages: out,
        verbatim,
        stats: plan.stats,
        trace: plan.trace,
    })
}

/// Compresses a JSON document: an array of messages or a request body with `messages`.
pub fn compress_json(json: &str, options: &CompressOptions) -> Result<CompressJsonOutput, Error> {
    let doc = RawDocument::parse(json)?;
    let plan = run(&doc.messages, options)?;
    let text = doc.write_messages(
        json.len(),
        plan.messages.iter().map(|p| match p {
            Out::Keep(i) => doc.messages[*i].get(),
            Out::New(t) => t.as_str(),
        }),
    );
    let mut verbatim = String::from("{");
    for (n, (id, originals)) in plan.verbatim.iter().enumerate() {
        if n > 0 {
            verbatim.push(',');
        }
        verbatim.push_str(&Value::String(id.clone()).to_string());
        verbatim.push_str(":[");
        for (k, &i) in originals.iter().enumerate() {
            if k > 0 {
                verbatim.push(',');
            }
            verbatim.push_str(doc.messages[i].get());
        }
        verbatim.push(']');
    }
    verbatim.push('}');
    Ok(CompressJsonOutput {
        json: text,
        verbatim,
        stats: plan.stats,
        trace: plan.trace,
    })
}

/// The text of a message as the budget counts it: string content; text, thinking, tool_use
/// (`name` + input JSON) and tool_result blocks; OpenAI tool calls (`name` + arguments).
pub fn message_text(message: &Value) -> String {
    fn block_text(b: &Value) -> String {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Some("thinking") => b
                .get("thinking")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Some("tool_use") => format!(
                "{} {}",
                b.get("name").and_then(Value::as_str).unwrap_or(""),
                b.get("input")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "{}".into())
            ),
            Some("tool_result") => match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(block_text)
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            },
            _ => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }
    }
    let mut parts = Vec::new();
    match message.get("content") {
        Some(Value::String(s)) => parts.push(s.clone()),
        Some(Value::Array(blocks)) => {
            parts.extend(blocks.iter().map(block_text).filter(|s| !s.is_empty()))
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for c in calls {
            let f = c.get("function");
            parts.push(format!(
                "{} {}",
                f.and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                f.and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ));
        }
    }
    parts.join("\n")
}

// ------------------------------------------------------------------------------------ plan

enum Out {
    Keep(usize),
    New(String),
}

struct Plan {
    messages: Vec<Out>,
    verbatim: BTreeMap<String, Vec<usize>>,
    stats: CompressStats,
    trace: Option<Vec<Decision>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnitKind {
    Prose,
    ToolOutput,
}

/// A compressible text: a message's string content or one of its blocks.
struct Unit {
    msg: usize,
    block: Option<usize>,
    kind: UnitKind,
    text: String,
}

/// What happens to a unit.
enum Fate {
    Keep(String),
    Replace { body: String, action: &'static str },
    Dup { of: usize, similarity: Option<u32> },
    Truncate,
}

const MARKERS: [&str; 5] = ["[summary", "[dup#", "[dup of", "[truncated", "[condense:"];

fn plan(raws: &[&RawValue], options: &CompressOptions, tuning: Tuning) -> Result<Plan, Error> {
    let views = views_from_raws(raws)?;
    let format = resolve_format(&views, options.format)?;
    let patterns = options.patterns()?;
    let values: Vec<Value> = raws
        .iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::from_str(r.get()).map_err(|e| Error::json(join_index("messages", i), &e))
        })
        .collect::<Result<_, _>>()?;
    let n = values.len();
    let mut trace: Vec<Decision> = Vec::new();
    let mut decide = |index: usize, block: Option<usize>, action: &str, reason: String| {
        trace.push(Decision {
            index,
            block,
            action: action.into(),
            reason,
        })
    };

    // 1. Message-level preservation.
    let recency_from = n.saturating_sub(tuning.recency_window);
    let mut preserved = vec![false; n];
    for (i, view) in views.iter().enumerate() {
        let reason = if options
            .preserve_roles
            .iter()
            .any(|r| r == view.role.as_ref())
        {
            Some(format!("preserved role {}", view.role))
        } else if i >= recency_from {
            Some("recency window".to_string())
        } else if !view.tool_calls().is_empty() {
            Some("carries tool calls".to_string())
        } else {
            None
        };
        if let Some(reason) = reason {
            preserved[i] = true;
            decide(i, None, "preserved", reason);
        }
    }

    // 2. Units of the other messages.
    let mut units: Vec<Unit> = Vec::new();
    for (i, value) in values.iter().enumerate() {
        if preserved[i] {
            continue;
        }
        let tool_message = views[i].role() == Some(Role::Tool);
        match value.get("content") {
            Some(Value::String(s)) => units.push(Unit {
                msg: i,
                block: None,
                kind: if tool_message {
                    UnitKind::ToolOutput
                } else {
                    UnitKind::Prose
                },
                text: s.clone(),
            }),
            Some(Value::Array(blocks)) => {
                for (b, block) in blocks.iter().enumerate() {
                    let kind = views[i].blocks().get(b).map(|v| v.kind());
                    match (kind, block.get("text"), block.get("content")) {
                        (Some(BlockKind::Text), Some(Value::String(t)), _) => units.push(Unit {
                            msg: i,
                            block: Some(b),
                            kind: if tool_message {
                                UnitKind::ToolOutput
                            } else {
                                UnitKind::Prose
                            },
                            text: t.clone(),
                        }),
                        (Some(BlockKind::ToolResult), _, Some(Value::String(t))) => {
                            units.push(Unit {
                                msg: i,
                                block: Some(b),
                                kind: UnitKind::ToolOutput,
                                text: t.clone(),
                            })
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    // 3. Dedup: exact (and fuzzy) against every text of the conversation, newest copy kept.
    let mut fates: Vec<Option<Fate>> = (0..units.len()).map(|_| None).collect();
    if (options.dedup || tuning.fuzzy) && tuning.level.ratio > 0.0 {
        let found = dedup::find(
            &units,
            &values,
            options.min_chars,
            tuning.fuzzy.then_some(options.fuzzy_threshold),
        );
        for (fate, dup) in fates.iter_mut().zip(found) {
            if let Some((of, similarity)) = dup {
                *fate = Some(Fate::Dup { of, similarity });
            }
        }
    }

    // 4. Classify the rest and summarise. Large values repeated in newer JSON tool outputs
    //    are rendered as references to the newest copy.
    let mut seen = summarize::SeenValues::default();
    for (i, value) in values.iter().enumerate() {
        let name = match value.get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => format!("msg_{i}"),
        };
        for text in tool_outputs(value, views[i].role() == Some(Role::Tool)) {
            if let Ok(v @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text)
            {
                seen.add(&v, i, &name);
            }
        }
    }
    let terms = summarize::query_terms(options.query.as_deref());
    let mut truncations = tuning.truncate_oldest;
    for (u, unit) in units.iter().enumerate() {
        if fates[u].is_some() {
            continue;
        }
        let level = if unit.msg < tuning.older_than {
            tuning.older_level
        } else {
            tuning.level
        };
        let t = unit.text.as_str();
        let keep = |reason: &str| Fate::Keep(reason.to_string());
        let fate = if t.chars().count() < options.min_chars {
            keep("short content")
        } else if MARKERS.iter().any(|m| t.trim_start().starts_with(m)) {
            keep("already compressed")
        } else if truncations > 0 {
            // The budget's last resort: the oldest texts, whatever they are, cut to a preview.
            truncations -= 1;
            Fate::Truncate
        } else if level.ratio <= 0.0 {
            keep("below minTokens")
        } else if patterns.iter().any(|p| p.is_match(t)) {
            keep("preserve pattern")
        } else if options.preserve_code && fences::has_fence(t) {
            if fences::prose_chars(t) >= 80 {
                match summarize::code_split(t, level, &terms) {
                    Some(body) => Fate::Replace {
                        body,
                        action: "code_split",
                    },
                    None => keep("code fences"),
                }
            } else {
                keep("code fences with little prose")
            }
        } else if unit.kind == UnitKind::ToolOutput {
            match serde_json::from_str::<Value>(t) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => Fate::Replace {
                    body: if tuning.lossy_json {
                        summarize::json(&v, level, t.chars().count(), &terms)
                    } else {
                        summarize::json_compact(
                            &v,
                            level,
                            &seen,
                            unit.msg,
                            options.preserve_numbers,
                        )
                    },
                    action: "summarized",
                },
                _ if detect::is_structured(t) => Fate::Replace {
                    body: summarize::structured(t, level),
                    action: "summarized",
                },
                _ => match detect::hard(t) {
                    Some(h) => Fate::Keep(format!("hard verbatim: {}", h.as_str())),
                    None => Fate::Replace {
                        body: summarize::prose(t, level, &terms),
                        action: "summarized",
                    },
                },
            }
        } else if let Some(h) = detect::hard(t) {
            Fate::Keep(format!("hard verbatim: {}", h.as_str()))
        } else {
            Fate::Replace {
                body: summarize::prose(t, level, &terms),
                action: "summarized",
            }
        };
        fates[u] = Some(fate);
    }

    // 5. Merge runs of whole-message prose summaries of one role (seed 002's groups).
    let whole: HashMap<usize, usize> = units
        .iter()
        .enumerate()
        .filter(|(u, unit)| {
            unit.block.is_none()
                && unit.kind == UnitKind::Prose
                && matches!(
                    fates[*u],
                    Some(Fate::Replace {
                        action: "summarized",
                        ..
                    })
                )
        })
        .map(|(u, unit)| (unit.msg, u))
        .collect();
    let mut group_of: Vec<usize> = (0..n).collect(); // message → first message of its group
    for i in 1..n {
        if whole.contains_key(&i)
            && whole.contains_key(&(i - 1))
            && views[i].role == views[i - 1].role
            && format == Format::OpenAi
        {
            group_of[i] = group_of[i - 1];
        }
    }

    // 6. Build the output.
    let mut by_msg: HashMap<usize, Vec<usize>> = HashMap::new();
    for (u, unit) in units.iter().enumerate() {
        by_msg.entry(unit.msg).or_default().push(u);
    }
    let mut stats = CompressStats {
        messages_before: n,
        ..CompressStats::default()
    };
    let mut out: Vec<Out> = Vec::with_capacity(n);
    let mut verbatim: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let name = |i: usize| -> String {
        match values[i].get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => format!("msg_{i}"),
        }
    };
    let mut i = 0;
    while i < n {
        let mut end = i + 1;
        while end < n && group_of[end] == i {
            end += 1;
        }
        let group: Vec<usize> = (i..end).collect();
        let id = hash::short_id(group.iter().map(|&g| raws[g].get()));
        let id = id[..8].to_string();
        if group.len() > 1 {
            // One summary of the whole run.
            let joined: String = group
                .iter()
                .filter_map(|g| values[*g].get("content").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n");
            let level = if i < tuning.older_than {
                tuning.older_level
            } else {
                tuning.level
            };
            let body = summarize::prose(&joined, level, &terms);
            let marker = format!("[summary#{id}: {body} ({} messages merged)]", group.len());
            let before: usize = group
                .iter()
                .map(|g| estimate_tokens(&message_text(&values[*g])))
                .sum();
            if estimate_tokens(&marker) < before {
                let mut msg = values[i].clone();
                if let Some(obj) = msg.as_object_mut() {
                    obj.insert("content".into(), Value::String(marker));
                }
                out.push(Out::New(msg.to_string()));
                verbatim.insert(id, group.clone());
                stats.summarized += 1;
                stats.merged += group.len() - 1;
                for g in &group {
                    decide(
                        *g,
                        None,
                        if *g == i { "summarized" } else { "merged" },
                        format!("merged with messages {i}..{}", end - 1),
                    );
                }
                i = end;
                continue;
            }
            // The merged summary is not shorter: fall back to message by message.
            end = i + 1;
        }
        let Some(unit_ids) = by_msg.get(&i) else {
            if !preserved[i] {
                decide(i, None, "preserved", "nothing compressible".into());
            }
            stats.preserved += 1;
            out.push(Out::Keep(i));
            i = end;
            continue;
        };
        let mut msg = values[i].clone();
        let mut changed = false;
        for &u in unit_ids {
            let unit = &units[u];
            let replacement = match fates[u].take() {
                Some(Fate::Keep(reason)) => {
                    decide(i, unit.block, "preserved", reason);
                    None
                }
                Some(Fate::Dup { of, similarity }) => {
                    let size = unit.text.chars().count();
                    let text = match similarity {
                        None => format!("[dup#{id}: same as {} — {size} chars]", name(of)),
                        Some(s) => format!("[dup#{id}: ~{s}% like {} — {size} chars]", name(of)),
                    };
                    Some((text, "deduped", format!("duplicate of message {of}")))
                }
                Some(Fate::Replace { body, action }) => {
                    let text = format!("[summary#{id}: {body}]");
                    Some((text, action, "compressed".to_string()))
                }
                Some(Fate::Truncate) => {
                    let size = unit.text.chars().count();
                    let preview = summarize::cut_at_word(unit.text.trim(), 60);
                    let text = format!("[truncated#{id} — {size} chars: {preview}]");
                    Some((text, "truncated", "token budget".to_string()))
                }
                None => None,
            };
            let Some((text, action, reason)) = replacement else {
                continue;
            };
            // Size guard: only when shorter in tokens.
            if estimate_tokens(&text) >= estimate_tokens(&unit.text) {
                decide(i, unit.block, "preserved", "summary not shorter".into());
                continue;
            }
            set_unit_text(&mut msg, unit, text);
            changed = true;
            match action {
                "deduped" => stats.deduped += 1,
                "code_split" => stats.code_split += 1,
                "truncated" => stats.truncated += 1,
                _ => stats.summarized += 1,
            }
            decide(i, unit.block, action, reason);
        }
        if changed {
            out.push(Out::New(msg.to_string()));
            verbatim.insert(id, vec![i]);
        } else {
            stats.preserved += 1;
            out.push(Out::Keep(i));
        }
        i = end;
    }

    stats.messages_after = out.len();
    stats.tokens_before = values
        .iter()
        .map(|v| estimate_tokens(&message_text(v)))
        .sum();
    stats.tokens_after = out
        .iter()
        .map(|o| match o {
            Out::Keep(i) => estimate_tokens(&message_text(&values[*i])),
            Out::New(t) => serde_json::from_str::<Value>(t)
                .map(|v| estimate_tokens(&message_text(&v)))
                .unwrap_or(0),
        })
        .sum();
    stats.ratio = if stats.tokens_after == 0 {
        1.0
    } else {
        stats.tokens_before as f64 / stats.tokens_after as f64
    };
    trace.sort_by_key(|d| (d.index, d.block));
    Ok(Plan {
        messages: out,
        verbatim,
        stats,
        trace: options.trace.then_some(trace),
    })
}

/// The tool output texts of a message: a tool message's content, tool_result contents.
fn tool_outputs(value: &Value, tool_message: bool) -> Vec<&str> {
    match value.get("content") {
        Some(Value::String(s)) if tool_message => vec![s.as_str()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .filter_map(|b| b.get("content").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

fn set_unit_text(msg: &mut Value, unit: &Unit, text: String) {
    let Some(obj) = msg.as_object_mut() else {
        return;
    };
    match unit.block {
        None => {
            obj.insert("content".into(), Value::String(text));
        }
        Some(b) => {
            if let Some(Value::Object(block)) = obj.get_mut("content").and_then(|c| c.get_mut(b)) {
                let key = if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                    "content"
                } else {
                    "text"
                };
                block.insert(key.into(), Value::String(text));
            }
        }
    }
}
