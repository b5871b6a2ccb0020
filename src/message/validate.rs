//! The provider rules a request must satisfy, checked all at once.
//!
//! [`validate`] returns every violation with its path, so an agent author sees the whole
//! picture, not the first failure. The rules, per provider:
//!
//! | code | Anthropic | OpenAI |
//! |---|---|---|
//! | `invalid_role` | only `user` and `assistant` in `messages` | – (all five roles) |
//! | `first_not_user` | the first message is a user message | – |
//! | `same_role_run` | user and assistant alternate | – (runs are accepted) |
//! | `empty_message` | content non-empty (the final assistant message may be empty) | user/system/developer/tool have content; an assistant has content or tool calls |
//! | `empty_text_block` | no `text` block with `""` | no `text` part with `""` |
//! | `orphan_tool_use` | every `tool_use` is answered in the next (user) message | every tool call is answered by the `tool` messages that follow |
//! | `orphan_tool_result` | every `tool_result` answers a `tool_use` of the previous message; server tool results follow their call in the same message | every `tool` message answers a call of the assistant message it follows |
//! | `tool_result_not_first` | a user message's `tool_result` blocks come before its other blocks | – |
//! | `misplaced_block` | `tool_use`/`thinking` only in assistant messages, `tool_result` only in user messages | no Anthropic tool or thinking block (`tool_use`, `tool_result`, `server_tool_use`, `*_tool_result`, `thinking`, `redacted_thinking`) in any message: OpenAI calls tools with `tool_calls` and answers with `tool` messages |
//! | `duplicate_tool_id` | tool ids are unique | tool call ids are unique |

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::document::RawDocument;
use super::model::{BlockKind, Format, Role};
use super::view::{ContentView, MessageView};
use super::{detect_format, views_from_values};
use crate::error::{join_index, Error};

/// Every violation code, in the order of the rule table above. Stable across releases.
pub const VIOLATION_CODES: [&str; 10] = [
    "invalid_role",
    "first_not_user",
    "same_role_run",
    "empty_message",
    "empty_text_block",
    "orphan_tool_use",
    "orphan_tool_result",
    "tool_result_not_first",
    "misplaced_block",
    "duplicate_tool_id",
];

/// Options of [`validate`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateOptions {
    /// The provider whose rules apply. Default: detected from the messages
    /// ([`detect_format`]); conversations that no message tells apart get OpenAI's rules.
    #[serde(default)]
    pub format: Option<Format>,
}

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The rule's stable code (one of [`VIOLATION_CODES`]).
    pub code: String,
    /// The JSON path of the offending message or block, e.g. `messages[4].content[0]`.
    pub path: String,
    /// What is wrong, in words.
    pub message: String,
}

/// The result of [`validate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    /// `true` when there is no violation.
    pub valid: bool,
    /// The rules that were applied.
    pub format: Format,
    /// Every violation, in message order.
    pub violations: Vec<Violation>,
}

/// Checks `messages` against a provider's rules and returns every violation.
///
/// Malformed messages (a non-string role, a `tool_use` without an id) are an [`Error`], not
/// violations: they cannot be sent at all.
///
/// ```
/// use condense::message::{validate, ValidateOptions};
/// let messages: Vec<serde_json::Value> = serde_json::from_str(r#"[
///   {"role": "user", "content": "hi"},
///   {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}
/// ]"#)?;
/// let report = validate(&messages, &ValidateOptions::default())?;
/// assert!(!report.valid);
/// assert_eq!(report.violations[0].code, "orphan_tool_use");
/// assert_eq!(report.violations[0].path, "messages[1].content[0]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn validate(messages: &[Value], options: &ValidateOptions) -> Result<Validation, Error> {
    let views = views_from_values(messages)?;
    Ok(validate_views(&views, options.format))
}

/// [`validate`] over a JSON text: an array of messages or a request body with `messages`.
pub fn validate_json(json: &str, options: &ValidateOptions) -> Result<Validation, Error> {
    let doc = RawDocument::parse(json)?;
    let views = doc.views()?;
    Ok(validate_views(&views, options.format))
}

/// Validates already-read views. `format: None` detects it; a mixed conversation is judged
/// by the rules of its first definite message.
pub fn validate_views(views: &[MessageView<'_>], format: Option<Format>) -> Validation {
    let format = format.unwrap_or_else(|| match detect_format(views) {
        Ok(f) => f,
        Err(_) => super::first_definite_format(views).unwrap_or(Format::OpenAi),
    });
    let mut out = Vec::new();
    match format {
        Format::Anthropic => anthropic(views, &mut out),
        Format::OpenAi => openai(views, &mut out),
    }
    Validation {
        valid: out.is_empty(),
        format,
        violations: out,
    }
}

fn msg_path(i: usize) -> String {
    join_index("messages", i)
}

fn block_path(i: usize, b: usize) -> String {
    format!("messages[{i}].content[{b}]")
}

fn push(out: &mut Vec<Violation>, code: &str, path: String, message: String) {
    out.push(Violation {
        code: code.to_string(),
        path,
        message,
    });
}

fn is_empty_content(content: &ContentView<'_>) -> bool {
    match content {
        ContentView::Missing | ContentView::Null => true,
        ContentView::Text { empty } => *empty,
        ContentView::Blocks(blocks) => blocks.is_empty(),
    }
}

fn empty_text_blocks(i: usize, view: &MessageView<'_>, out: &mut Vec<Violation>) {
    for (b, block) in view.blocks().iter().enumerate() {
        if block.kind() == BlockKind::Text && block.text.is_some_and(|t| t.empty) {
            push(
                out,
                "empty_text_block",
                block_path(i, b),
                "text blocks must be non-empty".into(),
            );
        }
    }
}

fn anthropic(views: &[MessageView<'_>], out: &mut Vec<Violation>) {
    let mut seen_ids: HashSet<&str> = HashSet::new();
    let last = views.len().saturating_sub(1);
    for (i, view) in views.iter().enumerate() {
        let role = view.role();
        if !matches!(role, Some(Role::User | Role::Assistant)) {
            push(
                out,
                "invalid_role",
                format!("{}.role", msg_path(i)),
                format!(
                    "role {:?} is not allowed in Anthropic messages (system goes in the top-level system field)",
                    view.role
                ),
            );
        }
        if i == 0 && role != Some(Role::User) {
            push(
                out,
                "first_not_user",
                msg_path(0),
                "the first message must be a user message".into(),
            );
        }
        if i > 0 && views[i - 1].role == view.role {
            push(
                out,
                "same_role_run",
                msg_path(i),
                format!("two {} messages in a row: roles must alternate", view.role),
            );
        }
        let final_assistant = i == last && role == Some(Role::Assistant);
        if is_empty_content(&view.content) && !final_assistant {
            push(
                out,
                "empty_message",
                msg_path(i),
                "message content must be non-empty".into(),
            );
        }
        empty_text_blocks(i, view, out);

        // Block placement, result order and id uniqueness.
        let mut other_seen = false;
        let mut server_uses: HashSet<&str> = HashSet::new();
        for (b, block) in view.blocks().iter().enumerate() {
            let kind = block.kind();
            let in_assistant = role == Some(Role::Assistant);
            let misplaced = match kind {
                BlockKind::ToolUse
                | BlockKind::ServerToolUse
                | BlockKind::ServerToolResult
                | BlockKind::Thinking
                | BlockKind::RedactedThinking => !in_assistant,
                BlockKind::ToolResult => in_assistant,
                _ => false,
            };
            if misplaced {
                push(
                    out,
                    "misplaced_block",
                    block_path(i, b),
                    format!(
                        "a {} block cannot be in a {} message",
                        block.type_name, view.role
                    ),
                );
            }
            if kind == BlockKind::ToolResult {
                if other_seen {
                    push(
                        out,
                        "tool_result_not_first",
                        block_path(i, b),
                        "tool_result blocks must come before any other block of their message"
                            .into(),
                    );
                }
            } else {
                other_seen = true;
            }
            if matches!(kind, BlockKind::ToolUse | BlockKind::ServerToolUse) {
                let id = block.id.as_deref().unwrap_or("");
                if !seen_ids.insert(id) {
                    push(
                        out,
                        "duplicate_tool_id",
                        block_path(i, b),
                        format!("tool id {id:?} is used more than once"),
                    );
                }
                if kind == BlockKind::ServerToolUse {
                    server_uses.insert(id);
                }
            }
            if kind == BlockKind::ServerToolResult
                && !server_uses.contains(block.tool_use_id.as_deref().unwrap_or(""))
            {
                push(
                    out,
                    "orphan_tool_result",
                    block_path(i, b),
                    "a server tool result must follow its server_tool_use in the same message"
                        .into(),
                );
            }
        }

        // tool_use ↔ tool_result pairing across adjacent messages.
        if role == Some(Role::Assistant) {
            let next = views.get(i + 1).filter(|n| n.role() == Some(Role::User));
            let answered: HashSet<&str> = next
                .map(|n| {
                    n.blocks()
                        .iter()
                        .filter(|blk| blk.kind() == BlockKind::ToolResult)
                        .filter_map(|blk| blk.tool_use_id.as_deref())
                        .collect()
                })
                .unwrap_or_default();
            for (b, block) in view.blocks().iter().enumerate() {
                if block.kind() == BlockKind::ToolUse {
                    let id = block.id.as_deref().unwrap_or("");
                    if !answered.contains(id) {
                        push(
                            out,
                            "orphan_tool_use",
                            block_path(i, b),
                            format!("tool_use {id:?} has no tool_result in the next user message"),
                        );
                    }
                }
            }
        }
        if role == Some(Role::User) {
            let calls: HashSet<&str> = i
                .checked_sub(1)
                .and_then(|p| views.get(p))
                .filter(|p| p.role() == Some(Role::Assistant))
                .map(|p| {
                    p.blocks()
                        .iter()
                        .filter(|blk| blk.kind() == BlockKind::ToolUse)
                        .filter_map(|blk| blk.id.as_deref())
                        .collect()
                })
                .unwrap_or_default();
            let mut answered_here: HashSet<&str> = HashSet::new();
            for (b, block) in view.blocks().iter().enumerate() {
                if block.kind() == BlockKind::ToolResult {
                    let id = block.tool_use_id.as_deref().unwrap_or("");
                    if !calls.contains(id) {
                        push(
                            out,
                            "orphan_tool_result",
                            block_path(i, b),
                            format!(
                                "tool_result for {id:?} does not answer a tool_use of the previous assistant message"
                            ),
                        );
                    } else if !answered_here.insert(id) {
                        push(
                            out,
                            "duplicate_tool_id",
                            block_path(i, b),
                            format!("tool_use {id:?} is answered more than once"),
                        );
                    }
                }
            }
        }
    }
}

fn openai(views: &[MessageView<'_>], out: &mut Vec<Violation>) {
    let mut seen_ids: HashSet<&str> = HashSet::new();
    // Calls of the latest assistant message that are still waiting for their tool message,
    // with where they were made.
    let mut pending: HashMap<&str, String> = HashMap::new();
    let mut open_calls: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    let flush = |pending: &mut HashMap<&str, String>, out: &mut Vec<Violation>| {
        let mut left: Vec<(&str, String)> = pending.drain().collect();
        left.sort_by(|a, b| a.1.cmp(&b.1));
        for (id, path) in left {
            push(
                out,
                "orphan_tool_use",
                path,
                format!("tool call {id:?} has no tool message answering it"),
            );
        }
    };
    for (i, view) in views.iter().enumerate() {
        let role = view.role();
        if role != Some(Role::Tool) {
            flush(&mut pending, out);
            open_calls.clear();
            answered.clear();
        }
        let has_calls = !view.tool_calls().is_empty();
        let empty = is_empty_content(&view.content);
        if empty && !(role == Some(Role::Assistant) && has_calls) {
            push(
                out,
                "empty_message",
                msg_path(i),
                if role == Some(Role::Assistant) {
                    "an assistant message needs content or tool_calls".into()
                } else {
                    "message content must be non-empty".into()
                },
            );
        }
        empty_text_blocks(i, view, out);
        for (b, block) in view.blocks().iter().enumerate() {
            if matches!(
                block.kind(),
                BlockKind::ToolUse
                    | BlockKind::ToolResult
                    | BlockKind::ServerToolUse
                    | BlockKind::ServerToolResult
                    | BlockKind::Thinking
                    | BlockKind::RedactedThinking
            ) {
                push(
                    out,
                    "misplaced_block",
                    block_path(i, b),
                    format!(
                        "a {} block is not an OpenAI content part: OpenAI calls tools with \
                         tool_calls and answers them with tool messages",
                        block.type_name
                    ),
                );
            }
        }
        if role == Some(Role::Assistant) {
            for (c, call) in view.tool_calls().iter().enumerate() {
                let id = call.id.as_deref().unwrap_or("");
                let path = format!("{}.tool_calls[{c}]", msg_path(i));
                if !seen_ids.insert(id) {
                    push(
                        out,
                        "duplicate_tool_id",
                        path.clone(),
                        format!("tool call id {id:?} is used more than once"),
                    );
                }
                open_calls.insert(id);
                pending.insert(id, path);
            }
        }
        if role == Some(Role::Tool) {
            let id = view.tool_call_id.as_deref().unwrap_or("");
            let path = format!("{}.tool_call_id", msg_path(i));
            if !open_calls.contains(id) {
                push(
                    out,
                    "orphan_tool_result",
                    path,
                    format!(
                        "tool message for {id:?} does not answer a call of the assistant message it follows"
                    ),
                );
            } else if !answered.insert(id) {
                push(
                    out,
                    "duplicate_tool_id",
                    path,
                    format!("tool call {id:?} is answered more than once"),
                );
            } else {
                pending.remove(id);
            }
        }
    }
    flush(&mut pending, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(messages: Value, format: Option<Format>) -> Vec<(String, String)> {
        let arr = messages.as_array().unwrap().clone();
        let report = validate(&arr, &ValidateOptions { format }).unwrap();
        assert_eq!(report.valid, report.violations.is_empty());
        report
            .violations
            .into_iter()
            .map(|v| (v.code, v.path))
            .collect()
    }

    #[test]
    fn valid_anthropic_tool_turn() {
        let m = json!([
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "…", "signature": "s"}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a b"}, {"type": "text", "text": "thanks"}]},
            {"role": "assistant", "content": "done"}
        ]);
        assert_eq!(codes(m, None), vec![]);
    }

    #[test]
    fn every_anthropic_rule() {
        let m = json!([
            {"role": "assistant", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "tool_result", "tool_use_id": "t9", "content": "x"}]},
            {"role": "user", "content": []},
            {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t1"}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "system", "content": "s"}
        ]);
        let got = codes(m, Some(Format::Anthropic));
        let want: Vec<(String, String)> = [
            ("first_not_user", "messages[0]"),
            ("same_role_run", "messages[1]"),
            ("orphan_tool_use", "messages[1].content[0]"),
            ("empty_text_block", "messages[2].content[0]"),
            ("tool_result_not_first", "messages[2].content[1]"),
            ("orphan_tool_result", "messages[2].content[1]"),
            ("same_role_run", "messages[3]"),
            ("empty_message", "messages[3]"),
            ("misplaced_block", "messages[4].content[0]"),
            ("duplicate_tool_id", "messages[4].content[1]"),
            ("orphan_tool_use", "messages[4].content[1]"),
            ("invalid_role", "messages[5].role"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn openai_rules() {
        let m = json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "user", "content": "and?"},
            {"role": "tool", "tool_call_id": "c2", "content": "late"},
            {"role": "assistant", "content": null}
        ]);
        let got = codes(m, None);
        assert_eq!(
            got,
            vec![
                ("orphan_tool_use".into(), "messages[2].tool_calls[1]".into()),
                (
                    "orphan_tool_result".into(),
                    "messages[5].tool_call_id".into()
                ),
                ("empty_message".into(), "messages[6]".into()),
            ]
        );
    }

    #[test]
    fn openai_accepts_same_role_runs_and_system_first() {
        let m = json!([
            {"role": "system", "content": "x"},
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"}
        ]);
        assert_eq!(codes(m, None), vec![]);
    }

    #[test]
    fn final_assistant_may_be_empty_in_anthropic() {
        let m = json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}]);
        assert_eq!(codes(m, Some(Format::Anthropic)), vec![]);
    }

    #[test]
    fn json_entry_accepts_request_bodies() {
        let body =
            r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}"#;
        let report = validate_json(body, &ValidateOptions::default()).unwrap();
        assert!(report.valid);
        let err = validate_json("{\"model\": 1}", &ValidateOptions::default()).unwrap_err();
        assert_eq!(err.code(), "invalid_input");
    }
}
