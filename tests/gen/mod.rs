//! Generators of valid conversations in both providers' shapes, shared by the property tests.
#![allow(dead_code)]

use proptest::prelude::*;
use serde_json::{json, Value};

/// Message texts: short words, long prose with key tokens, a code fence, JSON, or a repeat.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{1,12}",
        3 => (1usize..12).prop_map(|n| {
            (0..n)
                .map(|i| format!("Step {i} updates config_{i}.yaml and calls parseConfig after {i}0 ms. "))
                .collect::<String>()
        }),
        1 => Just("Here is the fix, explained at some length so that there is prose around it.\n```rust\nfn main() { println!(\"hi\"); }\n```\nAfter that, run the tests again and check the output carefully.".to_string()),
        1 => Just(r#"{"booking_id": "3426812", "status": "confirmed", "prices": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]}"#.to_string()),
        1 => Just("The same long paragraph appears twice in this conversation, word for word, so dedup can replace the older copy with a reference.".to_string()),
    ]
}

pub const NAMES: [&str; 7] = [
    "read_file",
    "grep",
    "mcp__memory__store",
    "compress_to_checkpoint",
    "mcp__nisaba__deactivate_augments",
    "deactivate_augments",
    "web_fetch",
];

/// One assistant step of a generated history.
#[derive(Clone, Debug)]
pub struct Step {
    pub thinking: bool,
    pub text: Option<String>,
    /// (tool name index, result length, cache_control on the result)
    pub tools: Vec<(usize, usize, bool)>,
    pub user_text: Option<String>,
    pub user_as_string: bool,
    pub extra_field: bool,
}

pub fn step() -> impl Strategy<Value = Step> {
    (
        any::<bool>(),
        proptest::option::of(text()),
        proptest::collection::vec(
            (0..NAMES.len(), 0usize..120, proptest::bool::weighted(0.1)),
            0..3,
        ),
        proptest::option::of(text()),
        any::<bool>(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(thinking, text, tools, user_text, user_as_string, extra_field)| Step {
                thinking,
                text,
                tools,
                user_text,
                user_as_string,
                extra_field,
            },
        )
}

pub fn anthropic(steps: &[Step]) -> Vec<Value> {
    let mut out = vec![json!({"role": "user", "content": "start"})];
    let mut id = 0;
    for s in steps {
        let mut blocks = Vec::new();
        if s.thinking {
            blocks.push(json!({"type": "thinking", "thinking": "hmm", "signature": "sig"}));
        }
        if let Some(t) = &s.text {
            blocks.push(json!({"type": "text", "text": t}));
        }
        let mut results = Vec::new();
        for (name, len, cc) in &s.tools {
            id += 1;
            let tid = format!("toolu_{id}");
            blocks.push(
                json!({"type": "tool_use", "id": tid, "name": NAMES[*name], "input": {"n": id}}),
            );
            let mut r =
                json!({"type": "tool_result", "tool_use_id": tid, "content": "r".repeat(*len)});
            if *cc {
                r["cache_control"] = json!({"type": "ephemeral"});
            }
            results.push(r);
        }
        if blocks.is_empty() {
            blocks.push(json!({"type": "text", "text": "ok"}));
        }
        let mut assistant = json!({"role": "assistant", "content": blocks});
        if s.extra_field {
            assistant["id"] = json!(format!("msg_{id}"));
        }
        out.push(assistant);
        let user_text = s.user_text.clone();
        if results.is_empty() {
            let t = user_text.unwrap_or_else(|| "go on".into());
            out.push(if s.user_as_string {
                json!({"role": "user", "content": t})
            } else {
                json!({"role": "user", "content": [{"type": "text", "text": t}]})
            });
        } else {
            if let Some(t) = user_text {
                results.push(json!({"type": "text", "text": t}));
            }
            let mut user = json!({"role": "user", "content": results});
            if s.extra_field {
                user["metadata"] = json!({"step": id});
            }
            out.push(user);
        }
    }
    out
}

pub fn openai(steps: &[Step]) -> Vec<Value> {
    let mut out = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "start"}),
    ];
    let mut id = 0;
    for s in steps {
        let mut assistant = json!({"role": "assistant", "content": s.text.clone()});
        let mut tools = Vec::new();
        let mut calls = Vec::new();
        for (name, len, _) in &s.tools {
            id += 1;
            let cid = format!("call_{id}");
            calls.push(json!({"id": cid, "type": "function", "function": {"name": NAMES[*name], "arguments": format!("{{\"n\":{id}}}")}}));
            tools.push(json!({"role": "tool", "tool_call_id": cid, "content": "r".repeat(*len)}));
        }
        if !calls.is_empty() {
            assistant["tool_calls"] = Value::Array(calls);
        } else if assistant["content"].is_null() {
            assistant["content"] = json!("ok");
        }
        out.push(assistant);
        out.extend(tools);
        if let Some(t) = &s.user_text {
            out.push(json!({"role": "user", "content": t}));
        }
    }
    out
}
