//! The core compiled to wasm32, run by wasm-bindgen-test in Node and in headless Chrome:
//!
//! ```text
//! wasm-pack test --node --release -- --test wasm --features test-hooks
//! WASM_BINDGEN_USE_BROWSER=1 wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver --release -- --test wasm --features test-hooks
//! ```
//!
//! The `test-hooks` feature (required by this target) adds `condense::embed::test_hooks`, the
//! bit-identity checks of the wasm kernels, which no shipped build carries.
//!
//! The same fixtures as the native tests, so a difference between the builds shows here.
#![cfg(target_arch = "wasm32")]

use condense::compress::{
    compress_json, prepare_context, uncompress_json, CompressCache, CompressContext,
    CompressOptions, PrepareContextOptions,
};
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

/// The word splitter's SIMD search (wasm only) finds the pieces `str::split` finds.
#[wasm_bindgen_test]
fn word_pieces_agree_with_split_in_wasm() {
    condense::text::keys::check_pieces(0x5eed, 3000).expect("same pieces");
    condense::text::keys::check_pieces(7, 3000).expect("same pieces");
}

#[wasm_bindgen_test]
fn compress_round_trip() {
    for record in records(SHAREGPT) {
        let messages = serde_json::to_string(&record["messages"]).unwrap();
        let out = compress_json(
            &messages,
            &CompressOptions::default(),
            CompressContext::new(),
        )
        .expect("compress");
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
    let out = compress_json(&messages, &options, CompressContext::new()).expect("compress");
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
fn cache_and_prefix_stable_in_wasm() {
    for record in records(SHAREGPT) {
        let all = record["messages"].as_array().unwrap().clone();
        let mut cache = CompressCache::new();
        let stable = CompressOptions {
            prefix_stable: true,
            ..CompressOptions::default()
        };
        let mut previous: Option<(Vec<Value>, usize)> = None;
        for k in 1..=all.len() {
            let json = serde_json::to_string(&all[..k]).unwrap();
            let plain =
                compress_json(&json, &CompressOptions::default(), CompressContext::new()).unwrap();
            let cached = compress_json(
                &json,
                &CompressOptions::default(),
                CompressContext::new()
                    .with_embedder(None)
                    .with_cache(&mut cache),
            )
            .unwrap();
            assert_eq!(cached.json, plain.json);
            assert_eq!(cached.verbatim, plain.verbatim);
            cache = CompressCache::from_json(&cache.to_json(), "cache").unwrap();
            let out = compress_json(&json, &stable, CompressContext::new()).unwrap();
            let msgs: Vec<Value> = serde_json::from_str(&out.json).unwrap();
            if let Some((before, n)) = &previous {
                assert_eq!(&msgs[..*n], &before[..*n]);
            }
            let n = out.stats.prefix_messages.unwrap();
            previous = Some((msgs, n));
        }
    }
}

#[wasm_bindgen_test]
fn prepare_context_in_wasm() {
    let chunks: Vec<Value> = records(SHAREGPT)
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .map(|m| m["content"].clone())
        .filter(Value::is_string)
        .collect();
    for budget in [0, 10, 100, 1000] {
        let out = prepare_context(
            &Value::Array(chunks.clone()),
            &PrepareContextOptions {
                query: Some("python code error".into()),
                token_budget: Some(budget),
                ..PrepareContextOptions::default()
            },
            None,
        )
        .unwrap();
        assert!(out.stats.fits && out.stats.tokens_after <= budget);
    }
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

/// Crafted index files (tests/fixtures/hostile, built by `src/retrieve/index.rs`'s tests):
/// issue 28's findings 1 and 3. In wasm the chunk counts' u32 sum wrapped and `deserialize`
/// trapped with "capacity overflow"; the neighbour id out of range trapped in `query`. Each is
/// now `invalid_index` on reading, and the module goes on.
#[wasm_bindgen_test]
fn crafted_indexes_are_invalid_index_in_wasm() {
    use condense::embed::Embedder;
    use condense::retrieve::index::Index;
    use condense::retrieve::options::QueryOptions;
    for (name, bytes) in [
        (
            "hnsw-neighbour",
            &include_bytes!("fixtures/hostile/hnsw-neighbour.cndx")[..],
        ),
        (
            "chunk-count-overflow",
            &include_bytes!("fixtures/hostile/chunk-count-overflow.cndx")[..],
        ),
        (
            "bm25-total-length",
            &include_bytes!("fixtures/hostile/bm25-total-length.cndx")[..],
        ),
    ] {
        match Index::deserialize(bytes) {
            Err(e) => assert_eq!(e.code(), "invalid_index", "{name}"),
            Ok(index) => {
                // (Main read them; this is where it trapped.)
                let options = QueryOptions::from_json(r#"{"denseWeight":1,"minScore":0}"#).unwrap();
                let _ = index.query("parser token", &options, &Embedder::lexical());
                panic!("{name} was read");
            }
        }
    }
    assert!(apply_watermark_json(
        "[]",
        &WatermarkState::default(),
        &WatermarkOptions::default()
    )
    .is_ok());
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
        let info = embedder.load_info().expect("load info");
        assert!(info.casts_folded > 0);
        // The matmuls run condense's 8x8 kernel (src/embed/engine/wasm_kernel.rs), among others.
        assert!(info.nodes_repaired > 40, "{info:?}");
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

    /// The wasm build's 8x8 matmul kernel gives tract's kernel's bits on random programs
    /// (every fused op, LoadTile, two AddMatMuls, row- and column-major tiles).
    #[wasm_bindgen_test]
    fn matmul_kernel_equals_tracts_bit_for_bit() {
        condense::embed::test_hooks::check_wasm_kernel(0x5eed, 400).expect("same bits");
        condense::embed::test_hooks::check_wasm_kernel(7, 400).expect("same bits");
    }

    /// The operator profile runs in wasm too (its clock is `performance.now`): one short text,
    /// the fused softmax once per layer, the 36 weight matmuls as integer products and the 12
    /// attention products on `src/embed/engine/same.rs`.
    #[wasm_bindgen_test]
    fn operator_profile_in_wasm() {
        let embedder = Embedder::from_bytes(MODEL, TOKENIZER).expect("model loads in wasm");
        let rows = embedder.profile_ops(&["a short text"]).expect("profile");
        let softmax = rows
            .iter()
            .find(|r| r.op == "MaskedSoftmax")
            .expect("softmax");
        assert_eq!(softmax.evals_per_text, 6.0);
        let evals = |op: &str| rows.iter().find(|r| r.op == op).map(|r| r.evals_per_text);
        assert_eq!(evals("QuantMatMul"), Some(36.0));
        assert_eq!(evals("SameMatMul"), Some(12.0));
    }

    /// The attention's row softmax of both builds (src/embed/engine/same.rs) gives tract's wasm routine's
    /// bits on random rows with zeros of both signs, infinities, NaN and extremes.
    #[wasm_bindgen_test]
    fn row_softmax_equals_tracts_bit_for_bit() {
        condense::embed::test_hooks::check_wasm_softmax(0x5eed, 300).expect("same bits");
        condense::embed::test_hooks::check_wasm_softmax(11, 300).expect("same bits");
    }

    /// The operators of src/embed/engine/same.rs give the bits the native build pins (its native tests
    /// check the same digests).
    #[wasm_bindgen_test]
    fn shared_operators_give_the_native_bits() {
        condense::embed::test_hooks::check_same_bits().expect("same bits");
    }

    /// The integer weight matmul's SIMD kernel gives the portable kernel's bits (the native
    /// AVX-512 kernel is checked against the same portable kernel natively).
    #[wasm_bindgen_test]
    fn integer_matmul_kernel_equals_the_portable_one() {
        condense::embed::test_hooks::check_wasm_quant(0x5eed, 60).expect("same bits");
        condense::embed::test_hooks::check_wasm_quant(3, 60).expect("same bits");
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

/// A JS function as the token counter (not `Send`: only possible on wasm32), and both phases of
/// the summariser protocol: stats in the counter's units, summaries used where shorter, the
/// round trip exact.
#[wasm_bindgen_test]
fn compress_with_a_js_counter_and_summaries() {
    use condense::compress::{compress_json, CompressContext, CompressMethod, TokenCounter};
    use wasm_bindgen::JsValue;
    struct Js(js_sys::Function);
    impl TokenCounter for Js {
        fn count(&self, text: &str) -> Result<usize, condense::Error> {
            let n = self.0.call1(&JsValue::NULL, &text.into()).expect("counter");
            Ok(n.as_f64().expect("a number") as usize)
        }
    }
    let counter = Js(js_sys::Function::new_with_args("t", "return [...t].length"));
    let ctx = || CompressContext::new().with_counter(&counter);
    let mut accepted = 0;
    for record in records(SHAREGPT) {
        let messages = serde_json::to_string(&record["messages"]).unwrap();
        let chars: usize = record["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| condense::compress::message_text(m).chars().count())
            .sum();
        let opts = CompressOptions {
            method: CompressMethod::Abstractive,
            target_ratio: Some(0.3),
            ..CompressOptions::default()
        };
        let requests = compress_json(&messages, &opts, ctx())
            .expect("requests")
            .requests;
        let summaries = requests
            .iter()
            .map(|r| (r.id.clone(), format!("gist of message {}", r.index)))
            .collect();
        let opts = CompressOptions {
            summaries: Some(summaries),
            ..opts
        };
        let out = compress_json(&messages, &opts, ctx()).expect("compress");
        assert_eq!(out.stats.tokens_before, chars);
        assert_eq!(
            out.stats.fits,
            Some(out.stats.tokens_after <= out.stats.budget.unwrap())
        );
        accepted += out.stats.summarizer.map_or(0, |s| s.accepted);
        let back = uncompress_json(&out.json, &out.verbatim).expect("uncompress");
        assert_eq!(back, messages, "{}", record["id"]);
    }
    assert!(accepted > 0);
}
