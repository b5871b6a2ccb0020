//! Stage 1, parse: the messages read once per call — their JSON values, structural views, the
//! conversation's format, the caller's patterns compiled, each message's tokens — and the
//! compressible texts ("units") every later stage works on.
//!
//! Nothing here depends on how hard the call compresses: the budget plans the same parse.

use std::ops::Range;

use regex::Regex;
use serde_json::value::RawValue;
use serde_json::Value;

use super::counter::Tokens;
use super::options::CompressOptions;
use crate::error::{join_index, Error};
use crate::message::{resolve_format, views_from_values, BlockKind, Format, MessageView, Role};

/// The messages of one call, parsed. `values` and `views` borrow from the caller's frame
/// ([`parse_values`] then [`Parsed::new`]).
pub(super) struct Parsed<'v> {
    /// The input messages as JSON text, when the call has them (the JSON entry points): kept
    /// messages and originals are copied from them byte for byte.
    pub raws: Option<&'v [&'v RawValue]>,
    /// The messages as values.
    pub values: &'v [Value],
    /// Their structural views (role, blocks, tool calls).
    pub views: Vec<MessageView<'v>>,
    /// The conversation's shape (detected or forced).
    pub format: Format,
    /// `preservePatterns`, compiled.
    pub patterns: Vec<Regex>,
    /// Each message's tokens ([`message_tokens`]) in the call's counter.
    pub counts: Vec<usize>,
    /// The index of message 0 in the whole conversation (prefix-stable blocks are planned on
    /// their own): names (`msg_12`), marker ids and trace indexes are global.
    pub offset: usize,
}

/// Parses raw messages to values; a message nested too deeply is `invalid_json` at its path.
pub(super) fn parse_values(raws: &[&RawValue]) -> Result<Vec<Value>, Error> {
    raws.iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::from_str(r.get()).map_err(|e| Error::json(join_index("messages", i), &e))
        })
        .collect()
}

impl<'v> Parsed<'v> {
    /// Reads views, the format and the patterns (in that order, so errors come in that order)
    /// and counts every message's tokens.
    pub(super) fn new(
        raws: Option<&'v [&'v RawValue]>,
        values: &'v [Value],
        options: &CompressOptions,
        tok: &Tokens<'_>,
        offset: usize,
    ) -> Result<Parsed<'v>, Error> {
        let views = views_from_values(values)?;
        let format = resolve_format(&views, options.format)?;
        let patterns = options.patterns()?;
        let counts = values.iter().map(|v| message_tokens(v, tok)).collect();
        Ok(Parsed {
            raws,
            values,
            views,
            format,
            patterns,
            counts,
            offset,
        })
    }

    /// How many messages.
    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    /// A message's name in markers: its `id`, else `msg_<global index>`.
    pub(super) fn name(&self, i: usize) -> String {
        match self
            .values
            .get(i)
            .and_then(|v| v.get("id"))
            .and_then(Value::as_str)
        {
            Some(id) => id.to_string(),
            None => format!("msg_{}", i + self.offset),
        }
    }

    /// Whether message `i`'s role is one of `preserveRoles`.
    pub(super) fn preserved_role(&self, i: usize, options: &CompressOptions) -> bool {
        self.views
            .get(i)
            .is_some_and(|v| options.preserve_roles.iter().any(|r| r == v.role.as_ref()))
    }

    /// Whether message `i` is a `tool` message (OpenAI).
    pub(super) fn is_tool_message(&self, i: usize) -> bool {
        self.views.get(i).and_then(MessageView::role) == Some(Role::Tool)
    }

    /// Whether message `i` calls tools: OpenAI `tool_calls`, Anthropic `tool_use` blocks.
    pub(super) fn calls_tools(&self, i: usize) -> bool {
        self.views.get(i).is_some_and(|v| {
            !v.tool_calls().is_empty() || v.blocks().iter().any(|b| b.kind() == BlockKind::ToolUse)
        })
    }

    /// Whether message `i` carries OpenAI tool calls (kept verbatim by default).
    pub(super) fn has_openai_calls(&self, i: usize) -> bool {
        self.views
            .get(i)
            .is_some_and(|v| !v.tool_calls().is_empty())
    }

    /// Message `i` as JSON text: its input bytes on the JSON path, else its serialisation.
    pub(super) fn json_of(&self, i: usize) -> String {
        match self.raws.and_then(|r| r.get(i)) {
            Some(raw) => raw.get().to_string(),
            None => self.values.get(i).map(Value::to_string).unwrap_or_default(),
        }
    }
}

/// Whether a unit is prose or tool output (which has its own summaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnitKind {
    /// A message's or text block's prose.
    Prose,
    /// A tool message's content, a text block of one, or a tool_result's string content.
    ToolOutput,
}

/// A compressible text: a message's string content or one of its blocks' texts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Unit<'v> {
    /// The message.
    pub msg: usize,
    /// The block, for a block's text.
    pub block: Option<usize>,
    /// Prose or tool output.
    pub kind: UnitKind,
    /// The text.
    pub text: &'v str,
}

/// Every unit of the conversation, with the units of each message.
pub(super) struct Units<'v> {
    /// In message order, blocks in order.
    pub all: Vec<Unit<'v>>,
    /// The units of message `i`: `all[of_msg[i].clone()]`.
    pub of_msg: Vec<Range<usize>>,
}

impl<'v> Units<'v> {
    /// The units of every message whose role is not preserved.
    pub(super) fn new(parsed: &Parsed<'v>, options: &CompressOptions) -> Units<'v> {
        let mut all = Vec::new();
        let mut of_msg = Vec::with_capacity(parsed.len());
        for (i, value) in parsed.values.iter().enumerate() {
            let start = all.len();
            if !parsed.preserved_role(i, options) {
                push_units(parsed, i, value, &mut all);
            }
            of_msg.push(start..all.len());
        }
        Units { all, of_msg }
    }
}

fn push_units<'v>(parsed: &Parsed<'v>, i: usize, value: &'v Value, out: &mut Vec<Unit<'v>>) {
    let tool_message = parsed.is_tool_message(i);
    let text_kind = if tool_message {
        UnitKind::ToolOutput
    } else {
        UnitKind::Prose
    };
    match value.get("content") {
        Some(Value::String(s)) => out.push(Unit {
            msg: i,
            block: None,
            kind: text_kind,
            text: s,
        }),
        Some(Value::Array(blocks)) => {
            let views = parsed.views.get(i).map(MessageView::blocks).unwrap_or(&[]);
            for (b, block) in blocks.iter().enumerate() {
                let kind = views.get(b).map(|v| v.kind());
                match (kind, block.get("text"), block.get("content")) {
                    (Some(BlockKind::Text), Some(Value::String(t)), _) => out.push(Unit {
                        msg: i,
                        block: Some(b),
                        kind: text_kind,
                        text: t,
                    }),
                    (Some(BlockKind::ToolResult), _, Some(Value::String(t))) => out.push(Unit {
                        msg: i,
                        block: Some(b),
                        kind: UnitKind::ToolOutput,
                        text: t,
                    }),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// [`message_text`] without a copy where the text is the message's string content.
pub(super) fn message_text_ref(message: &Value) -> std::borrow::Cow<'_, str> {
    match message.get("content") {
        Some(Value::String(s)) if !has_tool_calls(message) => s.as_str().into(),
        _ => message_text(message).into(),
    }
}

/// The text of a message as budgets and stats count it: string content; text, thinking,
/// tool_use (`name` + input JSON) and tool_result blocks; OpenAI tool calls (`name` +
/// arguments), joined by newlines. The compression metric reads messages the same way.
pub fn message_text(message: &Value) -> String {
    let mut parts: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    match message.get("content") {
        Some(Value::String(s)) => parts.push(s.as_str().into()),
        Some(Value::Array(blocks)) => {
            parts.extend(blocks.iter().map(block_text).filter(|s| !s.is_empty()))
        }
        _ => {}
    }
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for c in calls {
            let f = c.get("function");
            let name = f
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let args = f
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or("");
            parts.push(format!("{name} {args}").into());
        }
    }
    parts.join("\n")
}

fn block_text(b: &Value) -> std::borrow::Cow<'_, str> {
    let str_of = |key: &str| b.get(key).and_then(Value::as_str).unwrap_or("");
    match b.get("type").and_then(Value::as_str) {
        Some("thinking") => str_of("thinking").into(),
        Some("tool_use") => format!(
            "{} {}",
            str_of("name"),
            b.get("input")
                .map(Value::to_string)
                .unwrap_or_else(|| "{}".into())
        )
        .into(),
        Some("tool_result") => match b.get("content") {
            Some(Value::String(s)) => s.as_str().into(),
            Some(Value::Array(items)) => items
                .iter()
                .map(block_text)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
                .into(),
            _ => "".into(),
        },
        _ => str_of("text").into(),
    }
}

/// The tokens of [`message_text`]: a message whose text is its string content (no tool calls)
/// is counted without a copy.
pub(super) fn message_tokens(message: &Value, tok: &Tokens<'_>) -> usize {
    match message.get("content") {
        Some(Value::String(s)) if !has_tool_calls(message) => tok.count(s),
        _ => tok.count(&message_text(message)),
    }
}

/// Whether an (OpenAI-shape) message carries tool calls: then its text for the budget is more
/// than its string content.
pub(super) fn has_tool_calls(message: &Value) -> bool {
    matches!(message.get("tool_calls"), Some(Value::Array(c)) if !c.is_empty())
}

/// The tool output texts of a message: a tool message's content, tool_result contents.
pub(super) fn tool_outputs(value: &Value, tool_message: bool) -> Vec<&str> {
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

/// The texts of a message that sentence relevance looks at: its string content, or its
/// blocks' `text` and string `content` (tool results).
pub(super) fn content_texts(value: &Value) -> Vec<&str> {
    let mut texts: Vec<&str> = Vec::new();
    match value.get("content") {
        Some(Value::String(s)) => texts.push(s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if let Some(Value::String(t)) = b.get("text") {
                    texts.push(t);
                } else if let Some(Value::String(t)) = b.get("content") {
                    texts.push(t);
                }
            }
        }
        _ => {}
    }
    texts
}
