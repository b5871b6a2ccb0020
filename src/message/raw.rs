//! Surgery on raw JSON: objects whose members stay raw slices of the input until one is
//! replaced. Rewriting a message this way copies every byte it does not change and never
//! parses a tool output it only drops or keeps.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::Error;

/// A JSON value under edit: a raw slice, an owned value, or a raw object / array under edit.
#[derive(Clone, Debug)]
pub enum Slot<'a> {
    /// Input text, copied as it is.
    Raw(&'a RawValue),
    /// Input JSON text already validated (read by the one-pass scanner), copied as it is.
    Text(&'a str),
    /// A new value.
    Owned(Value),
    /// An object whose members are under edit.
    Object(RawObject<'a>),
    /// An array whose elements are under edit.
    Array(Vec<Slot<'a>>),
}

/// A JSON object as an ordered list of members.
#[derive(Clone, Debug, Default)]
pub struct RawObject<'a> {
    members: Vec<(Cow<'a, str>, Slot<'a>)>,
}

impl<'a> Slot<'a> {
    /// Appends this value's JSON text.
    pub fn write(&self, out: &mut String) {
        match self {
            Slot::Raw(raw) => out.push_str(raw.get()),
            Slot::Text(text) => out.push_str(text),
            Slot::Owned(value) => out.push_str(&value.to_string()),
            Slot::Object(obj) => obj.write(out),
            Slot::Array(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
        }
    }

    /// This value's JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// The raw slice, when the value is still raw.
    pub fn raw(&self) -> Option<&'a RawValue> {
        match self {
            Slot::Raw(raw) => Some(raw),
            _ => None,
        }
    }

    /// The input JSON text, when the value is still the input's.
    pub fn json_text(&self) -> Option<&'a str> {
        match self {
            Slot::Raw(raw) => Some(raw.get()),
            Slot::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The elements of an array given as JSON text, each as input text (`None` for
    /// anything else).
    pub fn elements_of(text: &'a str) -> Option<Vec<Slot<'a>>> {
        match super::scan::scan_elements(text) {
            Some(elements) => Some(elements.into_iter().map(Slot::Text).collect()),
            None => {
                let els: Elements<'a> = serde_json::from_str(text).ok()?;
                Some(els.0.into_iter().map(Slot::Raw).collect())
            }
        }
    }

    /// The elements of a raw array, each raw (`None` for anything else).
    pub fn elements(raw: &'a RawValue) -> Option<Vec<Slot<'a>>> {
        let els: Elements<'a> = serde_json::from_str(raw.get()).ok()?;
        Some(els.0.into_iter().map(Slot::Raw).collect())
    }

    /// Whether two slots hold the same JSON value.
    pub fn same_value(&self, other: &Slot<'_>) -> bool {
        let (a, b) = (self.to_json(), other.to_json());
        a == b
            || matches!(
                (serde_json::from_str::<Value>(&a), serde_json::from_str::<Value>(&b)),
                (Ok(x), Ok(y)) if x == y
            )
    }
}

impl<'a> RawObject<'a> {
    /// Reads the members of a raw JSON object.
    pub fn parse(raw: &'a RawValue, path: &str) -> Result<RawObject<'a>, Error> {
        RawObject::parse_at(raw.get(), || path.to_string())
    }

    /// [`RawObject::parse`] of a JSON text, with the path built only for an error.
    pub(crate) fn parse_at(
        text: &'a str,
        path: impl FnOnce() -> String,
    ) -> Result<RawObject<'a>, Error> {
        if let Some(members) = super::scan::scan_members(text) {
            return Ok(RawObject {
                members: members
                    .into_iter()
                    .map(|(k, v)| (Cow::Borrowed(k), Slot::Text(v)))
                    .collect(),
            });
        }
        let members: Members<'a> =
            serde_json::from_str(text).map_err(|e| Error::json(path(), &e))?;
        Ok(RawObject {
            members: members
                .0
                .into_iter()
                .map(|(k, v)| (k, Slot::Raw(v)))
                .collect(),
        })
    }

    /// [`RawObject::parse_at`] of an object the one-pass scanner already read, `known` being
    /// the exact text of one of its values (stepped over instead of scanned again).
    pub(crate) fn parse_known(
        text: &'a str,
        known: Option<&str>,
        path: impl FnOnce() -> String,
    ) -> Result<RawObject<'a>, Error> {
        match known.and_then(|k| super::scan::scan_members_known(text, k)) {
            Some(members) => Ok(RawObject {
                members: members
                    .into_iter()
                    .map(|(k, v)| (Cow::Borrowed(k), Slot::Text(v)))
                    .collect(),
            }),
            None => RawObject::parse_at(text, path),
        }
    }

    /// The member `key`.
    pub fn get(&self, key: &str) -> Option<&Slot<'a>> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The member `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Slot<'a>> {
        self.members
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Sets `key` in place, or appends it.
    pub fn set(&mut self, key: &str, value: Slot<'a>) {
        match self.get_mut(key) {
            Some(slot) => *slot = value,
            None => self.members.push((Cow::Owned(key.to_string()), value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Slot<'a>> {
        let at = self.members.iter().position(|(k, _)| k == key)?;
        Some(self.members.remove(at).1)
    }

    /// The members in order.
    pub fn members(&self) -> impl Iterator<Item = (&str, &Slot<'a>)> {
        self.members.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// Consumes the object into its members.
    pub fn into_members(self) -> Vec<(Cow<'a, str>, Slot<'a>)> {
        self.members
    }

    /// Appends this object's JSON text.
    pub fn write(&self, out: &mut String) {
        out.push('{');
        for (n, (key, value)) in self.members.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            write_key(out, key);
            out.push(':');
            value.write(out);
        }
        out.push('}');
    }
}

/// Appends `key` as a JSON string and nothing else.
fn write_key(out: &mut String, key: &str) {
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(key);
        out.push('"');
    } else {
        out.push_str(&Value::String(key.to_string()).to_string());
    }
}

impl fmt::Display for Slot<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

/// The members of a JSON object, values raw, in order.
pub(crate) struct Members<'a>(pub(crate) Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<Cow<'a, str>>()? {
                    let value: &'a RawValue = map.next_value()?;
                    out.push((key, value));
                }
                Ok(Members(out))
            }
        }
        deserializer.deserialize_map(V(std::marker::PhantomData))
    }
}

/// The elements of a JSON array, raw, in order.
pub(crate) struct Elements<'a>(pub(crate) Vec<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Elements<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Elements<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(16));
                while let Some(v) = seq.next_element::<&'a RawValue>()? {
                    out.push(v);
                }
                Ok(Elements(out))
            }
        }
        deserializer.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untouched_members_keep_their_bytes() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"a": 1.50, "content" : [ {"x":1}, {"y" :2} ], "é\n": "z"}"#)
                .unwrap();
        let mut obj = RawObject::parse(&raw, "m").unwrap();
        let blocks = Slot::elements(obj.get("content").unwrap().raw().unwrap()).unwrap();
        obj.set("content", Slot::Array(blocks.into_iter().skip(1).collect()));
        obj.set("new", Slot::Owned(Value::Bool(true)));
        assert_eq!(
            Slot::Object(obj).to_json(),
            r#"{"a":1.50,"content":[{"y" :2}],"é\n":"z","new":true}"#
        );
    }

    #[test]
    fn same_value_ignores_spacing() {
        let a: Box<RawValue> = serde_json::from_str(r#"{"k": [1, 2]}"#).unwrap();
        let b: Box<RawValue> = serde_json::from_str(r#"{"k":[1,2]}"#).unwrap();
        assert!(Slot::Raw(&a).same_value(&Slot::Raw(&b)));
        assert!(!Slot::Raw(&a).same_value(&Slot::Owned(Value::Null)));
    }
}
