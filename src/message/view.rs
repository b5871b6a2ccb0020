//! Borrowed, structural views of messages.
//!
//! A [`MessageView`] records what every operation needs to decide what to do with a message —
//! its role, the kind of its content, each block's type, ids and names, each OpenAI tool call —
//! and nothing else: texts, tool inputs and tool results are skipped, not copied. The same
//! `Deserialize` impls read a view from raw JSON text (the string fast path, which never builds
//! a `serde_json::Value` for messages it leaves alone) and from a `&serde_json::Value`
//! (the object path), so the two paths decide identically by construction.
//!
//! Reading a view checks types (a `role` that is not a string is an error); the semantic checks
//! that need a path (a `tool_use` without an `id`) are in [`MessageView::check`].

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::model::{BlockKind, Role};
use crate::error::{join_index, join_key, Error, ErrorKind};

/// The structural view of one message.
#[derive(Debug, Deserialize)]
pub struct MessageView<'a> {
    /// The role as written (`"user"`, `"assistant"`, `"system"`, `"developer"`, `"tool"`).
    #[serde(borrow)]
    pub role: Cow<'a, str>,
    /// The content's shape and, for block content, its blocks.
    #[serde(default, borrow)]
    pub content: ContentView<'a>,
    /// OpenAI `tool_calls` of an assistant message (`None` when absent or null).
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallView<'a>>>,
    /// OpenAI `tool_call_id` of a `role: "tool"` message.
    #[serde(default, borrow)]
    pub tool_call_id: Option<Cow<'a, str>>,
    /// The exact text of the `content` value, when the one-pass scanner read the message
    /// (`None` from serde): lets a rewrite skip it instead of scanning it again.
    #[serde(skip)]
    pub(crate) content_text: Option<&'a str>,
    /// `Role::parse(role)`, when the one-pass scanner read the message and knew the role.
    #[serde(skip)]
    pub(crate) known_role: Option<Role>,
}

/// The shape of a message's `content`.
#[derive(Debug, Default)]
pub enum ContentView<'a> {
    /// The field is absent.
    #[default]
    Missing,
    /// `null`.
    Null,
    /// A string; `empty` when it has no characters at all.
    Text {
        /// Whether the string is `""`.
        empty: bool,
    },
    /// An array of content blocks.
    Blocks(Vec<BlockView<'a>>),
}

/// The structural view of one content block.
#[derive(Debug, Deserialize)]
pub struct BlockView<'a> {
    /// The block's `type` as written.
    #[serde(rename = "type", borrow)]
    pub type_name: Cow<'a, str>,
    /// `id` of `tool_use` / `server_tool_use` blocks.
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    /// `name` of `tool_use` / `server_tool_use` blocks.
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    /// `tool_use_id` of `tool_result` and `*_tool_result` blocks.
    #[serde(default, borrow)]
    pub tool_use_id: Option<Cow<'a, str>>,
    /// Whether a `text` block's `text` is empty (`None` when there is no `text` string).
    #[serde(default, rename = "text")]
    pub text: Option<TextInfo>,
    /// Whether the block carries a (non-null) `cache_control` marker.
    #[serde(default, rename = "cache_control")]
    cache_control: Option<IgnoredAny>,
    /// [`BlockKind::from_type`] of `type_name`, set once when the block is read.
    #[serde(skip, default = "unknown_kind")]
    kind: BlockKind,
    /// The block's exact JSON text, when the one-pass scanner read it (`None` from serde).
    #[serde(skip)]
    pub(crate) text_json: Option<&'a str>,
}

fn unknown_kind() -> BlockKind {
    BlockKind::Other
}

/// What a view keeps of a text: whether it is empty.
#[derive(Clone, Copy, Debug)]
pub struct TextInfo {
    /// `true` for `""`.
    pub empty: bool,
}

/// The structural view of one OpenAI tool call.
#[derive(Debug, Deserialize)]
pub struct ToolCallView<'a> {
    /// The call id (`call_…`).
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    /// `{name, arguments}`.
    #[serde(default, borrow)]
    pub function: Option<FunctionView<'a>>,
}

/// The `function` of an OpenAI tool call.
#[derive(Debug, Deserialize)]
pub struct FunctionView<'a> {
    /// The function's name.
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
}

impl<'a> BlockView<'a> {
    /// A view read by the one-pass scanner (`super::scan`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scanned(
        type_name: Cow<'a, str>,
        id: Option<Cow<'a, str>>,
        name: Option<Cow<'a, str>>,
        tool_use_id: Option<Cow<'a, str>>,
        text: Option<TextInfo>,
        cache_control: bool,
        kind: BlockKind,
        text_json: &'a str,
    ) -> BlockView<'a> {
        BlockView {
            type_name,
            id,
            name,
            tool_use_id,
            text,
            cache_control: cache_control.then_some(IgnoredAny),
            kind,
            text_json: Some(text_json),
        }
    }

    /// The block's kind.
    pub fn kind(&self) -> BlockKind {
        self.kind
    }

    /// Whether the block carries a non-null `cache_control`.
    pub fn has_cache_control(&self) -> bool {
        self.cache_control.is_some()
    }

    /// The tool id this block opens (`tool_use`, `server_tool_use`) or answers (tool results).
    pub fn tool_id(&self) -> Option<&str> {
        match self.kind() {
            BlockKind::ToolUse | BlockKind::ServerToolUse => self.id.as_deref(),
            BlockKind::ToolResult | BlockKind::ServerToolResult => self.tool_use_id.as_deref(),
            _ => None,
        }
    }
}

impl ToolCallView<'_> {
    /// The called function's name, or `""`.
    pub fn name(&self) -> &str {
        self.function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .unwrap_or("")
    }
}

impl<'a> MessageView<'a> {
    /// Reads the view of a message held as a `Value`.
    pub fn from_value(value: &'a Value, path: &str) -> Result<MessageView<'a>, Error> {
        match MessageView::deserialize(value) {
            Ok(view) => {
                view.check(path)?;
                Ok(view)
            }
            Err(err) => Err(precise_error(value, path, &err.to_string())),
        }
    }

    /// Reads the view of a message held as raw JSON text.
    pub fn from_raw(raw: &'a RawValue, path: &str) -> Result<MessageView<'a>, Error> {
        MessageView::from_raw_at(raw, || path.to_string())
    }

    /// [`MessageView::from_raw`] with the path built only for an error.
    pub(crate) fn from_raw_at(
        raw: &'a RawValue,
        path: impl Fn() -> String,
    ) -> Result<MessageView<'a>, Error> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        match MessageView::deserialize(&mut de) {
            Ok(view) => {
                if !view.is_sound() {
                    view.check(&path())?;
                }
                Ok(view)
            }
            Err(err) => match serde_json::from_str::<Value>(raw.get()) {
                Ok(value) => Err(precise_error(&value, &path(), &err.to_string())),
                Err(json_err) => Err(Error::json(path(), &json_err)),
            },
        }
    }

    /// Whether [`MessageView::check`] passes (without building any path).
    pub(crate) fn is_sound(&self) -> bool {
        let present = |v: Option<&str>| v.is_some_and(|v| !v.is_empty());
        self.role().is_some()
            && self.blocks().iter().all(|block| match block.kind() {
                BlockKind::ToolUse | BlockKind::ServerToolUse => {
                    present(block.id.as_deref()) && present(block.name.as_deref())
                }
                BlockKind::ToolResult | BlockKind::ServerToolResult => {
                    present(block.tool_use_id.as_deref())
                }
                _ => true,
            })
            && self.tool_calls().iter().all(|call| {
                present(call.id.as_deref())
                    && present(call.function.as_ref().and_then(|f| f.name.as_deref()))
            })
            && (self.role.as_ref() != "tool" || self.tool_call_id.is_some())
    }

    /// The role, or an error naming `path.role` for an unknown role.
    pub fn role(&self) -> Option<Role> {
        self.known_role.or_else(|| Role::parse(&self.role))
    }

    /// The content blocks (empty for string, null or missing content).
    pub fn blocks(&self) -> &[BlockView<'a>] {
        match &self.content {
            ContentView::Blocks(blocks) => blocks,
            _ => &[],
        }
    }

    /// The OpenAI tool calls (empty when absent).
    pub fn tool_calls(&self) -> &[ToolCallView<'a>] {
        self.tool_calls.as_deref().unwrap_or(&[])
    }

    /// Semantic checks that need a path: a known role, ids and names where a provider needs them.
    pub fn check(&self, path: &str) -> Result<(), Error> {
        if self.role().is_none() {
            return Err(Error::new(
                ErrorKind::InvalidMessage,
                join_key(path, "role"),
                format!(
                    "unknown role {:?}: expected user, assistant, system, developer or tool",
                    self.role
                ),
            ));
        }
        for (b, block) in self.blocks().iter().enumerate() {
            let bpath = join_index(&join_key(path, "content"), b);
            match block.kind() {
                BlockKind::ToolUse | BlockKind::ServerToolUse => {
                    require(block.id.as_deref(), &bpath, "id", &block.type_name)?;
                    require(block.name.as_deref(), &bpath, "name", &block.type_name)?;
                }
                BlockKind::ToolResult | BlockKind::ServerToolResult => {
                    require(
                        block.tool_use_id.as_deref(),
                        &bpath,
                        "tool_use_id",
                        &block.type_name,
                    )?;
                }
                _ => {}
            }
        }
        for (c, call) in self.tool_calls().iter().enumerate() {
            let cpath = join_index(&join_key(path, "tool_calls"), c);
            require(call.id.as_deref(), &cpath, "id", "tool call")?;
            let name = call.function.as_ref().and_then(|f| f.name.as_deref());
            require(name, &join_key(&cpath, "function"), "name", "tool call")?;
        }
        if self.role.as_ref() == "tool" && self.tool_call_id.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidMessage,
                join_key(path, "tool_call_id"),
                "a tool message needs a string tool_call_id",
            ));
        }
        Ok(())
    }
}

fn require(value: Option<&str>, path: &str, field: &str, what: &str) -> Result<(), Error> {
    match value {
        Some(v) if !v.is_empty() => Ok(()),
        _ => Err(Error::new(
            ErrorKind::InvalidMessage,
            join_key(path, field),
            format!("a {what} needs a non-empty string {field}"),
        )),
    }
}

/// Finds the exact field behind a failed view read and says what is wrong with it.
/// Falls back to the message's own path with serde's words when no rule below names it.
fn precise_error(value: &Value, path: &str, serde_reason: &str) -> Error {
    let bad = |p: String, why: &str| Error::new(ErrorKind::InvalidMessage, p, why.to_string());
    let Some(obj) = value.as_object() else {
        return bad(path.to_string(), "a message must be a JSON object");
    };
    match obj.get("role") {
        Some(Value::String(_)) => {}
        Some(_) => return bad(join_key(path, "role"), "role must be a string"),
        None => return bad(join_key(path, "role"), "missing role"),
    }
    let string_or_null =
        |key: &str, base: &serde_json::Map<String, Value>, p: &str| match base.get(key) {
            None | Some(Value::Null) | Some(Value::String(_)) => None,
            Some(_) => Some(bad(join_key(p, key), &format!("{key} must be a string"))),
        };
    if let Some(e) = string_or_null("tool_call_id", obj, path) {
        return e;
    }
    match obj.get("content") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            let cpath = join_key(path, "content");
            for (b, block) in blocks.iter().enumerate() {
                let bpath = join_index(&cpath, b);
                let Some(bobj) = block.as_object() else {
                    return bad(bpath, "a content block must be a JSON object");
                };
                match bobj.get("type") {
                    Some(Value::String(_)) => {}
                    Some(_) => return bad(join_key(&bpath, "type"), "type must be a string"),
                    None => return bad(join_key(&bpath, "type"), "missing block type"),
                }
                for key in ["id", "name", "tool_use_id", "text"] {
                    if let Some(e) = string_or_null(key, bobj, &bpath) {
                        return e;
                    }
                }
            }
        }
        Some(_) => {
            return bad(
                join_key(path, "content"),
                "content must be a string, an array of content blocks or null",
            )
        }
    }
    match obj.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            let tpath = join_key(path, "tool_calls");
            for (c, call) in calls.iter().enumerate() {
                let cpath = join_index(&tpath, c);
                let Some(cobj) = call.as_object() else {
                    return bad(cpath, "a tool call must be a JSON object");
                };
                if let Some(e) = string_or_null("id", cobj, &cpath) {
                    return e;
                }
                match cobj.get("function") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(f)) => {
                        if let Some(e) = string_or_null("name", f, &join_key(&cpath, "function")) {
                            return e;
                        }
                    }
                    Some(_) => {
                        return bad(join_key(&cpath, "function"), "function must be an object")
                    }
                }
            }
        }
        Some(_) => return bad(join_key(path, "tool_calls"), "tool_calls must be an array"),
    }
    Error::new(ErrorKind::InvalidMessage, path, serde_reason.to_string())
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentView<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = ContentView<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, an array of content blocks or null")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ContentView::Text {
                    empty: v.is_empty(),
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentView::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentView::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(mut block) = seq.next_element::<BlockView<'a>>()? {
                    block.kind = BlockKind::from_type(&block.type_name);
                    blocks.push(block);
                }
                Ok(ContentView::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<Self::Value, A::Error> {
                Err(de::Error::invalid_type(de::Unexpected::Map, &self))
            }
        }
        deserializer.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for TextInfo {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl Visitor<'_> for TextVisitor {
            type Value = TextInfo;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TextInfo, E> {
                Ok(TextInfo {
                    empty: v.is_empty(),
                })
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both(v: Value) -> (String, String) {
        let text = serde_json::to_string(&v).unwrap();
        let raw: Box<RawValue> = serde_json::from_str(&text).unwrap();
        let a = format!("{:?}", MessageView::from_value(&v, "m"));
        let b = format!("{:?}", MessageView::from_raw(&raw, "m"));
        (a, b)
    }

    #[test]
    fn raw_and_value_views_agree() {
        for v in [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "user", "content": ""}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "a\nb"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"p": [1, 2]}, "cache_control": {"type": "ephemeral"}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "x"}]}]}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "out"}),
            json!({"role": "user", "content": 5}),
            json!({"role": 5, "content": "x"}),
            json!({"role": "user", "content": [{"type": "tool_use", "name": "x"}]}),
            json!({"role": "wizard", "content": "x"}),
        ] {
            let (a, b) = both(v.clone());
            assert_eq!(a, b, "views differ for {v}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        let v = json!({"role": "user", "content": [{"type": "text", "text": 3}]});
        let e = MessageView::from_value(&v, "messages[2]").unwrap_err();
        assert_eq!(e.path(), "messages[2].content[0].text");
        assert_eq!(e.code(), "invalid_message");
        let v =
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]});
        let e = MessageView::from_value(&v, "messages[1]").unwrap_err();
        assert_eq!(e.path(), "messages[1].content[0].name");
        let v = json!({"role": "tool", "content": "x"});
        let e = MessageView::from_value(&v, "messages[0]").unwrap_err();
        assert_eq!(e.path(), "messages[0].tool_call_id");
        let v = json!(["not", "an", "object"]);
        let e = MessageView::from_value(&v, "messages[0]").unwrap_err();
        assert_eq!(e.path(), "messages[0]");
        let v = json!({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": 1}}]});
        let e = MessageView::from_value(&v, "messages[0]").unwrap_err();
        assert_eq!(e.path(), "messages[0].tool_calls[0].function.name");
    }

    #[test]
    fn cache_control_and_text_flags() {
        let v = json!({"role": "user", "content": [{"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "x", "cache_control": null}]});
        let view = MessageView::from_value(&v, "m").unwrap();
        let blocks = view.blocks();
        assert!(blocks[0].has_cache_control());
        assert!(blocks[0].text.unwrap().empty);
        assert!(!blocks[1].has_cache_control());
    }
}
