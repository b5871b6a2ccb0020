//! Laws of applyWatermark over generated valid histories in both providers' shapes.
#![cfg(not(target_arch = "wasm32"))]

use condense::message::{validate, Format, ValidateOptions};
use condense::text::count_chars;
use condense::watermark::{
    apply_watermark, apply_watermark_json, WatermarkOptions, WatermarkState,
};
use proptest::prelude::*;
use serde_json::Value;

mod gen;
use gen::{anthropic, openai, step};

fn options() -> impl Strategy<Value = WatermarkOptions> {
    (
        0usize..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(keep_last, placeholder, clear, keep_thinking, exclude)| WatermarkOptions {
                keep_last_tool_results: keep_last,
                placeholder,
                clear_tool_inputs: clear,
                keep_thinking,
                exclude_tools: if exclude {
                    vec!["mcp__memory__*".into()]
                } else {
                    vec![]
                },
                ..WatermarkOptions::default()
            },
        )
}

/// Texts the users and the assistant wrote (tool output is not text).
fn texts(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m["role"] != "tool") {
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => {
                for b in blocks.iter().filter(|b| b["type"] == "text") {
                    out.push(b["text"].as_str().unwrap_or("").to_string());
                }
            }
            _ => {}
        }
    }
    out
}

fn chars(messages: &[Value]) -> usize {
    messages
        .iter()
        .map(|m| count_chars(&serde_json::to_string(m).unwrap()))
        .sum()
}

fn check_laws(
    input: Vec<Value>,
    format: Format,
    opts: WatermarkOptions,
) -> Result<(), TestCaseError> {
    let vopts = ValidateOptions {
        format: Some(format),
    };
    prop_assume!(validate(&input, &vopts).unwrap().valid);
    let out = apply_watermark(&input, &WatermarkState::default(), &opts).unwrap();

    // Valid output.
    let report = validate(&out.messages, &vopts).unwrap();
    prop_assert!(
        report.valid,
        "{:?}\n{}",
        report.violations,
        serde_json::to_string(&out.messages).unwrap()
    );

    // Suffix unchanged.
    if let Some(w) = out.stats.watermark_index {
        let suffix = &input[w..];
        prop_assert!(out.messages.len() >= suffix.len());
        prop_assert_eq!(&out.messages[out.messages.len() - suffix.len()..], suffix);
    } else {
        prop_assert_eq!(&out.messages, &input);
    }

    // No text lost, in order.
    prop_assert_eq!(texts(&out.messages), texts(&input));

    // Stats are the measured difference; never larger.
    prop_assert_eq!(out.stats.chars_before, chars(&input));
    prop_assert_eq!(out.stats.chars_after, chars(&out.messages));
    prop_assert!(out.stats.chars_after <= out.stats.chars_before);
    prop_assert!(out.stats.tokens_after <= out.stats.tokens_before);
    prop_assert_eq!(out.stats.messages_before, input.len());
    prop_assert_eq!(out.stats.messages_after, out.messages.len());
    prop_assert_eq!(
        input.len() - out.messages.len(),
        out.stats.messages_dropped + out.stats.messages_merged
    );
    prop_assert_eq!(
        out.stats.blocks_removed,
        out.stats.tool_calls_removed + out.stats.tool_results_removed + out.stats.thinking_removed
    );

    // Idempotent; the watermark does not move.
    let again = apply_watermark(&out.messages, &out.state, &opts).unwrap();
    prop_assert_eq!(&again.messages, &out.messages);
    prop_assert_eq!(&again.state, &out.state);

    // The string path decides the same and copies untouched messages byte for byte.
    let text = serde_json::to_string(&input).unwrap();
    let json_out = apply_watermark_json(&text, &WatermarkState::default(), &opts).unwrap();
    let reparsed: Vec<Value> = serde_json::from_str(&json_out.json).unwrap();
    prop_assert_eq!(&reparsed, &out.messages);
    prop_assert_eq!(&json_out.stats, &out.stats);

    // Not found: a no-op with a warning.
    let lost = WatermarkState {
        watermark: Some("no_such_id".into()),
    };
    let noop = apply_watermark(&input, &lost, &opts).unwrap();
    prop_assert_eq!(&noop.messages, &input);
    prop_assert_eq!(noop.warnings.len(), 1);

    // Never moves back: a state taken on a prefix of the history is never behind later.
    if let Some(w) = out.stats.watermark_index {
        let early = apply_watermark(&input[..=w], &WatermarkState::default(), &opts).unwrap();
        let later = apply_watermark(&input, &early.state, &opts).unwrap();
        prop_assert_eq!(later.state.watermark, out.state.watermark.clone());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn anthropic_laws(steps in proptest::collection::vec(step(), 0..14), opts in options()) {
        check_laws(anthropic(&steps), Format::Anthropic, opts)?;
    }

    #[test]
    fn openai_laws(steps in proptest::collection::vec(step(), 0..14), opts in options()) {
        check_laws(openai(&steps), Format::OpenAi, opts)?;
    }
}
