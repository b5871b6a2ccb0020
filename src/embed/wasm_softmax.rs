//! The attention's row softmax in the wasm build: tract's wasm `softmax_rows_f32`, its
//! arithmetic unchanged, with its exponential inlined, its constants built once per call and the
//! NaN guard in its last pass.
//!
//! **Why.** tract's routine calls its 4-lane `exp` as a function (`#[inline(never)]`, which V8
//! compiles faster), once per 4 values, and writes its constants as `f32x4_splat(literal)` next
//! to their use: LLVM emits each as `v128.const` at every use, inside the loop, and V8 builds
//! each with a few instructions. Here the `exp` is inlined and the constants are built once,
//! kept opaque to LLVM (`core::hint::black_box`) so that it does not rematerialise them. 12
//! heads × 256 × 256 scores in Node: 1.14 ms of work in tract's routine, 0.87 ms here; the
//! attention's `MaskedSoftmax` went 7.8 → 5.8 ms per 256-token text.
//!
//! **Same bits.** Every value gets the same IEEE operations in the same order as in tract's
//! routine (wasm has no fused or reassociated float arithmetic): the max in the same lane
//! order, the same polynomial, the sum accumulated in the same order, the multiply by
//! `1 / sum`. A wasm test checks this against tract's routine on rows with zeros of both signs,
//! infinities, NaN and the extremes. The NaN guard [`super::ops::MaskedSoftmax`] applies after
//! the softmax (a NaN becomes a constant) runs in the multiply pass: the same select on the
//! same values.
//!
//! `unsafe` only for wasm SIMD loads and stores, inside the rows of a slice.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

/// The constants of tract's 4-lane `exp` (its `softmax_rows_f32::exp_ps`).
struct ExpConsts {
    log2e: v128,
    ln2_hi: v128,
    ln2_lo: v128,
    p: [v128; 6],
    bias: v128,
    max_biased: v128,
    min_biased: v128,
    underflow: v128,
    zero: v128,
}

impl ExpConsts {
    // The literals as tract writes them (clippy would round them to the same f32 values).
    #[allow(clippy::excessive_precision, clippy::approx_constant)]
    fn new() -> ExpConsts {
        // `black_box`: LLVM would otherwise rematerialise each constant at its use in the loop.
        let opaque = core::hint::black_box;
        ExpConsts {
            log2e: opaque(f32x4_splat(1.442_695_04)),
            ln2_hi: opaque(f32x4_splat(0.693_145_75)),
            ln2_lo: opaque(f32x4_splat(1.428_606_8e-6)),
            p: [
                opaque(f32x4_splat(8.297_653_546e-3)),
                opaque(f32x4_splat(4.191_538_191e-2)),
                opaque(f32x4_splat(1.666_757_475e-1)),
                opaque(f32x4_splat(4.999_889_485e-1)),
                opaque(f32x4_splat(9.999_996_920e-1)),
                opaque(f32x4_splat(1.000_000_072)),
            ],
            bias: opaque(i32x4_splat(127)),
            max_biased: opaque(i32x4_splat(254)),
            min_biased: opaque(i32x4_splat(1)),
            underflow: opaque(f32x4_splat(-103.0)),
            zero: opaque(f32x4_splat(0.0)),
        }
    }
}

/// tract's 4-lane `exp` (`softmax_rows_f32::exp_ps`), the same operations in the same order.
#[inline(always)]
fn exp4(x: v128, c: &ExpConsts) -> v128 {
    let kf = f32x4_nearest(f32x4_mul(x, c.log2e));
    let mut r = f32x4_sub(x, f32x4_mul(kf, c.ln2_hi));
    r = f32x4_sub(r, f32x4_mul(kf, c.ln2_lo));
    let mut q = c.p[0];
    for p in &c.p[1..] {
        q = f32x4_add(*p, f32x4_mul(q, r));
    }
    let k = i32x4_trunc_sat_f32x4(kf);
    let biased = i32x4_max(i32x4_min(i32x4_add(k, c.bias), c.max_biased), c.min_biased);
    let scale = i32x4_shl(biased, 23);
    let out = v128_or(f32x4_lt(x, c.underflow), f32x4_gt(x, c.zero));
    v128_bitselect(c.zero, f32x4_mul(q, scale), out)
}

/// Softmax of one row (`len` a non-zero multiple of 4) in place, then each NaN → `nan_to`.
///
/// # Safety
/// `p` points at `len` f32 values this function may read and write.
#[inline(always)]
unsafe fn row(p: *mut f32, len: usize, c: &ExpConsts, nan_to: v128) {
    // SAFETY (every load and store): at offsets below `len`, 4 values each.
    unsafe {
        // tract's `max_pass`: two vectors per step, then the last one; lanes 0, 1, 2, 3.
        let mut acc = f32x4_splat(f32::NEG_INFINITY);
        let mut i = 0;
        while i + 8 <= len {
            acc = f32x4_pmax(acc, v128_load(p.add(i) as *const v128));
            acc = f32x4_pmax(acc, v128_load(p.add(i + 4) as *const v128));
            i += 8;
        }
        if i < len {
            acc = f32x4_pmax(acc, v128_load(p.add(i) as *const v128));
        }
        let max = f32x4_extract_lane::<0>(acc)
            .max(f32x4_extract_lane::<1>(acc))
            .max(f32x4_extract_lane::<2>(acc))
            .max(f32x4_extract_lane::<3>(acc));

        // `exp_sum_pass`: the sum in the same order.
        let vmax = f32x4_splat(max);
        let mut vsum = f32x4_splat(0.0);
        let mut i = 0;
        while i + 8 <= len {
            let y0 = exp4(f32x4_sub(v128_load(p.add(i) as *const v128), vmax), c);
            let y1 = exp4(f32x4_sub(v128_load(p.add(i + 4) as *const v128), vmax), c);
            v128_store(p.add(i) as *mut v128, y0);
            v128_store(p.add(i + 4) as *mut v128, y1);
            vsum = f32x4_add(vsum, y0);
            vsum = f32x4_add(vsum, y1);
            i += 8;
        }
        if i < len {
            let y = exp4(f32x4_sub(v128_load(p.add(i) as *const v128), vmax), c);
            v128_store(p.add(i) as *mut v128, y);
            vsum = f32x4_add(vsum, y);
        }
        let sum = f32x4_extract_lane::<0>(vsum)
            + f32x4_extract_lane::<1>(vsum)
            + f32x4_extract_lane::<2>(vsum)
            + f32x4_extract_lane::<3>(vsum);

        // `scale_pass` by `sum.recip()`, then the NaN guard on each product.
        let scale = f32x4_splat(sum.recip());
        let mut i = 0;
        while i < len {
            let y = f32x4_mul(v128_load(p.add(i) as *const v128), scale);
            let y = v128_bitselect(nan_to, y, f32x4_ne(y, y));
            v128_store(p.add(i) as *mut v128, y);
            i += 4;
        }
    }
}

/// Softmax over each `len`-value row of `rows` in place, as tract's wasm `softmax_rows_f32`,
/// then every NaN replaced by `nan_to`. `len` must be a non-zero multiple of 4 and divide
/// `rows.len()` (else nothing is done and `false` is returned).
pub(crate) fn softmax_rows(rows: &mut [f32], len: usize, nan_to: f32) -> bool {
    if len == 0 || !len.is_multiple_of(4) || !rows.len().is_multiple_of(len) {
        return false;
    }
    let c = ExpConsts::new();
    let nan_to = f32x4_splat(nan_to);
    for r in rows.chunks_exact_mut(len) {
        // SAFETY: `r` holds `len` values.
        unsafe { row(r.as_mut_ptr(), len, &c, nan_to) };
    }
    true
}

/// Values the checks mix into their inputs: zeros of both signs, infinities, NaN, the extremes,
/// the exponential's underflow edge.
const SPECIAL: [f32; 12] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-40,
    -150.0,
    -104.0,
];

/// Runs random rows through [`softmax_rows`] and through tract's `softmax_rows_f32` followed by
/// the NaN select, and returns the first case whose results differ in any bit. Rows mix ordinary
/// scores with zeros of both signs (also at a row's maximum), infinities, NaN and the largest
/// finite values; lengths 4–40 and 256. The wasm tests call it (through
/// `embed::check_wasm_softmax`).
pub(crate) fn check_against_tract(seed: u64, cases: usize) -> Result<(), String> {
    let theirs = tract_linalg::routines::softmax_rows_f32()
        .ok_or("tract has no wasm softmax_rows_f32 here")?;
    let mut next = super::xorshift(seed);
    for case in 0..cases {
        let len = if case % 8 == 0 {
            256
        } else {
            4 * (1 + (next() % 10) as usize)
        };
        let n_rows = 1 + (next() % 5) as usize;
        let special = SPECIAL;
        let values: Vec<f32> = (0..len * n_rows)
            .map(|_| match next() % 16 {
                0 => special[(next() % special.len() as u64) as usize],
                1 => 0.0,
                2 => -0.0,
                // Ordinary scores, wide enough that some underflow against the row's maximum.
                _ => (next() % 400_001) as f32 / 1000.0 - 200.0,
            })
            .collect();
        let nan_to = if case % 2 == 0 { 0.0 } else { -1.5 };
        let mut ours = values.clone();
        if !softmax_rows(&mut ours, len, nan_to) {
            return Err(format!("case {case}: rows of {len} refused"));
        }
        let mut want = values.clone();
        theirs(&mut want, len);
        for v in want.iter_mut() {
            if v.is_nan() {
                *v = nan_to;
            }
        }
        let differ = ours
            .iter()
            .zip(&want)
            .position(|(a, b)| a.to_bits() != b.to_bits());
        if let Some(at) = differ {
            return Err(format!(
                "case {case} (seed {seed}, rows of {len}): value {at} is {} here, {} in tract \
                 (input row {:?})",
                ours[at],
                want[at],
                &values[at / len * len..at / len * len + len],
            ));
        }
    }
    Ok(())
}
