//! The index end to end with the lexical embedder: add, query, remove, serialize, bad input,
//! and the laws (add then remove = never added; serialize → deserialize = same results;
//! rankings deterministic).
#![cfg(not(target_arch = "wasm32"))]

use condense::embed::Embedder;
use condense::retrieve::index::{Document, Index, IndexOptions, MAX_DOCUMENT_BYTES};
use condense::retrieve::options::QueryOptions;
use condense::ErrorKind;
use proptest::prelude::*;

const DOCS: &[(&str, &str)] = &[
    (
        "auth.md",
        "# Configuration\n\n## Authentication\n\nSet `AUTH_TOKEN` in the environment. Tokens \
         expire after 24 hours; rotate them with `condense keys rotate`.\n\n## Logging\n\nLogs go \
         to stderr at level info. Set LOG_LEVEL=debug for more.",
    ),
    (
        "install.md",
        "# Install\n\nRun `npm install condense-ctx`. Node 18 or later is required. The wasm \
         module loads synchronously in Node and with top-level await in browsers.",
    ),
    (
        "faq.txt",
        "Why is my index empty? Documents without text produce no chunks.\n\nHow do I rotate \
         keys? Use the rotate command; old tokens stop working after one hour.",
    ),
    (
        "bread.txt",
        "Sourdough bread needs flour, water, salt and a starter. Bake at 250 degrees for 40 \
         minutes.",
    ),
];

fn docs() -> Vec<Document> {
    DOCS.iter()
        .map(|(id, text)| Document {
            path: Some(format!("docs/{id}")),
            ..Document::new(*id, *text)
        })
        .collect()
}

fn index_of(docs: &[Document]) -> Index {
    let e = Embedder::lexical();
    let mut index = Index::new(&e, IndexOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    index
        .add(docs, &e, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    index
}

fn plain() -> QueryOptions {
    QueryOptions {
        min_score: 0.0,
        ngram_threshold: 1.0,
        similarity_threshold: 1.0,
        max_chunks_per_doc: 0,
        top_n: 100,
        truncate: false,
        ..QueryOptions::default()
    }
}

fn ranking(index: &Index, q: &str, options: &QueryOptions) -> Vec<(String, f32)> {
    index
        .query(q, options, &Embedder::lexical())
        .unwrap_or_else(|e| panic!("{e}"))
        .results
        .into_iter()
        .map(|r| (r.chunk_id, r.score))
        .collect()
}

#[test]
fn finds_the_relevant_chunk_first_with_its_header_path() {
    let index = index_of(&docs());
    let out = index
        .query(
            "how do I rotate the auth token?",
            &QueryOptions::default(),
            &Embedder::lexical(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let first = out.results.first().unwrap_or_else(|| panic!("no results"));
    assert_eq!(first.doc_id, "auth.md");
    assert!(first.score > 0.3 && first.score <= 1.0, "{}", first.score);
    assert!(out.text.starts_with("[1] docs/auth.md"), "{}", out.text);
    assert!(out.results.iter().all(|r| r.doc_id != "bread.txt"));
}

#[test]
fn scores_are_calibrated_not_min_max() {
    let index = index_of(&docs());
    // Nothing in the corpus is about this: no result should look like a good match.
    let off_topic = ranking(&index, "quantum chromodynamics lattice", &plain());
    assert!(off_topic.iter().all(|(_, s)| *s < 0.3), "{off_topic:?}");
    let on_topic = ranking(&index, "sourdough bread flour starter", &plain());
    assert!(on_topic.first().map_or(0.0, |r| r.1) > 0.3, "{on_topic:?}");
    // Scores never increase down the list.
    assert!(on_topic.windows(2).all(|w| w[0].1 >= w[1].1));
}

#[test]
fn get_and_ids_and_sizes() {
    let index = index_of(&docs());
    assert_eq!(index.len(), 4);
    assert!(index.chunks() >= 4);
    let doc = index.get("auth.md").unwrap_or_else(|| panic!("missing"));
    assert_eq!(doc.path.as_deref(), Some("docs/auth.md"));
    assert!(doc.chunks.iter().all(|c| c.doc_id == "auth.md"));
    assert!(index.get("nope").is_none());
    assert_eq!(
        index.ids(),
        vec!["auth.md", "install.md", "faq.txt", "bread.txt"]
    );
}

#[test]
fn serialize_roundtrip_gives_identical_results() {
    let index = index_of(&docs());
    let bytes = index.serialize().unwrap_or_else(|e| panic!("{e}"));
    let back = Index::deserialize(&bytes).unwrap_or_else(|e| panic!("{e}"));
    for q in ["rotate keys", "install node", "bread"] {
        assert_eq!(ranking(&index, q, &plain()), ranking(&back, q, &plain()));
    }
    assert_eq!(back.serialize().unwrap_or_default(), bytes);
}

#[test]
fn corrupt_or_foreign_bytes_are_invalid_index_errors() {
    let bytes = index_of(&docs()).serialize().unwrap_or_default();
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    for bad in [
        &b""[..],
        b"CNDX",
        b"hello world, not an index",
        &bytes[..bytes.len() - 1],
        &flipped,
    ] {
        let err = Index::deserialize(bad).err().map(|e| e.kind());
        assert_eq!(err, Some(ErrorKind::InvalidIndex));
    }
    let mut version = bytes.clone();
    version[4] = 99;
    let err = Index::deserialize(&version).err();
    assert!(err.map(|e| e.reason().contains("version")).unwrap_or(false));
}

#[test]
fn bad_input_is_a_typed_error_and_leaves_the_index_unchanged() {
    let e = Embedder::lexical();
    let mut index = index_of(&docs());
    let before = index.serialize().unwrap_or_default();
    let dup = vec![Document::new("new", "text"), Document::new("new", "again")];
    let err = index.add(&dup, &e, &mut |_| {}).err();
    assert_eq!(err.as_ref().map(|e| e.path()), Some("documents[1].id"));
    let existing = vec![Document::new("auth.md", "again")];
    assert_eq!(
        index
            .add(&existing, &e, &mut |_| {})
            .err()
            .map(|e| e.kind()),
        Some(ErrorKind::InvalidInput)
    );
    let empty_id = vec![Document::new("", "x")];
    assert_eq!(
        index
            .add(&empty_id, &e, &mut |_| {})
            .err()
            .map(|e| e.path().to_string()),
        Some("documents[0].id".to_string())
    );
    let huge = vec![Document::new(
        "huge",
        "a ".repeat(MAX_DOCUMENT_BYTES / 2 + 1),
    )];
    assert_eq!(
        index.add(&huge, &e, &mut |_| {}).err().map(|e| e.kind()),
        Some(ErrorKind::TooLarge)
    );
    assert_eq!(index.serialize().unwrap_or_default(), before);
    let err = index.query("  ", &QueryOptions::default(), &e).err();
    assert_eq!(err.map(|e| e.path().to_string()), Some("question".into()));
}

#[test]
fn an_empty_index_answers_with_no_results() {
    let index = index_of(&[]);
    let out = index
        .query("anything", &QueryOptions::default(), &Embedder::lexical())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.results.is_empty());
    assert_eq!(out.stats.candidates, 0);
}

#[test]
fn documents_are_parsed_from_beir_lines() {
    let doc: Document = condense::error::read_json(
        r#"{"_id": "7", "title": "A title", "text": "Body."}"#,
        ErrorKind::InvalidInput,
        "doc",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doc.id, "7");
    let index = index_of(&[doc]);
    let got = index.get("7").unwrap_or_else(|| panic!("missing"));
    assert!(got.chunks[0].text.starts_with("A title"));
    let bad: Result<Document, _> =
        condense::error::read_json(r#"{"id": "x", "text": 5}"#, ErrorKind::InvalidInput, "doc");
    assert_eq!(
        bad.err().map(|e| e.path().to_string()),
        Some("doc.text".into())
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Adding documents and removing them again leaves exactly the index that never had them.
    #[test]
    fn add_then_remove_equals_never_added(extra in prop::collection::vec("[a-z ]{0,300}", 1..5), q in "[a-z]{3,8}( [a-z]{3,8}){0,3}") {
        let base = docs();
        let e = Embedder::lexical();
        let never = index_of(&base);
        let mut added = index_of(&base);
        let more: Vec<Document> = extra.iter().enumerate().map(|(i, t)| Document::new(format!("x{i}"), t.clone())).collect();
        added.add(&more, &e, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let ids: Vec<String> = (0..more.len()).map(|i| format!("x{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        prop_assert_eq!(added.remove(&refs).unwrap_or(0), more.len());
        prop_assert_eq!(ranking(&added, &q, &plain()), ranking(&never, &q, &plain()));
        prop_assert_eq!(added.ids(), never.ids());
    }

    /// The same corpus and question give the same output, and a serialized copy agrees.
    #[test]
    fn rankings_are_deterministic(texts in prop::collection::vec("[a-z ]{1,200}", 1..6), q in "[a-z]{3,8}( [a-z]{3,8}){0,2}") {
        let docs: Vec<Document> = texts.iter().enumerate().map(|(i, t)| Document::new(format!("d{i}"), t.clone())).collect();
        let a = index_of(&docs);
        let b = index_of(&docs);
        prop_assert_eq!(a.serialize().unwrap_or_default(), b.serialize().unwrap_or_default());
        let back = Index::deserialize(&a.serialize().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        let r = ranking(&a, &q, &QueryOptions::default());
        prop_assert_eq!(&r, &ranking(&back, &q, &QueryOptions::default()));
        prop_assert!(r.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
    }
}
