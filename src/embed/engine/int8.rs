//! The integer weight matmul's data: int8 weights and 16-bit activations, packed in the
//! panels every kernel reads, and the portable kernel that the platform kernels
//! (`super::x86_quant`, `super::wasm_quant`) must match bit for bit. A leaf: the kernels and
//! `super::quant` (which picks one and puts the product in the model's plan) import it; it
//! imports none of them. See `super::quant` for the scheme.

/// `k` steps per exact `i32` sum: |x_q| ≤ 32767 and |q| ≤ 128, so 512 products stay below 2³¹.
pub(crate) const CHUNK: usize = 512;
/// Rows per packed activation panel.
pub(crate) const TILE: usize = 8;
/// Columns per packed weight panel: one 512-bit register of `i32` sums on x86-64 (AVX-512), two
/// 128-bit halves of a wasm tile elsewhere.
#[cfg(target_arch = "x86_64")]
pub(crate) const COLS: usize = 16;
#[cfg(not(target_arch = "x86_64"))]
pub(crate) const COLS: usize = 8;
/// The largest 16-bit activation (a row's largest magnitude maps to it).
const LEVELS: f32 = 32767.0;

/// A weight matrix as int8 integers and per-column scales, packed for the kernels.
#[derive(Debug, PartialEq)]
pub(crate) struct QuantWeights {
    /// The contracted length.
    pub(crate) k: usize,
    /// Output columns.
    pub(crate) n: usize,
    /// Panels of [`COLS`] columns (zeros past `n`): for panel `b`, pair `p` (`k` steps `2p` and
    /// `2p + 1`, zero past `k`) and column `c`, the two weights as one [`Weights`] value,
    /// `packed[(b · pairs + p) · COLS + c]`.
    pub(crate) packed: Vec<Weights>,
    /// `s`, one per column.
    pub(crate) scales: Vec<f32>,
    /// The bias added after the product (zeros if the model adds none).
    pub(crate) bias: Vec<f32>,
}

/// Two 16-bit integers in one `u32`, `lo` in the low half (the layout `i32x4.dot_i16x8_s` and
/// `v128.load32_splat` read on a little-endian machine).
#[inline]
pub(crate) fn pair(lo: i16, hi: i16) -> u32 {
    u32::from(lo as u16) | (u32::from(hi as u16) << 16)
}

/// The two 16-bit integers of [`pair`].
#[inline]
fn unpair(v: u32) -> (i32, i32) {
    (
        i32::from(v as u16 as i16),
        i32::from((v >> 16) as u16 as i16),
    )
}

/// Two weights of one column (`k` steps `2p` and `2p + 1`) as the kernels read them: natively a
/// [`pair`] of 16-bit integers (what `vpdpwssd` and `vpmaddwd` take); in wasm two bytes, half
/// the memory, which the kernel widens to 16 bits as it loads them (`i16x8.extend_*_i8x16`).
/// Measured there (2026-11-26): the 36 weight matrices of MiniLM-L6 in turn, 16 rows each,
/// 7–13% faster than 16-bit weights, whose 21 MB did not stay in this machine's caches between
/// calls (at 128 and 512 rows the same speed); single 16-token texts in Node 175–180 → 212–223
/// texts/s.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type Weights = u32;
/// See the native definition.
#[cfg(target_arch = "wasm32")]
pub(crate) type Weights = [i8; 2];

/// Two int8 weights as one [`Weights`] value.
#[inline]
fn weights(lo: i8, hi: i8) -> Weights {
    #[cfg(not(target_arch = "wasm32"))]
    return pair(i16::from(lo), i16::from(hi));
    #[cfg(target_arch = "wasm32")]
    [lo, hi]
}

/// The two weights of a [`Weights`] value.
#[inline]
fn unweights(w: Weights) -> (i32, i32) {
    #[cfg(not(target_arch = "wasm32"))]
    return unpair(w);
    #[cfg(target_arch = "wasm32")]
    (i32::from(w[0]), i32::from(w[1]))
}

impl QuantWeights {
    /// Number of `k` pairs.
    pub(crate) fn pairs(&self) -> usize {
        self.k.div_ceil(2)
    }

    /// Whether `x` (packed for these weights) and `out` have the sizes the SIMD kernels' raw
    /// pointers rely on (`super::x86_quant`, `super::wasm_quant`).
    pub(crate) fn fits(&self, x: &Activations, out: &[f32]) -> bool {
        let pairs = self.pairs();
        self.packed.len() == self.n.div_ceil(COLS) * pairs * COLS
            && x.packed.len() == x.rows.div_ceil(TILE) * pairs * TILE
            && x.scales.len() == x.rows
            && self.scales.len() == self.n
            && self.bias.len() == self.n
            && out.len() == x.rows * self.n
    }

    /// Packs `q` (`k × n`, row-major), its column scales and a bias (the kernels' tests and
    /// checks; a model load packs columns, [`QuantWeights::pack_columns`]).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn pack(k: usize, n: usize, q: &[i8], scales: Vec<f32>, bias: Vec<f32>) -> Self {
        let mut columns = vec![0i8; k * n];
        if k > 0 && n > 0 && q.len() >= k * n {
            transpose::transpose(&q[..k * n], &mut columns, n, k);
        }
        QuantWeights::pack_columns(k, n, &columns, scales, bias)
    }

    /// Packs the weights given column by column (`columns[j · k + i]` is row `i` of column
    /// `j`, as [`QuantWeights::recover_columns`] gives them): each column's pairs go to its
    /// panel in order, so the reads are contiguous (the load packs MiniLM's 10.6 M weights).
    pub(crate) fn pack_columns(
        k: usize,
        n: usize,
        columns: &[i8],
        scales: Vec<f32>,
        bias: Vec<f32>,
    ) -> Self {
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(COLS);
        let mut packed = vec![weights(0, 0); panels * pairs * COLS];
        if pairs > 0 {
            let panel_len = pairs * COLS;
            for (j, column) in columns.chunks_exact(k).take(n).enumerate() {
                let (b, c) = (j / COLS, j % COLS);
                let panel = &mut packed[b * panel_len..(b + 1) * panel_len];
                for (slot, two) in panel.chunks_exact_mut(COLS).zip(column.chunks(2)) {
                    if let [lo, rest @ ..] = two {
                        slot[c] = weights(*lo, rest.first().copied().unwrap_or(0));
                    }
                }
            }
        }
        QuantWeights {
            k,
            n,
            packed,
            scales,
            bias,
        }
    }

    /// Reads int8 integers and per-column scales back from f32 weights `w` (`k × n`,
    /// row-major), or `None` unless `f32(q) · s` equals every weight (so the integer product
    /// uses exactly the model's weights). Each column's scale is searched near `max|w| / 127`
    /// (and `/ 128`), a few units in the last place either way. The integers come back column
    /// by column, as [`QuantWeights::pack_columns`] reads them.
    pub(crate) fn recover(w: &[f32], k: usize, n: usize) -> Option<(Vec<i8>, Vec<f32>)> {
        if k == 0 || n == 0 || k.checked_mul(n) != Some(w.len()) {
            return None;
        }
        let mut columns = vec![0f32; w.len()];
        transpose::transpose(w, &mut columns, n, k);
        QuantWeights::recover_columns(&columns, k, n)
    }

    /// [`QuantWeights::recover`] of the weights given column by column (`columns[j · k + i]`
    /// is row `i` of column `j`): each column's search reads contiguous values (a load reads
    /// MiniLM's 10.6 M weights several times each). The integers come back column by column
    /// too, as [`QuantWeights::pack_columns`] reads them.
    pub(crate) fn recover_columns(
        columns: &[f32],
        k: usize,
        n: usize,
    ) -> Option<(Vec<i8>, Vec<f32>)> {
        if k == 0 || n == 0 || k.checked_mul(n) != Some(columns.len()) {
            return None;
        }
        let mut q = vec![0i8; columns.len()];
        let mut scales = vec![0f32; n];
        for ((column, ints), scale_j) in columns
            .chunks_exact(k)
            .zip(q.chunks_exact_mut(k))
            .zip(scales.iter_mut())
        {
            *scale_j = QuantWeights::recover_column(column, ints)?;
        }
        Some((q, scales))
    }

    /// One column of [`QuantWeights::recover_columns`]: its scale (0 for a column of zeros,
    /// whose integers stay 0), its integers written into `ints`; `None` when a value is not
    /// finite or no scale near `max / 127` or `max / 128` makes every value an int8 multiple.
    pub(crate) fn recover_column(column: &[f32], ints: &mut [i8]) -> Option<f32> {
        // The largest magnitude and whether every value is finite, in one pass.
        let (max, finite) = column.iter().fold((0f32, true), |(m, f), v| {
            (if v.abs() > m { v.abs() } else { m }, f && v.is_finite())
        });
        if !finite {
            return None;
        }
        if max == 0.0 {
            return Some(0.0);
        }
        // Whether every value is an int8 multiple of `s`; the integers land in `ints` (a later
        // scale tried overwrites them).
        let mut fits = |s: f32| {
            let inv = 1.0 / s;
            column
                .iter()
                .zip(ints.iter_mut())
                .all(|(&v, d)| as_int8(v, s, inv).map(|i| *d = i).is_some())
        };
        [127f32, 128.0]
            .iter()
            .flat_map(|levels| {
                let s = max / levels;
                let (mut up, mut down) = (s, s);
                let mut near = vec![s];
                for _ in 0..3 {
                    up = up.next_up();
                    down = down.next_down();
                    near.push(up);
                    near.push(down);
                }
                near
            })
            .find(|&s| s > 0.0 && fits(s))
    }

    /// Whether [`QuantWeights::recover_column`] of the column `f32(v) · scale` (each int8 `v`
    /// of `column` times one scale) gives back `column` and `scale` themselves, so that the
    /// f32 values need not be made or searched. True when the column's largest magnitude is
    /// 127 and `(127 · scale) / 127` rounds back to `scale`, for a scale large enough that every
    /// product `v · scale` (`v` ≠ 0) is a normal float: then the search's first candidate,
    /// `max / 127`, is `scale` itself, and every value passes its check with `v` (`f32(v · scale)
    /// · (1 / scale)` is within 3 ulps of `v`, |v| ≤ 127, so it rounds to `v`; and `v · scale` is
    /// the value itself). A column with −128, or any other column, takes the search.
    pub(crate) fn is_own_recovery(column: &[i8], scale: f32) -> bool {
        let top = column.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
        let max = 127f32 * scale;
        top == 127 && scale >= f32::MIN_POSITIVE * 128.0 && max.is_finite() && max / 127f32 == scale
    }

    /// The portable kernel: the same integer sums and f32 steps as every other kernel.
    pub(crate) fn matmul_portable(&self, x: &Activations, out: &mut [f32]) {
        let pairs = self.pairs();
        for (b, panel) in self.packed.chunks_exact(pairs * COLS).enumerate() {
            for (rb, rows) in x.packed.chunks_exact(pairs * TILE).enumerate() {
                let mut total = [[0f32; COLS]; TILE];
                for start in (0..pairs).step_by(CHUNK / 2) {
                    let end = (start + CHUNK / 2).min(pairs);
                    let mut acc = [[0i32; COLS]; TILE];
                    for p in start..end {
                        let w = &panel[p * COLS..(p + 1) * COLS];
                        let a = &rows[p * TILE..(p + 1) * TILE];
                        for (r, &av) in a.iter().enumerate() {
                            let (a0, a1) = unpair(av);
                            for (c, &wv) in w.iter().enumerate() {
                                let (w0, w1) = unweights(wv);
                                acc[r][c] += a0 * w0 + a1 * w1;
                            }
                        }
                    }
                    for (t, a) in total.iter_mut().zip(&acc) {
                        for (t, a) in t.iter_mut().zip(a) {
                            *t += *a as f32;
                        }
                    }
                }
                for (r, row) in total.iter().enumerate() {
                    let t = rb * TILE + r;
                    if t >= x.rows {
                        break;
                    }
                    for (c, &sum) in row.iter().enumerate() {
                        let j = b * COLS + c;
                        if j < self.n {
                            out[t * self.n + j] = self.finish(sum, x.scales[t], j);
                        }
                    }
                }
            }
        }
    }

    /// `((sum · r) · s_j) + bias_j`: the f32 steps after the integer sum, in every kernel.
    #[inline]
    pub(crate) fn finish(&self, sum: f32, row_scale: f32, j: usize) -> f32 {
        sum * row_scale * self.scales[j] + self.bias[j]
    }
}

/// `v / s` as an int8 if it is one exactly: `f32(q) · s == v`; `inv` is `1 / s`.
///
/// For a normal `s` (every real model's scale) the quotient is `v · inv`, not a division, and
/// the accepted integer is the same: only one integer `q` in −128..=127 can have `f32(q · s) ==
/// v` (the exact products of distinct `q` are `s` apart, far more than an ulp of `v`), and for
/// that `q`, `v · inv` is within a few ulps of `q` (|q| ≤ 128: under 2⁻¹⁵ away), so it rounds to
/// `q` as `v / s` does; where no integer is exact both are refused by the check. Rounded half
/// to even (one wasm instruction, `f32.nearest`; `round()` is a libm call there), which a
/// quotient that close to an integer does not notice. A subnormal `s` (or zero) takes the
/// division rounded half away from zero, as before: there products of distinct `q` can round
/// to the same value.
#[inline]
fn as_int8(v: f32, s: f32, inv: f32) -> Option<i8> {
    let q = if s.is_normal() {
        (v * inv).round_ties_even()
    } else {
        (v / s).round()
    };
    if !(-128.0..=127.0).contains(&q) || q * s != v {
        return None;
    }
    Some(q as i8)
}

/// Activations rounded to 16 bits per row and packed in panels of [`TILE`] rows.
#[derive(Debug)]
pub(crate) struct Activations {
    pub(crate) rows: usize,
    /// For row panel `b`, pair `p` and row `r`, the row's two 16-bit values at `2p`, `2p + 1`
    /// ([`pair`]) at `(b · pairs + p) · TILE + r`; zeros past the rows and past `k`.
    pub(crate) packed: Vec<u32>,
    /// `r_t = max|x_t| / 32767` per row (NaN for a row with a non-finite value).
    pub(crate) scales: Vec<f32>,
}

impl Activations {
    /// The portable packer: the reference for the others (in wasm, only the checks use it).
    #[cfg(any(
        test,
        feature = "test-hooks",
        not(all(target_arch = "wasm32", target_feature = "simd128"))
    ))]
    pub(crate) fn pack_portable(x: &[f32], rows: usize, k: usize) -> Activations {
        let pairs = k.div_ceil(2);
        let panels = rows.div_ceil(TILE);
        let mut packed = vec![0u32; panels * pairs * TILE];
        let mut scales = vec![0f32; rows];
        let mut q = vec![0i16; pairs * 2];
        for (t, row) in x.chunks_exact(k.max(1)).take(rows).enumerate() {
            let (scale, inv) = row_scale(row);
            scales[t] = scale;
            for (d, &v) in q.iter_mut().zip(row) {
                *d = quantize(v, inv);
            }
            let (b, r) = (t / TILE, t % TILE);
            for (p, two) in q.chunks_exact(2).enumerate() {
                packed[(b * pairs + p) * TILE + r] = pair(two[0], two[1]);
            }
        }
        Activations {
            rows,
            packed,
            scales,
        }
    }
}

/// A row's scale `max|x| / 32767` and the multiplier `32767 / max|x|` that rounds it (zero for
/// a row of zeros; NaN for a row with a non-finite value, whose values then round to 0).
#[inline]
pub(crate) fn row_scale(row: &[f32]) -> (f32, f32) {
    let mut max = 0f32;
    let mut finite = true;
    for v in row {
        finite &= v.is_finite();
        let a = v.abs();
        if a > max {
            max = a;
        }
    }
    if !finite {
        return (f32::NAN, 0.0);
    }
    if max == 0.0 {
        return (0.0, 0.0);
    }
    (max / LEVELS, LEVELS / max)
}

/// `round(v · inv)` (ties to even) as `i16`: |v · inv| ≤ 32767 for the row's values.
///
/// Rounded by adding and subtracting 1.5 · 2²³: for |y| ≤ 2²² the sum's last place is 1, so the
/// addition rounds `y` to an integer, ties to even, exactly as `round_ties_even` (which on
/// baseline x86-64 is a libm call per value); it vectorises, and wasm's `f32x4.nearest` gives
/// the same integers.
#[inline]
pub(crate) fn quantize(v: f32, inv: f32) -> i16 {
    const MAGIC: f32 = 12_582_912.0;
    ((v * inv + MAGIC) - MAGIC) as i16
}

/// `rows × k` activations for the packers' checks: mostly random values in ±10 with zeros,
/// and (if `special`) zeros of both signs, infinities, NaN, exact ties and extremes mixed in.
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) fn special_rows(
    next: &mut impl FnMut() -> u64,
    rows: usize,
    k: usize,
    special: bool,
) -> Vec<f32> {
    const SPECIAL: [f32; 9] = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.5,
        -2.5,
        f32::MAX,
        f32::MIN_POSITIVE,
    ];
    (0..rows * k)
        .map(|_| match next() % 64 {
            0 if special => SPECIAL[(next() % SPECIAL.len() as u64) as usize],
            1..=8 => 0.0,
            _ => ((next() % 20001) as f32 - 10000.0) * 1e-3,
        })
        .collect()
}

/// A random product for the kernels' bit-identity checks: `q` (`k × n`), column scales, a bias
/// and activations `x` (`rows × k`). `extreme`: every weight -128 and every activation -1, so
/// each chunk's sums reach their bound (32767 · 128 · 512).
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) fn random_product(
    next: &mut impl FnMut() -> u64,
    rows: usize,
    k: usize,
    n: usize,
    extreme: bool,
) -> (Vec<i8>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let q = (0..k * n)
        .map(|_| {
            if extreme {
                -128
            } else {
                (next() % 256) as u8 as i8
            }
        })
        .collect();
    let scales = (0..n)
        .map(|_| (next() % 1000) as f32 * 1e-5 + 1e-4)
        .collect();
    let bias = (0..n)
        .map(|_| (next() % 2001) as f32 * 1e-3 - 1.0)
        .collect();
    let x = (0..rows * k)
        .map(|_| {
            if extreme {
                -1.0
            } else {
                ((next() % 20001) as f32 - 10000.0) * 1e-3
            }
        })
        .collect();
    (q, scales, bias, x)
}

// proptest is a native dev-dependency (the wasm test build has none).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::{as_int8, QuantWeights};
    use proptest::prelude::*;

    /// What `as_int8` replaced: the quotient by division, rounded half away from zero.
    fn by_division(v: f32, s: f32) -> Option<i8> {
        let q = (v / s).round();
        ((-128.0..=127.0).contains(&q) && q * s == v).then_some(q as i8)
    }

    proptest! {
        /// `as_int8` accepts exactly the integers division accepted: every exact multiple
        /// `f32(q) · s` (and its neighbours a few ulps away, which neither accepts unless
        /// exact), and arbitrary values; normal and subnormal scales.
        #[test]
        fn reciprocal_quotient_accepts_what_division_accepts(
            q in -128i32..=127,
            s in prop_oneof![1e-12f32..1e6, (1u32..0x0080_0000).prop_map(f32::from_bits)],
            ulps in -3i32..=3,
            any_v in any::<f32>(),
        ) {
            let exact = q as f32 * s;
            let near = f32::from_bits((exact.to_bits() as i32).wrapping_add(ulps) as u32);
            for v in [exact, near, any_v] {
                prop_assert_eq!(as_int8(v, s, 1.0 / s), by_division(v, s), "v {} s {}", v, s);
            }
            if s.is_normal() {
                prop_assert_eq!(as_int8(exact, s, 1.0 / s), Some(q as i8));
            }
        }

        /// Where `is_own_recovery` says a column's integers and scale are what the search
        /// would recover from `f32(v) · scale`, the search gives exactly them; columns with a
        /// largest magnitude of 127 (the fast path) and others, scales over a wide range.
        #[test]
        fn own_recovery_is_what_the_search_recovers(
            mut column in prop::collection::vec(any::<i8>(), 1..64),
            top in any::<bool>(),
            at in any::<prop::sample::Index>(),
            s in prop_oneof![1e-9f32..1e3, (1u32..0x0200_0000).prop_map(f32::from_bits)],
        ) {
            if top {
                let i = at.index(column.len());
                column[i] = if column[i] < 0 { -127 } else { 127 };
                for v in column.iter_mut().filter(|v| **v == -128) {
                    *v = -127;
                }
            }
            let values: Vec<f32> = column.iter().map(|&v| f32::from(v) * s).collect();
            let mut ints = vec![0i8; column.len()];
            let searched = QuantWeights::recover_column(&values, &mut ints);
            if QuantWeights::is_own_recovery(&column, s) {
                prop_assert_eq!(searched.map(f32::to_bits), Some(s.to_bits()));
                prop_assert_eq!(ints, column);
            }
        }
    }

    /// The fast path is taken for a usual int8 column (largest magnitude 127, a normal scale)
    /// and refused for a column holding −128 or one whose largest magnitude is below 127.
    #[test]
    fn own_recovery_takes_the_usual_column_only() {
        assert!(QuantWeights::is_own_recovery(&[3, -127, 40], 0.0123));
        assert!(!QuantWeights::is_own_recovery(&[3, -128, 40], 0.0123));
        assert!(!QuantWeights::is_own_recovery(&[3, -100, 40], 0.0123));
        assert!(!QuantWeights::is_own_recovery(&[127], f32::from_bits(1)));
        assert!(!QuantWeights::is_own_recovery(&[127], f32::MAX));
        // A scale that `(127 · s) / 127` does not give back (about 1 in 130 do not): the
        // search's first candidate is then another scale, so the fast path must not answer.
        let s = f32::from_bits(0x3a01_0ac0);
        assert_ne!((127f32 * s) / 127f32, s);
        assert!(!QuantWeights::is_own_recovery(&[127, 5], s));
    }
}
