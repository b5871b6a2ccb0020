//! Importance scoring (opt-in, `importanceScoring`): messages whose score reaches
//! `importanceThreshold` are kept verbatim (the sixth classification step, docs/design.md, "The
//! compress pipeline").
//!
//! The score of a message is in `[0, 1]`, the weighted sum of three signals, each in `[0, 1]`:
//!
//! | signal | weight | what |
//! |---|---|---|
//! | reuse | 0.45 | the share of the message's key tokens (identifiers, numbers, paths, …, see `text::keys`) that a later message uses again |
//! | commitment | 0.30 | decision and constraint language: *must*, *never*, *always*, *required*, *important*, *critical*, *decided*, *don't*, *make sure*, *ensure*, *deadline* … (3 or more hits: 1) |
//! | density | 0.25 | key tokens per 100 characters, halved (2 or more per 100 characters: 1) |
//!
//! A message that states a constraint everyone later relies on ("the API key must stay in
//! `config/prod.toml`; never log `session_id`") scores high; chit-chat scores 0.

use std::sync::OnceLock;

use regex::Regex;

use crate::text::keys;

/// Weight of the reuse signal.
const REUSE: f64 = 0.45;
/// Weight of the commitment signal.
const COMMITMENT: f64 = 0.30;
/// Weight of the density signal.
const DENSITY: f64 = 0.25;

fn commitment_words() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(?:must|never|always|required?|requirements?|important(?:ly)?|critical|crucial|decided|decision|constraints?|don't|do not|make sure|ensure|deadline|mandatory|forbidden)\b",
        )
        .ok()
    })
    .as_ref()
}

/// The importance score of `texts[i]` given the texts of the whole conversation.
pub(crate) fn score(texts: &[String], i: usize) -> f64 {
    let Some(text) = texts.get(i) else {
        return 0.0;
    };
    let mut own: Vec<String> = keys::extract(text).into_iter().map(|(k, _)| k).collect();
    own.sort();
    own.dedup();
    let reuse = if own.is_empty() {
        0.0
    } else {
        let later = &texts[i + 1..];
        let reused = own
            .iter()
            .filter(|k| later.iter().any(|t| keys::contains_token(t, k)))
            .count();
        reused as f64 / own.len() as f64
    };
    let hits = commitment_words().map_or(0, |re| re.find_iter(text).count());
    let commitment = (hits.min(3) as f64) / 3.0;
    let chars = text.chars().count().max(1) as f64;
    let density = ((own.len() as f64 / (chars / 100.0)) / 2.0).min(1.0);
    (REUSE * reuse + COMMITMENT * commitment + DENSITY * density).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn constraints_reused_later_score_high_and_chit_chat_zero() {
        let t = texts(&[
            "Thanks so much, that was a really nice explanation and I enjoyed reading it a lot.",
            "You must never log session_id, and the key must always stay in config/prod.toml.",
            "OK so where does session_id go? I checked config/prod.toml already.",
        ]);
        assert_eq!(score(&t, 0), 0.0);
        let s = score(&t, 1);
        assert!(s >= 0.65, "{s}");
        assert!(score(&t, 2) < s);
    }

    #[test]
    fn score_is_within_bounds() {
        let t = texts(&["", "x_1 y_2 z_3 must must must must", "x_1 y_2 z_3"]);
        for i in 0..4 {
            let s = score(&t, i);
            assert!((0.0..=1.0).contains(&s), "{s}");
        }
    }
}
