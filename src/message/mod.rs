//! The provider-neutral message model (docs/design.md, "Messages and the round trip").
//!
//! Messages stay JSON (`serde_json::Value`, or raw text on the string path): unknown fields and
//! unknown block types pass through every operation untouched, and key order is kept. What an
//! operation needs to decide is read into a borrowed [`MessageView`]: role, content shape, block
//! kinds, tool ids and names.
//!
//! - Anthropic Messages: `{role: "user"|"assistant", content: string | Block[]}` with `text`,
//!   `tool_use`, `tool_result`, `thinking`, `redacted_thinking`, `image`, `document`,
//!   `server_tool_use` and `*_tool_result` blocks; any other block type passes through.
//! - OpenAI Chat Completions: `{role: "system"|"developer"|"user"|"assistant"|"tool", content,
//!   tool_calls?, tool_call_id?, name?}`.
//!
//! The shape is detected per message ([`definite_format`]) and for a whole conversation
//! ([`detect_format`]); [`validate()`] checks a provider's rules.

mod document;
mod model;
mod raw;
mod scan;
mod strict;
mod validate;
mod view;

pub use document::RawDocument;
pub use model::{BlockKind, Format, Role};
pub use raw::{RawObject, Slot};
pub(crate) use scan::{number_literals, scan_messages};
pub use strict::{check_json, MAX_DEPTH, MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH};
pub use validate::{
    validate, validate_json, validate_views, ValidateOptions, Validation, Violation,
    VIOLATION_CODES,
};
pub use view::{BlockView, ContentView, FunctionView, MessageView, TextInfo, ToolCallView};

use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{join_index, Error, ErrorKind};

/// Reads the view of every message of an array, with paths `messages[i]…` in errors.
pub fn views_from_values(messages: &[Value]) -> Result<Vec<MessageView<'_>>, Error> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| MessageView::from_value(m, &join_index("messages", i)))
        .collect()
}

/// Reads the view of every raw message, with paths `messages[i]…` in errors.
pub fn views_from_raws<'a>(raws: &[&'a RawValue]) -> Result<Vec<MessageView<'a>>, Error> {
    raws.iter()
        .enumerate()
        .map(|(i, r)| MessageView::from_raw_at(r, || join_index("messages", i)))
        .collect()
}

/// Each message as its compact JSON text (the value entry points run the raw planners on these),
/// within the limits every text input has: at most [`MAX_MESSAGE_BYTES`] and
/// [`MAX_MESSAGE_DEPTH`] levels per message.
pub fn raw_texts(messages: &[Value]) -> Result<Vec<Box<RawValue>>, Error> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let raw = serde_json::value::to_raw_value(m).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidMessage,
                    join_index("messages", i),
                    e.to_string(),
                )
            })?;
            check_message(raw.get(), i)?;
            Ok(raw)
        })
        .collect()
}

/// The limits of one message's JSON text (the `i`th): its size and its nesting.
pub(crate) fn check_message(text: &str, i: usize) -> Result<(), Error> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(message_too_large(i, text.len()));
    }
    check_json(text, &join_index("messages", i), MAX_MESSAGE_DEPTH)
}

/// The error of message `i`, `len` bytes of JSON, over [`MAX_MESSAGE_BYTES`].
pub(crate) fn message_too_large(i: usize, len: usize) -> Error {
    Error::new(
        ErrorKind::TooLarge,
        join_index("messages", i),
        format!("{len} bytes of JSON; a message holds at most {MAX_MESSAGE_BYTES}"),
    )
}

/// The provider a single message's shape proves, if any.
///
/// OpenAI: a `system`/`developer`/`tool` role, `tool_calls`, `tool_call_id`, or an `image_url`
/// part. Anthropic: `tool_use`, `tool_result`, thinking, `document`, `image` or server-tool
/// blocks. A plain `{role, content: string}` message fits both and proves nothing.
pub fn definite_format(view: &MessageView<'_>) -> Option<Format> {
    if matches!(
        view.role(),
        Some(Role::System | Role::Developer | Role::Tool)
    ) || view.tool_calls.is_some()
        || view.tool_call_id.is_some()
    {
        return Some(Format::OpenAi);
    }
    for block in view.blocks() {
        // The kind first (read once with the block): only `Image` (`image` or `image_url`)
        // and `Other` need the name.
        match block.kind() {
            BlockKind::Text => continue,
            BlockKind::ToolUse
            | BlockKind::ToolResult
            | BlockKind::Thinking
            | BlockKind::RedactedThinking
            | BlockKind::Document
            | BlockKind::ServerToolUse
            | BlockKind::ServerToolResult => return Some(Format::Anthropic),
            BlockKind::Image | BlockKind::Other => {}
        }
        match block.type_name.as_ref() {
            "image_url" | "input_audio" | "file" | "refusal" => return Some(Format::OpenAi),
            _ => {}
        }
        if block.kind() == BlockKind::Image {
            return Some(Format::Anthropic);
        }
    }
    None
}

/// The first definite format in the conversation, if any.
pub(crate) fn first_definite_format(views: &[MessageView<'_>]) -> Option<Format> {
    views.iter().find_map(definite_format)
}

/// The conversation's format: the one its messages prove; OpenAI when none proves anything
/// (plain text chats read the same in both). Messages proving both is a
/// [`ErrorKind::MixedFormat`] error naming the first message that disagrees.
pub fn detect_format(views: &[MessageView<'_>]) -> Result<Format, Error> {
    let mut found: Option<(Format, usize)> = None;
    for (i, view) in views.iter().enumerate() {
        if let Some(f) = definite_format(view) {
            match found {
                None => found = Some((f, i)),
                Some((g, first)) if g != f => {
                    return Err(Error::new(
                        ErrorKind::MixedFormat,
                        join_index("messages", i),
                        format!(
                            "this message has the {} shape but messages[{first}] has the {} shape; pass `format` to choose",
                            f.as_str(),
                            g.as_str()
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(found.map(|(f, _)| f).unwrap_or(Format::OpenAi))
}

/// Resolves the format: forced by the caller, else detected.
pub fn resolve_format(views: &[MessageView<'_>], forced: Option<Format>) -> Result<Format, Error> {
    match forced {
        Some(f) => Ok(f),
        None => detect_format(views),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detection() {
        let a = vec![
            json!({"role": "user", "content": "x"}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}),
        ];
        let views = views_from_values(&a).unwrap();
        assert_eq!(detect_format(&views).unwrap(), Format::Anthropic);

        let o = vec![
            json!({"role": "system", "content": "x"}),
            json!({"role": "user", "content": "x"}),
        ];
        assert_eq!(
            detect_format(&views_from_values(&o).unwrap()).unwrap(),
            Format::OpenAi
        );

        let plain = vec![json!({"role": "user", "content": "x"})];
        assert_eq!(
            detect_format(&views_from_values(&plain).unwrap()).unwrap(),
            Format::OpenAi
        );

        let mixed = vec![a[1].clone(), o[0].clone()];
        let err = detect_format(&views_from_values(&mixed).unwrap()).unwrap_err();
        assert_eq!(err.code(), "mixed_format");
        assert_eq!(err.path(), "messages[1]");
    }
}
