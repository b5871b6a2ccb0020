//! `compress` natively, on the same tasks as `bench/compress_speed.mjs` (which writes them and
//! runs this beside the wasm build and CCE in Node; see that file).
//!
//! ```text
//! cargo bench --bench compress -- <tasks.json> [rounds]
//! ```
//!
//! `tasks.json`: `[{"config": "default", "messages": [...], "options": {...}}, ...]`. For every
//! config, each round compresses every task once through the value API (`compress`, messages
//! already parsed) and once through the text API (`compress_json`, JSON text in and out); the
//! configs and the two APIs take turns within a round, so a busy machine slows all of them
//! alike. Prints one JSON object: per config, the median over rounds of the total milliseconds
//! of each API, and the number of tasks.

use std::collections::BTreeMap;
use std::time::Instant;

use condense::compress::{compress, compress_json, CompressContext, CompressOptions};
use serde_json::Value;

struct Task {
    messages: Vec<Value>,
    text: String,
    options: CompressOptions,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let path = args
        .first()
        .ok_or("usage: cargo bench --bench compress -- <tasks.json> [rounds]")?;
    let rounds: usize = args.get(1).map(|r| r.parse()).transpose()?.unwrap_or(5);
    let all: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut configs: BTreeMap<String, Vec<Task>> = BTreeMap::new();
    for t in all {
        let config = t["config"]
            .as_str()
            .ok_or("a task without config")?
            .to_owned();
        let messages = t["messages"]
            .as_array()
            .ok_or("a task without messages")?
            .clone();
        let text = serde_json::to_string(&messages)?;
        let options = CompressOptions::from_value(&t["options"])?;
        configs.entry(config).or_default().push(Task {
            messages,
            text,
            options,
        });
    }
    let mut object: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut string: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    // One warm-up round, then the timed ones.
    for round in 0..=rounds {
        for (config, tasks) in &configs {
            let t0 = Instant::now();
            for t in tasks {
                std::hint::black_box(compress(&t.messages, &t.options, CompressContext::new())?);
            }
            let t1 = Instant::now();
            for t in tasks {
                std::hint::black_box(compress_json(&t.text, &t.options, CompressContext::new())?);
            }
            let t2 = Instant::now();
            if round > 0 {
                object
                    .entry(config)
                    .or_default()
                    .push((t1 - t0).as_secs_f64() * 1e3);
                string
                    .entry(config)
                    .or_default()
                    .push((t2 - t1).as_secs_f64() * 1e3);
            }
        }
    }
    let mut out = serde_json::Map::new();
    for (config, tasks) in &configs {
        out.insert(
            config.clone(),
            serde_json::json!({
                "tasks": tasks.len(),
                "objectMs": median(object.remove(config.as_str()).unwrap_or_default()),
                "stringMs": median(string.remove(config.as_str()).unwrap_or_default()),
            }),
        );
    }
    println!("{}", Value::Object(out));
    Ok(())
}
