//! The budget's one-dimensional searches: the largest position on a ladder (fill shares, folded
//! characters) whose plan fits.
//!
//! A plan's size grows close to linearly in what the ladder position stands for (a fill share
//! of each text, a number of characters), so the search interpolates: from the sizes it has
//! measured it predicts where the budget is met and measures there. An interpolated step that
//! does not at least halve the bracket is followed by a bisection step, so the search never
//! takes more than about twice the steps of a bisection; on the budget's plans it usually takes
//! three or four instead of eight to seventeen, and each step is a measurement of the whole
//! conversation.
//!
//! The search stops as soon as a measured position fits within [`CLOSE`] of the budget (1/50
//! of it under, at least one token): the budget counts as met there, and the steps that would
//! pin down the last ladder position (each a measurement of the whole conversation, for at most
//! 2 % more text) are not taken. Otherwise, where the size is monotone in the position, the
//! answer is the bisection's: the largest position that fits (a property test checks both).
//! Where it is not, both return some position that fits whose next one does not.

/// A measured plan within `budget / CLOSE` tokens under the budget (at least one) ends the
/// search: it is taken as the largest that fits.
pub(super) const CLOSE: usize = 50;

/// Whether a plan of `size` tokens meets `budget` closely enough to end a search.
fn close_enough(size: f64, budget: usize) -> bool {
    size >= (budget - (budget / CLOSE).max(1).min(budget)) as f64
}

/// The largest `p` in `[lo, hi)` with `size(p) <= budget`, or the first measured one that
/// fits within [`CLOSE`] of the budget, given that `lo` fits (its size is `at_lo`; when that is
/// already close enough, nothing is measured) and that positions at or past `hi` count as not
/// fitting (`hi` itself is never measured). `x` maps a position to what it stands for (increasing); `slope` is a first guess
/// of the size's growth per unit of `x`, used until two measurements give a better one.
/// `size` is called once per step, for a position strictly between the bracket's ends.
pub(super) fn largest_fitting(
    (mut lo, mut hi): (usize, usize),
    at_lo: usize,
    budget: usize,
    x: impl Fn(usize) -> f64,
    slope: f64,
    mut size: impl FnMut(usize) -> usize,
) -> usize {
    let mut at_lo = at_lo as f64;
    let mut at_hi: Option<f64> = None;
    // The fitting measurement before `lo`'s, for a slope before anything has failed to fit.
    let mut before_lo: Option<(f64, f64)> = None;
    let mut bisect = false;
    while hi - lo > 1 && !close_enough(at_lo, budget) {
        let width = hi - lo;
        let p = if bisect {
            lo + width / 2
        } else {
            let (x_lo, target) = (x(lo), budget as f64);
            let slope = match (at_hi, before_lo) {
                (Some(t), _) => (t - at_lo) / (x(hi) - x_lo),
                (None, Some((xb, tb))) if at_lo > tb && x_lo > xb => (at_lo - tb) / (x_lo - xb),
                _ => slope,
            };
            let want = if slope > 0.0 && slope.is_finite() {
                x_lo + (target - at_lo) / slope
            } else {
                f64::INFINITY
            };
            // The largest position whose `x` is at most `want`, strictly inside the bracket.
            let (mut a, mut b) = (lo + 1, hi - 1);
            if x(a) > want {
                b = a;
            } else {
                while a < b {
                    let m = a + (b - a).div_ceil(2);
                    if x(m) <= want {
                        a = m;
                    } else {
                        b = m - 1;
                    }
                }
            }
            b
        };
        let t = size(p);
        if t <= budget {
            before_lo = Some((x(lo), at_lo));
            lo = p;
            at_lo = t as f64;
        } else {
            hi = p;
            at_hi = Some(t as f64);
        }
        // An interpolated step that did not halve the bracket: bisect next.
        bisect = !bisect && (hi - lo) * 2 > width;
    }
    lo
}

/// The smallest `p` in `(lo, hi]` for which `fits(p)`, given that `hi` fits and `lo` does not
/// (neither is tried): a bisection, for counts whose plans only grow smaller as they grow
/// (messages folded, texts truncated). `fits` is called once per step.
pub(super) fn fewest_fitting(
    (mut lo, mut hi): (usize, usize),
    mut fits: impl FnMut(usize) -> bool,
) -> usize {
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Plain bisection, as the budget searched before.
    fn bisection(hi: usize, budget: usize, size: impl Fn(usize) -> usize) -> usize {
        let mut lo = 0;
        let mut hi = hi;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if size(mid) <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    proptest! {
        /// On a size that grows with the position (in steps, at any rate) the search finds what
        /// bisection finds, or a position that fits within CLOSE of the budget, in at most twice
        /// its steps.
        #[test]
        fn monotone_sizes_give_the_bisection_answer(
            steps in prop::collection::vec(0usize..40, 1..300),
            base in 0usize..500,
            budget in 0usize..6000,
            curve in 0u8..3,
            slope in 0.01f64..1000.0,
        ) {
            let hi = steps.len();
            let sizes: Vec<usize> = steps
                .iter()
                .scan(base, |s, d| { *s += d; Some(*s) })
                .collect();
            let x = |p: usize| match curve {
                0 => p as f64,
                1 => (p as f64 / 16.0).exp(),
                _ => (p as f64).sqrt(),
            };
            prop_assume!(sizes[0] <= budget);
            let mut calls = 0usize;
            let found = largest_fitting((0, hi), sizes[0], budget, x, slope, |p| {
                calls += 1;
                assert!(p > 0 && p < hi);
                sizes[p]
            });
            // The bisection's answer, or an earlier one that fits within CLOSE of the budget.
            let best = bisection(hi, budget, |p| sizes[p]);
            prop_assert!(found <= best && sizes[found] <= budget);
            prop_assert!(
                found == best || close_enough(sizes[found] as f64, budget),
                "found {} ({} tokens), bisection {} ({}), budget {}",
                found, sizes[found], best, sizes[best], budget
            );
            let bound = 2 * (usize::BITS - hi.leading_zeros()) as usize + 2;
            prop_assert!(calls <= bound, "{} calls for {} positions", calls, hi);
        }
    }

    /// A size linear in `x` is found in a few steps, not a bisection's eight.
    #[test]
    fn linear_sizes_take_few_steps() {
        let x = |p: usize| (0.004f64.ln() * (1.0 - p as f64 / 256.0)).exp();
        let size = |p: usize| 300 + (x(p) * 10_000.0) as usize;
        for budget in [400, 1000, 2500, 5000, 9000] {
            let mut calls = 0;
            let found = largest_fitting((0, 256), size(0), budget, x, 10_000.0, |p| {
                calls += 1;
                size(p)
            });
            let best = bisection(256, budget, size);
            assert!(found == best || close_enough(size(found) as f64, budget));
            assert!(size(found) <= budget && found <= best);
            assert!(calls <= 4, "{calls} steps for budget {budget}");
        }
    }

    /// A position within CLOSE of the budget ends the search; one just outside it does not.
    #[test]
    fn a_close_fit_ends_the_search() {
        let sizes: Vec<usize> = (0..100).map(|p| 900 + p).collect();
        let mut calls = 0;
        // 980 is exactly budget - budget / 50: the floor itself is close enough.
        let found = largest_fitting(
            (0, 100),
            980,
            1000,
            |p| p as f64,
            1.0,
            |p| {
                calls += 1;
                sizes[p]
            },
        );
        assert_eq!((found, calls), (0, 0));
        assert!(close_enough(980.0, 1000) && !close_enough(979.0, 1000));
        // Tiny budgets still need a fit within one token.
        assert!(close_enough(9.0, 10) && !close_enough(8.0, 10));
        assert!(close_enough(0.0, 0));
    }
}
