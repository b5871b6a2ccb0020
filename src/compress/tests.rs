//! Unit tests of the entry points.

use super::*;
use serde_json::Value;

/// The text [`compress_json`] writes, assembled from [`compress_parts`] as the JS
/// entry assembles it (byte spans here, UTF-16 spans there).
fn assemble(json: &str, p: &CompressParts) -> (String, String) {
    let mut fresh = p.fresh.iter();
    let messages: Vec<&str> = p
        .messages
        .iter()
        .map(|m| match m {
            Some(i) => &json[p.spans[*i].clone()],
            None => fresh.next().map_or("", String::as_str),
        })
        .collect();
    let verbatim: Vec<String> = p
        .verbatim
        .iter()
        .map(|(id, originals)| {
            let texts: Vec<&str> = originals
                .iter()
                .map(|&i| &json[p.spans[i].clone()])
                .collect();
            format!("{}:[{}]", Value::String(id.clone()), texts.join(","))
        })
        .collect();
    (
        format!("[{}]", messages.join(",")),
        format!("{{{}}}", verbatim.join(",")),
    )
}

#[test]
fn parts_assemble_to_the_written_text() {
    let sets = [
        include_str!("../../tests/fixtures/sharegpt_sample.jsonl"),
        include_str!("../../tests/fixtures/tool_sessions_openai_sample.jsonl"),
        include_str!("../../tests/fixtures/tool_sessions_anthropic_sample.jsonl"),
    ];
    let budget = CompressOptions::from_json(r#"{"targetRatio": 0.3, "query": "order id"}"#)
        .expect("options");
    let mut checked = 0;
    for line in sets
        .iter()
        .flat_map(|s| s.lines())
        .filter(|l| !l.trim().is_empty())
    {
        let record: Value = serde_json::from_str(line).expect("fixture line");
        let messages = &record["messages"];
        let compact = messages.to_string();
        let pretty = serde_json::to_string_pretty(messages).expect("pretty");
        for (json, options) in [
            (compact.clone(), CompressOptions::default()),
            (pretty, CompressOptions::default()),
            (compact, budget.clone()),
        ] {
            {
                let written =
                    compress_json(&json, &options, CompressContext::new()).expect("written");
                let Compressed::Parts(parts) =
                    compress_parts(&json, &options, CompressContext::new()).expect("parts")
                else {
                    panic!("a bare array gives parts");
                };
                assert_eq!(
                    assemble(&json, &parts),
                    (written.json.clone(), written.verbatim.clone())
                );
                assert_eq!(parts.stats, written.stats);
                // The core's own join (the wasm export's text result) gives the same text.
                let joined = parts.into_written(&json);
                assert_eq!(
                    (joined.json, joined.verbatim, joined.stats),
                    (written.json, written.verbatim, written.stats)
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 12, "{checked}");
    // A request body is written in the core.
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    assert!(matches!(
        compress_parts(body, &CompressOptions::default(), CompressContext::new()),
        Ok(Compressed::Written(_))
    ));
}
