//! `uncompress`: the exact inverse of `compress` given its `verbatim`.
//!
//! Every message `compress` rewrote carries its id in a marker (`[summary#<id>: …]`,
//! `[truncated#<id> — …]`, `[call#<id>]` (condensed tool-call arguments),
//! `[dup#<id>: …]`); `verbatim[id]` holds the originals it replaced (several for a merged run).
//! A message with such an id is replaced by its originals; every other message is kept. The
//! round trip is byte-identical on the JSON path and equal as values on the value path.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use super::message_text;
use crate::error::{Error, ErrorKind};
use crate::message::RawDocument;

/// The marker id in a message's text, if it has one that `verbatim` knows.
fn marker_id<'v, V>(text: &str, verbatim: &'v BTreeMap<String, V>) -> Option<&'v String> {
    for prefix in ["[summary#", "[dup#", "[truncated#", "[call#"] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let after = &rest[at + prefix.len()..];
            let id: String = after.chars().take_while(char::is_ascii_hexdigit).collect();
            if let Some((key, _)) = verbatim.get_key_value(&id) {
                return Some(key);
            }
            rest = after;
        }
    }
    None
}

/// Restores the original messages.
pub fn uncompress(messages: &[Value], verbatim: &BTreeMap<String, Vec<Value>>) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match marker_id(&message_text(m), verbatim).and_then(|id| verbatim.get(id)) {
            Some(originals) => out.extend(originals.iter().cloned()),
            None => out.push(m.clone()),
        }
    }
    out
}

/// [`uncompress`] over JSON text: `json` is the compressed document (array or request body),
/// `verbatim` the `{id: [messages]}` object `compress_json` returned. Originals come back as
/// their exact input bytes.
pub fn uncompress_json(json: &str, verbatim: &str) -> Result<String, Error> {
    let doc = RawDocument::parse(json)?;
    let map: BTreeMap<String, Vec<&RawValue>> = serde_json::from_str(verbatim)
        .map_err(|e| Error::new(ErrorKind::InvalidInput, "verbatim", e.to_string()))?;
    let mut pieces: Vec<&str> = Vec::with_capacity(doc.messages.len());
    for (i, raw) in doc.messages.iter().enumerate() {
        let value: Value = serde_json::from_str(raw.get())
            .map_err(|e| Error::json(format!("messages[{i}]"), &e))?;
        match marker_id(&message_text(&value), &map).and_then(|id| map.get(id)) {
            Some(originals) => pieces.extend(originals.iter().map(|r| r.get())),
            None => pieces.push(raw.get()),
        }
    }
    Ok(doc.write_messages(json.len() * 2, pieces))
}
