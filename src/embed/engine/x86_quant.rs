//! The integer weight matmul of `super::quant` on x86-64: AVX-512 VNNI, or else AVX2.
//!
//! `vpdpwssd` multiplies 32 pairs of 16-bit integers and adds each pair's sum to one of 16
//! `i32` lanes: 32 multiply-adds per instruction, twice an f32 fused multiply-add on the same
//! register width. A tile is 8 or 16 activation rows by one [`COLS`]-column weight panel: each
//! k pair loads the panel's 16 column pairs once and multiplies them by each row's pair,
//! broadcast from memory, into one register of sums per row (16 independent chains for two
//! row panels, enough to keep the multiply units busy).
//!
//! Without VNNI, the AVX2 kernel ([`run_avx2`]) does the same on 256-bit registers with
//! `vpmaddwd` and `vpaddd` (16 multiply-adds per pair of instructions), on tiles of 4 rows by
//! the panel's 16 columns. [`pack`] rounds and packs the activations with the same SIMD width.
//! On this repository's AVX-512 CPU the AVX2 path ran the model about as fast as tract's
//! AVX-512 f32 kernels (128 tokens, batch 32: 51.9 texts/s against ~55); on an AVX2-only CPU
//! tract's f32 kernels are half that width.
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

use super::int8::{row_scale, Activations, QuantWeights, CHUNK, COLS, TILE};

/// Whether this CPU runs [`matmul`] and [`pack`]: AVX-512 F and VNNI, or else AVX2.
pub(crate) fn available() -> bool {
    vnni() || avx2()
}

/// AVX-512 F and VNNI: the 512-bit kernel and packer.
fn vnni() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni")
}

/// AVX2: the 256-bit kernel ([`run_avx2`]) and packer ([`pack_row_avx2`]).
fn avx2() -> bool {
    is_x86_feature_detected!("avx2")
}

/// `out = x · w` (see `super::quant`); `false`, with `out` untouched, if the CPU lacks the
/// features or the operands' sizes disagree.
pub(crate) fn matmul(w: &QuantWeights, x: &Activations, out: &mut [f32]) -> bool {
    matmul_on(w, x, out, Cpu::detect())
}

/// Which of this module's kernels the CPU runs (tests run the AVX2 ones on an AVX-512 CPU).
#[derive(Clone, Copy)]
struct Cpu {
    vnni: bool,
    avx2: bool,
}

impl Cpu {
    fn detect() -> Cpu {
        Cpu {
            vnni: vnni(),
            avx2: avx2(),
        }
    }
}

/// [`matmul`] on the kernel `cpu` selects.
fn matmul_on(w: &QuantWeights, x: &Activations, out: &mut [f32], cpu: Cpu) -> bool {
    if !w.fits(x, out) {
        return false;
    }
    // SAFETY: the features are present (checked here), and every pointer `run` and `run_avx2`
    // form stays inside the slices whose lengths are checked above.
    if cpu.vnni {
        unsafe { run(w, x, out) };
    } else if cpu.avx2 {
        unsafe { run_avx2(w, x, out) };
    } else {
        return false;
    }
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

/// [`quant::pack`](super::quant::pack) on AVX-512 F, 16 values at a time (the last ones
/// masked): each row's largest magnitude by `vmaxps` over `|x|` (non-finite values flagged by
/// an unordered compare, since `vmaxps` drops a NaN), then `x · (32767 / max)` converted to
/// `i32` with embedded round-to-nearest-even (the portable `quantize`'s integers), narrowed
/// with saturation to 16 bits and stored as 8 pairs. A row with a non-finite value stays zeros
/// with a NaN scale, as the portable packer leaves it. `None` if the CPU lacks the features or
/// `x` is short.
pub(crate) fn pack(x: &[f32], rows: usize, k: usize) -> Option<Activations> {
    pack_on(x, rows, k, Cpu::detect())
}

/// [`pack`] on the packer `cpu` selects.
fn pack_on(x: &[f32], rows: usize, k: usize, cpu: Cpu) -> Option<Activations> {
    if k == 0 || x.len() < rows * k || !(cpu.vnni || cpu.avx2) {
        return None;
    }
    let pairs = k.div_ceil(2);
    let mut packed = vec![0u32; rows.div_ceil(TILE) * pairs * TILE];
    let mut scales = vec![0f32; rows];
    for (t, row) in x.chunks_exact(k).take(rows).enumerate() {
        let base = (t / TILE) * pairs * TILE + t % TILE;
        // SAFETY: the features are present (checked above); the packers read `row` through
        // masked loads within its length and write `out` through bounds-checked indexing.
        scales[t] = unsafe {
            if cpu.vnni {
                pack_row(row, &mut packed[base..])
            } else {
                pack_row_avx2(row, &mut packed[base..])
            }
        };
    }
    Some(Activations {
        rows,
        packed,
        scales,
    })
}

/// Rounds one row into `out[p * TILE]` for its pairs `p`; returns its scale.
#[target_feature(enable = "avx512f")]
unsafe fn pack_row(row: &[f32], out: &mut [u32]) -> f32 {
    let lanes = |start: usize| -> __mmask16 {
        let left = row.len() - start;
        if left >= 16 {
            !0
        } else {
            (1u16 << left) - 1
        }
    };
    let mut max = _mm512_setzero_ps();
    let mut bad: __mmask16 = 0;
    let inf = _mm512_set1_ps(f32::INFINITY);
    for start in (0..row.len()).step_by(16) {
        let v = _mm512_maskz_loadu_ps(lanes(start), row.as_ptr().add(start));
        let a = _mm512_abs_ps(v);
        bad |= _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(a, inf);
        max = _mm512_max_ps(max, a);
    }
    if bad != 0 {
        return row_scale(&[f32::NAN]).0;
    }
    let (scale, inv) = row_scale(&[_mm512_reduce_max_ps(max)]);
    let inv = _mm512_set1_ps(inv);
    let mut two = [0u32; 8];
    for start in (0..row.len()).step_by(16) {
        let v = _mm512_maskz_loadu_ps(lanes(start), row.as_ptr().add(start));
        let q = _mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(v, inv),
        );
        _mm256_storeu_si256(two.as_mut_ptr() as *mut __m256i, _mm512_cvtsepi32_epi16(q));
        let p0 = start / 2;
        let valid = (row.len() - start).min(16).div_ceil(2);
        for (j, &pair) in two[..valid].iter().enumerate() {
            out[(p0 + j) * TILE] = pair;
        }
    }
    scale
}

/// [`pack_row`] on AVX2, 8 values at a time (the last ones masked). The largest magnitude is
/// an integer maximum over the values' bit patterns with the sign cleared (they order as the
/// magnitudes do, infinity and NaN above every finite value); the rounding is `vroundps` to
/// nearest-even, then an exact conversion, a saturating narrowing to 16 bits and a lane fix-up.
#[target_feature(enable = "avx2")]
unsafe fn pack_row_avx2(row: &[f32], out: &mut [u32]) -> f32 {
    let lanes = |start: usize| -> __m256i {
        let left = (row.len() - start).min(8) as i32;
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(left),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    };
    let magnitude = _mm256_set1_epi32(0x7fff_ffff);
    let mut max = _mm256_setzero_si256();
    for start in (0..row.len()).step_by(8) {
        let v = _mm256_maskload_epi32(row.as_ptr().add(start) as *const i32, lanes(start));
        max = _mm256_max_epi32(max, _mm256_and_si256(v, magnitude));
    }
    let mut m = [0i32; 8];
    _mm256_storeu_si256(m.as_mut_ptr() as *mut __m256i, max);
    let bits = m.into_iter().fold(0, i32::max);
    // Non-finite bits give NaN (the row stays zeros); otherwise the portable divisions.
    let (scale, inv) = row_scale(&[f32::from_bits(bits as u32)]);
    if scale.is_nan() {
        return scale;
    }
    let inv = _mm256_set1_ps(inv);
    let mut pairs = [0u32; 8];
    for start in (0..row.len()).step_by(16) {
        let round = |at: usize| {
            let v = _mm256_maskload_ps(row.as_ptr().add(at), lanes(at));
            let y = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
                _mm256_mul_ps(v, inv),
            );
            _mm256_cvttps_epi32(y)
        };
        let lo = round(start);
        let hi = if start + 8 < row.len() {
            round(start + 8)
        } else {
            _mm256_setzero_si256()
        };
        // `packs` narrows within 128-bit lanes: [lo 0-3, hi 0-3 | lo 4-7, hi 4-7] as pairs
        // (lo01, lo23, hi01, hi23 | lo45, lo67, hi45, hi67); 64-bit order 0, 2, 1, 3 fixes it.
        let q = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(lo, hi));
        _mm256_storeu_si256(pairs.as_mut_ptr() as *mut __m256i, q);
        let p0 = start / 2;
        let valid = (row.len() - start).min(16).div_ceil(2);
        for (j, &pair) in pairs[..valid].iter().enumerate() {
            out[(p0 + j) * TILE] = pair;
        }
    }
    scale
}

/// [`run`] on AVX2: tiles of 4 rows by the panel's 16 columns (two 8-lane halves), `vpmaddwd`
/// then `vpaddd` per row and half (eight chains of sums, two weight vectors and a broadcast in
/// the 16 registers).
#[target_feature(enable = "avx2")]
unsafe fn run_avx2(w: &QuantWeights, x: &Activations, out: &mut [f32]) {
    let pairs = w.pairs();
    let row_panels = x.rows.div_ceil(TILE);
    let xs = x.packed.as_ptr();
    let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for block in (0..row_panels).step_by(BLOCK_PANELS) {
        let block_end = (block + BLOCK_PANELS).min(row_panels);
        for (b, panel) in w.packed.chunks_exact(pairs * COLS).enumerate() {
            let cols = (w.n - b * COLS).min(COLS);
            let mut scales = [0f32; COLS];
            let mut bias = [0f32; COLS];
            scales[..cols].copy_from_slice(&w.scales[b * COLS..b * COLS + cols]);
            bias[..cols].copy_from_slice(&w.bias[b * COLS..b * COLS + cols]);
            let half = |h: usize| {
                let valid = _mm256_set1_epi32(cols as i32 - 8 * h as i32);
                (
                    _mm256_loadu_ps(scales.as_ptr().add(8 * h)),
                    _mm256_loadu_ps(bias.as_ptr().add(8 * h)),
                    _mm256_cmpgt_epi32(valid, lane),
                )
            };
            let halves = [half(0), half(1)];
            for rb in block..block_end {
                for r0 in [0, 4] {
                    if rb * TILE + r0 >= x.rows {
                        break;
                    }
                    let x0 = xs.add(rb * pairs * TILE + r0);
                    let sums = tile_avx2(panel.as_ptr(), x0, pairs);
                    for (i, sum) in sums.iter().enumerate() {
                        let (r, h) = (i / 2, i % 2);
                        let t = rb * TILE + r0 + r;
                        if t >= x.rows {
                            break;
                        }
                        let (s, c, mask) = halves[h];
                        let row = _mm256_set1_ps(x.scales[t]);
                        let y = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(*sum, row), s), c);
                        let at = t * w.n + b * COLS + 8 * h;
                        _mm256_maskstore_ps(out.as_mut_ptr().add(at), mask, y);
                    }
                }
            }
        }
    }
}

/// The f32 sums of 4 rows (`x` points to the first row's pairs in its panel) by the 16
/// columns of `w`: `[2r + h]` is row `r`, columns `8h..8h + 8`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn tile_avx2(w: *const u32, x: *const u32, pairs: usize) -> [__m256; 8] {
    let mut total = [_mm256_setzero_ps(); 8];
    let mut start = 0;
    while start < pairs {
        let end = (start + CHUNK / 2).min(pairs);
        let mut acc = [_mm256_setzero_si256(); 8];
        for p in start..end {
            let w0 = _mm256_loadu_si256(w.add(p * COLS) as *const __m256i);
            let w1 = _mm256_loadu_si256(w.add(p * COLS + 8) as *const __m256i);
            for r in 0..4 {
                let a = _mm256_set1_epi32(*x.add(p * TILE + r) as i32);
                acc[2 * r] = _mm256_add_epi32(acc[2 * r], _mm256_madd_epi16(a, w0));
                acc[2 * r + 1] = _mm256_add_epi32(acc[2 * r + 1], _mm256_madd_epi16(a, w1));
            }
        }
        for (t, a) in total.iter_mut().zip(&acc) {
            *t = _mm256_add_ps(*t, _mm256_cvtepi32_ps(*a));
        }
        start = end;
    }
    total
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

    /// The CPUs the tests can run here: AVX-512 VNNI if present, and AVX2 alone if present.
    fn cpus() -> Vec<Cpu> {
        let mut cpus = Vec::new();
        if vnni() {
            cpus.push(Cpu {
                vnni: true,
                avx2: false,
            });
        }
        if avx2() {
            cpus.push(Cpu {
                vnni: false,
                avx2: true,
            });
        }
        if cpus.is_empty() {
            eprintln!("neither AVX-512 VNNI nor AVX2: skipped");
        }
        cpus
    }

    #[test]
    fn equals_the_portable_kernel_bit_for_bit() {
        for cpu in cpus() {
            equals_the_portable_kernel_on(cpu);
        }
    }

    fn equals_the_portable_kernel_on(cpu: Cpu) {
        let mut next = super::super::xorshift::xorshift(0x9e37_79b9_7f4a_7c15);
        let cases = [
            (1, 1, 1, false),
            (7, 30, 17, false),
            (8, 384, 16, false),
            (17, 1100, 33, false),
            (40, 1536, 48, false),
            (3, 1536, 16, true),
            (5, 3, 9, false),
            (12, 600, 8, false),
            (21, 1025, 7, true),
        ];
        for &(rows, k, n, extreme) in &cases {
            let (q, scales, bias, x) =
                super::super::int8::random_product(&mut next, rows, k, n, extreme);
            let w = QuantWeights::pack(k, n, &q, scales, bias);
            let packed = Activations::pack_portable(&x, rows, k);
            let mut fast = vec![0f32; rows * n];
            let mut portable = vec![0f32; rows * n];
            assert!(matmul_on(&w, &packed, &mut fast, cpu));
            w.matmul_portable(&packed, &mut portable);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&portable), "rows {rows} k {k} n {n}");
        }
    }

    #[test]
    fn packs_like_the_portable_packer() {
        for cpu in cpus() {
            packs_like_the_portable_packer_on(cpu);
        }
    }

    fn packs_like_the_portable_packer_on(cpu: Cpu) {
        let mut next = super::super::xorshift::xorshift(0x5eed);
        for case in 0..400 {
            let rows = 1 + (next() % 20) as usize;
            let k = 1 + (next() % 200) as usize;
            let x = super::super::int8::special_rows(&mut next, rows, k, case % 2 == 0);
            let fast = pack_on(&x, rows, k, cpu).expect("a SIMD packer");
            let portable = Activations::pack_portable(&x, rows, k);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                fast.packed, portable.packed,
                "case {case}: rows {rows} k {k}"
            );
            assert_eq!(bits(&fast.scales), bits(&portable.scales), "case {case}");
        }
    }
}
