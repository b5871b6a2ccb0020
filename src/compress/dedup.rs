//! Exact and fuzzy duplicate detection: each text against the newer texts of the conversation.

use crate::text::hash::{FastMap as HashMap, FastSet as HashSet};

use serde_json::Value;

use super::parse::Unit;

/// How many newer texts fuzzy dedup compares a text with (the nearest ones).
const FUZZY_WINDOW: usize = 256;

/// A text as a map key: equal when the two are the same slice (a unit finds its own text, the
/// newest of its kind, without comparing it byte by byte) or have the same bytes.
#[derive(Clone, Copy, Hash)]
struct Text<'v>(&'v str);

impl PartialEq for Text<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }
}

impl Eq for Text<'_> {}

/// What [`find`] found per unit, kept across the plans of one call: the budget loop plans the
/// same messages many times, and a unit's result depends only on its message and block (which
/// fix its text), the conversation, `min_chars` and the fuzzy threshold, all part of the key or
/// fixed for the memo's life (one parse of the messages).
#[derive(Default)]
pub(super) struct DedupMemo {
    found: std::cell::RefCell<HashMap<MemoKey, Found>>,
}

/// `(message, block, min_chars, fuzzy threshold bits)`.
type MemoKey = (usize, Option<usize>, usize, Option<u64>);
/// The newer message a unit duplicates and, for a near-duplicate, the similarity in percent.
type Found = Option<(usize, Option<u32>)>;

/// The conversation's texts as dedup targets, built on the first unit that needs them.
struct Targets<'v> {
    all_texts: Vec<(usize, &'v str)>,
    /// The newest message holding each text.
    newest: HashMap<Text<'v>, usize>,
    /// The same answer for each of `all_texts` by its address and length: a unit's text is
    /// one of them, found without hashing its bytes a second time.
    newest_at: HashMap<(usize, usize), usize>,
    /// Each text's set of lines (fuzzy only).
    line_sets: Vec<HashSet<&'v str>>,
}

impl<'v> Targets<'v> {
    fn new(values: &'v [Value], fuzzy: bool) -> Targets<'v> {
        let all_texts = all_texts(values);
        let mut newest: HashMap<Text<'_>, usize> =
            HashMap::with_capacity_and_hasher(all_texts.len(), Default::default());
        let mut newest_at: HashMap<(usize, usize), usize> =
            HashMap::with_capacity_and_hasher(all_texts.len(), Default::default());
        // Newest first (texts are in message order): a text's first entry is its newest message.
        for &(m, t) in all_texts.iter().rev() {
            let n = *newest.entry(Text(t)).or_insert(m);
            newest_at.insert((t.as_ptr() as usize, t.len()), n);
        }
        let line_sets = if fuzzy {
            all_texts.iter().map(|&(_, t)| line_set(t)).collect()
        } else {
            Vec::new()
        };
        Targets {
            all_texts,
            newest,
            newest_at,
            line_sets,
        }
    }

    /// [`find`]'s answer for one unit.
    fn find(&self, unit: &Unit<'_>, fuzzy: Option<f64>) -> Found {
        let at = (unit.text.as_ptr() as usize, unit.text.len());
        let newest = match self.newest_at.get(&at) {
            Some(&m) => Some(m),
            None => self.newest.get(&Text(unit.text)).copied(),
        };
        if let Some(m) = newest.filter(|&m| m > unit.msg) {
            return Some((m, None));
        }
        let threshold = fuzzy?;
        let lines = line_set(unit.text);
        if lines.len() < 3 {
            return None;
        }
        // The newest similar text among the nearest newer ones (bounded, so a long history
        // stays linear).
        let (m, s) = self
            .all_texts
            .iter()
            .zip(&self.line_sets)
            .rev()
            .filter(|((m, _), _)| *m > unit.msg)
            .take(FUZZY_WINDOW)
            .filter(|((_, t), _)| t.len() * 2 >= unit.text.len() && unit.text.len() * 2 >= t.len())
            .map(|((m, _), set)| (*m, jaccard(&lines, set)))
            .find(|(_, s)| *s >= threshold)?;
        Some((m, Some((s * 100.0).round() as u32)))
    }
}

/// For each unit, the newest later message holding the same text (`similarity: None`) or,
/// with `fuzzy = Some(threshold)`, a near-duplicate (line Jaccard ≥ threshold, in percent).
/// `memo` keeps the answers for the next plan of the same messages.
pub(super) fn find(
    units: &[Unit<'_>],
    values: &[Value],
    min_chars: usize,
    fuzzy: Option<f64>,
    memo: &DedupMemo,
) -> Vec<Found> {
    let mut found = vec![None; units.len()];
    let mut targets: Option<Targets<'_>> = None;
    let mut memo = memo.found.borrow_mut();
    for (u, unit) in units.iter().enumerate() {
        let key = (unit.msg, unit.block, min_chars, fuzzy.map(f64::to_bits));
        found[u] = match memo.get(&key) {
            Some(&f) => f,
            None => {
                let f = if unit.text.chars().count() < min_chars.max(1) {
                    None
                } else {
                    let t = targets.get_or_insert_with(|| Targets::new(values, fuzzy.is_some()));
                    t.find(unit, fuzzy)
                };
                memo.insert(key, f);
                f
            }
        };
    }
    found
}

/// Every text of the conversation with its message index (for dedup targets).
fn all_texts(values: &[Value]) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match v.get("content") {
            Some(Value::String(s)) => out.push((i, s.as_str())),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    if let Some(Value::String(t)) = b.get("text") {
                        out.push((i, t.as_str()));
                    } else if let Some(Value::String(t)) = b.get("content") {
                        out.push((i, t.as_str()));
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
