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

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::logic::Iff;
use tract_onnx::tract_core::ops::math;

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
        let [x] = <[TValue; 1]>::try_from(inputs.into_vec())
            .map_err(|_| format_err!("NanTo takes one input"))?;
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
        let mut patch = TypedModelPatch::default();
        let tapped = patch.tap_model(model, x)?;
        let wire = patch.wire_node(format!("{name}.nan_to"), NanTo { value }, &[tapped])?;
        patch.shunt_outside(model, id.into(), wire[0])?;
        patch.apply(model)?;
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
}
