//! Tool output printed as a Python literal (`['NVDA', 'ZETA']`, `{'id': 3, 'ok': True}`): what
//! Python tools return through `repr`/`str`. Read as the JSON value it denotes, it gets JSON's
//! compact rendering (every value kept, only syntax dropped) instead of being treated as prose.
//!
//! Accepted: a list, tuple or dict at the top, nested lists, tuples and dicts, strings in single
//! or double quotes with Python's escapes, integers that fit 64 bits, floats whose JSON form is
//! the text Python wrote (`2.5`, not `1e-05`: the rendering must show what the tool printed),
//! `True`, `False`, `None`, and `Ellipsis`, `inf`, `nan` (read as the strings they print, so
//! the rendering shows them as the tool did); dict keys that are strings, integers or floats.
//! Anything else (calls such as `mpf('1.3')`, sets, bytes, huge integers) is not a literal:
//! `None` comes back and the text stays text.

use serde_json::{Map, Number, Value};

/// The deepest nesting read (deeper text is not a literal).
const MAX_DEPTH: usize = 64;

/// The JSON value of a Python literal list, tuple or dict, or `None` (see the module docs).
///
/// ```ignore
/// assert_eq!(parse("['a', 1, None]"), Some(serde_json::json!(["a", 1, null])));
/// ```
pub(super) fn parse(text: &str) -> Option<Value> {
    let t = text.trim();
    if !matches!(t.as_bytes().first(), Some(b'[' | b'(' | b'{')) {
        return None;
    }
    let mut p = Parser {
        s: t.as_bytes(),
        text: t,
        at: 0,
    };
    let v = p.value(0)?;
    p.space();
    (p.at == p.s.len()).then_some(v)
}

struct Parser<'t> {
    s: &'t [u8],
    text: &'t str,
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.space();
        if self.s.get(self.at) == Some(&b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        match *self.s.get(self.at)? {
            b'[' => self.seq(b']', depth),
            b'(' => self.seq(b')', depth),
            b'{' => self.dict(depth),
            b'\'' | b'"' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.word(),
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Some(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            if !self.eat(b',') {
                return self.eat(close).then_some(Value::Array(items));
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut map = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            if !self.eat(b':') {
                return None;
            }
            let v = self.value(depth + 1)?;
            map.insert(key, v);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Value::Object(map));
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.s[self.at];
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = self.text.get(self.at..)?;
            let mut chars = rest.chars();
            let c = chars.next()?;
            self.at += c.len_utf8();
            if c == quote as char {
                return Some(out);
            }
            if c == '\n' {
                return None;
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = self.text.get(self.at..)?.chars().next()?;
            self.at += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' => out.push(e),
                'x' => out.push(self.hex(2)?),
                'u' => out.push(self.hex(4)?),
                'U' => out.push(self.hex(8)?),
                _ => {
                    out.push('\\');
                    out.push(e);
                }
            }
        }
    }

    fn hex(&mut self, digits: usize) -> Option<char> {
        let h = self.text.get(self.at..self.at + digits)?;
        self.at += digits;
        char::from_u32(u32::from_str_radix(h, 16).ok()?)
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        if self.s[self.at] == b'-' {
            self.at += 1;
        }
        while self
            .s
            .get(self.at)
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            self.at += 1;
        }
        let t = &self.text[start..self.at];
        let n: Number = if t.contains(['.', 'e', 'E']) {
            Number::from_f64(t.parse::<f64>().ok()?)?
        } else if let Ok(i) = t.parse::<i64>() {
            i.into()
        } else {
            t.parse::<u64>().ok()?.into()
        };
        // Only where the rendering shows the number as the tool wrote it.
        (n.to_string() == t).then_some(Value::Number(n))
    }

    fn word(&mut self) -> Option<Value> {
        let rest = &self.s[self.at..];
        for (w, v) in [
            (&b"True"[..], Value::Bool(true)),
            (b"False", Value::Bool(false)),
            (b"None", Value::Null),
            (b"Ellipsis", Value::String("Ellipsis".into())),
            (b"inf", Value::String("inf".into())),
            (b"nan", Value::String("nan".into())),
        ] {
            if rest.starts_with(w)
                && !rest
                    .get(w.len())
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                self.at += w.len();
                return Some(v);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_read_as_json() {
        assert_eq!(
            parse("['NVDA', 'ZETA', \"W\"]"),
            Some(json!(["NVDA", "ZETA", "W"]))
        );
        assert_eq!(
            parse("{'id': 3, 'ok': True, 'none': None, 'p': 2.5, 'n': -4, 't': (1, 2)}"),
            Some(json!({"id": 3, "ok": true, "none": null, "p": 2.5, "n": -4, "t": [1, 2]}))
        );
        assert_eq!(parse("[]"), Some(json!([])));
        assert_eq!(parse("{1: 'a'}"), Some(json!({"1": "a"})));
        assert_eq!(parse("['it\\'s', 'a\\nb']"), Some(json!(["it's", "a\nb"])));
        assert_eq!(
            parse("['A', 'B', Ellipsis]"),
            Some(json!(["A", "B", "Ellipsis"]))
        );
    }

    #[test]
    fn other_text_is_not() {
        for t in [
            "None",
            "{'result': mpf('1.3027')}",
            "[1, 2",
            "{1, 2}",
            "[1e-05]",
            "hello",
            "[b'x']",
            "[1] trailing",
            "[99999999999999999999999]",
        ] {
            assert_eq!(parse(t), None, "{t}");
        }
    }
}
