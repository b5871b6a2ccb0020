//! Retrieval: an in-memory hybrid index (BM25 + embeddings) and result compression.
//!
//! The pieces, in the order a query meets them:
//!
//! - `chunk`: documents → [`Chunk`]s (markdown by header hierarchy, 200–1500 characters, code
//!   fences never split; plain text by paragraphs and sentences). Chunk ids are stable.
//! - `analyze` + `bm25`: the lexical side (lower-case, Unicode words, English stop words, Snowball
//!   stemmer; Okapi BM25 over an inverted index).
//! - `vector`: the dense side (exact scan while small, HNSW for large segments).
//! - `fuse`: the fusion of the lexical and dense lists (convex by default, or Reciprocal Rank
//!   Fusion) and the calibration that maps fused ranks to absolute scores; `feedback`: the
//!   pseudo-relevance feedback (RM3-style expansion) whose expanded BM25 list is fused third.
//! - `results`: result compression (docs/design.md, "Result compression"): `minScore` → n-gram
//!   near-duplicates → semantic dedup → `maxChunksPerDoc` → `topN`, query classification,
//!   truncation, formats, stats.

/// One retrievable unit: a piece of a document, as the index stores and ranks it.
///
/// JSON keys are camelCase (`docId`, `headerPath`), as `Index.get` in the npm package declares
/// them; the index file's binary format does not name fields.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    /// Stable id: `{docId}#{ordinal}` (ordinal counts the document's chunks from 0).
    pub id: String,
    /// The document this chunk came from.
    pub doc_id: String,
    /// The document's path (or title), when it has one.
    pub path: Option<String>,
    /// Markdown headers above this chunk, outermost first (`["Configuration", "Authentication"]`).
    pub header_path: Vec<String>,
    /// The chunk's text, as it appears in the document (trimmed).
    pub text: String,
    /// Position of the chunk within its document, from 0.
    pub ordinal: u32,
}

pub mod analyze;
pub mod bm25;
pub mod chunk;
pub mod classify;
pub mod feedback;
pub mod format;
pub mod fuse;
pub mod index;
pub mod options;
pub mod results;
pub mod store;
pub mod vector;
