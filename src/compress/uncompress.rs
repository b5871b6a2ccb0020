//! `uncompress`: the exact inverse of `compress` given its `verbatim`.
//!
//! Every message `compress` rewrote carries an id in a marker (`[summary#<id>: …]`,
//! `[truncated#<id> — …]`, `[call#<id>]` (condensed tool-call arguments), `[dup#<id>: …]`);
//! `verbatim[id]` holds the originals it replaced (several for a merged run or a fold). Walking
//! the output in order, each message is restored from `verbatim[id]` only where that id checks
//! out at its position ([`ids`]: the id is a hash of the originals' position and
//! texts): so exactly the messages compress rewrote come back, and a message that quotes a
//! marker (of this call or any other) is left as it is. Messages appended after the compressed
//! ones are kept. The round trip is byte-identical on the JSON path and equal as values on the
//! value path.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use super::ids;
use super::parse::message_text;
use crate::error::{Error, ErrorKind};
use crate::message::RawDocument;

/// The id among `text`'s markers whose originals (`texts_of(id)`) check out at `position`.
fn restoring<'m>(
    text: &str,
    position: usize,
    known: impl Fn(&str) -> Option<&'m str>,
    texts_of: impl Fn(&str) -> Option<Vec<String>>,
) -> Option<&'m str> {
    for candidate in ids::candidates(text) {
        let Some(id) = known(candidate) else {
            continue;
        };
        let Some(texts) = texts_of(id) else {
            continue;
        };
        if ids::marker_id(position, texts.iter().map(String::as_str)) == id {
            return Some(id);
        }
    }
    None
}

/// Restores the original messages.
pub fn uncompress(messages: &[Value], verbatim: &BTreeMap<String, Vec<Value>>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    for m in messages {
        let id = restoring(
            &message_text(m),
            out.len(),
            |c| verbatim.get_key_value(c).map(|(k, _)| k.as_str()),
            |id| {
                verbatim
                    .get(id)
                    .map(|originals| originals.iter().map(message_text).collect())
            },
        );
        match id.and_then(|id| verbatim.get(id)) {
            Some(originals) => out.extend(originals.iter().cloned()),
            None => out.push(m.clone()),
        }
    }
    out
}

/// [`uncompress`] over JSON text: `json` is the compressed document (array or request body),
/// `verbatim` the `{id: [messages]}` object `compress_json` returned. Originals come back as
/// their exact input bytes.
///
/// # Errors
/// `invalid_json` / `invalid_input` for a document that is not one, `invalid_input` at
/// `verbatim` for a `verbatim` that is not an object of message arrays.
pub fn uncompress_json(json: &str, verbatim: &str) -> Result<String, Error> {
    let doc = RawDocument::parse(json)?;
    let map: BTreeMap<String, Vec<&RawValue>> = serde_json::from_str(verbatim)
        .map_err(|e| Error::new(ErrorKind::InvalidInput, "verbatim", e.to_string()))?;
    let texts_of = |id: &str| -> Option<Vec<String>> {
        map.get(id)?
            .iter()
            .map(|r| {
                serde_json::from_str::<Value>(r.get())
                    .ok()
                    .map(|v| message_text(&v))
            })
            .collect()
    };
    let mut pieces: Vec<&str> = Vec::with_capacity(doc.messages.len());
    for (i, raw) in doc.messages.iter().enumerate() {
        let value: Value = serde_json::from_str(raw.get())
            .map_err(|e| Error::json(format!("messages[{i}]"), &e))?;
        let id = restoring(
            &message_text(&value),
            pieces.len(),
            |c| map.get_key_value(c).map(|(k, _)| k.as_str()),
            texts_of,
        );
        match id.and_then(|id| map.get(id)) {
            Some(originals) => pieces.extend(originals.iter().map(|r| r.get())),
            None => pieces.push(raw.get()),
        }
    }
    Ok(doc.write_messages(json.len() * 2, pieces))
}
