//! The integer weight matmul of `super::quant` in wasm, on `i32x4.dot_i16x8_s`.
//!
//! One instruction multiplies 8 pairs of 16-bit integers and adds each pair into one of 4 `i32`
//! lanes: 8 multiply-adds, against 4 for an f32 multiply and add (wasm has no f32 FMA). A tile is 8
//! activation rows by one 8-column weight panel, computed as two 4 × 8 halves: per k pair, the
//! panel's 16 bytes of int8 weights (`quant::Weights` is two bytes in wasm: half the memory of
//! 16-bit weights, which did not stay in cache between calls) widened by
//! `i16x8.extend_{low,high}_i8x16` into two 4-column vectors and, per row, the row's pair broadcast
//! from memory (`v128.load32_splat`) into two dot products: 8 sums, two weight vectors and one
//! broadcast live, within V8's 15 vector registers. The k-loop is its own function
//! (`#[inline(never)]`) over scalar accumulators, and both panels advance per pair (16 and 32
//! bytes) from one induction variable: written with arrays of accumulators inside the tile's loops,
//! V8's code for the same instructions ran at ~25 G multiply-adds/s; this way, ~48 (2026-11-26,
//! Node 20, 512 rows), about what the CPU's `pmaddwd` issue rate allows. Full 4-column groups of
//! the result are stored as one vector (a variable-length copy was a `memcpy` call per row).
//!
//! [`pack`] rounds the activations 8 at a time. Each row's largest magnitude is an integer
//! `i32x4.max` over the bit patterns with the sign cleared: `f32x4.max`'s NaN rules cost V8
//! several instructions on a chain, which made the packer 4× slower.
//!
//! The sums are the exact integer sums of the portable kernel, chunk by chunk, and the f32 steps
//! after them the same operations in the same order, so the results are the same bits (a wasm
//! test compares them on random products, [`check_against_portable`]).
//!
//! `unsafe` code (`#![allow(unsafe_code)]` in this module): SIMD loads through raw pointers
//! into slices whose lengths [`matmul`] checks first.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

use super::int8::{pair, quantize, row_scale, Activations, QuantWeights, CHUNK, COLS, TILE};
#[cfg(feature = "test-hooks")]
use super::int8::{random_product, special_rows};

/// Row panels per block: their activations stay in cache while every weight panel passes.
const BLOCK_PANELS: usize = 8;

/// `out = x · w` (see `super::quant`).
pub(crate) fn matmul(w: &QuantWeights, x: &Activations, out: &mut [f32]) {
    if !w.fits(x, out) {
        w.matmul_portable(x, out);
        return;
    }
    // SAFETY: every pointer `tile` forms stays inside the panels whose lengths are checked above.
    let pairs = w.pairs();
    let row_panels = x.rows.div_ceil(TILE);
    for block in (0..row_panels).step_by(BLOCK_PANELS) {
        let block_end = (block + BLOCK_PANELS).min(row_panels);
        for (b, panel) in w.packed.chunks_exact(pairs * COLS).enumerate() {
            let halves = halves(w, b);
            for rb in block..block_end {
                let rows = &x.packed[rb * pairs * TILE..(rb + 1) * pairs * TILE];
                let sums = unsafe { tile(panel.as_ptr().cast(), rows.as_ptr(), pairs) };
                store(&sums, rb, &halves, w.n, x, out);
            }
        }
    }
}

/// The f32 sums of 8 rows by 8 columns: `t[h * 8 + r]` holds row `r`'s columns `4h..4h + 4`.
///
/// # Safety
/// `w` points to a weight panel of `pairs * 8` two-byte values, `x` to an activation panel of
/// `pairs * 8` values.
#[inline(always)]
unsafe fn tile(w: *const u8, x: *const u32, pairs: usize) -> [v128; 2 * TILE] {
    let mut total = [f32x4_splat(0.0); 2 * TILE];
    let mut start = 0;
    while start < pairs {
        let n = (pairs - start).min(CHUNK / 2);
        for h in 0..2 {
            let acc = half(w.add(start * 2 * COLS), x.add(start * TILE + 4 * h), n);
            for (i, a) in acc.iter().enumerate() {
                let t = &mut total[(i % 2) * TILE + 4 * h + i / 2];
                *t = f32x4_add(*t, f32x4_convert_i32x4(*a));
            }
        }
        start += n;
    }
    total
}

/// The integer sums of 4 rows by 8 columns over `n` pairs (`[r * 2 + c]`: row `r`, columns
/// `4c..4c + 4`): per pair, the weight panel's 16 bytes widened to two vectors of 16-bit
/// pairs, the activation panel 32 bytes, both from one induction variable.
///
/// # Safety
/// `w` points to `n * 16` bytes, `x` to `n * 8` values.
#[inline(never)]
unsafe fn half(w: *const u8, x: *const u32, n: usize) -> [v128; TILE] {
    let z = i32x4_splat(0);
    let (mut c0, mut c1, mut c2, mut c3) = (z, z, z, z);
    let (mut c4, mut c5, mut c6, mut c7) = (z, z, z, z);
    for p in 0..n {
        // SAFETY: the panels hold n × 16 bytes and n × 8 values (see above).
        unsafe {
            let wb = v128_load(w.add(p * 2 * COLS) as *const v128);
            let w0 = i16x8_extend_low_i8x16(wb);
            let w1 = i16x8_extend_high_i8x16(wb);
            let xp = x.add(p * TILE);
            let a = v128_load32_splat(xp);
            c0 = i32x4_add(c0, i32x4_dot_i16x8(a, w0));
            c1 = i32x4_add(c1, i32x4_dot_i16x8(a, w1));
            let a = v128_load32_splat(xp.add(1));
            c2 = i32x4_add(c2, i32x4_dot_i16x8(a, w0));
            c3 = i32x4_add(c3, i32x4_dot_i16x8(a, w1));
            let a = v128_load32_splat(xp.add(2));
            c4 = i32x4_add(c4, i32x4_dot_i16x8(a, w0));
            c5 = i32x4_add(c5, i32x4_dot_i16x8(a, w1));
            let a = v128_load32_splat(xp.add(3));
            c6 = i32x4_add(c6, i32x4_dot_i16x8(a, w0));
            c7 = i32x4_add(c7, i32x4_dot_i16x8(a, w1));
        }
    }
    [c0, c1, c2, c3, c4, c5, c6, c7]
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
            let at = t * n + half.j0;
            if half.cols == 4 {
                let dst: &mut [f32] = &mut out[at..at + 4];
                // SAFETY: `dst` holds the 4 values the store writes.
                unsafe { v128_store(dst.as_mut_ptr() as *mut v128, y) };
                continue;
            }
            let lanes = [
                f32x4_extract_lane::<0>(y),
                f32x4_extract_lane::<1>(y),
                f32x4_extract_lane::<2>(y),
                f32x4_extract_lane::<3>(y),
            ];
            out[at..at + half.cols].copy_from_slice(&lanes[..half.cols]);
        }
    }
}

/// [`Activations::pack`] on wasm SIMD: each row's largest magnitude by `f32x4.max` over
/// `f32x4.abs` (a NaN propagates, so a row with a non-finite value shows as a non-finite
/// maximum, as [`row_scale`] finds it), then 8 values at a time rounded by `f32x4.nearest`
/// (ties to even: the portable [`quantize`]'s integers), converted and narrowed to 16 bits and
/// stored as 4 pairs.
pub(crate) fn pack(x: &[f32], rows: usize, k: usize) -> Activations {
    let pairs = k.div_ceil(2);
    let mut packed = vec![0u32; rows.div_ceil(TILE) * pairs * TILE];
    let mut scales = vec![0f32; rows];
    let whole = k / 8 * 8;
    for (t, row) in x.chunks_exact(k.max(1)).take(rows).enumerate() {
        let (scale, inv) = row_scale_simd(row);
        scales[t] = scale;
        let base = (t / TILE) * pairs * TILE + t % TILE;
        let m = f32x4_splat(inv);
        // The row's pairs `p` sit at `base + p * TILE`.
        let out = &mut packed[base..base + (whole / 2).saturating_sub(1) * TILE + 1];
        for (i, eight) in row[..whole].chunks_exact(8).enumerate() {
            // SAFETY: `eight` holds 8 values.
            let (lo, hi) = unsafe {
                let at = eight.as_ptr() as *const v128;
                (v128_load(at), v128_load(at.add(1)))
            };
            let lo = i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(lo, m)));
            let hi = i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(hi, m)));
            let q = i16x8_narrow_i32x4(lo, hi);
            if let Some(at) = out.get_mut(4 * i * TILE..(4 * i + 3) * TILE + 1) {
                at[0] = u32x4_extract_lane::<0>(q);
                at[TILE] = u32x4_extract_lane::<1>(q);
                at[2 * TILE] = u32x4_extract_lane::<2>(q);
                at[3 * TILE] = u32x4_extract_lane::<3>(q);
            }
        }
        for (j, two) in row[whole..].chunks(2).enumerate() {
            let lo = quantize(two[0], inv);
            let hi = two.get(1).map_or(0, |&v| quantize(v, inv));
            packed[base + (whole / 2 + j) * TILE] = pair(lo, hi);
        }
    }
    Activations {
        rows,
        packed,
        scales,
    }
}

/// [`row_scale`]'s result. The magnitudes' bit patterns order as the magnitudes do (NaN's above
/// infinity's), so the largest is an integer `i32x4.max` over the values with their sign bits
/// cleared: one instruction, where `f32x4.max`'s NaN rules take V8 several. Two accumulators
/// halve the dependency chain.
fn row_scale_simd(row: &[f32]) -> (f32, f32) {
    let magnitude = u32x4_splat(0x7fff_ffff);
    let (mut m0, mut m1) = (u32x4_splat(0), u32x4_splat(0));
    let eights = row.chunks_exact(8);
    let rest = eights.remainder();
    for v in eights {
        // SAFETY: `v` holds 8 values.
        let (a, b) = unsafe {
            let at = v.as_ptr() as *const v128;
            (v128_load(at), v128_load(at.add(1)))
        };
        m0 = i32x4_max(m0, v128_and(a, magnitude));
        m1 = i32x4_max(m1, v128_and(b, magnitude));
    }
    let m = i32x4_max(m0, m1);
    let lanes = [
        i32x4_extract_lane::<0>(m),
        i32x4_extract_lane::<1>(m),
        i32x4_extract_lane::<2>(m),
        i32x4_extract_lane::<3>(m),
    ];
    let bits = lanes
        .into_iter()
        .chain(rest.iter().map(|v| (v.to_bits() & 0x7fff_ffff) as i32))
        .fold(0, i32::max);
    // Non-finite (infinity or NaN bits) gives NaN; otherwise the portable function's divisions.
    row_scale(&[f32::from_bits(bits as u32)])
}

/// Whether two packs hold the same bits.
#[cfg(feature = "test-hooks")]
fn same_pack(simd: &Activations, portable: &Activations) -> Result<(), String> {
    if let Some(i) = (simd.packed.iter().zip(&portable.packed)).position(|(a, b)| a != b) {
        return Err(format!(
            "packed value {i} is {:#x} in SIMD, {:#x} portable",
            simd.packed[i], portable.packed[i]
        ));
    }
    let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
    if simd.packed.len() != portable.packed.len() || bits(&simd.scales) != bits(&portable.scales) {
        return Err("pack sizes or row scales differ".into());
    }
    Ok(())
}

/// Runs `cases` random products (random shapes across chunk and panel edges, a quarter of them
/// at the sums' bound: every weight -128 and every activation at its row's largest magnitude)
/// through [`matmul`] and the portable kernel, and returns the first whose results differ in
/// any bit. The wasm tests call it (through `embed::test_hooks::check_wasm_quant`).
#[cfg(feature = "test-hooks")]
pub(crate) fn check_against_portable(seed: u64, cases: usize) -> Result<(), String> {
    let mut next = super::xorshift::xorshift(seed);
    for case in 0..cases {
        let rows = 1 + (next() % 40) as usize;
        let k = 1 + (next() % 1600) as usize;
        let n = 1 + (next() % 40) as usize;
        let extreme = case % 4 == 3;
        let (q, scales, bias, x) = random_product(&mut next, rows, k, n, extreme);
        let w = QuantWeights::pack(k, n, &q, scales, bias);
        let packed = pack(&x, rows, k);
        same_pack(&packed, &Activations::pack_portable(&x, rows, k))
            .map_err(|e| format!("case {case} (rows {rows}, k {k}): {e}"))?;
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
    // Rows with special values: zeros of both signs, infinities, NaN, ties, extremes.
    for case in 0..cases {
        let rows = 1 + (next() % 20) as usize;
        let k = 1 + (next() % 200) as usize;
        let x = special_rows(&mut next, rows, k, case % 2 == 0);
        same_pack(&pack(&x, rows, k), &Activations::pack_portable(&x, rows, k))
            .map_err(|e| format!("special case {case} (rows {rows}, k {k}): {e}"))?;
    }
    Ok(())
}
