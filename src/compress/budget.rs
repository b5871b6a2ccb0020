//! The token budget loop: escalating passes of the pipeline until the budget is met.

use serde_json::value::RawValue;

use super::summarize::Level;
use super::{plan, CompressOptions, Plan};
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
}

impl Tuning {
    fn base(options: &CompressOptions) -> Tuning {
        Tuning {
            level: Level::DEFAULT,
            recency_window: options.recency_window,
            lossy_json: false,
            fuzzy: options.fuzzy_dedup,
            truncate_oldest: 0,
            older_than: 0,
            older_level: Level::DEFAULT,
        }
    }
}

/// Runs the pipeline, escalating until the token budget (if any) is met: a smaller recency
/// window, tighter summary levels (50% → 25% → 12.5% of the default), lossy summaries of JSON
/// tool output and near-duplicate removal, then truncation of the oldest compressible texts.
pub(super) fn run(raws: &[&RawValue], options: &CompressOptions) -> Result<Plan, Error> {
    let base = Tuning::base(options);
    let first = plan(raws, options, base)?;
    let before = first.stats.tokens_before;
    if before <= options.min_tokens {
        return plan(
            raws,
            options,
            Tuning {
                level: Level::NONE,
                ..base
            },
        )
        .map(|mut p| {
            p.stats.fits = budget(options, before).map(|b| p.stats.tokens_after <= b);
            p
        });
    }
    let Some(budget) = budget(options, before) else {
        return Ok(first);
    };
    let mut schedule = vec![
        Tuning {
            recency_window: base.recency_window.min(2),
            ..base
        },
        Tuning {
            level: Level::DEFAULT.tighter(),
            recency_window: base.recency_window.min(2),
            lossy_json: true,
            fuzzy: true,
            ..base
        },
        Tuning {
            level: Level::DEFAULT.tighter().tighter(),
            recency_window: base.recency_window.min(1),
            lossy_json: true,
            fuzzy: true,
            ..base
        },
        Tuning {
            level: Level::DEFAULT.tighter().tighter().tighter(),
            recency_window: base.recency_window.min(1),
            lossy_json: true,
            fuzzy: true,
            ..base
        },
        // Even the newest message is summarised before anything is truncated.
        Tuning {
            level: Level::DEFAULT.tighter().tighter().tighter(),
            recency_window: 0,
            lossy_json: true,
            fuzzy: true,
            ..base
        },
    ];
    let deepest = schedule[schedule.len() - 1];
    let mut k = 1;
    while k <= raws.len() * 4 {
        schedule.push(Tuning {
            truncate_oldest: k,
            ..deepest
        });
        k *= 2;
    }
    let steps: Vec<Tuning> = std::iter::once(base).chain(schedule).collect();
    let mut best = first;
    let mut found = None;
    for (step, tuning) in steps.iter().enumerate() {
        let p = if step == 0 {
            best
        } else {
            plan(raws, options, *tuning)?
        };
        let fits = p.stats.tokens_after <= budget;
        best = p;
        best.stats.escalation = step;
        if fits {
            found = Some(step);
            break;
        }
    }
    // Refine: the first fitting step may overshoot. Between it and the step before, find the
    // lightest mix that still fits (binary search; fitting is monotone in the mix).
    if let Some(step) = found.filter(|&s| s > 0) {
        let (prev, cur) = (steps[step - 1], steps[step]);
        let mix = |x: usize| -> Tuning {
            if cur.truncate_oldest > 0 {
                Tuning {
                    truncate_oldest: x,
                    ..cur
                }
            } else {
                // The oldest `x` messages at the deeper level, the rest at the lighter one.
                Tuning {
                    level: prev.level,
                    older_than: x,
                    older_level: cur.level,
                    ..cur
                }
            }
        };
        let (mut lo, mut hi) = if cur.truncate_oldest > 0 {
            (prev.truncate_oldest, cur.truncate_oldest)
        } else {
            (0, raws.len())
        };
        // Invariant: mix(hi) fits (mix(raws.len()) is `cur` itself); find the smallest.
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            let p = plan(raws, options, mix(mid))?;
            if p.stats.tokens_after <= budget {
                hi = mid;
                best = p;
                best.stats.escalation = step;
            } else {
                lo = mid;
            }
        }
    }
    best.stats.fits = Some(best.stats.tokens_after <= budget);
    best.stats.budget = Some(budget);
    Ok(best)
}

/// The budget in tokens: `tokenBudget`, else `targetRatio` × the tokens before.
fn budget(options: &CompressOptions, before: usize) -> Option<usize> {
    options.token_budget.or_else(|| {
        options
            .target_ratio
            .map(|r| (before as f64 * r).floor() as usize)
    })
}
