//! The token budget loop: escalating passes of the pipeline until the budget is met.

use serde_json::value::RawValue;

use super::counter::Tokens;
use super::method::{Method, LEVELS};
use super::summarize::Level;
use super::summarize::Query;
use super::{CompressOptions, Plan};
use crate::error::Error;

/// How hard one pass of the pipeline compresses (the budget loop escalates it).
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    pub(super) level: Level,
    pub(super) recency_window: usize,
    /// JSON tool output as a lossy field summary instead of the lossless rendering.
    pub(super) lossy_json: bool,
    pub(super) fuzzy: bool,
    /// Truncate this many of the oldest compressible texts to a short preview.
    pub(super) truncate_oldest: usize,
    /// Messages before this index are summarised at `older_level` (the budget loop's
    /// refinement: the oldest messages go one level deeper first).
    pub(super) older_than: usize,
    pub(super) older_level: Level,
    /// Condense the arguments of tool calls outside the recency window.
    pub(super) condense_calls: bool,
    /// Fold up to this many of the oldest messages into one summary message.
    pub(super) fold: usize,
    /// The folded summary's size in characters (else the level's share of the folded text).
    pub(super) fold_chars: Option<usize>,
    /// The index of the first message in the whole conversation (prefix-stable mode plans one
    /// block at a time): names (`msg_12`) and trace indexes are global.
    pub(super) offset: usize,
    /// Whether `importanceScoring` may keep messages verbatim (the default pass, not the
    /// budget's escalation stages).
    pub(super) importance: bool,
}

impl Tuning {
    pub(super) fn base(options: &CompressOptions) -> Tuning {
        Tuning {
            level: Level::DEFAULT,
            recency_window: options.recency_window,
            lossy_json: false,
            fuzzy: options.fuzzy_dedup,
            truncate_oldest: 0,
            older_than: 0,
            older_level: Level::DEFAULT,
            condense_calls: false,
            fold: 0,
            fold_chars: None,
            offset: 0,
            importance: true,
        }
    }
}

/// Runs the pipeline, escalating until the token budget (if any) is met. When the default pass
/// does not fit, every compressible text is summarised to the same share of its size (the
/// fill ratio, found by bisection: the largest that fits, so the budget is used rather than
/// overshot), with its key tokens listed within that share; the stages keep less verbatim in
/// turn: a recency window of 2, then 1, then condensed tool-call arguments, then 0, then the
/// oldest messages folded into one summary message. Last, the oldest compressible texts left
/// are truncated to a preview, as few as needed, and if even that does not fit, every message
/// but the preserved-role ones is folded. In fold stages the folded summary then gets what the
/// newer messages leave (its tool-output values first). When the conversation has tool output,
/// the first fitting stage is not the end: every stage's fitting plan and the fold of
/// everything compete, and the one keeping the most tool-output values wins (a value of the
/// newest output counts 1, of the one before ½, …; ties go to the earlier stage).
///
/// With `method: "hierarchical"` the fill ratio is not searched: it is the first of the levels
/// 50% → 25% → 12.5% that fits ([`LEVELS`]), in each stage in turn, and a stage is entered only
/// when its level 12.5% can fit.
pub(super) fn run(
    raws: &[&RawValue],
    options: &CompressOptions,
    query: &Query,
    tok: &Tokens<'_>,
) -> Result<Plan, Error> {
    // Every pass plans the same messages: parsed once, token counts kept.
    let parsed = super::Parsed::new(raws)?;
    let plan = |tuning: Tuning| super::plan_parsed(raws, &parsed, options, tuning, query, tok);
    let hierarchical = options.method == Method::Hierarchical;
    let min_ratio = if hierarchical {
        LEVELS[LEVELS.len() - 1]
    } else {
        MIN_RATIO
    };
    let base = Tuning::base(options);
    let first = plan(base)?;
    let before = first.stats.tokens_before;
    if before <= options.min_tokens {
        return plan(Tuning {
            level: Level::NONE,
            ..base
        })
        .map(|mut p| {
            p.stats.fits = budget(options, before).map(|b| p.stats.tokens_after <= b);
            p
        });
    }
    let Some(stated) = budget(options, before) else {
        return Ok(first);
    };
    // The estimator errs low by up to ~1.5% on output dense with ids and codes and ~2.5% on a
    // list of made-up CamelCase names (measured against o200k, `bench/compress_fits.ts`): with
    // it the loop keeps 1/32 of the budget in reserve (nothing under 32 tokens), so that what it
    // says fits does. `stats.budget` and `stats.fits` are against the stated budget.
    let budget = target(stated, tok);
    // Stages, each searched over the fill ratio: what stays verbatim shrinks from stage to
    // stage (recency window 2 → 1 → 1 with condensed tool-call arguments → 0 → the oldest
    // messages folded, with a recency window of 1, then 0).
    let rw = base.recency_window;
    let stages = [
        (rw.min(2), false, false),
        (rw.min(1), false, false),
        (rw.min(1), true, false),
        (0, true, false),
        (rw.min(1), true, true),
        (0, true, true),
    ];
    let at = |recency_window: usize, condense_calls: bool, fold: usize, ratio: f64| Tuning {
        level: Level::filling(ratio),
        recency_window,
        lossy_json: true,
        fuzzy: true,
        condense_calls,
        fold,
        importance: false,
        ..base
    };
    if first.stats.tokens_after <= budget {
        // The default pass fits: when the input itself does not, use the budget rather than
        // leave it empty — the same recency window, the largest fill ratio that fits (if that
        // keeps more than the default pass).
        let mut best = first;
        if before > budget && hierarchical {
            for (k, &ratio) in LEVELS.iter().enumerate() {
                let mut p = plan(at(rw, false, 0, ratio))?;
                if p.stats.tokens_after <= budget {
                    if p.stats.tokens_after > best.stats.tokens_after {
                        p.stats.level = Some(k as u8);
                        best = p;
                    }
                    break;
                }
            }
        } else if before > budget {
            let (mut lo, mut hi) = (MIN_RATIO.ln(), 0.0f64);
            for _ in 0..SEARCH_STEPS {
                let mid = (lo + hi) / 2.0;
                let p = plan(Tuning {
                    importance: true,
                    ..at(rw, false, 0, mid.exp())
                })?;
                if p.stats.tokens_after <= budget {
                    lo = mid;
                    if p.stats.tokens_after > best.stats.tokens_after {
                        best = p;
                    }
                } else {
                    hi = mid;
                }
            }
        }
        best.stats.fits = Some(best.stats.tokens_after <= stated);
        best.stats.budget = Some(stated);
        return Ok(best);
    }
    let fitting = |p: Plan, stage: usize| -> Plan {
        let mut p = p;
        p.stats.escalation = stage;
        p.stats.fits = Some(true);
        p.stats.budget = Some(stated);
        p
    };
    // With tool output in the conversation, every stage's fitting plan (and every message
    // folded) is a candidate, and the one that keeps the most of the tool outputs' values
    // (newest output first) wins: the first stage that fits may have spent the budget on
    // markers and prose. Without tool output the first fitting stage is the result.
    // The first pass succeeded, so the values parsed.
    let weights = tool_value_weights(parsed.values.as_deref().unwrap_or(&[]));
    let total_weight: f64 = weights.iter().map(|(_, w)| w).sum();
    let mut candidates: Vec<(f64, Plan)> = Vec::new();
    for (stage, &(recency_window, condense_calls, may_fold)) in stages.iter().enumerate() {
        let stage = stage + 1;
        // The fewest folded messages that let the smallest ratio fit.
        let mut fold = 0;
        let mut best = plan(at(recency_window, condense_calls, 0, min_ratio))?;
        if best.stats.tokens_after > budget {
            if !may_fold {
                continue;
            }
            let most = plan(at(recency_window, condense_calls, raws.len(), min_ratio))?;
            if most.stats.tokens_after > budget {
                continue;
            }
            best = most;
            let (mut lo, mut hi) = (0, raws.len());
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                let p = plan(at(recency_window, condense_calls, mid, min_ratio))?;
                if p.stats.tokens_after <= budget {
                    hi = mid;
                    best = p;
                } else {
                    lo = mid;
                }
            }
            fold = hi;
        }
        if hierarchical {
            // The shallowest level that fits (the deepest one does: `best`).
            best.stats.level = Some((LEVELS.len() - 1) as u8);
            for (k, &ratio) in LEVELS.iter().enumerate().take(LEVELS.len() - 1) {
                let mut p = plan(at(recency_window, condense_calls, fold, ratio))?;
                if p.stats.tokens_after <= budget {
                    p.stats.level = Some(k as u8);
                    best = p;
                    break;
                }
            }
            return Ok(fitting(best, stage));
        }
        // The largest ratio that fits: bisection in log space (fitting is close to monotone
        // in the ratio; only fitting plans are kept).
        let (mut lo, mut hi) = (MIN_RATIO.ln(), 0.0f64);
        let mut ratio = MIN_RATIO;
        for _ in 0..SEARCH_STEPS {
            let mid = (lo + hi) / 2.0;
            let p = plan(at(recency_window, condense_calls, fold, mid.exp()))?;
            if p.stats.tokens_after <= budget {
                lo = mid;
                ratio = mid.exp();
                best = p;
            } else {
                hi = mid;
            }
        }
        if fold > 0 {
            // What the newer messages leave goes to the folded summary's values and keys.
            let with_chars = |chars: usize| Tuning {
                fold_chars: Some(chars),
                ..at(recency_window, condense_calls, fold, ratio)
            };
            let (mut lo, mut hi) = (0, budget * 8 + 1);
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                let p = plan(with_chars(mid))?;
                if p.stats.tokens_after <= budget {
                    lo = mid;
                    if p.stats.tokens_after >= best.stats.tokens_after {
                        best = p;
                    }
                } else {
                    hi = mid;
                }
            }
        }
        if weights.is_empty() {
            return Ok(fitting(best, stage));
        }
        // A plan that keeps every tool-output value cannot be beaten: stop there.
        let u = utility(&best, raws, &weights)?;
        candidates.push((u, fitting(best, stage)));
        if u >= total_weight {
            break;
        }
    }
    if !candidates.is_empty() {
        let deepest = at(0, true, raws.len(), MIN_RATIO);
        let mut best: Option<(f64, Plan)> = None;
        for (u, p) in candidates {
            if best.as_ref().is_none_or(|(b, _)| u > *b) {
                best = Some((u, p));
            }
        }
        let incomplete = best.as_ref().is_none_or(|(u, _)| *u < total_weight);
        let all = if incomplete {
            fold_all(&plan, deepest, budget)?
        } else {
            None
        };
        if let Some(all) = all {
            let mut all = all;
            all.stats.escalation = stages.len() + 2;
            let all = fitting(all, stages.len() + 2);
            let u = utility(&all, raws, &weights)?;
            if best.as_ref().is_none_or(|(b, _)| u > *b) {
                best = Some((u, all));
            }
        }
        if let Some((_, p)) = best {
            return Ok(p);
        }
    }
    // Last resort: on top of the deepest stage, the oldest compressible texts left (code kept
    // by the summaries, the newest message) cut to a preview, as few as needed.
    let deepest = at(0, true, raws.len(), MIN_RATIO);
    let truncating = |k: usize| Tuning {
        truncate_oldest: k,
        ..deepest
    };
    let mut best = plan(deepest)?;
    let mut k = 1;
    let mut prev = 0;
    let mut found = None;
    while k <= raws.len() * 4 {
        let p = plan(truncating(k))?;
        let fits = p.stats.tokens_after <= budget;
        best = p;
        if fits {
            found = Some((prev, k));
            break;
        }
        prev = k;
        k *= 2;
    }
    if let Some((mut lo, mut hi)) = found {
        // Invariant: truncating `hi` fits; find the smallest.
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            let p = plan(truncating(mid))?;
            if p.stats.tokens_after <= budget {
                hi = mid;
                best = p;
            } else {
                lo = mid;
            }
        }
    }
    best.stats.escalation = stages.len() + 1;
    if best.stats.tokens_after > budget {
        // Nothing else left: every message but the preserved-role ones folded into one.
        // Its key tokens (newest message first) fill what the budget leaves.
        let all = plan(Tuning {
            fold: usize::MAX,
            fold_chars: Some(0),
            ..deepest
        })?;
        if all.stats.tokens_after < best.stats.tokens_after {
            best = fold_all(&plan, deepest, budget)?.unwrap_or(all);
            best.stats.escalation = stages.len() + 2;
        }
    }
    best.stats.fits = Some(best.stats.tokens_after <= stated);
    best.stats.budget = Some(stated);
    Ok(best)
}

/// Every message but the preserved-role ones folded into one, its values and key tokens
/// (newest first) filling what the budget leaves: the largest such plan that fits, if any.
fn fold_all(
    plan: &dyn Fn(Tuning) -> Result<Plan, Error>,
    deepest: Tuning,
    budget: usize,
) -> Result<Option<Plan>, Error> {
    let with = |chars: usize| Tuning {
        fold: usize::MAX,
        fold_chars: Some(chars),
        ..deepest
    };
    let first = plan(with(0))?;
    if first.stats.tokens_after > budget {
        return Ok(None);
    }
    let mut best = Some(first);
    let (mut lo, mut hi) = (0, budget * 8 + 1);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        let p = plan(with(mid))?;
        if p.stats.tokens_after <= budget {
            lo = mid;
            best = Some(p);
        } else {
            hi = mid;
        }
    }
    Ok(best)
}

/// The values of the input's tool outputs (see `values.rs`), each with the weight of its
/// newest output: 1 for the newest tool output, ½ for the one before, ¼ …
fn tool_value_weights(values: &[serde_json::Value]) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut weight = 1.0f64;
    for value in values.iter().rev() {
        let tool_role = value.get("role").and_then(serde_json::Value::as_str) == Some("tool");
        let texts = super::tool_outputs(value, tool_role);
        for text in texts.iter().rev() {
            for v in super::values::tool_values(text) {
                if seen.insert(v.clone()) {
                    out.push((v, weight));
                }
            }
            weight /= 2.0;
        }
    }
    out
}

/// How much of the tool outputs' values a plan keeps (weighted, see [`tool_value_weights`]).
fn utility(plan: &Plan, raws: &[&RawValue], weights: &[(String, f64)]) -> Result<f64, Error> {
    let text = plan.text(raws)?;
    Ok(weights
        .iter()
        .filter(|(v, _)| crate::text::keys::contains_token(&text, v))
        .map(|(_, w)| w)
        .sum())
}

/// The smallest fill ratio the budget loop tries before truncating.
const MIN_RATIO: f64 = 0.004;
/// With the default estimator the budget loop aims at `budget - budget / ESTIMATE_RESERVE`.
const ESTIMATE_RESERVE: usize = 32;

/// What the budget loop aims at for a stated budget: the budget itself with an exact counter,
/// 1/[`ESTIMATE_RESERVE`] less with the estimator (see [`run`]).
pub(super) fn target(stated: usize, tok: &Tokens<'_>) -> usize {
    if tok.is_estimate() {
        stated - stated / ESTIMATE_RESERVE
    } else {
        stated
    }
}

/// Bisection steps of the fill ratio (log space: about 4% resolution).
const SEARCH_STEPS: usize = 8;

/// The budget in tokens: `tokenBudget`, else `targetRatio` × the tokens before.
fn budget(options: &CompressOptions, before: usize) -> Option<usize> {
    options.token_budget.or_else(|| {
        options
            .target_ratio
            .map(|r| (before as f64 * r).floor() as usize)
    })
}
