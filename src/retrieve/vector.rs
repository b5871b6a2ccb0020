//! The dense side of the index: unit vectors, an exact scan while a segment is small, HNSW
//! graphs ([`instant_distance`]) for full segments.
//!
//! Every vector gets a **vector id** (`vid`) when it is added, counting up from 0 and never
//! reused. Vector ids are grouped into segments of [`VectorParams::segment_size`]: when a segment
//! is full its HNSW graph is built (inside [`VectorStore::push`], so the caller's progress covers
//! it); the last, unfilled segment is scanned exactly. A search asks every graph and scans the
//! tail, then merges by score (ties by the caller's slot order). Below one segment (32,768
//! vectors by default, see [`VectorParams::segment_size`]) the store is exact.
//!
//! Removal marks vector ids dead; a graph keeps its dead points (searches skip them and ask for
//! more) until more than a quarter of its segment is dead, when the segment's graph is rebuilt
//! from its live vectors. An exact store is therefore bit-for-bit what it would have been had the
//! removed vectors never been added; a graph store is so up to the graph's approximation.
//!
//! **Determinism.** Scores are dot products computed in one fixed order ([`dot`]), the same
//! natively and in wasm. The graphs are built from a fixed seed in a one-thread rayon pool
//! natively (wasm has no threads), so the same inputs give the same graph everywhere.

use std::sync::Arc;

use instant_distance::{Builder, HnswMap, Point, Search};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, ErrorKind};

/// Settings of the dense side (serialised with the index).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VectorParams {
    /// Vectors per segment; a full segment gets an HNSW graph. Default 32,768. Measured with
    /// `bench/query.rs --vectors` on real MiniLM vectors (dev IR sentences, and chunk-like means
    /// of them beyond 14k), 200 held-out sentence queries, shared 2-core machine: at 10k an
    /// exact scan is exact and a 10k graph saved little (ef 64: recall@10 0.983 at 0.75× the
    /// scan's time), so stores stay exact below one segment; at 100k, three graphs of 32,768
    /// plus an exact tail gave recall@10 0.9815 at 0.72× the time of the 100k exact scan
    /// (efConstruction 64, ef 128; ef 64: 0.9605 at 0.39×). The former 131,072 left 100k
    /// stores on the exact scan.
    pub segment_size: u32,
    /// HNSW `efConstruction` (candidate list while linking a point). Default 64.
    pub ef_construction: u32,
    /// HNSW `ef` at search time (at least the number of results asked for). Default 128 (see
    /// `segment_size`). Synthetic high-dimensional vectors (`bench/query.rs` without
    /// `--vectors`, nearly random, a worst case) need far more (ef 600 for ≈ 0.99).
    pub ef_search: u32,
    /// The neighbour-selection heuristic of the HNSW paper (better graphs on clustered data,
    /// much slower builds: 120 vectors/s against 2,175 measured). Default off.
    pub heuristic: bool,
}

impl VectorParams {
    /// The settings an index uses with the lexical embedder when it was given the defaults:
    /// segments of 131,072 (exact below that) and `ef` 600. Hashed n-gram vectors are nearly
    /// random (high intrinsic dimension): graphs of 32,768 needed `ef` 600 for recall@10 ≈ 0.99
    /// and gave 0.88 at 100k in three graphs, and their dense side does not rank by default
    /// (`denseWeight` 0), so building graphs for them would cost `add` time for nothing.
    pub const LEXICAL: VectorParams = VectorParams {
        segment_size: 131_072,
        ef_construction: 64,
        ef_search: 600,
        heuristic: false,
    };
}

impl Default for VectorParams {
    fn default() -> Self {
        VectorParams {
            segment_size: 32_768,
            ef_construction: 64,
            ef_search: 128,
            heuristic: false,
        }
    }
}

/// The seed of every HNSW graph (layer assignment); fixed, so builds are reproducible.
const HNSW_SEED: u64 = 0x636f_6e64_656e_7365; // "condense"

/// A unit vector shared between the flat table and a graph (one copy in memory).
#[derive(Clone, Debug, PartialEq)]
pub struct Unit(Arc<[f32]>);

impl Unit {
    /// Wraps a vector (the caller normalises it).
    pub fn new(v: &[f32]) -> Unit {
        Unit(Arc::from(v))
    }

    /// The components.
    pub fn as_slice(&self) -> &[f32] {
        &self.0
    }
}

impl Point for Unit {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(&self.0, &other.0)
    }
}

impl Serialize for Unit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Unit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Unit, D::Error> {
        let v = Vec::<f32>::deserialize(d)?;
        Ok(Unit(Arc::from(v)))
    }
}

/// Dot product in one fixed evaluation order (eight running sums, then a fixed tree), so that
/// the result is bit-identical natively and in wasm while the compiler can still use SIMD.
///
/// The eight sums are kept as two groups of four (sums 0-3 and 4-7), each of which maps onto one
/// 128-bit register (SSE, wasm simd128): a plain `[f32; 8]` made the compiler pair sums 0 and 4
/// in one register and shuffle every step. The arithmetic is the same (each sum adds its
/// products in order, no fused multiply-add; then `((s0 + s4) + (s1 + s5)) + ((s2 + s6) +
/// (s3 + s7))`, then the tail), so the results are unchanged.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lo = [0f32; 4];
    let mut hi = [0f32; 4];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for j in 0..4 {
            lo[j] += x[j] * y[j];
        }
        for j in 0..4 {
            hi[j] += x[j + 4] * y[j + 4];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    finish_dot(lo, hi, tail)
}

/// `[dot(q, v[0]), dot(q, v[1]), dot(q, v[2]), dot(q, v[3])]`, bit for bit, in one pass: each
/// of the four runs [`dot`]'s sums in [`dot`]'s order, but the four are interleaved, so the
/// processor overlaps their additions (one `dot` waits on the latency of its two chains of
/// additions, which their fixed order forbids splitting further).
pub fn dot4(q: &[f32], v: [&[f32]; 4]) -> [f32; 4] {
    let n = q.len();
    if v.iter().any(|x| x.len() != n) {
        return v.map(|x| dot(q, x));
    }
    let mut lo = [[0f32; 4]; 4];
    let mut hi = [[0f32; 4]; 4];
    let [mut c0, mut c1, mut c2, mut c3] = v.map(|x| x.chunks_exact(8));
    for y in q.chunks_exact(8) {
        let (Some(x0), Some(x1), Some(x2), Some(x3)) = (c0.next(), c1.next(), c2.next(), c3.next())
        else {
            break;
        };
        for (k, x) in [x0, x1, x2, x3].into_iter().enumerate() {
            for j in 0..4 {
                lo[k][j] += y[j] * x[j];
            }
            for j in 0..4 {
                hi[k][j] += y[j + 4] * x[j + 4];
            }
        }
    }
    let full = n - n % 8;
    let mut out = [0f32; 4];
    for k in 0..4 {
        let mut tail = 0f32;
        for (x, y) in q[full..].iter().zip(&v[k][full..]) {
            tail += x * y;
        }
        out[k] = finish_dot(lo[k], hi[k], tail);
    }
    out
}

/// The fixed tree that ends [`dot`]. Not inlined: inlined, the compiler fits the loop's
/// registers to this tree (lanes 0 and 1 together) and shuffles every step of the loop.
#[inline(never)]
fn finish_dot(lo: [f32; 4], hi: [f32; 4], tail: f32) -> f32 {
    let s = [lo[0] + hi[0], lo[1] + hi[1], lo[2] + hi[2], lo[3] + hi[3]];
    ((s[0] + s[1]) + (s[2] + s[3])) + tail
}

/// One full segment: its graph over the segment's live vectors when it was built.
#[derive(Serialize)]
struct Segment {
    /// The graph; values are vector ids.
    graph: HnswMap<Unit, u32>,
    /// Dead vector ids still in the graph.
    dead_in_graph: u32,
    /// Why the serialised graph was refused ([`VectorStore::check`] reports it); the graph is
    /// then empty.
    #[serde(skip)]
    flaw: Option<&'static str>,
}

/// A graph read from bytes is checked before instant-distance gets it: its search indexes its
/// layers by the neighbour ids it finds in them, so one id out of range panics (a trap in wasm).
/// instant-distance keeps its fields private; [`GraphParts`] is the same serde layout with
/// them open: the bytes are read into it, checked, and only a sound graph is handed on (encoded
/// again and read as the `HnswMap` it is, the same bytes: `graph_parts_round_trip` tests it).
impl<'de> Deserialize<'de> for Segment {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Segment, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            graph: GraphParts,
            dead_in_graph: u32,
        }
        let wire = Wire::deserialize(d)?;
        let refused = |flaw| Segment {
            graph: Builder::default().build(Vec::new(), Vec::new()),
            dead_in_graph: wire.dead_in_graph,
            flaw: Some(flaw),
        };
        if let Err(flaw) = wire.graph.check() {
            return Ok(refused(flaw));
        }
        let graph = postcard::to_allocvec(&wire.graph)
            .ok()
            .and_then(|bytes| postcard::from_bytes::<HnswMap<Unit, u32>>(&bytes).ok());
        Ok(match graph {
            Some(graph) => Segment {
                graph,
                dead_in_graph: wire.dead_in_graph,
                flaw: None,
            },
            None => refused("a graph instant-distance cannot read"),
        })
    }
}

/// instant-distance 0.6's `HnswMap<Unit, u32>` as serde lays it out (field for field: `hnsw`
/// then `values`; `Hnsw` is `ef_search`, `points`, the zero layer's nodes of `2·M` neighbour ids
/// and the upper layers' nodes of `M`; a `PointId` is its `u32`; `u32::MAX` ends a list).
#[derive(Serialize, Deserialize)]
struct GraphParts {
    hnsw: HnswParts,
    values: Vec<u32>,
}

#[derive(Serialize, Deserialize)]
struct HnswParts {
    ef_search: usize,
    points: Vec<Unit>,
    zero: Vec<Ids<64>>,
    layers: Vec<Vec<Ids<32>>>,
}

/// A node's neighbour ids (serialised as a tuple, as instant-distance writes them).
struct Ids<const N: usize>([u32; N]);

impl<const N: usize> Serialize for Ids<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(N)?;
        for id in &self.0 {
            t.serialize_element(id)?;
        }
        t.end()
    }
}

impl<'de, const N: usize> Deserialize<'de> for Ids<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ids<N>, D::Error> {
        struct V<const N: usize>;
        impl<'de, const N: usize> serde::de::Visitor<'de> for V<N> {
            type Value = Ids<N>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "{N} neighbour ids")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Ids<N>, A::Error> {
                let mut ids = [u32::MAX; N];
                for (i, id) in ids.iter_mut().enumerate() {
                    *id = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                Ok(Ids(ids))
            }
        }
        d.deserialize_tuple(N, V::<N>)
    }
}

/// The end of a neighbour list.
const NO_NEIGHBOUR: u32 = u32::MAX;

impl GraphParts {
    /// What instant-distance's search relies on: one value and one zero-layer node per point,
    /// upper layers that are non-empty prefixes of the layer below (the search enters at point 0
    /// and carries a layer's results down), and every neighbour id within its layer.
    fn check(&self) -> Result<(), &'static str> {
        let h = &self.hnsw;
        let n = h.points.len();
        if self.values.len() != n || h.zero.len() != n {
            return Err("a graph whose points, values and nodes disagree");
        }
        if n == 0 {
            return if h.layers.is_empty() {
                Ok(())
            } else {
                Err("an empty graph with layers")
            };
        }
        if h.points
            .iter()
            .any(|p| !p.as_slice().iter().all(|x| x.is_finite()))
        {
            return Err("a graph point with a non-finite component");
        }
        let within = |ids: &[u32], len: usize| {
            ids.iter()
                .all(|&id| id == NO_NEIGHBOUR || (id as usize) < len)
        };
        if !h.zero.iter().all(|node| within(&node.0, n)) {
            return Err("a graph neighbour id out of range");
        }
        let mut below = n;
        for layer in &h.layers {
            if layer.is_empty() || layer.len() > below {
                return Err("a graph layer larger than the one below it, or empty");
            }
            if !layer.iter().all(|node| within(&node.0, layer.len())) {
                return Err("a graph neighbour id out of range");
            }
            below = layer.len();
        }
        Ok(())
    }
}

/// Vectors by vector id, with the graphs of full segments (see the [module docs](self)).
#[derive(Serialize, Deserialize)]
pub struct VectorStore {
    params: VectorParams,
    dims: u32,
    /// Every vector by vector id; `None` once removed.
    vectors: Vec<Option<Unit>>,
    /// Graphs of the full segments, in segment order.
    segments: Vec<Segment>,
}

impl std::fmt::Debug for VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorStore")
            .field("params", &self.params)
            .field("vectors", &self.vectors.len())
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl VectorStore {
    /// An empty store of `dims`-dimensional vectors.
    pub fn new(dims: usize, params: VectorParams) -> Result<VectorStore, Error> {
        if params.segment_size < 64 {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "options.vector.segmentSize",
                "must be at least 64",
            ));
        }
        if params.ef_construction == 0 || params.ef_search == 0 {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "options.vector",
                "efConstruction and efSearch must be at least 1",
            ));
        }
        Ok(VectorStore {
            params,
            dims: u32::try_from(dims).unwrap_or(u32::MAX),
            vectors: Vec::new(),
            segments: Vec::new(),
        })
    }

    /// The settings.
    pub fn params(&self) -> VectorParams {
        self.params
    }

    /// Vector ids handed out so far (live and dead).
    pub fn next_vid(&self) -> u32 {
        u32::try_from(self.vectors.len()).unwrap_or(u32::MAX)
    }

    /// Number of HNSW graphs.
    pub fn graphs(&self) -> usize {
        self.segments.len()
    }

    /// The vector of a live vector id.
    pub fn get(&self, vid: u32) -> Option<&[f32]> {
        self.vectors
            .get(vid as usize)
            .and_then(|v| v.as_ref())
            .map(Unit::as_slice)
    }

    /// Appends vectors, returning their vector ids, and builds the graph of every segment that
    /// fills up; `progress(done, total)` is called after each graph (`total` = graphs to build).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for a vector of the wrong length or with a non-finite
    /// component; [`ErrorKind::Internal`] if the build pool cannot start.
    pub fn push(
        &mut self,
        vectors: &[&[f32]],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<u32>, Error> {
        for (i, v) in vectors.iter().enumerate() {
            if v.len() != self.dims as usize {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("vectors[{i}]"),
                    format!("has {} dimensions, the index has {}", v.len(), self.dims),
                ));
            }
            if v.iter().any(|x| !x.is_finite()) {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("vectors[{i}]"),
                    "has a non-finite component",
                ));
            }
        }
        let first = self.vectors.len();
        if first + vectors.len() >= u32::MAX as usize {
            return Err(Error::new(
                ErrorKind::TooLarge,
                "documents",
                "the index holds at most 4,294,967,294 vectors",
            ));
        }
        self.vectors
            .extend(vectors.iter().map(|v| Some(Unit::new(v))));
        let vids = (first..self.vectors.len()).map(|v| v as u32).collect();
        let seg = self.params.segment_size as usize;
        let full = self.vectors.len() / seg;
        let todo = full.saturating_sub(self.segments.len());
        for done in 0..todo {
            let s = self.segments.len();
            let graph = self.build_graph(s)?;
            self.segments.push(Segment {
                graph,
                dead_in_graph: 0,
                flaw: None,
            });
            progress(done + 1, todo);
        }
        Ok(vids)
    }

    /// Marks vector ids dead; rebuilds a segment's graph when over a quarter of it is dead.
    ///
    /// # Errors
    /// [`ErrorKind::Internal`] if a rebuild's pool cannot start.
    pub fn remove(&mut self, vids: &[u32]) -> Result<(), Error> {
        let seg = self.params.segment_size as usize;
        let mut touched = std::collections::BTreeSet::new();
        for &vid in vids {
            if let Some(slot) = self.vectors.get_mut(vid as usize) {
                if slot.take().is_some() {
                    let s = vid as usize / seg;
                    if let Some(segment) = self.segments.get_mut(s) {
                        segment.dead_in_graph = segment.dead_in_graph.saturating_add(1);
                        touched.insert(s);
                    }
                }
            }
        }
        for s in touched {
            let dead = self.segments.get(s).map_or(0, |x| x.dead_in_graph) as usize;
            if dead.saturating_mul(4) > seg {
                let graph = self.build_graph(s)?;
                if let Some(segment) = self.segments.get_mut(s) {
                    *segment = Segment {
                        graph,
                        dead_in_graph: 0,
                        flaw: None,
                    };
                }
            }
        }
        Ok(())
    }

    fn build_graph(&self, segment: usize) -> Result<HnswMap<Unit, u32>, Error> {
        let seg = self.params.segment_size as usize;
        let lo = segment * seg;
        let hi = ((segment + 1) * seg).min(self.vectors.len());
        let mut points = Vec::with_capacity(hi.saturating_sub(lo));
        let mut values = Vec::with_capacity(hi.saturating_sub(lo));
        for vid in lo..hi {
            if let Some(Some(v)) = self.vectors.get(vid) {
                points.push(v.clone());
                values.push(vid as u32);
            }
        }
        let builder = Builder::default()
            .ef_construction(self.params.ef_construction as usize)
            .ef_search(self.params.ef_search as usize)
            .select_heuristic(if self.params.heuristic {
                Some(instant_distance::Heuristic::default())
            } else {
                None
            })
            .seed(HNSW_SEED);
        build_single_threaded(move || builder.build(points, values))
    }

    /// The `k` live vectors most similar to `query` among those `accept` admits, as
    /// `(vid, cosine)`, best first; ties by `order(vid)` ascending (the caller's slot order).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        accept: &dyn Fn(u32) -> Option<u32>,
    ) -> Vec<(u32, f32)> {
        if k == 0 || query.len() != self.dims as usize {
            return Vec::new();
        }
        // (score, order, vid)
        let mut hits: Vec<(f32, u32, u32)> = Vec::new();
        let seg = self.params.segment_size as usize;
        let mut search = Search::default();
        let q = Unit::new(query);
        for segment in &self.segments {
            // Ask for enough that dead points cannot crowd out k live ones.
            let want = k.saturating_add(segment.dead_in_graph as usize);
            let mut found = 0;
            for item in segment.graph.search(&q, &mut search) {
                let vid = *item.value;
                if self.get(vid).is_none() {
                    continue;
                }
                if let Some(order) = accept(vid) {
                    hits.push((1.0 - item.distance, order, vid));
                    found += 1;
                }
                if found >= want {
                    break;
                }
            }
        }
        // The exact tail, four vectors at a time ([`dot4`]), one from each quarter of the tail:
        // four sequential streams through memory, which the hardware prefetches (four
        // neighbouring vectors at a time defeated it on stores larger than the cache).
        let tail_start = self.segments.len() * seg;
        let tail = self.vectors.get(tail_start..).unwrap_or_default();
        hits.reserve(tail.len());
        let quarter = tail.len().div_ceil(4).max(1);
        let live = |k: usize| {
            let first = (k * quarter).min(tail.len());
            let last = ((k + 1) * quarter).min(tail.len());
            (tail_start + first..)
                .zip(&tail[first..last])
                .filter_map(|(vid, v)| {
                    let vid = vid as u32;
                    let v = v.as_ref()?;
                    accept(vid).map(|order| (v.as_slice(), order, vid))
                })
        };
        let mut streams = [live(0), live(1), live(2), live(3)];
        loop {
            let [a, b, c, d] = streams.each_mut().map(Iterator::next);
            if let (Some(a), Some(b), Some(c), Some(d)) = (a, b, c, d) {
                let scores = dot4(query, [a.0, b.0, c.0, d.0]);
                for (s, (_, order, vid)) in scores.into_iter().zip([a, b, c, d]) {
                    hits.push((s, order, vid));
                }
                continue;
            }
            for (v, order, vid) in [a, b, c, d].into_iter().flatten() {
                hits.push((dot(query, v), order, vid));
            }
            for stream in &mut streams {
                for (v, order, vid) in stream {
                    hits.push((dot(query, v), order, vid));
                }
            }
            break;
        }
        let by = |a: &(f32, u32, u32), b: &(f32, u32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, by);
            hits.truncate(k);
        }
        hits.sort_by(by);
        hits.into_iter().map(|(s, _, vid)| (vid, s)).collect()
    }

    /// Checks the invariants after deserialisation (so corrupt but well-formed bytes cannot
    /// make a later search index out of bounds).
    pub(crate) fn check(&self) -> Result<(), Error> {
        let bad = |reason: &str| Error::new(ErrorKind::InvalidIndex, "vectors", reason);
        if self.params.segment_size < 64 {
            return Err(bad("segment size below 64"));
        }
        if self.params.ef_construction == 0 || self.params.ef_search == 0 {
            return Err(bad("efConstruction or efSearch of 0"));
        }
        if self.vectors.len() >= u32::MAX as usize {
            return Err(bad("more vector ids than a u32 numbers"));
        }
        if self.segments.len() > self.vectors.len() / self.params.segment_size as usize {
            return Err(bad("more graphs than full segments"));
        }
        for v in self.vectors.iter().flatten() {
            if v.as_slice().len() != self.dims as usize {
                return Err(bad("a vector of the wrong length"));
            }
            if !v.as_slice().iter().all(|x| x.is_finite()) {
                return Err(bad("a vector with a non-finite component"));
            }
        }
        for segment in &self.segments {
            if let Some(flaw) = segment.flaw {
                return Err(bad(flaw));
            }
            let n = segment.graph.iter().count();
            if segment.graph.values.len() != n {
                return Err(bad("a graph whose values do not match its points"));
            }
            if segment
                .graph
                .values
                .iter()
                .any(|&vid| vid as usize >= self.vectors.len())
            {
                return Err(bad("a graph that refers to an unknown vector"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
impl VectorStore {
    /// Points the first neighbour of the first graph's first node out of range, as a crafted
    /// file would (tests build corrupt indexes with it). `false` when there is no graph.
    pub(crate) fn corrupt_a_neighbour(&mut self) -> bool {
        let Some(segment) = self.segments.first_mut() else {
            return false;
        };
        let bytes = postcard::to_allocvec(&segment.graph).unwrap_or_default();
        let Ok(mut parts) = postcard::from_bytes::<GraphParts>(&bytes) else {
            return false;
        };
        let n = parts.hnsw.points.len() as u32;
        match parts.hnsw.zero.first_mut() {
            Some(node) => node.0[0] = n + 7,
            None => return false,
        }
        let bytes = postcard::to_allocvec(&parts).unwrap_or_default();
        match postcard::from_bytes::<HnswMap<Unit, u32>>(&bytes) {
            Ok(graph) => {
                segment.graph = graph;
                true
            }
            Err(_) => false,
        }
    }
}

/// Runs an HNSW build with one thread natively (wasm has none), so graphs are reproducible.
#[cfg(not(target_arch = "wasm32"))]
fn build_single_threaded<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, Error> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Error::new(ErrorKind::Internal, "", format!("thread pool: {e}")))?;
    Ok(pool.install(f))
}

#[cfg(target_arch = "wasm32")]
fn build_single_threaded<T>(f: impl FnOnce() -> T) -> Result<T, Error> {
    Ok(f())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dims: usize) -> Vec<f32> {
        // xorshift: deterministic pseudo-random directions.
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f32> = (0..dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        let n = dot(&v, &v).sqrt();
        v.iter_mut().for_each(|c| *c /= n);
        v
    }

    fn store(n: usize, segment: u32) -> VectorStore {
        let mut s = VectorStore::new(
            16,
            VectorParams {
                segment_size: segment,
                ..VectorParams::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let vs: Vec<Vec<f32>> = (0..n).map(|i| unit(i as u64, 16)).collect();
        let refs: Vec<&[f32]> = vs.iter().map(|v| v.as_slice()).collect();
        s.push(&refs, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{e}"));
        s
    }

    #[test]
    fn dot_matches_a_plain_sum_closely() {
        let a = unit(1, 37);
        let b = unit(2, 37);
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-6);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
    }

    /// `dot` as first written (one `[f32; 8]` of sums): the evaluation order it must keep.
    fn dot_reference(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let mut acc = [0f32; 8];
        let mut ca = a.chunks_exact(8);
        let mut cb = b.chunks_exact(8);
        for (x, y) in (&mut ca).zip(&mut cb) {
            for j in 0..8 {
                acc[j] += x[j] * y[j];
            }
        }
        let mut tail = 0f32;
        for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
            tail += x * y;
        }
        ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
    }

    #[test]
    fn dot_is_bit_identical_to_its_reference_order() {
        for dims in [0usize, 1, 7, 8, 9, 16, 37, 383, 384, 385] {
            for seed in 0..200u64 {
                let a = unit(seed, dims.max(1));
                let b = unit(seed + 1000, dims.max(1));
                let (a, b) = (&a[..dims], &b[..dims]);
                assert_eq!(
                    dot(a, b).to_bits(),
                    dot_reference(a, b).to_bits(),
                    "dims {dims} seed {seed}"
                );
            }
        }
    }

    #[test]
    fn dot4_is_four_dots() {
        for dims in [0usize, 3, 8, 16, 37, 384] {
            for seed in 0..50u64 {
                let q = unit(seed, dims.max(1));
                let vs: Vec<Vec<f32>> = (0..4)
                    .map(|k| unit(seed * 7 + k + 99, dims.max(1)))
                    .collect();
                let q = &q[..dims];
                let v = [
                    &vs[0][..dims],
                    &vs[1][..dims],
                    &vs[2][..dims],
                    &vs[3][..dims],
                ];
                let got = dot4(q, v).map(f32::to_bits);
                assert_eq!(got, v.map(|x| dot_reference(q, x).to_bits()), "dims {dims}");
            }
        }
        // Mismatched lengths fall back to one dot each.
        let (q, a) = (unit(1, 16), unit(2, 16));
        let got = dot4(&q, [&a, &a[..8], &a, &a]);
        assert_eq!(got[1].to_bits(), dot(&q, &a[..8]).to_bits());
    }

    #[test]
    fn exact_scan_equals_a_plain_scan() {
        for n in [0usize, 1, 3, 4, 5, 9, 16, 37, 100] {
            let mut s = store(n, 1024);
            let dead: Vec<u32> = (0..n as u32).filter(|v| v % 7 == 3).collect();
            s.remove(&dead).unwrap_or_else(|e| panic!("{e}"));
            let q = unit(12345, 16);
            // Slots in reverse vector order, and every fifth vector refused.
            let accept = |vid: u32| (vid % 5 != 1).then_some(1000 - vid);
            let mut plain: Vec<(f32, u32, u32)> = (0..n as u32)
                .filter(|v| !dead.contains(v))
                .filter_map(|v| {
                    let order = accept(v)?;
                    Some((dot_reference(&q, s.get(v)?), order, v))
                })
                .collect();
            plain.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for k in [1, 2, 5, n.max(1)] {
                let want: Vec<(u32, u32)> =
                    plain.iter().take(k).map(|h| (h.2, h.0.to_bits())).collect();
                let got: Vec<(u32, u32)> = s
                    .search(&q, k, &accept)
                    .into_iter()
                    .map(|(vid, score)| (vid, score.to_bits()))
                    .collect();
                assert_eq!(got, want, "n {n} k {k}");
            }
        }
    }

    #[test]
    fn exact_search_is_best_first_with_ties_in_order() {
        let s = store(100, 1024);
        let q = unit(7, 16);
        let hits = s.search(&q, 5, &|vid| Some(vid));
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].0, 7);
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    #[test]
    fn graphs_are_built_per_full_segment_and_find_exact_neighbours() {
        let s = store(600, 128);
        assert_eq!(s.graphs(), 4);
        for probe in [3u64, 200, 333, 599] {
            let q = unit(probe, 16);
            let hits = s.search(&q, 1, &|vid| Some(vid));
            assert_eq!(hits.first().map(|h| h.0), Some(probe as u32));
        }
    }

    #[test]
    fn removed_vectors_are_never_returned_and_segments_rebuild() {
        let mut s = store(300, 128);
        let gone: Vec<u32> = (0..60).collect();
        s.remove(&gone).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.segments[0].dead_in_graph, 0, "segment 0 was rebuilt");
        let hits = s.search(&unit(5, 16), 300, &|vid| Some(vid));
        assert_eq!(hits.len(), 240);
        assert!(hits.iter().all(|h| h.0 >= 60));
    }

    #[test]
    fn same_inputs_give_the_same_graph() {
        let a = postcard::to_allocvec(&store(300, 128)).unwrap_or_default();
        let b = postcard::to_allocvec(&store(300, 128)).unwrap_or_default();
        assert!(!a.is_empty());
        assert_eq!(a, b);
    }

    #[test]
    fn graph_parts_round_trip() {
        // The mirror reads instant-distance's bytes and writes them back unchanged.
        let s = store(300, 128);
        for segment in &s.segments {
            let bytes = postcard::to_allocvec(&segment.graph).unwrap_or_default();
            let parts: GraphParts = postcard::from_bytes(&bytes).unwrap_or_else(|e| panic!("{e}"));
            assert!(parts.check().is_ok());
            assert!(!parts.hnsw.layers.is_empty() || parts.hnsw.points.len() < 64);
            assert_eq!(postcard::to_allocvec(&parts).unwrap_or_default(), bytes);
        }
    }

    #[test]
    fn graphs_with_ids_out_of_range_are_refused() {
        let s = store(300, 128);
        let bytes = postcard::to_allocvec(&s.segments[0].graph).unwrap_or_default();
        let parts =
            || -> GraphParts { postcard::from_bytes(&bytes).unwrap_or_else(|e| panic!("{e}")) };
        let n = parts().hnsw.points.len();
        let mut p = parts();
        p.hnsw.zero[5].0[1] = n as u32;
        assert!(p.check().is_err());
        let mut p = parts();
        p.hnsw.zero[5].0[1] = NO_NEIGHBOUR; // the end of a list is fine
        assert!(p.check().is_ok());
        let mut p = parts();
        if let Some(top) = p.hnsw.layers.last_mut() {
            let len = top.len() as u32;
            top[0].0[0] = len;
            assert!(p.check().is_err());
        }
        let mut p = parts();
        p.hnsw.zero.pop();
        assert!(p.check().is_err());
        let mut p = parts();
        p.values.push(0);
        assert!(p.check().is_err());
        let mut p = parts();
        if let Some(layer) = p.hnsw.layers.first_mut() {
            layer.clear();
            assert!(p.check().is_err());
        }
        // Through the store's own decoding: a typed error, never a graph to search.
        let mut s = store(300, 128);
        assert!(s.corrupt_a_neighbour());
        let bytes = postcard::to_allocvec(&s).unwrap_or_default();
        let read: VectorStore = postcard::from_bytes(&bytes).unwrap_or_else(|e| panic!("{e}"));
        let err = read.check().unwrap_err();
        assert_eq!((err.code(), err.path()), ("invalid_index", "vectors"));
    }

    #[test]
    fn accept_filters_and_orders_ties() {
        let mut s = VectorStore::new(2, VectorParams::default()).unwrap_or_else(|e| panic!("{e}"));
        let v = [1.0f32, 0.0];
        s.push(&[&v, &v, &v], &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{e}"));
        // Slot order reversed relative to vid order; vid 1 filtered out.
        let hits = s.search(&v, 3, &|vid| (vid != 1).then_some(10 - vid));
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 0]);
    }
}
