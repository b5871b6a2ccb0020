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

use super::summarize::Query;
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
    leaves: Option<Vec<(u8, String, String)>>,
    ranked: Vec<String>,
}

impl OutputValues {
    pub(crate) fn new(text: &str) -> OutputValues {
        match json_of(text) {
            Some(v) => {
                let leaves = leaves(&v);
                let ranked = ranked(&leaves);
                OutputValues {
                    leaves: Some(leaves),
                    ranked,
                }
            }
            None => OutputValues {
                leaves: None,
                ranked: key_values(text),
            },
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
/// ones the query itself holds (the next turn has those). Empty without query terms.
pub(crate) fn named_by_query(v: &Value, query: &Query) -> Vec<String> {
    if query.stems.is_empty() {
        return Vec::new();
    }
    named(&leaves(v), query)
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
fn ranked(leaves: &[(u8, String, String)]) -> Vec<String> {
    let mut out = Vec::with_capacity(leaves.len());
    for rank in 0..3u8 {
        let of_rank: Vec<String> = leaves
            .iter()
            .filter(|(r, _, _)| *r == rank)
            .map(|(_, s, _)| s.clone())
            .collect();
        out.extend(both_ends(of_rank));
    }
    dedup(out)
}

/// The leaves under fields the query names (see [`named_by_query`]).
fn named(leaves: &[(u8, String, String)], query: &Query) -> Vec<String> {
    if query.stems.is_empty() {
        return Vec::new();
    }
    let mut named_fields: std::collections::HashMap<&str, bool> = Default::default();
    let mut named: Vec<(u8, &String)> = Vec::new();
    for (rank, value, field) in leaves {
        let is_named = *named_fields
            .entry(field.as_str())
            .or_insert_with(|| query.names_field(field));
        if is_named && !query.holds(value) {
            named.push((*rank, value));
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

fn dedup(items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

/// Scalar leaves with their rank (0: identifier-like, 1: short, 2: other), in document order.
/// The scalar leaves of `v`: (rank, value, field).
fn leaves(v: &Value) -> Vec<(u8, String, String)> {
    let mut out = Vec::new();
    leaves_with_fields(v, "", &mut out);
    out
}

/// The scalar leaves of `v` with their rank (see the module docs) and the name of the field
/// they are under (the nearest object key).
fn leaves_with_fields(v: &Value, field: &str, out: &mut Vec<(u8, String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                leaves_with_fields(child, k, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                leaves_with_fields(item, field, out);
            }
        }
        Value::Number(n) => out.push((0, n.to_string(), field.to_string())),
        Value::String(s) => {
            let s = s.trim();
            if s.is_empty() || s.chars().count() > MAX_VALUE_CHARS {
                return;
            }
            let f = field.to_ascii_lowercase();
            let idish = f.ends_with("id") || f.contains("name") || f.contains("status");
            let rank = if idish || keys::classify(s).is_some() {
                0
            } else if s.chars().count() <= 24 {
                1
            } else {
                2
            };
            out.push((rank, s.to_string(), field.to_string()));
        }
        Value::Bool(_) | Value::Null => {}
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
        assert_eq!(named_by_query(&v, &q), vec!["12446", "Buy"]);
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
