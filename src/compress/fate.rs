//! Stage 3, fate: what becomes of one unit at one rung of the ladder — kept (and why),
//! replaced by a summary, a duplicate reference, a superseded marker, or a truncated preview.
//!
//! The default rung is lossless where it counts: JSON tool output (and tool output printed as
//! a Python literal) is rendered without its syntax but with every value; other tool output
//! keeps every key token (numbers, identifiers, paths, URLs); line-structured output stays as
//! it is; the facts a user states about themselves stay. `lossyToolOutput` restores the lossy
//! renderings (numeric series summarised, long strings and plain output summarised, lines
//! summarised by status and paths). The fill rungs (a token budget) summarise every kind of
//! text to the same share of its size, key tokens listed within it.

use crate::text::hash::FastSet;
use std::borrow::Cow;
use std::rc::Rc;

use super::cache;
use super::classify::UnitInfo;
use super::env::Env;
use super::options::CompressOptions;
use super::parse::UnitKind;
use super::quotes;
use super::summarize::{self, Level, Query};
use super::values;
use crate::text::keys;

/// How hard a plan summarises compressible texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Rung {
    /// Nothing summarised (a conversation below `minTokens`).
    None,
    /// The default pass's level.
    Default,
    /// Budget-fill: every text to this share of its characters, in millionths.
    Fill(u32),
}

impl Rung {
    /// A fill rung for a share (0–1).
    pub(super) fn fill(ratio: f64) -> Rung {
        Rung::Fill((ratio.clamp(0.0, 1.0) * 1e6).round() as u32)
    }

    /// The summary level of this rung.
    pub(super) fn level(self) -> Level {
        match self {
            Rung::None => Level::NONE,
            Rung::Default => Level::DEFAULT,
            Rung::Fill(ppm) => Level::filling(f64::from(ppm) / 1e6),
        }
    }
}

/// What a plan does to one unit.
pub(super) enum Fate {
    /// Kept, with the trace's reason.
    Keep(Cow<'static, str>),
    /// Replaced by a summary (`action`: `summarized` or `code_split`).
    Replace { body: String, action: &'static str },
    /// A duplicate of a newer message's text.
    Dup { of: usize, similarity: Option<u32> },
    /// Corrected by a later message: the marker body, a compact fallback, the trace reason.
    Superseded {
        full: String,
        compact: String,
        reason: String,
    },
    /// Cut to a preview of at most this many characters (the budget's last resort).
    Truncate(usize),
}

/// The key tokens of the messages a plan keeps verbatim (budget-fill summaries do not list
/// them again), with the fingerprints cache keys need.
pub(super) struct Known {
    pub set: FastSet<String>,
    /// Which of the call's known sets this is (its index in `Env::known`'s list): equal ids,
    /// equal sets, within one call.
    pub id: usize,
    /// The sorted set, hashed (budget-fill summaries depend on it).
    fp: String,
    /// The query's fingerprint.
    query: String,
}

impl Known {
    pub(super) fn new(set: FastSet<String>, terms: &Query, id: usize) -> Known {
        let (fp, query) = if terms.memo.has_cache() {
            let mut sorted: Vec<&str> = set.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            (
                cache::key(&[sorted.join("\u{0}").as_bytes()]),
                terms.fingerprint(),
            )
        } else {
            (String::new(), String::new())
        };
        Known { set, id, fp, query }
    }

    /// The key tokens of `text` worth listing in a budget-fill summary: not known, code spans
    /// of at most 40 characters, first occurrence order.
    pub(super) fn fill_keys(&self, text: &str, terms: &Query) -> Vec<String> {
        let keys = terms.memo.keys(text);
        self.fill_keys_in(&keys).map(str::to_string).collect()
    }

    /// [`fill_keys`](Self::fill_keys) of a text whose key tokens are `text_keys`, borrowed
    /// from them.
    pub(super) fn fill_keys_in<'k>(
        &'k self,
        text_keys: &'k [(String, keys::KeyKind)],
    ) -> impl Iterator<Item = &'k str> + 'k {
        text_keys
            .iter()
            .filter(|(k, kind)| {
                (*kind != keys::KeyKind::Code || k.len() <= 40) && !self.set.contains(k)
            })
            .map(|(k, _)| k.as_str())
    }

    /// A summary of `text` at `level` from the caller's cache (keyed by the summariser, the
    /// text, the level and the query), else computed.
    fn cached(
        &self,
        tag: &str,
        text: &str,
        level: Level,
        terms: &Query,
        f: impl FnOnce() -> String,
    ) -> String {
        self.memo_text(false, tag, text, level, terms, f)
    }

    /// As [`cached`](Self::cached), also keyed by the key tokens kept verbatim.
    fn cached_with_known(
        &self,
        tag: &str,
        text: &str,
        level: Level,
        terms: &Query,
        f: impl FnOnce() -> String,
    ) -> String {
        self.memo_text(true, tag, text, level, terms, f)
    }

    /// The memo lookup of both: the key's parts, the known set's fingerprint last when asked.
    fn memo_text(
        &self,
        with_known: bool,
        tag: &str,
        text: &str,
        level: Level,
        terms: &Query,
        f: impl FnOnce() -> String,
    ) -> String {
        let level = level_bytes(level);
        let parts: [&[u8]; 5] = [
            tag.as_bytes(),
            text.as_bytes(),
            &level,
            self.query.as_bytes(),
            self.fp.as_bytes(),
        ];
        terms.memo.text(&parts[..if with_known { 5 } else { 4 }], f)
    }
}

/// A level as bytes (cache keys): every field that changes a summary.
fn level_bytes(level: Level) -> Vec<u8> {
    let mut b = Vec::with_capacity(33);
    b.extend_from_slice(&level.ratio.to_bits().to_le_bytes());
    b.extend_from_slice(&(level.min_chars as u64).to_le_bytes());
    b.extend_from_slice(&(level.max_chars as u64).to_le_bytes());
    b.extend_from_slice(&(level.max_keys as u64).to_le_bytes());
    b.push(u8::from(level.fill));
    b
}

/// The circumstances of one unit in one plan besides its rung.
pub(super) struct Situation<'s> {
    pub rung: Rung,
    /// Cut to a preview of at most this many characters (the budget's last resort).
    pub truncate: Option<usize>,
    /// Lossy renderings of tool output (`lossyToolOutput`; every fill rung is).
    pub lossy: bool,
    /// The later message that corrects this one, and its signal.
    pub superseded: Option<&'s (usize, String)>,
    pub known: &'s Known,
}

/// The fate of unit `u` (not a duplicate: the caller decided that) in situation `s`.
pub(super) fn fate(env: &Env<'_, '_>, u: usize, s: &Situation<'_>) -> Fate {
    let unit = env.units.all[u];
    let options = env.options;
    let info = env.classes.info(u, env.parsed, env.units, options);
    let level = s.rung.level();
    let t = unit.text;
    let keep = |reason: &'static str| Fate::Keep(reason.into());
    let fate = if info.short {
        keep("short content")
    } else if info.marker {
        keep("already compressed")
    } else if let Some(chars) = s.truncate {
        Fate::Truncate(chars)
    } else if level.ratio <= 0.0 {
        keep("below minTokens")
    } else if let (UnitKind::Prose, Some((by, signal))) = (unit.kind, s.superseded) {
        let by_name = env.parsed.name(*by);
        // What was said, briefly: the correction is what counts now.
        let summary = if level.fill {
            fill_prose(env, u, info, level, s.known)
        } else {
            summarize::prose(t, level.tighter(), env.terms)
        };
        Fate::Superseded {
            full: format!("superseded by {by_name} ({signal}) — {summary}"),
            compact: format!("superseded by {by_name} — {signal}"),
            reason: format!("corrected by message {} ({signal})", by + env.parsed.offset),
        }
    } else if info.pattern {
        keep("preserve pattern")
    } else if level.fill {
        fill_fate(env, u, info, level, s.known)
    } else if let Some(prose_chars) = info.fence {
        if prose_chars >= 80 {
            match cached_code_split(env, u, level, s.known) {
                Some(body) => Fate::Replace {
                    body,
                    action: "code_split",
                },
                None => keep("code fences"),
            }
        } else {
            keep("code fences with little prose")
        }
    } else if unit.kind == UnitKind::ToolOutput {
        tool_output_fate(env, u, info, level, s)
    } else if let Some(h) = info.hard {
        Fate::Keep(format!("hard verbatim: {h}").into())
    } else {
        let tag = if info.user { "prose_facts" } else { "prose" };
        let body = s.known.cached(tag, t, level, env.terms, || {
            prose_of(env, u, level, info.user)
        });
        Fate::Replace {
            body,
            action: "summarized",
        }
    };
    judge(fate, t, options)
}

/// Tool output at the default level: lossless unless `lossyToolOutput`.
fn tool_output_fate(
    env: &Env<'_, '_>,
    u: usize,
    info: &UnitInfo,
    level: Level,
    s: &Situation<'_>,
) -> Fate {
    let unit = env.units.all[u];
    let t = unit.text;
    let options = env.options;
    let summarized = |body: String| Fate::Replace {
        body,
        action: "summarized",
    };
    if let Some(j) = info.json {
        let v = &env.classes.json[j];
        let lossless = !s.lossy;
        return summarized(summarize::json_compact(
            v,
            level,
            &env.classes.seen,
            unit.msg,
            lossless || options.preserve_numbers,
            lossless,
        ));
    }
    if info.structured {
        if !s.lossy {
            return Fate::Keep("structured tool output (lossless default)".into());
        }
        return summarized(s.known.cached("structured", t, level, env.terms, || {
            summarize::structured(t, level)
        }));
    }
    if let Some(h) = info.hard {
        return Fate::Keep(format!("hard verbatim: {h}").into());
    }
    // Plain output: its best sentences and, by default, every key token it holds.
    let level = if s.lossy {
        level
    } else {
        Level {
            max_keys: usize::MAX,
            ..level
        }
    };
    summarized(s.known.cached("prose", t, level, env.terms, || {
        summarize::prose(t, level, env.terms)
    }))
}

/// A unit's fate in budget-fill mode: every kind of text aims at `level.ratio` of its
/// characters, its key tokens (those not kept verbatim elsewhere) listed within that share.
fn fill_fate(env: &Env<'_, '_>, u: usize, info: &UnitInfo, level: Level, known: &Known) -> Fate {
    let unit = env.units.all[u];
    let t = unit.text;
    let terms = env.terms;
    let options = env.options;
    let budget = level.budget(info.chars);
    let summarized = |body: String| Fate::Replace {
        body,
        action: "summarized",
    };
    if info.fence.is_some() {
        return match cached_code_split(env, u, level, known) {
            Some(body) => Fate::Replace {
                body,
                action: "code_split",
            },
            None => Fate::Keep("code fences".into()),
        };
    }
    if unit.kind == UnitKind::ToolOutput {
        if let Some(j) = info.json {
            let v = &env.classes.json[j];
            // Every number when the whole rendering fits the share; else the default rendering
            // (long numeric arrays summarised) with the key tokens it left out, in the share.
            if let Some(all) = env.json_compact_within(u, v, level, true, budget) {
                return summarized(all.0.clone());
            }
            // The values under fields the query names first, then the key tokens.
            let candidates = memo_candidates(env, u, known, || {
                let mut candidates: Vec<String> =
                    values::named_by_query(v, terms, &env.classes.seen)
                        .into_iter()
                        .filter(|k| !known.set.contains(k))
                        .collect();
                extend_unique(
                    &mut candidates,
                    known.fill_keys(t, terms).iter().map(String::as_str),
                );
                candidates
            });
            if let Some(compact) =
                env.json_compact_within(u, v, level, options.preserve_numbers, budget)
            {
                return summarized(summarize::fill(compact.0.clone(), &candidates, budget));
            }
            let share = summarize::sentence_share(&candidates, budget);
            let body = env
                .json_fields(u, v)
                .select(Level::exact(share), info.chars);
            return summarized(summarize::fill(body, &candidates, budget));
        }
        if info.structured {
            let level = Level::exact(budget);
            return summarized(known.cached("structured", t, level, terms, || {
                summarize::structured(t, level)
            }));
        }
        // Other tool output: its values (both ends of a listing first) before its sentences.
        let candidates = memo_candidates(env, u, known, || {
            env.output_values(t)
                .for_query(terms)
                .into_iter()
                .filter(|k| !known.set.contains(k))
                .collect()
        });
        let keys: usize = candidates.iter().map(|k| k.chars().count() + 2).sum();
        let share = budget.saturating_sub(keys + 8);
        let body = if share == 0 {
            String::new()
        } else {
            env.prepared(u, false).pack(share, false)
        };
        return summarized(summarize::fill(body, &candidates, budget));
    }
    summarized(fill_prose(env, u, info, level, known))
}

/// `more` appended to `list`, each key once (a set beside the list: tool outputs carry
/// thousands of values, and a scan of the list per key was quadratic).
fn extend_unique<'a>(list: &mut Vec<String>, more: impl IntoIterator<Item = &'a str>) {
    let mut seen: FastSet<&str> = list.iter().map(String::as_str).collect();
    let fresh: Vec<&str> = more.into_iter().filter(|k| seen.insert(k)).collect();
    drop(seen);
    list.extend(fresh.into_iter().map(str::to_string));
}

/// Budget-fill prose: the best sentences (a user's fact sentences first), then the key tokens
/// they left out (a user's fact values first), within `level.ratio` of the text.
fn fill_prose(env: &Env<'_, '_>, u: usize, info: &UnitInfo, level: Level, known: &Known) -> String {
    let t = env.units.all[u].text;
    let terms = env.terms;
    let tag = if info.user {
        "fill_prose_facts"
    } else {
        "fill_prose"
    };
    known.cached_with_known(tag, t, level, terms, || {
        let budget = level.budget(info.chars);
        let prepared = env.prepared(u, info.user);
        let candidates = fill_candidates(env, u, info.user, known);
        let share = summarize::sentence_share(&candidates, budget);
        let body = if share == 0 {
            String::new()
        } else {
            prepared.pack(share, false)
        };
        summarize::fill(body, &candidates, budget)
    })
}

/// What unit `u`'s budget-fill prose may list: a user's fact values first, then the key tokens
/// not in `known`.
fn fill_candidates(env: &Env<'_, '_>, u: usize, user: bool, known: &Known) -> Rc<Vec<String>> {
    memo_candidates(env, u, known, || {
        let mut candidates = if user {
            env.prepared(u, user).fact_values()
        } else {
            Vec::new()
        };
        let keys = env.unit_keys(u);
        extend_unique(&mut candidates, known.fill_keys_in(&keys));
        candidates
    })
}

/// The values and key tokens unit `u`'s budget-fill summary may list (`make` gives them for
/// the unit's kind of text). They depend on the unit and the known set, not on the level, so a
/// budget's plans compute them once per unit and known set.
fn memo_candidates(
    env: &Env<'_, '_>,
    u: usize,
    known: &Known,
    make: impl FnOnce() -> Vec<String>,
) -> Rc<Vec<String>> {
    if !env.memoise {
        return Rc::new(make());
    }
    let key = (u, known.id);
    if let Some(c) = env.fill_candidates.borrow().get(&key) {
        return Rc::clone(c);
    }
    let c = Rc::new(make());
    env.fill_candidates.borrow_mut().insert(key, Rc::clone(&c));
    c
}

/// `summarize::prose_with(text of u, level, terms, facts)`; when the call plans more than once,
/// from the unit's sentences scored once for all its plans ([`Env::prepared`]).
fn prose_of(env: &Env<'_, '_>, u: usize, level: Level, facts: bool) -> String {
    let t = env.units.all[u].text;
    if !env.memoise {
        return summarize::prose_with(t, level, env.terms, facts);
    }
    let prepared = env.prepared(u, facts);
    let body = prepared.pack(level.budget(crate::text::count_chars(t)), facts);
    summarize::with_keys(body, t, level.max_keys, env.terms, prepared.walk.as_ref())
}

/// [`summarize::code_split`] through the cache (`None` stored as an empty marker).
fn cached_code_split(env: &Env<'_, '_>, u: usize, level: Level, known: &Known) -> Option<String> {
    let (text, terms) = (env.units.all[u].text, env.terms);
    let split = || {
        if env.memoise {
            summarize::code_split_with(text, |p| env.texts.prose(p, level, terms))
        } else {
            summarize::code_split(text, level, terms)
        }
    };
    let v = known.cached("code_split", text, level, terms, || match split() {
        Some(s) => format!("1{s}"),
        None => "0".into(),
    });
    v.strip_prefix('1').map(str::to_string)
}

/// `preserveQuotes` and `minConfidence` on a unit's fate: quotes the summary left out are
/// appended; a summary whose confidence is below `minConfidence` is not used.
fn judge(fate: Fate, original: &str, options: &CompressOptions) -> Fate {
    let Fate::Replace { body, action } = fate else {
        return fate;
    };
    let body = if options.preserve_quotes {
        quotes::keep(body, original)
    } else {
        body
    };
    let c = if options.min_confidence > 0.0 {
        confidence(&body, original)
    } else {
        1.0
    };
    if c < options.min_confidence {
        return Fate::Keep(
            format!(
                "confidence {c:.2} below minConfidence {}",
                options.min_confidence
            )
            .into(),
        );
    }
    Fate::Replace { body, action }
}

/// The confidence of a summary (`minConfidence`): the share of the original's distinct key
/// tokens it still contains, 1 when the original has none.
pub(crate) fn confidence(summary: &str, original: &str) -> f64 {
    let mut all: Vec<String> = keys::extract(original)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    all.sort();
    all.dedup();
    if all.is_empty() {
        return 1.0;
    }
    let kept = all
        .iter()
        .filter(|k| keys::contains_token(summary, k))
        .count();
    kept as f64 / all.len() as f64
}

/// The summary of a merged run's joined text at `level` (a user's facts kept by default).
pub(super) fn merged_body(
    env: &Env<'_, '_>,
    joined: &str,
    level: Level,
    known: &Known,
    user: bool,
) -> String {
    let terms = env.terms;
    if level.fill {
        return known.cached_with_known("fill_prose", joined, level, terms, || {
            let budget = level.budget(crate::text::count_chars(joined));
            let prepared = summarize::Prepared::new(joined, terms, user);
            let mut candidates = if user {
                prepared.fact_values()
            } else {
                Vec::new()
            };
            extend_unique(
                &mut candidates,
                known.fill_keys(joined, terms).iter().map(String::as_str),
            );
            let share = summarize::sentence_share(&candidates, budget);
            let body = if share == 0 {
                String::new()
            } else {
                prepared.pack(share, false)
            };
            summarize::fill(body, &candidates, budget)
        });
    }
    let tag = if user { "prose_facts" } else { "prose" };
    known.cached(tag, joined, level, terms, || {
        summarize::prose_with(joined, level, terms, user)
    })
}
