//! The native CLI: JSONL in, JSONL out, per-line errors, exit codes.
#![cfg(not(target_arch = "wasm32"))]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn condense(args: &[&str], stdin: &str) -> Output {
    condense_bytes(args, stdin.as_bytes())
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each output line is JSON"))
        .collect()
}

const FIXTURES: &str = include_str!("fixtures/watermark_sessions_dev.jsonl");

#[test]
fn watermark_over_the_dev_sessions() {
    let out = condense(&["watermark"], FIXTURES);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = lines(&out);
    assert_eq!(got.len(), 10);
    for (line, input) in got.iter().zip(FIXTURES.lines()) {
        let input: Value = serde_json::from_str(input).unwrap();
        assert_eq!(line["id"], input["id"]);
        assert_eq!(line["state"]["watermark"], input["expected"]["watermark"]);
        assert!(line["stats"]["charsAfter"].as_u64() <= line["stats"]["charsBefore"].as_u64());
    }
}

#[test]
fn a_bad_line_stops_nothing() {
    let good = FIXTURES.lines().next().unwrap();
    let input = format!(
        "{good}\nnot json\n{{\"id\": \"x\", \"messages\": [{{\"role\": \"user\", \"content\": 3}}]}}\n{{\"id\": \"y\"}}\n{good}\n"
    );
    let out = condense(&["watermark"], &input);
    assert_eq!(out.status.code(), Some(1));
    let got = lines(&out);
    assert_eq!(got.len(), 5);
    assert!(got[0]["messages"].is_array());
    assert_eq!(
        got[1]["id"], 2,
        "unparseable lines are named by their line number"
    );
    assert_eq!(got[1]["error"]["code"], "invalid_json");
    assert_eq!(got[2]["id"], "x");
    assert_eq!(got[2]["error"]["code"], "invalid_message");
    assert_eq!(got[2]["error"]["path"], "messages[0].content");
    assert_eq!(got[3]["error"]["path"], "messages");
    assert_eq!(got[4], got[0]);
}

#[test]
fn options_default_and_per_line() {
    let good = FIXTURES.lines().next().unwrap();
    let mut record: Value = serde_json::from_str(good).unwrap();
    record["options"] = serde_json::json!({"placeholder": false});
    let input = format!("{good}\n{record}\n");
    let out = condense(
        &["watermark", "--options", r#"{"placeholder": true}"#],
        &input,
    );
    assert!(out.status.success());
    let got = lines(&out);
    assert!(got[0]["stats"]["placeholders"].as_u64().unwrap() > 0);
    assert_eq!(got[1]["stats"]["placeholders"], 0, "the line's options win");

    let out = condense(&["watermark", "--options", r#"{"keepLast": 1}"#], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("options.keepLast"));
    let out = condense(&["frobnicate"], "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn untouched_messages_are_byte_identical() {
    // Unusual spacing inside a message after the watermark survives as it is.
    let line = r#"{"id":1,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"ls","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"t"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"compress_to_checkpoint","input":{}}]},{ "role" : "user",  "content":[{"type":"tool_result","tool_use_id":"c","content":"ok \u00e9"}]}]}"#;
    let out = condense(&["watermark"], line);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r#"{ "role" : "user",  "content":[{"type":"tool_result","tool_use_id":"c","content":"ok \u00e9"}]}"#));
}

#[test]
fn validate_reports_every_violation() {
    let input = r#"{"id":"v","messages":[{"role":"assistant","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}]}"#;
    let out = condense(&["validate", "--format", "anthropic"], input);
    assert!(out.status.success());
    let got = lines(&out);
    assert_eq!(got[0]["id"], "v");
    assert_eq!(got[0]["valid"], false);
    let codes: Vec<&str> = got[0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["first_not_user", "same_role_run", "orphan_tool_use"]
    );

    let out = condense(&["validate"], FIXTURES);
    assert!(lines(&out).iter().all(|l| l["valid"] == true));
}

#[test]
fn index_then_query_with_per_line_errors() {
    let dir = std::env::temp_dir().join(format!("condense-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let index = dir.join("index.bin");
    let docs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/retrieval/docs.jsonl"
    );
    let index_arg = index.to_str().expect("utf-8 path");
    let out = condense(
        &["index", "--docs", docs, "--out", index_arg, "--lexical"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let input = concat!(
        r#"{"_id": "q1", "text": "information retrieval systems evaluation"}"#,
        "\n",
        r#"{"id": "q2", "text": ""}"#,
        "\n",
        r#"{"id": "q3", "question": "eye lens", "options": {"topN": 2, "format": "json"}}"#,
        "\n",
        "not json\n",
    );
    let out = condense(&["query", "--index", index_arg], input);
    assert_eq!(out.status.code(), Some(1), "bad lines make the exit code 1");
    let got = lines(&out);
    assert_eq!(got.len(), 4);
    assert_eq!(got[0]["id"], "q1");
    assert!(!got[0]["results"].as_array().expect("results").is_empty());
    assert!(got[0]["ms"].as_f64().is_some());
    assert_eq!(got[1]["error"]["code"], "invalid_input");
    assert_eq!(got[1]["error"]["path"], "question");
    assert!(got[2]["results"].as_array().expect("results").len() <= 2);
    assert!(got[2]["text"].as_str().expect("text").starts_with('['));
    assert_eq!(got[3]["error"]["code"], "invalid_input");

    // A usage error (bad default options) exits 2; an unreadable index exits 1.
    let bad = condense(
        &["query", "--index", index_arg, "--options", r#"{"topN": 0}"#],
        "",
    );
    assert_eq!(bad.status.code(), Some(2));
    let missing = condense(&["query", "--index", "/nonexistent/index.bin"], "");
    assert_eq!(missing.status.code(), Some(1));
    std::fs::write(&index, b"CNDX garbage").expect("write");
    let corrupt = condense(&["query", "--index", index_arg], "");
    assert_eq!(corrupt.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&corrupt.stderr).contains("invalid_index"));

    let embedded = condense(
        &["embed", "--lexical"],
        "{\"id\": 1, \"text\": \"hello\"}\n",
    );
    let v = lines(&embedded);
    assert_eq!(v[0]["vector"].as_array().map(Vec::len), Some(384));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compress_token_counter_flag() {
    let line = r#"{"id":"a","messages":[{"role":"user","content":"hello there"}],"options":{"method":"abstractive"}}"#;
    let out = condense(&["compress", "--token-counter", "estimate"], line);
    assert!(out.status.success());
    let got = lines(&out);
    assert_eq!(got[0]["stats"]["tokensBefore"], 2);
    // abstractive has no summarizer in the CLI: extractive, with a warning.
    assert!(got[0]["stats"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("abstractive"));
    let out = condense(&["compress", "--token-counter", "o200k"], line);
    assert_eq!(out.status.code(), Some(2));
    // `model` needs the model (or the embed feature): a usage error naming the way out, or
    // with the model files present, an exact count.
    let out = condense(
        &[
            "compress",
            "--token-counter",
            "model",
            "--model-dir",
            "/nonexistent",
        ],
        line,
    );
    assert!(!out.status.success());
}

/// The context cases the CLI can express (a cache, the lexical embedder, options; not a
/// caller's counter or a summariser) give the outcome `tests/compress_context_cases.json`
/// says, as in Rust and in the npm package.
#[test]
fn compress_context_cases() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/compress_context_cases.json")).unwrap();
    let messages = &fixture["messages"];
    let dir = std::env::temp_dir().join(format!("condense-cli-cases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ran = 0;
    for case in fixture["cases"].as_array().unwrap() {
        if case["counter"] == true || case["summarizer"] == true {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let line =
            serde_json::json!({"id": name, "messages": messages, "options": case["options"]});
        let cache = dir.join(format!("{ran}.json"));
        let mut args = vec!["compress"];
        if case["cache"] == true {
            args.extend(["--cache", cache.to_str().unwrap()]);
        }
        if case["embedder"] == "lexical" {
            args.push("--lexical");
        }
        let out = condense(&args, &line.to_string());
        let got = lines(&out);
        match &case["expect"] {
            Value::String(ok) if ok == "ok" => {
                assert!(out.status.success(), "{name}: {got:?}");
                assert!(got[0]["messages"].is_array(), "{name}");
                assert_eq!(
                    got[0]["stats"]["cacheHits"].is_number(),
                    case["cache"] == true,
                    "{name}"
                );
            }
            want => {
                assert_eq!(got[0]["error"]["code"], want["code"], "{name}: {got:?}");
                assert_eq!(got[0]["error"]["path"], want["path"], "{name}");
            }
        }
        ran += 1;
    }
    assert!(ran >= 6, "{ran}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// [`condense`] with stdin as bytes (which need not be UTF-8).
fn condense_bytes(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn condense");
    // A usage error exits before reading stdin: the write may then meet a closed pipe, which
    // is not the test's failure (its exit code and output are what the tests look at).
    match child.stdin.take().expect("stdin").write_all(stdin) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().expect("wait")
}

// Finding 9: the CLI stopped at a line that is not UTF-8, and the lines after it were never
// processed. Now the line gets an error line and the next lines go on.
#[test]
fn a_line_that_is_not_utf8_is_an_error_line_and_the_next_lines_go_on() {
    let mut stdin = Vec::new();
    stdin.extend_from_slice(br#"{"id":1,"messages":[{"role":"user","content":"a"}]}"#);
    stdin.extend_from_slice(
        b"\n{\"id\":2,\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}\r\n",
    );
    stdin.extend_from_slice(br#"{"id":3,"messages":[{"role":"user","content":"c"}]}"#);
    stdin.push(b'\n');
    for command in ["validate", "watermark", "compress"] {
        let out = condense_bytes(&[command], &stdin);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let got = lines(&out);
        assert_eq!(got.len(), 3, "{command}");
        assert_eq!(got[0]["id"], 1);
        assert_eq!(
            got[1]["id"], 2,
            "the line number stands for the unreadable id"
        );
        assert_eq!(got[1]["error"]["code"], "invalid_json", "{command}");
        assert_eq!(got[2]["id"], 3);
        assert!(got[2].get("error").is_none(), "{command}");
    }
}

// Findings 4 and the duplicate-key rule, through the CLI: the same codes and paths as the
// library and the npm package.
#[test]
fn lines_with_a_key_twice_are_error_lines() {
    let stdin = [
        r#"{"id":1,"messages":[],"messages":[{"role":"user","content":"x"}]}"#,
        r#"{"id":2,"messages":[{"role":"user","role":"assistant","content":"x"}]}"#,
        r#"{"id":3,"messages":[{"role":"user","content":"x"}],"options":{"placeholder":true,"placeholder":false}}"#,
        r#"{"id":4,"messages":{"model":"m","messages":[],"messages":[{"role":"user","content":"x"}]}}"#,
    ]
    .join("\n");
    let out = condense(&["watermark"], &stdin);
    assert_eq!(out.status.code(), Some(1));
    let got = lines(&out);
    let codes: Vec<(&str, &str)> = got
        .iter()
        .map(|l| {
            (
                l["error"]["code"].as_str().unwrap_or(""),
                l["error"]["path"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("invalid_json", "messages"),
            ("invalid_json", "messages[0].role"),
            ("invalid_json", "options.placeholder"),
            ("invalid_json", "messages.messages"),
        ]
    );
    assert_eq!(
        got[1]["id"], 2,
        "the id is read when the repeated key is elsewhere"
    );
    let out = condense(
        &[
            "watermark",
            "--options",
            r#"{"format":"openai","format":"anthropic"}"#,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid_json at options.format"));
}

// Finding 1: a crafted HNSW neighbour id made `condense query --index FILE` panic inside
// instant-distance (exit code 101), and every line after was lost. Finding 3: counts that
// overflow. Now reading the file is an `invalid_index` error (exit 1) before any line.
#[test]
fn crafted_index_files_are_invalid_index() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    for name in [
        "hnsw-neighbour.cndx",
        "chunk-count-overflow.cndx",
        "bm25-total-length.cndx",
    ] {
        let path = dir.join(name);
        let out = condense(
            &["query", "--index", path.to_str().unwrap_or_default()],
            "{\"id\":1,\"text\":\"parser token\",\"options\":{\"denseWeight\":1,\"minScore\":0}}\n",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("invalid_index"), "{name}: {stderr}");
    }
}
