//! The README's Rust examples, compiled and run. Each ```rust block of README.md is the body of
//! one test below, between its `// README begin` and `// README end` lines, and
//! `the_readme_shows_these_examples` checks that the README holds exactly these bodies, in this
//! order: an example edited in one place and not the other fails the suite.

type Outcome = Result<(), Box<dyn std::error::Error>>;

#[test]
fn readme_watermark() -> Outcome {
    // README begin
    use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};

    let body = r#"[
      {"role": "user", "content": "look at the logs"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_logs", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "…100 kB…"},
                                   {"type": "text", "text": "new task: fix the build"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "compress_to_checkpoint", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}
    ]"#;
    let out = apply_watermark_json(
        body,
        &WatermarkState::default(),
        &WatermarkOptions::default(),
    )?;
    assert_eq!(out.state.watermark.as_deref(), Some("t2")); // keep it for the next request
    assert!(out.json.contains("new task: fix the build") && !out.json.contains("read_logs"));
    // README end
    Ok(())
}

#[test]
fn readme_compress() -> Outcome {
    // README begin
    use condense::compress::{compress, uncompress, CompressContext, CompressOptions};

    let messages: Vec<serde_json::Value> = (0..8)
        .map(|i| serde_json::json!({
            "role": if i % 2 == 0 { "user" } else { "assistant" },
            "content": format!("Step {i}: the deploy of service_{i} failed after 30 seconds because \
                                parse_config returned an empty map. We retried it twice. It worked \
                                on the third attempt, see src/worker.rs:88 for the retry loop."),
        }))
        .collect();
    let options = CompressOptions::from_json(r#"{"recencyWindow": 2, "tokenBudget": 300}"#)?;
    let out = compress(&messages, &options, CompressContext::new())?;
    println!(
        "{} → {} tokens, fits: {:?}",
        out.stats.tokens_before, out.stats.tokens_after, out.stats.fits
    );
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
    // README end
    Ok(())
}

#[test]
fn readme_query() -> Outcome {
    // README begin
    use condense::embed::Embedder;
    use condense::retrieve::index::{Document, Index, IndexOptions};
    use condense::retrieve::options::QueryOptions;

    let embedder = Embedder::lexical();
    let mut index = Index::new(&embedder, IndexOptions::default())?;
    let docs = [Document::new(
        "keys",
        "# Keys\n\nRotate API keys with `condense keys rotate`.",
    )];
    index.add(&docs, &embedder, &mut |_| {})?;
    let out = index.query(
        "how do I rotate the API keys?",
        &QueryOptions::default(),
        &embedder,
    )?;
    assert_eq!(out.results[0].doc_id, "keys");
    println!("{}", out.text);
    // README end
    Ok(())
}

/// The bodies between the markers of this file, unindented.
fn bodies(source: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in source.lines() {
        match line.trim() {
            "// README begin" => current = Some(Vec::new()),
            "// README end" => {
                if let Some(lines) = current.take() {
                    bodies.push(lines.join("\n") + "\n");
                }
            }
            _ => {
                if let Some(lines) = current.as_mut() {
                    lines.push(line.strip_prefix("    ").unwrap_or(line));
                }
            }
        }
    }
    bodies
}

/// The ```rust blocks of a markdown text.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find("```rust\n") {
        let after = &rest[start + "```rust\n".len()..];
        let Some(end) = after.find("```") else { break };
        blocks.push(after[..end].to_string());
        rest = &after[end + 3..];
    }
    blocks
}

#[test]
fn the_readme_shows_these_examples() {
    let readme = include_str!("../README.md");
    let ours = bodies(include_str!("readme.rs"));
    assert_eq!(ours.len(), 3, "this file's examples");
    assert_eq!(
        rust_blocks(readme),
        ours,
        "README.md's ```rust blocks differ from tests/readme.rs"
    );
}
