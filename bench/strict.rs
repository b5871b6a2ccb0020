//! What the strict JSON pass (`message::check_json`: duplicate keys and nesting) costs, beside
//! the operations that run it, on the same conversations in the same run (docs/hardening.md).
//!
//! ```text
//! cargo bench --bench strict -- [FILE.jsonl ...] [--rounds N]
//! ```
//!
//! Each FILE holds one `{"messages": [...]}` per line (default: the dev sets in
//! ../shared/data/conversations, else the fixtures). Every round times, over all conversations
//! as JSON text: `check_json` alone, `RawDocument::parse` (which runs it), `validate_json`,
//! `apply_watermark_json` and `compress_json` with the defaults, each in turn, so a busy machine
//! slows them alike. Prints one JSON object: per operation the median over rounds of the total
//! milliseconds, and the share of it that `check_json` is.

use std::time::Instant;

use condense::compress::{compress_json, CompressContext, CompressOptions};
use condense::message::{check_json, validate_json, RawDocument, ValidateOptions, MAX_DEPTH};
use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};
use serde_json::Value;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut rounds = 7usize;
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--rounds" {
            rounds = it.next().ok_or("--rounds N")?.parse()?;
        } else {
            files.push(a.clone());
        }
    }
    if files.is_empty() {
        let dev = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/conversations");
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        for (dir, names) in [
            (
                dev,
                [
                    "sharegpt_dev.jsonl",
                    "tool_sessions_dev_anthropic.jsonl",
                    "tool_sessions_dev_openai.jsonl",
                ],
            ),
            (
                fixtures,
                [
                    "sharegpt_sample.jsonl",
                    "tool_sessions_anthropic_sample.jsonl",
                    "tool_sessions_openai_sample.jsonl",
                ],
            ),
        ] {
            let found: Vec<String> = names
                .iter()
                .map(|n| format!("{dir}/{n}"))
                .filter(|p| std::path::Path::new(p).exists())
                .collect();
            if found.len() == names.len() {
                files = found;
                break;
            }
        }
    }
    let mut texts = Vec::new();
    for f in &files {
        for line in std::fs::read_to_string(f)?.lines() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)?;
            texts.push(serde_json::to_string(&v["messages"])?);
        }
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let (state, wm, validate, compress) = (
        WatermarkState::default(),
        WatermarkOptions::default(),
        ValidateOptions::default(),
        CompressOptions::default(),
    );
    type Op<'a> = (&'static str, Box<dyn Fn(&str) -> bool + 'a>);
    let ops: Vec<Op<'_>> = vec![
        (
            "check_json",
            Box::new(|t| check_json(t, "", MAX_DEPTH).is_ok()),
        ),
        (
            "RawDocument::parse",
            Box::new(|t| RawDocument::parse(t).is_ok()),
        ),
        (
            "validate_json",
            Box::new(|t| validate_json(t, &validate).is_ok()),
        ),
        (
            "apply_watermark_json",
            Box::new(|t| apply_watermark_json(t, &state, &wm).is_ok()),
        ),
        (
            "compress_json",
            Box::new(|t| compress_json(t, &compress, CompressContext::new()).is_ok()),
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); ops.len()];
    for round in 0..=rounds {
        for (i, (name, op)) in ops.iter().enumerate() {
            let t0 = Instant::now();
            for t in &texts {
                if !std::hint::black_box(op(t)) {
                    return Err(format!("{name} refused a conversation").into());
                }
            }
            if round > 0 {
                times[i].push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    let check = medians[0];
    let mut out = serde_json::Map::new();
    out.insert("conversations".into(), texts.len().into());
    out.insert("bytes".into(), bytes.into());
    out.insert("rounds".into(), rounds.into());
    for ((name, _), ms) in ops.iter().zip(&medians) {
        out.insert(
            (*name).into(),
            serde_json::json!({
                "ms": (ms * 1000.0).round() / 1000.0,
                "checkShare": ((check / ms) * 1000.0).round() / 1000.0,
            }),
        );
    }
    println!("{}", Value::Object(out));
    Ok(())
}
