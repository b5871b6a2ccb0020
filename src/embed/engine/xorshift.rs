//! A deterministic xorshift stream for the bit-identity checks of the kernels (the wasm checks
//! of `super::wasm_kernel`, `super::wasm_quant` and `super::same`; the native tests of
//! `super::quant`; the digests of `super::same`). Test builds and the `test-hooks` feature only.

/// The stream from `seed` (any seed; 0 is made odd).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
