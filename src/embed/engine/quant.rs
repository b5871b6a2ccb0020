//! Integer weight matmuls: the model's int8 weights times its activations rounded to 16 bits.
//!
//! The int8 model stores each weight matrix `W` (`k × n`) as int8 integers `q` and one f32 scale
//! per output column `s`, and tract's declutter folds `W = f32(q) · s` into an f32 constant. Its
//! f32 kernels then do `k · n` f32 multiply-adds per token. wasm has no f32 fused multiply-add,
//! but it has `i32x4.dot_i16x8_s`: 8 products of 16-bit integers summed pairwise into 4 `i32`s in
//! one instruction, twice the work of an f32 multiply and add.
//!
//! [`QuantMatMul`] takes the place of `x · W` (and the bias addition after it):
//! - at load, [`QuantWeights::recover`] reads `q` and `s` back from the weights' f32 values,
//!   and checks that `f32(q) · s` gives every weight exactly, or leaves the matmul to tract.
//!   For the int8 model, `super::onnx` does it on each matrix's values computed from the ONNX
//!   initialisers, before tract parses the graph (no f32 copy of the model is made), and the
//!   node reaches tract as a [`QuantMatMul`]; [`swap_in`] does it on the folded constants of
//!   the `EinSum`s left (a model whose weights are stored as f32);
//! - per call, each row of `x` (a token) is rounded to 16-bit integers on its own scale,
//!   `r = max|x| / 32767`;
//! - `y[t, j] = ((Σ x_q · q) · r_t) · s_j + bias_j`, the integer sums exact in `i32`, taken in
//!   chunks of [`CHUNK`](super::int8::CHUNK) steps (32767 · 128 · 512 < 2³¹, so no sum can
//!   overflow) and added up as f32 in chunk order.
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

use super::int8::{Activations, QuantWeights};

/// Whether [`super::model::Model::load`] uses the integer matmuls where [`available`] (`false`
/// gives tract's f32 matmuls everywhere, to measure them). Measured with it on (2026-11-26,
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

/// The product for the rows of `x` (`rows × k`, row-major) into `out` (`rows × n`), by the
/// portable kernel or the platform's (`super::x86_quant` with AVX-512 VNNI or AVX2,
/// `super::wasm_quant` in wasm).
///
/// Natively, under a multi-thread executor (`EmbedOptions::threads` > 1, installed by
/// `Model::run`), the rows are split into one contiguous run of row panels per thread, each
/// packed and multiplied on its own. A row's result depends on that row alone (its own
/// scale, exact integer sums), so the bits are those of one thread.
pub(crate) fn matmul(w: &QuantWeights, x: &[f32], rows: usize, out: &mut [f32]) {
    #[cfg(not(target_arch = "wasm32"))]
    if let tract_linalg::multithread::Executor::MultiThread(pool) =
        tract_linalg::multithread::current_tract_executor()
    {
        use super::int8::TILE;
        let panels = rows.div_ceil(TILE);
        let tasks = pool.current_num_threads().min(panels);
        if tasks > 1 && w.k > 0 && w.n > 0 {
            use rayon::prelude::*;
            let per = panels.div_ceil(tasks) * TILE;
            pool.install(|| {
                out[..rows * w.n]
                    .par_chunks_mut(per * w.n)
                    .zip(x[..rows * w.k].par_chunks(per * w.k))
                    .for_each(|(out, x)| matmul_rows(w, x, x.len() / w.k, out));
            });
            return;
        }
    }
    matmul_rows(w, x, rows, out);
}

/// [`matmul`] on the calling thread.
fn matmul_rows(w: &QuantWeights, x: &[f32], rows: usize, out: &mut [f32]) {
    let packed = pack(x, rows, w.k);
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    super::wasm_quant::matmul(w, &packed, out);
    #[cfg(target_arch = "x86_64")]
    if super::x86_quant::matmul(w, &packed, out) {
        return;
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    w.matmul_portable(&packed, out);
}

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
            matmul(
                &self.weights,
                view.as_slice::<f32>()?,
                rows,
                dst.as_slice_mut::<f32>()?,
            );
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
            weights: Arc::new(QuantWeights::pack_columns(k, n, &q, scales, bias)),
            contracted,
        };
        found.push((last, node.name.clone(), x, op));
    }
    let count = found.len();
    for (last, name, x, op) in found {
        super::graph::wire_in_place_of(model, last, format!("{name}.quant"), op, &[x])?;
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
    use super::super::int8::{quantize, random_product, row_scale, CHUNK};
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
        random_product(
            &mut super::super::xorshift::xorshift(seed),
            rows,
            k,
            n,
            false,
        )
    }

    proptest! {
        #[test]
        fn packed_kernel_equals_the_oracle(
            seed in any::<u64>(), rows in 1usize..20, k in 1usize..1100, n in 1usize..20,
        ) {
            let (q, scales, bias, x) = case(seed, rows, k, n);
            let w = QuantWeights::pack(k, n, &q, scales.clone(), bias.clone());
            let mut out = vec![0f32; rows * n];
            matmul(&w, &x, rows, &mut out);
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
            // The integers come back column by column: row i / n, column i % n.
            for i in 0..k * n {
                prop_assert_eq!(f32::from(q2[(i % n) * k + i / n]) * s2[i % n], w[i]);
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
            matmul(&w, &x, rows, &mut one);
            let mut three = vec![f32::NAN; rows * n];
            multithread_tract_scope(pool.clone(), || matmul(&w, &x, rows, &mut three));
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
        matmul(&w, &[0.0, 0.0, 1.0, f32::INFINITY, 2.0, -2.0], 3, &mut out);
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
        use super::super::model::{Model, OnnxBytes};
        let dir = std::env::var_os("CONDENSE_MODEL_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
        let onnx = std::fs::read(dir.join("model.onnx"))
            .expect("models/model.onnx: run scripts/fetch-models");
        let quant =
            Model::load_with(OnnxBytes::Borrowed(&onnx), 1, true, true).expect("model loads");
        let f32s =
            Model::load_with(OnnxBytes::Borrowed(&onnx), 1, true, false).expect("model loads");
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
                .chunks(crate::embed::vector::DIMS)
                .zip(b.chunks(crate::embed::vector::DIMS))
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
