//! The MiniLM engine behind [`crate::embed::Embedder`]: tract's ONNX runtime (pinned to
//! `=0.23.9`: the rewrites below read and edit its internal graph types) and what condense
//! puts in its plan so that native and wasm builds give the same vectors, fast.
//!
//! - `model`: loads the ONNX bytes into one optimised plan and runs it; calls the rewrites.
//! - `onnx`: the decoded protobuf's int8 weights packed for `quant` and its int8 embedding
//!   table gathered row by row, before tract parses the graph (no f32 copies of the model).
//! - `ops`: reshapes, broadcast arithmetic and masked softmaxes evaluated in place of tract's
//!   slow paths for these shapes (the same values).
//! - `same`: the f32 operators (softmax, erf, sums, norms, attention products) computed the
//!   same way in both builds, so the integer path's roundings agree bit for bit.
//! - `quant` (with the leaf `int8`: the packed data and the portable kernel): the weight
//!   matmuls as integer products; `x86_quant` (AVX-512 VNNI, AVX2) and `wasm_quant` (wasm
//!   SIMD) are their platform kernels.
//! - `kernels` (x86-64): the f32 matmul kernel tract's cost model prefers; `wasm_kernel`:
//!   condense's 8×8 f32 matmul kernel in wasm.
//! - Leaves: `graph` (the one graph-editing primitive), `limits` (the shapes of a model call),
//!   `xorshift` (the checks' random stream).
//!
//! Imports go one way, leaves last: `model` → `onnx`, `ops`, `same`, `quant`, `kernels`,
//! `wasm_kernel`; `onnx` → `quant`, `int8`; `ops` → `same`; `quant` → `x86_quant`, `wasm_quant` → `int8`; everything
//! that edits the graph → `graph`. No module here imports `crate::embed`'s own module
//! (`mod.rs`): what both need (`DIMS`, `MAX_MODEL_TOKENS`) lives in leaves above
//! (`crate::embed::vector`, `crate::embed::tokenizer`). `tests/embed_layout.rs` fails on a
//! cycle. The design: docs/design.md, "Embedding parity".

pub(crate) mod graph;
pub(crate) mod int8;
#[cfg(target_arch = "x86_64")]
pub(crate) mod kernels;
pub(crate) mod limits;
pub(crate) mod model;
pub(crate) mod onnx;
pub(crate) mod ops;
pub(crate) mod quant;
pub(crate) mod same;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) mod wasm_kernel;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) mod wasm_quant;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_quant;
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) mod xorshift;
