//! A laboratory for the fusion and the lexical side of `query`: builds, for one BEIR-format IR
//! set, the chunks, BM25 and MiniLM vectors exactly as `Index::add` does (one document's title
//! as its first paragraph; vectors cached under `bench/out/lab/`), then runs every query through
//! several rankings in-process and prints nDCG@10 / R@100 for each, one document per result
//! (`maxChunksPerDoc` 1, top 100), as `bench/ir.sh` scores `query`.
//!
//! ```text
//! cargo run --release --example retrieval_lab -- /work/shared/data/ir/cisi [--sentences] [--feedback]
//!     [--adapt | --dense-feedback | --doc-vectors]
//! ```
//!
//! `--feedback` runs only the library rows and the grid of the pseudo-relevance feedback's
//! shares and term counts (`Feedback` rows; the shipped default is `Feedback { orig: 0.2,
//! expanded: 0.1, terms: 10 }`).
//!
//! `--adapt`, `--dense-feedback` and `--doc-vectors` run only the library rows, the shipped
//! default and the variants measured on top of it for issue 32's third round (per-query side
//! weights, expansion-term choice and feedback-chunk weights: `Adapt`, `IdfTerms`, `ScoreFb`;
//! a dense feedback list: `DenseFb`; document vectors on the dense side: `DocVec`).
//!
//! The `Library(..)` rows are the library's `fuse_lists` and reproduce `bench/ir.sh`'s hybrid
//! rows (RRF and the default convex fusion); the other rows are the variants measured for
//! issue 32, each described at [`Spec`] (docs/benchmarks.md, "query", has the table). Run it
//! from the repository root (the cache is `bench/out/lab/`, the model `models/`).
//! `--sentences` also embeds every sentence of every chunk (timed against the chunks'
//! embedding; cached too) for the max-sentence rows.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::time::Instant;

use condense::embed::Embedder;
use condense::retrieve::analyze::{Analyzer, AnalyzerOptions};
use condense::retrieve::bm25::{Bm25, Bm25Params};
use condense::retrieve::chunk::{chunk_document, ChunkOptions};
use condense::retrieve::feedback::expansion_terms;
use condense::retrieve::fuse::{
    convex_grouped, fuse_lists, fuse_with_feedback, Fusion, ScoredList,
};
use condense::retrieve::options::FusionMethod;
use condense::retrieve::vector::dot;
use condense::retrieve::Chunk;

type R = Result<(), String>;

mod common;
use common::{field, read_jsonl};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

/// Vectors of `texts`, cached in `path` (raw little-endian f32, 384 per text).
fn vectors(
    embedder: &Embedder,
    texts: &[String],
    path: &str,
) -> Result<(Vec<Vec<f32>>, f64), String> {
    if let Ok(bytes) = fs::read(path) {
        if bytes.len() == texts.len() * 384 * 4 {
            let v = bytes
                .chunks_exact(384 * 4)
                .map(|c| {
                    c.chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect()
                })
                .collect();
            return Ok((v, f64::NAN));
        }
    }
    let started = Instant::now();
    let mut out = Vec::with_capacity(texts.len());
    for batch in texts.chunks(64) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        for v in embedder.embed(&refs).map_err(|e| e.to_string())? {
            out.push(v.to_vec());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let bytes: Vec<u8> = out.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    fs::write(path, bytes).map_err(|e| format!("{path}: {e}"))?;
    Ok((out, secs))
}

struct Set {
    chunks: Vec<Chunk>,
    doc_of: Vec<u32>,
    doc_ids: Vec<String>,
    chunk_terms: Vec<Vec<String>>,
    bm25: Bm25,
    vecs: Vec<Vec<f32>>,
    /// Per chunk: its sentences' vectors (with `--sentences`).
    sent_vecs: Vec<Vec<Vec<f32>>>,
    qrels: HashMap<String, HashMap<String, f32>>,
}

/// nDCG@10 and R@100 of a document ranking.
fn metrics(set: &Set, qid: &str, docs: &[u32]) -> Option<(f64, f64)> {
    let rel = set.qrels.get(qid)?;
    let mut dcg = 0.0;
    let mut found = 0usize;
    for (i, &d) in docs.iter().take(100).enumerate() {
        let id = &set.doc_ids[d as usize];
        if let Some(&g) = rel.get(id) {
            if i < 10 {
                dcg += f64::from(g) / ((i + 2) as f64).log2();
            }
            found += 1;
        }
    }
    let mut gains: Vec<f64> = rel.values().map(|&g| f64::from(g)).collect();
    gains.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = gains
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, g)| g / ((i + 2) as f64).log2())
        .sum();
    Some((dcg / idcg, found as f64 / rel.len() as f64))
}

/// First chunk of each document, in order, at most 100.
fn per_doc(set: &Set, ranked: &[(u32, f32)]) -> Vec<u32> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for &(slot, _) in ranked {
        let d = set.doc_of[slot as usize];
        if seen.insert(d) {
            out.push(d);
            if out.len() == 100 {
                break;
            }
        }
    }
    out
}

fn dense_search(vecs: &[Vec<f32>], q: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut hits: Vec<(u32, f32)> = vecs
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u32, dot(q, v)))
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits.truncate(k);
    hits
}

/// RM3 expansion: the relevance model of the feedback chunks (`(slot, weight)`), its `n`
/// best terms, interpolated with the original query (`lambda` for the original).
fn rm3(
    set: &Set,
    terms: &[String],
    feedback: &[(u32, f32)],
    n: usize,
    lambda: f32,
) -> Vec<(String, f32)> {
    let mut model: BTreeMap<&str, f32> = BTreeMap::new();
    let wsum: f32 = feedback.iter().map(|f| f.1).sum();
    for &(slot, w) in feedback {
        let ts = &set.chunk_terms[slot as usize];
        let len = ts.len().max(1) as f32;
        for t in ts {
            *model.entry(t.as_str()).or_insert(0.0) += w / wsum / len;
        }
    }
    let mut best: Vec<(&str, f32)> = model.into_iter().collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    best.truncate(n);
    let norm: f32 = best.iter().map(|b| b.1).sum();
    let mut q: BTreeMap<String, f32> = BTreeMap::new();
    for t in terms {
        *q.entry(t.clone()).or_insert(0.0) += lambda / terms.len() as f32;
    }
    for (t, p) in best {
        *q.entry(t.to_string()).or_insert(0.0) += (1.0 - lambda) * p / norm;
    }
    q.into_iter().collect()
}

/// Where RM3's feedback chunks come from.
#[derive(Clone, Copy, Debug)]
enum Fb {
    /// The top of the RRF fusion.
    Rrf,
    /// The top of BM25 alone.
    Bm25,
    /// The top of the lab's convex fusion with this lexical share.
    Cc(f32),
}

/// One ranking to measure.
#[derive(Clone, Copy, Debug)]
enum Spec {
    /// The library's `fuse_lists` with this fusion and no feedback (RRF: the fusion before
    /// issue 32; convex: the default after it, before feedback).
    Library(FusionMethod),
    /// The library's `fuse_with_feedback` (the default of `query`): the shares of the plain
    /// and the expanded BM25 lists (dense the rest) and the number of expansion terms.
    Feedback {
        orig: f32,
        expanded: f32,
        terms: usize,
    },
    /// The lab's convex fusion (no document grouping): lexical share, lexical normalisation
    /// (0 bm25/max, 1 bm25/(0.5·ideal), 3 z-score over the list), dense normalisation (0
    /// min-max over the list, 1 (cos − 0.15)/0.5, 2 cos/max, 3 z-score over the list).
    Cc(f32, u8, u8),
    /// RRF with per-query weights: 0 lexical weight 0.5 + 0.5·(top-10 document overlap);
    /// 1 each side by its top score (bm25/ideal over 0.3, cosine over 0.5); 2 the lexical
    /// weight lowered where the lists disagree and BM25's best is weak.
    Adaptive(u8),
    /// RM3 on the lexical side: `fb` feedback chunks (equal weights), the `n` most probable
    /// terms of their relevance model, `lambda` the original query's share; fused by RRF
    /// (`fuse` None) or the lab's convex fusion with that lexical share.
    Rm3 {
        fb: usize,
        n: usize,
        lambda: f32,
        feedback: Fb,
        fuse: Option<f32>,
    },
    /// Convex fusion of three lists: BM25 (`orig`), BM25 of the RM3-expanded query
    /// (`expanded`, feedback from the convex fusion at 0.25), dense (the rest).
    Three { orig: f32, expanded: f32 },
    /// Rocchio on the query vector: plus `beta` × the mean of the RRF top `m` chunks' vectors.
    Rocchio { m: usize, beta: f32 },
    /// Title terms repeated (`titled[i]`), fused by RRF or the lab's convex fusion.
    Title { i: usize, alpha: Option<f32> },
    /// Dense score = mix · max(chunk, its best sentence) + (1 − mix) · chunk cosine.
    MaxSent { mix: f32, alpha: Option<f32> },
    /// The default fusion with feedback (shares 0.2 / 0.1, 10 terms), each side's weight
    /// multiplied per query by a signal `f` raised to `gamma` (`gamma` 0: the default):
    /// 0 corroboration, `f_l` = share of BM25's top-10 documents in the dense top 100 and
    /// `f_d` the other way round; 1 agreement, `f_l` = top-10 document overlap of the two
    /// lists, `f_d` = 1; 2 sharpness, `f_l` = 1 − bm25₁₀ / bm25₁ and `f_d` = (cos₁ − cos₁₀)
    /// / (cos₁ − cos₁₀₀); 3 lexical coverage, `f_l` = bm25₁ / ideal, `f_d` = 1; 4
    /// disagreement, `f_l` = 1 − overlap (lexical up where the lists disagree); 5 sharpness of
    /// the dense side alone (`f_l` = 1).
    Adapt { signal: u8, gamma: f32 },
    /// The default fusion with feedback whose expansion terms are chosen by p(t|F) · idf(t)^`gamma`
    /// (0: the default relevance model), `weigh` also weighting them so.
    IdfTerms { gamma: f32, weigh: bool },
    /// The default fusion with feedback whose 10 feedback chunks weigh in the relevance model
    /// by their first-fusion value relative to the best, raised to `power` (0: equal weights,
    /// the default), as RM3 weighs feedback documents by their query likelihood.
    ScoreFb { power: f32 },
    /// The default fusion with feedback plus a fourth list, dense feedback: the cosines to the
    /// normalised mean vector of the first fusion's top `m` chunks (plus the question's vector
    /// times `q`), searched over all chunks, with share `w` taken from the dense list's.
    DenseFb { w: f32, m: usize, q: f32 },
    /// The default fusion with feedback, the dense score of a chunk mixed with its document's:
    /// `(1 − beta) · cos(q, chunk) + beta · cos(q, normalised mean of the document's chunk
    /// vectors)` (single-chunk documents unchanged).
    DocVec { beta: f32 },
}

struct Lab<'a> {
    set: &'a Set,
    analyzer: &'a Analyzer,
    qtexts: &'a [String],
    qvecs: &'a [Vec<f32>],
    rrf: Fusion,
    titled: &'a [(usize, Bm25)],
    /// Per document: the normalised mean of its chunks' vectors.
    doc_vecs: &'a [Vec<f32>],
}

const DEPTH: usize = 1000;

/// The shipped default's feedback (BM25 0.2, expanded 0.1, 10 terms).
const DEFAULT_FEEDBACK: Spec = Spec::Feedback {
    orig: 0.2,
    expanded: 0.1,
    terms: 10,
};

/// The first fusion feedback starts from: convex, lexical 0.25 and dense 0.75, by document.
fn first_fusion(
    lex: &[(u32, f32)],
    dense: &[(u32, f32)],
    group: &impl Fn(u32) -> u32,
) -> Vec<(u32, f32)> {
    convex_grouped(
        &[
            ScoredList {
                hits: lex,
                weight: 0.25,
                from_min: false,
            },
            ScoredList {
                hits: dense,
                weight: 0.75,
                from_min: true,
            },
        ],
        group,
    )
}

/// The terms of the feedback chunks `top`.
fn feedback_docs(set: &Set, top: &[u32]) -> Vec<Vec<String>> {
    top.iter()
        .map(|&s| set.chunk_terms[s as usize].clone())
        .collect()
}

/// The expanded BM25 search: the relevance model's `terms` top terms from the feedback chunks
/// `top`, weighted.
fn expanded_search(set: &Set, top: &[u32], terms: usize) -> Vec<(u32, f32)> {
    set.bm25
        .search_weighted(&expansion_terms(&feedback_docs(set, top), terms), DEPTH)
}

impl Lab<'_> {
    /// The shipped default: convex fusion with feedback (BM25 0.2, expanded 0.1, 10 terms).
    fn feedback_fusion(&self) -> Fusion {
        Fusion {
            method: FusionMethod::Convex,
            feedback_terms: 10,
            feedback_lexical: 0.2,
            feedback_expanded: 0.1,
            ..self.rrf
        }
    }

    fn group(&self) -> impl Fn(u32) -> u32 + '_ {
        |s| self.set.doc_of[s as usize]
    }

    fn fuse(
        &self,
        lex: &[(u32, f32)],
        ideal: f32,
        dense: &[(u32, f32)],
        alpha: Option<f32>,
    ) -> Vec<(u32, f32)> {
        match alpha {
            None => fuse_lists(lex, ideal, dense, &[], &self.group(), &self.rrf),
            Some(a) => cc(self.set.doc_of.len(), &[(lex, a, 2), (dense, 1.0 - a, 1)]),
        }
    }

    fn rank(&self, qi: usize, spec: &Spec) -> Vec<(u32, f32)> {
        let set = self.set;
        let terms = self.analyzer.terms(&self.qtexts[qi]);
        let lex = set.bm25.search(&terms, DEPTH);
        let ideal = set.bm25.ideal_score(&terms);
        let q = &self.qvecs[qi];
        let dense = dense_search(&set.vecs, q, DEPTH);
        let n = set.doc_of.len();
        match *spec {
            Spec::Library(method) => {
                let f = Fusion {
                    method,
                    feedback_terms: 0,
                    ..self.rrf
                };
                fuse_lists(&lex, ideal, &dense, &[], &self.group(), &f)
            }
            Spec::Feedback {
                orig,
                expanded,
                terms: nt,
            } => {
                let f = Fusion {
                    method: FusionMethod::Convex,
                    feedback_terms: nt,
                    feedback_lexical: orig,
                    feedback_expanded: expanded,
                    ..self.rrf
                };
                let mut expand = |top: &[u32]| expanded_search(set, top, nt);
                fuse_with_feedback(&lex, ideal, &dense, &self.group(), &f, &mut expand)
            }
            Spec::Adapt { signal, gamma } => {
                let docs = |l: &[(u32, f32)], k: usize| {
                    let mut d: Vec<u32> = Vec::new();
                    for &(s, _) in l {
                        let x = set.doc_of[s as usize];
                        if !d.contains(&x) {
                            d.push(x);
                        }
                        if d.len() == k {
                            break;
                        }
                    }
                    d
                };
                let (l10, d10) = (docs(&lex, 10), docs(&dense, 10));
                let (l100, d100) = (docs(&lex, 100), docs(&dense, 100));
                let eps = 0.05f32;
                let frac = |a: &[u32], b: &[u32]| {
                    a.iter().filter(|x| b.contains(x)).count() as f32 / a.len().max(1) as f32
                };
                let at = |l: &[(u32, f32)], i: usize| l.get(i).or(l.last()).map_or(0.0, |h| h.1);
                let sharp_l = if at(&lex, 0) > 0.0 {
                    1.0 - at(&lex, 9) / at(&lex, 0)
                } else {
                    0.0
                };
                let sharp_d = {
                    let r = at(&dense, 0) - at(&dense, 99);
                    if r > 0.0 {
                        (at(&dense, 0) - at(&dense, 9)) / r
                    } else {
                        0.0
                    }
                };
                let (fl, fd) = match signal {
                    0 => (frac(&l10, &d100) + eps, frac(&d10, &l100) + eps),
                    1 => (frac(&l10, &d10) + eps, 1.0),
                    2 => (sharp_l + eps, sharp_d + eps),
                    3 => (at(&lex, 0) / ideal.max(1e-6) + eps, 1.0),
                    4 => (1.0 - frac(&l10, &d10) + eps, 1.0),
                    _ => (1.0, sharp_d + eps),
                };
                let f = Fusion {
                    lexical_weight: fl.powf(gamma),
                    dense_weight: fd.powf(gamma),
                    ..self.feedback_fusion()
                };
                let mut expand = |top: &[u32]| expanded_search(set, top, 10);
                fuse_with_feedback(&lex, ideal, &dense, &self.group(), &f, &mut expand)
            }
            Spec::IdfTerms { gamma, weigh } => {
                let f = self.feedback_fusion();
                let mut expand = |top: &[u32]| {
                    let all = expansion_terms(&feedback_docs(set, top), usize::MAX);
                    let mut scored: Vec<(String, f32, f32)> = all
                        .into_iter()
                        .map(|(t, p)| {
                            let idf = set.bm25.ideal_score(std::slice::from_ref(&t)).max(1e-6);
                            let w = p * idf.powf(gamma);
                            (t, p, w)
                        })
                        .collect();
                    scored.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
                    scored.truncate(10);
                    let total: f32 = scored.iter().map(|x| if weigh { x.2 } else { x.1 }).sum();
                    let q: Vec<(String, f32)> = scored
                        .into_iter()
                        .map(|(t, p, w)| (t, if weigh { w } else { p } / total))
                        .collect();
                    set.bm25.search_weighted(&q, DEPTH)
                };
                fuse_with_feedback(&lex, ideal, &dense, &self.group(), &f, &mut expand)
            }
            Spec::DenseFb { w, m, q: qw } => {
                let group = self.group();
                let first = first_fusion(&lex, &dense, &group);
                let top: Vec<u32> = first.iter().take(10).map(|h| h.0).collect();
                let expanded = expanded_search(set, &top, 10);
                let mut c: Vec<f32> = q.iter().map(|x| x * qw).collect();
                for &(s, _) in first.iter().take(m) {
                    for (a, b) in c.iter_mut().zip(&set.vecs[s as usize]) {
                        *a += b / m as f32;
                    }
                }
                let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                c.iter_mut().for_each(|x| *x /= norm);
                let dfb = dense_search(&set.vecs, &c, DEPTH);
                convex_grouped(
                    &[
                        ScoredList {
                            hits: &lex,
                            weight: 0.2,
                            from_min: false,
                        },
                        ScoredList {
                            hits: &expanded,
                            weight: 0.1,
                            from_min: false,
                        },
                        ScoredList {
                            hits: &dense,
                            weight: 0.7 - w,
                            from_min: true,
                        },
                        ScoredList {
                            hits: &dfb,
                            weight: w,
                            from_min: true,
                        },
                    ],
                    &group,
                )
            }
            Spec::DocVec { beta } => {
                let mut d2: Vec<(u32, f32)> = dense
                    .iter()
                    .map(|&(s, c)| {
                        let dv = &self.doc_vecs[set.doc_of[s as usize] as usize];
                        (s, (1.0 - beta) * c + beta * dot(q, dv))
                    })
                    .collect();
                d2.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let f = self.feedback_fusion();
                let mut expand = |top: &[u32]| expanded_search(set, top, 10);
                fuse_with_feedback(&lex, ideal, &d2, &self.group(), &f, &mut expand)
            }
            Spec::ScoreFb { power } => {
                let f = self.feedback_fusion();
                let first = first_fusion(&lex, &dense, &self.group());
                let top = first.first().map_or(1.0, |h| h.1).max(1e-6);
                let fbk: Vec<(u32, f32)> = first
                    .iter()
                    .take(10)
                    .map(|&(s, v)| (s, (v / top).max(0.0).powf(power)))
                    .collect();
                let q: Vec<(String, f32)> = rm3(set, &[], &fbk, 10, 0.0);
                let expanded = set.bm25.search_weighted(&q, DEPTH);
                fuse_lists(&lex, ideal, &dense, &expanded, &self.group(), &f)
            }
            Spec::Cc(alpha, l, d) => {
                let lex: Vec<(u32, f32)> = if l == 1 {
                    lex.iter()
                        .map(|&(s, x)| (s, x / (0.5 * ideal.max(1e-6))))
                        .collect()
                } else {
                    lex
                };
                let dmax = dense.first().map_or(1.0, |h| h.1);
                let floor100 = dense.get(99).map_or(0.15, |h| h.1);
                let dense: Vec<(u32, f32)> = match d {
                    1 => dense.iter().map(|&(s, c)| (s, (c - 0.15) / 0.5)).collect(),
                    4 => dense
                        .iter()
                        .map(|&(s, c)| (s, ((c - 0.15) / (dmax - 0.15)).max(0.0)))
                        .collect(),
                    5 => dense
                        .iter()
                        .map(|&(s, c)| (s, ((c - floor100) / (dmax - floor100)).max(0.0)))
                        .collect(),
                    _ => dense,
                };
                // Modes 1 are already scaled: normalise them as "from 0 by 1" (max-free).
                let mode = |m: u8| match m {
                    0 => 0u8,
                    1 => 4,
                    2 => 2,
                    _ => 3,
                };
                let lmode = if l == 0 { 2 } else { mode(l) };
                let dmode = match d {
                    0 => 1,
                    4 | 5 => 4,
                    _ => mode(d),
                };
                cc(n, &[(&lex, alpha, lmode), (&dense, 1.0 - alpha, dmode)])
            }
            Spec::Adaptive(mode) => {
                let docs = |l: &[(u32, f32)]| {
                    let mut d: Vec<u32> = Vec::new();
                    for &(s, _) in l {
                        let x = set.doc_of[s as usize];
                        if !d.contains(&x) {
                            d.push(x);
                        }
                        if d.len() == 10 {
                            break;
                        }
                    }
                    d
                };
                let (ld, dd) = (docs(&lex), docs(&dense));
                let overlap = ld.iter().filter(|d| dd.contains(d)).count() as f32 / 10.0;
                let lconf = lex.first().map_or(0.0, |h| h.1 / ideal.max(1e-6));
                let dconf = dense.first().map_or(0.0, |h| h.1);
                let (wl, wd) = match mode {
                    0 => (0.5 + 0.5 * overlap, 1.0),
                    1 => (lconf / 0.3, dconf / 0.5),
                    _ => (
                        1.0 - 0.5 * (1.0 - overlap) * (1.0 - lconf / 0.5).max(0.0),
                        1.0,
                    ),
                };
                let f = Fusion {
                    lexical_weight: wl,
                    dense_weight: wd,
                    ..self.rrf
                };
                fuse_lists(&lex, ideal, &dense, &[], &self.group(), &f)
            }
            Spec::Rm3 {
                fb,
                n: nt,
                lambda,
                feedback,
                fuse,
            } => {
                let first = match feedback {
                    Fb::Rrf => self.fuse(&lex, ideal, &dense, None),
                    Fb::Bm25 => lex.clone(),
                    Fb::Cc(a) => self.fuse(&lex, ideal, &dense, Some(a)),
                };
                let fbk: Vec<(u32, f32)> = first.iter().take(fb).map(|&(s, _)| (s, 1.0)).collect();
                let expanded = rm3(set, &terms, &fbk, nt, lambda);
                let lex2 = set.bm25.search_weighted(&expanded, DEPTH);
                self.fuse(&lex2, ideal, &dense, fuse)
            }
            Spec::Three { orig, expanded } => {
                let first = self.fuse(&lex, ideal, &dense, Some(0.25));
                let fbk: Vec<(u32, f32)> = first.iter().take(10).map(|&(s, _)| (s, 1.0)).collect();
                let lex2 = set
                    .bm25
                    .search_weighted(&rm3(set, &terms, &fbk, 10, 0.0), DEPTH);
                cc(
                    n,
                    &[
                        (&lex, orig, 2),
                        (&lex2, expanded, 2),
                        (&dense, 1.0 - orig - expanded, 1),
                    ],
                )
            }
            Spec::Rocchio { m, beta } => {
                let first = self.fuse(&lex, ideal, &dense, None);
                let mut v: Vec<f32> = q.clone();
                for &(s, _) in first.iter().take(m) {
                    for (a, b) in v.iter_mut().zip(&set.vecs[s as usize]) {
                        *a += beta * b / m as f32;
                    }
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                let dense2 = dense_search(&set.vecs, &v, DEPTH);
                self.fuse(&lex, ideal, &dense2, None)
            }
            Spec::Title { i, alpha } => {
                let b = &self.titled[i].1;
                let lex = b.search(&terms, DEPTH);
                let ideal = b.ideal_score(&terms);
                self.fuse(&lex, ideal, &dense, alpha)
            }
            Spec::MaxSent { mix, alpha } => {
                let mut d2: Vec<(u32, f32)> = dense
                    .iter()
                    .map(|&(s, c)| {
                        let best = set.sent_vecs[s as usize]
                            .iter()
                            .map(|v| dot(q, v))
                            .fold(c, f32::max);
                        (s, mix * best + (1.0 - mix) * c)
                    })
                    .collect();
                d2.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                self.fuse(&lex, ideal, &d2, alpha)
            }
        }
    }
}

/// The lab's convex fusion: `Σ weight · norm(score)` per slot over `(list, weight, mode)`;
/// modes: 1 min-max over the list, 2 score/max, 3 z-score over the list, 4 the score as it is.
/// Slots in no list are left out; best first, ties by slot; the top 1000.
/// A list for [`cc`]: `(hits, weight, normalisation mode)`.
type Weighted<'a> = (&'a [(u32, f32)], f32, u8);

fn cc(n: usize, lists: &[Weighted<'_>]) -> Vec<(u32, f32)> {
    let mut sc = vec![0f32; n];
    let mut seen = vec![false; n];
    for &(list, w, mode) in lists {
        let Some(max) = list.first().map(|h| h.1) else {
            continue;
        };
        let min = list.iter().fold(max, |m, h| m.min(h.1));
        let mean = list.iter().map(|h| h.1).sum::<f32>() / list.len() as f32;
        let sd =
            (list.iter().map(|h| (h.1 - mean).powi(2)).sum::<f32>() / list.len() as f32).sqrt();
        for &(s, x) in list {
            let v = match mode {
                1 => (x - min) / (max - min).max(1e-6),
                2 => x / max,
                3 => (x - mean) / sd.max(1e-6),
                _ => x,
            };
            sc[s as usize] += w * v;
            seen[s as usize] = true;
        }
    }
    let mut hits: Vec<(u32, f32)> = (0..n)
        .filter(|&i| seen[i])
        .map(|i| (i as u32, sc[i]))
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits.truncate(DEPTH);
    hits
}

fn run() -> R {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .ok_or(
            "usage: retrieval_lab <set dir> [--sentences] [--feedback] [--adapt | --dense-feedback | --doc-vectors]",
        )?;
    let sentences = args.iter().any(|a| a == "--sentences");
    let name = dir
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("set");
    let cache = "bench/out/lab";
    fs::create_dir_all(cache).map_err(|e| e.to_string())?;
    let embedder = common::minilm()?;
    let analyzer = Analyzer::new(AnalyzerOptions::default());

    let corpus = read_jsonl(&format!("{dir}/corpus.jsonl"))?;
    let queries = read_jsonl(&format!("{dir}/queries.jsonl"))?;
    let mut qrels: HashMap<String, HashMap<String, f32>> = HashMap::new();
    for line in fs::read_to_string(format!("{dir}/qrels.tsv"))
        .map_err(|e| e.to_string())?
        .lines()
        .skip(1)
    {
        let p: Vec<&str> = line.split('\t').collect();
        if p.len() >= 3 {
            let g: f32 = p[2].parse().unwrap_or(0.0);
            if g > 0.0 {
                qrels
                    .entry(p[0].to_string())
                    .or_default()
                    .insert(p[1].to_string(), g);
            }
        }
    }

    let mut chunks = Vec::new();
    let mut doc_of = Vec::new();
    let mut doc_ids = Vec::new();
    for (i, d) in corpus.iter().enumerate() {
        let (id, title, text) = (field(d, "_id"), field(d, "title"), field(d, "text"));
        let full = if title.trim().is_empty() {
            text.to_string()
        } else {
            format!("{}\n\n{}", title.trim(), text)
        };
        let path = Some(title).filter(|t| !t.trim().is_empty());
        for c in chunk_document(id, path, &full, &ChunkOptions::default()) {
            chunks.push(c);
            doc_of.push(i as u32);
        }
        doc_ids.push(id.to_string());
    }
    let mut bm25 = Bm25::new(Bm25Params::default()).map_err(|e| e.to_string())?;
    // What `Index::add` embeds and indexes: header path, then text.
    let texts: Vec<String> = chunks
        .iter()
        .map(|c| {
            if c.header_path.is_empty() {
                c.text.clone()
            } else {
                format!("{}\n{}", c.header_path.join(" > "), c.text)
            }
        })
        .collect();
    let chunk_terms: Vec<Vec<String>> = texts.iter().map(|t| analyzer.terms(t)).collect();
    for t in &chunk_terms {
        bm25.add(t);
    }
    let (vecs, chunk_secs) = vectors(&embedder, &texts, &format!("{cache}/{name}-chunks.f32"))?;
    let mut sent_vecs = Vec::new();
    if sentences {
        let mut all = Vec::new();
        let mut counts = Vec::new();
        for c in &chunks {
            let s = condense::text::sentences::split(&c.text);
            counts.push(s.len());
            all.extend(s.iter().map(|s| c.text[s.span.clone()].to_string()));
        }
        let (v, secs) = vectors(&embedder, &all, &format!("{cache}/{name}-sentences.f32"))?;
        eprintln!(
            "{name}: {} chunks embedded in {chunk_secs:.1} s, {} sentences in {secs:.1} s (NaN: cached)",
            chunks.len(),
            all.len()
        );
        let mut it = v.into_iter();
        for n in counts {
            sent_vecs.push(it.by_ref().take(n).collect());
        }
    }
    let set = Set {
        chunks,
        doc_of,
        doc_ids,
        chunk_terms,
        bm25,
        vecs,
        sent_vecs,
        qrels,
    };
    let qtexts: Vec<String> = queries
        .iter()
        .map(|q| field(q, "text").to_string())
        .collect();
    let (qvecs, _) = vectors(&embedder, &qtexts, &format!("{cache}/{name}-queries.f32"))?;
    let qvecs = &qvecs;

    let options = condense::retrieve::options::QueryOptions::from_json(
        r#"{"minScore":0,"ngramThreshold":1,"similarityThreshold":1,"maxChunksPerDoc":1,"topN":100,"truncate":false}"#,
    )
    .map_err(|e| e.to_string())?;
    let convex = Fusion::new(&options, condense::embed::EmbedderKind::MiniLm);
    let rrf = Fusion {
        method: FusionMethod::Rrf,
        ..convex
    };
    // Title weighting (BM25F-like, by repetition): a title's terms counted `w` times in its
    // document's first chunk (the title is that chunk's first paragraph).
    let titled: Vec<(usize, Bm25)> = [2usize, 3]
        .iter()
        .map(|&w| {
            let mut b = Bm25::new(Bm25Params::default()).map_err(|e| e.to_string())?;
            for (slot, terms) in set.chunk_terms.iter().enumerate() {
                let mut t = terms.clone();
                let c = &set.chunks[slot];
                if let (0, Some(title)) = (c.ordinal, &c.path) {
                    for _ in 1..w {
                        t.extend(analyzer.terms(title));
                    }
                }
                b.add(&t);
            }
            Ok((w, b))
        })
        .collect::<Result<_, String>>()?;

    let dims = set.vecs.first().map_or(0, Vec::len);
    let mut doc_vecs = vec![vec![0f32; dims]; set.doc_ids.len()];
    for (slot, v) in set.vecs.iter().enumerate() {
        for (a, b) in doc_vecs[set.doc_of[slot] as usize].iter_mut().zip(v) {
            *a += b;
        }
    }
    for v in &mut doc_vecs {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|x| *x /= norm);
    }
    let lab = Lab {
        set: &set,
        analyzer: &analyzer,
        qtexts: &qtexts,
        qvecs,

        rrf,
        titled: &titled,
        doc_vecs: &doc_vecs,
    };
    use Spec::*;
    let mut specs = vec![Library(FusionMethod::Rrf), Library(FusionMethod::Convex)];
    // The feedback grid (`--feedback`: only the library rows and this grid).
    let mut grid = Vec::new();
    for terms in [5usize, 10] {
        for orig in [0.15f32, 0.2, 0.25] {
            for expanded in [0.05f32, 0.1, 0.15] {
                grid.push(Feedback {
                    orig,
                    expanded,
                    terms,
                });
            }
        }
    }
    for terms in [3usize, 7, 15, 20] {
        grid.push(Feedback {
            orig: 0.2,
            expanded: 0.1,
            terms,
        });
    }
    let feedback_only = args.iter().any(|a| a == "--feedback");
    for alpha in [0.15f32, 0.2, 0.25, 0.3, 0.4, 0.5] {
        specs.push(Cc(alpha, 0, 0));
    }
    for (alpha, l, d) in [
        (0.25f32, 1u8, 0u8),
        (0.4, 1, 0),
        (0.25, 1, 1),
        (0.5, 1, 1),
        (0.25, 0, 1),
        (0.4, 0, 1),
        (0.25, 0, 2),
        (0.25, 0, 3),
        (0.25, 3, 3),
        (0.4, 3, 3),
    ] {
        specs.push(Cc(alpha, l, d));
    }
    for alpha in [0.25f32, 0.3, 0.4] {
        specs.push(Cc(alpha, 0, 4));
        specs.push(Cc(alpha, 0, 5));
    }
    specs.extend([Adaptive(0), Adaptive(1), Adaptive(2)]);
    for (fb, n, lambda) in [
        (10usize, 10usize, 0.5f32),
        (10, 10, 0.7),
        (10, 20, 0.6),
        (5, 10, 0.5),
        (20, 20, 0.5),
    ] {
        specs.push(Rm3 {
            fb,
            n,
            lambda,
            feedback: Fb::Rrf,
            fuse: None,
        });
    }
    specs.push(Rm3 {
        fb: 10,
        n: 10,
        lambda: 0.5,
        feedback: Fb::Bm25,
        fuse: None,
    });
    for (fb, n, lambda, alpha) in [
        (10usize, 10usize, 0.7f32, 0.25f32),
        (5, 10, 0.7, 0.25),
        (10, 10, 0.5, 0.25),
        (10, 20, 0.7, 0.25),
    ] {
        specs.push(Rm3 {
            fb,
            n,
            lambda,
            feedback: Fb::Cc(alpha),
            fuse: Some(alpha),
        });
        specs.push(Rm3 {
            fb,
            n,
            lambda,
            feedback: Fb::Rrf,
            fuse: Some(alpha),
        });
    }
    for (orig, expanded) in [(0.15f32, 0.1f32), (0.2, 0.1), (0.15, 0.15), (0.25, 0.1)] {
        specs.push(Three { orig, expanded });
    }
    for (m, beta) in [(5usize, 0.5f32), (10, 0.5), (10, 1.0)] {
        specs.push(Rocchio { m, beta });
    }
    for i in 0..titled.len() {
        specs.push(Title { i, alpha: None });
        specs.push(Title {
            i,
            alpha: Some(0.25),
        });
    }
    if sentences {
        for mix in [1.0f32, 0.5, 0.3] {
            specs.push(MaxSent { mix, alpha: None });
            specs.push(MaxSent {
                mix,
                alpha: Some(0.25),
            });
        }
    }

    if feedback_only {
        specs.truncate(2);
    }
    if args.iter().any(|a| a == "--adapt") {
        specs.truncate(2);
        grid.clear();
        specs.push(DEFAULT_FEEDBACK);
        for signal in 0u8..6 {
            for gamma in [0.25f32, 0.5, 1.0] {
                specs.push(Adapt { signal, gamma });
            }
        }
        for gamma in [0.25f32, 0.5, 1.0] {
            specs.push(IdfTerms {
                gamma,
                weigh: false,
            });
            specs.push(IdfTerms { gamma, weigh: true });
        }
        for power in [0.0f32, 1.0, 1.5, 2.0, 3.0, 4.0] {
            specs.push(ScoreFb { power });
        }
    }
    if args.iter().any(|a| a == "--dense-feedback") {
        specs.truncate(2);
        grid.clear();
        specs.push(DEFAULT_FEEDBACK);
        specs.push(DenseFb {
            w: 0.0,
            m: 10,
            q: 0.0,
        });
        for m in [5usize, 10] {
            for w in [0.05f32, 0.1, 0.15, 0.2, 0.3] {
                specs.push(DenseFb { w, m, q: 0.0 });
            }
        }
        for w in [0.1f32, 0.2] {
            specs.push(DenseFb { w, m: 10, q: 1.0 });
        }
    }
    if args.iter().any(|a| a == "--doc-vectors") {
        specs.truncate(2);
        grid.clear();
        specs.push(DEFAULT_FEEDBACK);
        for beta in [0.0f32, 0.25, 0.5, 0.75, 1.0] {
            specs.push(DocVec { beta });
        }
    }
    specs.extend(grid);

    println!("| set | variant | nDCG@10 | R@100 | ms/query |\n|---|---|---|---|---|");
    for spec in &specs {
        let label = format!("{spec:?}");
        let started = Instant::now();
        let (mut n, mut r, mut judged) = (0.0, 0.0, 0);
        for (qi, q) in queries.iter().enumerate() {
            let ranked = lab.rank(qi, spec);
            let docs = per_doc(&set, &ranked);
            if let Some((a, b)) = metrics(&set, field(q, "_id"), &docs) {
                n += a;
                r += b;
                judged += 1;
            }
        }
        let ms = started.elapsed().as_secs_f64() * 1e3 / queries.len() as f64;
        println!(
            "| {name} | {label} | {:.4} | {:.4} | {ms:.2} |",
            n / judged as f64,
            r / judged as f64
        );
    }
    Ok(())
}
