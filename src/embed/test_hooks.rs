//! Bit-identity checks of the wasm build's kernels, for `tests/wasm.rs` (wasm-bindgen-test).
//!
//! Only with the `test-hooks` feature (`scripts/test` passes it to `wasm-pack test`; the
//! `wasm` test target requires it): neither the shipped crate nor the npm package's modules
//! carry these checks or their inputs. Each returns the first difference it finds, as text for
//! the test's failure message.

use super::engine::{same, wasm_kernel, wasm_quant};

/// Runs `programs` random matmul-kernel programs through the 8×8 f32 kernel the wasm build
/// puts in tract's place and through tract's own, and returns the first whose results differ in
/// any bit (see `src/embed/engine/wasm_kernel.rs`).
pub fn check_wasm_kernel(seed: u64, programs: usize) -> Result<(), String> {
    wasm_kernel::check_against_tract(seed, programs)
}

/// Runs `cases` random rows (special values included) through the attention's row softmax
/// (`src/embed/engine/same.rs`, both builds') and through tract's wasm routine, and returns the
/// first whose results differ in any bit.
pub fn check_wasm_softmax(seed: u64, cases: usize) -> Result<(), String> {
    same::check_against_tract(seed, cases)
}

/// Runs `cases` random integer weight matmuls through the wasm build's SIMD kernel and the
/// portable one, and returns the first whose results differ in any bit (see
/// `src/embed/engine/wasm_quant.rs`).
pub fn check_wasm_quant(seed: u64, cases: usize) -> Result<(), String> {
    wasm_quant::check_against_portable(seed, cases)
}

/// Whether the operators of `src/embed/engine/same.rs` give the bits the native build pins (the
/// digests its native tests check too); the first difference if not.
pub fn check_same_bits() -> Result<(), String> {
    for (what, digest, native) in [
        ("row softmax", same::softmax_digest(), same::SOFTMAX_DIGEST),
        (
            "erf, sum, rms norm and softmax",
            same::norms_digest(),
            same::NORMS_DIGEST,
        ),
    ] {
        if digest != native {
            return Err(format!("{what} digest {digest:#x}, natively {native:#x}"));
        }
    }
    Ok(())
}
