//! The layouts the JS entry of `applyWatermark` assembles its output from (src/wasm only
//! converts them): kept messages as references into the caller's input, rewritten ones as text.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use super::{Planned, WatermarkPlan};

/// Marks an output message that is not an input message (the next of the rewritten ones).
pub(crate) const FRESH: u32 = u32::MAX;

/// For `applyWatermark` on objects: `keep[i]` is the input index of output message `i`, or
/// [`FRESH`] for the next message of `fresh`, a JSON array of the rewritten messages.
pub(crate) fn keep_and_fresh(plan: &WatermarkPlan) -> (Vec<u32>, String) {
    let mut keep = Vec::with_capacity(plan.messages.len());
    let mut fresh = String::from("[");
    for p in &plan.messages {
        match p {
            Planned::Keep(i) => keep.push(*i as u32),
            Planned::New { text } => {
                if fresh.len() > 1 {
                    fresh.push(',');
                }
                fresh.push_str(text);
                keep.push(FRESH);
            }
        }
    }
    fresh.push(']');
    (keep, fresh)
}

/// For `applyWatermarkJson` on a bare array read by the scanner (`texts`: each input message's
/// slice of `json`): two numbers per output message, `start, end` (UTF-16 offsets of an
/// untouched message in `json`) or [`FRESH`]`, length` (the next `length` UTF-16 units of
/// `fresh`, the rewritten messages' texts one after the other). Joined with `,` inside `[` `]`,
/// they give the text `apply_watermark_json` writes, without decoding the untouched messages
/// back from UTF-8.
pub(crate) fn utf16_parts(json: &str, texts: &[&str], plan: &WatermarkPlan) -> (Vec<u32>, String) {
    // UTF-16 offset of every message: its byte offset less what the messages before it lose
    // (the text between messages is ASCII: white space, commas, the bracket).
    let base = json.as_ptr() as usize;
    let mut offsets = Vec::with_capacity(texts.len());
    let mut lost = 0usize;
    for (text, &chars) in texts.iter().zip(&plan.input_chars) {
        let start = text.as_ptr() as usize - base - lost;
        let units = if chars == text.len() {
            text.len() // ASCII
        } else {
            utf16_len(text)
        };
        offsets.push((start, start + units));
        lost += text.len() - units;
    }
    let mut parts = Vec::with_capacity(2 * plan.messages.len());
    let mut fresh = String::new();
    for p in &plan.messages {
        match p {
            Planned::Keep(i) => {
                let (a, b) = offsets[*i];
                parts.extend([a as u32, b as u32]);
            }
            Planned::New { text } => {
                fresh.push_str(text);
                parts.extend([FRESH, utf16_len(text) as u32]);
            }
        }
    }
    (parts, fresh)
}

/// The UTF-16 length of `text`: one unit per character (every byte that is not a UTF-8
/// continuation byte starts one), two for a character outside the BMP (a 4-byte lead byte,
/// `0xF0` and up). Counted over bytes without decoding, so the loop vectorises.
pub(crate) fn utf16_len(text: &str) -> usize {
    text.bytes()
        .map(|b| usize::from((b & 0xC0) != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::{plan_json, Parsed, WatermarkOptions, WatermarkState};
    use super::*;

    fn utf16(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    /// The parts, assembled as the JS entry does, give the text `apply_watermark_json` writes:
    /// every dev session (Anthropic shape, non-ASCII texts among them) and one with astral
    /// characters in kept and rewritten messages.
    #[test]
    fn parts_assemble_to_the_written_text() {
        let astral =
            r#"[{"role":"user","content":"héllo 😀"},{"role":"assistant","content":"ok ✓ 😀"}]"#;
        let sessions = include_str!("../../tests/fixtures/watermark_sessions_dev.jsonl");
        let mut inputs = vec![astral.to_string()];
        for line in sessions.lines().filter(|l| !l.trim().is_empty()) {
            let record: serde_json::Value = serde_json::from_str(line).expect("fixture line");
            inputs.push(record["messages"].to_string());
        }
        let (state, options) = (WatermarkState::default(), WatermarkOptions::default());
        let mut rewritten = 0;
        for json in &inputs {
            let (plan, parsed) = plan_json(json, &state, &options).expect("plan");
            let Parsed::Scanned(texts) = parsed else {
                panic!("a bare array is scanned");
            };
            rewritten += plan
                .messages
                .iter()
                .filter(|p| matches!(p, Planned::New { .. }))
                .count();
            let (parts, fresh) = utf16_parts(json, &texts, &plan);
            let (json16, fresh16) = (utf16(json), utf16(&fresh));
            let mut out: Vec<u16> = utf16("[");
            let mut at = 0usize;
            for (n, pair) in parts.chunks(2).enumerate() {
                if n > 0 {
                    out.extend(utf16(","));
                }
                if pair[0] == FRESH {
                    out.extend(&fresh16[at..at + pair[1] as usize]);
                    at += pair[1] as usize;
                } else {
                    out.extend(&json16[pair[0] as usize..pair[1] as usize]);
                }
            }
            out.extend(utf16("]"));
            let written = crate::watermark::apply_watermark_json(json, &state, &options)
                .expect("apply")
                .json;
            assert_eq!(String::from_utf16(&out).expect("utf-16"), written);

            let (keep, fresh) = keep_and_fresh(&plan);
            assert_eq!(keep.len(), plan.messages.len());
            let fresh: Vec<serde_json::Value> = serde_json::from_str(&fresh).expect("a JSON array");
            assert_eq!(fresh.len(), keep.iter().filter(|&&k| k == FRESH).count());
        }
        assert!(rewritten > 10, "{rewritten} rewritten messages");
    }

    #[test]
    fn utf16_len_counts_code_units() {
        for s in ["", "abc", "é", "😀", "a😀é✓", "\u{10FFFF}x"] {
            assert_eq!(utf16_len(s), s.encode_utf16().count(), "{s}");
        }
    }
}
