//! Integer weight matmuls: the model's int8 weights times its activations rounded to 16 bits.
//!
//! The int8 model stores each weight matrix `W` (`k × n`) as int8 integers `q` and one f32 scale
//! per output column `s`, and tract's declutter folds `W = f32(q) · s` into an f32 constant. Its
//! f32 kernels then do `k · n` f32 multiply-adds per token. wasm has no f32 fused multiply-add,
//! but it has `i32x4.dot_i16x8_s`: 8 products of 16-bit integers summed pairwise into 4 `i32`s in
//! one instruction, twice the work of an f32 multiply and add.
//!
//! [`QuantMatMul`] takes the place of `x · W` (and the bias addition after it):
//! - at load, [`QuantWeights::recover`] reads `q` and `s` back from the folded constant, and
//!   checks that `f32(q) · s` gives every weight exactly, or leaves the matmul to tract;
//! - per call, each row of `x` (a token) is rounded to 16-bit integers on its own scale,
//!   `r = max|x| / 32767`;
//! - `y[t, j] = ((Σ x_q · q) · r_t) · s_j + bias_j`, the integer sums exact in `i32`, taken in
//!   chunks of [`CHUNK`] steps (32767 · 128 · 512 < 2³¹, so no sum can overflow) and added up
//!   as f32 in chunk order.
//!
//! Integer sums do not depend on their order, so every kernel (the portable one here, AVX-512
//! VNNI and AVX2 in `super::x86_quant`, wasm SIMD in `super::wasm_quant`) gives the same bits,
//! natively and in wasm (tested), and so does every activation packer. The only rounding the
//! f32 model does not have is the activations' 16 bits: measured on the reference fixture,
//! every vector stays within cosine 0.9999997 of the f32 model's (and of onnxruntime's). With
//! `super::same`'s operators for the f32 parts, the native (x86-64) and wasm builds give the
//! same bits for every vector. See [`ENABLED`] for the speeds.
//!
//! A row holding a NaN or an infinity gives a row of NaN (the f32 model gives NaN or infinities
//! there too); a row of zeros gives the bias.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::math::Add;

/// Whether [`super::model::Model::load`] uses the integer matmuls where [`available`] (`false`
/// gives tract's f32 matmuls everywhere, to measure them). Measured with it on (session 20,
/// `bench/embed-compare`; see the README's table): faster than f32 in both builds (wasm in
/// Node 211–26–12 texts/s on single 16-, 128-, 256-token texts against 109–17.2–8.2), native
/// 1.26–3.58× onnxruntime on one thread, native / wasm 2.57–2.82 (3.19 on 16-token batches).
///
/// Why the other operators change with it: rounding activations to 16 bits is a step
/// function, so a difference of one ulp in its input can move a value by a whole step. tract
/// computes the f32 parts of the model (attention's matmuls and softmax, GELU's `erf`, the
/// layer norms' sums) with different kernels natively and in wasm; with those, the builds'
/// roundings were as good as independent after the first layer, their vectors ~2e-7 apart in
/// cosine, and 2 near ties (score gaps ~1.5e-5) among the parity fixture's top-10 neighbours
/// flipped. The model with the integer path therefore computes those parts with
/// `super::same`'s operators, the same bits in both builds, and the vectors are bit-identical.
pub(crate) const ENABLED: bool = true;

/// Whether this platform has a fast integer kernel: wasm with SIMD, x86-64 with AVX-512 VNNI or
/// AVX2. Elsewhere (aarch64 today) the model keeps tract's f32 matmuls (the portable kernel is a
/// reference, not fast).
pub(crate) fn available() -> bool {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return true;
    #[cfg(target_arch = "x86_64")]
    return super::x86_quant::available();
    #[allow(unreachable_code)]
    false
}

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
/// Measured there (session 20): the 36 weight matrices of MiniLM-L6 in turn, 16 rows each,
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

    /// Packs `q` (`k × n`, row-major), its column scales and a bias.
    pub(crate) fn pack(k: usize, n: usize, q: &[i8], scales: Vec<f32>, bias: Vec<f32>) -> Self {
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(COLS);
        let mut packed = vec![weights(0, 0); panels * pairs * COLS];
        let at = |i: usize, j: usize| -> i8 {
            if i < k && j < n {
                q[i * n + j]
            } else {
                0
            }
        };
        for b in 0..panels {
            for p in 0..pairs {
                for c in 0..COLS {
                    let j = b * COLS + c;
                    packed[(b * pairs + p) * COLS + c] = weights(at(2 * p, j), at(2 * p + 1, j));
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
    /// (and `/ 128`), a few units in the last place either way.
    pub(crate) fn recover(w: &[f32], k: usize, n: usize) -> Option<(Vec<i8>, Vec<f32>)> {
        if k == 0 || n == 0 || w.len() != k * n {
            return None;
        }
        let mut q = vec![0i8; k * n];
        let mut scales = vec![0f32; n];
        for j in 0..n {
            let column = || (0..k).map(|i| w[i * n + j]);
            let max = column().fold(0f32, |m, v| if v.abs() > m { v.abs() } else { m });
            if !column().all(f32::is_finite) {
                return None;
            }
            if max == 0.0 {
                continue;
            }
            let fits = |s: f32| column().all(|v| as_int8(v, s).is_some());
            let scale = [127f32, 128.0]
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
                .find(|&s| s > 0.0 && fits(s))?;
            scales[j] = scale;
            for i in 0..k {
                q[i * n + j] = as_int8(w[i * n + j], scale)?;
            }
        }
        Some((q, scales))
    }

    /// The product for the rows of `x` (`rows × k`, row-major) into `out` (`rows × n`), by the
    /// portable kernel or the platform's (`super::x86_quant` with AVX-512 VNNI or AVX2,
    /// `super::wasm_quant` in wasm).
    ///
    /// Natively, under a multi-thread executor (`EmbedOptions::threads` > 1, installed by
    /// `Model::run`), the rows are split into one contiguous run of row panels per thread, each
    /// packed and multiplied on its own. A row's result depends on that row alone (its own
    /// scale, exact integer sums), so the bits are those of one thread.
    pub(crate) fn matmul(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        #[cfg(not(target_arch = "wasm32"))]
        if let tract_linalg::multithread::Executor::MultiThread(pool) =
            tract_linalg::multithread::current_tract_executor()
        {
            let panels = rows.div_ceil(TILE);
            let tasks = pool.current_num_threads().min(panels);
            if tasks > 1 && self.k > 0 && self.n > 0 {
                use rayon::prelude::*;
                let per = panels.div_ceil(tasks) * TILE;
                pool.install(|| {
                    out[..rows * self.n]
                        .par_chunks_mut(per * self.n)
                        .zip(x[..rows * self.k].par_chunks(per * self.k))
                        .for_each(|(out, x)| self.matmul_rows(x, x.len() / self.k, out));
                });
                return;
            }
        }
        self.matmul_rows(x, rows, out);
    }

    /// [`QuantWeights::matmul`] on the calling thread.
    fn matmul_rows(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        let packed = Activations::pack(x, rows, self.k);
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        super::wasm_quant::matmul(self, &packed, out);
        #[cfg(target_arch = "x86_64")]
        if super::x86_quant::matmul(self, &packed, out) {
            return;
        }
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        self.matmul_portable(&packed, out);
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

/// `v / s` as an int8 if it is one exactly: `f32(q) · s == v`.
fn as_int8(v: f32, s: f32) -> Option<i8> {
    let q = (v / s).round();
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
    /// Rounds each row of `x` (`rows × k`) to `round(x · 32767 / max|x|)`, ties to even, by
    /// the platform's SIMD packer (AVX-512 or AVX2 natively, wasm SIMD) or the portable one; all
    /// give the same integers.
    pub(crate) fn pack(x: &[f32], rows: usize, k: usize) -> Activations {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        return super::wasm_quant::pack(x, rows, k);
        #[cfg(target_arch = "x86_64")]
        if let Some(packed) = super::x86_quant::pack(x, rows, k) {
            return packed;
        }
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        Activations::pack_portable(x, rows, k)
    }

    /// The portable packer: the reference for the others.
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

/// `x · W + bias` with `W` as int8 integers and column scales (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct QuantMatMul {
    pub(crate) weights: Arc<QuantWeights>,
    /// How many trailing axes of the input are contracted (their product is `k`).
    pub(crate) contracted: usize,
}

impl PartialEq for QuantMatMul {
    fn eq(&self, other: &Self) -> bool {
        self.contracted == other.contracted && Arc::ptr_eq(&self.weights, &other.weights)
    }
}
impl Eq for QuantMatMul {}

impl Op for QuantMatMul {
    fn name(&self) -> StaticName {
        "QuantMatMul".into()
    }

    op_as_typed_op!();
}

impl EvalOp for QuantMatMul {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let shape = x.shape();
        let Some(lead) = shape.len().checked_sub(self.contracted) else {
            bail!(
                "QuantMatMul: input of rank {} < {}",
                shape.len(),
                self.contracted
            );
        };
        let k: usize = shape[lead..].iter().product();
        if k != self.weights.k {
            bail!(
                "QuantMatMul: input {shape:?} does not end in k = {}",
                self.weights.k
            );
        }
        let rows: usize = shape[..lead].iter().product();
        let mut out_shape: TVec<usize> = shape[..lead].into();
        out_shape.push(self.weights.n);
        // Written in place (every kernel writes every value; zeroing is cheaper than a copy).
        let mut out = Tensor::zero::<f32>(&out_shape)?;
        {
            let view = x.try_as_plain_ram()?;
            let mut dst = out.try_as_plain_ram_mut()?;
            self.weights
                .matmul(view.as_slice::<f32>()?, rows, dst.as_slice_mut::<f32>()?);
        }
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for QuantMatMul {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let shape = &inputs[0].shape;
        let Some(lead) = shape.len().checked_sub(self.contracted) else {
            bail!(
                "QuantMatMul: input of rank {} < {}",
                shape.len(),
                self.contracted
            );
        };
        let mut dims: TVec<TDim> = shape.iter().take(lead).cloned().collect();
        dims.push(self.weights.n.into());
        Ok(tvec!(f32::fact(dims)))
    }

    as_op!();
}

/// `rows × k` activations for the packers' checks: mostly random values in ±10 with zeros,
/// and (if `special`) zeros of both signs, infinities, NaN, exact ties and extremes mixed in.
#[cfg(any(test, all(target_arch = "wasm32", target_feature = "simd128")))]
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
#[cfg(any(test, all(target_arch = "wasm32", target_feature = "simd128")))]
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

/// Puts a [`QuantMatMul`] in place of every f32 `EinSum` of an activation by a constant whose
/// weights are exact int8 multiples of per-column scales ([`QuantWeights::recover`]), with the
/// constant bias `Add` after it when there is one. Runs on the decluttered model, before
/// tract's optimisation. Returns how many matmuls it replaced.
pub(crate) fn swap_in(model: &mut TypedModel) -> TractResult<usize> {
    let mut found = Vec::new();
    for node in model.nodes() {
        let Some(einsum) = node.op_as::<EinSum>() else {
            continue;
        };
        if einsum.q_params.is_some() || einsum.operating_dt != f32::datum_type() {
            continue;
        }
        let [x, w] = node.inputs[..] else {
            continue;
        };
        let Some(konst) = model.outlet_fact(w)?.konst.clone() else {
            continue;
        };
        if model.outlet_fact(x)?.konst.is_some() || konst.datum_type() != f32::datum_type() {
            continue;
        }
        let Some(contracted) = weight_product(&einsum.axes.to_string(), konst.rank()) else {
            continue;
        };
        let dims = konst.shape();
        let n = dims[dims.len() - 1];
        let k: usize = dims[..dims.len() - 1].iter().product();
        let view = konst.try_as_plain_ram()?;
        let Some((q, scales)) = QuantWeights::recover(view.as_slice::<f32>()?, k, n) else {
            continue;
        };
        // The bias: a single reader `Add` of a constant `[1, …, 1, n]`.
        let mut bias = vec![0f32; n];
        let mut last = node.id;
        if let [succ] = &node.outputs[0].successors[..] {
            let add = model.node(succ.node);
            let is_add = add
                .op_as::<TypedBinOp>()
                .is_some_and(|b| b.0.is::<Add>() && b.1.is_none());
            if is_add && add.inputs.len() == 2 {
                let other = add.inputs[1 - succ.slot];
                if let Some(b) = model.outlet_fact(other)?.konst.clone() {
                    let shape = b.shape();
                    let vector = b.datum_type() == f32::datum_type()
                        && shape.last() == Some(&n)
                        && shape.iter().rev().skip(1).all(|&d| d == 1)
                        && shape.len() + contracted <= model.outlet_fact(x)?.rank() + 1;
                    if vector {
                        bias.copy_from_slice(b.try_as_plain_ram()?.as_slice::<f32>()?);
                        last = add.id;
                    }
                }
            }
        }
        let op = QuantMatMul {
            weights: Arc::new(QuantWeights::pack(k, n, &q, scales, bias)),
            contracted,
        };
        found.push((last, node.name.clone(), x, op));
    }
    let count = found.len();
    for (last, name, x, op) in found {
        super::ops::wire_in_place_of(model, last, format!("{name}.quant"), op, &[x])?;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

/// For an einsum expression `x,w->y` (as tract prints it, e.g. `amk,kn->amn` or
/// `ambk,bkn->amn`) with `w` of rank `w_rank`: `Some(c)` when it is `x · w` over the `c =
/// w_rank - 1` trailing axes of `x` (in `w`'s order), the output being `x`'s other axes then
/// `w`'s last.
pub(crate) fn weight_product(expr: &str, w_rank: usize) -> Option<usize> {
    let (ins, out) = expr.split_once("->")?;
    let (x, w) = ins.split_once(',')?;
    let (x, w, out): (Vec<char>, Vec<char>, Vec<char>) = (
        x.chars().collect(),
        w.chars().collect(),
        out.chars().collect(),
    );
    if w.len() != w_rank || w.len() < 2 || x.len() < w.len() {
        return None;
    }
    let mut all = x.clone();
    all.push(w[w.len() - 1]);
    let distinct = all
        .iter()
        .all(|c| all.iter().filter(|d| *d == c).count() == 1);
    let c = w.len() - 1;
    let lead = x.len() - c;
    let contracted_match = x[lead..] == w[..c];
    let mut expected = x[..lead].to_vec();
    expected.push(w[c]);
    (distinct && contracted_match && out == expected).then_some(c)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The product without packing or chunks but with the same rounding: the oracle.
    fn naive(q: &[i8], scales: &[f32], bias: &[f32], x: &[f32], rows: usize, k: usize) -> Vec<f32> {
        let n = scales.len();
        let mut out = vec![0f32; rows * n];
        for t in 0..rows {
            let row = &x[t * k..(t + 1) * k];
            let (scale, inv) = row_scale(row);
            for j in 0..n {
                let mut total = 0f32;
                for chunk in (0..k).collect::<Vec<_>>().chunks(CHUNK) {
                    let s: i32 = chunk
                        .iter()
                        .map(|&i| i32::from(quantize(row[i], inv)) * i32::from(q[i * n + j]))
                        .sum();
                    total += s as f32;
                }
                out[t * n + j] = total * scale * scales[j] + bias[j];
            }
        }
        out
    }

    fn case(seed: u64, rows: usize, k: usize, n: usize) -> (Vec<i8>, Vec<f32>, Vec<f32>, Vec<f32>) {
        random_product(&mut super::super::xorshift(seed), rows, k, n, false)
    }

    proptest! {
        #[test]
        fn packed_kernel_equals_the_oracle(
            seed in any::<u64>(), rows in 1usize..20, k in 1usize..1100, n in 1usize..20,
        ) {
            let (q, scales, bias, x) = case(seed, rows, k, n);
            let w = QuantWeights::pack(k, n, &q, scales.clone(), bias.clone());
            let mut out = vec![0f32; rows * n];
            w.matmul(&x, rows, &mut out);
            let expected = naive(&q, &scales, &bias, &x, rows, k);
            prop_assert_eq!(
                out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }

        #[test]
        fn recover_reads_back_exact_int8_weights(seed in any::<u64>(), k in 1usize..40, n in 1usize..12) {
            let (q, scales, _, _) = case(seed, 1, k, n);
            // The weights a model stores: f32(q) · s, with each column's largest |q| at 127.
            let mut q = q;
            for v in q.iter_mut().take(n) {
                *v = 127;
            }
            let w: Vec<f32> = (0..k * n).map(|i| f32::from(q[i]) * scales[i % n]).collect();
            let (q2, s2) = QuantWeights::recover(&w, k, n).ok_or_else(|| TestCaseError::fail("not recovered"))?;
            for i in 0..k * n {
                prop_assert_eq!(f32::from(q2[i]) * s2[i % n], w[i]);
            }
        }
    }

    /// Under a multi-thread executor the rows are split over the pool; the bits are those of
    /// one thread, for row counts around the panel and thread boundaries.
    #[test]
    fn threads_give_the_bits_of_one_thread() {
        use tract_linalg::multithread::{multithread_tract_scope, Executor};
        let pool = Executor::multithread(3);
        for (seed, rows) in [(1, 1), (2, 8), (3, 9), (4, 23), (5, 24), (6, 100)] {
            let (k, n) = (70, 19);
            let (q, scales, bias, x) = case(seed, rows, k, n);
            let w = QuantWeights::pack(k, n, &q, scales, bias);
            let mut one = vec![0f32; rows * n];
            w.matmul(&x, rows, &mut one);
            let mut three = vec![f32::NAN; rows * n];
            multithread_tract_scope(pool.clone(), || w.matmul(&x, rows, &mut three));
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one), bits(&three), "{rows} rows");
        }
    }

    #[test]
    fn recover_refuses_weights_that_are_not_int8_multiples() {
        let w = [0.1f32, 0.2, 0.3, 0.123_456_79];
        assert!(QuantWeights::recover(&w, 4, 1).is_none());
        assert!(QuantWeights::recover(&[f32::NAN, 1.0], 2, 1).is_none());
        // A zero column is exact (scale 0).
        let (q, s) = QuantWeights::recover(&[0.0, 0.0], 2, 1).unwrap();
        assert_eq!((q, s), (vec![0, 0], vec![0.0]));
    }

    #[test]
    fn rows_of_zeros_give_the_bias_and_non_finite_rows_nan() {
        let w = QuantWeights::pack(2, 1, &[3, -4], vec![0.5], vec![0.25]);
        let mut out = [0f32; 3];
        w.matmul(&[0.0, 0.0, 1.0, f32::INFINITY, 2.0, -2.0], 3, &mut out);
        assert_eq!(out[0], 0.25);
        assert!(out[1].is_nan());
        // 2 · 3 · 0.5 + (-2) · (-4) · 0.5 + 0.25, to the activations' 16 bits.
        assert!((out[2] - 7.25).abs() < 1e-3, "{}", out[2]);
    }

    /// The model with its 36 weight matmuls as integer products stays within cosine 0.99999 of
    /// the f32 model on every token's hidden state (the activations' 16 bits are the only
    /// difference), natively with the portable kernel or AVX-512 VNNI alike.
    #[test]
    fn the_model_with_integer_matmuls_stays_with_the_f32_model() {
        use super::super::model::Model;
        let dir = std::env::var_os("CONDENSE_MODEL_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
        let onnx = std::fs::read(dir.join("model.onnx"))
            .expect("models/model.onnx: run scripts/fetch-models");
        let quant = Model::load_with(&onnx, 1, true, true).expect("model loads");
        let f32s = Model::load_with(&onnx, 1, true, false).expect("model loads");
        assert_eq!(quant.quantized, 36);
        assert_eq!(f32s.quantized, 0);
        // With the integer matmuls, `super::same`'s operators replace tract's per-platform ones.
        let kinds = |m: &Model| -> Vec<String> {
            let mut k: Vec<String> = m
                .plan
                .model()
                .nodes()
                .iter()
                .map(|n| n.op().name().to_string())
                .filter(|n| n.starts_with("Same("))
                .collect();
            k.sort();
            k.dedup();
            k
        };
        assert_eq!(
            kinds(&quant),
            ["Same(Erf)", "Same(Reduce<Sum>)", "Same(RmsNorm)"]
        );
        assert!(kinds(&f32s).is_empty());
        let products = |m: &Model| {
            let nodes = m.plan.model().nodes();
            nodes
                .iter()
                .filter(|n| n.op().name() == "SameMatMul")
                .count()
        };
        assert_eq!((products(&quant), products(&f32s)), (12, 0));
        for (batch, seq) in [(1, 40), (2, 130)] {
            let ids: Vec<i64> = (0..batch * seq)
                .map(|i| 1000 + ((i as i64 * 7919) % 28000))
                .collect();
            let mask = vec![1; batch * seq];
            let a = quant
                .run(batch, seq, ids.clone(), mask.clone(), 0)
                .expect("runs");
            let b = f32s.run(batch, seq, ids, mask, 0).expect("runs");
            for (x, y) in a
                .chunks(super::super::DIMS)
                .zip(b.chunks(super::super::DIMS))
            {
                let dot: f64 = x
                    .iter()
                    .zip(y)
                    .map(|(p, q)| f64::from(*p) * f64::from(*q))
                    .sum();
                let norm = |v: &[f32]| v.iter().map(|p| f64::from(*p).powi(2)).sum::<f64>().sqrt();
                let cosine = dot / (norm(x) * norm(y));
                assert!(cosine >= 0.99999, "{batch}×{seq}: cosine {cosine}");
            }
        }
    }

    #[test]
    fn magic_rounding_is_round_ties_even() {
        for i in -70_000..70_000 {
            let y = i as f32 * 0.5 + 0.25 * (i % 3) as f32;
            if y.abs() <= 32767.0 {
                assert_eq!(quantize(y, 1.0), y.round_ties_even() as i16, "{y}");
            }
        }
    }

    #[test]
    fn einsum_forms() {
        assert_eq!(weight_product("amk,kn->amn", 2), Some(1));
        assert_eq!(weight_product("ambk,bkn->amn", 3), Some(2));
        assert_eq!(weight_product("mk,kn->mn", 2), Some(1));
        // Transposed weights, a batched weight, a reordered output: not this product.
        assert_eq!(weight_product("amk,nk->amn", 2), None);
        assert_eq!(weight_product("amk,akn->amn", 3), None);
        assert_eq!(weight_product("amk,kn->anm", 2), None);
        assert_eq!(weight_product("ambk,kbn->amn", 3), None);
    }
}
