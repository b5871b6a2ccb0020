//! JSON documents that hold messages: a bare array, or a provider request body with a
//! `messages` array (what a proxy has in hand). Messages stay raw slices of the input, so a
//! rewrite copies every message it leaves alone byte for byte.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::raw::{Elements, Members};
use super::strict::{check_json, MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH};
use super::view::MessageView;
use crate::error::{Error, ErrorKind};

/// A parsed JSON document holding messages, with every message kept as raw text.
#[derive(Debug)]
pub struct RawDocument<'a> {
    /// The messages, as raw JSON slices of the input.
    pub messages: Vec<&'a RawValue>,
    /// For a request body: every top-level member, in order; the `messages` member's value
    /// is replaced on output. `None` for a bare array.
    body: Option<Vec<(Cow<'a, str>, &'a RawValue)>>,
}

impl<'a> RawDocument<'a> {
    /// Parses a document: a JSON array of messages, or an object with a `messages` array.
    pub fn parse(json: &'a str) -> Result<RawDocument<'a>, Error> {
        let trimmed = json.trim_start();
        if trimmed.starts_with('[') {
            let els: Elements<'a> =
                serde_json::from_str(json).map_err(|e| Error::json("messages", &e))?;
            let doc = RawDocument {
                messages: els.0,
                body: None,
            };
            doc.check_sizes()?;
            // The array is the messages' parent: one level above a message.
            check_json(json, "messages", MAX_MESSAGE_DEPTH + 1)?;
            return Ok(doc);
        }
        if !trimmed.starts_with('{') {
            // Let serde say precisely what is wrong with non-JSON; valid JSON of the wrong
            // type is an input error.
            return match serde_json::from_str::<&RawValue>(json) {
                Err(e) => Err(Error::json("", &e)),
                Ok(_) => Err(Error::new(
                    ErrorKind::InvalidInput,
                    "",
                    "expected a JSON array of messages or an object with a \"messages\" array",
                )),
            };
        }
        let members: Members<'a> = serde_json::from_str(json).map_err(|e| Error::json("", &e))?;
        let Some((_, raw)) = members.0.iter().find(|(k, _)| k == "messages") else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "messages",
                "the request body has no \"messages\" member",
            ));
        };
        let els: Elements<'a> = serde_json::from_str(raw.get()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidInput,
                "messages",
                "\"messages\" must be an array",
            )
        })?;
        let doc = RawDocument {
            messages: els.0,
            body: Some(members.0),
        };
        doc.check_sizes()?;
        // The body and its `messages` array: two levels above a message.
        check_json(json, "", MAX_MESSAGE_DEPTH + 2)?;
        Ok(doc)
    }

    /// Every message within [`MAX_MESSAGE_BYTES`].
    fn check_sizes(&self) -> Result<(), Error> {
        match self
            .messages
            .iter()
            .position(|m| m.get().len() > MAX_MESSAGE_BYTES)
        {
            Some(i) => Err(super::message_too_large(i, self.messages[i].get().len())),
            None => Ok(()),
        }
    }

    /// Whether the document is a request body (not a bare array).
    pub fn is_body(&self) -> bool {
        self.body.is_some()
    }

    /// Reads the structural view of every message.
    pub fn views(&self) -> Result<Vec<MessageView<'a>>, Error> {
        super::views_from_raws(&self.messages)
    }

    /// Writes the document with its messages replaced by `messages` (JSON texts, in order).
    pub fn write_messages<'s>(
        &self,
        capacity: usize,
        messages: impl IntoIterator<Item = &'s str>,
    ) -> String {
        self.write(capacity, |out| {
            out.push('[');
            for (n, text) in messages.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(text);
            }
            out.push(']');
        })
    }

    /// Writes the document back with `write_messages` producing the new `messages` array's
    /// text (brackets included). Every other member of a request body is copied verbatim;
    /// the output is compact between members.
    pub fn write(&self, capacity: usize, write_messages: impl FnOnce(&mut String)) -> String {
        let mut out = String::with_capacity(capacity);
        match &self.body {
            None => write_messages(&mut out),
            Some(members) => {
                out.push('{');
                let mut write_messages = Some(write_messages);
                for (n, (key, value)) in members.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    push_json_string(&mut out, key);
                    out.push(':');
                    // Only the first `messages` member is the document's messages (duplicate
                    // keys are kept as they are).
                    match (key.as_ref(), write_messages.take()) {
                        ("messages", Some(f)) => f(&mut out),
                        (_, f) => {
                            write_messages = f;
                            out.push_str(value.get());
                        }
                    }
                }
                out.push('}');
            }
        }
        out
    }
}

/// Appends `s` as a JSON string literal.
fn push_json_string(out: &mut String, s: &str) {
    // serde_json's escaping, so the text is exactly what serde_json would write.
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_and_body() {
        let doc = RawDocument::parse(
            r#" [ {"role":"user","content":"a"} ,{"role":"user", "content":"b"}]"#,
        )
        .unwrap();
        assert!(!doc.is_body());
        assert_eq!(doc.messages.len(), 2);
        assert_eq!(doc.messages[1].get(), r#"{"role":"user", "content":"b"}"#);

        let body = r#"{"model":"x","messages":[{"role":"user","content":"a"}],"stream":true}"#;
        let doc = RawDocument::parse(body).unwrap();
        assert!(doc.is_body());
        let out = doc.write(0, |o| o.push_str("[]"));
        assert_eq!(out, r#"{"model":"x","messages":[],"stream":true}"#);
    }

    #[test]
    fn errors() {
        assert_eq!(
            RawDocument::parse("[1,").unwrap_err().code(),
            "invalid_json"
        );
        assert_eq!(
            RawDocument::parse("42").unwrap_err().code(),
            "invalid_input"
        );
        assert_eq!(
            RawDocument::parse("{\"a\":1}").unwrap_err().path(),
            "messages"
        );
        assert_eq!(
            RawDocument::parse("{\"messages\":{}}").unwrap_err().code(),
            "invalid_input"
        );
        assert_eq!(
            RawDocument::parse("nope").unwrap_err().code(),
            "invalid_json"
        );
        // Nesting past a message's limit is refused with the path where it goes too deep,
        // without recursion (10,000 levels).
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let err = RawDocument::parse(&deep).unwrap_err();
        assert_eq!(err.code(), "invalid_json");
        assert!(err.path().starts_with("messages[0][0]"));
        // A key twice in the body is refused at its path.
        let err = RawDocument::parse(r#"{"messages":[],"x":1,"x":2}"#).unwrap_err();
        assert_eq!((err.code(), err.path()), ("invalid_json", "x"));
    }
}
