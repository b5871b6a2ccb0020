//! The core compiled to wasm32, run by wasm-bindgen-test in Node and in headless Chrome:
//!
//! ```text
//! wasm-pack test --node --release -- --test wasm
//! WASM_BINDGEN_USE_BROWSER=1 wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver --release -- --test wasm
//! ```
//!
//! The same fixtures as the native tests, so a difference between the builds shows here.
#![cfg(target_arch = "wasm32")]

use condense::compress::{compress_json, uncompress_json, CompressOptions};
use condense::message::{validate_json, ValidateOptions};
use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};
use serde_json::Value;
use wasm_bindgen_test::wasm_bindgen_test;

const SESSIONS: &str = include_str!("fixtures/watermark_sessions_dev.jsonl");
const SHAREGPT: &str = include_str!("fixtures/sharegpt_sample.jsonl");

fn records(data: &str) -> Vec<Value> {
    data.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("fixture line"))
        .collect()
}

#[wasm_bindgen_test]
fn watermark_dev_sessions() {
    for record in records(SESSIONS) {
        let messages = serde_json::to_string(&record["messages"]).unwrap();
        let out = apply_watermark_json(
            &messages,
            &WatermarkState::default(),
            &WatermarkOptions::default(),
        )
        .expect("apply");
        assert_eq!(
            out.state.watermark.as_deref(),
            record["expected"]["watermark"].as_str(),
            "{}",
            record["id"]
        );
        let report = validate_json(&out.json, &ValidateOptions::default()).expect("validate");
        assert!(report.valid, "{}: {:?}", record["id"], report.violations);
        assert!(out.stats.chars_after <= out.stats.chars_before);
    }
}

#[wasm_bindgen_test]
fn compress_round_trip() {
    for record in records(SHAREGPT) {
        let messages = serde_json::to_string(&record["messages"]).unwrap();
        let out = compress_json(&messages, &CompressOptions::default()).expect("compress");
        assert!(out.stats.tokens_after <= out.stats.tokens_before);
        let back = uncompress_json(&out.json, &out.verbatim).expect("uncompress");
        assert_eq!(back, messages, "{}", record["id"]);
    }
}

/// The opt-in classification stages in wasm: a correction supersedes, quotes survive,
/// importance keeps, minConfidence is checked; the round trip stays byte-identical.
#[wasm_bindgen_test]
fn classification_stages() {
    let filler = |i: usize| {
        format!(
            r#"{{"role": "{}", "content": "Message {i} talks about the weather and general plans for the week ahead, nothing in particular, just chatting along."}}"#,
            if i.is_multiple_of(2) {
                "user"
            } else {
                "assistant"
            }
        )
    };
    let mut parts = vec![
        r#"{"role": "user", "content": "Deploy the billing service on port 8000 behind the nginx proxy, with TLS terminated at the proxy and health checks on /healthz every ten seconds."}"#.to_string(),
        filler(1),
        r#"{"role": "user", "content": "Actually, use port 8080 not 8000 for the billing service: nginx already listens on 8000 on that host, and the health checks stay as they are."}"#.to_string(),
    ];
    parts.extend((3..8).map(filler));
    let messages = format!("[{}]", parts.join(","));
    let options = CompressOptions::from_json(
        r#"{"contradictionDetection": true, "preserveQuotes": true, "importanceScoring": true, "trace": true}"#,
    )
    .expect("options");
    let out = compress_json(&messages, &options).expect("compress");
    assert_eq!(out.stats.superseded, 1);
    let trace = out.trace.expect("trace");
    assert!(trace.iter().any(|d| d.index == 0
        && d.action == "superseded"
        && d.reason.starts_with("corrected by message 2")));
    assert_eq!(
        uncompress_json(&out.json, &out.verbatim).expect("uncompress"),
        messages
    );
    let e = CompressOptions::from_json(r#"{"minConfidence": 2}"#).unwrap_err();
    assert_eq!(
        (e.code(), e.path()),
        ("invalid_options", "options.minConfidence")
    );
}

#[wasm_bindgen_test]
fn errors_are_values_not_traps() {
    let st = WatermarkState::default();
    let opts = WatermarkOptions::default();
    let e = apply_watermark_json("[{\"role\": 1}]", &st, &opts).unwrap_err();
    assert_eq!(
        (e.code(), e.path()),
        ("invalid_message", "messages[0].role")
    );
    let e = apply_watermark_json("{", &st, &opts).unwrap_err();
    assert_eq!(e.code(), "invalid_json");
    let e = WatermarkOptions::from_json(r#"{"keepLast": 1}"#).unwrap_err();
    assert_eq!(e.code(), "invalid_options");
    // Deep nesting is refused by the parser's limit, not by a stack overflow.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert_eq!(
        validate_json(&deep, &ValidateOptions::default())
            .unwrap_err()
            .code(),
        "invalid_json"
    );
    // And the module still works.
    assert!(apply_watermark_json("[]", &st, &opts).is_ok());
}

const RETRIEVAL_DOCS: &str = include_str!("fixtures/retrieval/docs.jsonl");
const RETRIEVAL_QUERIES: &str = include_str!("fixtures/retrieval/queries.jsonl");

/// A small real index in wasm: build, query, serialize, read back, remove. The rankings must be
/// those of the native build (tests/parity/query.mjs compares them byte for byte).
#[wasm_bindgen_test]
fn retrieval_index_end_to_end() {
    use condense::embed::Embedder;
    use condense::retrieve::index::{Document, Index, IndexOptions};
    use condense::retrieve::options::QueryOptions;

    let docs: Vec<Document> = RETRIEVAL_DOCS
        .lines()
        .take(40)
        .map(|l| condense::error::read_json(l, condense::ErrorKind::InvalidInput, "doc").unwrap())
        .collect();
    let e = Embedder::lexical();
    let mut index = Index::new(&e, IndexOptions::default()).unwrap();
    let mut phases = Vec::new();
    index.add(&docs, &e, &mut |p| phases.push(p.phase)).unwrap();
    assert!(phases.contains(&"embed"));
    assert_eq!(index.len(), 40);
    let bytes = index.serialize().unwrap();
    let back = Index::deserialize(&bytes).unwrap();
    for q in records(RETRIEVAL_QUERIES) {
        let q = q["text"].as_str().unwrap();
        let a = index.query(q, &QueryOptions::default(), &e).unwrap();
        let b = back.query(q, &QueryOptions::default(), &e).unwrap();
        assert_eq!(a, b);
        assert!(a.results.iter().all(|r| (0.0..=1.0).contains(&r.score)));
    }
    assert_eq!(index.remove(&[docs[0].id.as_str()]).unwrap(), 1);
    assert_eq!(
        Index::deserialize(&bytes[..10]).err().map(|e| e.code()),
        Some("invalid_index")
    );
}

/// MiniLM run by tract compiled to wasm32, on the real model bytes (`scripts/fetch-models`),
/// against the onnxruntime reference vectors: a few texts only (wasm inference is slow).
#[cfg(feature = "embed")]
mod minilm {
    use condense::embed::{cosine, Embedder, EmbedderKind};
    use condense::ErrorKind;
    use serde_json::Value;
    use wasm_bindgen_test::wasm_bindgen_test;

    const MODEL: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/model.onnx"));
    const TOKENIZER: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/tokenizer.json"
    ));
    const REFERENCE: &str = include_str!("fixtures/embed/reference.json");

    #[wasm_bindgen_test]
    fn minilm_matches_onnxruntime_in_wasm() {
        let embedder = Embedder::from_bytes(MODEL, TOKENIZER).expect("model loads in wasm");
        assert_eq!(embedder.kind(), EmbedderKind::MiniLm);
        assert!(embedder.load_info().expect("load info").casts_folded > 0);
        let reference: Value = serde_json::from_str(REFERENCE).expect("reference fixture");
        let cases = reference["cases"].as_array().expect("cases");
        // Short, medium and the longest (truncated) texts, plus an empty one if present.
        let mut picked: Vec<&Value> = cases.iter().take(2).collect();
        picked.extend(cases.iter().rev().take(2));
        let texts: Vec<&str> = picked
            .iter()
            .map(|c| c["text"].as_str().expect("text"))
            .collect();
        let vectors = embedder.embed(&texts).expect("embed");
        for (case, v) in picked.iter().zip(&vectors) {
            let want: Vec<f32> = case["vector"]
                .as_array()
                .expect("vector")
                .iter()
                .map(|x| x.as_f64().expect("number") as f32)
                .collect();
            let c = cosine(v, &want);
            assert!(c >= 0.9999, "{}: cosine {c} to onnxruntime", case["name"]);
        }
        // Alone or in a batch: the same vector.
        let alone = embedder.embed_one(texts[0]).expect("embed one");
        assert!(cosine(&alone, &vectors[0]) >= 0.99999);
    }

    #[wasm_bindgen_test]
    fn wrong_model_bytes_are_a_typed_error_in_wasm() {
        let err = Embedder::from_bytes(&MODEL[..MODEL.len() / 3], TOKENIZER)
            .expect_err("truncated model");
        assert_eq!(err.kind(), ErrorKind::InvalidModel);
        let err = Embedder::from_bytes(b"not a model", TOKENIZER).expect_err("junk");
        assert_eq!(err.kind(), ErrorKind::InvalidModel);
    }
}
