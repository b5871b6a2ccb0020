//! Where the memory of a MiniLM load goes, natively: `cargo bench --bench embed_footprint`.
//!
//! A counting allocator around the system one keeps the live heap bytes and their high-water
//! mark; `condense::embed::trace_load` calls back as each stage of the load ends, and each
//! stage's row gives the time since the start, the live heap after the stage, the heap's peak
//! during the stage, and the process's RSS (`/proc/self/status`: `VmRSS`, and `VmHWM`, its
//! peak). Then: the first call (32 texts of 128 tokens, batch 32), the input bytes dropped,
//! the embedder dropped. One JSON line per row, then a Markdown table (`bench/embed-footprint`
//! runs it beside the wasm build's trace).
//!
//! The bytes do not depend on the machine's load, so one run gives them; the times do.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use condense::clock::now_ms;
use condense::embed::{EmbedOptions, Embedder};
use sha2::Digest;

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` with the caller's arguments; only the counters
// are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MB: f64 = 1024.0 * 1024.0;

/// `VmRSS` and `VmHWM` of this process, in MiB.
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[derive(Debug)]
struct Row {
    stage: String,
    ms: f64,
    live: f64,
    peak: f64,
    rss: f64,
    hwm: f64,
}

struct Trace {
    start: f64,
    rows: Vec<Row>,
}

impl Trace {
    fn mark(&mut self, stage: &str) {
        let (rss, hwm) = rss();
        let live = LIVE.load(Ordering::Relaxed);
        self.rows.push(Row {
            stage: stage.to_string(),
            ms: now_ms() - self.start,
            live: live as f64 / MB,
            peak: PEAK.swap(live, Ordering::Relaxed) as f64 / MB,
            rss,
            hwm,
        });
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench embed_footprint: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var_os("CONDENSE_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
    let trace = Rc::new(RefCell::new(Trace {
        start: now_ms(),
        rows: Vec::new(),
    }));
    trace.borrow_mut().mark("before");
    let onnx = std::fs::read(dir.join("model.onnx"))
        .map_err(|e| format!("{}: {e} (run scripts/fetch-models)", dir.display()))?;
    let tokenizer = std::fs::read(dir.join("tokenizer.json"))?;
    trace.borrow_mut().mark("input read");
    let load_start = now_ms();
    let on_stage = {
        let trace = Rc::clone(&trace);
        move |stage: &'static str| trace.borrow_mut().mark(stage)
    };
    let embedder = condense::embed::trace_load(on_stage, || {
        Embedder::from_bytes_with(&onnx, &tokenizer, EmbedOptions::default())
    })?;
    let load_ms = now_ms() - load_start;
    trace.borrow_mut().mark("loaded");
    drop(onnx);
    drop(tokenizer);
    trace.borrow_mut().mark("input dropped");
    // The first call: 32 texts of ~128 tokens in one model call's worth of batches.
    let text =
        "the quick brown fox jumps over the lazy dog while the engine counts bytes ".repeat(9);
    let texts: Vec<&str> = (0..32).map(|_| text.as_str()).collect();
    let vectors = embedder.embed(&texts)?;
    if vectors.len() != 32 {
        return Err("wrong vector count".into());
    }
    trace.borrow_mut().mark("first call (32 × 128 tokens)");
    // The vectors' bits, for comparing builds: the reference fixture's texts in one batch and
    // one by one (natively single texts run on the bucket plans).
    let fixture: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/embed/reference.json"),
    )?)?;
    let cases = fixture["cases"].as_array().ok_or("fixture without cases")?;
    let texts: Vec<&str> = cases.iter().filter_map(|c| c["text"].as_str()).collect();
    let mut bits = sha2::Sha256::new();
    for v in embedder.embed(&texts)? {
        v.iter()
            .for_each(|x| bits.update(x.to_bits().to_le_bytes()));
    }
    for t in &texts {
        let v = embedder.embed_one(t)?;
        v.iter()
            .for_each(|x| bits.update(x.to_bits().to_le_bytes()));
    }
    let digest: String = bits.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let info = embedder.load_info().ok_or("no load info")?;
    drop(embedder);
    trace.borrow_mut().mark("embedder dropped");

    let rows = &trace.borrow().rows;
    let base = &rows[0];
    for r in rows.iter() {
        println!(
            "{}",
            serde_json::json!({
                "case": "embed/footprint/native",
                "stage": r.stage,
                "ms": (r.ms * 10.0).round() / 10.0,
                "live_mb": (r.live * 10.0).round() / 10.0,
                "peak_mb": (r.peak * 10.0).round() / 10.0,
                "rss_mb": (r.rss * 10.0).round() / 10.0,
                "hwm_mb": (r.hwm * 10.0).round() / 10.0,
            })
        );
    }
    println!(
        "{}",
        serde_json::json!({
            "case": "embed/footprint/native/summary",
            "load_ms": (load_ms * 10.0).round() / 10.0,
            "integer_matmuls": info.integer_matmuls,
            "rss_before_mb": (base.rss * 10.0).round() / 10.0,
            "vectors_sha256": digest,
        })
    );
    println!("\n| stage | ms | live heap MiB | heap peak in stage MiB | RSS MiB | RSS peak MiB |");
    println!("|---|---|---|---|---|---|");
    for r in rows.iter() {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r.stage, r.ms, r.live, r.peak, r.rss, r.hwm
        );
    }
    Ok(())
}
