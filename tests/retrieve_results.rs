//! Laws of result compression (`compress_results`) over generated ranked candidates.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use condense::embed::{cosine, Embedder};
use condense::retrieve::classify::QueryKind;
use condense::retrieve::options::{QueryOptions, ResultFormat};
use condense::retrieve::results::{
    compress_results, jaccard, shingles, Candidate, QueryResult, SearchResult, ELLIPSIS,
};
use condense::text::{count_chars, estimate_tokens};
use proptest::prelude::*;

/// A small vocabulary, so that near-duplicates and shared shingles are common.
const WORDS: [&str; 14] = [
    "auth",
    "token",
    "config",
    "the",
    "user",
    "key",
    "rotate",
    "getUserById",
    "über",
    "日本",
    "v1.5",
    "deploy",
    "--flag",
    "https://example.com/a/very/long/path/to/a/page",
];
const SEPARATORS: [&str; 5] = [" ", " ", "  ", "\n", "\n\n"];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec((0..WORDS.len(), 0..SEPARATORS.len()), 0..40).prop_map(|parts| {
        let mut s = String::new();
        for (i, (w, sep)) in parts.into_iter().enumerate() {
            if i > 0 {
                s.push_str(SEPARATORS.get(sep).copied().unwrap_or(" "));
            }
            s.push_str(WORDS.get(w).copied().unwrap_or("x"));
        }
        s
    })
}

/// One generated candidate before ids are assigned: doc, score, content or "copy of an
/// earlier one", optional path and headers.
type Raw = (u8, f32, Option<usize>, String, bool, Vec<String>);

fn raw() -> impl Strategy<Value = Raw> {
    (
        0u8..4,
        0.0f32..=1.0,
        prop::option::weighted(0.3, 0usize..64),
        text(),
        any::<bool>(),
        prop::collection::vec("[A-Z][a-z]{0,8}", 0..3),
    )
}

/// Ranked candidates (scores descending, ties kept in generation order), with unique chunk
/// ids `c0, c1, …`; with `dims`, every candidate gets a small vector.
fn candidates() -> impl Strategy<Value = Vec<Candidate>> {
    (
        prop::collection::vec(raw(), 0..24),
        prop::option::of(prop::collection::vec(
            prop::collection::vec(-1.0f32..1.0, 3),
            24,
        )),
    )
        .prop_map(|(raws, vectors)| {
            let mut out: Vec<Candidate> = Vec::new();
            for (i, (doc, score, copy, content, has_path, headers)) in raws.into_iter().enumerate()
            {
                let content = match copy.and_then(|c| out.get(c % (out.len().max(1)))) {
                    Some(earlier) => earlier.content.clone(),
                    None => content,
                };
                out.push(Candidate {
                    chunk_id: format!("c{i}"),
                    doc_id: format!("d{doc}"),
                    path: has_path.then(|| format!("docs/d{doc}.md")),
                    header_path: headers,
                    score,
                    content,
                    vector: vectors.as_ref().and_then(|v| v.get(i).cloned()),
                });
            }
            // Best first; a stable sort keeps ties in generation order.
            out.sort_by(|a, b| b.score.total_cmp(&a.score));
            out
        })
}

fn options() -> impl Strategy<Value = QueryOptions> {
    (
        (
            prop_oneof![Just(0.0), Just(0.3), Just(0.5)],
            prop_oneof![Just(0.0), Just(0.5), Just(0.7), Just(1.0)],
            1usize..=4,
            prop_oneof![Just(0.5), Just(0.85), Just(1.0)],
            0usize..4,
        ),
        (
            1usize..10,
            any::<bool>(),
            20usize..80,
            prop_oneof![
                Just(ResultFormat::Compact),
                Just(ResultFormat::Verbose),
                Just(ResultFormat::Json)
            ],
            prop::option::of(prop_oneof![
                Just(QueryKind::Factual),
                Just(QueryKind::Conceptual)
            ]),
        ),
    )
        .prop_map(
            |(
                (min_score, ngram_threshold, ngram_size, similarity_threshold, max_chunks_per_doc),
                (top_n, truncate, truncate_chars, format, query_kind),
            )| QueryOptions {
                min_score,
                ngram_threshold,
                ngram_size,
                similarity_threshold,
                max_chunks_per_doc,
                top_n,
                truncate,
                truncate_chars,
                format,
                query_kind,
                ..QueryOptions::default()
            },
        )
}

fn question() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("getUserById function"),
        Just("why use JWT authentication?"),
        Just("deployment guide"),
        Just("how to rotate keys"),
    ]
}

fn run(cands: &[Candidate], question: &str, options: &QueryOptions) -> QueryResult {
    match compress_results(cands.to_vec(), question, options, &Embedder::lexical()) {
        Ok(out) => out,
        Err(e) => panic!("{e}"),
    }
}

/// Index of each result's candidate in the input (chunk ids are unique).
fn positions(cands: &[Candidate], results: &[SearchResult]) -> Vec<usize> {
    results
        .iter()
        .map(|r| {
            cands
                .iter()
                .position(|c| c.chunk_id == r.chunk_id)
                .unwrap_or(usize::MAX)
        })
        .collect()
}

fn off(top_n: usize) -> QueryOptions {
    QueryOptions {
        min_score: 0.0,
        ngram_threshold: 1.0,
        similarity_threshold: 1.0,
        max_chunks_per_doc: 0,
        top_n,
        truncate: false,
        ..QueryOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn stats_add_up(cands in candidates(), q in question(), o in options()) {
        let out = run(&cands, q, &o);
        let s = &out.stats;
        prop_assert_eq!(s.candidates, cands.len());
        prop_assert_eq!(s.candidates, s.after_min_score + s.removed_by_min_score);
        prop_assert_eq!(s.after_min_score, s.after_ngram_dedup + s.removed_as_near_duplicate);
        prop_assert_eq!(s.after_ngram_dedup, s.after_semantic_dedup + s.removed_as_semantic_duplicate);
        prop_assert_eq!(s.after_semantic_dedup, s.after_per_doc_limit + s.removed_by_per_doc_limit);
        prop_assert_eq!(s.after_per_doc_limit, s.returned + s.removed_by_top_n);
        prop_assert_eq!(s.returned, out.results.len());
        prop_assert!(s.returned <= o.top_n);
        prop_assert_eq!(s.truncated, out.results.iter().filter(|r| r.truncated).count());
        // The usual names (docs/design.md, "Result compression").
        prop_assert_eq!(s.original_count, s.candidates);
        prop_assert_eq!(s.after_threshold, s.after_min_score);
        prop_assert_eq!(s.after_dedup, s.after_semantic_dedup);
        prop_assert_eq!(s.clusters_merged, s.after_threshold - s.after_dedup);
        // Sizes.
        prop_assert_eq!(s.chars_before, cands.iter().map(|c| count_chars(&c.content)).sum::<usize>());
        prop_assert_eq!(s.tokens_before, cands.iter().map(|c| estimate_tokens(&c.content)).sum::<usize>());
        prop_assert_eq!(s.chars_after, out.results.iter().map(|r| count_chars(&r.content)).sum::<usize>());
        prop_assert_eq!(s.tokens_after, out.results.iter().map(|r| estimate_tokens(&r.content)).sum::<usize>());
        prop_assert!(s.reduction_percent.is_finite() && s.reduction_percent <= 100.0);
        if s.truncated == 0 {
            prop_assert!(s.chars_after <= s.chars_before && s.tokens_after <= s.tokens_before);
            prop_assert!(s.reduction_percent >= 0.0);
        }
    }

    #[test]
    fn output_is_deterministic(cands in candidates(), q in question(), o in options()) {
        let a = run(&cands, q, &o);
        let b = run(&cands, q, &o);
        prop_assert_eq!(&a, &b);
        let ja = serde_json::to_string(&a).unwrap_or_default();
        let jb = serde_json::to_string(&b).unwrap_or_default();
        prop_assert_eq!(ja, jb);
    }

    #[test]
    fn results_are_an_ordered_subsequence_of_the_input(
        cands in candidates(), q in question(), o in options()
    ) {
        let out = run(&cands, q, &o);
        let pos = positions(&cands, &out.results);
        prop_assert!(pos.windows(2).all(|w| w[0] < w[1]), "{:?}", pos);
        for (r, &p) in out.results.iter().zip(&pos) {
            let c = &cands[p];
            prop_assert_eq!(&r.doc_id, &c.doc_id);
            prop_assert_eq!(&r.path, &c.path);
            prop_assert_eq!(&r.header_path, &c.header_path);
            prop_assert_eq!(r.score, c.score);
            prop_assert!(f64::from(r.score) >= o.min_score);
            if !r.truncated {
                prop_assert_eq!(&r.content, &c.content);
            }
        }
    }

    #[test]
    fn disabling_compression_returns_the_first_top_n(
        cands in candidates(), q in question(), top_n in 1usize..30
    ) {
        let out = run(&cands, q, &off(top_n));
        prop_assert_eq!(out.results.len(), cands.len().min(top_n));
        for (r, c) in out.results.iter().zip(&cands) {
            prop_assert_eq!(&r.chunk_id, &c.chunk_id);
            prop_assert_eq!(&r.doc_id, &c.doc_id);
            prop_assert_eq!(&r.path, &c.path);
            prop_assert_eq!(&r.header_path, &c.header_path);
            prop_assert_eq!(r.score, c.score);
            prop_assert_eq!(&r.content, &c.content);
            prop_assert!(!r.truncated);
        }
    }

    #[test]
    fn never_more_than_max_chunks_per_doc(cands in candidates(), q in question(), o in options()) {
        let out = run(&cands, q, &o);
        if o.max_chunks_per_doc > 0 {
            let mut per_doc: BTreeMap<&str, usize> = BTreeMap::new();
            for r in &out.results {
                *per_doc.entry(r.doc_id.as_str()).or_insert(0) += 1;
            }
            prop_assert!(per_doc.values().all(|&n| n <= o.max_chunks_per_doc), "{:?}", per_doc);
        }
    }

    #[test]
    fn kept_results_are_not_duplicates_of_each_other(
        cands in candidates(), q in question(), o in options()
    ) {
        let out = run(&cands, q, &o);
        let originals: Vec<&Candidate> =
            positions(&cands, &out.results).into_iter().map(|p| &cands[p]).collect();
        let embedder = Embedder::lexical();
        for (i, a) in originals.iter().enumerate() {
            for b in originals.iter().skip(i + 1) {
                if o.ngram_threshold < 1.0 {
                    let j = jaccard(&shingles(&a.content, o.ngram_size), &shingles(&b.content, o.ngram_size));
                    prop_assert!(j < o.ngram_threshold, "jaccard {} of {:?} and {:?}", j, a.content, b.content);
                }
                if o.similarity_threshold < 1.0 {
                    let va = a.vector.clone().unwrap_or_else(|| embedder.embed_one(&a.content).map(|v| v.to_vec()).unwrap_or_default());
                    let vb = b.vector.clone().unwrap_or_else(|| embedder.embed_one(&b.content).map(|v| v.to_vec()).unwrap_or_default());
                    let cos = f64::from(cosine(&va, &vb));
                    prop_assert!(cos < o.similarity_threshold, "cosine {}", cos);
                }
            }
        }
    }

    #[test]
    fn truncation_is_a_word_boundary_prefix(cands in candidates(), q in question(), o in options()) {
        let out = run(&cands, q, &o);
        let pos = positions(&cands, &out.results);
        let may_truncate = o.truncate && out.query_kind == QueryKind::Factual;
        for (r, &p) in out.results.iter().zip(&pos) {
            let original = &cands[p].content;
            if !r.truncated {
                prop_assert_eq!(&r.content, original);
                continue;
            }
            prop_assert!(may_truncate);
            let prefix = r.content.strip_suffix(ELLIPSIS);
            prop_assert!(prefix.is_some(), "{:?}", r.content);
            let prefix = prefix.unwrap_or_default();
            prop_assert!(!prefix.trim().is_empty());
            prop_assert!(original.starts_with(prefix));
            prop_assert!(!prefix.ends_with(char::is_whitespace));
            // The cut is at a word boundary: white space follows in the original, and
            // something other than white space is cut away.
            let rest = &original[prefix.len()..];
            prop_assert!(rest.starts_with(char::is_whitespace), "{:?}", rest);
            prop_assert!(!rest.trim().is_empty());
            // At most truncateChars, unless the first word alone is longer.
            let within = count_chars(prefix) <= o.truncate_chars;
            let first_word = !prefix.trim_start().contains(char::is_whitespace);
            prop_assert!(within || first_word, "{} chars: {:?}", count_chars(prefix), prefix);
            // Only content longer than the limit is truncated.
            prop_assert!(count_chars(original) > o.truncate_chars);
        }
    }

    #[test]
    fn text_follows_the_format(cands in candidates(), q in question(), o in options()) {
        let out = run(&cands, q, &o);
        match o.format {
            ResultFormat::Json => {
                let back: Vec<SearchResult> = serde_json::from_str(&out.text).unwrap_or_default();
                prop_assert_eq!(&back, &out.results);
            }
            ResultFormat::Compact => {
                prop_assert_eq!(out.text.is_empty(), out.results.is_empty());
                if !out.results.is_empty() {
                    prop_assert!(out.text.starts_with("[1] "));
                }
                for r in &out.results {
                    let score = format!("({:.2})", r.score);
                    prop_assert!(out.text.contains(&score));
                    prop_assert!(out.text.contains(&r.content));
                }
            }
            ResultFormat::Verbose => {
                prop_assert_eq!(out.text.is_empty(), out.results.is_empty());
                for (i, r) in out.results.iter().enumerate() {
                    let header = format!("**Result {}** (Score: {:.4})", i + 1, r.score);
                    prop_assert!(out.text.contains(&header));
                    let chunk = format!("Chunk: {}", r.chunk_id);
                    prop_assert!(out.text.contains(&chunk));
                }
            }
        }
    }

    #[test]
    fn candidates_round_trip_through_json(cands in candidates()) {
        let json = serde_json::to_string(&cands).unwrap_or_default();
        let back = Candidate::list_from_json(&json);
        prop_assert_eq!(back.ok(), Some(cands));
    }
}

/// The generators above reach every stage: over a fixed sample, each stage removes something
/// and truncation happens (otherwise the laws would hold vacuously).
#[test]
fn generated_cases_exercise_every_stage() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRng, TestRunner};

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let strategy = (candidates(), question(), options());
    let mut totals = [0usize; 6];
    for _ in 0..200 {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let (cands, q, o) = tree.current();
        let s = run(&cands, q, &o).stats;
        for (t, n) in totals.iter_mut().zip([
            s.removed_by_min_score,
            s.removed_as_near_duplicate,
            s.removed_as_semantic_duplicate,
            s.removed_by_per_doc_limit,
            s.removed_by_top_n,
            s.truncated,
        ]) {
            *t += n;
        }
    }
    assert!(totals.iter().all(|&n| n > 0), "{totals:?}");
}
