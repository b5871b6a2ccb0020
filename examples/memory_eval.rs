//! Conversation memory as retrieval: index an agent's earlier messages, query with the next user
//! turn, and score whether the messages the next answer draws on come back
//! (bench/data/memory/README.md says how the set is built from `../shared/data/conversations/`).
//!
//! ```text
//! cargo run --release --example memory_eval -- [--data ../shared/data/conversations] [--write]
//! ```
//!
//! Per conversation: the last user message with text that has an assistant reply and at least 4
//! messages before it is the query; every earlier message is one document (its text; an OpenAI
//! tool call is its name and arguments); a document is relevant when it contains, as a whole
//! token (case-insensitive), a key token (`condense::text::keys`: numbers, identifiers, paths,
//! URLs, code spans) of the reply that the query does not contain. Conversations without a
//! relevant message are left out. Systems: BM25 alone, MiniLM alone, the hybrid with the default
//! (convex) fusion and with RRF; compression off, one result per message. Metrics over the
//! queries: R@5 and nDCG@10 (binary gains), and the share of queries whose first result is
//! relevant. `--write` writes the set (ids only) to bench/data/memory/.

use std::fs;
use std::io::Write;

use condense::retrieve::index::{Document, Index, IndexOptions};
use condense::retrieve::options::QueryOptions;
use condense::text::keys::{contains_token, extract};

mod common;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

/// The text of a message: string content, text blocks, tool calls (name and arguments) and tool
/// results, one per line.
fn text_of(m: &serde_json::Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    match m.get("content") {
        Some(serde_json::Value::String(s)) => parts.push(s.clone()),
        Some(serde_json::Value::Array(blocks)) => {
            for b in blocks {
                if let Some(t) = b.get("text").and_then(|t| t.as_str()) {
                    parts.push(t.to_string());
                } else if let Some(c) = b.get("content").and_then(|t| t.as_str()) {
                    parts.push(c.to_string());
                }
            }
        }
        _ => {}
    }
    if let Some(calls) = m.get("tool_calls").and_then(|c| c.as_array()) {
        for c in calls {
            let f = &c["function"];
            parts.push(format!(
                "{}({})",
                f["name"].as_str().unwrap_or(""),
                f["arguments"].as_str().unwrap_or("")
            ));
        }
    }
    parts.join("\n")
}

fn asks_something(m: &serde_json::Value) -> bool {
    match m.get("content") {
        Some(serde_json::Value::String(_)) => true,
        Some(serde_json::Value::Array(b)) => b.iter().any(|x| x["type"] == "text"),
        _ => false,
    }
}

struct Case {
    conversation: String,
    /// Index of the query message.
    at: usize,
    /// Relevant earlier message indices.
    relevant: Vec<usize>,
}

fn cases(records: &[serde_json::Value]) -> Vec<Case> {
    let mut out = Vec::new();
    for r in records {
        let Some(ms) = r["messages"].as_array() else {
            continue;
        };
        let Some(k) = (4..ms.len().saturating_sub(1)).rev().find(|&i| {
            ms[i]["role"] == "user" && ms[i + 1]["role"] == "assistant" && asks_something(&ms[i])
        }) else {
            continue;
        };
        let query = text_of(&ms[k]).to_lowercase();
        let reply = text_of(&ms[k + 1]);
        let earlier: Vec<String> = ms[..k].iter().map(|m| text_of(m).to_lowercase()).collect();
        let mut relevant = Vec::new();
        for (key, _) in extract(&reply) {
            let low = key.to_lowercase();
            if contains_token(&query, &low) {
                continue;
            }
            for (j, e) in earlier.iter().enumerate() {
                if contains_token(e, &low) && !relevant.contains(&j) {
                    relevant.push(j);
                }
            }
        }
        relevant.sort_unstable();
        if !relevant.is_empty() {
            out.push(Case {
                conversation: r["id"].as_str().unwrap_or("").to_string(),
                at: k,
                relevant,
            });
        }
    }
    out
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = env!("CARGO_MANIFEST_DIR");
    let data = args
        .iter()
        .position(|a| a == "--data")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| format!("{root}/../shared/data/conversations"));
    let write = args.iter().any(|a| a == "--write");
    let embedder = common::minilm()?;
    let systems: [(&str, &str); 8] = [
        ("BM25", r#""lexicalWeight":1,"denseWeight":0"#),
        (
            "BM25 (no feedback)",
            r#""lexicalWeight":1,"denseWeight":0,"feedback":false"#,
        ),
        ("MiniLM", r#""lexicalWeight":0,"denseWeight":1"#),
        (
            "hybrid (convex, default)",
            r#""lexicalWeight":1,"denseWeight":1"#,
        ),
        (
            "hybrid (convex, no feedback)",
            r#""lexicalWeight":1,"denseWeight":1,"feedback":false"#,
        ),
        (
            "hybrid (RRF)",
            r#""lexicalWeight":1,"denseWeight":1,"fusion":"rrf""#,
        ),
        (
            "hybrid (convex, lexicalWeight 2)",
            r#""lexicalWeight":2,"denseWeight":1"#,
        ),
        (
            "hybrid (convex, lexicalWeight 3)",
            r#""lexicalWeight":3,"denseWeight":1"#,
        ),
    ];
    let off = r#""minScore":0,"ngramThreshold":1,"similarityThreshold":1,"maxChunksPerDoc":1,"topN":100,"truncate":false"#;
    let options: Vec<QueryOptions> = systems
        .iter()
        .map(|(_, w)| QueryOptions::from_json(&format!("{{{off},{w}}}")))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;

    println!("| set | queries | messages / query | relevant / query | system | R@5 | nDCG@10 | first relevant |");
    println!("|---|---|---|---|---|---|---|---|");
    for set in ["sharegpt_dev", "tool_sessions_dev_openai"] {
        let path = format!("{data}/{set}.jsonl");
        let records = common::read_jsonl(&path)?;
        let cases = cases(&records);
        if write {
            let dir = format!("{root}/bench/data/memory");
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut f = fs::File::create(format!("{dir}/{set}.tsv")).map_err(|e| e.to_string())?;
            writeln!(f, "conversation\tquery-message\trelevant-messages")
                .map_err(|e| e.to_string())?;
            for c in &cases {
                let rel: Vec<String> = c.relevant.iter().map(usize::to_string).collect();
                writeln!(f, "{}\t{}\t{}", c.conversation, c.at, rel.join(","))
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut sums = vec![(0f64, 0f64, 0f64); systems.len()];
        let (mut docs_total, mut rel_total) = (0usize, 0usize);
        for c in &cases {
            let Some(r) = records.iter().find(|r| r["id"] == c.conversation.as_str()) else {
                continue;
            };
            let ms = r["messages"].as_array().ok_or("messages")?;
            let docs: Vec<Document> = ms[..c.at]
                .iter()
                .enumerate()
                .map(|(j, m)| Document::new(format!("m{j}"), text_of(m)))
                .filter(|d| !d.text.trim().is_empty())
                .collect();
            docs_total += docs.len();
            rel_total += c.relevant.len();
            let mut index =
                Index::new(&embedder, IndexOptions::default()).map_err(|e| e.to_string())?;
            index
                .add(&docs, &embedder, &mut |_| {})
                .map_err(|e| e.to_string())?;
            let question = text_of(&ms[c.at]);
            let relevant: Vec<String> = c.relevant.iter().map(|j| format!("m{j}")).collect();
            let ideal: f64 = (0..relevant.len().min(10))
                .map(|i| 1.0 / ((i + 2) as f64).log2())
                .sum();
            for (s, o) in options.iter().enumerate() {
                let out = index
                    .query(&question, o, &embedder)
                    .map_err(|e| e.to_string())?;
                let ids: Vec<&str> = out.results.iter().map(|x| x.doc_id.as_str()).collect();
                let hit = |id: &&str| relevant.iter().any(|r| r == id);
                let r5 =
                    ids.iter().take(5).filter(|x| hit(x)).count() as f64 / relevant.len() as f64;
                let dcg: f64 = ids
                    .iter()
                    .take(10)
                    .enumerate()
                    .filter(|(_, x)| hit(x))
                    .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
                    .sum();
                let first = ids.first().is_some_and(hit) as u8 as f64;
                sums[s].0 += r5;
                sums[s].1 += dcg / ideal;
                sums[s].2 += first;
            }
        }
        let n = cases.len().max(1) as f64;
        for ((name, _), (r5, ndcg, first)) in systems.iter().zip(&sums) {
            println!(
                "| {set} | {} | {:.1} | {:.1} | {name} | {:.4} | {:.4} | {:.3} |",
                cases.len(),
                docs_total as f64 / n,
                rel_total as f64 / n,
                r5 / n,
                ndcg / n,
                first / n
            );
        }
    }
    Ok(())
}
