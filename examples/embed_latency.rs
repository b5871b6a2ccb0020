//! Single-query MiniLM embedding latency, natively: `cargo run --release --example embed_latency
//! [-- N]`. Embeds N (default 300) short questions (12 words from the dev IR corpora's
//! sentences, or a fixed list without them) one call each and prints p50/p95 per call, with the
//! tokenizer's share. For profiling (`perf record`) and for before/after comparisons.

use std::time::Instant;

use condense::embed::Embedder;

fn percentile(ms: &mut [f64], p: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    let i = ((ms.len() as f64 - 1.0) * p).round() as usize;
    ms.get(i).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let onnx = std::fs::read(dir.join("model.onnx"))?;
    let tok = std::fs::read(dir.join("tokenizer.json"))?;
    let embedder = Embedder::from_bytes(&onnx, &tok)?;
    let corpus = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/data/ir/cisi/queries.jsonl"),
    )
    .unwrap_or_default();
    let mut questions: Vec<String> = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .map(|t| t.split_whitespace().take(12).collect::<Vec<_>>().join(" "))
        .collect();
    if questions.is_empty() {
        questions.push("how do I rotate the API keys of the staging cluster every month".into());
    }
    let tokenizer = embedder.tokenizer().ok_or("no tokenizer")?;
    let tokens: Vec<usize> = questions.iter().map(|q| tokenizer.count(q)).collect();
    let mean_tokens = tokens.iter().sum::<usize>() as f64 / tokens.len() as f64;
    // Warm up.
    for q in questions.iter().take(5) {
        embedder.embed_one(q)?;
    }
    let (mut all, mut tok_ms) = (Vec::new(), Vec::new());
    for i in 0..n {
        let q = &questions[i % questions.len()];
        let t = Instant::now();
        let _ = tokenizer.encode(q);
        tok_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        embedder.embed_one(q)?;
        all.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "single-query embed: {n} calls, {:.1} tokens mean (with [CLS]/[SEP]): p50 {:.3} ms, p95 {:.3} ms; tokenizer p50 {:.4} ms",
        mean_tokens,
        percentile(&mut all.clone(), 0.5),
        percentile(&mut all, 0.95),
        percentile(&mut tok_ms, 0.5)
    );
    Ok(())
}
