//! What the retrieval examples (`bm25_ir`, `retrieval_lab`, `memory_eval`) share: reading JSON
//! lines and loading MiniLM from `models/`. Each example uses part of it.
#![allow(dead_code)]

use std::fs;

/// The JSON values of a JSON-lines file (blank lines skipped); errors name the file.
pub fn read_jsonl(path: &str) -> Result<Vec<serde_json::Value>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{path}: {e}")))
        .collect()
}

/// A string field of a JSON object, `""` when absent.
pub fn field<'a>(v: &'a serde_json::Value, name: &str) -> &'a str {
    v.get(name).and_then(|x| x.as_str()).unwrap_or("")
}

/// MiniLM from the repository's `models/` (scripts/setup fetches it), default options.
pub fn minilm() -> Result<condense::embed::Embedder, String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |n: &str| fs::read(format!("{root}/models/{n}")).map_err(|e| format!("{n}: {e}"));
    condense::embed::Embedder::from_bytes_with(
        &read("model.onnx")?,
        &read("tokenizer.json")?,
        condense::embed::EmbedOptions::default(),
    )
    .map_err(|e| e.to_string())
}
