//! applyWatermark at its boundary: the dev fixtures, then one case per behaviour.
#![cfg(not(target_arch = "wasm32"))]

use condense::message::{validate, Format, ValidateOptions};
use condense::watermark::{
    apply_watermark, apply_watermark_json, WatermarkOptions, WatermarkResult, WatermarkState,
};
use serde_json::{json, Value};

fn run(messages: &Value, state: Option<&str>, options: Value) -> WatermarkResult {
    let msgs = messages.as_array().expect("array").clone();
    let state = WatermarkState {
        watermark: state.map(str::to_string),
    };
    let options = WatermarkOptions::from_value(&options).expect("options");
    let out = apply_watermark(&msgs, &state, &options).expect("apply");
    // The string path decides the same.
    let text = serde_json::to_string(&msgs).unwrap();
    let json_out = apply_watermark_json(&text, &state, &options).expect("apply json");
    let reparsed: Vec<Value> = serde_json::from_str(&json_out.json).unwrap();
    assert_eq!(reparsed, out.messages, "string and value paths differ");
    assert_eq!(json_out.stats, out.stats);
    assert_eq!(json_out.state, out.state);
    out
}

fn valid(messages: &[Value], format: Format) -> bool {
    let report = validate(
        messages,
        &ValidateOptions {
            format: Some(format),
        },
    )
    .unwrap();
    if !report.valid {
        eprintln!("{:#?}", report.violations);
    }
    report.valid
}

/// Every text of a message list, in order: string contents and text blocks.
fn texts(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages {
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => {
                for b in blocks {
                    if b["type"] == "text" {
                        out.push(b["text"].as_str().unwrap_or("").to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn block_types(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .map(|b| b["type"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn dev_fixtures_all_pass() {
    let data = include_str!("fixtures/watermark_sessions_dev.jsonl");
    let mut n = 0;
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let record: Value = serde_json::from_str(line).unwrap();
        let id = record["id"].as_str().unwrap();
        let expected = &record["expected"];
        let input = record["messages"].as_array().unwrap().clone();
        let out = run(&record["messages"], None, json!({}));
        assert!(valid(&input, Format::Anthropic), "{id}: input invalid");
        assert!(
            valid(&out.messages, Format::Anthropic),
            "{id}: output invalid"
        );

        if expected["variant"] == "none" {
            assert_eq!(out.messages, input, "{id}: no checkpoint must be a no-op");
            assert_eq!(out.state.watermark, None);
            assert!(out.warnings.is_empty());
            n += 1;
            continue;
        }
        let wm = expected["watermark"].as_str().unwrap();
        let wmi = expected["watermark_message_index"].as_u64().unwrap() as usize;
        assert_eq!(out.state.watermark.as_deref(), Some(wm), "{id}: watermark");
        assert_eq!(out.stats.watermark_index, Some(wmi), "{id}");

        // The suffix comes back unchanged.
        let suffix = &input[wmi..];
        let k = out.messages.len() - suffix.len();
        assert_eq!(&out.messages[k..], suffix, "{id}: suffix changed");
        assert_eq!(
            expected["suffix_messages"].as_u64().unwrap() as usize,
            suffix.len()
        );

        // Every text before the watermark survives, in order; tool blocks and thinking go.
        let prefix = &out.messages[..k];
        let want: Vec<String> = expected["texts_before_watermark"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        assert_eq!(texts(prefix), want, "{id}: texts before the watermark");
        let types = block_types(prefix);
        assert!(
            types.iter().all(|t| t == "text"),
            "{id}: left {types:?} before the watermark"
        );
        let before = &expected["blocks_before_watermark"];
        assert_eq!(
            out.stats.tool_calls_removed as u64,
            before["tool_use"].as_u64().unwrap(),
            "{id}"
        );
        assert_eq!(
            out.stats.tool_results_removed as u64,
            before["tool_result"].as_u64().unwrap()
        );
        assert_eq!(
            out.stats.thinking_removed as u64,
            before["thinking"].as_u64().unwrap()
        );
        assert!(out.stats.chars_after < out.stats.chars_before);

        // Idempotent, and the watermark stays.
        let again = run(&Value::Array(out.messages.clone()), Some(wm), json!({}));
        assert_eq!(again.messages, out.messages, "{id}: not idempotent");
        assert_eq!(again.state.watermark.as_deref(), Some(wm));
        assert!(!again.stats.advanced);
        n += 1;
    }
    assert_eq!(n, 10);
}

fn anthropic_session() -> Value {
    json!([
        {"role": "user", "content": "Find the failing test."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "run the tests", "signature": "sig1"},
            {"type": "text", "text": "Running the suite."},
            {"type": "tool_use", "id": "t1", "name": "run_tests", "input": {"filter": "auth"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "FAILED auth::login (expected 200, got 500) ... a long log of many lines"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "mcp__memory__store", "input": {"fact": "login returns 500"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "stored"},
            {"type": "text", "text": "Good. Now switch to the docs task.", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t3", "name": "read_file", "input": {"path": "docs/index.md"}, "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t3", "content": "# Docs\nWelcome to the project documentation, which is long."}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checkpointing."},
            {"type": "tool_use", "id": "t4", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t4", "content": "ok"}]}
    ])
}

#[test]
fn default_prunes_and_merges() {
    let input = anthropic_session();
    let out = run(&input, None, json!({}));
    assert_eq!(out.state.watermark.as_deref(), Some("t4"));
    assert!(valid(&out.messages, Format::Anthropic));
    // user text, assistant text, user text (merged across dropped messages), then the suffix.
    assert_eq!(
        texts(&out.messages[..3]),
        vec![
            "Find the failing test.",
            "Running the suite.",
            "Good. Now switch to the docs task."
        ]
    );
    assert_eq!(out.messages.len(), 5);
    assert_eq!(out.stats.tool_calls_removed, 3);
    assert_eq!(out.stats.tool_results_removed, 3);
    assert_eq!(out.stats.thinking_removed, 1);
    assert_eq!(out.stats.blocks_removed, 7);
    assert_eq!(
        out.stats.messages_before - out.stats.messages_after,
        out.stats.messages_dropped + out.stats.messages_merged
    );
    // The marker of the removed read_file call moved to the nearest kept block before it.
    assert_eq!(
        out.stats.cache_control_moved, 0,
        "the text block already has one"
    );
    assert_eq!(
        out.messages[2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[test]
fn cache_control_moves_to_the_nearest_kept_block() {
    let input = json!([
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "body", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "text", "text": "next task"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]}
    ]);
    let out = run(&input, None, json!({}));
    assert!(valid(&out.messages, Format::Anthropic));
    assert_eq!(out.stats.cache_control_moved, 1);
    // The removed result sat after "Reading." and before "next task": the marker goes to the
    // kept block just before it, so the cached prefix ends where it did.
    assert_eq!(
        out.messages[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Reading.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]})
    );

    // At most 4 markers: a fifth moved one is dropped with a warning.
    let mut many = input.as_array().unwrap().clone();
    many[0] = json!({"role": "user", "content": [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "d", "cache_control": {"type": "ephemeral"}}]});
    let out = run(&Value::Array(many), None, json!({}));
    assert_eq!(out.stats.cache_control_moved, 0);
    assert_eq!(out.warnings[0].code, "cache_control_dropped");
    assert_eq!(
        out.warnings[0].path.as_deref(),
        Some("messages[2].content[0].cache_control")
    );
}

#[test]
fn not_found_is_a_no_op_with_a_warning() {
    let input = anthropic_session();
    let out = run(&input, Some("toolu_gone"), json!({}));
    assert_eq!(out.messages, *input.as_array().unwrap());
    assert_eq!(out.warnings.len(), 1);
    assert_eq!(out.warnings[0].code, "watermark_not_found");
    assert_eq!(out.state.watermark.as_deref(), Some("toolu_gone"));
    assert_eq!(out.stats.chars_after, out.stats.chars_before);
}

#[test]
fn exclude_and_keep_last_keep_pairs_whole() {
    let input = anthropic_session();
    let out = run(
        &input,
        None,
        json!({"excludeTools": ["mcp__memory__*"], "keepLastToolResults": 1}),
    );
    assert!(valid(&out.messages, Format::Anthropic));
    let s = serde_json::to_string(&out.messages).unwrap();
    assert!(s.contains("mcp__memory__store") && s.contains("\"stored\""));
    assert!(s.contains("docs/index.md"), "the last pair stays");
    assert!(!s.contains("run_tests"));
    assert_eq!(out.stats.pairs_kept, 2);
}

#[test]
fn placeholder_and_cleared_inputs() {
    let input = anthropic_session();
    let out = run(
        &input,
        None,
        json!({"placeholder": true, "clearToolInputs": true}),
    );
    assert!(valid(&out.messages, Format::Anthropic));
    let s = serde_json::to_string(&out.messages[..out.messages.len() - 2]).unwrap();
    assert!(s.contains("[condense: run_tests result t1 pruned,"));
    // "stored" is shorter than any marker: kept as it is.
    assert!(s.contains("\"stored\""));
    assert!(!s.contains("\"filter\""));
    assert!(out.stats.placeholders >= 2);
    assert_eq!(out.stats.inputs_cleared, 3);
    assert!(out.stats.chars_after < out.stats.chars_before);
}

#[test]
fn newest_checkpoint_wins_and_never_moves_back() {
    let mut input = anthropic_session().as_array().unwrap().clone();
    input.push(json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t5", "name": "mcp__nisaba__deactivate_augments", "input": {"patterns": ["x/*"]}}]}));
    input.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t5", "content": "done"}]}));
    let all = Value::Array(input.clone());
    let out = run(&all, None, json!({}));
    assert_eq!(out.state.watermark.as_deref(), Some("t5"));
    // A state already at t5 does not move back to t4.
    let out = run(&all, Some("t5"), json!({}));
    assert_eq!(out.state.watermark.as_deref(), Some("t5"));
    assert!(!out.stats.advanced);
    // From t4, it advances to t5.
    let out = run(&all, Some("t4"), json!({}));
    assert_eq!(out.state.watermark.as_deref(), Some("t5"));
    assert!(out.stats.advanced);
}

#[test]
fn current_turn_thinking_is_protected() {
    // The checkpoint is called mid-turn: the turn's opening thinking (and its call) stay.
    let input = json!([
        {"role": "user", "content": "Do the big refactor."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "s1"},
            {"type": "tool_use", "id": "a", "name": "grep", "input": {"q": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "12 hits in 4 files"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "file body"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]}
    ]);
    let out = run(&input, None, json!({}));
    assert!(valid(&out.messages, Format::Anthropic));
    assert_eq!(
        out.messages[1], input[1],
        "the opening of the current turn is untouched"
    );
    assert_eq!(out.messages[2], input[2]);
    assert_eq!(out.stats.tool_calls_removed, 1);
    assert_eq!(out.stats.thinking_removed, 0);
}

#[test]
fn roles_alternate_into_the_watermark() {
    // Dropping the last tool-only user message would put two assistant messages in a row:
    // the newest pair is kept whole instead.
    let input = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "a", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x y z"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]}
    ]);
    let out = run(&input, None, json!({}));
    assert!(valid(&out.messages, Format::Anthropic));
    assert_eq!(out.messages, *input.as_array().unwrap());
    assert_eq!(out.stats.pairs_kept, 1);
}

#[test]
fn openai_shape() {
    let input = json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "Checking both.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Paris: 18C, light rain, wind 12 km/h from the west"},
        {"role": "tool", "tool_call_id": "c2", "content": "Rome: 24C, sunny, wind 5 km/h from the south"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "compress_to_checkpoint", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c3", "content": "ok"},
        {"role": "user", "content": "Thanks"}
    ]);
    let out = run(&input, None, json!({}));
    assert_eq!(out.state.watermark.as_deref(), Some("c3"));
    assert!(valid(&out.messages, Format::OpenAi));
    assert_eq!(out.messages.len(), 6);
    assert_eq!(
        out.messages[2],
        json!({"role": "assistant", "content": "Checking both."})
    );
    assert_eq!(out.stats.tool_calls_removed, 2);
    assert_eq!(out.stats.tool_results_removed, 2);
    assert_eq!(out.stats.messages_dropped, 2);

    let out = run(
        &input,
        None,
        json!({"placeholder": true, "clearToolInputs": true}),
    );
    assert!(valid(&out.messages, Format::OpenAi));
    assert_eq!(out.messages.len(), 8);
    assert_eq!(
        out.messages[2]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    assert!(out.messages[3]["content"]
        .as_str()
        .unwrap()
        .starts_with("[condense: weather result c1 pruned"));
}

#[test]
fn unknown_fields_and_blocks_pass_through() {
    let input = json!([
        {"role": "user", "content": [{"type": "text", "text": "hi", "citations": [1]}, {"type": "container_upload", "file_id": "f1"}], "metadata": {"k": 1}},
        {"role": "assistant", "id": "msg_1", "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
        {"role": "user", "x-trace": "abc", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}, {"type": "text", "text": "next"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "k", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "k", "content": "ok"}]}
    ]);
    let out = run(&input, None, json!({}));
    assert_eq!(out.messages[0], input[0]);
    assert_eq!(out.messages[1]["id"], "msg_1");
    assert_eq!(out.messages[2]["x-trace"], "abc");
    assert!(valid(&out.messages, Format::Anthropic));
}

#[test]
fn request_bodies_keep_every_other_member_verbatim() {
    let body = r#"{"model":"claude-x", "max_tokens": 1024,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"ls","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"},{"type":"text","text":"new"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"compress_to_checkpoint","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"ok"}]}], "tools": [ {"name":"ls"} ]}"#;
    let out = apply_watermark_json(
        body,
        &WatermarkState::default(),
        &WatermarkOptions::default(),
    )
    .unwrap();
    assert!(out
        .json
        .starts_with(r#"{"model":"claude-x","max_tokens":1024,"messages":["#));
    assert!(out.json.ends_with(r#"],"tools":[ {"name":"ls"} ]}"#));
    // Untouched messages are their input bytes.
    assert!(out.json.contains(r#"{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"compress_to_checkpoint","input":{}}]}"#));
    let v: Value = serde_json::from_str(&out.json).unwrap();
    assert_eq!(v["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn bad_input_is_a_typed_error() {
    let opts = WatermarkOptions::default();
    let st = WatermarkState::default();
    let cases: Vec<(&str, &str, &str)> = vec![
        ("{", "invalid_json", ""),
        ("42", "invalid_input", ""),
        (
            r#"[{"role": 1, "content": "x"}]"#,
            "invalid_message",
            "messages[0].role",
        ),
        (
            r#"[{"role": "user", "content": {"a": 1}}]"#,
            "invalid_message",
            "messages[0].content",
        ),
        (
            r#"[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","name":"n","input":{}}]}]"#,
            "invalid_message",
            "messages[1].content[0].id",
        ),
        (
            r#"[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]"#,
            "invalid_message",
            "messages[0].content[0].tool_use_id",
        ),
        (
            r#"[{"role":"robot","content":"x"}]"#,
            "invalid_message",
            "messages[0].role",
        ),
        (
            r#"[{"role":"system","content":"s"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}]"#,
            "mixed_format",
            "messages[1]",
        ),
    ];
    for (json, code, path) in cases {
        let err = apply_watermark_json(json, &st, &opts).unwrap_err();
        assert_eq!((err.code(), err.path()), (code, path), "{json}");
    }
}

#[test]
fn orphan_results_before_the_watermark_are_removed() {
    // tool_result without its tool_use: invalid input, repaired by pruning.
    let input = json!([
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "x"}, {"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]}
    ]);
    let out = run(&input, None, json!({}));
    assert!(valid(&out.messages, Format::Anthropic));
    assert_eq!(
        out.messages[0],
        json!({"role": "user", "content": [{"type": "text", "text": "hello"}]})
    );
}

#[test]
fn huge_and_deep_messages() {
    let big = "x".repeat(10 * 1024 * 1024);
    let input = json!([
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "cat", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": big}, {"type": "text", "text": "next"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "compress_to_checkpoint", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]}
    ]);
    let out = run(&input, None, json!({}));
    assert!(out.stats.chars_before > 10_000_000);
    assert!(out.stats.chars_after < 1_000);

    // Deep nesting inside messages that are dropped or rewritten: raw surgery never parses it,
    // so it is removed or copied byte for byte. 120 levels of arrays inside a block: within a
    // message's limit (MAX_MESSAGE_DEPTH, 127, the message and its content and block counting).
    let conversation = |deep: &str| {
        format!(
            r#"[{{"role":"user","content":"s"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"a","name":"n","input":{deep}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"a","content":"r"}},{{"type":"custom","data":{deep}}}]}},{{"role":"assistant","content":[{{"type":"tool_use","id":"c","name":"compress_to_checkpoint","input":{{}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c","content":"ok"}}]}}]"#
        )
    };
    // Past the limit (5,000 levels) it is `invalid_json` at the path where it goes too deep,
    // the same as every other operation and shape (issue 28: it used to pass through here and
    // be refused in a request body).
    let too_deep = "[".repeat(5000) + &"]".repeat(5000);
    let err = apply_watermark_json(
        &conversation(&too_deep),
        &WatermarkState::default(),
        &WatermarkOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "invalid_json");
    assert!(err.path().starts_with("messages[1].content[0].input[0]"));
    let deep = "[".repeat(120) + &"]".repeat(120);
    let text = conversation(&deep);
    let out = apply_watermark_json(
        &text,
        &WatermarkState::default(),
        &WatermarkOptions::default(),
    )
    .unwrap();
    assert_eq!(out.stats.tool_calls_removed, 1);
    assert!(out.json.starts_with(&format!(
        r#"[{{"role":"user","content":[{{"type":"text","text":"s"}},{{"type":"custom","data":{deep}}}]}}"#
    )));
    let opts = WatermarkOptions {
        placeholder: true,
        clear_tool_inputs: true,
        ..WatermarkOptions::default()
    };
    let out = apply_watermark_json(&text, &WatermarkState::default(), &opts).unwrap();
    assert_eq!(out.stats.inputs_cleared, 1);
}
