//! The integer weight matmul of `super::quant` in wasm, on `i32x4.dot_i16x8_s`.
//!
//! One instruction multiplies 8 pairs of 16-bit integers and adds each pair into one of 4 `i32`
//! lanes: 8 multiply-adds, against 4 for an f32 multiply and add (wasm has no f32 FMA). A tile
//! is 8 activation rows by one 8-column weight panel, computed as two 8 × 4 halves like
//! `super::wasm_kernel`'s f32 tile: per k pair, one 4-column load of the panel and, per row,
//! the row's pair broadcast from memory (`v128.load32_splat`) into one dot product: 8 sums, one
//! weight vector and one broadcast live, within V8's 15 vector registers. Both panels advance
//! 32 bytes per pair (V8 keeps one induction variable then; `super::wasm_kernel` found unequal
//! strides cost a fifth of the loop's speed). Each [`CHUNK`] of k runs both halves back to
//! back, so the second reads the chunk's panels from L1.
//!
//! The sums are the exact integer sums of the portable kernel, chunk by chunk, and the f32 steps
//! after them the same operations in the same order, so the results are the same bits (a wasm
//! test compares them on random products, [`check_against_portable`]).
//!
//! `unsafe` code (`#![allow(unsafe_code)]` in this module): SIMD loads through raw pointers
//! into slices whose lengths [`matmul`] checks first.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

use super::quant::{random_product, Activations, QuantWeights, CHUNK, COLS, TILE};

/// Row panels per block: their activations stay in cache while every weight panel passes.
const BLOCK_PANELS: usize = 8;

/// `out = x · w` (see `super::quant`).
pub(crate) fn matmul(w: &QuantWeights, x: &Activations, out: &mut [f32]) {
    let pairs = w.pairs();
    let sized = w.packed.len() == w.n.div_ceil(COLS) * pairs * COLS
        && x.packed.len() == x.rows.div_ceil(TILE) * pairs * TILE
        && x.scales.len() == x.rows
        && w.scales.len() == w.n
        && w.bias.len() == w.n
        && out.len() == x.rows * w.n;
    if !sized {
        w.matmul_portable(x, out);
        return;
    }
    // SAFETY: every pointer `tile` forms stays inside the panels whose lengths are checked above.
    let row_panels = x.rows.div_ceil(TILE);
    for block in (0..row_panels).step_by(BLOCK_PANELS) {
        let block_end = (block + BLOCK_PANELS).min(row_panels);
        for (b, panel) in w.packed.chunks_exact(pairs * COLS).enumerate() {
            let halves = halves(w, b);
            for rb in block..block_end {
                let rows = &x.packed[rb * pairs * TILE..(rb + 1) * pairs * TILE];
                let sums = unsafe { tile(panel.as_ptr(), rows.as_ptr(), pairs) };
                store(&sums, rb, &halves, w.n, x, out);
            }
        }
    }
}

/// The f32 sums of 8 rows by 8 columns: `t[h * 8 + r]` holds row `r`'s columns `4h..4h + 4`.
///
/// # Safety
/// `w` and `x` point to panels of `pairs * 8` values.
#[inline(always)]
unsafe fn tile(w: *const u32, x: *const u32, pairs: usize) -> [v128; 2 * TILE] {
    let mut total = [f32x4_splat(0.0); 2 * TILE];
    let mut start = 0;
    while start < pairs {
        let end = (start + CHUNK / 2).min(pairs);
        for h in 0..2 {
            let mut acc = [i32x4_splat(0); TILE];
            let mut p = start;
            while p < end {
                let wv = v128_load(w.add(p * COLS + 4 * h) as *const v128);
                let xp = x.add(p * TILE);
                for (r, acc) in acc.iter_mut().enumerate() {
                    *acc = i32x4_add(*acc, i32x4_dot_i16x8(v128_load32_splat(xp.add(r)), wv));
                }
                p += 1;
            }
            for (t, a) in total[h * TILE..].iter_mut().zip(&acc) {
                *t = f32x4_add(*t, f32x4_convert_i32x4(*a));
            }
        }
        start = end;
    }
    total
}

/// One half (4 columns) of a weight panel as the store reads it: its first column, how many of
/// its columns are valid (0 past `n`), and their scales and biases (zeros past `n`).
struct Half {
    j0: usize,
    cols: usize,
    scales: v128,
    bias: v128,
}

/// The two [`Half`]s of weight panel `b` (built once per panel, not per tile).
fn halves(w: &QuantWeights, b: usize) -> [Half; 2] {
    let half = |h: usize| {
        let j0 = b * COLS + 4 * h;
        let cols = w.n.saturating_sub(j0).min(4);
        let mut s = [0f32; 4];
        let mut c = [0f32; 4];
        if cols > 0 {
            s[..cols].copy_from_slice(&w.scales[j0..j0 + cols]);
            c[..cols].copy_from_slice(&w.bias[j0..j0 + cols]);
        }
        Half {
            j0,
            cols,
            scales: f32x4(s[0], s[1], s[2], s[3]),
            bias: f32x4(c[0], c[1], c[2], c[3]),
        }
    };
    [half(0), half(1)]
}

/// `((sum · r_t) · s) + bias` for the tile's rows into `out` (`n` columns), the valid columns
/// only.
fn store(
    sums: &[v128; 2 * TILE],
    rb: usize,
    halves: &[Half; 2],
    n: usize,
    x: &Activations,
    out: &mut [f32],
) {
    for (h, half) in halves.iter().enumerate() {
        if half.cols == 0 {
            break;
        }
        for r in 0..TILE {
            let t = rb * TILE + r;
            if t >= x.rows {
                break;
            }
            let y = f32x4_add(
                f32x4_mul(
                    f32x4_mul(sums[h * TILE + r], f32x4_splat(x.scales[t])),
                    half.scales,
                ),
                half.bias,
            );
            let lanes = [
                f32x4_extract_lane::<0>(y),
                f32x4_extract_lane::<1>(y),
                f32x4_extract_lane::<2>(y),
                f32x4_extract_lane::<3>(y),
            ];
            let at = t * n + half.j0;
            out[at..at + half.cols].copy_from_slice(&lanes[..half.cols]);
        }
    }
}

/// Runs `cases` random products (random shapes across chunk and panel edges, a quarter of them
/// at the sums' bound: every weight -128 and every activation at its row's largest magnitude)
/// through [`matmul`] and the portable kernel, and returns the first whose results differ in
/// any bit. The wasm tests call it (through `embed::check_wasm_quant`).
pub(crate) fn check_against_portable(seed: u64, cases: usize) -> Result<(), String> {
    let mut next = super::xorshift(seed);
    for case in 0..cases {
        let rows = 1 + (next() % 40) as usize;
        let k = 1 + (next() % 1600) as usize;
        let n = 1 + (next() % 40) as usize;
        let extreme = case % 4 == 3;
        let (q, scales, bias, x) = random_product(&mut next, rows, k, n, extreme);
        let w = QuantWeights::pack(k, n, &q, scales, bias);
        let packed = Activations::pack(&x, rows, k);
        let mut simd = vec![0f32; rows * n];
        let mut portable = vec![0f32; rows * n];
        matmul(&w, &packed, &mut simd);
        w.matmul_portable(&packed, &mut portable);
        let differs = simd
            .iter()
            .zip(&portable)
            .position(|(a, b)| a.to_bits() != b.to_bits());
        if let Some(i) = differs {
            return Err(format!(
                "case {case} (rows {rows}, k {k}, n {n}): value {i} is {} in SIMD, {} portable",
                simd[i], portable[i]
            ));
        }
    }
    Ok(())
}
