//! The lexical side of retrieval: chunker, analyser and BM25 (properties and examples).
#![cfg(not(target_arch = "wasm32"))]

use condense::retrieve::analyze::{is_english_stop_word, Analyzer};
use condense::retrieve::bm25::{Bm25, Bm25Params};
use condense::retrieve::chunk::{chunk_document, ChunkOptions};
use condense::retrieve::Chunk;
use condense::text::fences::{self, Segment};
use proptest::prelude::*;

fn opts(min: usize, max: usize) -> ChunkOptions {
    ChunkOptions {
        min_chars: min,
        max_chars: max,
    }
}

fn non_ws(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Byte ranges of the chunks in the document (each must be a slice found after the previous).
fn chunk_ranges(doc: &str, chunks: &[Chunk]) -> Vec<std::ops::Range<usize>> {
    let mut pos = 0;
    let mut out = Vec::new();
    for c in chunks {
        let at = doc[pos..]
            .find(&c.text)
            .unwrap_or_else(|| panic!("chunk {:?} is not a slice after byte {pos}", c.id))
            + pos;
        // Only white space may lie between chunks.
        assert!(
            doc[pos..at].trim().is_empty(),
            "text skipped before {}",
            c.id
        );
        out.push(at..at + c.text.len());
        pos = at + c.text.len();
    }
    assert!(doc[pos..].trim().is_empty(), "text skipped at the end");
    out
}

/// Trimmed byte ranges of the code fences of `doc`.
fn fence_ranges(doc: &str) -> Vec<std::ops::Range<usize>> {
    let mut pos = 0;
    let mut out = Vec::new();
    for seg in fences::split(doc) {
        let (s, code) = match seg {
            Segment::Prose(p) => (p, false),
            Segment::Code(c) => (c, true),
        };
        if code && !s.trim().is_empty() {
            let lead = s.len() - s.trim_start().len();
            out.push(pos + lead..pos + lead + s.trim().len());
        }
        pos += s.len();
    }
    out
}

/// Checks every documented guarantee of `chunk_document` on one document.
fn check_chunks(doc: &str, o: &ChunkOptions) {
    let chunks = chunk_document("doc", Some("p.md"), doc, o);
    assert_eq!(
        chunks,
        chunk_document("doc", Some("p.md"), doc, o),
        "deterministic"
    );
    if doc.trim().is_empty() {
        assert!(chunks.is_empty());
        return;
    }
    if doc.trim().chars().count() < o.min_chars {
        assert_eq!(chunks.len(), 1, "short document is one chunk");
    }
    // Ids, ordinals, trimmed texts.
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.id, format!("doc#{i}"));
        assert_eq!(c.ordinal as usize, i);
        assert_eq!(c.doc_id, "doc");
        assert_eq!(c.path.as_deref(), Some("p.md"));
        assert_eq!(c.text, c.text.trim());
        assert!(!c.text.is_empty());
    }
    // Coverage: slices in order, all non-white-space exactly once.
    let ranges = chunk_ranges(doc, &chunks);
    let joined: String = chunks.iter().map(|c| non_ws(&c.text)).collect();
    assert_eq!(joined, non_ws(doc));
    // Fences: each whole inside exactly one chunk.
    let fence_list = fence_ranges(doc);
    for f in &fence_list {
        let holders = ranges
            .iter()
            .filter(|r| r.start <= f.start && f.end <= r.end)
            .count();
        assert_eq!(
            holders,
            1,
            "fence {:?} split: {:?}",
            &doc[f.clone()],
            chunks
        );
    }
    // Sizes: at most max_chars, except a chunk holding an oversized fence, or a header glued
    // to a unit that alone fits max_chars.
    for (c, r) in chunks.iter().zip(&ranges) {
        let n = c.text.chars().count();
        if n <= o.max_chars {
            continue;
        }
        let big_fence = fence_list.iter().any(|f| {
            r.start <= f.start && f.end <= r.end && doc[f.clone()].chars().count() > o.max_chars
        });
        let first_line = c.text.lines().next().unwrap_or("");
        let header_glued = first_line.trim_start().starts_with('#')
            && c.text[first_line.len()..].trim().chars().count() <= o.max_chars;
        let second = c.text.lines().nth(1).unwrap_or("").trim();
        let setext_glued = (second.starts_with("==") || second.starts_with("--"))
            && c.text
                .splitn(3, '\n')
                .nth(2)
                .unwrap_or("")
                .trim()
                .chars()
                .count()
                <= o.max_chars;
        assert!(
            big_fence || header_glued || setext_glued,
            "chunk of {n} chars over max {}: {:?}",
            o.max_chars,
            c.text
        );
    }
}

#[test]
fn header_paths() {
    let para = |w: &str| format!("{} end.", vec![w; 60].join(" "));
    let doc = format!(
        "Preamble text before any header. {}\n\n# Guide\n\n{}\n\n## Install\n\n{}\n\n### Linux\n\n{}\n\n```sh\n# not a header\nmake\n```\n\n## Usage\n\n{}\n",
        para("pre"),
        para("intro"),
        para("install"),
        para("linux"),
        para("usage")
    );
    let chunks = chunk_document("g", None, &doc, &opts(200, 1500));
    let paths: Vec<Vec<&str>> = chunks
        .iter()
        .map(|c| c.header_path.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        paths,
        [
            vec![],
            vec!["Guide"],
            vec!["Guide", "Install"],
            vec!["Guide", "Install", "Linux"],
            vec!["Guide", "Usage"],
        ]
    );
    // The fence (with its "# not a header" line) stays in the Linux chunk.
    assert!(chunks[3].text.ends_with("make\n```"));
    check_chunks(&doc, &opts(200, 1500));
}

#[test]
fn small_sections_merge_under_their_common_parent() {
    let doc = "# Install\n\n## Linux\n\napt install x\n\n## Mac\n\nbrew install x\n\n# Other\n\n"
        .to_string()
        + &"Long text about other things. ".repeat(20);
    let chunks = chunk_document("d", None, &doc, &opts(200, 1500));
    // Everything fits one chunk of at most 1500 characters: one chunk, path = common prefix.
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].header_path.is_empty());
    let chunks = chunk_document("d", None, &doc, &opts(100, 620));
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].header_path, ["Install"]);
    assert!(chunks[0].text.ends_with("brew install x"));
    assert_eq!(chunks[1].header_path, ["Other"]);
}

#[test]
fn long_paragraphs_split_at_sentences_then_words() {
    let sentence = "The quick brown fox jumps over the lazy dog again and again. ";
    let doc = sentence.repeat(60);
    let chunks = chunk_document("d", None, &doc, &opts(200, 500));
    assert!(chunks.len() > 5);
    for c in &chunks {
        assert!(c.text.chars().count() <= 500);
        assert!(c.text.ends_with('.'), "cut at a sentence end: {:?}", c.text);
    }
    let words = "word ".repeat(1000);
    let chunks = chunk_document("d", None, &words, &opts(200, 500));
    for c in &chunks {
        assert!(c.text.chars().count() <= 500);
        assert!(c.text.split(' ').all(|w| w == "word"));
    }
    check_chunks(&doc, &opts(200, 500));
    check_chunks(&words, &opts(200, 500));
}

#[test]
fn oversized_fence_is_one_chunk() {
    let code = (0..200)
        .map(|i| format!("let x{i} = {i};"))
        .collect::<Vec<_>>()
        .join("\n");
    let doc = format!("# Code\n\nSome intro.\n\n```rust\n{code}\n```\n\nAfter the code.\n");
    let chunks = chunk_document("d", None, &doc, &opts(200, 1500));
    let fence = format!("```rust\n{code}\n```");
    assert_eq!(chunks.iter().filter(|c| c.text.contains(&fence)).count(), 1);
    check_chunks(&doc, &opts(200, 1500));
}

#[test]
fn plain_text_paragraphs_pack() {
    let doc = (0..20)
        .map(|i| format!("Paragraph {i} has a few words in it, enough to count."))
        .collect::<Vec<_>>()
        .join("\n\n");
    let chunks = chunk_document("d", None, &doc, &opts(200, 400));
    assert!(chunks.len() >= 3);
    for c in &chunks {
        assert!(c.header_path.is_empty());
        assert!(c.text.starts_with("Paragraph"));
        assert!(c.text.chars().count() <= 400);
    }
    check_chunks(&doc, &opts(200, 400));
}

#[test]
fn degenerate_options_do_not_panic() {
    for o in [opts(0, 0), opts(10, 1), opts(5000, 10)] {
        check_chunks_loose("# A\n\nxx yy\n\n```\ncode\n```\n", &o);
    }
    assert!(opts(0, 0).validate().is_err());
    assert!(opts(10, 5).validate().is_err());
    assert!(ChunkOptions::default().validate().is_ok());
}

/// Coverage and fences only (the size rule is stated for valid options).
fn check_chunks_loose(doc: &str, o: &ChunkOptions) {
    let chunks = chunk_document("d", None, doc, o);
    let _ = chunk_ranges(doc, &chunks);
    let joined: String = chunks.iter().map(|c| non_ws(&c.text)).collect();
    assert_eq!(joined, non_ws(doc));
}

/// Markdown-ish documents: headers, paragraphs, fences (with header-like lines), long words.
fn markdown_doc() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "alpha", "beta", "gamma", "delta", "x", "café", "naïve", "Über", "42", "e.g.", "end.",
        "Start", "foo_bar", "ÿ",
    ]);
    let sentence = prop::collection::vec(word, 1..30).prop_map(|w| format!("{}.", w.join(" ")));
    let paragraph = prop::collection::vec(sentence, 1..8).prop_map(|s| s.join(" "));
    let block = prop_oneof![
        4 => paragraph,
        1 => (1usize..7, "[A-Za-z ]{0,12}").prop_map(|(l, t)| format!("{} {}", "#".repeat(l), t)),
        1 => "[A-Za-z]{1,10}".prop_map(|t| format!("{t}\n===")),
        1 => (prop::collection::vec("[a-z#=\\- ]{0,40}", 0..40), prop::bool::ANY).prop_map(|(lines, closed)| {
            format!("```\n{}\n{}", lines.join("\n"), if closed { "```" } else { "" })
        }),
        1 => "[a-z]{100,2000}",
        1 => Just(String::from("  \n \t ")),
    ];
    prop::collection::vec(block, 0..25).prop_map(|b| b.join("\n\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn chunker_guarantees(doc in markdown_doc(), min in 0usize..400, extra in 1usize..1500) {
        check_chunks(&doc, &opts(min, min + extra));
    }

    #[test]
    fn chunker_on_arbitrary_text(doc in "(?s).{0,600}", max in 1usize..300) {
        check_chunks(&doc, &opts(max / 3, max));
    }

    #[test]
    fn analyser_invariants(text in "(?s).{0,300}") {
        let a = Analyzer::english();
        let terms = a.terms(&text);
        prop_assert_eq!(&terms, &a.terms(&text));
        for t in &terms {
            prop_assert!(!t.is_empty());
            prop_assert!(!t.chars().any(char::is_whitespace));
            prop_assert_eq!(t.to_lowercase(), t.clone());
        }
    }

    #[test]
    fn bm25_retain_equals_never_added(
        docs in prop::collection::vec(prop::collection::vec(0u8..12, 0..15), 0..30),
        keep in prop::collection::vec(prop::bool::ANY, 0..35),
    ) {
        let terms = |d: &Vec<u8>| d.iter().map(|t| format!("t{t}")).collect::<Vec<_>>();
        let mut all = Bm25::new(Bm25Params::default()).unwrap();
        let mut kept = Bm25::new(Bm25Params::default()).unwrap();
        for (i, d) in docs.iter().enumerate() {
            prop_assert_eq!(all.add(&terms(d)) as usize, i);
            if keep.get(i).copied().unwrap_or(true) {
                kept.add(&terms(d));
            }
        }
        all.retain(&keep);
        prop_assert_eq!(&all, &kept);
        prop_assert_eq!(postcard::to_allocvec(&all).unwrap(), postcard::to_allocvec(&kept).unwrap());
        let back: Bm25 = postcard::from_bytes(&postcard::to_allocvec(&all).unwrap()).unwrap();
        prop_assert_eq!(&back, &all);
    }

    #[test]
    fn bm25_search_order(
        docs in prop::collection::vec(prop::collection::vec(0u8..8, 0..10), 0..40),
        query in prop::collection::vec(0u8..10, 0..5),
        k in 0usize..50,
    ) {
        let terms = |d: &[u8]| d.iter().map(|t| format!("t{t}")).collect::<Vec<_>>();
        let mut index = Bm25::new(Bm25Params { k1: 0.9, b: 0.4 }).unwrap();
        for d in &docs {
            index.add(&terms(d));
        }
        let q = terms(&query);
        let full = index.search(&q, usize::MAX);
        let top = index.search(&q, k);
        prop_assert_eq!(&top[..], &full[..k.min(full.len())]);
        for w in full.windows(2) {
            prop_assert!(w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0));
        }
        let scores = index.scores(&q);
        for (slot, s) in &full {
            prop_assert!(*s > 0.0);
            prop_assert_eq!(scores[*slot as usize], *s);
        }
        prop_assert_eq!(full.len(), scores.iter().filter(|s| **s > 0.0).count());
    }
}

#[test]
fn analyser_examples() {
    let a = Analyzer::english();
    assert_eq!(
        a.terms("What is information science? Give definitions where possible."),
        ["inform", "scienc", "give", "definit", "possibl"]
    );
    assert_eq!(a.terms("In 1990, 3 systems"), ["1990", "3", "system"]);
    assert!(a
        .terms("the and of to in it's")
        .iter()
        .all(|t| !is_english_stop_word(t)));
    assert_eq!(a.terms("the and of to in it's"), Vec::<String>::new());
}

#[test]
fn bm25_end_to_end_with_analyser() {
    let a = Analyzer::english();
    let docs = [
        "Configuring authentication with OAuth tokens.",
        "The weather today is sunny.",
        "Authentication failures: check the token expiry.",
    ];
    let mut index = Bm25::new(Bm25Params::default()).unwrap();
    for d in docs {
        index.add(&a.terms(d));
    }
    let hits = index.search(&a.terms("authenticate token"), 10);
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.0 != 1));
    index.retain(&[false, true, true]);
    let hits = index.search(&a.terms("authenticate token"), 10);
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [1]);
}

#[test]
fn large_inputs_are_linear() {
    let started = std::time::Instant::now();
    let one_line = "abc ".repeat(250_000);
    let no_spaces = "x".repeat(1_000_000);
    let paragraphs = "A sentence here. Another one!\n\n".repeat(30_000);
    let headers = "# H\n## I\ntext\n".repeat(30_000);
    for doc in [&one_line, &no_spaces, &paragraphs, &headers] {
        let chunks = chunk_document("d", None, doc, &ChunkOptions::default());
        let joined: usize = chunks.iter().map(|c| non_ws(&c.text).len()).sum();
        assert_eq!(joined, non_ws(doc).len());
    }
    // Generous even for a debug build; quadratic behaviour would take minutes.
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}
