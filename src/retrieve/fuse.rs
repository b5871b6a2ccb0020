//! Fusion of the lexical and dense rankings, and the calibration of fused scores.
//!
//! **Order.** Reciprocal Rank Fusion: a chunk's fused value is `Σ wᵢ / (k + rankᵢ)` over the
//! lists it appears in (rank from 1; `k` = `rrfK`, default 60; `wᵢ` = `lexicalWeight`,
//! `denseWeight`). RRF uses ranks only, which makes it robust to the two sides' incomparable
//! score scales, and it is what the reference numbers fuse with.
//!
//! **Scores.** Ranks say nothing absolute (the best chunk of a query about nothing in the corpus
//! is still rank 1), and per-query min-max normalisation would make every query's best result
//! score 1. So the score of a result is calibrated from the evidence itself, on absolute scales:
//!
//! - lexical: `bm25 / (0.5 · bm25_max(query))`, clamped to [0, 1], where `bm25_max` is the
//!   score of an ideal chunk that contains every query term with saturated frequency
//!   (`Σ idf(t)·(k1+1)`, terms absent from the index included): the share of the question's
//!   term weight the chunk matches, full at one half
//!   ([`LEXICAL_SATURATION`](super::index::LEXICAL_SATURATION));
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

use super::index::{compression_pool, LEXICAL_SATURATION};
use super::options::QueryOptions;
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
    // Per list: own rank of each slot, best rank of each group (hash maps: only looked up,
    // their order never reaches the output). The union of the slots, ascending.
    let mut own: Vec<FastMap<u32, usize>> = Vec::with_capacity(lists.len());
    let mut best: Vec<FastMap<u32, usize>> = Vec::with_capacity(lists.len());
    let mut union: Vec<u32> = Vec::new();
    for list in lists {
        let mut o = FastMap::default();
        let mut b = FastMap::default();
        if list.weight > 0.0 {
            o.reserve(list.slots.len());
            b.reserve(list.slots.len());
            for (rank, &slot) in list.slots.iter().enumerate() {
                o.entry(slot).or_insert(rank + 1);
                b.entry(group(slot)).or_insert(rank + 1);
                union.push(slot);
            }
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
            for (i, list) in lists.iter().enumerate() {
                let rank = match own[i].get(&slot) {
                    Some(&r) => {
                        hits += 1;
                        Some(r)
                    }
                    None => best[i].get(&g).copied(),
                };
                if let Some(r) = rank {
                    fused += list.weight / (k + r as f32);
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

/// How `query` fuses a lexical and a dense candidate list: the two weights, the RRF constant,
/// the dense evidence scale and how many fused candidates go on to result compression. The one
/// description of it, used by [`Index::candidates`](super::index::Index::candidates) and by
/// stores that keep the lists elsewhere ([`fuse_lists`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fusion {
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
}

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
            lexical_weight: options.lexical_weight as f32,
            dense_weight: dense_weight as f32,
            rrf_k: options.rrf_k as f32,
            scale: match kind {
                EmbedderKind::MiniLm => DenseScale::MINILM,
                EmbedderKind::Lexical => DenseScale::LEXICAL,
            },
            limit: options.candidates.min(compression_pool(options.top_n)),
        }
    }
}

/// The fused, calibrated ranking of two candidate lists: `lexical` as `(slot, bm25)` and
/// `dense` as `(slot, cosine)`, each best first; `ideal` is the question's ideal BM25 score
/// ([`Bm25::ideal_score`](super::bm25::Bm25::ideal_score)); `group(slot)` is the slot's
/// document. Returns `(slot, score)` best first: document-aware RRF ([`rrf_grouped`]) cut at
/// `fusion.limit`, then the evidence of each side calibrated ([`calibrate`]).
pub fn fuse_lists(
    lexical: &[(u32, f32)],
    ideal: f32,
    dense: &[(u32, f32)],
    group: &dyn Fn(u32) -> u32,
    fusion: &Fusion,
) -> Vec<(u32, f32)> {
    let lex_slots: Vec<u32> = lexical.iter().map(|h| h.0).collect();
    let dense_slots: Vec<u32> = dense.iter().map(|h| h.0).collect();
    let mut fused = rrf_grouped(
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
    );
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
