//! Deterministic summaries: extractive prose (docs/design.md, "The compress pipeline"), code-split,
//! structured tool output (lines), and JSON tool output.
//!
//! Every summary is a body; `compress` wraps it in a `[summary#id: …]` marker and keeps it only
//! when it is shorter than what it replaces (the size guard).

use std::collections::{HashMap, HashSet};

use crate::text::fences::{self, Segment};
use crate::text::keys::{self, KeyKind};
use crate::text::score::{score_sentence_keys, score_sentence_with};
use crate::text::sentences;

/// How hard to summarise: the share of the original a summary aims at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Level {
    /// Target size as a fraction of the original characters (0.3).
    pub ratio: f64,
    /// Lower bound of the budget in characters (200).
    pub min_chars: usize,
    /// Upper bound of the budget in characters (600).
    pub max_chars: usize,
    /// How many left-out key tokens may be appended.
    pub max_keys: usize,
    /// Budget-fill mode (the token budget loop): no caps, the appended key tokens count
    /// within the budget (see [`fill`]).
    pub fill: bool,
}

impl Level {
    /// The adaptive budget: `max(200, min(round(len × 0.3), 600))`.
    pub const DEFAULT: Level = Level {
        ratio: 0.15,
        min_chars: 120,
        max_chars: 320,
        max_keys: 24,
        fill: false,
    };

    /// No summarising at all (below `minTokens`).
    pub const NONE: Level = Level {
        ratio: 0.0,
        min_chars: 0,
        max_chars: 0,
        max_keys: 0,
        fill: false,
    };

    /// Budget-fill level: every text aims at `ratio` of its characters, without the default
    /// level's caps, key tokens included in that share. The budget loop searches the ratio.
    pub fn filling(ratio: f64) -> Level {
        Level {
            ratio,
            min_chars: 0,
            max_chars: usize::MAX,
            max_keys: 0,
            fill: true,
        }
    }

    /// A level of exactly `chars` characters (no appended keys).
    pub fn exact(chars: usize) -> Level {
        Level {
            ratio: 0.0,
            min_chars: chars,
            max_chars: chars,
            max_keys: 0,
            fill: true,
        }
    }

    /// The budget in characters for an original of `len` characters.
    pub fn budget(&self, len: usize) -> usize {
        let target = (len as f64 * self.ratio).round() as usize;
        target.clamp(self.min_chars, self.max_chars.max(self.min_chars))
    }

    /// A tighter level (for budget escalation): half the ratio and bounds, the same key
    /// allowance (key tokens are what a reader needs verbatim, and they are short).
    pub fn tighter(&self) -> Level {
        Level {
            ratio: self.ratio / 2.0,
            min_chars: (self.min_chars / 2).max(40),
            max_chars: (self.max_chars / 2).max(80),
            max_keys: self.max_keys,
            fill: self.fill,
        }
    }
}

/// The query of a call (`options.query`): its terms (lower-cased words of 3+ characters) and,
/// when an embedder was given, the cosine between the query's vector and each candidate
/// sentence's (by trimmed sentence text).
#[derive(Clone, Debug, Default)]
pub(crate) struct Query {
    /// Lower-cased query words of 3+ characters that are not English stop words
    /// (term-overlap relevance).
    pub terms: HashSet<String>,
    /// The query's key tokens (identifiers, numbers, paths, … as [`keys::extract`] finds
    /// them).
    pub keys: HashSet<String>,
    /// The query's words as BM25 terms (stemmed, stop words left out): matched against the
    /// field names of JSON tool output (`order_id` for "cancel my orders").
    pub stems: HashSet<String>,
    /// Cosine of the query with each sentence, when an embedder was given.
    pub cosines: HashMap<String, f32>,
    /// What identifies the cosines (the query text and the embedder's identity), for cache
    /// keys; empty without an embedder.
    pub(crate) cosine_source: String,
    /// The call's memo and cache (see `cache.rs`).
    pub(crate) memo: super::cache::Memo,
}

impl Query {
    /// Whether there are no query terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `word` (lower-cased) is a query term.
    pub fn contains(&self, word: &str) -> bool {
        self.terms.contains(word)
    }

    /// Whether the query names a JSON field: a BM25 term of the field's name (split at `_`,
    /// `-`, `.` and camel-case humps) is one of the query's.
    pub fn names_field(&self, field: &str) -> bool {
        if self.stems.is_empty() || field.is_empty() {
            return false;
        }
        let mut spaced = String::with_capacity(field.len() + 4);
        let mut prev_lower = false;
        for c in field.chars() {
            if c.is_uppercase() && prev_lower {
                spaced.push(' ');
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            spaced.push(c);
        }
        crate::retrieve::analyze::Analyzer::english()
            .terms(&spaced)
            .iter()
            .any(|t| self.stems.contains(t))
    }

    /// Whether the query already holds `value` (one of its key tokens, or a word of it): the
    /// next turn has it, so the context need not keep it first.
    pub fn holds(&self, value: &str) -> bool {
        self.keys.contains(value) || self.terms.contains(&value.to_lowercase())
    }

    /// What a summary depends on besides its text and level: the sorted terms and the source
    /// of the cosines (cache keys).
    pub(crate) fn fingerprint(&self) -> String {
        let mut terms: Vec<&str> = self.terms.iter().map(String::as_str).collect();
        terms.sort_unstable();
        let mut keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        keys.sort_unstable();
        let mut stems: Vec<&str> = self.stems.iter().map(String::as_str).collect();
        stems.sort_unstable();
        format!(
            "{}\u{0}{}\u{0}{}\u{0}{}",
            terms.join(" "),
            keys.join(" "),
            stems.join(" "),
            self.cosine_source
        )
    }
}

/// Weight of a sentence's cosine with the query in its score (a cosine of 0.5 counts like
/// two query-term hits).
const COSINE_WEIGHT: f64 = 12.0;

/// Query terms (lower-cased words of 3+ characters, English stop words left out) used for
/// relevance, and the query's key tokens.
pub(crate) fn query_terms(query: Option<&str>) -> Query {
    Query {
        terms: query
            .map(|q| {
                q.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .filter(|w| w.chars().count() >= 3)
                    .map(str::to_lowercase)
                    .filter(|w| !crate::retrieve::analyze::is_english_stop_word(w))
                    .collect()
            })
            .unwrap_or_default(),
        keys: query
            .map(|q| keys::extract(q).into_iter().map(|(k, _)| k).collect())
            .unwrap_or_default(),
        stems: query
            .map(|q| {
                crate::retrieve::analyze::Analyzer::english()
                    .terms(q)
                    .into_iter()
                    .filter(|t| t.chars().count() >= 2)
                    .collect()
            })
            .unwrap_or_default(),
        cosines: HashMap::new(),
        cosine_source: String::new(),
        memo: super::cache::Memo::default(),
    }
}

fn relevance(sentence: &str, terms: &Query) -> f64 {
    if let Some(&c) = terms.cosines.get(sentence.trim()) {
        return f64::from(c.max(0.0)) * COSINE_WEIGHT;
    }
    if terms.is_empty() {
        return 0.0;
    }
    // Query terms have 3+ characters: a word of fewer than 3 bytes (whose lower case has at
    // most 2 characters) cannot be one; a word without capitals is its own lower case.
    let hits = sentence
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| {
            w.len() >= 3
                && if w.chars().any(char::is_uppercase) {
                    terms.contains(&w.to_lowercase())
                } else {
                    terms.contains(w)
                }
        })
        .count();
    hits as f64 * 3.0
}

/// An extractive summary of prose: the best sentence of each paragraph first, then the next
/// best, packed into the level's budget, in reading order, with the key tokens it left out
/// appended (`| keys: a, b`).
pub(crate) fn prose(text: &str, level: Level, terms: &Query) -> String {
    prose_with(text, level, terms, false)
}

/// [`prose`] that keeps, with `facts`, every sentence stating a fact about its speaker
/// ([`crate::text::facts`]) whatever the budget (a user's own facts, in the default pass).
pub(crate) fn prose_with(text: &str, level: Level, terms: &Query, facts: bool) -> String {
    let prepared = Prepared::new(text, terms, facts);
    let body = prepared.pack(level.budget(crate::text::count_chars(text)), facts);
    with_keys(body, text, level.max_keys, terms, prepared.walk.as_ref())
}

/// Texts of a call split and scored once each ([`Prepared`], by the text's address: they are
/// slices of the call's messages and outlive it) under one query, summarised at any level from
/// that: [`prose`] without the scoring again per level, for the budget's plans.
#[derive(Default)]
pub(crate) struct PreparedTexts<'t> {
    map: std::cell::RefCell<crate::text::hash::FastMap<(usize, usize), std::rc::Rc<Prepared<'t>>>>,
}

impl<'t> PreparedTexts<'t> {
    /// `prose(text, level, terms)`, where `terms` is the query every call on this cache uses.
    pub(crate) fn prose(&self, text: &'t str, level: Level, terms: &Query) -> String {
        let key = (text.as_ptr() as usize, text.len());
        let found = self.map.borrow().get(&key).cloned();
        let prepared = found.unwrap_or_else(|| {
            let p = std::rc::Rc::new(Prepared::new(text, terms, false));
            self.map.borrow_mut().insert(key, std::rc::Rc::clone(&p));
            p
        });
        let body = prepared.pack(level.budget(crate::text::count_chars(text)), false);
        with_keys(body, text, level.max_keys, terms, prepared.walk.as_ref())
    }
}

/// A text's sentences scored and ordered once, to be packed into any budget ([`Prepared::pack`]):
/// the budget search asks one text for summaries of many sizes.
pub(crate) struct Prepared<'t> {
    text: &'t str,
    spans: Vec<std::ops::Range<usize>>,
    /// Characters of each sentence plus one (its separator).
    lens: Vec<usize>,
    /// Sentence indices by priority: the best of each paragraph (by score), then the rest.
    order: Vec<usize>,
    /// Sentences that state a fact about the speaker, in reading order (only when asked for).
    facts: Vec<usize>,
    /// The key tokens of the text from one walk, when the call is a single pass.
    pub(crate) walk: Option<keys::TextKeys<'t>>,
}

/// Points a fact sentence gets in the order (under a budget it competes, but comes first).
const FACT_BONUS: f64 = 8.0;

impl<'t> Prepared<'t> {
    /// Splits and scores `text` (the scorer's signals, query relevance, position); with
    /// `facts`, finds the sentences that state a fact about the speaker and ranks them first.
    pub(crate) fn new(text: &'t str, terms: &Query, facts: bool) -> Prepared<'t> {
        let sents = sentences::split(text);
        let last_paragraph = sents.last().map(|s| s.paragraph).unwrap_or(0);
        // The key tokens of the text and of each sentence from one walk, where it can tell; the
        // memo's per-sentence walks otherwise. With a caller's cache the sentence scores come
        // from (and go to) the cache instead; without one the walk also gives the text's key
        // tokens to the call's memo, which a budget asks for (fill candidates, known sets).
        let walk = (!terms.memo.has_cache())
            .then(|| keys::TextKeys::new(text, &mut |k| terms.memo.classify(k)));
        if let Some(w) = &walk {
            terms.memo.seed_keys(text, || w.all());
        }
        let mut fact_list = Vec::new();
        let scored: Vec<(usize, f64)> = sents
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let t = &text[s.span.clone()];
                let walked = walk.as_ref().and_then(|w| {
                    let mut known = true;
                    let score =
                        score_sentence_keys(t, |f| known = w.for_each_in(s.span.clone(), f));
                    known.then_some(score)
                });
                let mut score = walked.unwrap_or_else(|| {
                    terms.memo.score(t, || {
                        score_sentence_with(t, &mut |k| terms.memo.classify(k))
                    })
                }) + relevance(t, terms);
                // Position: a paragraph's first sentence, the first and last
                // paragraphs.
                if s.index == 0 {
                    score += 1.0;
                }
                if s.paragraph == 0 || s.paragraph == last_paragraph {
                    score += 0.5;
                }
                if facts && crate::text::facts::is_fact(t) {
                    fact_list.push(i);
                    score += FACT_BONUS;
                }
                (i, score)
            })
            .collect();
        // Primary: the best sentence of each paragraph.
        // (Paragraphs in order of first appearance; `slot` maps a paragraph to its entry, so
        // long texts of many paragraphs are not searched sentence by sentence.)
        let mut primary: Vec<(usize, f64)> = Vec::new();
        let paragraphs = sents.iter().map(|s| s.paragraph + 1).max().unwrap_or(0);
        let mut slot: Vec<Option<usize>> = vec![None; paragraphs];
        for (i, score) in &scored {
            let p = sents[*i].paragraph;
            match slot.get(p).copied().flatten() {
                Some(k) => {
                    if let Some(best) = primary.get_mut(k) {
                        // Kept unless the new score is higher (or either is NaN, as `>=` has
                        // it).
                        if !matches!(
                            best.1.partial_cmp(score),
                            Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
                        ) {
                            *best = (*i, *score);
                        }
                    }
                }
                None => {
                    if let Some(entry) = slot.get_mut(p) {
                        *entry = Some(primary.len());
                    }
                    primary.push((*i, *score));
                }
            }
        }
        let by_score = |v: &mut Vec<(usize, f64)>| {
            v.sort_by(|a, b| {
                b.1.partial_cmp(&a.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.0.cmp(&b.0))
            })
        };
        by_score(&mut primary);
        let mut is_primary = vec![false; sents.len()];
        for p in &primary {
            is_primary[p.0] = true;
        }
        let mut secondary: Vec<(usize, f64)> = scored
            .into_iter()
            .filter(|(i, _)| !is_primary[*i])
            .collect();
        by_score(&mut secondary);
        let order = primary
            .iter()
            .chain(secondary.iter())
            .map(|p| p.0)
            .collect();
        let lens = sents
            .iter()
            .map(|s| crate::text::count_chars(&text[s.span.clone()]) + 1)
            .collect();
        Prepared {
            text,
            spans: sents.into_iter().map(|s| s.span).collect(),
            lens,
            order,
            facts: fact_list,
            walk,
        }
    }

    /// The summary of at most `budget` characters (one sentence may be cut at a word to fit;
    /// nothing when there are no sentences): sentences in priority order while they fit, in
    /// reading order. With `keep_facts`, every fact sentence is in it first, whatever the
    /// budget.
    pub(crate) fn pack(&self, budget: usize, keep_facts: bool) -> String {
        if self.spans.is_empty() {
            return String::new();
        }
        let mut chosen: Vec<usize> = Vec::new();
        let mut used = 0usize;
        let mut taken = vec![false; self.spans.len()];
        if keep_facts {
            for &i in &self.facts {
                used += self.lens[i];
                taken[i] = true;
                chosen.push(i);
            }
        }
        for &i in &self.order {
            if taken[i] {
                continue;
            }
            let len = self.lens[i];
            if used + len > budget && !chosen.is_empty() {
                continue;
            }
            if used + len > budget {
                // Not even one sentence fits: cut the best one at a word boundary.
                return cut_at_word(&self.text[self.spans[i].clone()], budget);
            }
            used += len;
            taken[i] = true;
            chosen.push(i);
        }
        chosen.sort_unstable();
        let mut out = String::with_capacity(used);
        for (n, &i) in chosen.iter().enumerate() {
            if n > 0 {
                out.push(' ');
            }
            out.push_str(self.text[self.spans[i].clone()].trim());
        }
        out
    }

    /// The fact sentences' values ([`crate::text::facts::values`]), in reading order.
    pub(crate) fn fact_values(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for &i in &self.facts {
            for v in crate::text::facts::values(&self.text[self.spans[i].clone()]) {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    }
}

/// `text` cut to at most `max` characters at a word boundary, with `…`.
pub(crate) fn cut_at_word(text: &str, max: usize) -> String {
    if crate::text::count_chars(text) <= max {
        return text.to_string();
    }
    let byte_max = text
        .char_indices()
        .nth(max)
        .map(|(b, _)| b)
        .unwrap_or(text.len());
    let cut = text[..byte_max]
        .rfind(char::is_whitespace)
        .filter(|&b| b > byte_max / 2)
        .unwrap_or(byte_max);
    format!("{}…", text[..cut].trim_end())
}

/// Appends the key tokens of `original` that `body` does not contain (up to `max`).
pub(crate) fn with_keys(
    body: String,
    original: &str,
    max: usize,
    terms: &Query,
    walk: Option<&keys::TextKeys<'_>>,
) -> String {
    if max == 0 {
        return body;
    }
    let all = match walk {
        Some(w) => std::rc::Rc::new(w.all()),
        None => terms.memo.keys(original),
    };
    let missing: Vec<String> = all
        .iter()
        .filter(|(k, kind)| *kind != KeyKind::Code || k.len() <= 40)
        .map(|(k, _)| k.clone())
        .filter(|k| !keys::contains_token(&body, k))
        .take(max)
        .collect();
    if missing.is_empty() {
        body
    } else {
        format!("{body} | keys: {}", missing.join(key_separator(&missing)))
    }
}

/// How listed key tokens are separated: one space (a comma is a token of its own), or `, `
/// when one of them has white space in it (a code span), so the list stays readable.
fn key_separator(keys: &[String]) -> &'static str {
    if keys.iter().any(|k| k.contains(char::is_whitespace)) {
        ", "
    } else {
        " "
    }
}

/// Budget-fill packing: `body` (made for `sentence_chars`) followed by the key tokens of
/// `candidates` it does not contain, while the whole stays within `budget` characters.
pub(crate) fn fill(body: String, candidates: &[String], budget: usize) -> String {
    let mut out = body;
    let mut used = crate::text::count_chars(&out);
    let mut first = true;
    let sep = key_separator(candidates);
    // The body as it was (keys appended after it are looked up in `appended`).
    let base_len = out.len();
    let mut appended = keys::AppendedTokens::default();
    for k in candidates {
        let len = k.chars().count() + sep.len();
        if used + len + if first { 8 } else { 0 } > budget {
            continue;
        }
        if appended.contains(k) || keys::contains_token(&out[..base_len], k) {
            continue;
        }
        if first {
            out.push_str(if out.is_empty() {
                "keys: "
            } else {
                " | keys: "
            });
            used += 8;
            first = false;
        } else {
            out.push_str(sep);
        }
        out.push_str(k);
        appended.add(k);
        used += len;
    }
    out
}

/// Characters of a budget-fill summary left for sentences when `candidates` are to be listed:
/// the keys take at most half of `budget`.
pub(crate) fn sentence_share(candidates: &[String], budget: usize) -> usize {
    let keys: usize = candidates.iter().map(|k| k.chars().count() + 2).sum();
    budget - keys.min(budget / 2)
}

/// Code-split: the prose around code fences summarised, every fence kept verbatim.
/// `None` when there is no fence.
pub(crate) fn code_split(text: &str, level: Level, terms: &Query) -> Option<String> {
    code_split_with(text, |p| prose(p, level, terms))
}

/// [`code_split`] with each long prose segment summarised by `prose`.
pub(crate) fn code_split_with<'t>(
    text: &'t str,
    mut prose: impl FnMut(&'t str) -> String,
) -> Option<String> {
    let segments = fences::split(text);
    if !segments.iter().any(|s| matches!(s, Segment::Code(_))) {
        return None;
    }
    let mut out = String::new();
    for seg in segments {
        match seg {
            Segment::Code(code) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(code.trim_end());
                out.push('\n');
            }
            Segment::Prose(p) if p.trim().chars().count() < 80 => {
                out.push_str(p.trim());
                out.push('\n');
            }
            Segment::Prose(p) => {
                out.push_str(&prose(p));
                out.push('\n');
            }
        }
    }
    Some(out.trim_end().to_string())
}

/// Structured tool output: the line count, status lines
/// (errors, failures, warnings) and the paths and other key tokens, within the level's budget.
pub(crate) fn structured(text: &str, level: Level) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let budget = level.budget(crate::text::count_chars(text));
    let mut out = format!("{} lines", lines.len());
    let status: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            let u = l.to_ascii_uppercase();
            ["FAIL", "ERROR", "WARN", "PANIC", "EXCEPTION", "FATAL"]
                .iter()
                .any(|w| u.contains(w))
        })
        .collect();
    if !status.is_empty() {
        out.push_str("; status: ");
        let mut used = out.chars().count();
        for (n, l) in status.iter().enumerate() {
            let l = cut_at_word(l.trim(), 160);
            if used + l.chars().count() > budget && n > 0 {
                out.push_str(&format!(" (+{} more)", status.len() - n));
                break;
            }
            if n > 0 {
                out.push_str(" / ");
            }
            used += l.chars().count() + 3;
            out.push_str(&l);
        }
    }
    // Paths of `path:line` references, then the other key tokens.
    let mut all_keys: Vec<String> = Vec::new();
    for l in &lines {
        let first = l.split_whitespace().next().unwrap_or("");
        if let Some((path, rest)) = first.split_once(':') {
            let line_no = rest.split(':').next().unwrap_or("");
            if path.contains(['/', '.'])
                && !line_no.is_empty()
                && line_no.bytes().all(|b| b.is_ascii_digit())
                && !all_keys.iter().any(|k| k == path)
            {
                all_keys.push(path.to_string());
            }
        }
    }
    for (k, _) in keys::extract(text) {
        if !all_keys.contains(&k) {
            all_keys.push(k);
        }
    }
    all_keys.retain(|k| !keys::contains_token(&out, k));
    if !all_keys.is_empty() {
        out.push_str("; keys: ");
        let room = budget.saturating_sub(out.chars().count());
        let mut used = 0;
        for (n, k) in all_keys.iter().enumerate() {
            if used + k.chars().count() + 2 > room && n > 0 {
                out.push_str(&format!(" (+{} more)", all_keys.len() - n));
                break;
            }
            if n > 0 {
                out.push_str(", ");
            }
            used += k.chars().count() + 2;
            out.push_str(k);
        }
    }
    out
}

pub(crate) use super::json::json_compact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_keeps_the_informative_sentences_in_order() {
        let text = "Sure, happy to help with that. The deploy failed because parse_config \
            returned an empty map after 30 seconds. I looked around a bit. Restarting the \
            worker fixed it, see src/worker.rs:88 for the retry loop.\n\nThanks again for \
            asking. Let me know if there is anything else at all that I can do for you today.";
        let s = prose(
            text,
            Level {
                ratio: 0.3,
                min_chars: 60,
                max_chars: 200,
                max_keys: 10,
                fill: false,
            },
            &Query::default(),
        );
        assert!(s.contains("parse_config"), "{s}");
        assert!(!s.starts_with("Sure"), "{s}");
        assert!(s.len() < text.len());
        // Reading order kept.
        let a = s.find("deploy failed");
        let b = s.find("src/worker.rs");
        if let (Some(a), Some(b)) = (a, b) {
            assert!(a < b);
        }
    }

    #[test]
    fn query_pulls_relevant_sentences() {
        let text =
            "The cache is warm. The database migration ran for ten minutes. The queue drained. \
            The frontend bundle shrank by a lot. Payments were retried twice overnight.";
        let level = Level {
            ratio: 0.2,
            min_chars: 30,
            max_chars: 60,
            max_keys: 0,
            fill: false,
        };
        let s = prose(text, level, &query_terms(Some("payments retried")));
        assert!(s.contains("Payments"), "{s}");
    }

    #[test]
    fn code_split_keeps_fences() {
        let text = format!("{}\n```rust\nfn main() {{}}\n```\nThat is all.", "Here is a long explanation of the function, why it exists and what it does for the caller. ".repeat(3));
        let s = code_split(&text, Level::DEFAULT, &Query::default()).unwrap();
        assert!(s.contains("```rust\nfn main() {}\n```"));
        assert!(code_split("no code", Level::DEFAULT, &Query::default()).is_none());
    }

    #[test]
    fn structured_lists_status_and_paths() {
        let text = "src/a.rs:10: ok\nsrc/b.rs:20: FAIL expected 1 got 2\nsrc/c.rs:3: ok\nsrc/d.rs:7: ok\nsrc/e.rs:9: ok\nsrc/f.rs:1: ok\n";
        let s = structured(text, Level::DEFAULT);
        assert!(s.starts_with("6 lines; status: src/b.rs:20: FAIL"), "{s}");
        assert!(s.contains("src/f.rs"), "{s}");
    }
}
