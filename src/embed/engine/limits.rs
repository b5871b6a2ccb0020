//! The shapes one model call may have (a leaf: the embedder's batching and the kernel choice
//! both read it).

/// Padded tokens (texts × longest) one model call holds at most, unless one text alone is longer.
///
/// Larger calls are slower per text once attention's `batch × 12 × seq²` scores and the
/// `batch·seq × 1536` activations outgrow the caches. Measured per text (`bench/embed.rs`
/// with batch sizes 1–32 over 32 texts): natively, 128 tokens ran at 43 texts/s one per call
/// and 29 at 32 per call, 256 tokens 18 and 10; 16 tokens gained up to 8–16 per call (233 →
/// 350–414). In wasm (Node) the same shape, flatter: 128 tokens 14.2–14.6 texts/s up to 8 per
/// call and 11.8 at 32. 256 is near the best of both for every length.
pub(crate) const CALL_TOKENS: usize = 256;
