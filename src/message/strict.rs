//! What serde_json lets through and the crate refuses: duplicate keys and over-deep nesting.
//!
//! serde_json accepts `{"messages": [], "messages": [ … ]}`: a raw reader keeps both members, a
//! `Value` keeps the last, a derived struct reads the first (or refuses a known field twice).
//! `JSON.parse`, and so the provider, takes the last. Reading such a text one way and sending it
//! to be read the other way is how a request says one thing to `validate` and another to the
//! model, so every JSON text the crate reads (a document of messages, options, state, a cache,
//! a CLI line) is refused with [`ErrorKind::InvalidJson`] at the path of the second key
//! (`messages[3].content[0].id`) when any of its objects has a key twice. Keys compare by
//! their decoded text (`"a"` and `"\u0061"` are the same key).
//!
//! Nesting: a message nests at most [`MAX_MESSAGE_DEPTH`] arrays and objects, itself
//! included, whatever operation reads it (deeper is what serde_json refuses to read into a
//! value; the scanners and raw readers would pass it through, so every operation now refuses it
//! alike). Option and state texts nest at most [`MAX_DEPTH`] levels.
//!
//! [`check_json`] is one iterative pass over the text (no recursion, so no stack to overflow),
//! strings skipped sixteen bytes at a time with the one-pass scanner's own routine; it only
//! reports what it finds before the first syntax error (serde then reports that error).

use std::borrow::Cow;

use super::scan::Scanner;
use crate::error::{Error, ErrorKind};
use crate::text::hash::FastSet;

/// The deepest nesting of a JSON text the crate reads (arrays and objects, the outermost
/// counting 1): serde_json's own limit for a value, which compress reads messages into.
pub const MAX_DEPTH: usize = 128;

/// The deepest nesting of one message (the message object counts 1): 127, what serde_json
/// reads into a value. In a bare array of messages the array is one level more; in a request
/// body, the body and its `messages` array are two.
pub const MAX_MESSAGE_DEPTH: usize = MAX_DEPTH - 1;

/// The largest JSON text of one message, in bytes (64 MiB); larger is [`ErrorKind::TooLarge`]
/// at the message's path. Providers refuse requests far smaller (Anthropic: 32 MB).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The object of more keys than this keeps a hash set of them instead of comparing each new key
/// with the ones before it.
const LINEAR_KEYS: usize = 12;

/// The keys of the objects open during a walk: a new key is refused when its object already has
/// it. Small objects compare keys one by one; an object past [`LINEAR_KEYS`] keys gets a set.
#[derive(Default)]
pub(super) struct OpenKeys<'a> {
    keys: Vec<Cow<'a, str>>,
    /// `(mark, set)` of the open objects that have a set, innermost last.
    sets: Vec<(usize, FastSet<Cow<'a, str>>)>,
}

impl<'a> OpenKeys<'a> {
    /// Opens an object: its mark, for [`OpenKeys::insert`] and [`OpenKeys::close`].
    #[inline]
    pub(super) fn open(&self) -> usize {
        self.keys.len()
    }

    /// Adds `key` to the object opened at `mark`; `false` when it has it already.
    #[inline]
    pub(super) fn insert(&mut self, mark: usize, key: Cow<'a, str>) -> bool {
        if let Some((m, set)) = self.sets.last_mut() {
            if *m == mark {
                return set.insert(key);
            }
        }
        let own = self.keys.get(mark..).unwrap_or_default();
        if own.contains(&key) {
            return false;
        }
        if own.len() >= LINEAR_KEYS {
            let mut set: FastSet<Cow<'a, str>> = own.iter().cloned().collect();
            set.insert(key);
            // From now on this object's keys go to the set only; the ones before stay in `keys`,
            // so the marks of objects opened inside it stay distinct from its own.
            self.sets.push((mark, set));
            return true;
        }
        self.keys.push(key);
        true
    }

    /// Closes the object opened at `mark`.
    #[inline]
    pub(super) fn close(&mut self, mark: usize) {
        self.keys.truncate(mark);
        if self.sets.last().is_some_and(|(m, _)| *m == mark) {
            self.sets.pop();
        }
    }
}

/// A key's text for comparison: its inner text, decoded when it has escapes (`None` when the
/// escapes do not decode, which serde then reports).
pub(super) fn key_text<'a>(inner: &'a str, escaped: bool) -> Option<Cow<'a, str>> {
    if !escaped {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(&format!("\"{inner}\""))
        .ok()
        .map(Cow::Owned)
}

/// One open array or object of the walk, with where it is (for an error's path).
struct Frame<'a> {
    /// `Some(mark)` for an object (see [`OpenKeys`]), `None` for an array.
    mark: Option<usize>,
    /// The current element's index (arrays).
    index: usize,
    /// The current member's key (objects).
    key: Cow<'a, str>,
}

/// Checks that no object of `json` has a key twice and that it nests at most `max_depth`
/// levels. `root` is the path of the text itself (`messages`, `options`, or `""`). Stops
/// without error at the first syntax error (serde reports it). Every text entry point of the
/// crate runs it; it is public for hosts that read JSON of their own beside the crate's (the
/// CLI checks each JSONL line with it).
///
/// ```
/// use condense::message::{check_json, MAX_DEPTH};
/// let err = check_json(r#"{"messages":[],"messages":[{"role":"user"}]}"#, "", MAX_DEPTH);
/// assert_eq!(err.unwrap_err().path(), "messages");
/// assert!(check_json(r#"[{"a":{"a":1}}]"#, "messages", MAX_DEPTH).is_ok());
/// ```
///
/// # Errors
/// [`ErrorKind::InvalidJson`] at the path of the repeated key or of the value too deep.
pub fn check_json(json: &str, root: &str, max_depth: usize) -> Result<(), Error> {
    let mut s = Scanner::new(json);
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let mut keys = OpenKeys::default();
    // Reads a member's key and colon into the innermost frame (an object).
    macro_rules! member_key {
        () => {{
            s.ws();
            let Some(k) = s.string() else { return Ok(()) };
            let Some(key) = key_text(k.inner, k.escaped) else {
                return Ok(());
            };
            let Some(frame) = frames.last_mut() else {
                return Ok(());
            };
            let mark = frame.mark.unwrap_or(0);
            frame.key = key.clone();
            if !keys.insert(mark, key) {
                return Err(Error::new(
                    ErrorKind::InvalidJson,
                    path(root, &frames),
                    format!(
                        "duplicate key {:?}: JSON.parse and the provider read the last one, \
                         a raw reader the first; send each key once",
                        frames.last().map_or("", |f| f.key.as_ref())
                    ),
                ));
            }
            s.ws();
            if s.eat(b':').is_none() {
                return Ok(());
            }
        }};
    }
    loop {
        // A value.
        s.ws();
        match s.peek() {
            Some(open @ (b'{' | b'[')) => {
                if frames.len() >= max_depth {
                    return Err(Error::new(
                        ErrorKind::InvalidJson,
                        path(root, &frames),
                        format!("nested deeper than {max_depth} levels of arrays and objects"),
                    ));
                }
                s.i += 1;
                s.ws();
                let object = open == b'{';
                let close = if object { b'}' } else { b']' };
                if !s.eat_if(close) {
                    frames.push(Frame {
                        mark: object.then(|| keys.open()),
                        index: 0,
                        key: Cow::Borrowed(""),
                    });
                    if object {
                        member_key!();
                    }
                    continue;
                }
            }
            Some(b'"') => {
                if s.string().is_none() {
                    return Ok(());
                }
            }
            Some(b't') => {
                if s.literal(b"true").is_none() {
                    return Ok(());
                }
            }
            Some(b'f') => {
                if s.literal(b"false").is_none() {
                    return Ok(());
                }
            }
            Some(b'n') => {
                if s.literal(b"null").is_none() {
                    return Ok(());
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                if s.number().is_none() {
                    return Ok(());
                }
            }
            _ => return Ok(()),
        }
        // After a value: close what ends here, then the next element or member.
        loop {
            let Some(frame) = frames.last_mut() else {
                return Ok(());
            };
            s.ws();
            match (s.next(), frame.mark) {
                (Some(b','), None) => {
                    frame.index += 1;
                    break;
                }
                (Some(b','), Some(_)) => {
                    member_key!();
                    break;
                }
                (Some(b']'), None) => {
                    frames.pop();
                }
                (Some(b'}'), Some(mark)) => {
                    keys.close(mark);
                    frames.pop();
                }
                _ => return Ok(()),
            }
        }
    }
}

/// The path of the innermost frame's current element or member.
fn path(root: &str, frames: &[Frame<'_>]) -> String {
    let mut out = root.to_string();
    for f in frames {
        match f.mark {
            None => out = crate::error::join_index(&out, f.index),
            Some(_) => out = crate::error::join_key(&out, &f.key),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> Option<(String, String)> {
        check_json(json, "messages", MAX_DEPTH)
            .err()
            .map(|e| (e.code().to_string(), e.path().to_string()))
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        let dup = |p: &str| Some(("invalid_json".to_string(), p.to_string()));
        assert_eq!(
            err(r#"[{"role":"user","role":"assistant"}]"#),
            dup("messages[0].role")
        );
        assert_eq!(
            err(r#"[{"a":1},{"role":"user","content":[{"type":"t","x":{"k":1,"k":2}}]}]"#),
            dup("messages[1].content[0].x.k")
        );
        // The same key spelled with an escape.
        assert_eq!(
            err(r#"[{"role":"user","r\u006fle":"x"}]"#),
            dup("messages[0].role")
        );
        // A wide object (past the linear comparisons) and nested objects reusing keys.
        let wide: Vec<String> = (0..40)
            .map(|i| format!("\"k{i}\":{{\"k{i}\":1}}"))
            .collect();
        assert_eq!(err(&format!("[{{{}}}]", wide.join(","))), None);
        let twice = format!("[{{{},\"k7\":0}}]", wide.join(","));
        assert_eq!(err(&twice), dup("messages[0].k7"));
        // Siblings may share keys; so may an object and the one inside it.
        assert_eq!(err(r#"[{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}]"#), None);
        assert_eq!(
            err(r#"{"messages":[],"messages":[1]}"#),
            dup("messages.messages")
        );
    }

    #[test]
    fn root_paths() {
        let e = check_json(r#"{"messages":[],"messages":[]}"#, "", MAX_DEPTH).unwrap_err();
        assert_eq!(e.path(), "messages");
        let e = check_json(r#"{"bm25":{"k1":1,"k1":2}}"#, "options", MAX_DEPTH).unwrap_err();
        assert_eq!(e.path(), "options.bm25.k1");
    }

    #[test]
    fn depth_is_bounded() {
        let nest = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(check_json(&nest(MAX_DEPTH), "", MAX_DEPTH).is_ok());
        let e = check_json(&nest(MAX_DEPTH + 1), "", MAX_DEPTH).unwrap_err();
        assert_eq!(e.code(), "invalid_json");
        assert_eq!(e.path(), format!("{}", "[0]".repeat(MAX_DEPTH)));
        // Half a megabyte of brackets: no recursion, so no stack to overflow.
        assert!(check_json(&nest(500_000), "", MAX_DEPTH).is_err());
        // serde_json reads a value of MAX_DEPTH - 1 levels and refuses one of MAX_DEPTH.
        assert!(serde_json::from_str::<serde_json::Value>(&nest(MAX_DEPTH - 1)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&nest(MAX_DEPTH)).is_err());
    }

    #[test]
    fn syntax_errors_are_left_to_serde() {
        for json in [
            "",
            "[",
            "[1,",
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            "[tru]",
            r#"["\x"]"#,
            "[1] x",
        ] {
            assert!(check_json(json, "", MAX_DEPTH).is_ok(), "{json}");
        }
        // What comes before the error is checked.
        assert!(check_json(r#"{"a":1,"a":2,"#, "", MAX_DEPTH).is_err());
    }
}
