//! compress with a caller's token counter, `tokenCounter`, and the methods (hierarchical, and
//! the summariser protocol of abstractive / hybrid), on the fixtures' real conversations.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use condense::compress::{
    compress, compress_json, message_text, uncompress, uncompress_json, CompressContext,
    CompressMethod, CompressOptions, Summarizer, SummaryRequest, TokenCounter, TokenCounterKind,
};
use condense::embed::Embedder;
use condense::{Error, ErrorKind};
use proptest::prelude::*;
use serde_json::Value;

fn records() -> Vec<(String, Vec<Value>)> {
    let files = [
        include_str!("fixtures/sharegpt_sample.jsonl"),
        include_str!("fixtures/tool_sessions_openai_sample.jsonl"),
        include_str!("fixtures/tool_sessions_anthropic_sample.jsonl"),
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

/// A counter in characters that records every text it was asked for.
#[derive(Default)]
struct Chars {
    asked: Mutex<Vec<String>>,
}

impl TokenCounter for Chars {
    fn count(&self, text: &str) -> Result<usize, Error> {
        self.asked.lock().unwrap().push(text.to_string());
        Ok(text.chars().count())
    }
}

fn chars_of(messages: &[Value]) -> usize {
    messages
        .iter()
        .map(|m| message_text(m).chars().count())
        .sum()
}

fn with_counter(counter: &dyn TokenCounter) -> CompressContext<'_> {
    CompressContext {
        counter: Some(counter),
        ..CompressContext::default()
    }
}

#[test]
fn a_callers_counter_counts_everything_and_each_text_once() {
    for (id, messages) in records() {
        let counter = Chars::default();
        let before = chars_of(&messages);
        let budget = before / 4;
        let opts = CompressOptions {
            token_budget: Some(budget),
            ..CompressOptions::default()
        };
        let out = compress(&messages, &opts, with_counter(&counter)).unwrap();
        // Stats and the budget are in the counter's units.
        assert_eq!(out.stats.tokens_before, before, "{id}");
        assert_eq!(out.stats.tokens_after, chars_of(&out.messages), "{id}");
        assert_eq!(out.stats.budget, Some(budget), "{id}");
        assert_eq!(
            out.stats.fits,
            Some(out.stats.tokens_after <= budget),
            "{id}"
        );
        // Memoised: every distinct text was counted once, however many passes the loop made.
        let asked = counter.asked.lock().unwrap();
        let distinct: HashSet<&String> = asked.iter().collect();
        assert_eq!(
            distinct.len(),
            asked.len(),
            "{id}: a text was counted twice"
        );
        // Round trip.
        assert_eq!(uncompress(&out.messages, &out.verbatim), messages, "{id}");
    }
}

#[test]
fn min_tokens_and_target_ratio_use_the_counter() {
    let (_, messages) = records().remove(0);
    let counter = Chars::default();
    let chars = chars_of(&messages);
    // minTokens in characters: just at the size, nothing changes.
    let opts = CompressOptions {
        recency_window: 0,
        min_tokens: chars,
        ..CompressOptions::default()
    };
    let out = compress(&messages, &opts, with_counter(&counter)).unwrap();
    assert_eq!(out.messages, messages);
    // Under the estimator the same minTokens (far more than its count) changes nothing either,
    // but one less than the character count does compress with the counter.
    let opts = CompressOptions {
        min_tokens: chars - 1,
        ..opts
    };
    let out = compress(&messages, &opts, with_counter(&counter)).unwrap();
    assert_ne!(out.messages, messages);
    let opts = CompressOptions {
        target_ratio: Some(0.5),
        min_tokens: 0,
        ..opts
    };
    let out = compress(&messages, &opts, with_counter(&counter)).unwrap();
    assert_eq!(out.stats.budget, Some(chars / 2));
}

#[test]
fn a_counters_error_is_the_calls_error() {
    struct Broken;
    impl TokenCounter for Broken {
        fn count(&self, text: &str) -> Result<usize, Error> {
            if text.len() > 300 {
                Err(Error::new(
                    ErrorKind::InvalidOptions,
                    "options.countTokens",
                    "boom",
                ))
            } else {
                Ok(1)
            }
        }
    }
    let (_, messages) = records().remove(0);
    let e = compress(
        &messages,
        &CompressOptions::default(),
        with_counter(&Broken),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOptions);
    assert_eq!(e.path(), "options.countTokens");
    assert_eq!(e.reason(), "boom");
}

#[test]
fn the_model_counter_needs_a_tokenizer() {
    let (_, messages) = records().remove(0);
    let opts = CompressOptions::from_json(r#"{"tokenCounter":"model"}"#).unwrap();
    assert_eq!(opts.token_counter, TokenCounterKind::Model);
    let e = compress(&messages, &opts, CompressContext::new()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOptions);
    assert_eq!(e.path(), "options.tokenCounter");
    let lexical = Embedder::lexical();
    let ctx = CompressContext {
        embedder: Some(&lexical),
        ..CompressContext::default()
    };
    let e = compress(&messages, &opts, ctx).unwrap_err();
    assert_eq!(e.path(), "options.tokenCounter");
    // And not together with a caller's counter.
    let counter = Chars::default();
    let e = compress(&messages, &opts, with_counter(&counter)).unwrap_err();
    assert_eq!(e.path(), "options.tokenCounter");
    let e = CompressOptions::from_json(r#"{"tokenCounter":"o200k"}"#).unwrap_err();
    assert_eq!(e.path(), "options.tokenCounter");
}

#[cfg(feature = "embed")]
#[test]
fn the_model_counter_counts_word_pieces() {
    use condense::compress::ModelCounter;
    use condense::embed::tokenizer::WordPiece;
    let dir = std::env::var("CONDENSE_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
    let json = std::fs::read(dir.join("tokenizer.json"))
        .expect("models/tokenizer.json: run scripts/fetch-models");
    let wp = WordPiece::from_json(&json, Default::default()).unwrap();
    // The whole text, past the model's 256-token truncation, without [CLS]/[SEP].
    assert_eq!(wp.count_pieces("hello world"), 2);
    let long = "internationalization ".repeat(300);
    assert!(wp.count_pieces(&long) > 300);
    assert_eq!(wp.count_pieces(""), 0);
    let (_, messages) = records().remove(0);
    let counter = ModelCounter(&wp);
    let out = compress(
        &messages,
        &CompressOptions::default(),
        with_counter(&counter),
    )
    .unwrap();
    let expected: usize = messages
        .iter()
        .map(|m| wp.count_pieces(&message_text(m)))
        .sum();
    assert_eq!(out.stats.tokens_before, expected);
}

#[test]
fn hierarchical_picks_the_shallowest_level_that_fits() {
    for (id, messages) in records() {
        let base = compress(
            &messages,
            &CompressOptions::default(),
            CompressContext::new(),
        )
        .unwrap();
        let hier = CompressOptions {
            method: CompressMethod::Hierarchical,
            ..CompressOptions::default()
        };
        // Without a budget: the default pass.
        assert_eq!(
            compress(&messages, &hier, CompressContext::new()).unwrap(),
            base,
            "{id}"
        );
        let mut last_level = 0;
        for ratio in [0.6, 0.4, 0.25, 0.15] {
            let opts = CompressOptions {
                target_ratio: Some(ratio),
                ..hier.clone()
            };
            let out = compress(&messages, &opts, CompressContext::new()).unwrap();
            assert_eq!(
                out.stats.fits,
                Some(out.stats.tokens_after <= out.stats.budget.unwrap())
            );
            assert_eq!(uncompress(&out.messages, &out.verbatim), messages, "{id}");
            if let Some(level) = out.stats.level {
                assert!(level <= 2, "{id}");
                assert_eq!(out.stats.fits, Some(true), "{id}");
                // A smaller budget never picks a shallower level within one stage.
                if out.stats.escalation == 0 {
                    assert!(level >= last_level, "{id} at {ratio}");
                    last_level = level;
                }
            }
        }
    }
}

#[test]
fn hierarchical_levels_are_the_seeds_fractions() {
    // One long prose message outside the recency window: at level k its summary is about
    // LEVELS[k] of it, and the level chosen is the first whose output fits.
    let sentence = "The deployment of service alpha on cluster beta finished after 42 minutes with status OK. ";
    let messages = vec![
        serde_json::json!({"role": "user", "content": sentence.repeat(40)}),
        serde_json::json!({"role": "assistant", "content": "ok"}),
    ];
    let opts = CompressOptions {
        recency_window: 1,
        method: CompressMethod::Hierarchical,
        ..CompressOptions::default()
    };
    let before = compress(&messages, &opts, CompressContext::new())
        .unwrap()
        .stats
        .tokens_before;
    let mut levels = Vec::new();
    for ratio in [0.7, 0.45, 0.2] {
        let out = compress(
            &messages,
            &CompressOptions {
                target_ratio: Some(ratio),
                ..opts.clone()
            },
            CompressContext::new(),
        )
        .unwrap();
        assert_eq!(out.stats.fits, Some(true));
        levels.push(out.stats.level);
        assert!(out.stats.tokens_after as f64 <= before as f64 * ratio);
    }
    assert_eq!(levels, vec![Some(0), Some(1), Some(2)]);
}

/// A summariser that answers by kind of test case, keyed by the text's length.
struct Fake;

impl Summarizer for Fake {
    fn summarize(&self, r: &SummaryRequest) -> Result<String, Error> {
        match r.text.len() % 4 {
            0 => Ok(format!("short summary of {}", r.index)),
            1 => Ok(r.text.repeat(2)),
            2 => Ok("   ".into()),
            _ => Err(Error::new(ErrorKind::Internal, "summarizer", "offline")),
        }
    }
}

#[test]
fn abstractive_without_a_summarizer_is_extractive_with_a_warning() {
    for (id, messages) in records() {
        let base = compress(
            &messages,
            &CompressOptions::default(),
            CompressContext::new(),
        )
        .unwrap();
        for method in [CompressMethod::Abstractive, CompressMethod::Hybrid] {
            let opts = CompressOptions {
                method,
                ..CompressOptions::default()
            };
            let out = compress(&messages, &opts, CompressContext::new()).unwrap();
            assert_eq!(out.messages, base.messages, "{id}");
            assert_eq!(out.verbatim, base.verbatim, "{id}");
            assert_eq!(out.stats.warnings.len(), 1, "{id}");
            assert!(out.stats.warnings[0].contains(method.as_str()));
            assert!(out.stats.summarizer.is_none());
        }
    }
}

#[test]
fn summaries_are_used_only_when_shorter_and_the_round_trip_holds() {
    let mut accepted_total = 0;
    for (id, messages) in records() {
        for method in [CompressMethod::Abstractive, CompressMethod::Hybrid] {
            for budget in [None, Some(0.3)] {
                let opts = CompressOptions {
                    method,
                    target_ratio: budget,
                    ..CompressOptions::default()
                };
                let ctx = CompressContext {
                    summarizer: Some(&Fake),
                    ..CompressContext::default()
                };
                let out = compress(&messages, &opts, ctx).unwrap();
                assert_eq!(uncompress(&out.messages, &out.verbatim), messages, "{id}");
                assert!(out.stats.tokens_after <= out.stats.tokens_before);
                let s = out.stats.summarizer.clone().unwrap();
                let requests = compress_json(
                    &serde_json::to_string(&messages).unwrap(),
                    &opts,
                    CompressContext::default(),
                )
                .unwrap()
                .requests;
                assert_eq!(s.requested, requests.len(), "{id}");
                let failing = requests.iter().filter(|r| r.text.len() % 4 == 3).count();
                assert_eq!(s.failed, failing, "{id}");
                assert_eq!(out.stats.warnings.len(), failing, "{id}");
                accepted_total += s.accepted;
                // Every accepted answer is in a marker; the short ones always are, a doubled
                // original never is (a doubled extract may be: hybrid).
                let all: String = out
                    .messages
                    .iter()
                    .map(message_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                let mut used = 0;
                for r in &requests {
                    let Ok(answer) = Fake.summarize(r) else {
                        continue;
                    };
                    let found = !answer.trim().is_empty() && all.contains(&format!(": {answer}"));
                    used += usize::from(found);
                    match r.text.len() % 4 {
                        0 => assert!(found, "{id}: {answer}"),
                        1 if method == CompressMethod::Abstractive => assert!(!found, "{id}"),
                        2 => assert!(!found),
                        _ => {}
                    }
                }
                assert_eq!(used, s.accepted, "{id}");
                // Under a budget the final plan may fold or truncate a text that phase 1 asked a
                // summary for: such summaries count in none of the three.
                assert!(s.accepted + s.rejected + s.failed <= s.requested, "{id}");
                if budget.is_none() {
                    assert_eq!(s.accepted + s.rejected + s.failed, s.requested, "{id}");
                }
                // Deterministic given the summaries: phase 2 by hand gives the same bytes.
                let summaries: BTreeMap<String, String> = requests
                    .iter()
                    .filter_map(|r| Fake.summarize(r).ok().map(|t| (r.id.clone(), t)))
                    .collect();
                let by_hand = CompressOptions {
                    summaries: Some(summaries),
                    ..opts.clone()
                };
                let json = serde_json::to_string(&messages).unwrap();
                let a = compress_json(&json, &by_hand, CompressContext::default()).unwrap();
                let b = compress_json(&json, &by_hand, CompressContext::default()).unwrap();
                assert_eq!(a.json, b.json);
                assert_eq!(
                    serde_json::from_str::<Vec<Value>>(&a.json).unwrap(),
                    out.messages,
                    "{id}"
                );
                assert_eq!(uncompress_json(&a.json, &a.verbatim).unwrap(), json);
                // Idempotent on its own output (without a budget: a budget's fill keeps texts
                // whose fill-level summary is not shorter, which the default level may shorten).
                if budget.is_none() {
                    let again = compress(
                        &out.messages,
                        &CompressOptions::default(),
                        CompressContext::new(),
                    )
                    .unwrap();
                    assert_eq!(again.messages, out.messages, "{id}");
                }
            }
        }
    }
    assert!(accepted_total > 0, "no summary was ever accepted");
}

#[test]
fn hybrid_gives_the_extract_and_abstractive_the_original() {
    let (_, messages) = records().remove(0);
    let json = serde_json::to_string(&messages).unwrap();
    let req = |method| {
        compress_json(
            &json,
            &CompressOptions {
                method,
                ..CompressOptions::default()
            },
            CompressContext::default(),
        )
        .unwrap()
        .requests
    };
    let (a, h) = (
        req(CompressMethod::Abstractive),
        req(CompressMethod::Hybrid),
    );
    assert!(!a.is_empty());
    assert_eq!(a.len(), h.len());
    for (a, h) in a.iter().zip(&h) {
        assert_eq!(a.id, h.id);
        assert!(h.text.len() < a.text.len());
        assert!(a.target_tokens < a.original_tokens);
        assert_eq!(a.original_tokens, condense::text::estimate_tokens(&a.text));
    }
    assert!(req(CompressMethod::Extractive).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the summariser returns, an output message is never longer than what it
    /// replaced, and the round trip holds.
    #[test]
    fn accepted_summaries_never_make_a_message_longer(
        record in 0usize..14,
        lens in proptest::collection::vec(0usize..2000, 1..8),
        hybrid in any::<bool>(),
        ratio in proptest::option::of(prop_oneof![Just(0.2), Just(0.5)]),
    ) {
        let all = records();
        let (_, messages) = &all[record % all.len()];
        struct Sized(Vec<usize>);
        impl Summarizer for Sized {
            fn summarize(&self, r: &SummaryRequest) -> Result<String, Error> {
                let n = self.0[r.index % self.0.len()];
                Ok("lorem ipsum dolor sit amet ".repeat(n / 27 + 1)[..n].to_string())
            }
        }
        let opts = CompressOptions {
            method: if hybrid { CompressMethod::Hybrid } else { CompressMethod::Abstractive },
            target_ratio: ratio,
            ..CompressOptions::default()
        };
        let s = Sized(lens);
        let ctx = CompressContext { summarizer: Some(&s), ..CompressContext::default() };
        let out = compress(messages, &opts, ctx).unwrap();
        prop_assert_eq!(&uncompress(&out.messages, &out.verbatim), messages);
        let tokens = |m: &Value| condense::text::estimate_tokens(&message_text(m));
        for m in &out.messages {
            let text = message_text(m);
            if let Some(originals) = out.verbatim.iter().find(|(id, _)| text.contains(id.as_str())).map(|(_, v)| v) {
                let before: usize = originals.iter().map(tokens).sum();
                prop_assert!(tokens(m) <= before, "{} > {}", tokens(m), before);
            }
        }
        prop_assert!(out.stats.tokens_after <= out.stats.tokens_before);
        if let (Some(b), Some(fits)) = (out.stats.budget, out.stats.fits) {
            prop_assert_eq!(fits, out.stats.tokens_after <= b);
        }
    }
}

/// A counter in words (the context cases' caller counter, the same in every host's test).
struct Words;

impl TokenCounter for Words {
    fn count(&self, text: &str) -> Result<usize, Error> {
        Ok(text.split_whitespace().count())
    }
}

/// A summariser that keeps the first five words (the context cases' summariser).
struct FirstWords;

impl Summarizer for FirstWords {
    fn summarize(&self, request: &SummaryRequest) -> Result<String, Error> {
        Ok(request
            .text
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" "))
    }
}

/// Every combination of the context in `tests/fixtures/compress_context_cases.json` gives the
/// outcome the fixture says (the CLI and the npm package run the same cases).
#[test]
fn context_combinations_are_decided_once() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/compress_context_cases.json")).unwrap();
    let messages = fixture["messages"].as_array().unwrap().clone();
    let lexical = Embedder::lexical();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let opts = CompressOptions::from_value(&case["options"]);
        let opts = match (opts, &case["expect"]) {
            (Ok(o), _) => o,
            (Err(e), Value::Object(want)) => {
                assert_eq!(e.code(), want["code"], "{name}");
                assert_eq!(e.path(), want["path"], "{name}");
                continue;
            }
            (Err(e), _) => panic!("{name}: {e}"),
        };
        let mut cache = case["cache"]
            .as_bool()
            .unwrap_or(false)
            .then(condense::compress::CompressCache::new);
        let ctx = CompressContext {
            embedder: (case["embedder"] == "lexical").then_some(&lexical),
            counter: case["counter"]
                .as_bool()
                .unwrap_or(false)
                .then_some(&Words as &dyn TokenCounter),
            summarizer: case["summarizer"]
                .as_bool()
                .unwrap_or(false)
                .then_some(&FirstWords as &dyn Summarizer),
            cache: cache.as_mut(),
            ..CompressContext::default()
        };
        match (compress(&messages, &opts, ctx), &case["expect"]) {
            (Ok(out), Value::String(ok)) if ok == "ok" => {
                assert_eq!(uncompress(&out.messages, &out.verbatim), messages, "{name}");
                assert_eq!(out.stats.cache_hits.is_some(), cache.is_some(), "{name}");
            }
            (Err(e), Value::Object(want)) => {
                assert_eq!(e.code(), want["code"], "{name}");
                assert_eq!(e.path(), want["path"], "{name}");
            }
            (got, want) => panic!("{name}: got {got:?}, want {want}"),
        }
    }
}
