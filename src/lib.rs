//! # condense
//!
//! Deterministic context compression and retrieval for LLM agents, in Rust, built natively
//! and to WebAssembly (the npm package `condense-ctx`). No LLM, no network, no randomness at
//! run time: the same input and options give the same output on every host.
//!
//! | job | entry point | status |
//! |---|---|---|
//! | prune tool history before a checkpoint | [`watermark::apply_watermark`], [`watermark::apply_watermark_json`] | ready |
//! | check a request against a provider's rules | [`message::validate`] | ready |
//! | compress a conversation (lossless by default, a token budget on request) | [`compress::compress`], [`compress::uncompress`] | ready |
//! | hybrid retrieval with result compression | [`retrieve::index::Index::query`], [`retrieve::results::compress_results`] | ready (MiniLM natively) |
//! | sentence embeddings | [`embed::Embedder`] | lexical everywhere, MiniLM with feature `embed` |
//!
//! ## Example
//!
//! ```
//! use condense::message::{validate, ValidateOptions};
//! use condense::watermark::{apply_watermark, WatermarkOptions, WatermarkState};
//!
//! let messages: Vec<serde_json::Value> = serde_json::from_str(r#"[
//!   {"role": "user", "content": "What's in /var/log?"},
//!   {"role": "assistant", "content": [
//!     {"type": "text", "text": "Let me look."},
//!     {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "/var/log"}}]},
//!   {"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_1", "content": "syslog\nauth.log"},
//!     {"type": "text", "text": "Thanks. New task now."}]},
//!   {"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_2", "name": "mcp__nisaba__deactivate_augments", "input": {}}]},
//!   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "done"}]}
//! ]"#)?;
//!
//! let out = apply_watermark(&messages, &WatermarkState::default(), &WatermarkOptions::default())?;
//! assert_eq!(out.state.watermark.as_deref(), Some("toolu_2"));
//! assert_eq!(out.stats.tool_calls_removed, 1);
//! // The texts stay, the result is still a valid Anthropic request.
//! assert_eq!(out.messages[1]["content"][0]["text"], "Let me look.");
//! assert!(validate(&out.messages, &ValidateOptions::default())?.valid);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Errors and untrusted input
//!
//! Every public function returns `Result<_, Error>`; [`Error`] carries a stable code, the JSON
//! path of the offending field and a reason. Input cannot make the crate panic: malformed
//! messages, options and state are errors; JSON nested deeper than 128 levels is an
//! `invalid_json` error. Unknown message fields and block types pass through untouched.
//!
//! ## Layout
//!
//! - [`message`][]: the provider-neutral message model, format detection, the validator.
//! - [`watermark`][]: `applyWatermark`.
//! - [`text`][]: token estimation and text utilities.
//! - [`compress`][]: `compress` and `uncompress`.
//! - [`embed`][]: the `Embedder` (the lexical fallback always; the WordPiece tokenizer and the
//!   ONNX encoder on tract with feature `embed`).
//! - [`retrieve`][]: chunking, BM25, vectors (exact + HNSW), fusion and calibration, result
//!   compression, the `Index` and its serialized form.
//!
//! ```
//! use condense::embed::Embedder;
//! use condense::retrieve::index::{Document, Index, IndexOptions};
//! use condense::retrieve::options::QueryOptions;
//!
//! let embedder = Embedder::lexical();
//! let mut index = Index::new(&embedder, IndexOptions::default())?;
//! index.add(&[Document::new("keys", "# Keys\n\nRotate API keys with `condense keys rotate`.")],
//!           &embedder, &mut |_| {})?;
//! let out = index.query("how do I rotate the API keys?", &QueryOptions::default(), &embedder)?;
//! assert_eq!(out.results[0].doc_id, "keys");
//! assert!(out.text.starts_with("[1] keys § Keys"));
//! # Ok::<(), condense::Error>(())
//! ```
//! - [`clock`][]: the host clock (the only place time is read).
//! - `wasm` (wasm32 only): the wasm-bindgen boundary; converts and delegates.

#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod clock;
pub mod compress;
pub mod embed;
pub mod error;
pub mod message;
pub mod retrieve;
pub mod text;
pub mod watermark;

#[cfg(all(target_arch = "wasm32", not(feature = "engine-module")))]
mod wasm;
// The engine module (embed-wasm/, feature `engine-module`) has its own exports: of the core
// module's wasm boundary it keeps only the heap (the same allocator in both modules).
#[cfg(all(target_arch = "wasm32", feature = "engine-module"))]
#[path = "wasm/heap.rs"]
mod heap;

pub use error::{Error, ErrorKind};

/// The crate version, as in Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
