//! Okapi BM25 over an inverted index of slots.
//!
//! A *slot* is a position in the index (a chunk, in [`Index`](super)): slots are numbered
//! `0..len()` in the order they were [added](Bm25::add). [`Bm25::retain`] removes slots and
//! renumbers the rest in order, so that adding then removing a slot leaves the index exactly
//! as if it had never been added (same value, same serialised bytes).
//!
//! Scoring, for a query with terms `q` (repeated query terms count once per repetition):
//!
//! ```text
//! score(d) = Σ_{t ∈ q} idf(t) · tf(t,d) · (k1 + 1) / (tf(t,d) + k1 · (1 − b + b · |d| / avgdl))
//! idf(t)   = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//! ```
//!
//! `idf` is Lucene's (never negative, so a term in more than half of the slots still counts a
//! little and a slot is never penalised for matching). `rank_bm25`'s `BM25Okapi` uses
//! `ln((N − n + 0.5)/(n + 0.5))` with negative values floored at 0.25 × the mean idf over the
//! vocabulary. Measured with `examples/bm25_ir.rs` (nDCG@10, Lucene vs rank_bm25 idf): CISI
//! 1.2/0.75 0.3929 vs 0.3910, 0.9/0.4 0.3779 vs 0.3738; MED 1.2/0.75 0.6928 vs 0.6920, 0.9/0.4
//! 0.6715 vs 0.6753. Lucene's is better in three of four, and it needs no pass over the
//! vocabulary (rank_bm25's floor depends on every term of the index).
//!
//! Logarithms come from `libm` and scores are `f32` computed with plain IEEE arithmetic, so
//! native and wasm builds give bit-identical scores and rankings.
//!
//! ```
//! use condense::retrieve::bm25::{Bm25, Bm25Params};
//! let terms = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
//! let mut index = Bm25::new(Bm25Params::default()).unwrap();
//! index.add(&terms("rust wasm build"));
//! index.add(&terms("python build"));
//! index.add(&terms("rust rust borrow checker"));
//! let hits = index.search(&terms("rust"), 10);
//! assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [2, 0]);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// BM25's two parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation, `>= 0` (0: a term counts once however often it occurs).
    pub k1: f32,
    /// Length normalisation, `0..=1` (0: none, 1: full).
    pub b: f32,
}

impl Default for Bm25Params {
    /// `k1 = 0.9`, `b = 0.4` (Anserini's defaults). Alone, 1.2/0.75 scores a little higher on
    /// the dev IR sets (nDCG@10 CISI .3929 vs .3779); fused with MiniLM, 0.9/0.4 is better on
    /// MED (.7977 vs .7921) and within .006 on CISI: flatter term saturation leaves the fine
    /// ordering to the dense side. `query()` is hybrid by default, so this is its default.
    fn default() -> Self {
        Bm25Params { k1: 0.9, b: 0.4 }
    }
}

impl Bm25Params {
    /// Validated parameters: `k1` finite and `>= 0`, `b` in `0..=1`.
    pub fn new(k1: f32, b: f32) -> Result<Bm25Params, Error> {
        let params = Bm25Params { k1, b };
        params.validate()?;
        Ok(params)
    }

    /// Checks the ranges of [`Bm25Params::new`]; errors name the field (`k1`, `b`).
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "k1",
                format!("expected a finite number >= 0, got {}", self.k1),
            ));
        }
        if !(0.0..=1.0).contains(&self.b) {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "b",
                format!("expected a number in 0..=1, got {}", self.b),
            ));
        }
        Ok(())
    }
}

/// An inverted index with BM25 ranking; see the [module docs](self).
///
/// Serialisable with serde; the form is deterministic (terms in sorted order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25 {
    params: Bm25Params,
    /// term → postings `(slot, term frequency)`, slots ascending; no empty lists.
    postings: BTreeMap<String, Vec<(u32, u32)>>,
    /// Number of terms of each slot.
    lengths: Vec<u32>,
    /// Sum of `lengths`.
    total_length: u64,
}

impl Bm25 {
    /// An empty index; fails when `params` are out of range.
    pub fn new(params: Bm25Params) -> Result<Bm25, Error> {
        params.validate()?;
        Ok(Bm25 {
            params,
            postings: BTreeMap::new(),
            lengths: Vec::new(),
            total_length: 0,
        })
    }

    /// The parameters.
    pub fn params(&self) -> Bm25Params {
        self.params
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether the index has no slots.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Number of distinct terms.
    pub fn vocabulary_len(&self) -> usize {
        self.postings.len()
    }

    /// Adds a slot with the given terms (as the analyser produced them, duplicates counted as
    /// term frequency) and returns its number, `len()` before the call.
    ///
    /// Slot numbers are `u32`; an index never holds more than `u32::MAX` slots (the last slot
    /// number is returned again beyond that, which memory makes unreachable in practice).
    pub fn add(&mut self, terms: &[String]) -> u32 {
        let slot = u32::try_from(self.lengths.len()).unwrap_or(u32::MAX);
        let mut sorted: Vec<&str> = terms.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let mut i = 0;
        while let Some(&term) = sorted.get(i) {
            let run = sorted[i..].iter().take_while(|t| **t == term).count();
            let tf = u32::try_from(run).unwrap_or(u32::MAX);
            match self.postings.get_mut(term) {
                Some(list) => list.push((slot, tf)),
                None => {
                    self.postings.insert(term.to_string(), vec![(slot, tf)]);
                }
            }
            i += run;
        }
        let length = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        self.lengths.push(length);
        self.total_length = self.total_length.saturating_add(u64::from(length));
        slot
    }

    /// Checks what a search relies on after deserialisation: valid parameters, the total of
    /// the lengths, and postings lists that are non-empty, in strictly ascending slot order,
    /// within `len()`, each frequency between 1 and its slot's length.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidIndex`] at `bm25`.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let bad = |reason: &str| Error::new(ErrorKind::InvalidIndex, "bm25", reason.to_string());
        if self.params.validate().is_err() {
            return Err(bad("BM25 parameters out of range"));
        }
        let total = self
            .lengths
            .iter()
            .try_fold(0u64, |sum, &l| sum.checked_add(u64::from(l)));
        if total != Some(self.total_length) {
            return Err(bad("a total length that is not the sum of the lengths"));
        }
        for list in self.postings.values() {
            if list.is_empty() {
                return Err(bad("a term without postings"));
            }
            let mut previous: Option<u32> = None;
            for &(slot, tf) in list {
                let Some(&len) = self.lengths.get(slot as usize) else {
                    return Err(bad("a posting of an unknown slot"));
                };
                if previous.is_some_and(|p| p >= slot) || tf == 0 || tf > len {
                    return Err(bad("postings out of order or with a bad frequency"));
                }
                previous = Some(slot);
            }
        }
        Ok(())
    }

    /// Keeps the slots whose flag is `true` and removes the others; the kept slots are
    /// renumbered `0..` in their order. Slots beyond `keep.len()` are kept; extra flags are
    /// ignored. Terms left without postings disappear, so the result equals (`==`, and
    /// serialises to the same bytes as) an index to which only the kept slots were added.
    pub fn retain(&mut self, keep: &[bool]) {
        let n = self.lengths.len();
        let kept = |slot: usize| keep.get(slot).copied().unwrap_or(true);
        if (0..n).all(kept) {
            return;
        }
        // New number of each old slot (only read for kept slots).
        let mut renumber = Vec::with_capacity(n);
        let mut next = 0u32;
        for slot in 0..n {
            renumber.push(next);
            if kept(slot) {
                next = next.saturating_add(1);
            }
        }
        self.postings.retain(|_, list| {
            list.retain_mut(|(slot, _)| {
                let old = *slot as usize;
                if old < n && kept(old) {
                    *slot = renumber.get(old).copied().unwrap_or(*slot);
                    true
                } else {
                    false
                }
            });
            !list.is_empty()
        });
        let mut slot = 0;
        self.lengths.retain(|_| {
            let k = kept(slot);
            slot += 1;
            k
        });
        self.total_length = self.lengths.iter().map(|&l| u64::from(l)).sum();
    }

    /// Sets the stored total length (tests build corrupt indexes with it).
    #[cfg(test)]
    pub(crate) fn set_total_length(&mut self, total: u64) {
        self.total_length = total;
    }

    /// The inverse document frequency of a term found in `df` of the slots.
    fn idf(&self, df: usize) -> f32 {
        let n = self.lengths.len() as f64;
        let df = df as f64;
        libm::log(1.0 + (n - df + 0.5) / (df + 0.5)) as f32
    }

    /// The score an ideal slot would reach for the query: one containing every query term
    /// that occurs in the index, with saturated frequency (`Σ idf(t) · (k1 + 1)`). No slot
    /// scores above it, so `score / ideal_score` is an absolute match strength in [0, 1].
    /// Terms absent from the index count as if they occurred once: they are the part of the
    /// question the index knows nothing about, so a question about something else does not
    /// look well matched because one of its words occurs (measured with the dev IR sets'
    /// questions against the other set's corpus). 0 for an empty index or query.
    pub fn ideal_score(&self, query_terms: &[String]) -> f32 {
        let k1 = self.params.k1;
        if self.lengths.is_empty() {
            return 0.0;
        }
        query_terms
            .iter()
            .map(|t| {
                let df = self.postings.get(t.as_str()).map_or(1, Vec::len);
                self.idf(df) * (k1 + 1.0)
            })
            .sum()
    }

    /// The BM25 score of every slot for the query (0 for slots matching no query term).
    pub fn scores(&self, query_terms: &[String]) -> Vec<f32> {
        let mut scores = vec![0.0f32; self.lengths.len()];
        for term in query_terms {
            self.add_term(&mut scores, term, 1.0);
        }
        scores
    }

    /// The score of every slot for a weighted query: `Σ w(t) · bm25(t, d)` over `(term, w)`
    /// (a term listed twice counts twice), from the terms' postings only. What pseudo-relevance
    /// feedback's expanded query is scored with ([`feedback`](super::feedback)).
    pub fn weighted_scores(&self, query: &[(String, f32)]) -> Vec<f32> {
        let mut scores = vec![0.0f32; self.lengths.len()];
        for (term, weight) in query {
            self.add_term(&mut scores, term, *weight);
        }
        scores
    }

    /// Adds `weight` times one term's BM25 contribution to the score of every slot in its
    /// postings (`weight` 1 adds exactly the contribution: multiplying by 1 is exact).
    fn add_term(&self, scores: &mut [f32], term: &str, weight: f32) {
        let n = self.lengths.len();
        if n == 0 {
            return;
        }
        let Some(list) = self.postings.get(term) else {
            return;
        };
        let avgdl = (self.total_length as f64 / n as f64) as f32;
        let Bm25Params { k1, b } = self.params;
        // Length normalisation per slot is computed on demand: k1 · (1 − b + b · |d| / avgdl).
        let norm = |len: u32| -> f32 {
            if avgdl > 0.0 {
                k1 * (1.0 - b + b * (len as f32 / avgdl))
            } else {
                k1
            }
        };
        let idf = self.idf(list.len());
        for &(slot, tf) in list {
            let Some(len) = self.lengths.get(slot as usize) else {
                continue;
            };
            let tf = tf as f32;
            let denominator = tf + norm(*len);
            if let Some(score) = scores.get_mut(slot as usize) {
                if denominator > 0.0 {
                    *score += weight * (idf * tf * (k1 + 1.0) / denominator);
                }
            }
        }
    }

    /// The `k` best slots for the query: `(slot, score)` by score descending, ties by slot
    /// ascending; only slots with a score above 0.
    pub fn search(&self, query_terms: &[String], k: usize) -> Vec<(u32, f32)> {
        best(&self.scores(query_terms), k)
    }

    /// [`search`](Bm25::search) for a weighted query
    /// ([`weighted_scores`](Bm25::weighted_scores)).
    pub fn search_weighted(&self, query: &[(String, f32)], k: usize) -> Vec<(u32, f32)> {
        best(&self.weighted_scores(query), k)
    }
}

/// The `k` best slots of `scores` above 0: by score descending, ties by slot ascending.
fn best(scores: &[f32], k: usize) -> Vec<(u32, f32)> {
    if k == 0 {
        return Vec::new();
    }
    let mut hits: Vec<(u32, f32)> = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(slot, s)| (slot as u32, *s))
        .collect();
    let order = |a: &(u32, f32), c: &(u32, f32)| c.1.total_cmp(&a.1).then(a.0.cmp(&c.0));
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, order);
        hits.truncate(k);
    }
    hits.sort_unstable_by(order);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn params_are_validated() {
        assert!(Bm25Params::new(1.2, 0.75).is_ok());
        assert!(Bm25Params::new(0.0, 0.0).is_ok());
        assert_eq!(Bm25Params::new(-1.0, 0.5).unwrap_err().path(), "k1");
        assert_eq!(Bm25Params::new(f32::NAN, 0.5).unwrap_err().path(), "k1");
        assert_eq!(Bm25Params::new(1.0, 1.5).unwrap_err().path(), "b");
        assert!(Bm25::new(Bm25Params { k1: 1.0, b: -0.1 }).is_err());
    }

    #[test]
    fn scores_match_the_formula() {
        let mut index = Bm25::new(Bm25Params { k1: 1.2, b: 0.75 }).unwrap();
        index.add(&terms("a b c"));
        index.add(&terms("a a d"));
        index.add(&terms("e"));
        // N = 3, avgdl = 7/3; "a" in 2 slots.
        let idf = (1.0f64 + (3.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
        let avgdl = 7.0 / 3.0;
        let expect = |tf: f64, len: f64| idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avgdl));
        let hits = index.search(&terms("a"), 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].0, 1);
        assert!((hits[0].1 as f64 - expect(2.0, 3.0)).abs() < 1e-5);
        assert!((hits[1].1 as f64 - expect(1.0, 3.0)).abs() < 1e-5);
        assert!(index.search(&terms("zzz"), 10).is_empty());
        assert!(index.search(&terms("a"), 0).is_empty());
        assert_eq!(index.search(&terms("a e"), 1).len(), 1);
    }

    #[test]
    fn weighted_scores_scale_each_term() {
        let mut index = Bm25::new(Bm25Params::default()).unwrap();
        index.add(&terms("a b c"));
        index.add(&terms("a a d"));
        index.add(&terms("b e"));
        let a = index.scores(&terms("a"));
        let b = index.scores(&terms("b"));
        let w = index.weighted_scores(&[("a".into(), 0.5), ("b".into(), 2.0), ("zz".into(), 9.0)]);
        for slot in 0..3 {
            assert!(
                (w[slot] - (0.5 * a[slot] + 2.0 * b[slot])).abs() < 1e-6,
                "{w:?}"
            );
        }
        // Weight 1 is the plain score, bit for bit.
        assert_eq!(index.weighted_scores(&[("a".into(), 1.0)]), a);
        let hits = index.search_weighted(&[("a".into(), 0.5), ("b".into(), 2.0)], 2);
        // b weighs four times a: the two slots with b lead the one with a twice.
        let mut slots: Vec<u32> = hits.iter().map(|h| h.0).collect();
        slots.sort_unstable();
        assert_eq!(slots, [0, 2]);
        assert!(index.search_weighted(&[("a".into(), 1.0)], 0).is_empty());
    }

    #[test]
    fn ties_by_slot() {
        let mut index = Bm25::new(Bm25Params::default()).unwrap();
        for _ in 0..5 {
            index.add(&terms("x y"));
        }
        let hits = index.search(&terms("x"), 3);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn retain_equals_never_added() {
        let docs = ["a b", "c d d", "a e", "f", "b b g"];
        let keep = [true, false, true, false, true];
        let mut all = Bm25::new(Bm25Params::default()).unwrap();
        let mut some = Bm25::new(Bm25Params::default()).unwrap();
        for (d, k) in docs.iter().zip(keep) {
            all.add(&terms(d));
            if k {
                some.add(&terms(d));
            }
        }
        all.retain(&keep);
        assert_eq!(all, some);
        assert_eq!(
            postcard::to_allocvec(&all).unwrap(),
            postcard::to_allocvec(&some).unwrap()
        );
    }
}
