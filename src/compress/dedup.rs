//! Exact and fuzzy duplicate detection: each text against the newer texts of the conversation.

use crate::text::hash::{FastMap as HashMap, FastSet as HashSet};

use serde_json::Value;

use super::Unit;

/// How many newer texts fuzzy dedup compares a text with (the nearest ones).
const FUZZY_WINDOW: usize = 256;

/// For each unit, the newest later message holding the same text (`similarity: None`) or,
/// with `fuzzy = Some(threshold)`, a near-duplicate (line Jaccard ≥ threshold, in percent).
pub(super) fn find(
    units: &[Unit],
    values: &[Value],
    min_chars: usize,
    fuzzy: Option<f64>,
) -> Vec<Option<(usize, Option<u32>)>> {
    let mut found = vec![None; units.len()];
    let all_texts = all_texts(values);
    // The newest message holding each text (texts are in message order).
    let mut newest: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(all_texts.len(), Default::default());
    for (m, t) in &all_texts {
        newest.insert(t.as_str(), *m);
    }
    let line_sets: Vec<HashSet<&str>> = if fuzzy.is_some() {
        all_texts.iter().map(|(_, t)| line_set(t)).collect()
    } else {
        Vec::new()
    };
    for (u, unit) in units.iter().enumerate() {
        if unit.text.chars().count() < min_chars.max(1) {
            continue;
        }
        if let Some(&m) = newest.get(unit.text.as_str()).filter(|&&m| m > unit.msg) {
            found[u] = Some((m, None));
            continue;
        }
        let Some(threshold) = fuzzy else { continue };
        let lines = line_set(&unit.text);
        if lines.len() < 3 {
            continue;
        }
        // The newest similar text among the nearest newer ones (bounded, so a long history
        // stays linear).
        let best = all_texts
            .iter()
            .zip(&line_sets)
            .rev()
            .filter(|((m, _), _)| *m > unit.msg)
            .take(FUZZY_WINDOW)
            .filter(|((_, t), _)| t.len() * 2 >= unit.text.len() && unit.text.len() * 2 >= t.len())
            .map(|((m, _), set)| (*m, jaccard(&lines, set)))
            .find(|(_, s)| *s >= threshold);
        if let Some((m, s)) = best {
            found[u] = Some((m, Some((s * 100.0).round() as u32)));
        }
    }
    found
}

/// Every text of the conversation with its message index (for dedup targets).
fn all_texts(values: &[Value]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match v.get("content") {
            Some(Value::String(s)) => out.push((i, s.clone())),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    if let Some(Value::String(t)) = b.get("text") {
                        out.push((i, t.clone()));
                    } else if let Some(Value::String(t)) = b.get("content") {
                        out.push((i, t.clone()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn line_set(text: &str) -> HashSet<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

fn jaccard(a: &HashSet<&str>, b: &HashSet<&str>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}
