//! The native CLI: JSONL in, JSONL out, per-line errors, exit codes.
#![cfg(not(target_arch = "wasm32"))]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn condense(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn condense");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
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
