//! The embedder against its reference (`tests/fixtures/embed/reference.json`, made by
//! `scripts/make-embed-fixture.py` with the Python `tokenizers` package and onnxruntime).
//!
//! These tests need the model files: `scripts/fetch-models` puts them in `models/` (or set
//! `CONDENSE_MODEL_DIR`). Without them the tests fail and say so; they are never skipped.
#![cfg(all(not(target_arch = "wasm32"), feature = "embed"))]

use std::path::PathBuf;
use std::sync::OnceLock;

use condense::embed::{
    cosine, EmbedOptions, Embedder, EmbedderKind, TokenizerOptions, WordPiece, DIMS, MINILM_SHA256,
    TOKENIZER_SHA256,
};
use condense::ErrorKind;

struct Case {
    name: String,
    text: String,
    ids: Vec<u32>,
    vector: Vec<f32>,
}

fn model_dir() -> PathBuf {
    std::env::var_os("CONDENSE_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"))
}

fn model_file(name: &str) -> &'static [u8] {
    static ONNX: OnceLock<Vec<u8>> = OnceLock::new();
    static TOKENIZER: OnceLock<Vec<u8>> = OnceLock::new();
    let cell = if name == "model.onnx" {
        &ONNX
    } else {
        &TOKENIZER
    };
    cell.get_or_init(|| {
        let path = model_dir().join(name);
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "model file {} not readable ({e}): run scripts/fetch-models \
                 (or set CONDENSE_MODEL_DIR to a folder with model.onnx and tokenizer.json)",
                path.display()
            )
        })
    })
}

fn embedder() -> &'static Embedder {
    static E: OnceLock<Embedder> = OnceLock::new();
    E.get_or_init(|| {
        Embedder::from_bytes(model_file("model.onnx"), model_file("tokenizer.json"))
            .unwrap_or_else(|e| panic!("loading the model: {e}"))
    })
}

fn tokenizer() -> WordPiece {
    WordPiece::from_json(model_file("tokenizer.json"), TokenizerOptions::default())
        .unwrap_or_else(|e| panic!("loading tokenizer.json: {e}"))
}

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/embed/reference.json");
        let text = std::fs::read_to_string(&path).expect("reference fixture");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
        assert_eq!(doc["model_sha256"], MINILM_SHA256);
        assert_eq!(doc["tokenizer_sha256"], TOKENIZER_SHA256);
        assert_eq!(doc["max_length"], 256);
        doc["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .map(|c| Case {
                name: c["name"].as_str().expect("name").to_string(),
                text: c["text"].as_str().expect("text").to_string(),
                ids: c["ids"]
                    .as_array()
                    .expect("ids")
                    .iter()
                    .map(|x| x.as_u64().expect("id") as u32)
                    .collect(),
                vector: c["vector"]
                    .as_array()
                    .expect("vector")
                    .iter()
                    .map(|x| x.as_f64().expect("float") as f32)
                    .collect(),
            })
            .collect()
    })
}

fn texts() -> Vec<&'static str> {
    cases().iter().map(|c| c.text.as_str()).collect()
}

// ---- tokenizer ---------------------------------------------------------------------------

#[test]
fn tokenizer_ids_equal_the_reference_on_every_fixture_text() {
    let tok = tokenizer();
    assert!(cases().len() >= 50);
    let mut bad = Vec::new();
    for c in cases() {
        let ids = tok.encode(&c.text);
        if ids != c.ids {
            let first = ids.iter().zip(&c.ids).position(|(a, b)| a != b);
            bad.push(format!(
                "{}: first difference at {first:?}, got {} ids, want {}\n  got  {:?}\n  want {:?}",
                c.name,
                ids.len(),
                c.ids.len(),
                &ids[..ids.len().min(40)],
                &c.ids[..c.ids.len().min(40)]
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn tokenizer_truncates_a_megabyte_to_the_budget() {
    let tok = tokenizer();
    let big = "lorem ipsum dolor sit amet, ".repeat(40_000); // 1.1 MB
    let ids = tok.encode(&big);
    assert_eq!(ids.len(), 256);
    assert_eq!(ids.first(), Some(&101));
    assert_eq!(ids.last(), Some(&102));
    // The kept part is the tokenization of the text's beginning.
    let head = tok.encode(&big[..2000]);
    assert_eq!(ids, head);
    // One word without spaces, a megabyte long: one [UNK].
    assert_eq!(tok.encode(&"x".repeat(1 << 20)), [101, 100, 102]);
}

#[test]
fn tokenizer_budget_is_configurable_up_to_512() {
    let json = model_file("tokenizer.json");
    let long = "word ".repeat(1000);
    for max in [2, 3, 128, 512] {
        let tok = WordPiece::from_json(json, TokenizerOptions { max_tokens: max })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tok.encode(&long).len(), max);
    }
    for max in [0, 1, 513] {
        let err = WordPiece::from_json(json, TokenizerOptions { max_tokens: max }).err();
        assert_eq!(
            err.map(|e| e.kind()),
            Some(ErrorKind::InvalidOptions),
            "{max}"
        );
    }
}

#[test]
fn tokenizer_json_of_another_model_type_is_an_invalid_model_error() {
    let bpe = br#"{"version":"1.0","added_tokens":[],"normalizer":null,
        "pre_tokenizer":{"type":"ByteLevel"},"post_processor":null,
        "model":{"type":"BPE","vocab":{"a":0},"merges":[]}}"#;
    let err = WordPiece::from_json(bpe, TokenizerOptions::default()).err();
    let err = err.expect("BPE must be refused");
    assert_eq!(err.kind(), ErrorKind::InvalidModel);
    assert_eq!(err.path(), "tokenizer.model.type");
    assert_eq!(err.code(), "invalid_model");

    for bad in [
        &b""[..],
        b"{",
        b"[]",
        b"{\"model\":{}}",
        &model_file("model.onnx")[..4096],
    ] {
        let err = WordPiece::from_json(bad, TokenizerOptions::default()).err();
        assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::InvalidModel));
    }
    // A WordPiece file whose normalizer is not BERT's.
    let mut doc: serde_json::Value =
        serde_json::from_slice(model_file("tokenizer.json")).expect("json");
    doc["normalizer"] = serde_json::json!({"type": "Lowercase"});
    let bytes = serde_json::to_vec(&doc).expect("json");
    let err = WordPiece::from_json(&bytes, TokenizerOptions::default()).err();
    assert_eq!(
        err.map(|e| e.path().to_string()).as_deref(),
        Some("tokenizer.normalizer.type")
    );
}

// ---- model -------------------------------------------------------------------------------

#[test]
fn vectors_reach_cosine_0_9999_with_every_reference_vector() {
    let e = embedder();
    let got = e.embed(&texts()).expect("embed");
    assert_eq!(got.len(), cases().len());
    let mut worst = (f32::INFINITY, "");
    for (v, c) in got.iter().zip(cases()) {
        let cos = cosine(v, &c.vector);
        if cos < worst.0 {
            worst = (cos, &c.name);
        }
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4, "{}: norm² {norm}", c.name);
    }
    eprintln!("min cosine with onnxruntime: {:.7} ({})", worst.0, worst.1);
    assert!(worst.0 >= 0.9999, "{} has cosine {}", worst.1, worst.0);
}

/// One text per call runs the plans specialised to padded length buckets (up to 32 tokens) or
/// the symbolic plan (longer): both must match the reference.
#[test]
fn single_texts_reach_cosine_0_9999_with_every_reference_vector() {
    let e = embedder();
    let tok = tokenizer();
    let mut worst = (f32::INFINITY, "");
    let mut short = 0;
    for c in cases() {
        let v = e.embed_one(&c.text).expect("embed");
        short += usize::from(tok.count(&c.text) <= 32);
        let cos = cosine(&v, &c.vector);
        if cos < worst.0 {
            worst = (cos, &c.name);
        }
    }
    eprintln!(
        "single texts ({short} of ≤ 32 tokens): min cosine {:.7} ({})",
        worst.0, worst.1
    );
    assert!(short > 0);
    assert!(worst.0 >= 0.9999, "{} has cosine {}", worst.1, worst.0);
}

#[test]
fn a_vector_does_not_depend_on_its_batch() {
    let e = embedder();
    let all = texts();
    let batched = e.embed(&all).expect("embed");
    // Each text alone (batch of one, no padding) and in batches of 5 of another order.
    let mut reversed: Vec<&str> = all.clone();
    reversed.reverse();
    let small = Embedder::from_bytes_with(
        model_file("model.onnx"),
        model_file("tokenizer.json"),
        EmbedOptions {
            batch_size: 5,
            ..EmbedOptions::default()
        },
    )
    .expect("load");
    let mut rev = small.embed(&reversed).expect("embed");
    rev.reverse();
    let mut worst = f32::INFINITY;
    let mut max_diff = 0f32;
    for (i, text) in all.iter().enumerate().step_by(3) {
        let alone = e.embed_one(text).expect("embed");
        for other in [&batched[i], &rev[i]] {
            worst = worst.min(cosine(&alone, other));
            for (a, b) in alone.iter().zip(other.iter()) {
                max_diff = max_diff.max((a - b).abs());
            }
        }
    }
    eprintln!("batch independence: min cosine {worst:.8}, max |diff| {max_diff:e}");
    if integer_path() {
        // Every operator then computes each row as it would alone: padding (masked tokens,
        // zero attention weights) changes no bit.
        assert_eq!(max_diff, 0.0, "min cosine {worst}");
    }
    assert!(worst >= 0.99999, "min cosine {worst}");
    assert!(max_diff <= 1e-4, "max diff {max_diff}");
}

#[test]
fn threads_give_bit_identical_vectors() {
    // The matmuls' tiles are shared out over the pool, each computed as on one thread: the same
    // bits for single texts (the specialised plans) and for batches (the symbolic plan).
    let all = texts();
    let one = embedder();
    let pooled = Embedder::from_bytes_with(
        model_file("model.onnx"),
        model_file("tokenizer.json"),
        EmbedOptions {
            threads: 3,
            ..EmbedOptions::default()
        },
    )
    .expect("load");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let batch = &all[..all.len().min(12)];
    let a = one.embed(batch).expect("embed");
    let b = pooled.embed(batch).expect("embed");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(bits(x), bits(y));
    }
    for text in all.iter().step_by(7) {
        let x = one.embed_one(text).expect("embed");
        let y = pooled.embed_one(text).expect("embed");
        assert_eq!(bits(&x), bits(&y), "{text:?}");
    }
    for bad in [0usize, 65] {
        let options = EmbedOptions {
            threads: bad,
            ..EmbedOptions::default()
        };
        let err = Embedder::from_bytes_with(b"", b"", options).err();
        assert_eq!(
            err.map(|e| e.kind()),
            Some(ErrorKind::InvalidOptions),
            "{bad}"
        );
    }
    let err = EmbedOptions::from_json(r#"{"threads": 0}"#).err();
    assert_eq!(
        err.map(|e| e.path().to_string()),
        Some("options.threads".into())
    );
    assert_eq!(
        EmbedOptions::from_json(r#"{"threads": 2}"#)
            .map(|o| o.threads)
            .ok(),
        Some(2)
    );
}

#[test]
fn identity_names_the_model() {
    let id = embedder().identity();
    assert_eq!(id.kind, EmbedderKind::MiniLm);
    assert_eq!(id.model_sha256.as_deref(), Some(MINILM_SHA256));
    assert_eq!(id.dims, DIMS);
    assert_eq!(id.max_tokens, Some(256));
    assert_eq!(embedder().dims(), 384);
    let info = embedder()
        .load_info()
        .expect("a model embedder has load info");
    eprintln!("load: {info:?}");
    assert!(info.casts_folded > 0, "no constant Cast folded: {info:?}");
    // The reshapes and the attention mask's broadcast addition of the symbolic plan.
    assert!(info.nodes_repaired > 0, "no plan node repaired: {info:?}");
    // The integer weight matmuls: every one of MiniLM-L6's 36 where the CPU has them.
    assert_eq!(info.integer_matmuls, if integer_path() { 36 } else { 0 });
}

/// Whether this CPU runs the integer weight matmuls (x86-64 with AVX2; wasm always).
fn integer_path() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[test]
fn empty_list_empty_string_and_huge_text() {
    let e = embedder();
    assert!(e.embed(&[]).expect("empty list").is_empty());
    let empty = e.embed_one("").expect("empty string");
    let reference = cases()
        .iter()
        .find(|c| c.name == "edge/empty")
        .expect("edge/empty case");
    assert!(cosine(&empty, &reference.vector) >= 0.9999);
    // 1 MB: truncated to 256 tokens, so the same vector as its first few kilobytes.
    let big = "The index is rebuilt nightly from the primary store. ".repeat(20_000);
    let start = condense::clock::now_ms();
    let v = e.embed_one(&big).expect("huge text");
    let ms = condense::clock::now_ms() - start;
    let head = e.embed_one(&big[..4000]).expect("head");
    assert!(cosine(&v, &head) > 0.99999);
    eprintln!("1 MB text embedded in {ms:.0} ms");
}

#[test]
fn wrong_or_truncated_model_bytes_are_invalid_model_errors() {
    let onnx = model_file("model.onnx");
    let tok = model_file("tokenizer.json");
    let mut garbage = vec![0u8; 10_000];
    for (i, b) in garbage.iter_mut().enumerate() {
        *b = (i * 7919 % 251) as u8;
    }
    let cases: Vec<(&str, &[u8])> = vec![
        ("empty", b""),
        ("text", b"this is not an onnx file"),
        ("garbage", &garbage),
        ("tokenizer as model", tok),
        ("first KiB", &onnx[..1024]),
        ("first half", &onnx[..onnx.len() / 2]),
        ("all but the last byte", &onnx[..onnx.len() - 1]),
    ];
    for (name, bytes) in cases {
        match Embedder::from_bytes(bytes, tok) {
            Ok(_) => panic!("{name}: loaded"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::InvalidModel, "{name}: {e}");
                assert!(e.path().starts_with("model"), "{name}: {}", e.path());
            }
        }
    }
    // Files swapped.
    let err = Embedder::from_bytes(tok, onnx).err();
    assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::InvalidModel));
}

#[test]
fn a_caller_digest_goes_into_the_identity_and_a_malformed_one_is_refused() {
    let onnx = model_file("model.onnx");
    let tok = model_file("tokenizer.json");
    let given =
        Embedder::from_bytes_with_digest(onnx, tok, EmbedOptions::default(), Some(MINILM_SHA256))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(given.identity(), embedder().identity());
    for bad in [
        "",
        "XYZ",
        &MINILM_SHA256.to_uppercase(),
        &MINILM_SHA256[1..],
    ] {
        let err = Embedder::from_bytes_with_digest(onnx, tok, EmbedOptions::default(), Some(bad))
            .expect_err("a malformed digest");
        assert_eq!(err.kind(), ErrorKind::InvalidOptions, "{bad}");
    }
}

/// `profile_ops` embeds as `embed` does and times every operator: the attention's fused
/// softmax once per layer per model call, matmuls named with their kernels, slowest first; the
/// lexical embedder has no operators to time.
#[test]
fn operator_profile_times_the_models_operators() {
    let texts = [
        "a short text",
        "another text, a little longer than the first one",
    ];
    let rows = embedder().profile_ops(&texts).expect("profile");
    let softmax = rows
        .iter()
        .find(|r| r.op == "MaskedSoftmax")
        .expect("the attention's softmax is timed");
    // Six layers, one softmax each, in the one model call that holds both texts.
    assert_eq!(softmax.evals_per_text * texts.len() as f64, 6.0);
    // The weight matmuls: integer products where the CPU has them, else tract's f32 kernels.
    let weights = if integer_path() {
        "QuantMatMul"
    } else {
        "OptMatMul "
    };
    assert!(rows.iter().any(|r| r.op.starts_with(weights)), "{rows:?}");
    assert!(rows
        .iter()
        .all(|r| r.ms_per_text >= 0.0 && r.evals_per_text > 0.0));
    assert!(rows.iter().map(|r| r.ms_per_text).sum::<f64>() > 0.0);
    assert!(rows
        .windows(2)
        .all(|w| w[0].ms_per_text >= w[1].ms_per_text));
    assert!(Embedder::lexical()
        .profile_ops(&texts)
        .expect("lexical")
        .is_empty());
}

/// A model loaded with a stand-in digest takes its own once known (the npm package hashes with
/// WebCrypto while the engine loads); a bad digest, or an embedder without a model, is refused.
#[test]
fn a_model_digest_set_after_the_load_is_its_identity() {
    let mut e = Embedder::from_bytes_with_digest(
        model_file("model.onnx"),
        model_file("tokenizer.json"),
        EmbedOptions::default(),
        Some(&"0".repeat(64)),
    )
    .unwrap();
    assert_eq!(
        e.identity().model_sha256.as_deref(),
        Some("0".repeat(64).as_str())
    );
    e.set_model_sha256(MINILM_SHA256).unwrap();
    assert_eq!(e.identity(), embedder().identity());
    let bad = e.set_model_sha256("ABC").unwrap_err();
    assert_eq!(
        (bad.kind(), bad.path()),
        (ErrorKind::InvalidOptions, "sha256")
    );
    assert_eq!(e.identity(), embedder().identity());
    let none = Embedder::lexical()
        .set_model_sha256(MINILM_SHA256)
        .unwrap_err();
    assert_eq!(none.kind(), ErrorKind::InvalidOptions);
}
