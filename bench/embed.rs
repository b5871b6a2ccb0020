//! Embedding speed, the native tract side: `cargo bench --bench embed -- INPUTS.json`.
//!
//! Run by `bench/embed-compare`, which makes the inputs (`bench/embed_ort.py inputs`) and runs
//! onnxruntime on the same texts. Cases are `embed/{tokens}tok/batch{1|32}/tract-native`: 32
//! texts truncated to 16, 128 or 256 tokens; batch 1 embeds them one call each, batch 32 in one
//! call. Prints one JSON line per case, sentences per second over repeats of at least 2 s
//! after one untimed pass. `ONLY=256/1` runs one case (tokens/batch), e.g. under a profiler.
//! `OPS=1` prints, instead of each case's speed, its time per operator
//! (`Embedder::profile_ops`, one pass after the untimed one): `bench/op-profile` tables it
//! beside the wasm build's.
//! Every call checks its vectors (count and unit norm): a benchmark is also a test.

use std::path::PathBuf;

use condense::clock::now_ms;
use condense::embed::{EmbedOptions, Embedder};

const MIN_MS: f64 = 2000.0;

fn main() {
    if let Err(e) = run() {
        eprintln!("bench embed: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let inputs = std::env::args()
        .skip(1)
        .find(|a| a.ends_with(".json"))
        .ok_or("usage: cargo bench --bench embed -- INPUTS.json (see bench/embed-compare)")?;
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&inputs)?)?;
    let texts: Vec<String> = doc["texts"]
        .as_array()
        .ok_or("inputs: no texts")?
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let dir = std::env::var_os("CONDENSE_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
    let onnx = std::fs::read(dir.join("model.onnx"))
        .map_err(|e| format!("{}: {e} (run scripts/fetch-models)", dir.display()))?;
    let tokenizer = std::fs::read(dir.join("tokenizer.json"))?;

    let only = std::env::var("ONLY").ok();
    for tokens in [16usize, 128, 256] {
        for batch in [1usize, 32] {
            if only
                .as_deref()
                .is_some_and(|o| o != format!("{tokens}/{batch}"))
            {
                continue;
            }
            let options = EmbedOptions {
                max_tokens: tokens,
                batch_size: batch,
                ..EmbedOptions::default()
            };
            let embedder = Embedder::from_bytes_with(&onnx, &tokenizer, options)?;
            if tokens == 16 && batch == 1 {
                let info = embedder.load_info().ok_or("no load info")?;
                println!(
                    "{}",
                    serde_json::json!({"case": "embed/load/tract-native",
                        "ms": (info.load_ms * 10.0).round() / 10.0,
                        "casts_folded": info.casts_folded})
                );
            }
            let tok = embedder.tokenizer().ok_or("no tokenizer")?;
            if texts.iter().any(|t| tok.count(t) != tokens) {
                return Err(format!("an input is shorter than {tokens} tokens").into());
            }
            // One untimed pass first, as every engine of bench/embed-compare gets: first-use work
            // (a single-text plan built for its length bucket) is not throughput.
            for group in texts.chunks(batch) {
                embedder.embed(group)?;
            }
            if std::env::var_os("OPS").is_some() {
                for op in embedder.profile_ops(&texts)? {
                    println!(
                        "{}",
                        serde_json::json!({"case": format!("ops/{tokens}tok/batch{batch}/tract-native"),
                            "op": op.op, "ms_per_text": op.ms_per_text,
                            "evals_per_text": op.evals_per_text})
                    );
                }
                continue;
            }
            let (mut done, start) = (0usize, now_ms());
            let elapsed = loop {
                for group in texts.chunks(batch) {
                    let vectors = embedder.embed(group)?;
                    check(&vectors, group.len())?;
                    done += vectors.len();
                }
                let elapsed = now_ms() - start;
                if elapsed >= MIN_MS {
                    break elapsed;
                }
            };
            let rate = done as f64 / (elapsed / 1000.0);
            println!(
                "{}",
                serde_json::json!({"case": format!("embed/{tokens}tok/batch{batch}/tract-native"),
                    "sentences_per_s": (rate * 100.0).round() / 100.0})
            );
        }
    }
    Ok(())
}

fn check(vectors: &[condense::embed::Vector], n: usize) -> Result<(), String> {
    if vectors.len() != n {
        return Err(format!("{} vectors for {n} texts", vectors.len()));
    }
    for v in vectors {
        let norm: f32 = v.iter().map(|x| x * x).sum();
        if (norm - 1.0).abs() > 1e-4 {
            return Err(format!("vector of norm² {norm}"));
        }
    }
    Ok(())
}
