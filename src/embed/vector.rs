//! What an embedding is: its dimensions and type (a leaf every embedder module reads).

/// Dimensions of every vector (all-MiniLM-L6-v2's hidden size; the lexical embedder matches it).
pub const DIMS: usize = 384;

/// One embedding: unit length (or all zeros for a text without any word, lexical only).
pub type Vector = [f32; DIMS];
