//! Pseudo-relevance feedback on the lexical side (RM3-style expansion).
//!
//! `query` fuses BM25 and the dense list once ([`fuse`](super::fuse)); the top
//! [`FEEDBACK_CHUNKS`] chunks of that first fusion are taken as relevant, and the
//! `feedbackTerms` most probable terms of their relevance model
//!
//! ```text
//! p(t) = 1/|F| · Σ_{d ∈ F} tf(t, d) / |d|        (F: the feedback chunks, |d| in terms)
//! ```
//!
//! weighted by `p(t)` (normalised to sum 1), make a second, expanded BM25 query
//! ([`Bm25::search_weighted`](super::bm25::Bm25::search_weighted), scored from the terms'
//! postings only). Its list is fused as a third list of the convex fusion, beside the plain
//! BM25 and dense lists (it adds to them, it does not replace the question's own terms: the
//! expansion terms come from the fused top, which the dense side chose as much as BM25, so they
//! bring the words of the documents the question means but does not say). The expanded list is
//! not evidence for calibrated scores: those stay the question's own BM25 and dense evidence,
//! so `minScore` keeps its meaning. Measured on the dev IR sets in docs/benchmarks.md, "query".
//!
//! Terms are the analyser's (stop words removed, stemmed), as the index stores them; sums are
//! `f64` in a fixed order and ties go by term, so every platform picks the same terms with the
//! same weights.

use std::collections::BTreeMap;

/// How many chunks of the first fusion are taken as relevant.
pub const FEEDBACK_CHUNKS: usize = 10;

/// How many expansion terms the expanded query has by default (`feedbackTerms`).
pub const DEFAULT_FEEDBACK_TERMS: usize = 10;

/// The `n` most probable terms of the relevance model of `feedback` (each chunk's analysed
/// terms, repetitions kept), with their probabilities normalised to sum 1: `(term, weight)`
/// by weight descending, ties by term. Empty chunks count in `|F|` but add no terms; no
/// chunks or `n` 0 give no terms.
pub fn expansion_terms(feedback: &[Vec<String>], n: usize) -> Vec<(String, f32)> {
    if feedback.is_empty() || n == 0 {
        return Vec::new();
    }
    let share = 1.0 / feedback.len() as f64;
    let mut model: BTreeMap<&str, f64> = BTreeMap::new();
    for terms in feedback {
        if terms.is_empty() {
            continue;
        }
        let each = share / terms.len() as f64;
        for t in terms {
            *model.entry(t.as_str()).or_insert(0.0) += each;
        }
    }
    let mut best: Vec<(&str, f64)> = model.into_iter().collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    best.truncate(n);
    let total: f64 = best.iter().map(|b| b.1).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    best.into_iter()
        .map(|(t, p)| (t.to_string(), (p / total) as f32))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_relevance_model_weighs_terms_by_their_share_of_each_chunk() {
        // p(a) = (2/4 + 1/2) / 2 = 0.5; p(b) = (1/4) / 2 = 0.125; p(c) = (1/4) / 2; p(d) =
        // (1/2) / 2 = 0.25. Top 3: a, d, then b (tied with c, ahead by term).
        let fb = [terms("a a b c"), terms("a d")];
        let got = expansion_terms(&fb, 3);
        let names: Vec<&str> = got.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(names, ["a", "d", "b"]);
        let total: f32 = got.iter().map(|t| t.1).sum();
        assert!((total - 1.0).abs() < 1e-6);
        assert!((got[0].1 - 0.5 / 0.875).abs() < 1e-6, "{got:?}");
        assert!((got[1].1 - 0.25 / 0.875).abs() < 1e-6);
    }

    #[test]
    fn nothing_to_learn_from_gives_no_terms() {
        assert!(expansion_terms(&[], 10).is_empty());
        assert!(expansion_terms(&[terms("a")], 0).is_empty());
        assert!(expansion_terms(&[Vec::new(), Vec::new()], 10).is_empty());
        // An empty chunk still counts in |F|: the other's terms keep their order and sum to 1.
        let got = expansion_terms(&[Vec::new(), terms("x y y")], 10);
        assert_eq!(
            got.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
            ["y", "x"]
        );
    }
}
