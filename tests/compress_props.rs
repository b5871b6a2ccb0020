//! Laws of compress over generated valid conversations in both providers' shapes.
#![cfg(not(target_arch = "wasm32"))]

use condense::compress::{
    compress, compress_json, uncompress, uncompress_json, CompressContext, CompressOptions,
};
use condense::message::{validate, Format, ValidateOptions};
use proptest::prelude::*;
use serde_json::Value;

mod gen;
use gen::{anthropic, openai, step};

fn options() -> impl Strategy<Value = CompressOptions> {
    (
        0usize..5,
        any::<bool>(),
        proptest::option::of(prop_oneof![Just(0.1), Just(0.25), Just(0.5)]),
        any::<bool>(),
        proptest::option::of(Just("config parseConfig".to_string())),
        (
            any::<bool>(),
            prop_oneof![Just(0.0), Just(0.3), Just(0.65), Just(1.0)],
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0.0), Just(0.5), Just(1.0)],
        ),
    )
        .prop_map(
            |(recency, fuzzy, ratio, numbers, query, (imp, threshold, contra, quotes, conf))| {
                CompressOptions {
                    recency_window: recency,
                    fuzzy_dedup: fuzzy,
                    target_ratio: ratio,
                    preserve_numbers: numbers,
                    query,
                    importance_scoring: imp,
                    importance_threshold: threshold,
                    contradiction_detection: contra,
                    preserve_quotes: quotes,
                    min_confidence: conf,
                    ..CompressOptions::default()
                }
            },
        )
}

/// Importance scoring only adds verbatim messages: every message the default keeps stays
/// kept, at any threshold (and at threshold 1.0 as well, where hardly anything scores).
fn importance_only_keeps_more(input: Vec<Value>, threshold: f64) -> Result<(), TestCaseError> {
    let plain = compress(&input, &CompressOptions::default(), CompressContext::new()).unwrap();
    let opts = CompressOptions {
        importance_scoring: true,
        importance_threshold: threshold,
        ..CompressOptions::default()
    };
    let scored = compress(&input, &opts, CompressContext::new()).unwrap();
    let kept = |out: &condense::compress::CompressResult| -> Vec<Value> {
        out.messages
            .iter()
            .filter(|m| input.contains(m))
            .cloned()
            .collect()
    };
    let (a, b) = (kept(&plain), kept(&scored));
    for m in &a {
        prop_assert!(
            b.contains(m),
            "kept by default, changed with importance: {m}"
        );
    }
    prop_assert!(scored.stats.tokens_after <= scored.stats.tokens_before);
    Ok(())
}

/// `minConfidence: 1` loses no key token: every key token of the input is still in the output.
fn full_confidence_keeps_every_key(input: Vec<Value>) -> Result<(), TestCaseError> {
    let opts = CompressOptions {
        min_confidence: 1.0,
        ..CompressOptions::default()
    };
    let out = compress(&input, &opts, CompressContext::new()).unwrap();
    let text = |ms: &[Value]| {
        ms.iter()
            .map(condense::compress::message_text)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (before, after) = (text(&input), text(&out.messages));
    for (k, _) in condense::text::keys::extract(&before) {
        prop_assert!(
            condense::text::keys::contains_token(&after, &k),
            "key {} lost: {}",
            k,
            after
        );
    }
    Ok(())
}

fn check_laws(
    input: Vec<Value>,
    format: Format,
    opts: CompressOptions,
) -> Result<(), TestCaseError> {
    let vopts = ValidateOptions {
        format: Some(format),
    };
    prop_assume!(validate(&input, &vopts).unwrap().valid);
    let out = compress(&input, &opts, CompressContext::new()).unwrap();

    // Round trip, exact.
    prop_assert_eq!(&uncompress(&out.messages, &out.verbatim), &input);
    // Valid stays valid.
    let report = validate(&out.messages, &vopts).unwrap();
    prop_assert!(report.valid, "{:?}", report.violations);
    // Never larger; a budget's verdict is the truth.
    prop_assert!(out.stats.tokens_after <= out.stats.tokens_before);
    if let (Some(budget), Some(fits)) = (out.stats.budget, out.stats.fits) {
        prop_assert_eq!(fits, out.stats.tokens_after <= budget);
    }
    // Deterministic.
    prop_assert_eq!(
        &compress(&input, &opts, CompressContext::new()).unwrap(),
        &out
    );
    // The recency window and system messages come back untouched (without a budget).
    if opts.target_ratio.is_none() {
        let k = opts.recency_window.min(input.len());
        prop_assert_eq!(
            &out.messages[out.messages.len() - k..],
            &input[input.len() - k..]
        );
        for (i, m) in input.iter().enumerate() {
            if m["role"] == "system" {
                prop_assert_eq!(&out.messages[i], m, "system message {} changed", i);
            }
        }
        // Idempotent on its own output.
        let again = compress(&out.messages, &opts, CompressContext::new()).unwrap();
        prop_assert_eq!(&again.messages, &out.messages);
    }
    // The JSON path: the same stats, a byte-identical round trip.
    let text = serde_json::to_string(&input).unwrap();
    let j = compress_json(&text, &opts, CompressContext::new()).unwrap();
    prop_assert_eq!(&j.stats, &out.stats);
    prop_assert_eq!(uncompress_json(&j.json, &j.verbatim).unwrap(), text);
    Ok(())
}

/// A message that quotes a marker — the whole marker text, or its first 18 characters inside
/// a sentence — comes back unchanged: `uncompress` restores exactly the messages compress
/// rewrote (the case: a quote of message 0's marker in message 4 restored message 0's
/// original in its place).
fn quoted_markers_come_back(
    input: Vec<Value>,
    opts: CompressOptions,
    pick: usize,
    whole: bool,
) -> Result<(), TestCaseError> {
    let first = compress(&input, &opts, CompressContext::new()).unwrap();
    let markers: Vec<String> = first
        .messages
        .iter()
        .map(condense::compress::message_text)
        .filter_map(|t| {
            let at = ["[summary#", "[dup#", "[truncated#", "[call#"]
                .iter()
                .filter_map(|p| t.find(p))
                .min()?;
            Some(t[at..].to_string())
        })
        .collect();
    prop_assume!(!markers.is_empty());
    let marker = &markers[pick % markers.len()];
    let quote = if whole {
        marker.clone()
    } else {
        let head: String = marker.chars().take(18).collect();
        format!("You wrote {head} earlier")
    };
    let targets: Vec<usize> = (0..input.len())
        .filter(|&i| input[i]["content"].is_string())
        .collect();
    prop_assume!(!targets.is_empty());
    for &j in &targets {
        let mut second = input.clone();
        let content = second[j]["content"].as_str().unwrap_or("").to_string();
        second[j]["content"] = Value::String(if whole {
            quote.clone()
        } else {
            format!("{content} {quote}")
        });
        let out = compress(&second, &opts, CompressContext::new()).unwrap();
        prop_assert_eq!(
            &uncompress(&out.messages, &out.verbatim),
            &second,
            "quote in {}",
            j
        );
        let text = serde_json::to_string(&second).unwrap();
        let o = compress_json(&text, &opts, CompressContext::new()).unwrap();
        prop_assert_eq!(uncompress_json(&o.json, &o.verbatim).unwrap(), text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn quoted_markers_are_not_restored(
        steps in proptest::collection::vec(step(), 2..12),
        opts in options(),
        pick in 0usize..8,
        whole in any::<bool>(),
        anthropic_shape in any::<bool>(),
    ) {
        let input = if anthropic_shape { anthropic(&steps) } else { openai(&steps) };
        quoted_markers_come_back(input, opts, pick, whole)?;
    }

    #[test]
    fn anthropic_laws(steps in proptest::collection::vec(step(), 0..12), opts in options()) {
        check_laws(anthropic(&steps), Format::Anthropic, opts)?;
    }

    #[test]
    fn importance_threshold_only_adds_kept_messages(
        steps in proptest::collection::vec(step(), 0..12),
        threshold in prop_oneof![Just(0.0), Just(0.4), Just(0.65), Just(1.0)],
        anthropic_shape in any::<bool>(),
    ) {
        let input = if anthropic_shape { anthropic(&steps) } else { openai(&steps) };
        importance_only_keeps_more(input, threshold)?;
    }

    #[test]
    fn min_confidence_one_keeps_every_key(
        steps in proptest::collection::vec(step(), 0..12),
        anthropic_shape in any::<bool>(),
    ) {
        let input = if anthropic_shape { anthropic(&steps) } else { openai(&steps) };
        full_confidence_keeps_every_key(input)?;
    }

    #[test]
    fn openai_laws(steps in proptest::collection::vec(step(), 0..12), opts in options()) {
        check_laws(openai(&steps), Format::OpenAi, opts)?;
    }
}

/// The generated conversations really exercise the pipeline: a good share compresses, some
/// dedup, and a budget escalates.
#[test]
fn generator_covers_the_pipeline() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = proptest::collection::vec(step(), 4..12);
    let (mut compressed, mut deduped, mut escalated, mut total) = (0, 0, 0, 0);
    for _ in 0..200 {
        let steps = strategy.new_tree(&mut runner).unwrap().current();
        for messages in [anthropic(&steps), openai(&steps)] {
            total += 1;
            let out = compress(
                &messages,
                &CompressOptions::default(),
                CompressContext::new(),
            )
            .unwrap();
            compressed += usize::from(out.stats.tokens_after < out.stats.tokens_before);
            deduped += usize::from(out.stats.deduped > 0);
            let tight = CompressOptions {
                target_ratio: Some(0.1),
                ..CompressOptions::default()
            };
            escalated += usize::from(
                compress(&messages, &tight, CompressContext::new())
                    .unwrap()
                    .stats
                    .escalation
                    > 0,
            );
        }
    }
    assert!(
        compressed * 3 >= total,
        "only {compressed}/{total} compressed"
    );
    assert!(deduped * 20 >= total, "only {deduped}/{total} deduped");
    assert!(escalated * 3 >= total, "only {escalated}/{total} escalated");
}
