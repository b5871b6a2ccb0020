//! [`Index`]: documents → chunks → BM25 + vectors, searched by [`Index::query`].
//!
//! An index belongs to one embedder: it records the [`EmbedderIdentity`] that embedded its
//! chunks, and every call that embeds (adding documents, querying) checks that the embedder it
//! is given has the same identity ([`ErrorKind::EmbedderMismatch`] otherwise), so vectors of
//! different models are never compared.
//!
//! Chunks live in *slots* `0..chunks()`, in the order their documents were added (a document's
//! chunks are consecutive). Removing documents renumbers the remaining slots in order; the BM25
//! side and an exact vector store are then bit for bit what they would have been had the removed
//! documents never been added (see [`vector`](super::vector) for graphs).
//!
//! The serialised form ([`Index::serialize`]) is `CNDX`, a little-endian `u32` format version,
//! the postcard encoding of the index, and an FNV-1a 64 checksum of that encoding; anything else
//! is an [`ErrorKind::InvalidIndex`] error from [`Index::deserialize`], never a panic.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::analyze::{Analyzer, AnalyzerOptions, TermCache};
use super::bm25::{Bm25, Bm25Params};
use super::chunk::{chunk_document, ChunkOptions};
use super::feedback::expansion_terms;
use super::fuse::{fuse_with_feedback, Fusion};
use super::options::QueryOptions;
use super::results::{check_query, compress_results, Candidate, QueryResult};
use super::vector::{VectorParams, VectorStore};
use super::Chunk;
use crate::embed::{Embedder, EmbedderIdentity, EmbedderKind};
use crate::{Error, ErrorKind};

/// Largest document text accepted by [`Index::add`] (8 MiB of UTF-8); larger is
/// [`ErrorKind::TooLarge`]. Split bigger files before indexing them.
pub const MAX_DOCUMENT_BYTES: usize = 8 << 20;

/// The most chunks an index holds (1,048,576): [`Index::add`] refuses documents that would pass
/// it ([`ErrorKind::TooLarge`]) and [`Index::deserialize`] refuses bytes that claim more
/// ([`ErrorKind::InvalidIndex`]). In wasm, memory (4 GiB) ends an index of MiniLM vectors
/// earlier, at roughly half a million chunks.
pub const MAX_CHUNKS: usize = 1 << 20;

/// At most this many fused candidates go on to result compression (and to
/// [`Index::candidates`]): ten per requested result (`topN`), at least 50 and at most 200,
/// which leaves room for every dedup and per-document stage while keeping the compression
/// stages (shingles, semantic dedup, token counts) off the long tail of the ranking.
pub const MAX_COMPRESSED_CANDIDATES: usize = 200;

/// How many fused candidates go on to result compression for `top_n` results.
pub fn compression_pool(top_n: usize) -> usize {
    top_n
        .saturating_mul(10)
        .clamp(50, MAX_COMPRESSED_CANDIDATES)
}

/// The share of a question's ideal BM25 score at which lexical evidence is full (1.0). Matching
/// half of what the question says, weighted by idf, is as good as lexical matching gets in
/// practice: on the dev IR sets the best chunk of an in-domain question reaches a median of
/// 0.21 (CISI) and 0.33 (MED) of the ideal, the best chunk of a question from the other set
/// 0.09–0.10 (90th percentile 0.17–0.21). With this factor, 0.3 falls between the two.
pub const LEXICAL_SATURATION: f32 = 0.5;

/// The serialised format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

const MAGIC: &[u8; 4] = b"CNDX";

/// A document to index. In JSON (`Index.add`, the CLI): `{id | _id, path?, title?, text,
/// metadata?}`; a BEIR corpus line is a valid document.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Unique id within the index.
    #[serde(alias = "_id")]
    pub id: String,
    /// Where it came from (shown in results); optional.
    #[serde(default)]
    pub path: Option<String>,
    /// A title, indexed as the first line of the text (BEIR corpora have one).
    #[serde(default)]
    pub title: Option<String>,
    /// The text (markdown or plain).
    pub text: String,
    /// Anything the caller wants back with [`Index::get`]; kept as JSON, not indexed.
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
}

impl Document {
    /// A document with just an id and a text.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Document {
        Document {
            id: id.into(),
            path: None,
            title: None,
            text: text.into(),
            metadata: None,
        }
    }
}

/// What [`Index::get`] returns about a stored document.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentInfo {
    /// The document's id.
    pub id: String,
    /// Its path, if it had one.
    pub path: Option<String>,
    /// Its title, if it had one.
    pub title: Option<String>,
    /// Its metadata, as given.
    pub metadata: Option<serde_json::Value>,
    /// Its chunks, in document order.
    pub chunks: Vec<Chunk>,
}

/// Settings fixed when an index is created (serialised with it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct IndexOptions {
    /// Chunk size bounds.
    pub chunk: ChunkOptions,
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// The lexical analyser's switches.
    pub analyzer: AnalyzerOptions,
    /// The dense side's settings.
    pub vector: VectorParams,
}

impl IndexOptions {
    /// Reads `{chunk?: {minChars?, maxChars?}, bm25?: {k1?, b?}}` (JSON text; unknown keys are
    /// errors naming them), defaults for the rest, validated.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] (or [`ErrorKind::InvalidJson`]) naming the field.
    pub fn from_json(json: &str) -> Result<IndexOptions, Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Input {
            #[serde(default)]
            chunk: Option<ChunkInput>,
            #[serde(default)]
            bm25: Option<Bm25Input>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct ChunkInput {
            min_chars: Option<usize>,
            max_chars: Option<usize>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Bm25Input {
            k1: Option<f32>,
            b: Option<f32>,
        }
        let input: Input = crate::error::read_json(json, ErrorKind::InvalidOptions, "options")?;
        let mut options = IndexOptions::default();
        if let Some(c) = input.chunk {
            options.chunk.min_chars = c.min_chars.unwrap_or(options.chunk.min_chars);
            options.chunk.max_chars = c.max_chars.unwrap_or(options.chunk.max_chars);
        }
        if let Some(b) = input.bm25 {
            options.bm25.k1 = b.k1.unwrap_or(options.bm25.k1);
            options.bm25.b = b.b.unwrap_or(options.bm25.b);
        }
        options
            .chunk
            .validate()
            .map_err(|e| e.with_path_prefix("options.chunk"))?;
        options
            .bm25
            .validate()
            .map_err(|e| e.with_path_prefix("options.bm25"))?;
        Ok(options)
    }
}

/// Progress of a long call: `phase` is `"chunk"`, `"embed"` or `"index"` (graph building).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// What is being done.
    pub phase: &'static str,
    /// Units done in this phase.
    pub done: usize,
    /// Units in this phase.
    pub total: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct DocEntry {
    id: String,
    path: Option<String>,
    title: Option<String>,
    /// JSON text of the metadata (postcard cannot carry a free-form JSON value).
    metadata: Option<String>,
    /// Number of chunks (consecutive slots).
    chunks: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Slot {
    chunk: Chunk,
    vid: u32,
}

/// An in-memory hybrid index (see the [module docs](self)).
#[derive(Debug, Serialize, Deserialize)]
pub struct Index {
    identity: EmbedderIdentity,
    options: IndexOptions,
    docs: Vec<DocEntry>,
    slots: Vec<Slot>,
    bm25: Bm25,
    vectors: VectorStore,
    #[serde(skip)]
    derived: Derived,
}

/// Look-up tables rebuilt from the stored fields.
#[derive(Debug, Default)]
struct Derived {
    /// Document id → position in `docs`.
    doc_pos: BTreeMap<String, usize>,
    /// First slot of each document (parallel to `docs`).
    doc_first_slot: Vec<usize>,
    /// Slot → position of its document in `docs`.
    doc_of_slot: Vec<u32>,
    /// Vector id → slot (`u32::MAX` for removed vectors).
    slot_of_vid: Vec<u32>,
    analyzer: Option<Analyzer>,
}

impl Index {
    /// An empty index for the vectors of `embedder` (`IndexOptions::default()` for the usual
    /// settings).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] for out-of-range settings (the path names the field).
    pub fn new(embedder: &Embedder, options: IndexOptions) -> Result<Index, Error> {
        options
            .chunk
            .validate()
            .map_err(|e| e.with_path_prefix("options.chunk"))?;
        let bm25 = Bm25::new(options.bm25).map_err(|e| e.with_path_prefix("options.bm25"))?;
        // The default vector settings are tuned on MiniLM vectors; the lexical embedder's get
        // their own (see `VectorParams::LEXICAL`).
        let mut options = options;
        if embedder.identity().kind == EmbedderKind::Lexical
            && options.vector == VectorParams::default()
        {
            options.vector = VectorParams::LEXICAL;
        }
        let vectors = VectorStore::new(embedder.dims(), options.vector)?;
        let mut index = Index {
            identity: embedder.identity().clone(),
            options,
            docs: Vec::new(),
            slots: Vec::new(),
            bm25,
            vectors,
            derived: Derived::default(),
        };
        index.rebuild_derived();
        Ok(index)
    }

    /// The embedder identity this index was built with.
    pub fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    /// The settings.
    pub fn options(&self) -> IndexOptions {
        self.options
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Number of chunks.
    pub fn chunks(&self) -> usize {
        self.slots.len()
    }

    /// Number of HNSW graphs (full vector segments).
    pub fn graphs(&self) -> usize {
        self.vectors.graphs()
    }

    /// A stored document, with its chunks; `None` if the id is unknown.
    pub fn get(&self, id: &str) -> Option<DocumentInfo> {
        let &pos = self.derived.doc_pos.get(id)?;
        let doc = self.docs.get(pos)?;
        let first = *self.derived.doc_first_slot.get(pos)?;
        let chunks = self
            .slots
            .get(first..first + doc.chunks as usize)?
            .iter()
            .map(|s| s.chunk.clone())
            .collect();
        Some(DocumentInfo {
            id: doc.id.clone(),
            path: doc.path.clone(),
            title: doc.title.clone(),
            metadata: doc
                .metadata
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok()),
            chunks,
        })
    }

    /// Ids of every document, in the order they were added.
    pub fn ids(&self) -> Vec<&str> {
        self.docs.iter().map(|d| d.id.as_str()).collect()
    }

    fn check_embedder(&self, embedder: &Embedder) -> Result<(), Error> {
        if embedder.identity() != &self.identity {
            return Err(Error::new(
                ErrorKind::EmbedderMismatch,
                "embedder",
                format!(
                    "the index was built by {} and this embedder is {}",
                    describe(&self.identity),
                    describe(embedder.identity())
                ),
            ));
        }
        Ok(())
    }

    /// Chunks, embeds and indexes `documents`, all or nothing: on any error the index is
    /// unchanged. `progress` is called as chunks are embedded and graphs built.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for an empty or duplicate id (`documents[3].id`);
    /// [`ErrorKind::TooLarge`] for a text over [`MAX_DOCUMENT_BYTES`], or documents that would
    /// take the index past [`MAX_CHUNKS`];
    /// [`ErrorKind::EmbedderMismatch`] for an embedder other than the index's.
    pub fn add(
        &mut self,
        documents: &[Document],
        embedder: &Embedder,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<usize, Error> {
        self.check_embedder(embedder)?;
        check_documents(documents, &|id| self.derived.doc_pos.contains_key(id))?;

        // 1. Chunk.
        let total_docs = documents.len();
        let mut chunked: Vec<Vec<Chunk>> = Vec::with_capacity(total_docs);
        for (i, d) in documents.iter().enumerate() {
            chunked.push(chunks_of(d, &self.options.chunk));
            if (i + 1) % 256 == 0 || i + 1 == total_docs {
                progress(Progress {
                    phase: "chunk",
                    done: i + 1,
                    total: total_docs,
                });
            }
        }

        let all: Vec<&Chunk> = chunked.iter().flatten().collect();
        room_for(self.slots.len(), all.len())?;

        // 2. Embed (the expensive part), in batches so progress moves.
        let texts: Vec<String> = all.iter().map(|c| embedding_text(c)).collect();
        let mut vectors: Vec<crate::embed::Vector> = Vec::with_capacity(texts.len());
        const BATCH: usize = 64;
        for (b, batch) in texts.chunks(BATCH).enumerate() {
            let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
            vectors.extend(embedder.embed(&refs)?);
            progress(Progress {
                phase: "embed",
                done: (b * BATCH + batch.len()).min(texts.len()),
                total: texts.len(),
            });
        }

        // 3. Index: vectors first (the only fallible step), then BM25 and the tables.
        let refs: Vec<&[f32]> = vectors.iter().map(|v| v.as_slice()).collect();
        let vids = self.vectors.push(&refs, &mut |done, total| {
            progress(Progress {
                phase: "index",
                done,
                total,
            })
        })?;
        let analyzer = self.analyzer();
        // Each distinct word analysed once for the whole batch (the same terms: TermCache).
        let mut cache = TermCache::default();
        let mut vid_iter = vids.into_iter();
        for (d, chunks) in documents.iter().zip(chunked) {
            let n = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
            for chunk in chunks {
                let terms = analyzer.terms_cached(&lexical_text(&chunk), &mut cache);
                self.bm25.add(&terms);
                let vid = vid_iter.next().unwrap_or(u32::MAX);
                self.slots.push(Slot { chunk, vid });
            }
            self.docs.push(DocEntry {
                id: d.id.clone(),
                path: d.path.clone(),
                title: d.title.clone(),
                metadata: d.metadata.as_ref().map(|m| m.to_string()),
                chunks: n,
            });
        }
        self.rebuild_derived();
        Ok(documents.len())
    }

    /// Removes documents by id; unknown ids are ignored. Returns how many were removed.
    ///
    /// # Errors
    /// [`ErrorKind::Internal`] if rebuilding a vector graph fails to start.
    pub fn remove(&mut self, ids: &[&str]) -> Result<usize, Error> {
        let gone: std::collections::BTreeSet<usize> = ids
            .iter()
            .filter_map(|id| self.derived.doc_pos.get(*id).copied())
            .collect();
        if gone.is_empty() {
            return Ok(0);
        }
        let mut keep_slot = vec![true; self.slots.len()];
        let mut dead_vids = Vec::new();
        for &pos in &gone {
            let first = self.derived.doc_first_slot.get(pos).copied().unwrap_or(0);
            let n = self.docs.get(pos).map_or(0, |d| d.chunks as usize);
            for s in first..first + n {
                if let Some(k) = keep_slot.get_mut(s) {
                    *k = false;
                }
                if let Some(slot) = self.slots.get(s) {
                    dead_vids.push(slot.vid);
                }
            }
        }
        self.vectors.remove(&dead_vids)?;
        self.bm25.retain(&keep_slot);
        let mut k = keep_slot.iter();
        self.slots.retain(|_| k.next().copied().unwrap_or(true));
        let mut pos = 0;
        self.docs.retain(|_| {
            let keep = !gone.contains(&pos);
            pos += 1;
            keep
        });
        self.rebuild_derived();
        Ok(gone.len())
    }

    fn analyzer(&mut self) -> Analyzer {
        self.derived
            .analyzer
            .get_or_insert_with(|| Analyzer::new(self.options.analyzer))
            .clone()
    }

    fn rebuild_derived(&mut self) {
        let mut d = Derived {
            analyzer: self.derived.analyzer.take(),
            ..Derived::default()
        };
        let mut first = 0usize;
        for (pos, doc) in self.docs.iter().enumerate() {
            d.doc_pos.insert(doc.id.clone(), pos);
            d.doc_first_slot.push(first);
            first += doc.chunks as usize;
            d.doc_of_slot
                .extend(std::iter::repeat_n(pos as u32, doc.chunks as usize));
        }
        d.slot_of_vid = vec![u32::MAX; self.vectors.next_vid() as usize];
        for (slot, s) in self.slots.iter().enumerate() {
            if let Some(x) = d.slot_of_vid.get_mut(s.vid as usize) {
                *x = slot as u32;
            }
        }
        self.derived = d;
    }

    /// Ranks chunks for `question` and compresses the results (see the
    /// [`retrieve`](super) module docs for every stage).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for an empty question; [`ErrorKind::InvalidOptions`];
    /// [`ErrorKind::EmbedderMismatch`].
    pub fn query(
        &self,
        question: &str,
        options: &QueryOptions,
        embedder: &Embedder,
    ) -> Result<QueryResult, Error> {
        let candidates = self.candidates(question, options, embedder)?;
        compress_results(candidates, question, options, embedder)
    }

    /// The fused, calibrated ranking before result compression: up to `options.candidates`
    /// chunks, best first, with their vectors.
    ///
    /// # Errors
    /// As [`Index::query`].
    pub fn candidates(
        &self,
        question: &str,
        options: &QueryOptions,
        embedder: &Embedder,
    ) -> Result<Vec<Candidate>, Error> {
        check_query(question, options)?;
        self.check_embedder(embedder)?;
        if self.slots.is_empty() {
            return Ok(Vec::new());
        }
        let k = options.candidates;
        let fusion = Fusion::new(options, self.identity.kind);
        let analyzer = match &self.derived.analyzer {
            Some(a) => a.clone(),
            None => Analyzer::new(self.options.analyzer),
        };

        // Lexical side.
        let mut lexical: Vec<(u32, f32)> = Vec::new();
        let mut ideal = 0f32;
        if fusion.lexical_weight > 0.0 {
            let terms = analyzer.terms(question);
            lexical = self.bm25.search(&terms, k);
            ideal = self.bm25.ideal_score(&terms);
        }
        // Dense side.
        let mut dense: Vec<(u32, f32)> = Vec::new();
        if fusion.dense_weight > 0.0 {
            let q = embedder.embed_one(question)?;
            let slot_of = |vid: u32| {
                self.derived
                    .slot_of_vid
                    .get(vid as usize)
                    .copied()
                    .filter(|&s| s != u32::MAX)
            };
            dense = self
                .vectors
                .search(&q, k, &slot_of)
                .into_iter()
                .filter_map(|(vid, cos)| slot_of(vid).map(|s| (s, cos)))
                .collect();
        }

        let doc_of = |slot: u32| {
            self.derived
                .doc_of_slot
                .get(slot as usize)
                .copied()
                .unwrap_or(u32::MAX)
        };
        // Pseudo-relevance feedback: the first fusion's top chunks, analysed again (a chunk's
        // terms are not kept apart from the postings), give the expanded BM25 query.
        let mut expand = |top: &[u32]| {
            let feedback: Vec<Vec<String>> = top
                .iter()
                .filter_map(|&slot| self.slots.get(slot as usize))
                .map(|s| analyzer.terms(&lexical_text(&s.chunk)))
                .collect();
            let query = expansion_terms(&feedback, fusion.feedback_terms);
            self.bm25.search_weighted(&query, k)
        };
        let fused = fuse_with_feedback(&lexical, ideal, &dense, &doc_of, &fusion, &mut expand);

        let mut out = Vec::with_capacity(fused.len());
        for (slot, score) in fused {
            let Some(s) = self.slots.get(slot as usize) else {
                continue;
            };
            out.push(Candidate {
                chunk_id: s.chunk.id.clone(),
                doc_id: s.chunk.doc_id.clone(),
                path: s.chunk.path.clone(),
                header_path: s.chunk.header_path.clone(),
                score,
                content: s.chunk.text.clone(),
                vector: self.vectors.get(s.vid).map(<[f32]>::to_vec),
            });
        }
        Ok(out)
    }

    /// The index as bytes (see the [module docs](self) for the format).
    ///
    /// # Errors
    /// [`ErrorKind::Internal`] if encoding fails (a bug).
    pub fn serialize(&self) -> Result<Vec<u8>, Error> {
        let body = postcard::to_allocvec(self)
            .map_err(|e| Error::new(ErrorKind::Internal, "", format!("encoding: {e}")))?;
        let mut out = Vec::with_capacity(body.len() + 16);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crate::text::hash::fnv1a(&body).to_le_bytes());
        Ok(out)
    }

    /// Reads bytes written by [`Index::serialize`].
    ///
    /// # Errors
    /// [`ErrorKind::InvalidIndex`] for anything that is not an intact index of this format
    /// version.
    pub fn deserialize(bytes: &[u8]) -> Result<Index, Error> {
        let bad = |reason: String| Error::new(ErrorKind::InvalidIndex, "", reason);
        if bytes.len() < 16 || &bytes[..4] != MAGIC {
            return Err(bad("not a condense index (no CNDX header)".into()));
        }
        let mut v = [0u8; 4];
        v.copy_from_slice(&bytes[4..8]);
        let version = u32::from_le_bytes(v);
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {version}; this build reads version {FORMAT_VERSION}"
            )));
        }
        let (body, sum) = bytes[8..].split_at(bytes.len() - 16);
        let mut s = [0u8; 8];
        s.copy_from_slice(sum);
        if crate::text::hash::fnv1a(body) != u64::from_le_bytes(s) {
            return Err(bad(
                "checksum mismatch: the bytes are corrupt or truncated".into()
            ));
        }
        let mut index: Index =
            postcard::from_bytes(body).map_err(|e| bad(format!("undecodable: {e}")))?;
        index.check()?;
        index.rebuild_derived();
        Ok(index)
    }

    /// Every invariant a later call relies on, checked on bytes before use: valid settings,
    /// counts that agree (summed without overflow), at most [`MAX_CHUNKS`] chunks, unique
    /// document ids, each chunk with its own live vector, a sound BM25 side and sound graphs.
    fn check(&self) -> Result<(), Error> {
        let bad = |reason: &str| Error::new(ErrorKind::InvalidIndex, "", reason.to_string());
        if self.options.chunk.validate().is_err() {
            return Err(bad("chunk settings out of range"));
        }
        if self.options.bm25 != self.bm25.params() {
            return Err(bad("BM25 settings that disagree"));
        }
        if self.options.vector != self.vectors.params() {
            return Err(bad("vector settings that disagree"));
        }
        self.vectors.check()?;
        self.bm25.check()?;
        if self.slots.len() > MAX_CHUNKS {
            return Err(bad("more chunks than an index holds (MAX_CHUNKS)"));
        }
        let chunks = self
            .docs
            .iter()
            .try_fold(0usize, |sum, d| sum.checked_add(d.chunks as usize));
        if chunks != Some(self.slots.len()) || self.bm25.len() != self.slots.len() {
            return Err(bad("document, chunk and BM25 counts disagree"));
        }
        let mut ids = std::collections::BTreeSet::new();
        if !self.docs.iter().all(|d| ids.insert(d.id.as_str())) {
            return Err(bad("a document id twice"));
        }
        let mut used = vec![false; self.vectors.next_vid() as usize];
        for s in &self.slots {
            if self.vectors.get(s.vid).is_none() {
                return Err(bad("a chunk without its vector"));
            }
            match used.get_mut(s.vid as usize) {
                Some(u) if !*u => *u = true,
                _ => return Err(bad("two chunks with one vector")),
            }
        }
        Ok(())
    }
}

/// Whether an index of `chunks` chunks may take `more` ([`MAX_CHUNKS`]).
fn room_for(chunks: usize, more: usize) -> Result<(), Error> {
    let total = chunks.saturating_add(more);
    if total > MAX_CHUNKS {
        return Err(Error::new(
            ErrorKind::TooLarge,
            "documents",
            format!("{more} chunks more would make {total}; an index holds at most {MAX_CHUNKS}"),
        ));
    }
    Ok(())
}

/// Checks a batch of documents before anything is indexed: ids non-empty and unique within the
/// batch and not already stored (`exists`), texts within [`MAX_DOCUMENT_BYTES`]. Errors name
/// the document (`documents[3].id`).
pub(crate) fn check_documents(
    documents: &[Document],
    exists: &dyn Fn(&str) -> bool,
) -> Result<(), Error> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, d) in documents.iter().enumerate() {
        if d.id.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("documents[{i}].id"),
                "must not be empty",
            ));
        }
        if exists(&d.id) || !seen.insert(d.id.as_str()) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("documents[{i}].id"),
                format!("duplicate document id {:?}", d.id),
            ));
        }
        let len = d.text.len() + d.title.as_ref().map_or(0, String::len);
        if len > MAX_DOCUMENT_BYTES {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("documents[{i}].text"),
                format!("{len} bytes; a document holds at most {MAX_DOCUMENT_BYTES} (split it)"),
            ));
        }
    }
    Ok(())
}

/// A document's chunks as an index stores them: the title, when there is one, is the text's
/// first paragraph, and the path (or else the title) is every chunk's `path`.
pub(crate) fn chunks_of(d: &Document, options: &ChunkOptions) -> Vec<Chunk> {
    let text = match &d.title {
        Some(t) if !t.trim().is_empty() => format!("{}\n\n{}", t.trim(), d.text),
        _ => d.text.clone(),
    };
    chunk_document(
        &d.id,
        d.path
            .as_deref()
            .or(d.title.as_deref())
            .filter(|p| !p.trim().is_empty()),
        &text,
        options,
    )
}

/// The text a chunk is embedded as: its header path, then its text.
pub(crate) fn embedding_text(chunk: &Chunk) -> String {
    embedding_text_of(&chunk.header_path, &chunk.text)
}

/// [`embedding_text`] of a chunk's header path and text.
pub(crate) fn embedding_text_of(header_path: &[String], text: &str) -> String {
    if header_path.is_empty() {
        text.to_string()
    } else {
        format!("{}\n{}", header_path.join(" > "), text)
    }
}

/// The text a chunk is indexed as for BM25: path, header path and text.
pub(crate) fn lexical_text(chunk: &Chunk) -> String {
    embedding_text(chunk)
}

fn describe(id: &EmbedderIdentity) -> String {
    match &id.model_sha256 {
        Some(sha) => format!("{} (model sha256 {})", id.kind.as_str(), sha),
        None => format!("the {} embedder v{}", id.kind.as_str(), id.version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index of `n` one-chunk documents on the lexical embedder; with `graph`, segments of
    /// 64 vectors, so 64 documents and more give it an HNSW graph.
    fn index(n: usize, graph: bool) -> (Index, Embedder) {
        let embedder = Embedder::lexical();
        let mut options = IndexOptions::default();
        if graph {
            options.vector.segment_size = 64;
        }
        let mut index = Index::new(&embedder, options).unwrap_or_else(|e| panic!("{e}"));
        let docs: Vec<Document> = (0..n)
            .map(|i| {
                Document::new(
                    format!("d{i}"),
                    format!("Note {i}: the parser reads token {i} and the build error {i}."),
                )
            })
            .collect();
        index
            .add(&docs, &embedder, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        (index, embedder)
    }

    /// Crafted index files, each valid bytes (format, checksum) around one broken invariant
    /// that a later call would trip over: `(file name, bytes)`. Committed in
    /// tests/fixtures/hostile/ for the wasm, npm and CLI tests.
    fn hostile() -> Vec<(&'static str, Vec<u8>)> {
        let serialize = |index: &Index| index.serialize().unwrap_or_else(|e| panic!("{e}"));
        // A graph neighbour id past the graph's points: query panicked in instant-distance
        // (a trap in wasm).
        let (mut neighbour, _) = index(70, true);
        assert_eq!(neighbour.graphs(), 1);
        assert!(neighbour.vectors.corrupt_a_neighbour());
        // Chunk counts 0xFFFFFFFF and 3 over two one-chunk documents: their u32 sum wraps to the
        // 2 chunks there are on wasm32, and rebuilding the tables asked for 4 billion slots.
        let (mut counts, _) = index(2, false);
        counts.docs[0].chunks = u32::MAX;
        counts.docs[1].chunks = 3;
        // A BM25 total length next to u64::MAX: the next add overflowed.
        let (mut total, _) = index(2, false);
        total.bm25.set_total_length(u64::MAX - 1);
        vec![
            ("hnsw-neighbour.cndx", serialize(&neighbour)),
            ("chunk-count-overflow.cndx", serialize(&counts)),
            ("bm25-total-length.cndx", serialize(&total)),
        ]
    }

    #[test]
    fn crafted_indexes_are_refused_on_reading() {
        for (name, bytes) in hostile() {
            let err = Index::deserialize(&bytes).unwrap_err();
            assert_eq!(err.code(), "invalid_index", "{name}: {err}");
        }
    }

    /// The committed files are these bytes (`CONDENSE_WRITE_FIXTURES=1 cargo test --lib
    /// hostile_fixtures` writes them again after a format change).
    #[test]
    fn hostile_fixtures_are_current() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
        for (name, bytes) in hostile() {
            let path = dir.join(name);
            if std::env::var_os("CONDENSE_WRITE_FIXTURES").is_some() {
                std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
                std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
            }
            let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(committed == bytes, "{name} is not what hostile() builds");
        }
    }

    /// The fuzz target `index`'s seed with an HNSW graph (the CLI cannot build one small
    /// enough): a leading 0 byte (the bytes as they are), then a sound 70-document index with
    /// segments of 64. `CONDENSE_WRITE_FIXTURES=1` writes it again after a format change.
    #[test]
    fn fuzz_index_seed_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/seeds/index/graph-file.bin");
        let (index, _) = index(70, true);
        let mut bytes = vec![0u8];
        bytes.extend(index.serialize().unwrap_or_else(|e| panic!("{e}")));
        if std::env::var_os("CONDENSE_WRITE_FIXTURES").is_some() {
            std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            committed == bytes,
            "{} is not what this test builds",
            path.display()
        );
    }

    #[test]
    fn sound_indexes_still_read_and_answer() {
        let (index, embedder) = index(70, true);
        let bytes = index.serialize().unwrap_or_else(|e| panic!("{e}"));
        let read = Index::deserialize(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.serialize().unwrap_or_default(), bytes);
        let options = QueryOptions::from_json(r#"{"denseWeight":1,"minScore":0}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let out = read
            .query("parser token 12", &options, &embedder)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.results.is_empty());
    }

    #[test]
    fn the_chunk_limit_is_a_typed_error() {
        assert!(room_for(MAX_CHUNKS - 3, 3).is_ok());
        let err = room_for(MAX_CHUNKS - 3, 4).unwrap_err();
        assert_eq!((err.code(), err.path()), ("too_large", "documents"));
        assert!(room_for(usize::MAX, usize::MAX).is_err());
    }
}
