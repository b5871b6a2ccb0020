//! Fusion of the lexical and dense rankings, and the calibration of fused scores.
//!
//! **Order.** By default a convex combination of the two sides' scores, each normalised by the
//! distribution of its own list for this query ([`FusionMethod::Convex`]): a chunk's fused value
//! is `wₗ · s · bm25 / bm25_max + w_d · (1 − s) · (cos − cos_min) / (cos_max − cos_min)`, where
//! the maxima and minimum are those of the query's candidate lists, `s` =
//! [`LEXICAL_SHARE`] (0.25), and `wₗ`, `w_d` are `lexicalWeight`, `denseWeight`. Unlike ranks,
//! normalised scores say how far apart the candidates are: a side whose list falls off steeply
//! (one clear match) moves the order more than a side whose scores are all alike, so each side
//! weighs per query by how decided it is. On the dev IR sets this raised nDCG@10 over
//! Reciprocal Rank Fusion on both (CISI 0.4424 → 0.4591, MED 0.7977 → 0.8058;
//! docs/benchmarks.md, "query"). `fusion: "rrf"` keeps Reciprocal Rank Fusion: `Σ wᵢ / (k +
//! rankᵢ)` over the lists a chunk appears in (rank from 1; `k` = `rrfK`, default 60), robust
//! to the two sides' scales because it uses ranks only. Both are document-aware: a chunk
//! missing from a list in which another chunk of its document appears takes that document's
//! best value there (`fuse_grouped`).
//!
//! **Scores.** Neither order says anything absolute (the best chunk of a query about nothing
//! in the corpus is still first, and a per-query normalisation makes every query's best value
//! the same), so the score of a result is calibrated from the evidence itself, on absolute
//! scales, whichever order fused it:
//!
//! - lexical: `bm25 / (0.5 · bm25_max(query))`, clamped to [0, 1], where `bm25_max` is the
//!   score of an ideal chunk that contains every query term with saturated frequency
//!   (`Σ idf(t)·(k1+1)`, terms absent from the index included): the share of the question's
//!   term weight the chunk matches, full at one half
//!   ([`LEXICAL_SATURATION`]);
//! - dense: `(cos − lo) / (hi − lo)` clamped to [0, 1], with `lo`/`hi` per embedder family
//!   ([`DenseScale`]): the cosine below which texts are unrelated and the one above which they
//!   are about the same thing (fitted on the dev IR sets, see
//!   docs/benchmarks.md, "query").
//!
//! A result's evidence is the weighted mean of both sides (a side that did not retrieve the chunk
//! contributes 0). Evidence is noisy along the fused order; the scores are its isotonic
//! (non-increasing, least-squares) fit in rank order, computed by pool-adjacent-violators: a
//! result that looks better than the one above it shares their mean, so scores never increase
//! down the list, `minScore` cuts a prefix of the ranking, and one weak result does not drag
//! down everything after it (as a running minimum would).

use super::feedback::FEEDBACK_CHUNKS;
use super::index::{compression_pool, LEXICAL_SATURATION};
use super::options::{FusionMethod, QueryOptions};
use crate::embed::EmbedderKind;
use crate::text::hash::FastMap;

/// One ranked list to fuse: slots best first, and the list's weight.
#[derive(Clone, Copy, Debug)]
pub struct RankedList<'a> {
    /// Slots, best first.
    pub slots: &'a [u32],
    /// The list's weight (≥ 0).
    pub weight: f32,
}

/// Reciprocal Rank Fusion of `lists` with constant `k`: `(slot, fused)` best first, ties by slot.
/// Lists with weight 0 contribute nothing.
pub fn rrf(lists: &[RankedList<'_>], k: f32) -> Vec<(u32, f32)> {
    let mut fused: std::collections::BTreeMap<u32, f32> = std::collections::BTreeMap::new();
    for list in lists {
        if list.weight <= 0.0 {
            continue;
        }
        for (rank, &slot) in list.slots.iter().enumerate() {
            let add = list.weight / (k + (rank + 1) as f32);
            *fused.entry(slot).or_insert(0.0) += add;
        }
    }
    let mut out: Vec<(u32, f32)> = fused.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// Document-aware Reciprocal Rank Fusion: like [`rrf`], except that a chunk missing from a
/// list in which another chunk of its document (`group(slot)`) appears takes that document's
/// best rank there. Chunking splits a document's evidence (the words match one chunk, the
/// meaning another); this gives it back, so a document ranks as if it were indexed whole,
/// while within a document the chunks that matched themselves still come first (ties go by
/// the number of lists a chunk matched itself, then by slot).
pub fn rrf_grouped(
    lists: &[RankedList<'_>],
    k: f32,
    group: &dyn Fn(u32) -> u32,
) -> Vec<(u32, f32)> {
    let valued: Vec<Vec<(u32, f32)>> = lists
        .iter()
        .map(|list| {
            if list.weight <= 0.0 {
                return Vec::new();
            }
            list.slots
                .iter()
                .enumerate()
                .map(|(rank, &slot)| (slot, list.weight / (k + (rank + 1) as f32)))
                .collect()
        })
        .collect();
    fuse_grouped(&valued, group)
}

/// The share of the lexical side in the convex fusion (the dense side has the rest), before
/// the `lexicalWeight` and `denseWeight` options. Swept on the dev IR sets (nDCG@10 CISI /
/// MED): 0.15 .4452 / .7930, 0.2 .4576 / .8028, **0.25 .4591 / .8058**, 0.3 .4554 / .8013,
/// 0.5 .4572 / .7756 (docs/benchmarks.md, "query").
pub const LEXICAL_SHARE: f32 = 0.25;

/// One scored list to fuse by [`convex_grouped`]: `(slot, score)` best first, its weight, and
/// whether its scores are normalised from 0 (`score / max`: BM25, which is 0 for a chunk
/// without the query's terms) or from the list's own minimum (`(score − min) / (max − min)`:
/// cosines, whose floor depends on the query).
#[derive(Clone, Copy, Debug)]
pub struct ScoredList<'a> {
    /// `(slot, score)`, best first.
    pub hits: &'a [(u32, f32)],
    /// The list's weight (≥ 0; 0 leaves it out).
    pub weight: f32,
    /// Normalise from the list's minimum rather than from 0.
    pub from_min: bool,
}

/// Document-aware convex fusion: each list's scores normalised to [0, 1] for this query (see
/// [`ScoredList`]), times the list's weight, summed over the lists; a chunk missing from a
/// list takes its document's best value there, as in [`rrf_grouped`]. `(slot, fused)` best
/// first, ties by the number of lists a chunk matched itself, then by slot. Sums are `f32`
/// in list order, so every platform gives the same order.
pub fn convex_grouped(lists: &[ScoredList<'_>], group: &dyn Fn(u32) -> u32) -> Vec<(u32, f32)> {
    let valued: Vec<Vec<(u32, f32)>> = lists
        .iter()
        .map(|list| {
            let (Some(first), Some(last)) = (list.hits.first(), list.hits.last()) else {
                return Vec::new();
            };
            if list.weight <= 0.0 {
                return Vec::new();
            }
            // Best first, so the first score is the maximum; the minimum is taken over the
            // list rather than from its last entry, in case a caller's order has ties broken
            // otherwise.
            let max = first.1;
            let min = if list.from_min {
                list.hits.iter().fold(last.1, |m, h| m.min(h.1))
            } else {
                0.0
            };
            let range = max - min;
            list.hits
                .iter()
                .map(|&(slot, score)| {
                    let norm = if range > 0.0 {
                        ((score - min) / range).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    (slot, list.weight * norm)
                })
                .collect()
        })
        .collect();
    fuse_grouped(&valued, group)
}

/// Sums per slot the value each list gives it (`(slot, value)` per list, best first; a slot
/// missing from a list takes the best value of its group there), over the union of the slots.
/// `(slot, fused)` best first; ties by the number of lists a slot is itself in, then by slot.
fn fuse_grouped(lists: &[Vec<(u32, f32)>], group: &dyn Fn(u32) -> u32) -> Vec<(u32, f32)> {
    // Per list: own value of each slot, best value of each group (hash maps: only looked up,
    // their order never reaches the output). The union of the slots, ascending.
    let mut own: Vec<FastMap<u32, f32>> = Vec::with_capacity(lists.len());
    let mut best: Vec<FastMap<u32, f32>> = Vec::with_capacity(lists.len());
    let mut union: Vec<u32> = Vec::new();
    for list in lists {
        let mut o = FastMap::default();
        let mut b = FastMap::default();
        o.reserve(list.len());
        b.reserve(list.len());
        for &(slot, value) in list {
            o.entry(slot).or_insert(value);
            b.entry(group(slot)).or_insert(value);
            union.push(slot);
        }
        own.push(o);
        best.push(b);
    }
    union.sort_unstable();
    union.dedup();
    let mut out: Vec<(u32, f32, usize)> = union
        .into_iter()
        .map(|slot| {
            let g = group(slot);
            let mut fused = 0f32;
            let mut hits = 0usize;
            for i in 0..lists.len() {
                let value = match own[i].get(&slot) {
                    Some(&v) => {
                        hits += 1;
                        Some(v)
                    }
                    None => best[i].get(&g).copied(),
                };
                if let Some(v) = value {
                    fused += v;
                }
            }
            (slot, fused, hits)
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    out.into_iter().map(|(slot, f, _)| (slot, f)).collect()
}

/// The cosine range that maps onto dense evidence 0..1 for one embedder family.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DenseScale {
    /// Cosine at or below which the dense evidence is 0.
    pub lo: f32,
    /// Cosine at or above which the dense evidence is 1.
    pub hi: f32,
}

impl DenseScale {
    /// all-MiniLM-L6-v2: unrelated English passages sit around cosine 0.0–0.15, paraphrases
    /// above 0.7 (fitted on the dev IR sets).
    pub const MINILM: DenseScale = DenseScale { lo: 0.15, hi: 0.65 };
    /// The lexical fallback embedder: hashed n-gram overlap (fitted on the dev IR sets).
    pub const LEXICAL: DenseScale = DenseScale { lo: 0.05, hi: 0.45 };

    /// Maps a cosine onto [0, 1].
    pub fn evidence(self, cosine: f32) -> f32 {
        ((cosine - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }
}

/// What is known about one fused result.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Evidence {
    /// BM25 score divided by the query's ideal score, in [0, 1]; 0 if the lexical side did not
    /// return the chunk.
    pub lexical: f32,
    /// Dense evidence in [0, 1] ([`DenseScale::evidence`]); 0 if not returned.
    pub dense: f32,
}

/// Calibrated scores for results in fused order (see the [module docs](self)): the weighted
/// mean of each result's evidence, fitted to a non-increasing sequence.
pub fn calibrate(evidence: &[Evidence], lexical_weight: f32, dense_weight: f32) -> Vec<f32> {
    let (wl, wd) = (lexical_weight.max(0.0), dense_weight.max(0.0));
    let total = wl + wd;
    let raw: Vec<f32> = evidence
        .iter()
        .map(|e| {
            if total > 0.0 {
                ((wl * e.lexical + wd * e.dense) / total).clamp(0.0, 1.0)
            } else {
                0.0
            }
        })
        .collect();
    non_increasing_fit(&raw)
}

/// The least-squares non-increasing fit of `values` (pool-adjacent-violators, O(n)). Sums are
/// kept in f64 and added in a fixed order, so the result is the same on every platform.
pub fn non_increasing_fit(values: &[f32]) -> Vec<f32> {
    // Blocks of pooled values: (sum, count).
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(values.len());
    for &v in values {
        blocks.push((f64::from(v), 1));
        while blocks.len() >= 2 {
            let (s1, n1) = blocks[blocks.len() - 1];
            let (s0, n0) = blocks[blocks.len() - 2];
            // Violation: the later block's mean exceeds the earlier one's.
            if s1 * n0 as f64 > s0 * n1 as f64 {
                blocks.pop();
                if let Some(last) = blocks.last_mut() {
                    *last = (s0 + s1, n0 + n1);
                }
            } else {
                break;
            }
        }
    }
    let mut out = Vec::with_capacity(values.len());
    for (sum, n) in blocks {
        let mean = (sum / n as f64) as f32;
        out.extend(std::iter::repeat_n(mean, n));
    }
    out
}

/// How `query` fuses a lexical and a dense candidate list: the method, the two weights, the RRF
/// constant, the dense evidence scale and how many fused candidates go on to result
/// compression. The one
/// description of it, used by [`Index::candidates`](super::index::Index::candidates) and by
/// stores that keep the lists elsewhere ([`fuse_lists`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fusion {
    /// How the two lists are combined (`fusion`; default convex).
    pub method: FusionMethod,
    /// Weight of the lexical (BM25) list.
    pub lexical_weight: f32,
    /// Weight of the dense (vector) list.
    pub dense_weight: f32,
    /// The RRF constant `k`.
    pub rrf_k: f32,
    /// The cosine range of the embedder family.
    pub scale: DenseScale,
    /// How many fused candidates are kept (and calibrated).
    pub limit: usize,
    /// Expansion terms of pseudo-relevance feedback ([`feedback`](super::feedback)); 0: no
    /// feedback (`feedback: false`, `fusion: "rrf"`, or a lexical weight of 0).
    pub feedback_terms: usize,
    /// With feedback, the share of the plain BM25 list ([`FEEDBACK_SHARES`]).
    pub feedback_lexical: f32,
    /// With feedback, the share of the expanded BM25 list ([`FEEDBACK_SHARES`]).
    pub feedback_expanded: f32,
}

/// With pseudo-relevance feedback, the shares of the three lists of the convex fusion: plain
/// BM25, expanded BM25, and the dense list the rest (before `lexicalWeight`, which scales both
/// BM25 lists, and `denseWeight`). Swept on the dev IR sets (docs/benchmarks.md, "query").
pub const FEEDBACK_SHARES: (f32, f32) = (0.2, 0.1);

impl Fusion {
    /// The fusion of `options` over vectors of `kind`: `denseWeight` defaults to 1 for a model
    /// embedder and 0 for the lexical one; `limit` is `candidates`, at most
    /// [`compression_pool`]`(topN)`.
    pub fn new(options: &QueryOptions, kind: EmbedderKind) -> Fusion {
        let dense_weight = options.dense_weight.unwrap_or(match kind {
            EmbedderKind::MiniLm => 1.0,
            EmbedderKind::Lexical => 0.0,
        });
        Fusion {
            method: options.fusion,
            lexical_weight: options.lexical_weight as f32,
            dense_weight: dense_weight as f32,
            rrf_k: options.rrf_k as f32,
            scale: match kind {
                EmbedderKind::MiniLm => DenseScale::MINILM,
                EmbedderKind::Lexical => DenseScale::LEXICAL,
            },
            limit: options.candidates.min(compression_pool(options.top_n)),
            feedback_terms: if options.feedback
                && options.fusion == FusionMethod::Convex
                && options.lexical_weight > 0.0
            {
                options.feedback_terms
            } else {
                0
            },
            feedback_lexical: FEEDBACK_SHARES.0,
            feedback_expanded: FEEDBACK_SHARES.1,
        }
    }
}

/// What [`fuse_with_feedback`] calls with the feedback slots: the expanded BM25 list,
/// `(slot, score)` best first.
pub type Expand<'a> = dyn FnMut(&[u32]) -> Vec<(u32, f32)> + 'a;

/// [`fuse_lists`] with pseudo-relevance feedback when `fusion` has it
/// ([`Fusion::feedback_terms`] above 0): the first fusion's top [`FEEDBACK_CHUNKS`] slots go to
/// `expand`, which returns the expanded BM25 list (`(slot, score)` best first: the
/// [relevance model](super::feedback::expansion_terms) of those slots, searched with
/// [`Bm25::search_weighted`](super::bm25::Bm25::search_weighted)), fused as a third list.
/// Without feedback, or when `expand` returns nothing, this is [`fuse_lists`] of the two lists.
pub fn fuse_with_feedback(
    lexical: &[(u32, f32)],
    ideal: f32,
    dense: &[(u32, f32)],
    group: &dyn Fn(u32) -> u32,
    fusion: &Fusion,
    expand: &mut Expand<'_>,
) -> Vec<(u32, f32)> {
    let top = feedback_slots(lexical, dense, group, fusion);
    let expanded = if top.is_empty() {
        Vec::new()
    } else {
        expand(&top)
    };
    fuse_lists(lexical, ideal, dense, &expanded, group, fusion)
}

/// The slots pseudo-relevance feedback learns from: the top [`FEEDBACK_CHUNKS`] of the convex
/// fusion of `lexical` and `dense` (best first); none when `fusion` has no feedback.
pub fn feedback_slots(
    lexical: &[(u32, f32)],
    dense: &[(u32, f32)],
    group: &dyn Fn(u32) -> u32,
    fusion: &Fusion,
) -> Vec<u32> {
    if fusion.feedback_terms == 0 || fusion.method != FusionMethod::Convex {
        return Vec::new();
    }
    let first = convex_grouped(&two_lists(lexical, dense, fusion), group);
    first.iter().take(FEEDBACK_CHUNKS).map(|f| f.0).collect()
}

/// The two lists of the convex fusion without feedback, weighted.
fn two_lists<'a>(
    lexical: &'a [(u32, f32)],
    dense: &'a [(u32, f32)],
    fusion: &Fusion,
) -> [ScoredList<'a>; 2] {
    [
        ScoredList {
            hits: lexical,
            weight: fusion.lexical_weight * LEXICAL_SHARE,
            from_min: false,
        },
        ScoredList {
            hits: dense,
            weight: fusion.dense_weight * (1.0 - LEXICAL_SHARE),
            from_min: true,
        },
    ]
}

/// The fused, calibrated ranking of the candidate lists: `lexical` as `(slot, bm25)` and
/// `dense` as `(slot, cosine)`, each best first; `expanded` the expanded BM25 list of
/// pseudo-relevance feedback (`(slot, score)` best first; empty without feedback: see
/// [`fuse_with_feedback`]); `ideal` is the question's ideal BM25 score
/// ([`Bm25::ideal_score`](super::bm25::Bm25::ideal_score)); `group(slot)` is the slot's
/// document. Returns `(slot, score)` best first: the document-aware fusion of `fusion.method`
/// ([`convex_grouped`] of two lists, or of three with [`FEEDBACK_SHARES`] when `expanded` is
/// not empty; or [`rrf_grouped`] of `lexical` and `dense`) cut at `fusion.limit`, then the
/// evidence of the question's own lists calibrated ([`calibrate`]).
pub fn fuse_lists(
    lexical: &[(u32, f32)],
    ideal: f32,
    dense: &[(u32, f32)],
    expanded: &[(u32, f32)],
    group: &dyn Fn(u32) -> u32,
    fusion: &Fusion,
) -> Vec<(u32, f32)> {
    let mut fused = match fusion.method {
        FusionMethod::Convex if expanded.is_empty() => {
            convex_grouped(&two_lists(lexical, dense, fusion), group)
        }
        FusionMethod::Convex => convex_grouped(
            &[
                ScoredList {
                    hits: lexical,
                    weight: fusion.lexical_weight * fusion.feedback_lexical,
                    from_min: false,
                },
                ScoredList {
                    hits: expanded,
                    weight: fusion.lexical_weight * fusion.feedback_expanded,
                    from_min: false,
                },
                ScoredList {
                    hits: dense,
                    weight: fusion.dense_weight
                        * (1.0 - fusion.feedback_lexical - fusion.feedback_expanded).max(0.0),
                    from_min: true,
                },
            ],
            group,
        ),
        FusionMethod::Rrf => {
            let lex_slots: Vec<u32> = lexical.iter().map(|h| h.0).collect();
            let dense_slots: Vec<u32> = dense.iter().map(|h| h.0).collect();
            rrf_grouped(
                &[
                    RankedList {
                        slots: &lex_slots,
                        weight: fusion.lexical_weight,
                    },
                    RankedList {
                        slots: &dense_slots,
                        weight: fusion.dense_weight,
                    },
                ],
                fusion.rrf_k,
                group,
            )
        }
    };
    fused.truncate(fusion.limit);

    // Looked up only (their order never reaches the output); a slot listed twice keeps its
    // first (best) score.
    let mut lex_score: FastMap<u32, f32> = FastMap::default();
    for &(slot, s) in lexical {
        lex_score.entry(slot).or_insert(s);
    }
    let mut dense_score: FastMap<u32, f32> = FastMap::default();
    for &(slot, c) in dense {
        dense_score.entry(slot).or_insert(c);
    }
    let evidence: Vec<Evidence> = fused
        .iter()
        .map(|(slot, _)| Evidence {
            lexical: match lex_score.get(slot) {
                Some(&s) if ideal > 0.0 => (s / (ideal * LEXICAL_SATURATION)).clamp(0.0, 1.0),
                _ => 0.0,
            },
            dense: dense_score
                .get(slot)
                .map_or(0.0, |&c| fusion.scale.evidence(c)),
        })
        .collect();
    let scores = calibrate(&evidence, fusion.lexical_weight, fusion.dense_weight);
    fused
        .into_iter()
        .zip(scores)
        .map(|((slot, _), score)| (slot, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let a = [1u32, 2, 3];
        let b = [3u32, 1];
        let fused = rrf(
            &[
                RankedList {
                    slots: &a,
                    weight: 1.0,
                },
                RankedList {
                    slots: &b,
                    weight: 1.0,
                },
            ],
            60.0,
        );
        let ids: Vec<u32> = fused.iter().map(|f| f.0).collect();
        // 1: 1/61 + 1/62; 3: 1/63 + 1/61; 2: 1/62.
        assert_eq!(ids, vec![1, 3, 2]);
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-7);
    }

    #[test]
    fn zero_weight_lists_are_ignored_and_ties_go_by_slot() {
        let a = [5u32, 4];
        let b = [4u32, 5];
        let fused = rrf(
            &[
                RankedList {
                    slots: &a,
                    weight: 1.0,
                },
                RankedList {
                    slots: &b,
                    weight: 1.0,
                },
            ],
            60.0,
        );
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), vec![4, 5]);
        let only_b = rrf(
            &[
                RankedList {
                    slots: &a,
                    weight: 0.0,
                },
                RankedList {
                    slots: &b,
                    weight: 1.0,
                },
            ],
            60.0,
        );
        assert_eq!(only_b.iter().map(|f| f.0).collect::<Vec<_>>(), vec![4, 5]);
    }

    #[test]
    fn grouped_rrf_lends_a_document_its_best_rank() {
        // Slots 0 and 1 are one document; 2 another. Lexical found 0, dense found 1 and 2.
        let lex = [0u32, 2];
        let dense = [1u32, 2];
        let lists = [
            RankedList {
                slots: &lex,
                weight: 1.0,
            },
            RankedList {
                slots: &dense,
                weight: 1.0,
            },
        ];
        let group = |s: u32| if s < 2 { 0 } else { 1 };
        let fused = rrf_grouped(&lists, 60.0, &group);
        // Document 0 (ranks 1 and 1 via its chunks) beats document 2 (ranks 2 and 2); within
        // document 0 both chunks tie on value and on own hits, so slot order decides.
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!((fused[0].1 - 2.0 / 61.0).abs() < 1e-7);
        // Without grouping, slot 2 (in both lists) would lead.
        assert_eq!(rrf(&lists, 60.0)[0].0, 2);
    }

    #[test]
    fn convex_fusion_weighs_normalised_scores() {
        // Lexical: slot 0 far ahead of slot 1 (BM25 normalised from 0: 1.0, 0.1). Dense: 1
        // slightly ahead of 0 and 2 at the floor (min-max: 1.0, 0.8, 0.0).
        let lex = [(0u32, 10.0f32), (1, 1.0)];
        let dense = [(1u32, 0.60f32), (0, 0.56), (2, 0.40)];
        let lists = |wl: f32, wd: f32| {
            [
                ScoredList {
                    hits: &lex,
                    weight: wl,
                    from_min: false,
                },
                ScoredList {
                    hits: &dense,
                    weight: wd,
                    from_min: true,
                },
            ]
        };
        let none = |s: u32| s;
        let fused = convex_grouped(&lists(0.25, 0.75), &none);
        // 0: 0.25·1 + 0.75·0.8 = 0.85; 1: 0.25·0.1 + 0.75·1 = 0.775; 2: 0.
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!((fused[0].1 - 0.85).abs() < 1e-6, "{fused:?}");
        assert!((fused[1].1 - 0.775).abs() < 1e-6);
        assert_eq!(fused[2].1, 0.0);
        // RRF sees only ranks: 0 and 1 tie on value (first and second in one list each), and
        // slot order decides; the convex fusion used the lexical side's wide margin.
        let rrf_order = rrf(
            &[
                RankedList {
                    slots: &[0, 1],
                    weight: 1.0,
                },
                RankedList {
                    slots: &[1, 0, 2],
                    weight: 1.0,
                },
            ],
            60.0,
        );
        assert!((rrf_order[0].1 - rrf_order[1].1).abs() < 1e-7);
        // A weight of 0 leaves a list out; one list orders by its own scores.
        let dense_only = convex_grouped(&lists(0.0, 1.0), &none);
        assert_eq!(
            dense_only.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![1, 0, 2]
        );
        // A list whose scores are all equal normalises to 1, not to NaN.
        let flat = [(3u32, 0.5f32), (4, 0.5)];
        let f = convex_grouped(
            &[ScoredList {
                hits: &flat,
                weight: 1.0,
                from_min: true,
            }],
            &none,
        );
        assert_eq!(f, vec![(3, 1.0), (4, 1.0)]);
        assert!(convex_grouped(&[], &none).is_empty());
    }

    #[test]
    fn convex_fusion_lends_a_document_its_best_value() {
        // Slots 0 and 1 are one document; 2 another (as in the grouped RRF test).
        let lex = [(0u32, 4.0f32), (2, 2.0)];
        let dense = [(1u32, 0.9f32), (2, 0.5), (0, 0.1)];
        let group = |s: u32| if s < 2 { 0 } else { 1 };
        let fused = convex_grouped(
            &[
                ScoredList {
                    hits: &lex,
                    weight: 0.5,
                    from_min: false,
                },
                ScoredList {
                    hits: &dense,
                    weight: 0.5,
                    from_min: true,
                },
            ],
            &group,
        );
        // 1 borrows 0's lexical 1.0: 0.5 + 0.5·1 = 1.0; 0: 0.5 + 0 = 0.5; 2: 0.25 + 0.25.
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1, 0, 2]);
        assert!((fused[0].1 - 1.0).abs() < 1e-6, "{fused:?}");
        // 0 and 2 tie at 0.5, both in both lists themselves: slot order decides.
        assert!((fused[1].1 - fused[2].1).abs() < 1e-6);
    }

    #[test]
    fn fuse_lists_follows_the_method() {
        let lex = [(0u32, 10.0f32), (1, 1.0)];
        let dense = [(1u32, 0.60f32), (0, 0.56), (2, 0.40)];
        let none = |s: u32| s;
        let mut options = QueryOptions::default();
        let convex = Fusion::new(&options, EmbedderKind::MiniLm);
        assert_eq!(convex.method, FusionMethod::Convex);
        let order = |f: &Fusion| {
            fuse_lists(&lex, 12.0, &dense, &[], &none, f)
                .iter()
                .map(|r| r.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&convex), vec![0, 1, 2]);
        options.fusion = FusionMethod::Rrf;
        // RRF: 0 and 1 tie (1/61 + 1/62 each) and slot order decides here too, but with a
        // heavier dense weight RRF follows the dense order where the convex fusion does not.
        options.dense_weight = Some(1.2);
        assert_eq!(
            order(&Fusion::new(&options, EmbedderKind::MiniLm)),
            vec![1, 0, 2]
        );
        options.fusion = FusionMethod::Convex;
        assert_eq!(
            order(&Fusion::new(&options, EmbedderKind::MiniLm)),
            vec![0, 1, 2]
        );
        // Scores never increase down the list, whichever the order.
        let scored = fuse_lists(&lex, 12.0, &dense, &[], &none, &convex);
        assert!(scored.windows(2).all(|w| w[0].1 >= w[1].1), "{scored:?}");
    }

    #[test]
    fn calibrated_scores_are_bounded_and_never_increase() {
        let e = [
            Evidence {
                lexical: 0.2,
                dense: 0.4,
            },
            Evidence {
                lexical: 1.0,
                dense: 1.0,
            },
            Evidence {
                lexical: 0.0,
                dense: 0.1,
            },
        ];
        let s = calibrate(&e, 1.0, 1.0);
        // 0.3 then 1.0 violate the order: both become their mean.
        assert!((s[0] - 0.65).abs() < 1e-6, "{s:?}");
        assert!((s[1] - 0.65).abs() < 1e-6);
        assert!((s[2] - 0.05).abs() < 1e-6);
        assert_eq!(calibrate(&e, 0.0, 0.0), vec![0.0, 0.0, 0.0]);
    }

    #[test]
    fn isotonic_fit_pools_violators_only() {
        assert_eq!(
            non_increasing_fit(&[0.9, 0.5, 0.7, 0.1]),
            vec![0.9, 0.6, 0.6, 0.1]
        );
        assert_eq!(non_increasing_fit(&[0.9, 0.1, 0.8, 0.8, 0.8]).len(), 5);
        let f = non_increasing_fit(&[0.9, 0.1, 0.8, 0.8, 0.8]);
        assert!(f.windows(2).all(|w| w[0] >= w[1]), "{f:?}");
        assert!(
            (f[1] - 0.625).abs() < 1e-6,
            "one weak result pools with what follows: {f:?}"
        );
        assert!(non_increasing_fit(&[]).is_empty());
    }

    #[test]
    fn dense_scale_clamps() {
        let s = DenseScale::MINILM;
        assert_eq!(s.evidence(-1.0), 0.0);
        assert_eq!(s.evidence(1.0), 1.0);
        assert!(s.evidence(0.4) > 0.0 && s.evidence(0.4) < 1.0);
    }
}
