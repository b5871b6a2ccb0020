//! Run-time repairs to tract's plan for the model's symbolic shapes (`batch`, `sequence`).
//!
//! tract 0.23.9 gives its fast element-wise kernels (`OptBinByScalar`, `OptBinUnicast`) only
//! to tensors whose strides are exactly the natural ones, and falls back to a generic
//! per-element loop otherwise. A reshape that inserts a unit axis (`[b·s, 1536]` → `[1, s,
//! 1536]` when `batch = 1`) leaves the unit axis with its neighbour's stride: the bytes are in
//! natural order, but the strides differ, so every GELU and bias step after it took the slow
//! loop. [`NaturalStrides`] wraps each reshape of the optimised plan and resets such strides
//! (no copy: only unit axes differ). It computes nothing: the values are the same bits.
//!
//! An addition or multiplication whose smaller operand is broadcast along a middle axis — the
//! attention mask `[batch, 1, seq, seq]` added to the scores `[batch, heads, seq, seq]` — fits
//! neither fast kernel, and tract runs it as a generic per-element loop (11% of a 32-text batch
//! of 128 tokens). [`Broadcast`] runs it as a loop over the contiguous blocks the two operands
//! share, the same IEEE additions or multiplications in the same order per element, so the same
//! bits; anything else goes to tract's own evaluation.
//!
//! The exporter's "safe softmax", `Where(IsNaN(p), 0, p)` after each attention softmax, ran as
//! two passes over `[batch, 12, seq, seq]` — a boolean tensor, then tract's generic three-way
//! select into a new tensor. [`NanTo`] is one pass in place: a NaN becomes the constant, every
//! other value stays (the same values as the select).
//!
//! [`MaskedSoftmax`] then takes the mask addition, the softmax and that guard as one op, and
//! skips adding mask rows of zeros (every row of a text without padding): the softmax maps
//! `x + 0.0` and `x` alike, so the result is the same bits.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::logic::Iff;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

use super::graph::wire_in_place_of;

/// An [`AxisOp`] whose output gets natural strides when only its unit axes' strides differ.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct NaturalStrides(pub(crate) AxisOp);

impl Op for NaturalStrides {
    fn name(&self) -> StaticName {
        "NaturalStrides".into()
    }

    op_as_typed_op!();
}

impl EvalOp for NaturalStrides {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.0.eval(ctx, inputs)?.into_iter().map(natural).collect()
    }
}

impl TypedOp for NaturalStrides {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.0.output_facts(inputs)
    }

    as_op!();
}

/// `value` with natural strides if it differs from them on unit axes only (a relabelling);
/// otherwise unchanged.
fn natural(value: TValue) -> TractResult<TValue> {
    let shape = value.shape();
    if shape.len() < 2 {
        return Ok(value);
    }
    let want = Tensor::natural_strides(shape);
    let strides = value.strides();
    if strides == &*want
        || shape
            .iter()
            .zip(strides.iter().zip(want.iter()))
            .any(|(&dim, (s, w))| dim != 1 && s != w)
    {
        return Ok(value);
    }
    let shape = shape.to_vec();
    let mut tensor = value.into_tensor();
    let len = tensor.len();
    tensor.set_shape(&[len])?;
    tensor.set_shape(&shape)?;
    Ok(tensor.into_tvalue())
}

/// The element-wise operation a [`Broadcast`] computes (both commutative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Arith {
    Add,
    Mul,
}

/// A `TypedBinOp` (`Add` or `Mul`) evaluated block-wise on f32 when one operand has the output's
/// shape and the other is broadcast along some of its axes; tract's evaluation otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Broadcast {
    inner: TypedBinOp,
    arith: Arith,
}

impl Op for Broadcast {
    fn name(&self) -> StaticName {
        "Broadcast".into()
    }

    op_as_typed_op!();
}

impl EvalOp for Broadcast {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let Some(big) = big_operand(&inputs) else {
            return self.inner.eval(ctx, inputs);
        };
        // Owned, so a result nothing else holds is written in place.
        let mut inputs = inputs.into_iter();
        let (a, b) = match (inputs.next(), inputs.next()) {
            (Some(a), Some(b)) => (a, b),
            _ => bail!("Broadcast takes two inputs"),
        };
        let (big, small) = if big == 0 { (a, b) } else { (b, a) };
        Ok(tvec!(apply(self.arith, big, &small)?))
    }
}

impl TypedOp for Broadcast {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.inner.output_facts(inputs)
    }

    as_op!();
}

fn is_natural(t: &Tensor) -> bool {
    t.strides() == &*Tensor::natural_strides(t.shape())
}

/// Which operand (0 or 1) has the result's shape, if [`apply`] can run: both natural f32
/// tensors of one rank, every axis of the other 1 or the same.
fn big_operand(inputs: &[TValue]) -> Option<usize> {
    let [a, b] = inputs else {
        return None;
    };
    let fits = |big: &Tensor, small: &Tensor| {
        big.is_plain()
            && small.is_plain()
            && big.datum_type() == f32::datum_type()
            && small.datum_type() == f32::datum_type()
            && big.rank() == small.rank()
            && big
                .shape()
                .iter()
                .zip(small.shape())
                .all(|(&n, &m)| m == n || m == 1)
            && is_natural(big)
            && is_natural(small)
    };
    if fits(a, b) {
        Some(0)
    } else if fits(b, a) {
        Some(1)
    } else {
        None
    }
}

/// `big ∘ small` block by block, if [`big_operand`] allows it; `None` otherwise (tests).
#[cfg(all(test, not(target_arch = "wasm32")))]
fn blockwise(arith: Arith, inputs: &[TValue]) -> TractResult<Option<TValue>> {
    match big_operand(inputs) {
        Some(big) => apply(arith, inputs[big].clone(), &inputs[1 - big]).map(Some),
        None => Ok(None),
    }
}

/// `big ∘ small` (see [`big_operand`]), in `big`'s storage when nothing else holds it.
fn apply(arith: Arith, big: TValue, small: &TValue) -> TractResult<TValue> {
    let shape = big.shape().to_vec();
    let small_shape = small.shape();
    // Axes `unicast..` are the same in both: each block of `block` values is one run of both.
    let mut unicast = shape.len();
    while unicast > 0 && small_shape[unicast - 1] == shape[unicast - 1] {
        unicast -= 1;
    }
    let block: usize = shape[unicast..].iter().product();
    if block == 0 {
        return Ok(big);
    }
    let small_strides = small.strides().to_vec();
    let mut out = big.into_tensor();
    let mut dst_view = out.try_as_plain_ram_mut()?;
    let dst = dst_view.as_slice_mut::<f32>()?;
    let src_view = small.try_as_plain_ram()?;
    let src = src_view.as_slice::<f32>()?;
    for (outer, run) in dst.chunks_exact_mut(block).enumerate() {
        let mut rest = outer;
        let mut offset = 0usize;
        for axis in (0..unicast).rev() {
            let i = rest % shape[axis];
            rest /= shape[axis];
            if small_shape[axis] != 1 {
                offset += i * small_strides[axis] as usize;
            }
        }
        let from = src
            .get(offset..offset + block)
            .context("broadcast operand shorter than its shape")?;
        match arith {
            Arith::Add => run.iter_mut().zip(from).for_each(|(d, s)| *d += *s),
            Arith::Mul => run.iter_mut().zip(from).for_each(|(d, s)| *d *= *s),
        }
    }
    Ok(out.into_tvalue())
}

/// Wraps every generic `Add` and `Mul` of an optimised model in [`Broadcast`]; returns how many.
pub(crate) fn blockwise_broadcasts(model: &mut TypedModel) -> usize {
    let mut wrapped = 0;
    for node in model.nodes_mut() {
        // Only the plain ops: one with an output type of its own (quantised) stays tract's.
        let Some(op) = node.op_as::<TypedBinOp>().filter(|op| op.1.is_none()) else {
            continue;
        };
        let arith = if op.0.is::<math::Add>() {
            Arith::Add
        } else if op.0.is::<math::Mul>() {
            Arith::Mul
        } else {
            continue;
        };
        node.op = Box::new(Broadcast {
            inner: op.clone(),
            arith,
        });
        wrapped += 1;
    }
    wrapped
}

/// `x`, with every NaN replaced by `value`: `Iff(IsNan(x), value, x)` in one pass (f32).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NanTo {
    value: f32,
}

impl Eq for NanTo {}

impl Op for NanTo {
    fn name(&self) -> StaticName {
        "NanTo".into()
    }

    op_as_typed_op!();
}

impl EvalOp for NanTo {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let mut x = x.into_tensor();
        {
            let mut view = x.try_as_plain_ram_mut()?;
            // A select on every value (no branch), so the loop vectorises.
            for v in view.as_slice_mut::<f32>()? {
                let x = *v;
                *v = if x.is_nan() { self.value } else { x };
            }
        }
        Ok(tvec!(x.into_tvalue()))
    }
}

impl TypedOp for NanTo {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let fact = inputs.first().context("NanTo takes one input")?;
        Ok(tvec!(fact.datum_type.fact(fact.shape.clone())))
    }

    as_op!();
}

/// Replaces each `Iff(IsNan(x), c, x)` of f32 `x` and scalar constant `c` by [`NanTo`]`(c)` on
/// `x`; returns how many.
pub(crate) fn nan_guards(model: &mut TypedModel) -> TractResult<usize> {
    let mut found = Vec::new();
    for node in model.nodes() {
        if node.op_as::<Iff>().is_none() || node.inputs.len() != 3 {
            continue;
        }
        let (cond, then, other) = (node.inputs[0], node.inputs[1], node.inputs[2]);
        let test = model.node(cond.node);
        let is_nan = test
            .op_as::<ElementWiseOp>()
            .is_some_and(|op| op.0.is::<math::IsNan>());
        if !is_nan || test.inputs.first() != Some(&other) {
            continue;
        }
        let x = model.outlet_fact(other)?;
        let c = model.outlet_fact(then)?;
        let Some(value) = c.konst.as_ref().filter(|k| k.len() == 1) else {
            continue;
        };
        if x.datum_type != f32::datum_type() || value.datum_type() != f32::datum_type() {
            continue;
        }
        let value = value.cast_to_scalar::<f32>()?;
        found.push((node.id, node.name.clone(), other, value));
    }
    let count = found.len();
    for (id, name, x, value) in found {
        wire_in_place_of(model, id, format!("{name}.nan_to"), NanTo { value }, &[x])?;
    }
    Ok(count)
}

/// Rows [`MaskedSoftmax`] takes through its three steps at a time: ~16 KB of scores, so each
/// step reads what the one before wrote from the L1 cache.
const CHUNK_VALUES: usize = 4096;

/// `NanTo(Softmax(scores + mask))`, the attention's three steps after its scores, in one op: a
/// few rows at a time go through the mask addition, the softmax tract runs on such rows and the
/// NaN guard.
///
/// What it saves is the mask addition where a mask row is all zeros: every row of a text
/// without padding, so all of them for a single text. Adding `+0.0` changes only `-0.0` (to
/// `+0.0`), and the softmax gives both zeros the same result, so skipping it gives the same
/// bits (the tests hold tract's kernels to that, zeros of either sign at a row's maximum
/// included). Measured natively, 256 tokens, one text, in-process A/B: +2.4% texts/s. Fusing
/// the three passes alone measured no change (±1%): they are not what the time goes to.
///
/// Each other value gets the same operations as in the three ops it replaces: the same IEEE
/// addition, the kernel tract's `Softmax` runs on each row of such a tensor (rows are
/// independent), the same select. Inputs the fused loop does not take (another type, a mask
/// broadcast along the columns, rows of a length tract does not give its row kernel) run
/// through the three ops in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MaskedSoftmax {
    add: Broadcast,
    softmax: Softmax,
    nan_to: NanTo,
    /// Rows of every length through `super::same`'s softmax, natively too (with the integer
    /// weight matmuls, whose roundings need both builds' bits to agree).
    same: bool,
}

impl Op for MaskedSoftmax {
    fn name(&self) -> StaticName {
        "MaskedSoftmax".into()
    }

    op_as_typed_op!();
}

impl EvalOp for MaskedSoftmax {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        if let Some(rows) = self.fused_rows(&inputs) {
            let mut inputs = inputs.into_iter();
            let (a, b) = match (inputs.next(), inputs.next()) {
                (Some(a), Some(b)) => (a, b),
                _ => bail!("MaskedSoftmax takes two inputs"),
            };
            let (scores, mask) = if rows.scores == 0 { (a, b) } else { (b, a) };
            return Ok(tvec!(self.fused(scores, &mask, rows)?));
        }
        let sum = self.add.eval(ctx, inputs)?;
        let probabilities = self.softmax.eval(ctx, sum)?;
        self.nan_to.eval(ctx, probabilities)
    }
}

impl TypedOp for MaskedSoftmax {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.add.output_facts(inputs)
    }

    as_op!();
}

/// How [`MaskedSoftmax::fused`] runs: which input holds the scores, its rows' length and
/// tract's row softmax kernel.
struct Rows {
    scores: usize,
    len: usize,
    kernel: RowKernel,
}

/// The softmax tract's `Softmax` runs on rows of a natural f32 tensor: its row kernel where the
/// platform has one, else its max, exp-sum and scale kernels, row by row.
enum RowKernel {
    /// `super::same`'s row softmax: tract's wasm row kernel (the same bits, the NaN guard
    /// included) in both builds' code. In wasm for rows of a multiple of 4; in both builds for
    /// every row with the integer weight matmuls ([`MaskedSoftmax`]'s `same`).
    Same,
    Rows(tract_linalg::routines::SoftmaxRowsF32),
    Steps {
        max: Box<dyn tract_linalg::reduce::Reduce<f32>>,
        exp_sum: Box<dyn tract_linalg::reduce::MapReduce<f32, f32>>,
        scale: Box<dyn tract_linalg::element_wise::ElementWise<f32, f32>>,
    },
}

impl RowKernel {
    fn new(same: bool) -> Option<RowKernel> {
        use tract_linalg::routines::{softmax_rows_f32, Func};
        if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) || same {
            return Some(RowKernel::Same);
        }
        if let Some(rows) = softmax_rows_f32() {
            return Some(RowKernel::Rows(rows));
        }
        Some(RowKernel::Steps {
            max: Func::ReduceMax.reduce_f32().ok()?,
            exp_sum: Func::Softmax2.map_reduce_f32().ok()?,
            scale: Func::MulByScalar.ew_f32_param().ok()?,
        })
    }

    /// Softmax of each row of `len` values of `chunk`, in place, then each NaN → `nan_to`.
    fn run(&self, chunk: &mut [f32], len: usize, nan_to: f32) -> TractResult<()> {
        match self {
            RowKernel::Same => {
                ensure!(
                    super::same::softmax_rows(chunk, len, nan_to),
                    "rows of {len} for the row softmax"
                );
                return Ok(());
            }
            RowKernel::Rows(rows) => rows(chunk, len),
            RowKernel::Steps {
                max,
                exp_sum,
                scale,
            } => {
                for row in chunk.chunks_mut(len) {
                    let max = max.run(row)?;
                    let sum = exp_sum.run_with_params(row, max)?;
                    scale.run_with_params(row, sum.recip())?;
                }
            }
        }
        for v in chunk.iter_mut() {
            let x = *v;
            *v = if x.is_nan() { nan_to } else { x };
        }
        Ok(())
    }
}

impl MaskedSoftmax {
    /// Whether the fused loop gives the three ops' values: the addition's block path applies
    /// with the mask as the broadcast operand and whole rows of it, and tract's `Softmax` would
    /// run its row kernel (a plain softmax over the last axis only, rows of a multiple of 4).
    fn fused_rows(&self, inputs: &[TValue]) -> Option<Rows> {
        let scores = big_operand(inputs)?;
        let (x, mask) = (&inputs[scores], &inputs[1 - scores]);
        let rank = x.rank();
        let len = *x.shape().last()?;
        let last_axis_only = self.softmax.axes.len() == 1 && self.softmax.axes[0] + 1 == rank;
        let plain =
            self.softmax.kind == SoftmaxKind::Softmax && self.softmax.quant_output_dt.is_none();
        if !last_axis_only || !plain || len == 0 || mask.shape()[rank - 1] != len {
            return None;
        }
        let kernel = RowKernel::new(self.same)?;
        // tract's row kernel (and the wasm build's copy) takes rows of a multiple of 4 only
        // (its other path runs the steps); `super::same`'s takes every length.
        if !self.same && !matches!(kernel, RowKernel::Steps { .. }) && len % 4 != 0 {
            return None;
        }
        Some(Rows {
            scores,
            len,
            kernel,
        })
    }

    fn fused(&self, scores: TValue, mask: &TValue, rows: Rows) -> TractResult<TValue> {
        let shape = scores.shape().to_vec();
        let mut out = scores.into_tensor();
        self.fused_in_place(&mut out, mask, &shape, rows)?;
        Ok(out.into_tvalue())
    }

    fn fused_in_place(
        &self,
        out: &mut Tensor,
        mask: &TValue,
        shape: &[usize],
        rows: Rows,
    ) -> TractResult<()> {
        let mask_shape = mask.shape().to_vec();
        let mask_strides = mask.strides().to_vec();
        let rank = shape.len();
        let mut dst_view = out.try_as_plain_ram_mut()?;
        let dst = dst_view.as_slice_mut::<f32>()?;
        let src_view = mask.try_as_plain_ram()?;
        let src = src_view.as_slice::<f32>()?;
        // A mask row of zeros changes nothing the softmax sees: `x + 0.0` is `x` but for
        // `-0.0`, which becomes `+0.0`, and the softmax maps both zeros alike (the tests hold
        // tract's kernels to that). Its rows are shared by the heads: which are zeros, once.
        let zero_rows: Vec<bool> = src
            .chunks(rows.len)
            .map(|row| row.iter().fold(0u32, |acc, v| acc | (v.to_bits() << 1)) == 0)
            .collect();
        let per_chunk = (CHUNK_VALUES / rows.len).max(1);
        // The mask's row for each row of scores, in row order: an odometer over the scores'
        // outer axes (`index`), moving `offset` by the mask's stride on each axis the mask does
        // not broadcast (size 1: stride 0). No division per row (in wasm, a division per axis
        // and row cost more than the softmax of 16-value rows).
        let outer = rank - 1;
        let steps: Vec<usize> = (0..outer)
            .map(|axis| match mask_shape[axis] {
                1 => 0,
                _ => mask_strides[axis] as usize,
            })
            .collect();
        let mut index = vec![0usize; outer];
        let mut offset = 0usize;
        for chunk in dst.chunks_mut(per_chunk * rows.len) {
            for row in chunk.chunks_exact_mut(rows.len) {
                let from = src
                    .get(offset..offset + rows.len)
                    .context("mask shorter than its shape")?;
                if !zero_rows.get(offset / rows.len).copied().unwrap_or(false) {
                    row.iter_mut().zip(from).for_each(|(d, s)| *d += *s);
                }
                // Next row: the last outer axis first, carrying into the ones before it.
                for axis in (0..outer).rev() {
                    index[axis] += 1;
                    offset += steps[axis];
                    if index[axis] < shape[axis] {
                        break;
                    }
                    index[axis] = 0;
                    offset -= steps[axis] * shape[axis];
                }
            }
            rows.kernel.run(chunk, rows.len, self.nan_to.value)?;
        }
        Ok(())
    }
}

/// Replaces each `NanTo(Softmax(Broadcast(Add)(scores, mask)))` whose two inner results have
/// no other reader by one [`MaskedSoftmax`]; returns how many. Runs after [`nan_guards`] and
/// [`blockwise_broadcasts`], whose ops it looks for. With `same`, every row goes through
/// `super::same`'s softmax, natively too.
pub(crate) fn masked_softmaxes(model: &mut TypedModel, same: bool) -> TractResult<usize> {
    let single_reader = |model: &TypedModel, node: &TypedNode| {
        node.outputs.len() == 1
            && node.outputs[0].successors.len() == 1
            && !model
                .output_outlets()
                .is_ok_and(|o| o.contains(&node.id.into()))
    };
    let mut found = Vec::new();
    for node in model.nodes() {
        let Some(nan_to) = node.op_as::<NanTo>() else {
            continue;
        };
        let Some(sm_node) = node.inputs.first().map(|i| model.node(i.node)) else {
            continue;
        };
        let Some(softmax) = sm_node.op_as::<Softmax>() else {
            continue;
        };
        let Some(add_node) = sm_node.inputs.first().map(|i| model.node(i.node)) else {
            continue;
        };
        let Some(add) = add_node
            .op_as::<Broadcast>()
            .filter(|b| b.arith == Arith::Add)
        else {
            continue;
        };
        if add_node.inputs.len() != 2
            || !single_reader(model, sm_node)
            || !single_reader(model, add_node)
        {
            continue;
        }
        let op = MaskedSoftmax {
            add: add.clone(),
            softmax: softmax.clone(),
            nan_to: nan_to.clone(),
            same,
        };
        found.push((node.id, node.name.clone(), add_node.inputs.clone(), op));
    }
    let count = found.len();
    for (id, name, inputs, op) in found {
        wire_in_place_of(model, id, format!("{name}.masked_softmax"), op, &inputs)?;
    }
    Ok(count)
}

/// Wraps every reshape of an optimised model in [`NaturalStrides`]; returns how many.
pub(crate) fn natural_strides(model: &mut TypedModel) -> usize {
    let mut wrapped = 0;
    for node in model.nodes_mut() {
        if let Some(op) = node.op_as::<AxisOp>() {
            node.op = Box::new(NaturalStrides(op.clone()));
            wrapped += 1;
        }
    }
    wrapped
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tensor(shape: &[usize], seed: u32) -> Tensor {
        let len = shape.iter().product::<usize>();
        let values: Vec<f32> = (0..len)
            .map(|i| {
                let x = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
                (x % 20_011) as f32 / 97.0 - 100.0
            })
            .collect();
        Tensor::from_shape(shape, &values).expect("shape and data agree")
    }

    fn bits(values: &TVec<TValue>) -> (Vec<usize>, Vec<u32>) {
        let t = &values[0];
        let view = t.try_as_plain_ram().expect("plain");
        let data = view.as_slice::<f32>().expect("f32");
        (
            t.shape().to_vec(),
            data.iter().map(|x| x.to_bits()).collect(),
        )
    }

    fn ops(arith: Arith) -> (Broadcast, TypedBinOp) {
        let inner = match arith {
            Arith::Add => TypedBinOp(Box::new(math::Add), None),
            Arith::Mul => TypedBinOp(Box::new(math::Mul), None),
        };
        (
            Broadcast {
                inner: inner.clone(),
                arith,
            },
            inner,
        )
    }

    proptest! {
        /// Block by block gives tract's own bits, whichever operand is the broadcast one.
        #[test]
        fn blockwise_equals_tract(
            shape in proptest::collection::vec(1usize..5, 1..5),
            unit in proptest::collection::vec(any::<bool>(), 4),
            small_first in any::<bool>(),
            mul in any::<bool>(),
            seed in any::<u32>(),
        ) {
            let small_shape: Vec<usize> = shape
                .iter()
                .zip(&unit)
                .map(|(&d, &u)| if u { 1 } else { d })
                .collect();
            let big = tensor(&shape, seed);
            let small = tensor(&small_shape, seed ^ 0x9e37);
            let inputs: TVec<TValue> = if small_first {
                tvec![small.into_tvalue(), big.into_tvalue()]
            } else {
                tvec![big.into_tvalue(), small.into_tvalue()]
            };
            let arith = if mul { Arith::Mul } else { Arith::Add };
            let (ours, theirs) = ops(arith);
            prop_assert!(blockwise(arith, &inputs).expect("f32").is_some());
            let got = ours.eval_out_of_plan(inputs.clone()).expect("eval").expect("out of plan");
            let want = theirs.eval_out_of_plan(inputs).expect("eval").expect("out of plan");
            prop_assert_eq!(bits(&got), bits(&want));
        }
    }

    #[test]
    fn attention_mask_shape_takes_the_block_path() {
        // scores [batch, heads, seq, seq] + mask [batch, 1, seq, seq]: the case it is for.
        let scores = tensor(&[2, 3, 4, 4], 1);
        let mask = tensor(&[2, 1, 4, 4], 2);
        let inputs = tvec![scores.clone().into_tvalue(), mask.clone().into_tvalue()];
        let out = blockwise(Arith::Add, &inputs)
            .expect("f32")
            .expect("block path");
        let out = out.try_as_plain_ram().expect("plain");
        let out = out.as_slice::<f32>().expect("f32");
        let s = scores.try_as_plain_ram().expect("plain");
        let s = s.as_slice::<f32>().expect("f32");
        let m = mask.try_as_plain_ram().expect("plain");
        let m = m.as_slice::<f32>().expect("f32");
        for b in 0..2 {
            for h in 0..3 {
                for i in 0..16 {
                    let at = (b * 3 + h) * 16 + i;
                    assert_eq!(out[at].to_bits(), (s[at] + m[b * 16 + i]).to_bits());
                }
            }
        }
    }

    #[test]
    fn other_types_and_shapes_go_to_tract() {
        let ints = tvec![
            Tensor::from_shape(&[2, 2], &[1i64, 2, 3, 4])
                .expect("shape")
                .into_tvalue(),
            Tensor::from_shape(&[1, 2], &[10i64, 20])
                .expect("shape")
                .into_tvalue(),
        ];
        assert!(blockwise(Arith::Add, &ints).expect("no error").is_none());
        let (ours, _) = ops(Arith::Add);
        let got = ours
            .eval_out_of_plan(ints)
            .expect("eval")
            .expect("out of plan");
        let view = got[0].try_as_plain_ram().expect("plain");
        assert_eq!(view.as_slice::<i64>().expect("i64"), &[11, 22, 13, 24]);
        // Both operands broadcast (neither has the result's shape): tract's evaluation.
        let both = tvec![
            tensor(&[1, 3], 5).into_tvalue(),
            tensor(&[2, 1], 6).into_tvalue(),
        ];
        assert!(blockwise(Arith::Mul, &both).expect("no error").is_none());
    }

    /// `Where(IsNaN(x), c, x)` becomes one `NanTo`, with the same outputs as before.
    #[test]
    fn nan_guard_is_fused_with_the_same_values() {
        let build = || -> TractResult<TypedModel> {
            let mut model = TypedModel::default();
            let x = model.add_source("x", f32::fact([2, 3]))?;
            let nan = model.wire_node("isnan", math::is_nan(), &[x])?;
            let zero = model.add_const("zero", tensor2(&[[0.5f32]]))?;
            let out = model.wire_node("where", Iff, &[nan[0], zero, x])?;
            model.select_output_outlets(&out)?;
            Ok(model)
        };
        let input = tensor2(&[[1.0f32, f32::NAN, -2.0], [f32::NAN, 0.0, f32::INFINITY]]);
        let want = build()
            .and_then(|m| m.into_runnable())
            .and_then(|p| p.run(tvec![input.clone().into_tvalue()]))
            .expect("tract's graph runs");
        let mut fused = build().expect("graph");
        assert_eq!(nan_guards(&mut fused).expect("rewrite"), 1);
        assert!(fused.nodes().iter().any(|n| n.op_is::<NanTo>()));
        let got = fused
            .into_runnable()
            .and_then(|p| p.run(tvec![input.into_tvalue()]))
            .expect("fused graph runs");
        assert_eq!(bits(&got), bits(&want));
        let view = got[0].try_as_plain_ram().expect("plain");
        assert_eq!(
            view.as_slice::<f32>().expect("f32"),
            &[1.0, 0.5, -2.0, 0.5, 0.0, f32::INFINITY]
        );
    }

    /// A select that is not a NaN guard of its own input is left alone.
    #[test]
    fn other_selects_are_not_nan_guards() {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([3])).expect("source");
        let y = model.add_source("y", f32::fact([3])).expect("source");
        let nan = model
            .wire_node("isnan", math::is_nan(), &[y])
            .expect("isnan");
        let zero = model.add_const("zero", tensor1(&[0f32])).expect("const");
        let out = model
            .wire_node("where", Iff, &[nan[0], zero, x])
            .expect("iff");
        model.select_output_outlets(&out).expect("output");
        assert_eq!(nan_guards(&mut model).expect("rewrite"), 0);
    }

    #[test]
    fn unit_axis_strides_are_reset_without_changing_values() {
        let mut t = tensor(&[4, 3], 7);
        t.insert_axis(0).expect("insert");
        assert_eq!(t.strides(), &[3, 3, 1]);
        let before: Vec<u32> = t
            .try_as_plain_ram()
            .expect("plain")
            .as_slice::<f32>()
            .expect("f32")
            .iter()
            .map(|x| x.to_bits())
            .collect();
        let fixed = natural(t.into_tvalue()).expect("natural");
        assert_eq!(fixed.shape(), &[1, 4, 3]);
        assert_eq!(fixed.strides(), &[12, 3, 1]);
        let (_, after) = bits(&tvec![fixed]);
        assert_eq!(after, before);
        // Already natural: the same value back.
        let t = tensor(&[2, 3], 8).into_tvalue();
        let back = natural(t.clone()).expect("natural");
        assert_eq!(back.strides(), t.strides());
    }

    /// `NanTo(Softmax(scores + mask))` as tract's own ops, then with [`masked_softmaxes`]'
    /// rewrite; both outputs (`scores` `[b, h, s, s]`, `mask` of `mask_shape`).
    fn softmax_both_ways(
        scores: &Tensor,
        mask: &Tensor,
        mask_shape: &[usize],
    ) -> (TVec<TValue>, TVec<TValue>, usize) {
        let shape = scores.shape().to_vec();
        let rank = shape.len();
        let build = || -> TractResult<TypedModel> {
            let mut model = TypedModel::default();
            let x = model.add_source("scores", f32::fact(&shape))?;
            let m = model.add_source("mask", f32::fact(mask_shape))?;
            let sum = model.wire_node("add", TypedBinOp(Box::new(math::Add), None), &[x, m])?;
            let softmax = Softmax {
                axes: tvec![rank - 1],
                quant_output_dt: None,
                kind: SoftmaxKind::Softmax,
            };
            let p = model.wire_node("softmax", softmax, &sum)?;
            let nan = model.wire_node("isnan", math::is_nan(), &p)?;
            let zero = model.add_const("zero", Tensor::from(0.0f32).broadcast_into_rank(rank)?)?;
            let out = model.wire_node("where", Iff, &[nan[0], zero, p[0]])?;
            model.select_output_outlets(&out)?;
            Ok(model)
        };
        let inputs = || tvec![scores.clone().into_tvalue(), mask.clone().into_tvalue()];
        let want = build()
            .and_then(|m| m.into_runnable())
            .and_then(|p| p.run(inputs()))
            .expect("tract's graph runs");
        let mut fused = build().expect("graph");
        nan_guards(&mut fused).expect("nan guards");
        blockwise_broadcasts(&mut fused);
        let count = masked_softmaxes(&mut fused, false).expect("rewrite");
        let got = fused
            .into_runnable()
            .and_then(|p| p.run(inputs()))
            .expect("fused graph runs");
        (want, got, count)
    }

    /// Scores with zeros of both signs where they matter (a row's maximum, a whole row).
    fn scores_with_zeros(shape: &[usize], seed: u32) -> Tensor {
        let t = tensor(shape, seed);
        let len = *shape.last().expect("rank ≥ 1");
        let mut data = t
            .try_as_plain_ram()
            .expect("plain")
            .as_slice::<f32>()
            .expect("f32")
            .to_vec();
        for (r, row) in data.chunks_mut(len).enumerate() {
            match r % 4 {
                // Negative values with a maximum of -0.0.
                0 => {
                    row.iter_mut().for_each(|v| *v = -v.abs() - 1.0);
                    row[r % len] = -0.0;
                }
                1 => row.iter_mut().for_each(|v| *v = -0.0),
                2 => row.iter_mut().enumerate().for_each(|(i, v)| {
                    *v = if i % 2 == 0 { -0.0 } else { 0.0 };
                }),
                _ => {}
            }
        }
        Tensor::from_shape(shape, &data).expect("shape and data agree")
    }

    /// A mask of `shape`: `kind` 0 all `+0.0`, 1 all `-0.0`, 2 rows of zeros and rows with
    /// `f32::MIN` (padding, as the exporter writes it), 3 as 2 with a row of `-inf` (a row
    /// masked whole: NaN from the softmax, then the guard's value).
    fn mask(shape: &[usize], kind: u8) -> Tensor {
        let len = *shape.last().expect("rank ≥ 1");
        let total = shape.iter().product::<usize>();
        let values: Vec<f32> = (0..total)
            .map(|i| {
                let (row, col) = (i / len, i % len);
                match kind {
                    0 => 0.0,
                    1 => -0.0,
                    _ if kind == 3 && row == 0 => f32::NEG_INFINITY,
                    _ if row % 2 == 1 && col + 1 == len => f32::MIN,
                    _ => 0.0,
                }
            })
            .collect();
        Tensor::from_shape(shape, &values).expect("shape and data agree")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The fused op gives the three ops' bits: zeros of either sign in the scores, masks of
        /// zeros (skipped) or not, a row masked whole, rows of any length (a multiple of 4 or
        /// not), and a mask broadcast along the rows or, outside the fused loop, the columns.
        #[test]
        fn masked_softmax_equals_the_three_ops(
            batch in 1usize..3,
            heads in 1usize..4,
            seq in 1usize..11,
            kind in 0u8..4,
            layout in 0u8..3,
            seed in any::<u32>(),
        ) {
            let shape = [batch, heads, seq, seq];
            let mask_shape = match layout {
                0 => [batch, 1, seq, seq],
                1 => [batch, 1, 1, seq],
                _ => [batch, 1, seq, 1],
            };
            let scores = scores_with_zeros(&shape, seed);
            let (want, got, count) = softmax_both_ways(&scores, &mask(&mask_shape, kind), &mask_shape);
            prop_assert_eq!(count, 1);
            prop_assert_eq!(bits(&got), bits(&want));
        }
    }

    /// At the model's size (256 tokens, 12 heads) with its mask of zeros: the same bits.
    #[test]
    fn masked_softmax_at_the_models_size() {
        let shape = [1, 12, 256, 256];
        let mask_shape = [1, 1, 256, 256];
        for kind in [0, 2] {
            let scores = scores_with_zeros(&shape, 7);
            let (want, got, count) =
                softmax_both_ways(&scores, &mask(&mask_shape, kind), &mask_shape);
            assert_eq!(count, 1);
            assert_eq!(bits(&got), bits(&want), "mask kind {kind}");
        }
    }

    /// A softmax whose sum has another reader is not fused (its value is needed).
    #[test]
    fn softmax_with_other_readers_is_left_alone() {
        let build = || -> TractResult<TypedModel> {
            let mut model = TypedModel::default();
            let x = model.add_source("scores", f32::fact([1, 2, 4, 4]))?;
            let m = model.add_source("mask", f32::fact([1, 1, 4, 4]))?;
            let sum = model.wire_node("add", TypedBinOp(Box::new(math::Add), None), &[x, m])?;
            let softmax = Softmax {
                axes: tvec![3],
                quant_output_dt: None,
                kind: SoftmaxKind::Softmax,
            };
            let p = model.wire_node("softmax", softmax, &sum)?;
            let nan = model.wire_node("isnan", math::is_nan(), &p)?;
            let zero = model.add_const("zero", Tensor::from(0.0f32).broadcast_into_rank(4)?)?;
            let out = model.wire_node("where", Iff, &[nan[0], zero, p[0]])?;
            model.select_output_outlets(&[out[0], sum[0]])?;
            Ok(model)
        };
        let mut model = build().expect("graph");
        nan_guards(&mut model).expect("nan guards");
        blockwise_broadcasts(&mut model);
        assert_eq!(masked_softmaxes(&mut model, false).expect("rewrite"), 0);
    }
}
