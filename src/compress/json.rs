//! JSON tool output: the lossless, syntax-light rendering of the default level
//! ([`json_compact`]) and the lossy field summary of the budget loop ([`Fields`]).

use std::borrow::Cow;

use serde_json::{Number, Value};

use super::summarize::{cut_at_word, prose, Level, PreparedTexts, Query};
use crate::text::hash::FastMap;
use crate::text::keys;

/// The lossy field summary of JSON tool output: its fields as `path=value` (long strings cut),
/// arrays of scalars kept when short and summarised by count, range and first items when long,
/// as many as the level's budget holds, identifier-like values first (under a query, fields
/// that mention a query term before all). The fields do not depend on the level: a budget
/// flattens each output once ([`Fields::new`]) and selects at every level it tries
/// ([`Fields::select`]).
pub(crate) struct Fields {
    /// `(path, value)` in document order.
    entries: Vec<(String, String)>,
    /// Entry positions, most needed first.
    order: Vec<usize>,
    /// Each entry's characters as listed (`path=value; `).
    lens: Vec<usize>,
}

impl Fields {
    /// `value`'s fields; `seen` gives its numbers as the tool wrote them.
    pub(crate) fn new(value: &Value, terms: &Query, seen: &SeenValues<'_>) -> Fields {
        let mut flat: Vec<(String, String, u8)> = Vec::new(); // (path, value, priority 0 = keep first)
        flatten(value, "", seen, &mut flat);
        // Query-aware: fields whose path or value mentions a query term come first of all.
        if !terms.is_empty() {
            for (path, value, priority) in flat.iter_mut() {
                let mentions = |text: &str| {
                    text.split(|c: char| !c.is_alphanumeric())
                        .any(|w| w.len() >= 3 && terms.contains(&w.to_lowercase()))
                };
                if mentions(path) || mentions(value) {
                    *priority = 0;
                }
            }
        }
        let mut order: Vec<usize> = (0..flat.len()).collect();
        order.sort_by_key(|&i| (flat[i].2, i));
        let lens = flat
            .iter()
            .map(|(p, v, _)| p.chars().count() + v.chars().count() + 3)
            .collect();
        let entries = flat.into_iter().map(|(p, v, _)| (p, v)).collect();
        Fields {
            entries,
            order,
            lens,
        }
    }

    /// The fields that fit the level's budget for a value of `original_chars`, most needed
    /// first, listed in document order, with a count of the fields left out.
    pub(crate) fn select(&self, level: Level, original_chars: usize) -> String {
        let budget = level.budget(original_chars).max(level.min_chars);
        let mut keep: Vec<usize> = Vec::new();
        let mut used = 0;
        for &i in &self.order {
            let len = self.lens[i];
            if used + len > budget && !keep.is_empty() {
                continue;
            }
            used += len;
            keep.push(i);
        }
        let dropped = self.entries.len() - keep.len();
        keep.sort_unstable();
        let mut out = String::new();
        for (n, &i) in keep.iter().enumerate() {
            if n > 0 {
                out.push_str("; ");
            }
            let (path, value) = &self.entries[i];
            if !path.is_empty() {
                out.push_str(path);
                out.push('=');
            }
            out.push_str(value);
        }
        if dropped > 0 {
            out.push_str(&format!(" (+{dropped} more fields)"));
        }
        out
    }
}

/// JSON tool output rendered without its syntax weight: keys and simple strings unquoted,
/// uniform objects as tables (`[3 rows: id | price; 1 | 2.5; …]`), a large value repeated in a
/// newer output as a reference to it. With `preserve_numbers` every number is kept (else arrays
/// of 24+ numbers are summarised by count, range, first and last values); with `keep_strings`
/// every string is kept whole (else free text longer than 200 characters is summarised as
/// prose, its key tokens kept). With both, the rendering drops only syntax.
pub(crate) fn json_compact(
    value: &Value,
    level: Level,
    seen: &SeenValues<'_>,
    msg: usize,
    preserve_numbers: bool,
    keep_strings: bool,
) -> String {
    rendered(
        value,
        &Ctx {
            keep_strings,
            ..Ctx::new(level, seen, msg, preserve_numbers)
        },
    )
}

/// `value` rendered under `ctx`.
fn rendered<'v>(value: &'v Value, ctx: &Ctx<'_, 'v>) -> String {
    let mut out = String::with_capacity(64);
    render(value, ctx, &mut out);
    out
}

/// [`json_compact`] (long strings summarised) with the long strings' sentences scored once
/// for every level they are summarised at (`strings`, kept across the budget's plans).
pub(crate) fn json_compact_with<'v>(
    value: &'v Value,
    level: Level,
    seen: &SeenValues<'_>,
    msg: usize,
    preserve_numbers: bool,
    strings: &LongStrings<'v>,
) -> String {
    rendered(
        value,
        &Ctx {
            strings: Some(strings),
            ..Ctx::new(level, seen, msg, preserve_numbers)
        },
    )
}

/// The long strings of JSON values, each split and scored once
/// ([`Prepared`](super::summarize::Prepared)) and summarised at any level from that: what
/// `prose` does for each, without doing it again per level.
#[derive(Default)]
pub(crate) struct LongStrings<'v> {
    prepared: PreparedTexts<'v>,
    /// No query: long strings are summarised as [`json_compact`] does.
    terms: Query,
}

impl<'v> LongStrings<'v> {
    /// `prose(s, level, &Query::default())`.
    fn prose(&self, s: &'v str, level: Level) -> String {
        self.prepared.prose(s, level, &self.terms)
    }
}

/// The fewest characters [`json_compact`] (long strings summarised) of `value` can have at any
/// level: each long string's summary counted as its shortest, `" …"`.
pub(crate) fn json_compact_floor(
    value: &Value,
    seen: &SeenValues<'_>,
    msg: usize,
    preserve_numbers: bool,
) -> usize {
    let out = rendered(
        value,
        &Ctx {
            floor: true,
            ..Ctx::new(Level::DEFAULT, seen, msg, preserve_numbers)
        },
    );
    crate::text::count_chars(&out)
}

/// Whether [`json_compact`] of `value` is the same at every level: no string in it is long
/// enough to be summarised (only long strings read the level).
pub(crate) fn level_free(value: &Value) -> bool {
    match value {
        Value::String(s) => s.len() <= LONG_STRING || s.chars().count() <= LONG_STRING,
        Value::Array(items) => items.iter().all(level_free),
        Value::Object(map) => map.values().all(level_free),
        _ => true,
    }
}

/// Strings of more characters than this are summarised by [`json_compact`] (unless kept).
const LONG_STRING: usize = 200;

/// Large values (arrays of 8+ items, strings of 200+ characters) of the conversation's JSON
/// tool outputs, by hash, with the newest message holding each: an older copy is rendered as a
/// reference to it.
///
/// Each value's hash is computed bottom-up once, when it is added (a hash of the node's kind and
/// its children's hashes: equal JSON values get equal hashes), and remembered by the node's
/// address, so rendering a large output looks its nodes up instead of serialising each subtree
/// again (which made rendering quadratic in the depth of large nested arrays).
///
/// It also keeps each number of the outputs as the tool wrote it ([`SeenValues::add_written`]):
/// serde_json keeps a number's value, not its text, and writes `1.50` back as `1.5`, `1e3` as
/// `1000.0` and `123456789012345678901` (over `u64`) as `1.2345678901234567e+20`; a rendering
/// that drops only syntax shows the tool's own digits ([`SeenValues::number`]).
#[derive(Default)]
pub(crate) struct SeenValues<'t> {
    newest: FastMap<u64, (usize, String)>,
    /// The hash of every large node added, by its address (the values outlive the renderings).
    by_node: FastMap<usize, u64>,
    /// Each number's text as written, by the address of its `Number`.
    written: FastMap<usize, &'t str>,
}

impl<'t> SeenValues<'t> {
    /// Records the large values of a JSON tool output of message `msg` named `name`.
    pub fn add(&mut self, value: &Value, msg: usize, name: &str) {
        self.walk(value, msg, name);
    }

    /// Records how `text`, the JSON text `value` was parsed from, writes each number of it.
    /// The numbers are paired in document order with the number literals of the text. A key
    /// written twice (the parse keeps one of its values, at the first one's place) shifts the
    /// pairs: when the text has more keys than the value has members, a pair is kept only where
    /// the literal parses to the same number, so a number never shows another's value.
    pub fn add_written(&mut self, text: &'t str, value: &Value) {
        let Some((literals, keys)) = crate::message::number_literals(text) else {
            return;
        };
        let mut numbers = Vec::with_capacity(literals.len());
        let members = numbers_in_order(value, &mut numbers);
        if literals.len() != numbers.len() {
            return;
        }
        // As many members as keys written: no key was written twice, so the pairs are exact.
        let exact = members == keys;
        self.written.reserve(numbers.len());
        for (literal, n) in literals.into_iter().zip(numbers) {
            if exact || literal.parse::<Number>().is_ok_and(|p| p == *n) {
                self.written.insert(n as *const Number as usize, literal);
            }
        }
    }

    /// `n` as its output wrote it, where recorded ([`add_written`](Self::add_written)); else
    /// as serde_json writes it.
    pub fn number<'s>(&'s self, n: &Number) -> Cow<'s, str> {
        match self.written.get(&(n as *const Number as usize)) {
            Some(&text) => Cow::Borrowed(text),
            None => Cow::Owned(n.to_string()),
        }
    }

    /// The hash of `value`, recording its large nodes on the way.
    fn walk(&mut self, value: &Value, msg: usize, name: &str) -> u64 {
        let h = match value {
            Value::Object(map) => {
                let mut h = mix(0x6f62_6a65_6374, map.len() as u64);
                for (k, v) in map {
                    h = mix(h, text_hash(k));
                    let c = self.walk(v, msg, name);
                    h = mix(h, c);
                }
                h
            }
            Value::Array(items) => {
                let mut h = mix(0x0061_7272_6179, items.len() as u64);
                for v in items {
                    let c = self.walk(v, msg, name);
                    h = mix(h, c);
                }
                h
            }
            other => leaf_hash(other),
        };
        if large(value) {
            self.by_node.insert(value as *const Value as usize, h);
            let slot = self.newest.entry(h).or_insert((msg, name.to_string()));
            if slot.0 < msg {
                *slot = (msg, name.to_string());
            }
        }
        h
    }

    fn newer_copy(&self, value: &Value, msg: usize) -> Option<&str> {
        if !large(value) || self.newest.is_empty() {
            return None;
        }
        let h = match self.by_node.get(&(value as *const Value as usize)) {
            Some(&h) => h,
            None => SeenValues::default().walk(value, 0, ""),
        };
        self.newest
            .get(&h)
            .filter(|(m, _)| *m > msg)
            .map(|(_, name)| name.as_str())
    }
}

/// The numbers of `value` in document order (objects in their kept key order), and how many
/// object members it has.
fn numbers_in_order<'v>(value: &'v Value, out: &mut Vec<&'v Number>) -> usize {
    match value {
        Value::Number(n) => {
            out.push(n);
            0
        }
        Value::Array(items) => items.iter().map(|v| numbers_in_order(v, out)).sum(),
        Value::Object(map) => {
            map.len()
                + map
                    .values()
                    .map(|v| numbers_in_order(v, out))
                    .sum::<usize>()
        }
        _ => 0,
    }
}

/// Whether a node is large enough to be referenced.
fn large(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.len() >= 8,
        Value::String(s) => s.len() >= 200,
        _ => false,
    }
}

/// Mixes `x` into `h` (a 64-bit multiply-xorshift step: fast, order-sensitive).
fn mix(h: u64, x: u64) -> u64 {
    let m = (h ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    m ^ (m >> 29)
}

fn text_hash(s: &str) -> u64 {
    crate::text::hash::fnv1a(s.as_bytes())
}

/// A scalar's hash: its JSON text's (so `1.0` and `1` differ as their texts do).
fn leaf_hash(v: &Value) -> u64 {
    match v {
        Value::String(s) => mix(1, text_hash(s)),
        Value::Number(n) => mix(2, text_hash(&n.to_string())),
        Value::Bool(b) => mix(3, u64::from(*b)),
        _ => mix(4, 0),
    }
}

struct Ctx<'a, 'v> {
    level: Level,
    seen: &'a SeenValues<'a>,
    msg: usize,
    /// Keep every number of long numeric arrays (`preserveNumbers`).
    preserve_numbers: bool,
    /// Keep long strings whole.
    keep_strings: bool,
    /// Render each long string as its shortest summary could be ([`json_compact_floor`]).
    floor: bool,
    /// Long strings scored once for every level ([`json_compact_with`]).
    strings: Option<&'a LongStrings<'v>>,
}

impl<'a, 'v> Ctx<'a, 'v> {
    /// The plain rendering's context: long strings summarised one by one, no floor.
    fn new(level: Level, seen: &'a SeenValues<'a>, msg: usize, preserve_numbers: bool) -> Self {
        Ctx {
            level,
            seen,
            msg,
            preserve_numbers,
            keep_strings: false,
            floor: false,
            strings: None,
        }
    }
}

/// Arrays of this many numbers or more are summarised unless numbers are preserved.
const LONG_NUMERIC: usize = 24;

/// `[240 numbers, 200.59–248.49: 234.34, 212.46, …, 209.43, 246.91]`.
fn numeric_summary(items: &[Value], seen: &SeenValues<'_>) -> Option<String> {
    if items.len() < LONG_NUMERIC || !items.iter().all(Value::is_number) {
        return None;
    }
    // The extremes as the input wrote them (`10000.0`, not `10000`): a later call that reuses
    // the largest or smallest value finds it verbatim.
    let by_value = |a: &&Value, b: &&Value| {
        let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
        x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
    };
    let text = |v: &Value| match v {
        Value::Number(n) => seen.number(n).into_owned(),
        other => other.to_string(),
    };
    let lo = items.iter().min_by(by_value).map(text)?;
    let hi = items.iter().max_by(by_value).map(text)?;
    let show = |vs: &[Value]| vs.iter().map(text).collect::<Vec<_>>().join(", ");
    let n = items.len();
    Some(format!(
        "[{n} numbers, {lo}–{hi}: {}, …, {}]",
        show(&items[..6]),
        show(&items[n - 2..])
    ))
}

/// A scalar rendered without a space in it: a number, `true`/`false`/`null`, a simple string
/// with no white space.
fn spaceless_scalar(v: &Value) -> bool {
    match v {
        Value::Number(_) | Value::Bool(_) | Value::Null => true,
        Value::String(s) => simple(s) && !s.contains(char::is_whitespace),
        _ => false,
    }
}

fn simple(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 80
        && s.trim() == s
        && !s.contains(['\n', ',', ';', ':', '{', '}', '[', ']', '|', '"'])
        && !matches!(s, "true" | "false" | "null")
        && s.parse::<f64>().is_err()
}

fn render_str<'v>(s: &'v str, ctx: &Ctx<'_, 'v>, out: &mut String) {
    if simple(s) {
        out.push_str(s);
    } else if !ctx.keep_strings && s.chars().count() > LONG_STRING {
        if ctx.floor {
            out.push_str("\" …\"");
            return;
        }
        let level = Level {
            max_keys: 64,
            ..ctx.level
        };
        let summary = match ctx.strings {
            Some(strings) => strings.prose(s, level),
            None => prose(s, level, &Query::default()),
        };
        out.push_str(&Value::String(format!("{summary} …")).to_string());
    } else {
        out.push_str(&Value::String(s.to_string()).to_string());
    }
}

fn render_key(k: &str, out: &mut String) {
    if simple(k) {
        out.push_str(k);
    } else {
        out.push_str(&Value::String(k.to_string()).to_string());
    }
}

/// The shared key list of objects that all have the same keys (at least 2 objects, 2 keys).
fn uniform_keys<'v>(items: impl Iterator<Item = &'v Value>) -> Option<Vec<&'v String>> {
    let mut keys: Option<Vec<&String>> = None;
    let mut count = 0;
    for item in items {
        let obj = item.as_object()?;
        let these: Vec<&String> = obj.keys().collect();
        match &keys {
            None => keys = Some(these),
            Some(k) if *k == these => {}
            Some(_) => return None,
        }
        count += 1;
    }
    keys.filter(|k| count >= 2 && k.len() >= 2)
}

fn render_row<'v>(obj: &'v Value, keys: &[&String], ctx: &Ctx<'_, 'v>, out: &mut String) {
    for (n, k) in keys.iter().enumerate() {
        if n > 0 {
            out.push_str(" | ");
        }
        if let Some(v) = obj.get(k.as_str()) {
            render(v, ctx, out);
        }
    }
}

fn render<'v>(v: &'v Value, ctx: &Ctx<'_, 'v>, out: &mut String) {
    if let Some(name) = ctx.seen.newer_copy(v, ctx.msg) {
        let what = match v {
            Value::Array(items) => format!("{} items", items.len()),
            _ => format!("{} chars", v.as_str().map_or(0, |s| s.chars().count())),
        };
        out.push_str(&format!("(same {what} as in {name})"));
        return;
    }
    match v {
        Value::Object(map) => {
            if let Some(keys) = uniform_keys(map.values()) {
                out.push_str(&format!("[{} rows: key", map.len()));
                for k in &keys {
                    out.push_str(" | ");
                    render_key(k, out);
                }
                for (name, row) in map {
                    out.push_str("; ");
                    render_key(name, out);
                    out.push_str(" | ");
                    render_row(row, &keys, ctx, out);
                }
                out.push(']');
                return;
            }
            out.push('{');
            for (n, (k, child)) in map.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                render_key(k, out);
                out.push_str(": ");
                render(child, ctx, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            if !ctx.preserve_numbers {
                if let Some(summary) = numeric_summary(items, ctx.seen) {
                    out.push_str(&summary);
                    return;
                }
            }
            if let Some(keys) = uniform_keys(items.iter()) {
                out.push_str(&format!("[{} rows: ", items.len()));
                for (n, k) in keys.iter().enumerate() {
                    if n > 0 {
                        out.push_str(" | ");
                    }
                    render_key(k, out);
                }
                for row in items {
                    out.push_str("; ");
                    render_row(row, &keys, ctx, out);
                }
                out.push(']');
                return;
            }
            // Scalars whose rendering has no space (numbers, identifiers, codes) need no comma
            // between them: `[234.34 212.46 NVDA]` is a quarter to a third fewer tokens than
            // with `, ` and reads the same.
            let sep = if items.len() > 1 && items.iter().all(spaceless_scalar) {
                " "
            } else {
                ", "
            };
            out.push('[');
            for (n, child) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(sep);
                }
                render(child, ctx, out);
            }
            out.push(']');
        }
        Value::String(s) => render_str(s, ctx, out),
        Value::Number(n) => out.push_str(&ctx.seen.number(n)),
        other => out.push_str(&other.to_string()),
    }
}

fn scalar(v: &Value, seen: &SeenValues<'_>) -> Option<String> {
    match v {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(seen.number(n).into_owned()),
        Value::String(s) => Some(cut_at_word(s, 80)),
        _ => None,
    }
}

fn priority(path: &str, value: &str) -> u8 {
    let key = path.rsplit(['.', '[']).next().unwrap_or("");
    let idish = key.ends_with("id")
        || key.ends_with("_id")
        || key.contains("name")
        || key.contains("status");
    if idish || keys::classify(value).is_some() {
        0
    } else if value.chars().count() <= 24 {
        1
    } else {
        2
    }
}

fn flatten(v: &Value, path: &str, seen: &SeenValues<'_>, out: &mut Vec<(String, String, u8)>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                flatten(child, &join(k), seen, out);
            }
        }
        Value::Array(items) => {
            let scalars: Vec<String> = items.iter().filter_map(|v| scalar(v, seen)).collect();
            if scalars.len() == items.len() {
                let short_ids = items
                    .iter()
                    .all(|v| v.as_str().is_some_and(|s| s.chars().count() <= 16));
                let text = if items.len() <= 8 || (short_ids && items.len() <= 64) {
                    format!("[{}]", scalars.join(", "))
                } else {
                    let nums: Vec<f64> = items.iter().filter_map(Value::as_f64).collect();
                    let range = if nums.len() == items.len() {
                        let lo = nums.iter().cloned().fold(f64::INFINITY, f64::min);
                        let hi = nums.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        format!(", range {lo}–{hi}")
                    } else {
                        String::new()
                    };
                    format!(
                        "[{} items{range}: {}, …]",
                        items.len(),
                        scalars[..3].join(", ")
                    )
                };
                out.push((path.to_string(), text, 1));
            } else {
                for (i, child) in items.iter().enumerate() {
                    flatten(child, &format!("{path}[{i}]"), seen, out);
                }
            }
        }
        other => {
            if let Some(s) = scalar(other, seen) {
                let p = priority(path, &s);
                out.push((path.to_string(), s, p));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::summarize::query_terms;

    fn json(value: &Value, level: Level, original_chars: usize, terms: &Query) -> String {
        Fields::new(value, terms, &SeenValues::default()).select(level, original_chars)
    }

    #[test]
    fn json_keeps_ids() {
        let v: Value = serde_json::from_str(r#"{"booking_id": "3426812", "transaction_id": "45451592", "booking_status": true,
            "travel_cost_list": [2000.0, 5000.0, 4000.0, 4500.0, 3000.0, 3500.0, 3700.0, 3200.0, 3300.0, 3400.0],
            "notes": "a very long free text field that goes on and on about nothing in particular for a while longer than eighty characters"}"#).unwrap();
        let s = json(&v, Level::DEFAULT, 2000, &Query::default());
        assert!(
            s.contains("booking_id=3426812") && s.contains("45451592"),
            "{s}"
        );
        assert!(s.contains("10 items, range 2000–5000"), "{s}");
    }

    #[test]
    fn json_summary_is_query_aware() {
        let v: Value = serde_json::from_str(r#"{"a_long_field_one": "some value that is not short at all here", "a_long_field_two": "another value that is rather long too", "invoice_total": "1430 dollars in all, tax included"}"#).unwrap();
        let tight = Level {
            ratio: 0.1,
            min_chars: 40,
            max_chars: 40,
            max_keys: 0,
            fill: false,
        };
        let plain = json(&v, tight, 400, &Query::default());
        let asked = json(
            &v,
            tight,
            400,
            &query_terms(Some("what is the invoice total?")),
        );
        assert!(!plain.contains("invoice_total"), "{plain}");
        assert!(asked.starts_with("invoice_total=1430 dollars"), "{asked}");
    }

    #[test]
    fn compact_json_keeps_values_and_tabulates() {
        let v: Value = serde_json::from_str(r#"{"orders": [{"id": 1, "symbol": "NVDA"}, {"id": 2, "symbol": "AAPL"}],
            "history": {"b1": {"card": "c_1", "cost": 400.0}, "b2": {"card": "c_2", "cost": 900.0}},
            "series": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25], "note": "a, b"}"#).unwrap();
        let seen = SeenValues::default();
        let s = json_compact(&v, Level::DEFAULT, &seen, 0, false, false);
        assert_eq!(
            s,
            "{orders: [2 rows: id | symbol; 1 | NVDA; 2 | AAPL], history: [2 rows: key | card | cost; b1 | c_1 | 400.0; b2 | c_2 | 900.0], series: [25 numbers, 1–25: 1, 2, 3, 4, 5, 6, …, 24, 25], note: \"a, b\"}"
        );
        let kept = json_compact(&v, Level::DEFAULT, &seen, 0, true, false);
        assert!(kept.contains("[1 2 3 4"), "{kept}");
        assert!(kept.contains("23 24 25]"), "{kept}");

        // A large value repeated in a newer output becomes a reference.
        let mut seen = SeenValues::default();
        seen.add(&v, 7, "msg_7");
        let s = json_compact(&v, Level::DEFAULT, &seen, 2, true, false);
        assert!(s.contains("series: (same 25 items as in msg_7)"), "{s}");
    }

    /// The tool output of the numbers-as-written tests: values serde_json would write otherwise.
    const WRITTEN: &str = r#"{"account_id": 123456789012345678901, "price": 1.50, "qty": 1e3,
        "ratio": 0.10000000000000000555, "big": 18446744073709551616, "neg": -0.0,
        "rows": [{"sku": "a-1", "cost": 20.00}, {"sku": "b-2", "cost": 3.125}],
        "series": [1.10, 2.20, 3.30, 4.40, 5.50, 6.60, 7.70, 8.80, 9.90, 10.00, 11.10, 12.20,
                   13.30, 14.40, 15.50, 16.60, 17.70, 18.80, 19.90, 20.00, 21.10, 22.20, 23.30, 24.40]}"#;

    #[test]
    fn numbers_are_rendered_as_the_tool_wrote_them() {
        let v: Value = serde_json::from_str(WRITTEN).unwrap();
        let mut seen = SeenValues::default();
        seen.add_written(WRITTEN, &v);
        let kept = json_compact(&v, Level::DEFAULT, &seen, 0, true, true);
        for written in [
            "account_id: 123456789012345678901",
            "price: 1.50",
            "qty: 1e3",
            "ratio: 0.10000000000000000555",
            "big: 18446744073709551616",
            "neg: -0.0",
            "a-1 | 20.00",
            "[1.10 2.20 3.30",
            "23.30 24.40]",
        ] {
            assert!(kept.contains(written), "{written} in {kept}");
        }
        // The lossy renderings too: the series summary's extremes and items, the field list.
        let summary = json_compact(&v, Level::DEFAULT, &seen, 0, false, false);
        assert!(
            summary.contains("[24 numbers, 1.10–24.40: 1.10, 2.20"),
            "{summary}"
        );
        let fields = Fields::new(&v, &Query::default(), &seen).select(Level::DEFAULT, 10_000);
        assert!(
            fields.contains("price=1.50") && fields.contains("account_id=123456789012345678901"),
            "{fields}"
        );
        // Without the texts: serde_json's own writing (what the renderings showed before).
        let plain = json_compact(&v, Level::DEFAULT, &SeenValues::default(), 0, true, true);
        assert!(
            plain.contains("price: 1.5,") && plain.contains("1.2345678901234567e+20"),
            "{plain}"
        );
    }

    #[test]
    fn a_key_written_twice_never_shows_another_numbers_value() {
        // The parse keeps the last "a" at the first one's place: in document order its numbers
        // are 7 then 5 where the text's literals are 5 then 7. Neither pair is the same number,
        // so neither text is used.
        let text = r#"{"a": "x", "b": 5.0, "a": 7.00}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let mut seen = SeenValues::default();
        seen.add_written(text, &v);
        let s = json_compact(&v, Level::DEFAULT, &seen, 0, true, true);
        assert_eq!(s, "{a: 7.0, b: 5.0}");
        // The counts differ (a number written twice, kept once): no text is used.
        let text = r#"{"a": 1.50, "a": 2.50, "b": 3.50}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let mut seen = SeenValues::default();
        seen.add_written(text, &v);
        assert_eq!(
            json_compact(&v, Level::DEFAULT, &seen, 0, true, true),
            "{a: 2.5, b: 3.5}"
        );
    }
}

/// The law of [`SeenValues::add_written`]: whatever the text (keys written twice included), a
/// number shown from the text reads as the number the value holds (else it is serde_json's own
/// writing of it), and every number is shown as written wherever no key is written twice.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod written_props {
    use super::*;
    use proptest::prelude::*;

    /// A number literal in one of the forms JSON allows.
    fn literal() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            "[1-9][0-9]{0,24}|0",
            proptest::option::of("[0-9]{1,6}"),
            proptest::option::of(("[eE]", "[+-]?", "[0-9]{1,3}")),
        )
            .prop_map(|(neg, int, frac, exp)| {
                let mut s = String::new();
                if neg {
                    s.push('-');
                }
                s.push_str(&int);
                if let Some(f) = frac {
                    s.push('.');
                    s.push_str(&f);
                }
                if let Some((e, sign, d)) = exp {
                    s.push_str(&e);
                    s.push_str(&sign);
                    s.push_str(&d);
                }
                s
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]
        #[test]
        fn every_number_shows_its_own_value(
            members in proptest::collection::vec(
                ("[a-c]", prop_oneof![2 => literal(), 1 => Just("\"s\"".to_string())], any::<bool>()),
                1..12,
            ),
        ) {
            // Objects of numbers and strings (some in one-element arrays), keys from a small
            // set so that some are written twice.
            let body: Vec<String> = members
                .iter()
                .map(|(k, n, wrap)| if *wrap { format!("\"{k}\": [{n}]") } else { format!("\"{k}\": {n}") })
                .collect();
            let written: Vec<&str> = members
                .iter()
                .map(|(_, n, _)| n.as_str())
                .filter(|n| !n.starts_with('"'))
                .collect();
            let text = format!("{{{}}}", body.join(", "));
            let Ok(v) = serde_json::from_str::<Value>(&text) else {
                return Ok(()); // out of f64's range: not JSON serde_json reads
            };
            let mut seen = SeenValues::default();
            seen.add_written(&text, &v);
            let twice = {
                let mut keys: Vec<&str> = members.iter().map(|(k, _, _)| k.as_str()).collect();
                keys.sort_unstable();
                keys.windows(2).any(|w| w[0] == w[1])
            };
            let mut numbers = Vec::new();
            let _ = numbers_in_order(&v, &mut numbers);
            for (i, n) in numbers.iter().enumerate() {
                let shown = seen.number(n);
                // A text shown instead of serde_json's writing reads as the same number.
                if shown != n.to_string() {
                    let parsed = shown.parse::<Number>().ok();
                    prop_assert_eq!(parsed.as_ref(), Some(*n));
                }
                if !twice {
                    prop_assert_eq!(shown.as_ref(), written[i]);
                }
            }
        }
    }
}
