//! The one-pass fast path for a JSON array of messages: delimits every message and reads its
//! [`MessageView`] in a single scan of the text, where the general path scans it twice with
//! serde (once for the raw slices, once for the views).
//!
//! It is only a shortcut: [`scan_messages`] answers `None` for anything it does not read
//! exactly as serde would (a request body, a key or a typed string with an escape that needs
//! decoding, a duplicate field, a value of an unexpected type, invalid JSON, …), and the caller
//! then takes the serde path, which decides and reports errors as before. When it answers, the
//! slices are the ones [`RawDocument::parse`](super::RawDocument::parse) finds and the views
//! are the ones serde reads from them (`tests::agrees_with_serde`).
//!
//! Validation is serde_json's: JSON white space only, strings without raw control characters
//! and with valid escapes (`\u` and four hex digits), its number grammar, literals spelled out.

use std::borrow::Cow;

use super::strict::{key_text, OpenKeys, MAX_DEPTH, MAX_MESSAGE_BYTES};
use super::view::{BlockView, ContentView, FunctionView, MessageView, TextInfo, ToolCallView};
use super::{BlockKind, Role};

/// The messages of a JSON array (each its exact text) and their views, or `None`.
pub(crate) fn scan_messages(json: &str) -> Option<(Vec<&str>, Vec<MessageView<'_>>)> {
    let mut s = Scanner::new(json);
    s.ws();
    s.eat(b'[')?;
    s.depth = 1;
    let mut texts = Vec::new();
    let mut views = Vec::new();
    s.ws();
    if !s.eat_if(b']') {
        loop {
            s.ws();
            let start = s.i;
            let view = s.message()?;
            if s.i - start > MAX_MESSAGE_BYTES {
                return None;
            }
            texts.push(json.get(start..s.i)?);
            views.push(view);
            s.ws();
            match s.next()? {
                b',' => {}
                b']' => break,
                _ => return None,
            }
        }
    }
    s.ws();
    (s.i == s.bytes.len()).then_some((texts, views))
}

/// The members of a JSON object (keys without escapes; values as their exact texts), or `None`
/// (then serde reads it).
pub(crate) fn scan_members(json: &str) -> Option<Vec<(&str, &str)>> {
    members(json, None)
}

/// [`scan_members`] of an object the one-pass scanner already read, `known` being the exact
/// text of one of its values (a slice of `json`): that value is stepped over, not scanned
/// again. `None` when `known` is not a slice of `json` or for anything `scan_members` refuses.
pub(crate) fn scan_members_known<'a>(
    json: &'a str,
    known: &str,
) -> Option<Vec<(&'a str, &'a str)>> {
    let at = (known.as_ptr() as usize).checked_sub(json.as_ptr() as usize)?;
    let end = at.checked_add(known.len())?;
    if end > json.len() || known.is_empty() {
        return None;
    }
    members(json, Some((at, end)))
}

/// The object's members; a value starting at `known.0` is taken to end at `known.1` unscanned.
fn members(json: &str, known: Option<(usize, usize)>) -> Option<Vec<(&str, &str)>> {
    let mut s = Scanner::new(json);
    let mut members = Vec::new();
    s.ws();
    s.object(|s, key| {
        let start = s.i;
        match known {
            Some((at, end)) if at == start => s.i = end,
            _ => s.skip_value()?,
        }
        members.push((key, json.get(start..s.i)?));
        Some(())
    })?;
    s.ws();
    (s.i == s.bytes.len()).then_some(members)
}

/// The elements of a JSON array as their exact texts, or `None` (then serde reads it).
pub(crate) fn scan_elements(json: &str) -> Option<Vec<&str>> {
    let mut s = Scanner::new(json);
    let mut elements = Vec::new();
    s.ws();
    s.array(|s| {
        let start = s.i;
        s.skip_value()?;
        elements.push(json.get(start..s.i)?);
        Some(())
    })?;
    s.ws();
    (s.i == s.bytes.len()).then_some(elements)
}

/// The number literals of a JSON text in document order (each its exact text), and how many
/// object keys it writes (a string followed by `:`), or `None` for text the scanner does not
/// read as serde_json would (then nothing is paired: `compress`'s `SeenValues::add_written`).
pub(crate) fn number_literals(json: &str) -> Option<(Vec<&str>, usize)> {
    let mut s = Scanner::new(json);
    let mut literals = Vec::new();
    let mut keys = 0;
    while let Some(b) = s.peek() {
        match b {
            b'"' => {
                s.string()?;
                s.ws();
                if s.peek() == Some(b':') {
                    keys += 1;
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = s.i;
                s.number()?;
                literals.push(json.get(start..s.i)?);
            }
            _ => s.i += 1,
        }
    }
    Some((literals, keys))
}

pub(super) struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pub(super) i: usize,
    /// Arrays and objects open at the cursor.
    depth: usize,
    /// The keys of the objects open (a key twice in one object: `None`, serde decides).
    keys: OpenKeys<'a>,
}

/// A string as found: its text between the quotes and whether it has escapes.
pub(super) struct Str<'a> {
    pub(super) inner: &'a str,
    pub(super) escaped: bool,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(text: &'a str) -> Scanner<'a> {
        Scanner {
            text,
            bytes: text.as_bytes(),
            i: 0,
            depth: 0,
            keys: OpenKeys::default(),
        }
    }

    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.i).copied()
    }

    #[inline]
    pub(super) fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    #[inline]
    pub(super) fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    #[inline]
    pub(super) fn eat_if(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.i += 1;
        }
        hit
    }

    /// JSON white space (serde_json's: space, tab, line feed, carriage return).
    #[inline]
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    pub(super) fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.bytes.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A string at the cursor (validated as serde_json ignores one).
    pub(super) fn string(&mut self) -> Option<Str<'a>> {
        self.eat(b'"')?;
        let start = self.i;
        let escaped = self.string_rest()?;
        let inner = self.text.get(start..self.i - 1)?;
        Some(Str { inner, escaped })
    }

    /// The rest of a string after its opening quote, up to and including the closing one;
    /// whether it has escapes. Sixteen bytes are classified at a time and every escape in
    /// them is handled from the same mask.
    fn string_rest(&mut self) -> Option<bool> {
        let bytes = self.bytes;
        let mut escaped = false;
        let mut base = self.i;
        let mut mask = specials(bytes, base);
        loop {
            if mask == 0 {
                base += 16;
                // A long plain stretch (a tool output): 64 bytes a step while none ends it.
                while plain64(bytes, base) {
                    base += 64;
                }
                if base >= bytes.len() {
                    return None;
                }
                mask = specials(bytes, base);
                continue;
            }
            let p = base + mask.trailing_zeros() as usize;
            match bytes[p] {
                b'"' => {
                    self.i = p + 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    let next = match *bytes.get(p + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => p + 2,
                        b'u' => {
                            let hex = bytes.get(p + 2..p + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            p + 6
                        }
                        _ => return None,
                    };
                    if next - base >= 16 {
                        base = next;
                        mask = specials(bytes, base);
                    } else {
                        mask &= u32::MAX << (next - base);
                    }
                }
                _ => return None, // a control character
            }
        }
    }

    /// A string serde reads as a borrowed `&str`: no escapes at all.
    fn plain(&mut self) -> Option<&'a str> {
        let s = self.string()?;
        (!s.escaped).then_some(s.inner)
    }

    /// `null` or a plain string.
    fn opt_plain(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        Some(Some(Cow::Borrowed(self.plain()?)))
    }

    /// A string serde decodes (to see whether it is empty): any escape but `\u`, whose
    /// surrogates serde checks.
    fn decodable(&mut self) -> Option<TextInfo> {
        let s = self.string()?;
        if s.escaped && s.inner.contains("\\u") {
            return None;
        }
        Some(TextInfo {
            empty: s.inner.is_empty(),
        })
    }

    pub(super) fn number(&mut self) -> Option<()> {
        self.eat_if(b'-');
        match self.next()? {
            b'0' => {
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat_if(b'.') {
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// Any value, validated and skipped (iteratively, so no stack to overflow; nesting is
    /// bounded by [`MAX_DEPTH`] with the levels open around it, and keys are checked).
    fn skip_value(&mut self) -> Option<()> {
        // (closing byte, key mark) of each array or object open inside the value.
        let mut open: Vec<(u8, usize)> = Vec::new();
        loop {
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' => {
                    self.enter(open.len())?;
                    self.i += 1;
                    self.ws();
                    if !self.eat_if(b'}') {
                        let mark = self.keys.open();
                        open.push((b'}', mark));
                        self.member_key(mark)?;
                        continue;
                    }
                }
                b'[' => {
                    self.enter(open.len())?;
                    self.i += 1;
                    self.ws();
                    if !self.eat_if(b']') {
                        open.push((b']', 0));
                        continue;
                    }
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // After a value: close what ends here, then the next element or member.
            loop {
                let Some(&(close, mark)) = open.last() else {
                    return Some(());
                };
                self.ws();
                match self.next()? {
                    b',' => {
                        if close == b'}' {
                            self.ws();
                            self.member_key(mark)?;
                        }
                        break;
                    }
                    b if b == close => {
                        if close == b'}' {
                            self.keys.close(mark);
                        }
                        open.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// Whether one more array or object may open, `extra` being open beyond `self.depth`.
    #[inline]
    fn enter(&self, extra: usize) -> Option<()> {
        (self.depth + extra < MAX_DEPTH).then_some(())
    }

    /// `"key"` and `:` of an ignored object's member (opened at `mark`): `None` for a key the
    /// object has already.
    fn member_key(&mut self, mark: usize) -> Option<()> {
        let k = self.string()?;
        if !self.keys.insert(mark, key_text(k.inner, k.escaped)?) {
            return None;
        }
        self.ws();
        self.eat(b':')
    }

    /// The members of an object: `f(scanner, key)` reads each value. Keys must be plain and
    /// each appear once.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.enter(0)?;
        self.eat(b'{')?;
        self.ws();
        if self.eat_if(b'}') {
            return Some(());
        }
        self.depth += 1;
        let mark = self.keys.open();
        loop {
            self.ws();
            let key = self.plain()?;
            if !self.keys.insert(mark, Cow::Borrowed(key)) {
                return None;
            }
            self.ws();
            self.eat(b':')?;
            self.ws();
            f(self, key)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => {
                    self.keys.close(mark);
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The elements of an array: `f(scanner)` reads each.
    fn array(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.enter(0)?;
        self.eat(b'[')?;
        self.ws();
        if self.eat_if(b']') {
            return Some(());
        }
        self.depth += 1;
        loop {
            self.ws();
            f(self)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => {
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn message(&mut self) -> Option<MessageView<'a>> {
        let mut role = None;
        let mut content = None;
        let mut tool_calls = None;
        let mut tool_call_id = None;
        let mut content_text = None;
        self.object(|s, key| {
            match key {
                "role" => once(&mut role, s.plain()?)?,
                "content" => {
                    let start = s.i;
                    once(&mut content, s.content()?)?;
                    content_text = Some(s.text.get(start..s.i)?);
                }
                "tool_calls" => once(&mut tool_calls, s.tool_calls()?)?,
                "tool_call_id" => once(&mut tool_call_id, s.opt_plain()?)?,
                _ => s.skip_value()?,
            }
            Some(())
        })?;
        let role = role?;
        Some(MessageView {
            role: Cow::Borrowed(role),
            known_role: Role::parse(role),
            content: content.unwrap_or_default(),
            tool_calls: tool_calls.flatten(),
            tool_call_id: tool_call_id.flatten(),
            content_text,
        })
    }

    fn content(&mut self) -> Option<ContentView<'a>> {
        match self.peek()? {
            b'"' => Some(ContentView::Text {
                empty: self.decodable()?.empty,
            }),
            b'n' => {
                self.literal(b"null")?;
                Some(ContentView::Null)
            }
            b'[' => {
                let mut blocks = Vec::new();
                self.array(|s| {
                    blocks.push(s.block()?);
                    Some(())
                })?;
                Some(ContentView::Blocks(blocks))
            }
            _ => None,
        }
    }

    fn block(&mut self) -> Option<BlockView<'a>> {
        let start = self.i;
        let mut type_name = None;
        let mut id = None;
        let mut name = None;
        let mut tool_use_id = None;
        let mut text = None;
        let mut cache_control = None;
        self.object(|s, key| {
            match key {
                "type" => once(&mut type_name, s.plain()?)?,
                "id" => once(&mut id, s.opt_plain()?)?,
                "name" => once(&mut name, s.opt_plain()?)?,
                "tool_use_id" => once(&mut tool_use_id, s.opt_plain()?)?,
                "text" => {
                    let value = if s.peek()? == b'n' {
                        s.literal(b"null")?;
                        None
                    } else {
                        Some(s.decodable()?)
                    };
                    once(&mut text, value)?;
                }
                "cache_control" => {
                    let present = if s.peek()? == b'n' {
                        s.literal(b"null")?;
                        false
                    } else {
                        s.skip_value()?;
                        true
                    };
                    once(&mut cache_control, present)?;
                }
                _ => s.skip_value()?,
            }
            Some(())
        })?;
        let type_name = type_name?;
        Some(BlockView::scanned(
            Cow::Borrowed(type_name),
            id.flatten(),
            name.flatten(),
            tool_use_id.flatten(),
            text.flatten(),
            cache_control.unwrap_or(false),
            BlockKind::from_type(type_name),
            self.text.get(start..self.i)?,
        ))
    }

    fn tool_calls(&mut self) -> Option<Option<Vec<ToolCallView<'a>>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        let mut calls = Vec::new();
        self.array(|s| {
            calls.push(s.tool_call()?);
            Some(())
        })?;
        Some(Some(calls))
    }

    fn tool_call(&mut self) -> Option<ToolCallView<'a>> {
        let mut id = None;
        let mut function = None;
        self.object(|s, key| {
            match key {
                "id" => once(&mut id, s.opt_plain()?)?,
                "function" => {
                    let value = if s.peek()? == b'n' {
                        s.literal(b"null")?;
                        None
                    } else {
                        let mut name = None;
                        s.object(|s, key| {
                            match key {
                                "name" => once(&mut name, s.opt_plain()?)?,
                                _ => s.skip_value()?,
                            }
                            Some(())
                        })?;
                        Some(FunctionView {
                            name: name.flatten(),
                        })
                    };
                    once(&mut function, value)?;
                }
                _ => s.skip_value()?,
            }
            Some(())
        })?;
        Some(ToolCallView {
            id: id.flatten(),
            function: function.flatten(),
        })
    }
}

/// Sets a field read once; a second occurrence is serde's `duplicate field` error.
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// Whether the 64 bytes from `i` are all plain string text (no `"`, `\` or control
/// character); `false` when fewer than 64 bytes remain.
#[inline]
fn plain64(bytes: &[u8], i: usize) -> bool {
    let Some(chunk) = bytes.get(i..i + 64) else {
        return false;
    };
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        use core::arch::wasm32::{
            u64x2, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_any_true, v128_or,
        };
        let mut hits = u8x16_splat(0);
        for part in chunk.chunks_exact(16) {
            let mut lo = [0u8; 8];
            let mut hi = [0u8; 8];
            lo.copy_from_slice(&part[..8]);
            hi.copy_from_slice(&part[8..]);
            let v: v128 = u64x2(u64::from_le_bytes(lo), u64::from_le_bytes(hi));
            hits = v128_or(
                hits,
                v128_or(
                    v128_or(
                        u8x16_eq(v, u8x16_splat(b'"')),
                        u8x16_eq(v, u8x16_splat(b'\\')),
                    ),
                    u8x16_lt(v, u8x16_splat(0x20)),
                ),
            );
        }
        !v128_any_true(hits)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        chunk
            .chunks_exact(16)
            .enumerate()
            .all(|(k, _)| specials(chunk, 16 * k) == 0)
    }
}

/// The bytes among the sixteen from `i` that end a plain run of string text: `"`, `\` or a
/// control character (bit `j` for byte `i + j`; fewer bytes near the end).
#[inline]
fn specials(bytes: &[u8], i: usize) -> u32 {
    let Some(chunk) = bytes.get(i..i + 16) else {
        let rest = bytes.get(i..).unwrap_or(&[]);
        return rest
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'"' || b == b'\\' || b < 0x20)
            .fold(0, |m, (j, _)| m | 1 << j);
    };
    let mut lo = [0u8; 8];
    let mut hi = [0u8; 8];
    lo.copy_from_slice(&chunk[..8]);
    hi.copy_from_slice(&chunk[8..]);
    let (lo, hi) = (u64::from_le_bytes(lo), u64::from_le_bytes(hi));
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        use core::arch::wasm32::{u64x2, u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128_or};
        let v = u64x2(lo, hi);
        let hits = v128_or(
            v128_or(
                u8x16_eq(v, u8x16_splat(b'"')),
                u8x16_eq(v, u8x16_splat(b'\\')),
            ),
            u8x16_lt(v, u8x16_splat(0x20)),
        );
        u32::from(u8x16_bitmask(hits))
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        const LOW: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        // Bytes equal to zero (exact: no false positives from borrows), as 8 bits.
        let zero = |t: u64| !((t & !HIGH).wrapping_add(!HIGH) | t) & HIGH;
        let word = |x: u64| {
            let hits = zero(x ^ (LOW * u64::from(b'"')))
                | zero(x ^ (LOW * u64::from(b'\\')))
                | zero(x & (LOW * 0xE0));
            ((hits >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
        };
        word(lo) | word(hi) << 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::RawDocument;

    /// The fast path's answer, when it gives one, is the serde path's.
    fn check(json: &str) {
        let fast = scan_messages(json);
        let slow = RawDocument::parse(json).and_then(|d| {
            let views = d.views()?;
            Ok((d.is_body(), d.messages, views))
        });
        if let Some((texts, views)) = fast {
            let Ok((is_body, raws, slow_views)) = slow else {
                panic!("the fast path accepted what serde rejects: {json}");
            };
            assert!(!is_body);
            let raws: Vec<&str> = raws.iter().map(|r| r.get()).collect();
            assert_eq!(texts, raws, "{json}");
            // What only the scanner records: the content's and each block's exact text (the
            // slices serde's raw reading finds) and the parsed role.
            let mut views = views;
            for (view, text) in views.iter_mut().zip(&texts) {
                let members = scan_members(text).unwrap();
                let content = members.iter().find(|(k, _)| *k == "content").map(|m| m.1);
                assert_eq!(view.content_text, content, "{json}");
                if let Some(c) = content {
                    let known = scan_members_known(text, c).unwrap();
                    assert_eq!(known, members, "{json}");
                }
                assert_eq!(view.known_role, crate::message::Role::parse(&view.role));
                view.content_text = None;
                view.known_role = None;
                if let ContentView::Blocks(blocks) = &mut view.content {
                    let elements = scan_elements(content.unwrap()).unwrap();
                    assert_eq!(elements.len(), blocks.len(), "{json}");
                    for (block, element) in blocks.iter_mut().zip(elements) {
                        assert_eq!(block.text_json, Some(element), "{json}");
                        block.text_json = None;
                    }
                }
            }
            assert_eq!(format!("{views:?}"), format!("{slow_views:?}"), "{json}");
        }
    }

    #[test]
    fn number_literals_skip_strings_and_count_keys() {
        let text = r#"{"k\"1": "2, -3.5e2 \" 4", "n" : [-1.5e-3, 0, 12]}"#;
        assert_eq!(number_literals(text), Some((vec!["-1.5e-3", "0", "12"], 2)));
        // Not JSON as serde reads it: nothing.
        assert_eq!(number_literals("[01]"), None);
        assert_eq!(number_literals(r#"["a\u00"]"#), None);
    }

    #[test]
    fn agrees_with_serde() {
        for json in [
            "[]",
            " [ ] ",
            r#"[{"role":"user","content":"hi"}]"#,
            r#"[ {"role" : "user" , "content" : "" } , {"role":"assistant","content":null} ]"#,
            r#"[{"role":"assistant","content":[{"type":"text","text":"a\nb\"c"},{"type":"tool_use","id":"t1","name":"read","input":{"p":[1,-2.5e+3,true,false,null,{"x":"\u00e9"}]},"cache_control":{"type":"ephemeral"}}]}]"#,
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}],"cache_control":null}]}]"#,
            r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"out"}]"#,
            r#"[{"role":"assistant","tool_calls":null,"tool_call_id":null,"extra":[[[]],{}]}]"#,
            r#"[{"role":"user","content":[{"type":"image","source":{"data":"AAAA"}},{"type":"text","text":null}]}]"#,
            // Each of these is rejected by serde or left to it.
            r#"[{"role":"user","content":5}]"#,
            r#"[{"role":"user","role":"user"}]"#,
            r#"[{"role":"us\u0065r"}]"#,
            r#"[{"r\u006fle":"user"}]"#,
            r#"[{"role":"user","content":"\ud800"}]"#,
            r#"[{"role":"user","x":01}]"#,
            r#"[{"role":"user","x":1.}]"#,
            r#"[{"role":"user","x":-}]"#,
            r#"[{"role":"user","x":"a	b"}]"#,
            r#"[{"role":"user","x":"\x"}]"#,
            r#"[{"role":"user","x":[1,]}]"#,
            r#"[{"role":"user",}]"#,
            r#"[{"role":"user"},]"#,
            r#"[{"role":"user"}] x"#,
            r#"[{"role":"user"}"#,
            r#"[{"role":"user","x":tru}]"#,
            r#"[{"role":"user","content":[1]}]"#,
            r#"[{"content":"x"}]"#,
            r#"{"messages":[]}"#,
            "[[]]",
        ] {
            check(json);
        }
    }

    #[test]
    fn long_strings_with_a_special_anywhere() {
        // The 64-byte steps over plain text (`plain64`) and the 16-byte masks must find every
        // escape and the closing quote wherever they fall.
        for len in [0usize, 15, 16, 17, 63, 64, 65, 80, 127, 128, 129, 200] {
            for at in (0..len).step_by(7).chain([len.saturating_sub(1)]) {
                for special in ["\\\"", "\\n", "\\u00e9", "\\\\", "é"] {
                    let mut text = "a".repeat(len);
                    text.insert_str(at.min(len), special);
                    let json = format!(r#"[{{"role":"user","content":"{text}"}}]"#);
                    check(&json);
                    // (A `\u` escape in content is left to serde.)
                    assert_eq!(scan_messages(&json).is_some(), !special.contains("\\u"));
                }
                let raw = format!(
                    "[{{\"role\":\"user\",\"content\":\"{}\u{1}\"}}]",
                    "a".repeat(at)
                );
                assert!(
                    scan_messages(&raw).is_none(),
                    "a raw control character at {at}"
                );
            }
        }
    }

    #[test]
    fn reads_the_fixtures() {
        let text = include_str!("../../tests/fixtures/watermark_sessions_dev.jsonl");
        let mut read = 0;
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            for messages in value.as_object().unwrap().values() {
                if messages.is_array() {
                    let json = messages.to_string();
                    check(&json);
                    read += usize::from(scan_messages(&json).is_some());
                }
            }
        }
        assert!(read > 0);
    }

    #[test]
    fn members_and_elements_agree_with_serde() {
        use crate::message::{RawObject, Slot};
        for json in [
            r#"{"a": 1.50, "content" : [ {"x":1}, {"y" :2} ], "b":"\n", "a":null }"#,
            r#" { } "#,
            r#"{"k":[1,[2,[3]],{"z":{}}],"t":true,"f":false}"#,
            r#"[ 1 , "x" , {"a":[]} , [] ]"#,
            "[]",
        ] {
            if let Some(members) = scan_members(json) {
                let raw: Box<serde_json::value::RawValue> = serde_json::from_str(json).unwrap();
                let slow = RawObject::parse(&raw, "m").unwrap();
                let slow: Vec<(String, String)> = slow
                    .members()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect();
                let fast: Vec<(String, String)> = members
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                assert_eq!(fast, slow);
            }
            if let Some(elements) = scan_elements(json) {
                let raw: Box<serde_json::value::RawValue> = serde_json::from_str(json).unwrap();
                let slow: Vec<String> = Slot::elements(&raw)
                    .unwrap()
                    .iter()
                    .map(Slot::to_json)
                    .collect();
                assert_eq!(elements, slow);
            }
        }
        assert!(scan_members(r#"{"a":1} x"#).is_none());
        assert!(scan_members(r#"{"\u0061":1}"#).is_none());
        assert!(scan_elements("[1,]").is_none());
        assert!(scan_members(r#"{"a":1}"#).is_some());
        assert!(scan_elements(r#"[{"a":1}, 2]"#).is_some());
    }

    #[test]
    fn finds_string_ends() {
        let text = br#"abcdefghijklmnop"qrs\tu"#;
        assert_eq!(specials(text, 0), 0);
        assert_eq!(specials(text, 1), 1 << 15);
        assert_eq!(specials(text, 16), 0b1_0001);
        assert_eq!(specials(b"abc\x1fdefghijklmnopq", 0), 1 << 3);
        assert_eq!(specials(b"\xc3\xa9\xe2\x80\xa6abcdefghijk\"", 0), 0);
        assert_eq!(specials(b"\xc3\xa9\xe2\x80\xa6abcdefghijk\"", 1), 1 << 15);
        for text in [
            r#""""#,
            r#""abc""#,
            r#""a\"b\\c\n\u00e9 and a long tail of text past sixteen bytes \" x""#,
            r#""\\\\\\\\\\\\\\\\\\\\""#,
            r#""0123456789abcde\"0123456789abcdef\u0041""#,
        ] {
            let mut s = Scanner::new(text);
            let found = s.string().unwrap();
            assert_eq!(s.i, text.len(), "{text}");
            assert_eq!(found.inner, &text[1..text.len() - 1]);
        }
        for text in [r#""abc"#, r#""a\"#, r#""\u00e""#, r#""\x""#, "\"a\tb\""] {
            assert!(Scanner::new(text).string().is_none(), "{text}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn agrees_with_serde_on_any_text(body in r#"(\{"(role|content|type|text|id|name|tool_use_id|tool_calls|tool_call_id|function|cache_control|x)":|"user"|"assistant"|"tool"|"text"|"tool_use"|"a\\nb"|"\\u00e9"|"\\ud800"|null|true|-?[0-9]{1,3}(\.[0-9])?|\[|\]|\{|\}|,|:| )*"#) {
            check(&format!("[{body}]"));
            check(&body);
        }
    }
}
