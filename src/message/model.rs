//! Roles, formats and block kinds: the provider-neutral vocabulary of the message model.

use serde::{Deserialize, Serialize};

/// A provider's message shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Anthropic Messages API: `user`/`assistant` roles, string or block content,
    /// `tool_use` blocks answered by `tool_result` blocks in the next user message.
    Anthropic,
    /// OpenAI Chat Completions: `system`/`developer`/`user`/`assistant`/`tool` roles,
    /// assistant `tool_calls` answered by `role: "tool"` messages carrying `tool_call_id`.
    #[serde(rename = "openai")]
    OpenAi,
}

impl Format {
    /// `"anthropic"` or `"openai"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::Anthropic => "anthropic",
            Format::OpenAi => "openai",
        }
    }
}

/// A message role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `system` (OpenAI; Anthropic keeps its system prompt outside `messages`).
    System,
    /// `developer` (OpenAI's newer name for system instructions).
    Developer,
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `tool` (OpenAI tool output).
    Tool,
}

impl Role {
    /// Parses a role name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }

    /// The role's name as written in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// What a content block is, from its `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// `text` (both providers).
    Text,
    /// Anthropic `tool_use`: a client tool call.
    ToolUse,
    /// Anthropic `tool_result`: the answer to a `tool_use`, in the next user message.
    ToolResult,
    /// Anthropic `thinking` (extended thinking, with a `signature`).
    Thinking,
    /// Anthropic `redacted_thinking`.
    RedactedThinking,
    /// `image` (Anthropic) or `image_url` (OpenAI).
    Image,
    /// Anthropic `document`.
    Document,
    /// Anthropic `server_tool_use` (web search and other server tools), answered in the same
    /// assistant message by a `*_tool_result` block.
    ServerToolUse,
    /// A server tool's result: any `*_tool_result` type other than `tool_result`
    /// (`web_search_tool_result`, `code_execution_tool_result`, …).
    ServerToolResult,
    /// Any other type: passed through untouched.
    Other,
}

impl BlockKind {
    /// Classifies a block `type`.
    pub fn from_type(t: &str) -> BlockKind {
        match t {
            "text" => BlockKind::Text,
            "tool_use" => BlockKind::ToolUse,
            "tool_result" => BlockKind::ToolResult,
            "thinking" => BlockKind::Thinking,
            "redacted_thinking" => BlockKind::RedactedThinking,
            "image" | "image_url" => BlockKind::Image,
            "document" => BlockKind::Document,
            "server_tool_use" => BlockKind::ServerToolUse,
            t if t.ends_with("_tool_result") => BlockKind::ServerToolResult,
            _ => BlockKind::Other,
        }
    }

    /// Tool traffic: calls and results, client or server side.
    pub fn is_tool(self) -> bool {
        matches!(
            self,
            BlockKind::ToolUse
                | BlockKind::ToolResult
                | BlockKind::ServerToolUse
                | BlockKind::ServerToolResult
        )
    }

    /// `thinking` or `redacted_thinking`.
    pub fn is_thinking(self) -> bool {
        matches!(self, BlockKind::Thinking | BlockKind::RedactedThinking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_kinds() {
        assert_eq!(
            BlockKind::from_type("web_search_tool_result"),
            BlockKind::ServerToolResult
        );
        assert_eq!(BlockKind::from_type("tool_result"), BlockKind::ToolResult);
        assert_eq!(BlockKind::from_type("container_upload"), BlockKind::Other);
        assert!(BlockKind::ServerToolUse.is_tool());
        assert!(!BlockKind::Text.is_tool());
    }

    #[test]
    fn roles_round_trip() {
        for r in [
            Role::System,
            Role::Developer,
            Role::User,
            Role::Assistant,
            Role::Tool,
        ] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("function"), None);
    }
}
