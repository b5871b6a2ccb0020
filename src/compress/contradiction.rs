//! Superseded-by-correction (opt-in, `contradictionDetection`): a later message that corrects
//! an earlier one ("actually, use port 8080 not 8000", "correction: …", "scratch that")
//! makes the earlier message compressible to a short marker naming its correction (the
//! eighth classification step of docs/design.md, "The compress pipeline").
//!
//! A message *corrects* when it contains a correction signal ([`signal`]); the message it
//! corrects is the nearest earlier message of the same role, within [`LOOKBACK`] messages,
//! that shares the most topic terms with it (key tokens count twice; at least two shared
//! terms, or one shared key token). Each correction supersedes at most one message, and a
//! message that is itself a correction can be superseded by a later one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::Regex;

use crate::text::keys;

/// How many messages back a correction looks for what it corrects.
pub(crate) const LOOKBACK: usize = 8;

fn signals() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)(?:^|[.!?\n]\s*|,\s*)(actually|correction|scratch that|i meant|i mean|wait|sorry|my mistake|my bad|disregard (?:that|my last|the previous)|ignore (?:that|my last|what i said)|on second thought|let me correct)\b|\b(instead of|rather than|not [^\s.,;]{1,40} but)\b|\b(?:use|it's|it is|should be) [^.;\n]{1,40}?,? not [^\s.,;]{1,40}",
        )
        .ok()
    })
    .as_ref()
}

/// The correction signal of a text (lower-cased), if it has one.
pub(crate) fn signal(text: &str) -> Option<String> {
    let caps = signals()?.captures(text)?;
    let m = caps
        .get(1)
        .or_else(|| caps.get(2))
        .map(|m| m.as_str().to_lowercase())
        .unwrap_or_else(|| "x, not y".to_string());
    Some(m.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

const STOP: &[&str] = &[
    "that",
    "this",
    "with",
    "from",
    "have",
    "will",
    "would",
    "should",
    "could",
    "there",
    "their",
    "what",
    "when",
    "which",
    "about",
    "actually",
    "correction",
    "instead",
    "rather",
    "sorry",
    "meant",
    "scratch",
    "wait",
    "just",
    "also",
    "then",
    "than",
    "into",
    "your",
    "please",
    "them",
    "they",
    "been",
    "were",
    "make",
    "like",
    "sure",
    "does",
    "dont",
    "mean",
];

fn terms(text: &str) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect();
    for (k, _) in keys::extract(text) {
        out.insert(format!("\u{1}{k}"));
    }
    out
}

/// Which messages are superseded: `superseded index → (correcting index, signal)`.
/// `texts[i]` is message `i`'s text, `roles[i]` its role, `eligible[i]` whether it may be
/// superseded (not preserved by an earlier classification step).
pub(crate) fn find(
    texts: &[String],
    roles: &[&str],
    eligible: &[bool],
) -> BTreeMap<usize, (usize, String)> {
    let mut out = BTreeMap::new();
    let bags: Vec<BTreeSet<String>> = texts.iter().map(|t| terms(t)).collect();
    for j in 1..texts.len() {
        let Some(sig) = signal(&texts[j]) else {
            continue;
        };
        let mut best: Option<(usize, usize)> = None; // (score, index)
        for i in (j.saturating_sub(LOOKBACK)..j).rev() {
            if !eligible[i] || roles[i] != roles[j] || out.contains_key(&i) {
                continue;
            }
            let shared = bags[i].intersection(&bags[j]);
            let (mut words, mut keys) = (0usize, 0usize);
            for t in shared {
                if t.starts_with('\u{1}') {
                    keys += 1;
                } else {
                    words += 1;
                }
            }
            if words < 2 && keys == 0 {
                continue;
            }
            let score = words + 2 * keys;
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, i));
            }
        }
        if let Some((_, i)) = best {
            out.insert(i, (j, sig));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals() {
        assert_eq!(
            signal("Actually, use port 8080").as_deref(),
            Some("actually")
        );
        assert_eq!(
            signal("Correction: the bucket is eu-west-1").as_deref(),
            Some("correction")
        );
        assert_eq!(
            signal("ok. Scratch that, we go with Postgres").as_deref(),
            Some("scratch that")
        );
        assert_eq!(
            signal("use port 8080, not 8000").as_deref(),
            Some("x, not y")
        );
        assert_eq!(signal("The server listens on port 8000."), None);
        assert_eq!(signal("This is factual and actually-hyphenated? no"), None);
    }

    #[test]
    fn a_correction_supersedes_the_nearest_related_message_of_its_role() {
        let texts: Vec<String> = [
            "Deploy the service on port 8000 behind the nginx proxy, with TLS terminated there.",
            "Sure, I will deploy it on port 8000 behind nginx.",
            "The database lives on the staging cluster, use the replica for reads.",
            "Sure.",
            "Actually, use port 8080 not 8000 for the service, nginx already holds 8000.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let roles = ["user", "assistant", "user", "assistant", "user"];
        let found = find(&texts, &roles, &[true; 5]);
        assert_eq!(found.get(&0), Some(&(4, "actually".to_string())));
        assert_eq!(found.len(), 1);
        // Not eligible (e.g. preserved): nothing else is picked in its place unless related.
        let found = find(&texts, &roles, &[false, true, true, true, true]);
        assert!(found.is_empty(), "{found:?}");
    }
}
