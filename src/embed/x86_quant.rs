//! The integer weight matmul of `super::quant` on x86-64 with AVX-512 VNNI.
//!
//! `vpdpwssd` multiplies 32 pairs of 16-bit integers and adds each pair's sum to one of 16
//! `i32` lanes: 32 multiply-adds per instruction, twice an f32 fused multiply-add on the same
//! register width. A tile is 8 or 16 activation rows by one [`COLS`]-column weight panel: each
//! k pair loads the panel's 16 column pairs once and multiplies them by each row's pair,
//! broadcast from memory, into one register of sums per row (16 independent chains for two
//! row panels, enough to keep the multiply units busy).
//!
//! The sums are the exact integer sums of `super::quant`'s portable kernel, chunk by chunk, and
//! the f32 steps after them are the same operations in the same order, so the results are the
//! same bits (a test compares them on random products).
//!
//! `unsafe` code (`#![allow(unsafe_code)]` in this module): the intrinsics need the CPU features
//! checked at run time ([`matmul`] checks them and falls back to the portable kernel), and the
//! panel loads go through raw pointers into slices whose lengths [`matmul`] checks first.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::quant::{Activations, QuantWeights, CHUNK, COLS, TILE};

/// Whether this CPU runs [`matmul`] (AVX-512 F and VNNI).
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni")
}

/// `out = x · w` (see `super::quant`); `false`, with `out` untouched, if the CPU lacks the
/// features or the operands' sizes disagree.
pub(crate) fn matmul(w: &QuantWeights, x: &Activations, out: &mut [f32]) -> bool {
    let pairs = w.pairs();
    let sized = w.packed.len() == w.n.div_ceil(COLS) * pairs * COLS
        && x.packed.len() == x.rows.div_ceil(TILE) * pairs * TILE
        && x.scales.len() == x.rows
        && w.scales.len() == w.n
        && w.bias.len() == w.n
        && out.len() == x.rows * w.n;
    if !sized || !available() {
        return false;
    }
    // SAFETY: the features are present (checked above), and every pointer `run` forms stays
    // inside the slices whose lengths are checked above.
    unsafe { run(w, x, out) };
    true
}

#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn run(w: &QuantWeights, x: &Activations, out: &mut [f32]) {
    let pairs = w.pairs();
    let row_panels = x.rows.div_ceil(TILE);
    let xs = x.packed.as_ptr();
    // Row panels in blocks whose activations stay in L2 (64 rows × 1536 steps: 192 KB) while
    // every weight panel passes over them.
    for block in (0..row_panels).step_by(BLOCK_PANELS) {
        let block_end = (block + BLOCK_PANELS).min(row_panels);
        for (b, panel) in w.packed.chunks_exact(pairs * COLS).enumerate() {
            let cols = (w.n - b * COLS).min(COLS);
            let mask: __mmask16 = if cols == COLS { !0 } else { (1u16 << cols) - 1 };
            let scales = _mm512_maskz_loadu_ps(mask, w.scales.as_ptr().add(b * COLS));
            let bias = _mm512_maskz_loadu_ps(mask, w.bias.as_ptr().add(b * COLS));
            let mut rb = block;
            while rb < block_end {
                let x0 = xs.add(rb * pairs * TILE);
                if rb + 1 < block_end {
                    let x1 = xs.add((rb + 1) * pairs * TILE);
                    let sums = tile::<16>(panel.as_ptr(), x0, x1, pairs);
                    store(&sums, rb, b, mask, scales, bias, x, w.n, out);
                    rb += 2;
                } else {
                    let sums = tile::<8>(panel.as_ptr(), x0, x0, pairs);
                    store(&sums, rb, b, mask, scales, bias, x, w.n, out);
                    rb += 1;
                }
            }
        }
    }
}

/// Row panels per block (see [`run`]).
const BLOCK_PANELS: usize = 8;

/// The f32 sums of `N` rows (`N` ≤ 16: the first 8 from panel `x0`, the rest from `x1`) by the
/// 16 columns of `w`, chunk by chunk.
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
unsafe fn tile<const N: usize>(
    w: *const u32,
    x0: *const u32,
    x1: *const u32,
    pairs: usize,
) -> [__m512; N] {
    let mut total = [_mm512_setzero_ps(); N];
    let mut start = 0;
    while start < pairs {
        let end = (start + CHUNK / 2).min(pairs);
        let mut acc = [_mm512_setzero_si512(); N];
        for p in start..end {
            let wv = _mm512_loadu_si512(w.add(p * COLS) as *const __m512i);
            for (r, acc) in acc.iter_mut().enumerate() {
                let xp = if r < TILE {
                    x0.add(p * TILE + r)
                } else {
                    x1.add(p * TILE + r - TILE)
                };
                *acc = _mm512_dpwssd_epi32(*acc, _mm512_set1_epi32(*xp as i32), wv);
            }
        }
        for (t, a) in total.iter_mut().zip(&acc) {
            *t = _mm512_add_ps(*t, _mm512_cvtepi32_ps(*a));
        }
        start = end;
    }
    total
}

/// `((sum · r_t) · s) + bias` for the tile's rows into `out`, the valid columns only.
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn store<const N: usize>(
    sums: &[__m512; N],
    rb: usize,
    b: usize,
    mask: __mmask16,
    scales: __m512,
    bias: __m512,
    x: &Activations,
    n: usize,
    out: &mut [f32],
) {
    for (r, sum) in sums.iter().enumerate() {
        let t = rb * TILE + r;
        if t >= x.rows {
            break;
        }
        let row = _mm512_set1_ps(x.scales[t]);
        let y = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(*sum, row), scales), bias);
        _mm512_mask_storeu_ps(out.as_mut_ptr().add(t * n + b * COLS), mask, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_portable_kernel_bit_for_bit() {
        if !available() {
            eprintln!("no AVX-512 VNNI: skipped");
            return;
        }
        let mut next = super::super::xorshift(0x9e37_79b9_7f4a_7c15);
        let cases = [
            (1, 1, 1, false),
            (7, 30, 17, false),
            (8, 384, 16, false),
            (17, 1100, 33, false),
            (40, 1536, 48, false),
            (3, 1536, 16, true),
        ];
        for &(rows, k, n, extreme) in &cases {
            let (q, scales, bias, x) =
                super::super::quant::random_product(&mut next, rows, k, n, extreme);
            let w = QuantWeights::pack(k, n, &q, scales, bias);
            let packed = Activations::pack(&x, rows, k);
            let mut fast = vec![0f32; rows * n];
            let mut portable = vec![0f32; rows * n];
            assert!(matmul(&w, &packed, &mut fast));
            w.matmul_portable(&packed, &mut portable);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&portable), "rows {rows} k {k} n {n}");
        }
    }
}
