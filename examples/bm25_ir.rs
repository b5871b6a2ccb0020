//! Checks the lexical retriever (analyser + BM25, optionally the chunker) on a BEIR-format IR
//! set and writes a run file for `bench/ir_eval.py`.
//!
//! ```text
//! cargo run --release --example bm25_ir -- /work/shared/data/ir/cisi \
//!     [--k1 1.2] [--b 0.75] [--no-split] [--chunk] [--out run.jsonl]
//! python3 bench/ir_eval.py --qrels /work/shared/data/ir/cisi/qrels.tsv --run run.jsonl
//! cargo run --release --example bm25_ir -- /work/shared/data/ir/med --bench 100000
//! ```
//!
//! Document text = `title + " " + text`. Without `--chunk` one document is one BM25 slot; with
//! `--chunk` documents are chunked (default 200–1500 characters) and a document scores as its
//! best chunk. Ties keep corpus order. The top 1000 documents of each query are written.
//! `--bench N` instead times 5-term queries on an index of N slots (the corpus repeated).
//!
//! Measured (English analyser, Lucene idf; `bench/ir_eval.py`), nDCG@10 / R@10 / R@100 / MRR@10,
//! reference BM25 from `data/ir/README.md` in brackets:
//!
//! | set  | k1/b     | one slot per document           | `--chunk` (best chunk)          |
//! |------|----------|---------------------------------|---------------------------------|
//! | CISI | 1.2/0.75 | .3929 .1427 .4511 .6287 (.3913) | .3872 .1322 .4515 .6332         |
//! | CISI | 0.9/0.4  | .3779 .1320 .4362 .6330 (.3755) | .3670 .1186 .4373 .6031         |
//! | MED  | 1.2/0.75 | .6928 .3163 .7941 .8909 (.6942) | .6899 .3132 .7938 .8909         |
//! | MED  | 0.9/0.4  | .6715 .3073 .7776 .8531 (.6753) | .6804 .3120 .7789 .8650         |

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::time::Instant;

use condense::retrieve::analyze::{Analyzer, AnalyzerOptions};
use condense::retrieve::bm25::{Bm25, Bm25Params};
use condense::retrieve::chunk::{chunk_document, ChunkOptions};

mod common;
use common::{field, read_jsonl};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut dir = None;
    let (mut k1, mut b) = (1.2f32, 0.75f32);
    let mut out = String::from("run.jsonl");
    let mut chunk = false;
    let mut split_inner = true;
    let mut bench = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--k1" => k1 = value()?.parse().map_err(|e| format!("--k1: {e}"))?,
            "--b" => b = value()?.parse().map_err(|e| format!("--b: {e}"))?,
            "--out" => out = value()?,
            "--chunk" => chunk = true,
            "--no-split" => split_inner = false,
            "--bench" => bench = Some(value()?.parse::<usize>().map_err(|e| e.to_string())?),
            _ if dir.is_none() => dir = Some(a.clone()),
            _ => return Err(format!("unexpected argument {a}")),
        }
    }
    let dir = dir.ok_or("usage: bm25_ir <set dir> [--k1 X] [--b X] [--chunk] [--out F]")?;
    let analyzer = Analyzer::new(AnalyzerOptions {
        split_inner,
        ..AnalyzerOptions::default()
    });
    let params = Bm25Params::new(k1, b).map_err(|e| e.to_string())?;
    let corpus = read_jsonl(&format!("{dir}/corpus.jsonl"))?;
    let queries = read_jsonl(&format!("{dir}/queries.jsonl"))?;
    let docs: Vec<(String, String)> = corpus
        .iter()
        .map(|d| {
            let text = format!("{} {}", field(d, "title"), field(d, "text"));
            (field(d, "_id").to_string(), text)
        })
        .collect();

    if let Some(n) = bench {
        return run_bench(&analyzer, params, &docs, &queries, n);
    }

    let started = Instant::now();
    let mut index = Bm25::new(params).map_err(|e| e.to_string())?;
    let mut slot_doc: Vec<usize> = Vec::new();
    let options = ChunkOptions::default();
    let mut sizes = Vec::new();
    for (i, (id, text)) in docs.iter().enumerate() {
        if chunk {
            for c in chunk_document(id, None, text, &options) {
                sizes.push(c.text.chars().count());
                index.add(&analyzer.terms(&c.text));
                slot_doc.push(i);
            }
        } else {
            index.add(&analyzer.terms(text));
            slot_doc.push(i);
        }
    }
    let build = started.elapsed();
    let started = Instant::now();
    let mut file = fs::File::create(&out).map_err(|e| format!("{out}: {e}"))?;
    for q in &queries {
        let terms = analyzer.terms(field(q, "text"));
        let hits = index.search(&terms, index.len());
        let mut best: HashMap<usize, f32> = HashMap::new();
        let mut order = Vec::new();
        for (slot, score) in hits {
            let Some(&d) = slot_doc.get(slot as usize) else {
                continue;
            };
            if let std::collections::hash_map::Entry::Vacant(e) = best.entry(d) {
                e.insert(score);
                order.push((d, score));
            }
        }
        // Hits come by score desc, slot asc; slots follow corpus order, so ties keep it.
        order.truncate(1000);
        let results: Vec<serde_json::Value> = order
            .iter()
            .filter_map(|(d, s)| {
                let id = &docs.get(*d)?.0;
                Some(serde_json::json!({"docId": id, "score": s}))
            })
            .collect();
        let line = serde_json::json!({"id": field(q, "_id"), "results": results});
        writeln!(file, "{line}").map_err(|e| e.to_string())?;
    }
    eprintln!(
        "{} docs, {} slots, {} terms; build {:.0} ms, {} queries {:.1} ms{}",
        docs.len(),
        index.len(),
        index.vocabulary_len(),
        build.as_secs_f64() * 1e3,
        queries.len(),
        started.elapsed().as_secs_f64() * 1e3,
        if chunk {
            let max = sizes.iter().max().copied().unwrap_or(0);
            let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
            format!("; chunk chars mean {mean:.0}, max {max}")
        } else {
            String::new()
        }
    );
    Ok(())
}

fn run_bench(
    analyzer: &Analyzer,
    params: Bm25Params,
    docs: &[(String, String)],
    queries: &[serde_json::Value],
    n: usize,
) -> Result<(), String> {
    let analysed: Vec<Vec<String>> = docs.iter().map(|(_, t)| analyzer.terms(t)).collect();
    let mut index = Bm25::new(params).map_err(|e| e.to_string())?;
    let started = Instant::now();
    for i in 0..n {
        if let Some(terms) = analysed.get(i % analysed.len().max(1)) {
            index.add(terms);
        }
    }
    let build = started.elapsed();
    let qs: Vec<Vec<String>> = queries
        .iter()
        .map(|q| {
            analyzer
                .terms(field(q, "text"))
                .into_iter()
                .take(5)
                .collect()
        })
        .collect();
    let mut times = Vec::new();
    let mut found = 0;
    for _ in 0..5 {
        for q in &qs {
            let t = Instant::now();
            found += index.search(q, 10).len();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(f64::total_cmp);
    let p = |f: f64| {
        times
            .get((times.len() as f64 * f) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let bytes = postcard::to_allocvec(&index).map_err(|e| e.to_string())?;
    println!(
        "{} slots, {} terms, build {:.0} ms, serialized {:.1} MB; 5-term query top-10: p50 {:.3} ms, p90 {:.3} ms, max {:.3} ms ({} hits)",
        index.len(),
        index.vocabulary_len(),
        build.as_secs_f64() * 1e3,
        bytes.len() as f64 / 1e6,
        p(0.5),
        p(0.9),
        p(0.999),
        found
    );
    Ok(())
}
