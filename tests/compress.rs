//! compress at its boundary: laws on real conversations of both shapes, then behaviours.
#![cfg(not(target_arch = "wasm32"))]

use condense::compress::{
    compress, compress_json, uncompress, uncompress_json, CompressContext, CompressMethod,
    CompressOptions,
};
use condense::message::{validate, ValidateOptions};
use serde_json::{json, Value};

fn records() -> Vec<(String, Vec<Value>)> {
    let files = [
        include_str!("fixtures/sharegpt_sample.jsonl"),
        include_str!("fixtures/tool_sessions_openai_sample.jsonl"),
        include_str!("fixtures/tool_sessions_anthropic_sample.jsonl"),
        include_str!("fixtures/watermark_sessions_dev.jsonl"),
    ];
    files
        .iter()
        .flat_map(|f| f.lines().filter(|l| !l.trim().is_empty()))
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (
                r["id"].as_str().unwrap().to_string(),
                r["messages"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

#[test]
fn laws_on_real_conversations() {
    let opts = CompressOptions::default();
    let mut compressed_some = 0;
    for (id, messages) in records() {
        let out = compress(&messages, &opts, CompressContext::new()).unwrap();
        // Round trip: uncompress restores the input exactly.
        assert_eq!(
            uncompress(&out.messages, &out.verbatim),
            messages,
            "{id}: round trip"
        );
        // Valid stays valid.
        let vo = ValidateOptions::default();
        if validate(&messages, &vo).unwrap().valid {
            let report = validate(&out.messages, &vo).unwrap();
            assert!(report.valid, "{id}: {:?}", report.violations);
        }
        // Never larger; deterministic.
        assert!(out.stats.tokens_after <= out.stats.tokens_before, "{id}");
        assert_eq!(
            compress(&messages, &opts, CompressContext::new()).unwrap(),
            out,
            "{id}: deterministic"
        );
        // The recency window and system messages come back untouched.
        let n = messages.len();
        let tail = n.min(4);
        assert_eq!(
            out.messages[out.messages.len() - tail..],
            messages[n - tail..],
            "{id}"
        );
        // Idempotent on its own output.
        let again = compress(&out.messages, &opts, CompressContext::new()).unwrap();
        assert_eq!(again.messages, out.messages, "{id}: not idempotent");
        if out.stats.tokens_after < out.stats.tokens_before {
            compressed_some += 1;
        }
        // The string path: the same decisions, and a byte-identical round trip.
        let text = serde_json::to_string(&messages).unwrap();
        let j = compress_json(&text, &opts, CompressContext::new()).unwrap();
        let back = uncompress_json(&j.json, &j.verbatim).unwrap();
        assert_eq!(back, text, "{id}: string round trip");
        assert_eq!(j.stats, out.stats);
    }
    assert!(
        compressed_some >= 15,
        "only {compressed_some} conversations compressed"
    );
}

/// Whether a text is replaced does not hang on its marker id, which depends on the message's
/// position: here a user message whose summary saves about as much as its id costs sits after
/// two merged messages; in the output it moved up by one (another id), and compressing the
/// output again must keep it as the first call did.
#[test]
fn a_message_kept_stays_kept_once_earlier_messages_merged() {
    let steps = |n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "Step {i} updates config_{i}.yaml and calls parseConfig after {:02} ms. ",
                    i * 10
                )
            })
            .collect()
    };
    let call = |n: usize| {
        [
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{n}"), "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"n\":{n}}}")}}]}),
            json!({"role": "tool", "tool_call_id": format!("call_{n}"), "content": "r"}),
        ]
    };
    let mut messages = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "start"}),
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "assistant", "content": "ok"}),
    ];
    messages.extend(call(1));
    messages.push(json!({"role": "assistant", "content": steps(4)}));
    messages.push(json!({"role": "assistant", "content": steps(5)}));
    messages.extend(call(2));
    messages.push(json!({"role": "user", "content": "a"}));
    messages.extend(call(3));
    messages.push(json!({"role": "user", "content": steps(3)}));
    messages.push(json!({"role": "assistant", "content": "ok"}));
    messages.extend(call(4));
    messages.push(json!({"role": "user", "content": "a"}));
    let opts = CompressOptions::default();
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    assert_eq!(out.stats.merged, 1);
    assert_eq!(out.messages.len(), messages.len() - 1);
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
    let again = compress(&out.messages, &opts, CompressContext::new()).unwrap();
    assert_eq!(again.messages, out.messages);
}

#[test]
fn dedup_keeps_the_newest_copy() {
    let listing = "src/main.rs\nsrc/lib.rs\nsrc/compress/mod.rs\nsrc/compress/summarize.rs\nREADME.md\nCargo.toml\n".repeat(3);
    let messages = vec![
        json!({"role": "user", "content": "list the files"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": listing}),
        json!({"role": "user", "content": "again please"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "c2", "content": listing}),
        json!({"role": "user", "content": "thanks"}),
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "user", "content": "bye"}),
    ];
    let out = compress(
        &messages,
        &CompressOptions {
            trace: true,
            ..Default::default()
        },
        CompressContext::new(),
    )
    .unwrap();
    let first = out.messages[2]["content"].as_str().unwrap();
    assert!(
        first.starts_with("[dup#") && first.contains("same as msg_5"),
        "{first}"
    );
    assert_eq!(out.messages[5], messages[5]);
    assert_eq!(out.stats.deduped, 1);
    let trace = out.trace.unwrap();
    assert!(trace.iter().any(|d| d.index == 2 && d.action == "deduped"));
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
}

#[test]
fn preserved_content_is_untouched() {
    let long_prose =
        "We discussed the migration plan in detail and agreed on the order of the steps. "
            .repeat(4);
    let messages = vec![
        json!({"role": "system", "content": long_prose}),
        json!({"role": "user", "content": format!("{long_prose}\n```sql\nSELECT 1;\n```")}),
        json!({"role": "assistant", "content": "SELECT id, name, email, created_at FROM users WHERE created_at > now() - interval '1 day' AND status = 'active' ORDER BY id;"}),
        json!({"role": "user", "content": "Keep this: the rollback plan is written down and reviewed by everyone who owns a service. ".repeat(3)}),
        json!({"role": "assistant", "content": "short"}),
        json!({"role": "user", "content": "a"}),
        json!({"role": "assistant", "content": "b"}),
        json!({"role": "user", "content": "c"}),
    ];
    let opts = CompressOptions {
        trace: true,
        preserve_patterns: vec![r"(?i)rollback\s+plan".into()],
        ..Default::default()
    };
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    assert_eq!(out.messages[0], messages[0], "system role");
    assert_eq!(out.messages[2], messages[2], "hard verbatim SQL");
    assert_eq!(out.messages[3], messages[3], "preserve pattern");
    let code = out.messages[1]["content"].as_str().unwrap();
    assert!(
        code.contains("```sql\nSELECT 1;\n```"),
        "fences stay: {code}"
    );
    let reasons: Vec<String> = out
        .trace
        .unwrap()
        .into_iter()
        .map(|d| format!("{}:{}", d.index, d.reason))
        .collect();
    assert!(
        reasons.contains(&"2:hard verbatim: sql".to_string()),
        "{reasons:?}"
    );
}

#[test]
fn anthropic_blocks_are_compressed_one_by_one() {
    let output = (0..40)
        .map(|i| format!("entry_{i}: value {i} ok"))
        .collect::<Vec<_>>()
        .join("\n");
    let messages = vec![
        json!({"role": "user", "content": "go"}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "I will now read the configuration directory and report back on each entry that I find there, with the details."},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "/etc"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]}),
        json!({"role": "assistant", "content": "done"}),
        json!({"role": "user", "content": "next"}),
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "user", "content": "end"}),
    ];
    // By default line-structured tool output is kept whole (every line is a value).
    let out = compress(
        &messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap();
    assert_eq!(out.messages[2], messages[2]);
    let lossy = CompressOptions {
        lossy_tool_output: true,
        ..CompressOptions::default()
    };
    let out = compress(&messages, &lossy, CompressContext::new()).unwrap();
    assert_eq!(
        out.messages[1]["content"][1], messages[1]["content"][1],
        "tool_use stays"
    );
    let result = &out.messages[2]["content"][0];
    assert_eq!(result["tool_use_id"], "t1");
    assert!(result["content"].as_str().unwrap().starts_with("[summary#"));
    assert!(
        validate(&out.messages, &ValidateOptions::default())
            .unwrap()
            .valid
    );
}

#[test]
fn bad_options_are_typed_errors() {
    let e = CompressOptions::from_json(r#"{"recencyWindow": "4"}"#).unwrap_err();
    assert_eq!(
        (e.code(), e.path()),
        ("invalid_options", "options.recencyWindow")
    );
    let e = CompressOptions::from_json(r#"{"preservePatterns": ["("]}"#).unwrap_err();
    assert_eq!(e.path(), "options.preservePatterns[0]");
    let e = CompressOptions::from_json(r#"{"fuzzyThreshold": 2}"#).unwrap_err();
    assert_eq!(e.path(), "options.fuzzyThreshold");
    let e = compress_json(
        r#"[{"role": "user", "content": 5}]"#,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap_err();
    assert_eq!(e.path(), "messages[0].content");
}

#[test]
fn token_budget_is_met_and_reversible() {
    let mut fitted = 0;
    for (id, messages) in records() {
        let free = compress(
            &messages,
            &CompressOptions::default(),
            CompressContext::new(),
        )
        .unwrap();
        let budget = free.stats.tokens_before / 4;
        let opts = CompressOptions {
            token_budget: Some(budget),
            ..Default::default()
        };
        let out = compress(&messages, &opts, CompressContext::new()).unwrap();
        assert_eq!(out.stats.budget, Some(budget));
        let fits = out.stats.fits.unwrap();
        assert_eq!(
            fits,
            out.stats.tokens_after <= budget,
            "{id}: fits must tell the truth"
        );
        fitted += usize::from(fits);
        // A budget never grows the result beyond itself: when the default pass fits, its
        // room is used (more kept), never more than the budget.
        assert!(
            out.stats.tokens_after <= free.stats.tokens_after.max(budget),
            "{id}: a budget never grows the result beyond the budget"
        );
        assert_eq!(
            uncompress(&out.messages, &out.verbatim),
            messages,
            "{id}: round trip under a budget"
        );
        let vo = ValidateOptions::default();
        if validate(&messages, &vo).unwrap().valid {
            assert!(validate(&out.messages, &vo).unwrap().valid, "{id}");
        }
        // targetRatio is the same budget, relative.
        let rel = compress(
            &messages,
            &CompressOptions {
                target_ratio: Some(0.25),
                ..Default::default()
            },
            CompressContext::new(),
        )
        .unwrap();
        assert_eq!(rel.stats.budget, Some(free.stats.tokens_before / 4));
    }
    assert!(fitted >= 12, "only {fitted} conversations fit a 25% budget");
}

#[test]
fn min_tokens_leaves_small_conversations_alone() {
    let (_, messages) = records().into_iter().next().unwrap();
    let opts = CompressOptions {
        min_tokens: 1_000_000,
        ..Default::default()
    };
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    assert_eq!(out.messages, messages);
    assert!(out.verbatim.is_empty());
    let e = CompressOptions::from_json(r#"{"targetRatio": 1.5}"#).unwrap_err();
    assert_eq!(e.path(), "options.targetRatio");
}

#[test]
fn query_with_an_embedder_is_deterministic_and_reversible() {
    use condense::embed::Embedder;
    let lexical = Embedder::lexical();
    let filler = "The weather was fine and everyone agreed the meeting went well overall. ";
    let messages: Vec<Value> = (0..8)
        .map(|i| {
            let extra = if i == 1 {
                "The payment gateway rejected card_4455 with error E1234 during checkout. "
            } else {
                ""
            };
            serde_json::json!({
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("{}{extra}{}", filler.repeat(3), filler.repeat(3)),
            })
        })
        .collect();
    let plain = CompressOptions {
        token_budget: Some(250),
        ..Default::default()
    };
    // Without a query the embedder changes nothing.
    assert_eq!(
        compress(
            &messages,
            &plain,
            CompressContext::new().with_embedder(Some(&lexical))
        )
        .unwrap(),
        compress(&messages, &plain, CompressContext::new()).unwrap()
    );
    let opts = CompressOptions {
        query: Some("why was the payment rejected at checkout?".into()),
        ..plain
    };
    let a = compress(
        &messages,
        &opts,
        CompressContext::new().with_embedder(Some(&lexical)),
    )
    .unwrap();
    let b = compress(
        &messages,
        &opts,
        CompressContext::new().with_embedder(Some(&lexical)),
    )
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(uncompress(&a.messages, &a.verbatim), messages);
    let text = serde_json::to_string(&messages).unwrap();
    let j = compress_json(
        &text,
        &opts,
        CompressContext::new().with_embedder(Some(&lexical)),
    )
    .unwrap();
    assert_eq!(j.stats, a.stats);
    assert_eq!(uncompress_json(&j.json, &j.verbatim).unwrap(), text);
    let joined = serde_json::to_string(&a.messages).unwrap();
    assert!(joined.contains("payment gateway"), "{joined}");
}

fn trace_of(out: &condense::compress::CompressResult) -> Vec<(usize, String, String)> {
    out.trace
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|d| (d.index, d.action, d.reason))
        .collect()
}

fn filler(i: usize) -> Value {
    json!({"role": if i.is_multiple_of(2) { "user" } else { "assistant" }, "content": format!("Message {i} talks about the weather and general plans for the week ahead, nothing in particular, just chatting along for a while.")})
}

#[test]
fn importance_scoring_keeps_important_messages_with_their_score() {
    let important = "We talked for a long while about how the team works and what the week looks like, and there was a lot of back and forth about meetings and lunch plans. You must never commit secrets: the API key must always stay in config/prod.toml and session_id is required for every request to billing_api. Everything else about the rollout is flexible and we can revisit the schedule whenever it suits the people involved.";
    let mut messages = vec![json!({"role": "user", "content": important})];
    messages.extend((1..4).map(filler));
    messages.push(json!({"role": "user", "content": "Where was config/prod.toml again, and is session_id sent to billing_api?"}));
    messages.extend((6..10).map(filler));
    let plain = compress(
        &messages,
        &CompressOptions {
            trace: true,
            ..Default::default()
        },
        CompressContext::new(),
    )
    .unwrap();
    assert_ne!(
        plain.messages[0], messages[0],
        "summarised without importance scoring"
    );
    let opts = CompressOptions {
        trace: true,
        importance_scoring: true,
        ..Default::default()
    };
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    assert_eq!(out.messages[0], messages[0]);
    let t = trace_of(&out);
    assert!(
        t.iter().any(|(i, a, r)| *i == 0
            && a == "preserved"
            && r.starts_with("importance ")
            && r.ends_with("≥ threshold 0.65")),
        "{t:?}"
    );
    // Filler scores 0: not kept for importance.
    assert!(
        !t.iter()
            .any(|(i, _, r)| *i == 1 && r.starts_with("importance")),
        "{t:?}"
    );
    // Threshold 1.0: nothing is that important here, the default result.
    let strict = compress(
        &messages,
        &CompressOptions {
            importance_threshold: 1.0,
            ..opts.clone()
        },
        CompressContext::new(),
    )
    .unwrap();
    assert_eq!(strict.messages, plain.messages);
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
}

#[test]
fn a_correction_supersedes_the_earlier_statement() {
    let mut messages = vec![
        json!({"role": "user", "content": "Deploy the billing service on port 8000 behind the nginx proxy, with TLS terminated at the proxy and health checks on /healthz every ten seconds."}),
        filler(1),
        json!({"role": "user", "content": "Actually, use port 8080 not 8000 for the billing service: nginx already listens on 8000 on that host, and the health checks stay as they are."}),
    ];
    messages.extend((3..8).map(filler));
    let opts = CompressOptions {
        trace: true,
        contradiction_detection: true,
        ..Default::default()
    };
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    let first = out.messages[0]["content"].as_str().unwrap();
    assert!(first.starts_with("[summary#"), "{first}");
    assert!(
        first.contains("superseded by msg_2 (actually) — ")
            || first.contains("superseded by msg_2 — actually"),
        "{first}"
    );
    assert_eq!(out.stats.superseded, 1);
    let t = trace_of(&out);
    assert!(
        t.contains(&(
            0,
            "superseded".into(),
            "corrected by message 2 (actually)".into()
        )),
        "{t:?}"
    );
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
    // Off by default: an ordinary summary.
    let plain = compress(
        &messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap();
    assert!(!plain.messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("superseded"));
    // The JSON path agrees.
    let text = serde_json::to_string(&messages).unwrap();
    let j = compress_json(&text, &opts, CompressContext::new()).unwrap();
    assert_eq!(j.stats, out.stats);
    assert_eq!(uncompress_json(&j.json, &j.verbatim).unwrap(), text);
}

#[test]
fn preserve_quotes_keeps_quoted_passages_verbatim() {
    let text = "We went through the incident timeline together and the on-call engineer explained every step in detail. The customer wrote \"the export has been failing since Tuesday at 14:05\" in the ticket. Later the team lead added that \"nobody touches the exporter until the postmortem is done\". There was a long discussion about dashboards and alert thresholds that went nowhere in particular.";
    let mut messages = vec![json!({"role": "user", "content": text})];
    messages.extend((1..6).map(filler));
    let opts = CompressOptions {
        preserve_quotes: true,
        ..Default::default()
    };
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    let s = out.messages[0]["content"].as_str().unwrap();
    assert!(s.starts_with("[summary#"), "{s}");
    assert!(
        s.contains("\"the export has been failing since Tuesday at 14:05\""),
        "{s}"
    );
    assert!(
        s.contains("\"nobody touches the exporter until the postmortem is done\""),
        "{s}"
    );
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
}

#[test]
fn min_confidence_rejects_lossy_summaries() {
    let text = "The nightly job rebuilt idx_orders_2024 and idx_users_v2, then vacuumed table audit_log_old. It also rotated cert_prod_7 and restarted worker_pool_3 on node-17, which took 42s. Afterwards report_q3_final.pdf was regenerated and mailed to ops@example.com by the scheduler.";
    let mut messages = vec![json!({"role": "user", "content": text})];
    messages.extend((1..6).map(filler));
    let loose = compress(
        &messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap();
    assert_ne!(loose.messages[0], messages[0]);
    let opts = CompressOptions {
        trace: true,
        min_confidence: 1.0,
        ..Default::default()
    };
    let out = compress(&messages, &opts, CompressContext::new()).unwrap();
    let s = &out.messages[0];
    // Either the summary kept every key token, or the original stayed with the reason.
    let after = condense::compress::message_text(s);
    let all_kept = condense::text::keys::extract(text)
        .iter()
        .all(|(k, _)| condense::text::keys::contains_token(&after, k));
    assert!(all_kept, "{after}");
    let c = condense::compress::confidence("idx_orders_2024 only", text);
    assert!(c > 0.0 && c < 0.5, "{c}");
    assert_eq!(
        condense::compress::confidence("anything", "no keys here at all"),
        1.0
    );
}

#[test]
fn new_options_are_checked() {
    for (json, path) in [
        (
            r#"{"importanceThreshold": 1.5}"#,
            "options.importanceThreshold",
        ),
        (r#"{"minConfidence": -0.1}"#, "options.minConfidence"),
        (r#"{"preserveQuotes": "yes"}"#, "options.preserveQuotes"),
        (
            r#"{"contradictionDetection": 1}"#,
            "options.contradictionDetection",
        ),
        (
            r#"{"importanceScoring": null}"#,
            "options.importanceScoring",
        ),
    ] {
        let e = CompressOptions::from_json(json).unwrap_err();
        assert_eq!((e.code(), e.path()), ("invalid_options", path), "{json}");
    }
    let o = CompressOptions::from_json(
        r#"{"importanceScoring": true, "importanceThreshold": 0.5, "contradictionDetection": true, "preserveQuotes": true, "minConfidence": 0.8}"#,
    )
    .unwrap();
    assert!(o.importance_scoring && o.contradiction_detection && o.preserve_quotes);
    assert_eq!((o.importance_threshold, o.min_confidence), (0.5, 0.8));
}

/// The tokens compress counts in `messages` (its `tokensBefore`).
fn tokens_before(messages: &[Value]) -> usize {
    compress(
        messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap()
    .stats
    .tokens_before
}

/// Options with a token budget and nothing else.
fn within(budget: usize) -> CompressOptions {
    CompressOptions {
        token_budget: Some(budget),
        ..Default::default()
    }
}

/// Every message's text, joined by line breaks.
fn joined_text(messages: &[Value]) -> String {
    messages
        .iter()
        .map(condense::compress::message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Under a tiny budget, the values of the newest tool output (what the next call reuses)
/// survive, in both shapes: folded summaries list tool-output values first.
#[test]
fn tiny_budgets_keep_the_newest_tool_values() {
    let openai = vec![
        json!({"role": "user", "content": "I noticed some promising trends and want to proceed with a 'Buy' order for 100 shares of AAPL at a price of $150 each. Let's ensure the order is placed correctly."}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "place_order", "arguments": "{\"order_type\": \"Buy\", \"symbol\": \"AAPL\", \"price\": 150, \"amount\": 100}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"order_id\": 12446, \"order_type\": \"Buy\", \"status\": \"Pending\", \"price\": 150.0, \"amount\": 100}"}),
        json!({"role": "user", "content": "I received a notification about the order placement but want a detailed look at the transaction. Provide me with the full details of my recent order."}),
    ];
    let anthropic = vec![
        json!({"role": "user", "content": openai[0]["content"].clone()}),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "place_order", "input": {"order_type": "Buy", "symbol": "AAPL", "price": 150, "amount": 100}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": openai[2]["content"].clone()}, {"type": "text", "text": openai[3]["content"].clone()}]}),
    ];
    for messages in [openai, anthropic] {
        let before = tokens_before(&messages);
        for budget in [before / 4, before / 5] {
            let out = compress(&messages, &within(budget), CompressContext::new()).unwrap();
            assert_eq!(out.stats.fits, Some(true), "budget {budget}");
            let text = joined_text(&out.messages);
            assert!(
                condense::text::keys::contains_token(&text, "12446"),
                "budget {budget}: {text}"
            );
            assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
        }
    }
}

/// When even the deepest stage's summaries, which keep code, are over the budget and the oldest
/// texts are cut to a preview, the room the cuts leave is used: the folded summary lists the
/// older messages' key tokens and the preview grows into what is left, instead of the result
/// keeping a tenth of what the budget allows.
#[test]
fn cut_texts_leave_their_room_to_the_others() {
    let code = |name: &str| {
        let body: String = (0..40)
            .map(|i| format!("    let {name}_{i} = compute_{name}(input_{i}, offset_{i});\n"))
            .collect();
        format!("```rust\nfn {name}() {{\n{body}}}\n```")
    };
    let mut messages = Vec::new();
    for (k, name) in ["parser", "renderer", "scheduler", "exporter"]
        .iter()
        .enumerate()
    {
        messages.push(json!({"role": "user", "content": format!(
            "Can you write the {name} for ticket PROJ-{k}41? It must read config_{name}.toml and call {name}_init first."
        )}));
        messages.push(json!({"role": "assistant", "content": format!(
            "Here is the {name}, which reads config_{name}.toml through load_{name}_settings:\n{}", code(name)
        )}));
    }
    let budget = tokens_before(&messages) / 4;
    // The same with hierarchical levels, whose other texts take the shallowest level that fits.
    for method in [CompressMethod::Extractive, CompressMethod::Hierarchical] {
        let opts = CompressOptions {
            method,
            ..within(budget)
        };
        let out = compress(&messages, &opts, CompressContext::new()).unwrap();
        assert_eq!(out.stats.fits, Some(true), "{method:?}");
        assert!(out.stats.truncated > 0, "{method:?}: {:?}", out.stats);
        assert!(
            out.stats.tokens_after * 10 > budget * 9,
            "{method:?}: {} of {budget} tokens used: {:?}",
            out.stats.tokens_after,
            out.messages
        );
        let text = joined_text(&out.messages);
        for key in ["PROJ-041", "config_parser.toml", "load_renderer_settings"] {
            assert!(
                condense::text::keys::contains_token(&text, key),
                "{method:?}: {key} not in {text}"
            );
        }
        assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
    }
}

/// Under a budget that folds the old messages, a query decides which folded message's key
/// tokens come first: those of the message it is about, not only the newest.
#[test]
fn a_query_orders_the_folded_keys_by_relevance() {
    let prose = |topic: &str, keys: [&str; 3]| {
        format!(
            "We went through the {topic} in detail today and agreed on the plan. The first part is `{}` which everything else depends on, so it stays as it is. The second is `{}`, which we will replace next quarter. The last one, `{}`, was only a stopgap and nobody owns it now. Everything else about the {topic} stays the same as before, and we will look at it again once the next release is out.",
            keys[0], keys[1], keys[2]
        )
    };
    let messages = vec![
        json!({"role": "user", "content": prose("billing invoices", ["invoice_ledger_v2", "billing_retry_q7", "refund_worker_k3"])}),
        json!({"role": "assistant", "content": prose("deployment", ["deploy_cluster_a9", "helm_release_44", "canary_gate_p2"])}),
        json!({"role": "user", "content": prose("logging", ["log_sink_b3", "trace_sampler_r8", "audit_stream_m1"])}),
        json!({"role": "assistant", "content": prose("caching", ["redis_pool_x5", "cache_ttl_w6", "warmup_job_z4"])}),
        json!({"role": "user", "content": "Thanks, that covers it."}),
    ];
    let query = "How do the billing invoices get retried and refunded?";
    let kept = |query: Option<&str>| {
        // A budget where the fold has room for the three keys of one message (the marker id, a
        // hash, costs a few tokens more or less from one version to the next).
        let opts = CompressOptions {
            token_budget: Some(53),
            query: query.map(str::to_string),
            ..Default::default()
        };
        let out = compress(&messages, &opts, CompressContext::new()).unwrap();
        assert_eq!(out.stats.fits, Some(true));
        assert!(out.stats.folded > 0, "{:?}", out.stats);
        assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
        let text = serde_json::to_string(&out.messages).unwrap();
        ["invoice_ledger_v2", "billing_retry_q7", "refund_worker_k3"]
            .iter()
            .filter(|k| text.contains(*k))
            .count()
    };
    assert_eq!(kept(Some(query)), 3);
    // Without the query the newest folded messages' keys come first.
    assert!(kept(None) < 3);
}

/// A message quoting another message's marker is not restored in its place: `uncompress` gives
/// back exactly the messages compress rewrote (by position and id), on both paths.
#[test]
fn uncompress_leaves_a_quoted_marker_alone() {
    let long = |topic: &str| {
        json!(format!(
            "The {topic} job failed again last night after 30 seconds because parse_config \
             returned an empty map for {topic}_settings. We retried it twice and looked at the \
             logs under /var/log/{topic}.log, which showed the same timeout both times. It \
             finally worked on the third attempt once the cache was warm."
        ))
    };
    let mut messages = vec![
        json!({"role": "user", "content": long("billing")}),
        json!({"role": "assistant", "content": long("deploy")}),
        json!({"role": "user", "content": "ok"}),
        json!({"role": "assistant", "content": "noted"}),
        json!({"role": "user", "content": "fine"}),
        json!({"role": "assistant", "content": "done"}),
    ];
    let first = compress(
        &messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap();
    let marker = first.messages[0]["content"].as_str().unwrap().to_string();
    assert!(marker.starts_with("[summary#"), "{marker}");
    let head: String = marker.chars().take(18).collect();
    messages[4]["content"] = json!(format!("You wrote {head} earlier"));
    let out = compress(
        &messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap();
    // Message 0 is rewritten again with the same marker: the quote names a real id of this call.
    assert!(
        out.verbatim.keys().any(|id| head.contains(id.as_str())),
        "{:?}",
        out.verbatim.keys()
    );
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
    let text = serde_json::to_string(&messages).unwrap();
    let j = compress_json(&text, &CompressOptions::default(), CompressContext::new()).unwrap();
    assert_eq!(uncompress_json(&j.json, &j.verbatim).unwrap(), text);
    // The whole marker as a message's content, too.
    messages[4]["content"] = json!(marker);
    let out = compress(
        &messages,
        &CompressOptions::default(),
        CompressContext::new(),
    )
    .unwrap();
    assert_eq!(uncompress(&out.messages, &out.verbatim), messages);
}

/// Consecutive same-role summaries merge only when the messages agree in every field but
/// `content`: two speakers' messages (different `name`s) stay apart, each with its own name.
#[test]
fn messages_of_different_names_are_not_merged() {
    let prose = |i: usize| {
        format!(
            "Message {i} talks about the weather and general plans for the week ahead, nothing \
             in particular, just chatting along for a while about lunch, the garden, the long \
             walk on the weekend and how the neighbours are doing with their renovation."
        )
    };
    let run = |names: [&str; 4]| {
        let mut messages: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"role": "user", "name": n, "content": prose(i)}))
            .collect();
        messages.extend((4..10).map(filler));
        messages
    };
    let options = CompressOptions::from_json(r#"{"targetRatio": 0.4}"#).unwrap();
    let same = run(["ana", "ana", "ana", "ana"]);
    let out = compress(&same, &options, CompressContext::new()).unwrap();
    assert!(out.stats.merged > 0, "{:?}", out.stats);
    assert_eq!(uncompress(&out.messages, &out.verbatim), same);

    let two = run(["ana", "bo", "ana", "bo"]);
    let out = compress(&two, &options, CompressContext::new()).unwrap();
    assert_eq!(out.stats.merged, 0, "{:?}", out.stats);
    let names: Vec<&str> = out.messages[..4]
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ana", "bo", "ana", "bo"]);
    assert_eq!(uncompress(&out.messages, &out.verbatim), two);
}
