//! Real MiniLM vectors for the vector-index benchmark (`bench/query.rs --vectors FILE`):
//! `cargo run --release --example embed_corpus -- OUT.f32 [MAX]`. Embeds, natively, every
//! sentence of the dev IR corpora (`../shared/data/ir/{cisi,med}/corpus.jsonl`) longer than 30
//! characters (split at ". "), then every document (title + text), up to MAX texts (default
//! all), in that order; the file grows 512 vectors at a time, so a partial run is usable. Writes little-endian f32 rows of 384, no header (the row count
//! is the file size / 1536). Progress goes to stderr.

use std::io::Write;

use condense::embed::{EmbedOptions, Embedder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let out = args.get(1).ok_or("usage: embed_corpus OUT.f32 [MAX]")?;
    let max: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut docs, mut sentences) = (Vec::new(), Vec::new());
    for set in ["cisi", "med"] {
        let text = std::fs::read_to_string(
            root.join("../shared/data/ir")
                .join(set)
                .join("corpus.jsonl"),
        )?;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line)?;
            let title = v["title"].as_str().unwrap_or("");
            let body = v["text"].as_str().unwrap_or("");
            docs.push(format!("{title} {body}").trim().to_string());
            sentences.extend(
                body.split(". ")
                    .filter(|s| s.len() > 30)
                    .map(|s| format!("{}.", s.trim_end_matches('.'))),
            );
        }
    }
    let texts: Vec<String> = sentences.into_iter().chain(docs).take(max).collect();
    eprintln!("{} texts", texts.len());
    let dir = root.join("models");
    let embedder = Embedder::from_bytes_with(
        &std::fs::read(dir.join("model.onnx"))?,
        &std::fs::read(dir.join("tokenizer.json"))?,
        EmbedOptions::default(),
    )?;
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    let t = std::time::Instant::now();
    for (i, group) in texts.chunks(512).enumerate() {
        let refs: Vec<&str> = group.iter().map(String::as_str).collect();
        for v in embedder.embed(&refs)? {
            for x in v {
                file.write_all(&x.to_le_bytes())?;
            }
        }
        eprintln!(
            "{} / {} in {:.0} s",
            (i + 1) * 512,
            texts.len(),
            t.elapsed().as_secs_f64()
        );
    }
    file.flush()?;
    Ok(())
}
