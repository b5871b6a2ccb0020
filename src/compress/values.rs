//! What a later tool call reuses: the values of tool output, ranked for the token budget.
//!
//! Agents' next calls mostly reuse identifiers from the newest tool output (an order id, a zip
//! code, a file name, the last item of a listing). When the budget leaves room for only a few
//! tokens of a tool output, these are what to keep, before field names and prose:
//!
//! - JSON output: its scalar leaves as the input wrote them (strings of at most
//!   [`MAX_VALUE_CHARS`] characters, numbers; not `true`/`false`/`null`), identifier-like ones
//!   first (a key token, or under a field named `…id`, `…name`, `…status`), then short ones,
//!   then the rest;
//! - other output: its key tokens ([`crate::text::keys`]).
//!
//! Within each rank the order is *both ends first* ([`both_ends`]): the first item, the last,
//! the second, the second to last… — listings are read from both ends ("the first and the last
//! airport"), and logs end with their outcome.

use serde_json::Value;

use super::json::SeenValues;
use super::summarize::Query;
use crate::text::hash::{FastMap, FastSet};
use crate::text::keys;

/// Longest string value listed whole.
pub(crate) const MAX_VALUE_CHARS: usize = 100;

/// The values of one tool output, most reusable first (see the module docs).
#[cfg(test)]
pub(crate) fn tool_values(text: &str) -> Vec<String> {
    OutputValues::new(text).ranked
}

/// `tool_values` with the values the query is about first ([`named_by_query`]). Without
/// query terms, or for output that is not JSON, the same as `tool_values`.
#[cfg(test)]
pub(crate) fn tool_values_for(text: &str, query: &Query) -> Vec<String> {
    OutputValues::new(text).for_query(query)
}

/// One tool output read once for its values: its JSON leaves (when it is a JSON object or
/// array) and its values ranked, most reusable first (see the module docs). A budget asks for them several
/// times (the values its plans count, what a fold lists, what a summary may list).
pub(crate) struct OutputValues {
    leaves: Option<Leaves>,
    ranked: Vec<String>,
}

impl OutputValues {
    pub(crate) fn new(text: &str) -> OutputValues {
        match json_of(text) {
            Some(v) => {
                // Numbers as the tool wrote them (`1.50`, not serde_json's `1.5`).
                let mut written = SeenValues::default();
                written.add_written(text, &v);
                OutputValues::of_json(&v, &written)
            }
            None => OutputValues {
                leaves: None,
                ranked: key_values(text),
            },
        }
    }

    /// The values of a tool output already parsed as JSON (`v`, an object or array), its
    /// numbers as `written` gives them: what [`new`](Self::new) makes of its text.
    pub(crate) fn of_json(v: &Value, written: &SeenValues<'_>) -> OutputValues {
        let leaves = leaves(v, written);
        let ranked = ranked(&leaves);
        OutputValues {
            leaves: Some(leaves),
            ranked,
        }
    }

    /// The values, most reusable first.
    pub(crate) fn all(&self) -> &[String] {
        &self.ranked
    }

    /// The values with those the query is about first ([`named_by_query`]); without query
    /// terms, or for output that is not JSON, the same as [`all`](Self::all).
    pub(crate) fn for_query(&self, query: &Query) -> Vec<String> {
        let named = match &self.leaves {
            Some(leaves) => named(leaves, query),
            None => Vec::new(),
        };
        if named.is_empty() {
            return self.ranked.clone();
        }
        let mut out = named;
        out.extend(self.ranked.iter().cloned());
        dedup(out)
    }
}

/// The values of a JSON tool output's leaves (`v`) under fields the query names
/// ([`Query::names_field`]: `order_id` and `order_type` for "cancel my order"), ranked as in
/// [`OutputValues::all`] (identifier-like first) and in reading order within a rank, leaving out the
/// ones the query itself holds (the next turn has those). Empty without query terms. Numbers
/// as `written` gives them.
pub(crate) fn named_by_query(v: &Value, query: &Query, written: &SeenValues<'_>) -> Vec<String> {
    if query.stems.is_empty() {
        return Vec::new();
    }
    named(&leaves(v, written), query)
}

/// A tool output that is a JSON object or array, parsed.
fn json_of(text: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
        _ => None,
    }
}

/// Output that is not JSON: its key tokens, both ends first.
fn key_values(text: &str) -> Vec<String> {
    dedup(both_ends(
        keys::extract(text).into_iter().map(|(k, _)| k).collect(),
    ))
}

/// The JSON leaves ranked as in [`OutputValues::all`]: by rank, each rank both ends first.
fn ranked(leaves: &Leaves) -> Vec<String> {
    let mut order: Vec<usize> = Vec::with_capacity(leaves.items.len());
    for rank in 0..3u8 {
        let of_rank: Vec<usize> = (0..leaves.items.len())
            .filter(|&i| leaves.items[i].rank == rank)
            .collect();
        order.extend(both_ends(of_rank));
    }
    let mut seen: FastSet<&str> = FastSet::default();
    order
        .into_iter()
        .map(|i| leaves.items[i].value.as_str())
        .filter(|v| seen.insert(v))
        .map(str::to_string)
        .collect()
}

/// The leaves under fields the query names (see [`named_by_query`]).
fn named(leaves: &Leaves, query: &Query) -> Vec<String> {
    if query.stems.is_empty() {
        return Vec::new();
    }
    let is_named: Vec<bool> = leaves
        .fields
        .iter()
        .map(|f| query.names_field(&f.name))
        .collect();
    let mut named: Vec<(u8, &String)> = Vec::new();
    for leaf in &leaves.items {
        if is_named[leaf.field as usize] && !query.holds(&leaf.value) {
            named.push((leaf.rank, &leaf.value));
        }
    }
    named.sort_by_key(|(rank, _)| *rank);
    dedup(named.into_iter().map(|(_, v)| v.clone()).collect())
}

/// `items` reordered first, last, second, second to last, … (every item once).
pub(crate) fn both_ends<T>(items: Vec<T>) -> Vec<T> {
    let n = items.len();
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        if let Some(x) = slots[lo].take() {
            out.push(x);
        }
        lo += 1;
        if lo < hi {
            hi -= 1;
            if let Some(x) = slots[hi].take() {
                out.push(x);
            }
        }
    }
    out
}

/// `items` without repeats, each kept where it first comes.
fn dedup(items: Vec<String>) -> Vec<String> {
    let mut seen: FastSet<&str> = FastSet::default();
    let first: Vec<bool> = items.iter().map(|s| seen.insert(s.as_str())).collect();
    drop(seen);
    items
        .into_iter()
        .zip(first)
        .filter_map(|(s, first)| first.then_some(s))
        .collect()
}

/// A JSON output's scalar leaves in document order, each with its rank (see the module docs)
/// and the field it is under (the nearest object key; fields are kept once each).
struct Leaves {
    items: Vec<Leaf>,
    fields: Vec<Field>,
}

struct Leaf {
    /// 0: identifier-like, 1: short, 2: other.
    rank: u8,
    value: String,
    /// Its field's position in [`Leaves::fields`].
    field: u32,
}

struct Field {
    name: String,
    /// Named like an identifier's field: `…id`, `…name`, `…status`.
    idish: bool,
}

/// The scalar leaves of `v`, numbers as `written` gives them.
fn leaves(v: &Value, written: &SeenValues<'_>) -> Leaves {
    let mut walk = Walk {
        out: Leaves {
            items: Vec::new(),
            fields: Vec::new(),
        },
        slots: FastMap::default(),
        written,
    };
    walk.field("");
    walk.leaves(v, 0);
    walk.out
}

/// The walk over a JSON value that makes its [`Leaves`].
struct Walk<'j, 'w> {
    out: Leaves,
    /// Each field name's position in `out.fields`.
    slots: FastMap<&'j str, u32>,
    /// The numbers' texts.
    written: &'w SeenValues<'w>,
}

impl<'j> Walk<'j, '_> {
    /// The position of field `name`, added the first time it is seen.
    fn field(&mut self, name: &'j str) -> u32 {
        if let Some(&k) = self.slots.get(name) {
            return k;
        }
        let k = self.out.fields.len() as u32;
        let f = name.to_ascii_lowercase();
        let idish = f.ends_with("id") || f.contains("name") || f.contains("status");
        self.out.fields.push(Field {
            name: name.to_string(),
            idish,
        });
        self.slots.insert(name, k);
        k
    }

    /// The scalar leaves of `v`, under field `field`.
    fn leaves(&mut self, v: &'j Value, field: u32) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    let f = self.field(k);
                    self.leaves(child, f);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.leaves(item, field);
                }
            }
            Value::Number(n) => self.out.items.push(Leaf {
                rank: 0,
                value: self.written.number(n).into_owned(),
                field,
            }),
            Value::String(s) => {
                let s = s.trim();
                if s.is_empty() {
                    return;
                }
                let chars = crate::text::count_chars(s);
                if chars > MAX_VALUE_CHARS {
                    return;
                }
                let rank = if self.out.fields[field as usize].idish || keys::classify(s).is_some() {
                    0
                } else if chars <= 24 {
                    1
                } else {
                    2
                };
                self.out.items.push(Leaf {
                    rank,
                    value: s.to_string(),
                    field,
                });
            }
            Value::Bool(_) | Value::Null => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_names_fields_and_their_values_come_first() {
        use crate::compress::summarize::query_terms;
        let out = r#"{"order_id": 12446, "order_type": "Buy", "symbol": "AAPL", "price": 227.16, "zipcode": "94016"}"#;
        let q = query_terms(Some("Please cancel my recent orders for the AAPL shares."));
        assert!(q.names_field("order_id") && q.names_field("orderType"));
        assert!(!q.names_field("symbol") && !q.names_field("zipcode"));
        // Identifier-like first (`order_id`), then short values; AAPL is in the query already.
        let v: Value = serde_json::from_str(out).unwrap();
        assert_eq!(
            named_by_query(&v, &q, &SeenValues::default()),
            vec!["12446", "Buy"]
        );
        let all = tool_values_for(out, &q);
        assert_eq!(&all[..2], &["12446".to_string(), "Buy".to_string()]);
        assert!(all.contains(&"AAPL".to_string()) && all.contains(&"94016".to_string()));
        // Without a query, or for text that is not JSON: the plain ranking.
        let none = query_terms(None);
        assert_eq!(tool_values_for(out, &none), tool_values(out));
        assert_eq!(
            tool_values_for("order 12446 placed", &q),
            tool_values("order 12446 placed")
        );
    }

    #[test]
    fn both_ends_alternates() {
        assert_eq!(both_ends(vec![1, 2, 3, 4, 5]), vec![1, 5, 2, 4, 3]);
        assert_eq!(both_ends(vec![1, 2, 3, 4]), vec![1, 4, 2, 3]);
        assert_eq!(both_ends(Vec::<u8>::new()), Vec::<u8>::new());
    }

    #[test]
    fn json_values_rank_ids_first_and_skip_booleans() {
        let v = tool_values(
            r#"{"order_id": 12446, "order_type": "Buy", "ok": true, "note": "a long remark about the order and why it was placed"}"#,
        );
        assert_eq!(v[0], "12446");
        assert!(v.contains(&"Buy".to_string()));
        assert!(!v.contains(&"true".to_string()));
        assert_eq!(
            v.last().map(String::as_str),
            Some("a long remark about the order and why it was placed")
        );
    }

    #[test]
    fn listings_give_both_ends_first() {
        let v = tool_values("['RMS', 'SBK', 'MPC', 'SVP', 'BOS']");
        assert_eq!(&v[..2], &["RMS".to_string(), "BOS".to_string()]);
        let v = tool_values(r#"{"matches": ["a1", "b2", "c3"]}"#);
        assert_eq!(v, vec!["a1", "c3", "b2"]);
    }
}
