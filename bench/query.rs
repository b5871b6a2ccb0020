//! Retrieval at scale, natively (docs/design.md, "Targets"): index build rate, HNSW recall against
//! the exact scan, and query latency at 1k, 10k and 100k chunks.
//!
//! ```text
//! cargo bench --bench query [--features embed] -- [--sizes 1000,10000,100000] [--queries 200]
//!     [--segment N --efc N --efs N --heuristic on|off [--vectors-only 1]   (to tune the graphs)
//!     [--vectors bench/out/minilm_real.f32 [--minilm-only 1]]   (real MiniLM vectors, see below)
//!     [--dump FILE]   (every timed index's outputs, to compare two builds)
//!     [--breakdown 1]   (with --vectors: a MiniLM query's time stage by stage)
//!     [--threads 1,2]   (the MiniLM table once per thread count of the model's matmuls)
//! ```
//!
//! `--breakdown 1` (with `--features embed` and `--vectors`) prints, per size, the p50/p95 of the
//! model alone and, with the query vector cached, of the candidates of each side, of both, of
//! result compression and of the whole query without the model, and the queries' token counts.
//! `BREAKDOWN_REPEAT=N` (1-5) repeats one of those stages 20 more times per query, for `perf`.
//!
//! `--dump FILE` writes, for every whole-query index (both tables), the outputs of a fixed set
//! of queries under a few option sets (defaults, `topN` 20, lexical only, dense only, no
//! compression) as JSON lines: the candidates (`Index::candidates`: ids and score bits) and the
//! whole `QueryResult`. Two builds (before/after a change) must write identical files.
//!
//! Two parts, each printed as a table:
//!
//! 1. **Vector side**: unit vectors pushed into a [`VectorStore`] with the default parameters
//!    (or those given): build rate (vectors/s, graphs included), resident memory added by the
//!    store, recall@10 of the store's search against an exact scan, and search p50/p95 beside
//!    the exact scan's (a store without graphs, timed in the same loop). The vectors are either
//!    synthetic (random mixtures of a few hundred cluster centres plus noise, deterministic: a
//!    hard case for HNSW) or, with `--vectors FILE`, **real MiniLM vectors**: FILE holds rows of
//!    384 little-endian f32 written by `cargo run --release --example embed_corpus -- FILE`
//!    (every sentence of the dev IR corpora, then every document). The last `--queries` rows are
//!    held out as queries; the data are the other rows, then, past them, chunk-like vectors made
//!    deterministically as the normalised mean of 4-8 random real rows (a chunk is 4-8
//!    sentences), up to the size asked for.
//! 2. **Whole query**: an [`Index`] over synthetic chunks (sentences of the dev IR corpora
//!    recombined, deterministic) with the lexical embedder, and `query()` p50/p95 with default
//!    options, query embedding included. With `--features embed` and the model files, MiniLM's
//!    query embedding time is measured too (its vectors have the same shape, so the search part
//!    costs the same: a MiniLM query costs the whole-query time minus the lexical embedding
//!    plus this). With `--features embed`, the model files and `--vectors`, a third table times
//!    whole queries on an index whose embedder is MiniLM: each query is embedded by the model
//!    inside the timed call, and the chunks' vectors are the normalised means of their sentences'
//!    real vectors (the chunks are made of the corpora's sentences), so that 100k chunks need no
//!    100k model runs.
//!
//! Numbers go to stdout and `bench/out/query.json`.

use std::time::Instant;

use condense::embed::Embedder;
use condense::retrieve::index::{Document, Index, IndexOptions};
use condense::retrieve::options::QueryOptions;
use condense::retrieve::vector::{dot, VectorParams, VectorStore};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f32 {
        (self.next() % 20001) as f32 / 10000.0 - 1.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Vectors like sentence embeddings: a mixture of 1–3 of `centres` cluster centres plus noise.
fn synthetic_vectors(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed | 1);
    let centres: Vec<Vec<f32>> = (0..400)
        .map(|_| {
            let mut v: Vec<f32> = (0..384).map(|_| rng.unit()).collect();
            normalize(&mut v);
            v
        })
        .collect();
    (0..n)
        .map(|_| {
            let mut v = vec![0f32; 384];
            for _ in 0..1 + rng.below(3) {
                let c = &centres[rng.below(centres.len())];
                let w = 0.5 + rng.unit().abs();
                v.iter_mut().zip(c).for_each(|(x, y)| *x += w * y);
            }
            v.iter_mut().for_each(|x| *x += 0.35 * rng.unit());
            normalize(&mut v);
            v
        })
        .collect()
}

/// Rows of 384 little-endian f32 (see the module docs); empty if unreadable.
fn read_vectors(path: &str) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap_or_default();
    bytes
        .chunks_exact(384 * 4)
        .map(|row| {
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .collect()
}

/// `n` vectors: the real rows first, then normalised means of 4-8 random real rows.
fn chunk_like(real: &[Vec<f32>], n: usize) -> Vec<Vec<f32>> {
    let mut rng = Rng(0x5eed);
    let mut out: Vec<Vec<f32>> = real.iter().take(n).cloned().collect();
    while out.len() < n {
        let mut v = vec![0f32; 384];
        for _ in 0..4 + rng.below(5) {
            let r = &real[rng.below(real.len())];
            v.iter_mut().zip(r).for_each(|(x, y)| *x += y);
        }
        normalize(&mut v);
        out.push(v);
    }
    out
}

/// Resident memory of this process in KiB (Linux; 0 elsewhere).
fn rss_kb() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn percentile(ms: &mut [f64], p: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    let i = ((ms.len() as f64 - 1.0) * p).round() as usize;
    ms.get(i).copied().unwrap_or(f64::NAN)
}

fn sentences() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for set in ["cisi", "med"] {
        let path = root
            .join("../shared/data/ir")
            .join(set)
            .join("corpus.jsonl");
        let fallback = root.join("tests/fixtures/retrieval/docs.jsonl");
        let text = std::fs::read_to_string(&path)
            .or_else(|_| std::fs::read_to_string(&fallback))
            .unwrap_or_default();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            let body = v["text"].as_str().unwrap_or("");
            out.extend(
                body.split(". ")
                    .filter(|s| s.len() > 30)
                    .map(|s| format!("{}.", s.trim_end_matches('.'))),
            );
        }
    }
    out
}

/// Whole `query()` with MiniLM: the query is embedded by the real model (timed inside the
/// query), the chunks' vectors are the normalised means of their sentences' real vectors
/// (`--vectors`, rows in `sentences()` order), so that 100k chunks need no 100k model runs.
#[cfg(feature = "embed")]
fn minilm_queries(
    sizes: &[usize],
    nq: usize,
    pool: &[String],
    real: &[Vec<f32>],
    json: &mut serde_json::Map<String, serde_json::Value>,
) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let (Ok(m), Ok(t)) = (
        std::fs::read(dir.join("model.onnx")),
        std::fs::read(dir.join("tokenizer.json")),
    ) else {
        return;
    };
    // --threads 1,2: the whole table once per thread count of the model's matmuls.
    let threads: Vec<usize> = arg("--threads")
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1]);
    for &threads in &threads {
        let options = condense::embed::EmbedOptions {
            threads,
            ..condense::embed::EmbedOptions::default()
        };
        let Ok(minilm) = Embedder::from_bytes_with(&m, &t, options) else {
            return;
        };
        minilm_table(sizes, nq, pool, real, json, minilm, threads);
    }
}

#[cfg(feature = "embed")]
/// One table of [`minilm_queries`], with `minilm` (loaded with `threads` matmul threads).
fn minilm_table(
    sizes: &[usize],
    nq: usize,
    pool: &[String],
    real: &[Vec<f32>],
    json: &mut serde_json::Map<String, serde_json::Value>,
    minilm: Embedder,
    threads: usize,
) {
    use condense::embed::{EmbedderIdentity, EmbedderKind, Vector, MINILM_SHA256};
    use std::collections::HashMap;
    use std::sync::Arc;
    let known: Arc<HashMap<String, usize>> = Arc::new(
        pool.iter()
            .enumerate()
            .take(real.len())
            .map(|(i, s)| (s.clone(), i))
            .collect(),
    );
    let rows: Arc<Vec<Vec<f32>>> = Arc::new(real.to_vec());
    let identity = minilm.identity().clone();
    assert_eq!(identity.kind, EmbedderKind::MiniLm);
    assert_eq!(identity.model_sha256.as_deref(), Some(MINILM_SHA256));
    let model_calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls = model_calls.clone();
    // --breakdown: query vectors computed beforehand (so stages can be timed without the model).
    let cache: Arc<std::sync::Mutex<HashMap<String, Vector>>> = Arc::default();
    let cached = cache.clone();
    let minilm = Arc::new(minilm);
    let model = minilm.clone();
    let embedder = Embedder::external(
        EmbedderIdentity { ..identity },
        None,
        Box::new(move |texts: &[&str]| {
            texts
                .iter()
                .map(|text| {
                    let mut v = [0f32; 384];
                    let mut found = 0;
                    for piece in text.split(". ") {
                        let key = format!("{}.", piece.trim_end_matches('.'));
                        if let Some(&i) = known.get(&key) {
                            v.iter_mut().zip(&rows[i]).for_each(|(x, y)| *x += y);
                            found += 1;
                        }
                    }
                    if found == 0 {
                        if let Some(v) = cached.lock().ok().and_then(|c| c.get(*text).copied()) {
                            return Ok(v);
                        }
                        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        return model.embed_one(text);
                    }
                    normalize(&mut v);
                    Ok::<Vector, condense::Error>(v)
                })
                .collect()
        }),
    );
    println!("\n## Whole query() with MiniLM, {threads} matmul thread(s) (real query embedding inside the timing; chunk vectors = means of real sentence vectors)\n");
    println!("| chunks | graphs | build s | query p50 ms | p95 ms |");
    println!("|---|---|---|---|---|");
    let mut rows_json = Vec::new();
    for &n in sizes {
        let docs = chunk_docs(pool, n);
        let mut index = match Index::new(&embedder, IndexOptions::default()) {
            Ok(i) => i,
            Err(err) => panic!("{err}"),
        };
        let t = Instant::now();
        if let Err(err) = index.add(&docs, &embedder, &mut |_| {}) {
            panic!("{err}");
        }
        let build = t.elapsed().as_secs_f64();
        let before = model_calls.load(std::sync::atomic::Ordering::Relaxed);
        let mut ms = Vec::new();
        for i in 0..nq {
            let q = &pool[(i * 7919) % pool.len()];
            let q: String = q.split(' ').take(12).collect::<Vec<_>>().join(" ");
            let q = q.trim_end_matches('.').to_string() + "?";
            let t = Instant::now();
            let out = index.query(&q, &QueryOptions::default(), &embedder);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(out.is_ok());
        }
        let calls = model_calls.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert_eq!(calls, nq, "every query ran the model once");
        dump(&index, &embedder, pool, nq, 12, "minilm");
        if arg("--breakdown").is_some() {
            breakdown(&index, &embedder, &minilm, &cache, pool, nq);
        }
        let (p50, p95) = (percentile(&mut ms, 0.5), percentile(&mut ms, 0.95));
        println!(
            "| {} | {} | {build:.1} | {p50:.3} | {p95:.3} |",
            index.chunks(),
            index.graphs()
        );
        rows_json.push(serde_json::json!({"chunks": index.chunks(), "buildSec": build, "p50": p50, "p95": p95}));
    }
    let key = if threads == 1 {
        "minilmQuery".to_string()
    } else {
        format!("minilmQueryThreads{threads}")
    };
    json.insert(key, rows_json.into());
}

/// `--breakdown 1`: where a whole MiniLM query's time goes, stage by stage (medians over the
/// queries): the model alone, then, with the query vector cached, the candidates of the lexical
/// side alone, of the dense side alone, of both, result compression of the fused candidates, and
/// the whole query without the model.
#[cfg(feature = "embed")]
fn breakdown(
    index: &Index,
    embedder: &Embedder,
    minilm: &Embedder,
    cache: &std::sync::Mutex<std::collections::HashMap<String, condense::embed::Vector>>,
    pool: &[String],
    nq: usize,
) {
    use condense::retrieve::results::compress_results;
    let defaults = QueryOptions::default();
    let lexical = QueryOptions {
        dense_weight: Some(0.0),
        ..QueryOptions::default()
    };
    let dense = QueryOptions {
        lexical_weight: 0.0,
        ..QueryOptions::default()
    };
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); 6];
    let mut tokens: std::collections::BTreeMap<usize, usize> = Default::default();
    let mut time = |i: usize, t: Instant| ms[i].push(t.elapsed().as_secs_f64() * 1e3);
    for i in 0..nq {
        let q = &pool[(i * 7919) % pool.len()];
        let q: String = q.split(' ').take(12).collect::<Vec<_>>().join(" ");
        let q = q.trim_end_matches('.').to_string() + "?";
        if let Some(t) = minilm.tokenizer() {
            *tokens.entry(t.count(&q)).or_default() += 1;
        }
        let t = Instant::now();
        let v = minilm.embed_one(&q);
        time(0, t);
        if let (Ok(v), Ok(mut c)) = (v, cache.lock()) {
            c.insert(q.clone(), v);
        }
        let t = Instant::now();
        let _ = index.candidates(&q, &lexical, embedder);
        time(1, t);
        let t = Instant::now();
        let _ = index.candidates(&q, &dense, embedder);
        time(2, t);
        let t = Instant::now();
        let cands = index
            .candidates(&q, &defaults, embedder)
            .unwrap_or_default();
        time(3, t);
        let t = Instant::now();
        let _ = compress_results(cands, &q, &defaults, embedder);
        time(4, t);
        let t = Instant::now();
        let _ = index.query(&q, &defaults, embedder);
        time(5, t);
        // For a profiler: BREAKDOWN_REPEAT=STAGE repeats one stage (1-5 above) 20 more times.
        let repeat: usize = std::env::var("BREAKDOWN_REPEAT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        for _ in 0..if repeat > 0 { 20 } else { 0 } {
            match repeat {
                1 => drop(index.candidates(&q, &lexical, embedder)),
                2 => drop(index.candidates(&q, &dense, embedder)),
                3 => drop(index.candidates(&q, &defaults, embedder)),
                4 => {
                    let cands = index
                        .candidates(&q, &defaults, embedder)
                        .unwrap_or_default();
                    drop(compress_results(cands, &q, &defaults, embedder));
                }
                _ => drop(index.query(&q, &defaults, embedder)),
            }
        }
    }
    let names = [
        "model (embed_one)",
        "candidates, lexical side only",
        "candidates, dense side only (cached vector)",
        "candidates, both (cached vector)",
        "compress_results",
        "query() without the model (cached vector)",
    ];
    if let Ok(mut c) = cache.lock() {
        c.clear();
    }
    println!(
        "\nBreakdown at {} chunks (p50 / p95 ms); query tokens (with [CLS]/[SEP]): count {tokens:?}",
        index.chunks()
    );
    for (name, m) in names.iter().zip(&mut ms) {
        println!(
            "- {name}: {:.3} / {:.3}",
            percentile(m, 0.5),
            percentile(m, 0.95)
        );
    }
}

/// With `--dump FILE`: appends the outputs of `nq` fixed queries (the timed ones' words) under
/// several option sets to FILE (see the module docs).
fn dump(index: &Index, embedder: &Embedder, pool: &[String], nq: usize, words: usize, tag: &str) {
    use std::io::Write;
    let Some(path) = arg("--dump") else {
        return;
    };
    let sets: Vec<(&str, QueryOptions)> = vec![
        ("default", QueryOptions::default()),
        (
            "top20",
            QueryOptions {
                top_n: 20,
                dense_weight: Some(1.0),
                ..QueryOptions::default()
            },
        ),
        (
            "lexical",
            QueryOptions {
                dense_weight: Some(0.0),
                candidates: 300,
                ..QueryOptions::default()
            },
        ),
        (
            "dense",
            QueryOptions {
                lexical_weight: 0.0,
                dense_weight: Some(1.0),
                ..QueryOptions::default()
            },
        ),
        (
            "plain",
            QueryOptions {
                min_score: 0.0,
                ngram_threshold: 1.0,
                similarity_threshold: 1.0,
                max_chunks_per_doc: 0,
                truncate: false,
                top_n: 50,
                dense_weight: Some(0.5),
                candidates: 40,
                ..QueryOptions::default()
            },
        ),
    ];
    let mut file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => panic!("{path}: {e}"),
    };
    for i in 0..nq {
        let q = &pool[(i * 7919) % pool.len()];
        let mut q: String = q.split(' ').take(words).collect::<Vec<_>>().join(" ");
        if words == 12 {
            q = q.trim_end_matches('.').to_string() + "?";
        }
        for (name, options) in &sets {
            let cands: Vec<(String, u32)> = match index.candidates(&q, options, embedder) {
                Ok(c) => c
                    .into_iter()
                    .map(|c| (c.chunk_id, c.score.to_bits()))
                    .collect(),
                Err(e) => panic!("{e}"),
            };
            let out = match index.query(&q, options, embedder) {
                Ok(o) => serde_json::to_value(o).unwrap_or_default(),
                Err(e) => panic!("{e}"),
            };
            let line = serde_json::json!({"tag": tag, "chunks": index.chunks(), "q": q, "options": name, "candidates": cands, "output": out});
            let _ = writeln!(file, "{line}");
        }
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let sizes: Vec<usize> = arg("--sizes")
        .unwrap_or_else(|| "1000,10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let nq: usize = arg("--queries").and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut json = serde_json::Map::new();

    println!("## Vector side (384-d unit vectors)\n");
    println!(
        "| vectors | graphs | build vectors/s | MB | recall@10 vs exact | search p50 ms | p95 ms | exact scan p50 ms | p95 ms | exact MB | p50 / exact p50 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut vector_rows = Vec::new();
    let real = arg("--vectors").map(|path| read_vectors(&path));
    if let Some(r) = &real {
        println!(
            "(real MiniLM vectors: {} rows, the last {nq} held out as queries)\n",
            r.len()
        );
    }
    // --minilm-only: skip the vector side and the lexical whole-query table.
    let skip = arg("--minilm-only").is_some();
    for &n in sizes.iter().filter(|_| !skip) {
        let (vs, queries) = match &real {
            Some(r) if r.len() > nq => {
                let (data, held) = r.split_at(r.len() - nq);
                (chunk_like(data, n), held.to_vec())
            }
            _ => (synthetic_vectors(n, 7), synthetic_vectors(nq, 99)),
        };
        let refs: Vec<&[f32]> = vs.iter().map(|v| v.as_slice()).collect();
        let d = VectorParams::default();
        let params = VectorParams {
            segment_size: arg("--segment")
                .and_then(|v| v.parse().ok())
                .unwrap_or(d.segment_size),
            ef_construction: arg("--efc")
                .and_then(|v| v.parse().ok())
                .unwrap_or(d.ef_construction),
            ef_search: arg("--efs")
                .and_then(|v| v.parse().ok())
                .unwrap_or(d.ef_search),
            heuristic: arg("--heuristic").map_or(d.heuristic, |v| v == "on"),
        };
        let exact_params = VectorParams {
            segment_size: u32::MAX,
            ..params
        };
        let rss0 = rss_kb();
        let mut store = match VectorStore::new(384, params) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let t = Instant::now();
        if let Err(e) = store.push(&refs, &mut |_, _| {}) {
            panic!("{e}");
        }
        let build = t.elapsed().as_secs_f64();
        let store_mb = (rss_kb() - rss0) as f64 / 1024.0;
        let rss1 = rss_kb();
        let mut exact_store = match VectorStore::new(384, exact_params) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        if let Err(e) = exact_store.push(&refs, &mut |_, _| {}) {
            panic!("{e}");
        }
        let exact_mb = (rss_kb() - rss1) as f64 / 1024.0;
        let mut hits = 0usize;
        let (mut ms, mut exact_ms) = (Vec::new(), Vec::new());
        for q in &queries {
            let t = Instant::now();
            let got = store.search(q, 10, &|vid| Some(vid));
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let exact = exact_store.search(q, 10, &|vid| Some(vid));
            exact_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let truth: std::collections::BTreeSet<u32> = exact.iter().map(|e| e.0).collect();
            hits += got.iter().filter(|g| truth.contains(&g.0)).count();
        }
        let recall = hits as f64 / (10 * queries.len()) as f64;
        let (p50, p95) = (percentile(&mut ms, 0.5), percentile(&mut ms, 0.95));
        let (e50, e95) = (
            percentile(&mut exact_ms, 0.5),
            percentile(&mut exact_ms, 0.95),
        );
        println!(
            "| {n} | {} | {:.0} | {store_mb:.0} | {recall:.4} | {p50:.3} | {p95:.3} | {e50:.3} | {e95:.3} | {exact_mb:.0} | {:.2} |",
            store.graphs(),
            n as f64 / build,
            p50 / e50
        );
        vector_rows.push(serde_json::json!({"vectors": n, "real": real.is_some(), "params": format!("{params:?}"), "graphs": store.graphs(), "buildPerSec": n as f64 / build, "storeMB": store_mb, "recall10": recall, "p50": p50, "p95": p95, "exactP50": e50, "exactP95": e95, "exactMB": exact_mb}));
    }
    json.insert("vectors".into(), vector_rows.into());

    if arg("--vectors-only").is_some() {
        return;
    }
    println!("\n## Whole query() (synthetic chunks from the dev corpora, lexical embedder, default options)\n");
    println!("| chunks | build s | chunks/s | serialized bytes/chunk | deserialize ms | query p50 ms | p95 ms |");
    println!("|---|---|---|---|---|---|---|");
    let pool = sentences();
    let e = Embedder::lexical();
    let mut query_rows = Vec::new();
    for &n in sizes.iter().filter(|_| !skip) {
        let docs = chunk_docs(&pool, n);
        let mut index = match Index::new(&e, IndexOptions::default()) {
            Ok(i) => i,
            Err(err) => panic!("{err}"),
        };
        let t = Instant::now();
        if let Err(err) = index.add(&docs, &e, &mut |_| {}) {
            panic!("{err}");
        }
        let build = t.elapsed().as_secs_f64();
        let bytes = index.serialize().unwrap_or_default();
        let t = Instant::now();
        let back = Index::deserialize(&bytes);
        let deser = t.elapsed().as_secs_f64() * 1e3;
        drop(back);
        // The vector side always runs (the lexical embedder's default dense weight is 0), so
        // the timing includes what a MiniLM query's search costs.
        let options = QueryOptions {
            dense_weight: Some(1.0),
            ..QueryOptions::default()
        };
        let mut ms = Vec::new();
        for i in 0..nq {
            let q = &pool[(i * 7919) % pool.len()];
            let q: String = q.split(' ').take(8).collect::<Vec<_>>().join(" ");
            let t = Instant::now();
            let out = index.query(&q, &options, &e);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(out.is_ok());
        }
        dump(&index, &e, &pool, nq, 8, "lexical");
        let (p50, p95) = (percentile(&mut ms, 0.5), percentile(&mut ms, 0.95));
        println!(
            "| {} | {build:.1} | {:.0} | {:.0} | {deser:.1} | {p50:.3} | {p95:.3} |",
            index.chunks(),
            index.chunks() as f64 / build,
            bytes.len() as f64 / index.chunks().max(1) as f64
        );
        query_rows.push(serde_json::json!({"chunks": index.chunks(), "buildSec": build, "bytesPerChunk": bytes.len() as f64 / index.chunks().max(1) as f64, "deserializeMs": deser, "p50": p50, "p95": p95}));
    }
    json.insert("query".into(), query_rows.into());

    #[cfg(feature = "embed")]
    {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        let model = std::fs::read(dir.join("model.onnx"));
        let tok = std::fs::read(dir.join("tokenizer.json"));
        if let (Ok(m), Ok(t)) = (model, tok) {
            if let Ok(minilm) = Embedder::from_bytes(&m, &t) {
                let mut ms = Vec::new();
                for i in 0..nq.min(100) {
                    let q = &pool[(i * 7919) % pool.len()];
                    let q: String = q.split(' ').take(12).collect::<Vec<_>>().join(" ");
                    let t = Instant::now();
                    let _ = minilm.embed_one(&q);
                    ms.push(t.elapsed().as_secs_f64() * 1e3);
                }
                let (p50, p95) = (percentile(&mut ms, 0.5), percentile(&mut ms, 0.95));
                println!("\nMiniLM query embedding (12 words): p50 {p50:.2} ms, p95 {p95:.2} ms");
                json.insert(
                    "minilmQueryEmbed".into(),
                    serde_json::json!({"p50": p50, "p95": p95}),
                );
            }
        }
    }

    #[cfg(feature = "embed")]
    if let Some(path) = arg("--vectors") {
        minilm_queries(&sizes, nq, &pool, &read_vectors(&path), &mut json);
    }

    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/out");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(
        out.join("query.json"),
        serde_json::Value::Object(json).to_string(),
    );
}

/// `n` chunk-sized documents (4–8 sentences of `pool`, ~800 characters each), the same for a
/// given `n` in every run.
fn chunk_docs(pool: &[String], n: usize) -> Vec<Document> {
    let mut rng = Rng(42);
    (0..n)
        .map(|i| {
            let k = 4 + rng.below(5);
            let text: Vec<&str> = (0..k)
                .map(|_| pool[rng.below(pool.len())].as_str())
                .collect();
            Document::new(format!("d{i}"), text.join(" "))
        })
        .collect()
}
