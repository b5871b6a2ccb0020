//! The token budget (`tokenBudget` / `targetRatio`): choose how hard to compress, then render
//! once.
//!
//! Every candidate plan is measured, not rendered: [`render::total`] sums what each message
//! costs in the candidate's form, and each message's form is computed once per call (its
//! sentences scored once, its JSON parsed once, its renderings kept), so trying a candidate
//! costs a pass over per-message numbers. Only the chosen plan is rendered.
//!
//! The choice, in order:
//! 1. The default pass fits (not measured when the messages it keeps verbatim are already over
//!    the budget): when the input itself does not, the budget is used rather than left empty —
//!    the largest fill share (every compressible text summarised to the same share of its
//!    size, key tokens listed within it) that fits and keeps more than the default pass.
//! 2. Otherwise stages that keep less verbatim in turn — a recency window of 2, then 1, then
//!    condensed tool-call arguments, then 0, then the oldest messages folded into one summary
//!    (recency window 1, then 0) — each with the largest fill share that fits (searched over a
//!    fixed ladder of shares, see `search.rs`; a share whose plan is within 1/50 under the
//!    budget ends the search). In fold stages the fewest folded messages that
//!    let the smallest share fit, and the folded summary gets what the newer messages leave.
//!    Without tool output the first stage that fits is the result; with tool output the stages'
//!    plans and the fold of everything compete, and the one keeping the most tool-output
//!    values wins (a value of the newest output counts 1, of the one before ½, …; ties go to
//!    the earlier stage). The stages are searched in turn until one keeps every value; once
//!    a stage with condensed tool-call arguments has been searched, the fold of everything is
//!    measured, and the later stages are searched only when it keeps every value too (the
//!    earliest stage that does wins: it keeps more of the conversation as it was) or does
//!    not fit. Where the fold keeps fewer values, the later stages (which keep fewer
//!    messages as they are) have not beaten both it and the stages before them on the dev
//!    tool sessions: the same plans are chosen, without measuring them.
//! 3. Last: the oldest messages' texts cut to a preview, as few as needed, then the room the
//!    cuts leave used: the other texts at the widest fill share that fits, the folded summary
//!    given what is left, then the cut texts' previews (60 characters at first) as long as
//!    what is still left allows; and if even cutting does not fit, every message but the
//!    preserved-role ones folded.
//!
//! With `method: "hierarchical"` the share is not searched: it is the first of the levels
//! 50% → 25% → 12.5% that fits ([`LEVELS`]), in each stage in turn.
//!
//! The estimator errs low by up to ~1.5% on output dense with ids and codes and ~2.5% on a list
//! of made-up CamelCase names (measured against o200k, `bench/compress_fits.ts`): with it the
//! budget aims 1/32 under the stated budget (nothing under 32 tokens), so that what it says
//! fits does. `stats.budget` and `stats.fits` are against the stated budget.

use std::cell::RefCell;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::counter::Tokens;
use super::env::Env;
use super::fate::Rung;
use super::fold;
use super::method::{CompressMethod, LEVELS};
use super::options::CompressOptions;
use super::output::Plan;
use super::parse::{message_text, tool_outputs};
use super::render::{self, Shape};
use super::search;
use crate::text::hash::{FastMap, FastSet};
use crate::text::keys::word_byte;

/// The smallest fill share the budget tries before truncating.
const MIN_RATIO: f64 = 0.004;
/// With the default estimator the budget aims at `budget - budget / ESTIMATE_RESERVE`.
const ESTIMATE_RESERVE: usize = 32;
/// The ladder: `LADDER + 1` shares from [`MIN_RATIO`] to 1, evenly spaced in log space (about
/// 2% apart).
const LADDER: usize = 256;
/// The positions a share search runs over: the last one (a share of 1) is never tried.
const SHARES: (usize, usize) = (0, LADDER);
/// A first guess of a folded summary's tokens per character listed.
const CHAR_TOKENS: f64 = 0.25;

/// The fill share at ladder position `j` (0: [`MIN_RATIO`], [`LADDER`]: 1).
fn share(j: usize) -> f64 {
    (MIN_RATIO.ln() * (1.0 - j as f64 / LADDER as f64)).exp()
}

/// The fill rung at ladder position `j`.
fn rung(j: usize) -> Rung {
    Rung::fill(share(j))
}

/// The budget in tokens: `tokenBudget`, else `targetRatio` × the tokens before.
pub(super) fn stated(options: &CompressOptions, before: usize) -> Option<usize> {
    options.token_budget.or_else(|| {
        options
            .target_ratio
            .map(|r| (before as f64 * r).floor() as usize)
    })
}

/// What the budget aims at for a stated budget: the budget itself with an exact counter,
/// 1/[`ESTIMATE_RESERVE`] less with the estimator (see the module docs).
pub(super) fn target(stated: usize, tok: &Tokens<'_>) -> usize {
    if tok.is_estimate() {
        stated - stated / ESTIMATE_RESERVE
    } else {
        stated
    }
}

/// The plan of a call: the default pass, or under a budget the plan chosen as the module docs
/// say.
pub(super) fn run(env: &Env<'_, '_>) -> Plan {
    let options = env.options;
    let base = Shape::base(options);
    let before: usize = env.parsed.counts.iter().sum();
    if before <= options.min_tokens {
        let mut p = render::plan(
            env,
            &Shape {
                rung: Rung::None,
                ..base
            },
        );
        if let Some(b) = stated(options, before) {
            p.stats.fits = Some(p.stats.tokens_after <= b);
        }
        return p;
    }
    let Some(stated) = stated(options, before) else {
        return render::plan(env, &base);
    };
    let (shape, escalation, level) = choose(env, base, before, target(stated, env.tok));
    let mut plan = render::plan(env, &shape);
    plan.stats.escalation = escalation;
    plan.stats.level = level;
    plan.stats.budget = Some(stated);
    plan.stats.fits = Some(plan.stats.tokens_after <= stated);
    plan
}

/// The shape of the plan to render, its escalation and hierarchical level.
fn choose(
    env: &Env<'_, '_>,
    base: Shape,
    before: usize,
    budget: usize,
) -> (Shape, usize, Option<u8>) {
    let c = Chooser {
        env,
        budget,
        before,
        hierarchical: env.options.method == CompressMethod::Hierarchical,
        sizes: RefCell::default(),
    };
    // The default pass, unless what it keeps verbatim is already over the budget (its other
    // messages only add to that): then it cannot fit and is not measured.
    if let Some(first) = c.bounded_total(&base) {
        if first <= budget {
            let (shape, level) = c.default_fits(base, first);
            return (shape, 0, level);
        }
    }
    // Stages, each searched over the fill share: what stays verbatim shrinks from stage to
    // stage (recency window 2 → 1 → 1 with condensed tool-call arguments → 0 → the oldest
    // messages folded, with a recency window of 1, then 0).
    let rw = base.recency_window;
    let stages = [
        Stage::new(rw.min(2), false, false),
        Stage::new(rw.min(1), false, false),
        Stage::new(rw.min(1), true, false),
        Stage::new(0, true, false),
        Stage::new(rw.min(1), true, true),
        Stage::new(0, true, true),
    ];
    let tool_values = ToolValues::new(env);
    if tool_values.is_some() {
        // Each stage's plan is scanned for the values it keeps: keep what measuring renders.
        env.keep_forms();
    }
    let n = env.parsed.len();
    let deepest = Stage::new(0, true, true).at(n, rung(0));
    let mut candidates: Vec<(f64, Shape, usize)> = Vec::new();
    // The fold of everything (its value utility and plan), measured once a stage with
    // condensed tool-call arguments was searched (unless a stage kept every value before);
    // `None` until then.
    let mut all_folded: Option<Option<(f64, Shape)>> = None;
    let measure_fold =
        |tv: &ToolValues| fold_all(env, deepest, budget).map(|all| (tv.utility(env, &all), all));
    // Whether a stage with condensed tool-call arguments was searched.
    let mut condensed = false;
    for (k, stage) in stages.iter().enumerate() {
        let Some((floor, floor_total)) = c.stage_floor(stage) else {
            continue;
        };
        if c.hierarchical {
            let (shape, level) = c.shallowest_level(floor);
            return (shape, k + 1, Some(level));
        }
        let (best, best_total) = c.widest_share(floor, floor_total);
        let best = if best.fold > 0 {
            c.widest_fold(best, best_total)
        } else {
            best
        };
        let Some(tv) = &tool_values else {
            return (best, k + 1, None);
        };
        // A plan that keeps every tool-output value cannot be beaten: stop there.
        let u = tv.utility(env, &best);
        candidates.push((u, best, k + 1));
        if u >= tv.total {
            break;
        }
        // Once a stage with condensed tool-call arguments was searched (what frees room for
        // the values without dropping a message kept as it is), the later stages are searched
        // only when the fold of everything keeps every value (one of them may too, keeping
        // more of the conversation as it was) or does not fit.
        condensed |= stage.condense_calls;
        if !condensed {
            continue;
        }
        let all = all_folded.get_or_insert_with(|| measure_fold(tv));
        if all.as_ref().is_some_and(|(u_all, _)| *u_all < tv.total) {
            break;
        }
    }
    if let Some(tv) = &tool_values {
        let mut best: Option<(f64, Shape, usize)> = None;
        for c in candidates {
            if best.as_ref().is_none_or(|b| c.0 > b.0) {
                best = Some(c);
            }
        }
        if let Some(found) = best.as_mut().filter(|b| b.0 < tv.total) {
            let all = all_folded.unwrap_or_else(|| measure_fold(tv));
            if let Some((u, all)) = all.filter(|(u, _)| *u > found.0) {
                *found = (u, all, stages.len() + 2);
            }
        }
        if let Some((_, shape, stage)) = best {
            return (shape, stage, None);
        }
    }
    let (mut best, best_total) = c.fewest_truncated(deepest);
    let mut escalation = stages.len() + 1;
    if best_total <= budget {
        // Cutting texts to a preview leaves room (the cut texts were over the budget alone):
        // the other texts get the widest share (the shallowest level, hierarchical), and the
        // folded summary what is left.
        let (wide, wide_total) = if c.hierarchical {
            let (level, _) = c.shallowest_level(best);
            (level, c.total(&level))
        } else {
            c.widest_share(best, best_total)
        };
        let wide = if wide.fold > 0 {
            c.widest_fold(wide, wide_total)
        } else {
            wide
        };
        best = c.longest_preview(wide);
    } else {
        // Nothing else left: every message but the preserved-role ones folded into one.
        // Its key tokens (newest message first) fill what the budget leaves.
        let all = Shape {
            fold: usize::MAX,
            fold_chars: Some(0),
            ..deepest
        };
        if c.total(&all) < best_total {
            best = fold_all(env, deepest, budget).unwrap_or(all);
            escalation = stages.len() + 2;
        }
    }
    (best, escalation, None)
}

/// One stage of the budget: what stays verbatim (see the module docs).
struct Stage {
    recency_window: usize,
    condense_calls: bool,
    may_fold: bool,
}

impl Stage {
    fn new(recency_window: usize, condense_calls: bool, may_fold: bool) -> Stage {
        Stage {
            recency_window,
            condense_calls,
            may_fold,
        }
    }

    /// The stage's plan folding up to `fold` messages, texts at `rung`.
    fn at(&self, fold: usize, rung: Rung) -> Shape {
        Shape {
            rung,
            recency_window: self.recency_window,
            condense_calls: self.condense_calls,
            fold,
            fold_chars: None,
            truncate: 0,
            preview: render::PREVIEW,
            importance: false,
            fuzzy: true,
            lossy: true,
        }
    }
}

/// One budget choice: the call, the budget aimed at, and every plan measured so far.
struct Chooser<'e, 'a, 'v> {
    env: &'e Env<'a, 'v>,
    budget: usize,
    /// The conversation's tokens.
    before: usize,
    hierarchical: bool,
    /// Stages can meet in one plan (a fold stage that needs no fold is the stage before it):
    /// each plan is measured once.
    sizes: RefCell<FastMap<Shape, usize>>,
}

impl Chooser<'_, '_, '_> {
    /// The tokens of the plan `shape` makes.
    fn total(&self, shape: &Shape) -> usize {
        if let Some(&t) = self.sizes.borrow().get(shape) {
            return t;
        }
        let t = render::total(self.env, shape);
        self.sizes.borrow_mut().insert(*shape, t);
        t
    }

    /// [`total`](Self::total), unless the tokens of the messages the plan keeps as they are,
    /// a lower bound of its total ([`render::total_of`] adds the other messages' forms and the
    /// fold to them), are already over the budget: then `None`, and nothing else of the plan
    /// is rendered.
    fn bounded_total(&self, shape: &Shape) -> Option<usize> {
        if let Some(&t) = self.sizes.borrow().get(shape) {
            return Some(t);
        }
        let d = render::decide(self.env, shape);
        let counts = &self.env.parsed.counts;
        let verbatim: usize = (0..counts.len())
            .filter(|&m| d.pres.kept[m].is_some())
            .map(|m| counts[m])
            .sum();
        if verbatim > self.budget {
            return None;
        }
        let t = render::total_of(self.env, shape, &d);
        self.sizes.borrow_mut().insert(*shape, t);
        Some(t)
    }

    /// The smallest share of the ladder (or level of the hierarchy).
    fn min_rung(&self) -> Rung {
        if self.hierarchical {
            Rung::fill(LEVELS[LEVELS.len() - 1])
        } else {
            rung(0)
        }
    }

    /// The default pass (`base`, `first` tokens) fits: when the input itself does not, the
    /// budget is used rather than left empty — the same recency window, the largest fill share
    /// that fits, if that keeps more than the default pass. Also the hierarchical level.
    fn default_fits(&self, base: Shape, first: usize) -> (Shape, Option<u8>) {
        let (budget, before) = (self.budget, self.before);
        let mut best = (base, first, None);
        if before <= budget {
            return (base, None);
        }
        let stage = Stage::new(base.recency_window, false, false);
        if self.hierarchical {
            for (k, &ratio) in LEVELS.iter().enumerate() {
                let s = stage.at(0, Rung::fill(ratio));
                let t = self.total(&s);
                if t <= budget {
                    if t > best.1 {
                        best = (s, t, Some(k as u8));
                    }
                    break;
                }
            }
        } else {
            // The smallest share is not measured: the default pass's size stands in for it.
            search::largest_fitting(SHARES, first, budget, share, before as f64, |j| {
                let s = Shape {
                    importance: true,
                    ..stage.at(0, rung(j))
                };
                let t = self.total(&s);
                if t <= budget && t > best.1 {
                    best = (s, t, None);
                }
                t
            });
        }
        (best.0, best.2)
    }

    /// The stage's plan at the smallest share with the fewest folded messages that let it fit,
    /// and its tokens; `None` when nothing the stage may do fits.
    fn stage_floor(&self, stage: &Stage) -> Option<(Shape, usize)> {
        let budget = self.budget;
        let min_rung = self.min_rung();
        let none = stage.at(0, min_rung);
        // A stage without folds whose verbatim messages are over the budget cannot fit (its
        // other messages are not rendered); a fold stage's plan folding none is measured
        // whole, for the fold count's prediction.
        let t = if stage.may_fold {
            self.total(&none)
        } else {
            self.bounded_total(&none)?
        };
        if t <= budget {
            return Some((none, t));
        }
        if !stage.may_fold {
            return None;
        }
        let n = self.env.parsed.len();
        let most = stage.at(n, min_rung);
        let mut best = (most, self.bounded_total(&most)?);
        if best.1 > budget {
            return None;
        }
        let fitting = |k: usize| {
            let s = stage.at(k, min_rung);
            let t = self.total(&s);
            (t <= budget).then_some((s, t))
        };
        // Predicted from what each message costs unfolded, then checked: the count and the
        // one before it settle it when the prediction holds (as it does unless folding changes
        // what the other messages are rendered as); else the search goes on from there.
        let mut bracket = (0, n);
        let k = self.predicted_fold(&none, t, &most, best.1);
        if k > 0 && k < n {
            match fitting(k) {
                None => bracket.0 = k,
                Some(at_k) => match (k > 1).then(|| fitting(k - 1)).flatten() {
                    None => return Some(at_k),
                    Some(before) => {
                        best = before;
                        bracket.1 = k - 1;
                    }
                },
            }
        }
        search::fewest_fitting(bracket, |k| match fitting(k) {
            Some(found) => {
                best = found;
                true
            }
            None => false,
        });
        Some(best)
    }

    /// The fewest folded messages whose plan the budget is predicted to hold, between the plan
    /// folding none (`none`, `none_total` tokens) and the one folding all it may (`most`,
    /// `most_total`): each fold count's messages cost what they do in `none`, the folded
    /// summary what it does in `most` (at the smallest share it lists next to nothing, so
    /// that hardly depends on the count). `most`'s count when none is predicted to fit.
    fn predicted_fold(
        &self,
        none: &Shape,
        none_total: usize,
        most: &Shape,
        most_total: usize,
    ) -> usize {
        let env = self.env;
        let cost = render::contributions(env, none);
        let mut prefix = Vec::with_capacity(cost.len() + 1);
        prefix.push(0usize);
        for c in &cost {
            prefix.push(prefix[prefix.len() - 1] + c);
        }
        let folded = |k: usize| {
            let r = fold::range(env.parsed, env.options, k);
            prefix[r.end] - prefix[r.start]
        };
        let marker = (most_total + folded(most.fold)).saturating_sub(none_total);
        let predicted = |k: usize| (none_total + marker).saturating_sub(folded(k));
        search::fewest_fitting((0, most.fold), |k| predicted(k) <= self.budget)
    }

    /// The shallowest hierarchical level that fits, on top of `floor` (at the deepest level,
    /// which fits).
    fn shallowest_level(&self, floor: Shape) -> (Shape, u8) {
        for (k, &ratio) in LEVELS.iter().enumerate().take(LEVELS.len() - 1) {
            let s = Shape {
                rung: Rung::fill(ratio),
                ..floor
            };
            if self.total(&s) <= self.budget {
                return (s, k as u8);
            }
        }
        (floor, (LEVELS.len() - 1) as u8)
    }

    /// The largest share that fits on top of `floor` (at the smallest share, which fits:
    /// `floor_total` tokens), and its tokens. Fitting is close to monotone in the share; only
    /// fitting plans are kept.
    fn widest_share(&self, floor: Shape, floor_total: usize) -> (Shape, usize) {
        let mut best = (floor, floor_total);
        let budget = self.budget;
        search::largest_fitting(
            SHARES,
            floor_total,
            budget,
            share,
            self.before as f64,
            |j| {
                let s = Shape {
                    rung: rung(j),
                    ..floor
                };
                let t = self.total(&s);
                if t <= budget {
                    best = (s, t);
                }
                t
            },
        );
        best
    }

    /// What the newer messages leave given to the folded summary's values and keys, on top of
    /// `floor` (`floor_total` tokens, which fits).
    fn widest_fold(&self, floor: Shape, floor_total: usize) -> Shape {
        let budget = self.budget;
        let mut best = (floor, floor_total);
        let none = self.total(&Shape {
            fold_chars: Some(0),
            ..floor
        });
        let cap = render::fold_chars_cap(self.env, &floor);
        let room = (0, budget.saturating_mul(8).min(cap) + 1);
        search::largest_fitting(
            room,
            none,
            budget,
            |c| c as f64,
            CHAR_TOKENS,
            |c| {
                let s = Shape {
                    fold_chars: Some(c),
                    ..floor
                };
                let t = self.total(&s);
                if t <= budget && t >= best.1 {
                    best = (s, t);
                }
                t
            },
        );
        best.0
    }

    /// The longest preview of the cut texts that fits on top of `floor` (which fits, with the
    /// shortest preview), up to the longest cut text.
    fn longest_preview(&self, floor: Shape) -> Shape {
        let budget = self.budget;
        let cap = render::preview_cap(self.env, &floor);
        if cap <= floor.preview {
            return floor;
        }
        let with = |chars: usize| Shape {
            preview: chars,
            ..floor
        };
        let chars = search::largest_fitting(
            (floor.preview, cap),
            self.total(&floor),
            budget,
            |c| c as f64,
            CHAR_TOKENS,
            |c| self.total(&with(c)),
        );
        with(chars)
    }

    /// Last resort: on top of `deepest`, the oldest compressible texts left (code kept by the
    /// summaries, the newest message) cut to a preview, as few as needed; and its tokens (over
    /// the budget when even cutting every one does not fit).
    fn fewest_truncated(&self, deepest: Shape) -> (Shape, usize) {
        let budget = self.budget;
        let n = self.env.parsed.len();
        let truncating = |k: usize| Shape {
            truncate: k,
            ..deepest
        };
        let mut best = (deepest, self.total(&deepest));
        let mut k = 1;
        let mut prev = 0;
        let mut found = None;
        while k <= n * 4 {
            let s = truncating(k);
            best = (s, self.total(&s));
            if best.1 <= budget {
                found = Some((prev, k));
                break;
            }
            prev = k;
            k *= 2;
        }
        if let Some(bracket) = found {
            // Truncating the bracket's end fits; find the fewest.
            search::fewest_fitting(bracket, |k| {
                let s = truncating(k);
                let t = self.total(&s);
                if t <= budget {
                    best = (s, t);
                }
                t <= budget
            });
        }
        best
    }
}

/// Every message but the preserved-role ones folded into one, its values and key tokens
/// (newest first) filling what the budget leaves: the largest such plan that fits, if any.
fn fold_all(env: &Env<'_, '_>, deepest: Shape, budget: usize) -> Option<Shape> {
    let with = |chars: usize| Shape {
        fold: usize::MAX,
        fold_chars: Some(chars),
        ..deepest
    };
    let none = render::total(env, &with(0));
    if none > budget {
        return None;
    }
    let cap = render::fold_chars_cap(env, &with(0));
    let chars = search::largest_fitting(
        (0, budget.saturating_mul(8).min(cap) + 1),
        none,
        budget,
        |c| c as f64,
        CHAR_TOKENS,
        |c| render::total(env, &with(c)),
    );
    Some(with(chars))
}

/// The values of the conversation's tool outputs (see `values.rs`), each weighted by its
/// newest output: 1 for the newest tool output, ½ for the one before, ¼ … — and what finds them
/// in a plan's text: a value is found where it stands between non-word bytes (or the text's
/// ends) on each side where its own first or last byte is a word byte (`[A-Za-z0-9_]`). A value
/// of words joined by `.`, `-` or `:` (numbers, dates, times, ids) is found exactly where it
/// runs from the start of a word to the end of one, so those are looked up in a map; the
/// others are searched by an automaton.
struct ToolValues {
    weights: Vec<f64>,
    total: f64,
    /// The values made of words and joiners ([`looked_up`]), by their text, with their
    /// positions.
    words: FastMap<String, usize>,
    /// The longest of them, in bytes.
    longest_word_value: usize,
    /// The other values, with their positions, and their automaton (`None` when there are
    /// none).
    others: Option<(AhoCorasick, Vec<(usize, String)>)>,
}

/// A byte that joins the words of a value found by lookup (`220.34`, `2024-01-05`, `10:30`).
fn joiner(c: u8) -> bool {
    matches!(c, b'.' | b'-' | b':')
}

/// A value found by lookup: words joined by joiners, a word at each end.
fn looked_up(v: &str) -> bool {
    let b = v.as_bytes();
    b.first().is_some_and(|&c| word_byte(c))
        && b.last().is_some_and(|&c| word_byte(c))
        && b.iter().all(|&c| word_byte(c) || joiner(c))
}

impl ToolValues {
    /// `None` when the conversation has no tool output values.
    fn new(env: &Env<'_, '_>) -> Option<ToolValues> {
        let parsed = env.parsed;
        // The outputs' values, newest output first, each with its output's weight.
        let mut outputs = Vec::new();
        let mut weight = 1.0f64;
        for (i, value) in parsed.values.iter().enumerate().rev() {
            let texts = tool_outputs(value, parsed.is_tool_message(i));
            for text in texts.iter().rev() {
                outputs.push((env.output_values(text), weight));
                weight /= 2.0;
            }
        }
        let mut seen: FastSet<&str> = FastSet::default();
        let mut patterns: Vec<String> = Vec::new();
        let mut weights = Vec::new();
        for (values, weight) in &outputs {
            for v in values.all() {
                if !v.is_empty() && seen.insert(v) {
                    patterns.push(v.clone());
                    weights.push(*weight);
                }
            }
        }
        ToolValues::of(patterns, weights)
    }

    /// The finder of `patterns` (none empty), weighted by `weights`; `None` without any.
    fn of(patterns: Vec<String>, weights: Vec<f64>) -> Option<ToolValues> {
        if patterns.is_empty() {
            return None;
        }
        let mut words = FastMap::default();
        let mut longest_word_value = 0;
        let mut other = Vec::new();
        for (p, v) in patterns.into_iter().enumerate() {
            if looked_up(&v) {
                longest_word_value = longest_word_value.max(v.len());
                words.insert(v, p);
            } else {
                other.push((p, v));
            }
        }
        let others = if other.is_empty() {
            None
        } else {
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .build(other.iter().map(|(_, v)| v))
                .ok()?;
            Some((automaton, other))
        };
        Some(ToolValues {
            total: weights.iter().sum(),
            weights,
            words,
            longest_word_value,
            others,
        })
    }

    /// Marks in `found` the values `text` holds (see [`ToolValues`]).
    fn scan(&self, text: &str, found: &mut [bool]) {
        let hb = text.as_bytes();
        // Values of words and joiners: in each run of word and joiner bytes, every stretch
        // from the start of a word to the end of a word, up to the longest such value, looked
        // up. The bytes beside such a stretch are joiners or the run's neighbours, none of them
        // word bytes, and no value of that kind reaches past its run.
        let mut words: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < hb.len() {
            if !word_byte(hb[i]) {
                i += 1;
                continue;
            }
            // A run from a word byte: its words, separated by joiners.
            words.clear();
            while i < hb.len() && (word_byte(hb[i]) || joiner(hb[i])) {
                if word_byte(hb[i]) {
                    let start = i;
                    while i < hb.len() && word_byte(hb[i]) {
                        i += 1;
                    }
                    words.push((start, i));
                } else {
                    i += 1;
                }
            }
            for (a, &(start, _)) in words.iter().enumerate() {
                for &(_, end) in &words[a..] {
                    if end - start > self.longest_word_value {
                        break;
                    }
                    // ASCII bytes, so between two char boundaries.
                    if let Some(&p) = text.get(start..end).and_then(|v| self.words.get(v)) {
                        found[p] = true;
                    }
                }
            }
        }
        let Some((automaton, other)) = &self.others else {
            return;
        };
        for m in automaton.find_overlapping_iter(text) {
            let (p, v) = &other[m.pattern().as_usize()];
            let p = *p;
            if found[p] {
                continue;
            }
            let kb = v.as_bytes();
            let (i, j) = (m.start(), m.end());
            let ok_l = !word_byte(kb[0]) || i == 0 || !word_byte(hb[i - 1]);
            let ok_r = !word_byte(kb[kb.len() - 1]) || j >= hb.len() || !word_byte(hb[j]);
            if ok_l && ok_r {
                found[p] = true;
            }
        }
    }

    /// How much of the tool outputs' values the plan `shape` keeps, weighted.
    fn utility(&self, env: &Env<'_, '_>, shape: &Shape) -> f64 {
        let d = render::decide(env, shape);
        let parsed = env.parsed;
        let mut found = vec![false; self.weights.len()];
        let mut scan = |text: &str| self.scan(text, &mut found);
        // The folded summary, made once: a rejected fold keeps its messages as they were.
        let fold = render::fold_out(env, shape, &d);
        let fold_rejected = fold.as_ref().is_some_and(|f| f.rejected);
        for m in 0..parsed.len() {
            let original = d.pres.kept[m].is_some() || (d.pres.fold.contains(&m) && fold_rejected);
            if original {
                scan(&message_text(&parsed.values[m]));
            } else if !d.pres.fold.contains(&m) {
                let r = render::message(env, m, shape, &d);
                if r.kept {
                    scan(&message_text(&parsed.values[m]));
                } else {
                    scan(&r.text);
                }
            }
        }
        if let Some(f) = fold.filter(|f| !f.rejected) {
            scan(&f.text);
        }
        found
            .iter()
            .zip(&self.weights)
            .filter(|(f, _)| **f)
            .map(|(_, w)| w)
            .sum()
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The values found as one automaton over all of them finds them (the oracle): every
    /// occurrence, kept where the value's word-byte ends have no word byte beside them.
    fn found_by_one_automaton(patterns: &[String], text: &str) -> Vec<bool> {
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .unwrap();
        let hb = text.as_bytes();
        let mut found = vec![false; patterns.len()];
        for m in ac.find_overlapping_iter(text) {
            let kb = patterns[m.pattern().as_usize()].as_bytes();
            let (i, j) = (m.start(), m.end());
            let ok_l = !word_byte(kb[0]) || i == 0 || !word_byte(hb[i - 1]);
            let ok_r = !word_byte(kb[kb.len() - 1]) || j >= hb.len() || !word_byte(hb[j]);
            found[m.pattern().as_usize()] |= ok_l && ok_r;
        }
        found
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Looking word-byte values up run by run and searching the others finds what one
        /// automaton over all of them finds.
        #[test]
        fn values_are_found_as_one_automaton_finds_them(
            values in prop::collection::vec("[a-c0-2_]{1,4}|[a-c0-2]{1,3}[.: -][a-c0-2]{0,3}|[0-2]{1,2}([.:-][0-2]{1,2}){1,3}|-[0-2]{1,2}|é[a-b]?|[0-2]\\.\\.[0-2]", 1..12),
            words in prop::collection::vec("[a-c0-2_]{1,5}|[.: ,\\-é\n]|[a-c0-2]{1,3}[.:-][0-2]{1,2}|[0-2]{1,2}([.:-][0-2]{1,2}){1,3}", 0..30),
        ) {
            let mut seen = std::collections::HashSet::new();
            let patterns: Vec<String> = values.into_iter().filter(|v| seen.insert(v.clone())).collect();
            let text: String = words.concat();
            let weights = vec![1.0; patterns.len()];
            let Some(tv) = ToolValues::of(patterns.clone(), weights) else {
                return Err(TestCaseError::fail("no finder"));
            };
            let mut found = vec![false; patterns.len()];
            tv.scan(&text, &mut found);
            prop_assert_eq!(found, found_by_one_automaton(&patterns, &text), "{:?} in {:?}", patterns, text);
        }
    }
}
