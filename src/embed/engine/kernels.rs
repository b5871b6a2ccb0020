//! Native matmul kernel choice for the symbolic plan's weight matmuls and attention's `P·V`.
//!
//! tract picks a matmul's kernel at optimisation time. When the activation count `n` is a
//! symbol (`batch × sequence`, the shared plan), it cannot ask its per-platform cost model and
//! falls back to the kernel family with the tallest tile: on AVX-512 that is
//! `avx512_mmm_f32_64x3`. With 1536-long rows (the FFN's second matmul) a 64-row weight
//! panel is 384 KB and that kernel falls off the L2 cache once a call holds ~200 tokens:
//! measured on this project's machine (`examples/mmm_kernels.rs`, AMD EPYC Zen 5), 69 G
//! multiply-adds/s at 256 tokens against 109 for `avx512_mmm_f32_32x6`, which its cost model
//! prefers there (and which is as fast or faster on every other weight shape and `n` measured).
//!
//! [`prefer`] asks tract's cost model which kernel it would choose for each weight matmul at
//! [`super::limits::CALL_TOKENS`] activations (the most one model call holds), and, where that differs
//! from the kernel tract put in the symbolic plan, re-packs the weights for it (the packed
//! panels are read back row by row with `extract_at_mn_f32`, an exact copy) and packs the
//! activations for it with [`PackActivations`]. Every f32 kernel of a family computes each
//! output element as the same chain of fused multiply-adds in `k` order, so the plan's results
//! are the same bits (tested on the real model, against tract's choice: the tests below).
//!
//! Only matmuls whose weights are a constant and whose activations are a plain 2-D tensor are
//! changed that way. Attention's activation × activation products get the same treatment where
//! the output's `m` axis is concrete (`P·V`, whose `m` is the head size): tract put them on
//! `64x3`, whose 64-row tile is half padding for MiniLM's 32-value heads, and packed `P` for
//! it with a scalar loop; [`plan_for_product`] packs both operands for the kernel the cost
//! model prefers (`16x12` here). Measured in-process on the real model, 256 tokens, one text:
//! +5.7% texts/s; 32 texts of 256 tokens +6.3%, of 128 tokens +2.4–4.2%. Concrete-shape plans,
//! where tract already asked its cost model, keep tract's choice.

use tract_linalg::mmm::PackedMatrixStorage;
use tract_linalg::mmm::{MMMInputFormat, MMMInputValue, MatMatMul, OutputStoreSpec};
use tract_linalg::pack::PackedFormat;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::matmul::optimized::{MatMulOperand, OptMatMul, ProtoFusedSpec};
use tract_onnx::tract_core::ops::matmul::pack::{DynPackedExoticFact, OptMatMulPack};
use tract_onnx::tract_core::ops::matmul::ModePicker;

/// Packs an f32 activation tensor into the panels of one kernel's operand: a 2-D tensor into
/// one packed matrix, a tensor of higher rank into one per coordinate of its other (batch) axes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PackActivations {
    format: PackedFormat,
    k_axis: usize,
    mn_axis: usize,
}

impl PackActivations {
    fn check(&self, rank: usize) -> TractResult<()> {
        ensure!(
            rank >= 2 && self.k_axis < rank && self.mn_axis < rank && self.k_axis != self.mn_axis,
            "PackActivations: axes {} and {} of a rank-{rank} tensor",
            self.k_axis,
            self.mn_axis
        );
        Ok(())
    }

    /// The axes other than `k` and `mn`, in order: the shape of the packed matrices' batch.
    fn batch_shape<D: Clone>(&self, shape: &[D]) -> TVec<D> {
        shape
            .iter()
            .enumerate()
            .filter(|(axis, _)| *axis != self.k_axis && *axis != self.mn_axis)
            .map(|(_, d)| d.clone())
            .collect()
    }
}

impl Op for PackActivations {
    fn name(&self) -> StaticName {
        "PackActivations".into()
    }

    op_as_typed_op!();
}

impl EvalOp for PackActivations {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = inputs.first().context("PackActivations takes one input")?;
        self.check(x.rank())?;
        if x.rank() == 2 {
            let packed = self.format.prepare_one(x, self.k_axis, self.mn_axis)?;
            let storage = PackedMatrixStorage::new(packed).into_tensor(x.datum_type());
            return Ok(tvec!(storage.into_tvalue()));
        }
        // One matrix per coordinate of the other (batch) axes, in row-major order.
        let batch = self.batch_shape(x.shape());
        let mut values: TVec<Box<dyn MMMInputValue>> = TVec::new();
        let mut coords = vec![0usize; x.rank()];
        for index in tract_ndarray::indices(&*batch) {
            let mut index = tract_ndarray::Dimension::slice(&index).iter();
            for (axis, c) in coords.iter_mut().enumerate() {
                if axis != self.k_axis && axis != self.mn_axis {
                    *c = *index.next().context("batch coordinate")?;
                }
            }
            let view = x.view_offsetting(&coords)?;
            values.push(
                self.format
                    .pack_tensor_view(&view, self.k_axis, self.mn_axis)?,
            );
        }
        let storage = PackedMatrixStorage::new_batched(&batch, values).into_tensor(x.datum_type());
        Ok(tvec!(storage.into_tvalue()))
    }
}

impl TypedOp for PackActivations {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs.first().context("PackActivations takes one input")?;
        self.check(x.rank())?;
        let exotic = DynPackedExoticFact {
            k: x.shape[self.k_axis].clone(),
            mn: x.shape[self.mn_axis].clone(),
            packers: vec![Box::new(self.format.clone())],
        };
        let batch: TVec<TDim> = self.batch_shape(x.shape.dims());
        Ok(tvec!(x
            .datum_type
            .fact(ShapeFact::from_dims(batch))
            .with_exotic_fact(exotic)))
    }

    as_op!();
}

/// `spec` for a kernel of an `mr × nr` tile.
fn retiled(spec: &OutputStoreSpec, mr: usize, nr: usize) -> OutputStoreSpec {
    match spec {
        OutputStoreSpec::View { m_axis, n_axis, .. } => OutputStoreSpec::View {
            m_axis: *m_axis,
            n_axis: *n_axis,
            mr,
            nr,
        },
        OutputStoreSpec::Strides {
            row_byte_stride,
            col_byte_stride,
            ..
        } => OutputStoreSpec::Strides {
            row_byte_stride: *row_byte_stride,
            col_byte_stride: *col_byte_stride,
            mr,
            nr,
        },
    }
}

/// The `m × k` matrix a packed operand holds (exact: the panels' values, read back by row).
fn unpacked(packed: &dyn MMMInputValue) -> TractResult<Tensor> {
    let (m, k) = (packed.mn(), packed.k());
    let mut values = vec![0f32; m * k];
    for (row, chunk) in values.chunks_mut(k.max(1)).enumerate().take(m) {
        packed.extract_at_mn_f32(row, chunk)?;
    }
    Tensor::from_shape(&[m, k], &values)
}

/// One matmul to re-kernel: its node, its new op (kernel and, for weights, re-packed weights),
/// and for each input slot that reads an activation pack, the activations and their pack for
/// the new kernel.
struct Plan {
    node: usize,
    op: OptMatMul,
    packs: Vec<(usize, OutletId, PackActivations)>,
}

/// A packing of `kernel`'s whose panels are plain f32 on both sides: its index and formats.
fn f32_packing(kernel: &dyn MatMatMul) -> Option<(usize, PackedFormat, PackedFormat)> {
    kernel.packings().iter().enumerate().find_map(|(p, f)| {
        let a = f.0.downcast_ref::<PackedFormat>()?;
        let b = f.1.downcast_ref::<PackedFormat>()?;
        (a.dt == f32::datum_type() && b.dt == f32::datum_type()).then(|| (p, a.clone(), b.clone()))
    })
}

/// The f32 kernel tract's cost model prefers for an `m × k` matmul at [`super::limits::CALL_TOKENS`]
/// activations, with its packing of plain f32 panels on both sides (index, A and B formats);
/// `None` if that is `current` or has no such packing.
fn preferred_f32(
    current: &dyn MatMatMul,
    m: usize,
    k: usize,
) -> Option<(Box<dyn MatMatMul>, usize, PackedFormat, PackedFormat)> {
    let want = tract_linalg::MmmDispatch::native().preferred_kernel(
        f32::datum_type(),
        Some(m),
        Some(k),
        Some(super::limits::CALL_TOKENS),
    )?;
    if want.name() == current.name() || want.internal_type() != f32::datum_type() {
        return None;
    }
    let (p, a, b) = f32_packing(&*want)?;
    Some((want, p, a, b))
}

/// `op` on `kernel` alone (its packing `p`; the stores retiled for its tile), its matmul's
/// operands replaced by `operands` when given.
fn rekernelled(
    op: &OptMatMul,
    kernel: Box<dyn MatMatMul>,
    p: usize,
    operands: Option<(MatMulOperand, MatMulOperand)>,
) -> TractResult<OptMatMul> {
    let (mr, nr) = (kernel.mr(), kernel.nr());
    let mode = op.mmm.len() - 1;
    let micro_ops = op
        .micro_ops
        .iter()
        .map(|o| match o {
            ProtoFusedSpec::AddMatMul { geo, a, b, .. } => {
                let (a, b) = operands.clone().unwrap_or_else(|| (a.clone(), b.clone()));
                ProtoFusedSpec::AddMatMul {
                    geo: geo.clone(),
                    a,
                    b,
                    packings: vec![(p, None)],
                }
            }
            ProtoFusedSpec::Store(specs) => {
                let spec = specs.get(mode).or(specs.first());
                ProtoFusedSpec::Store(spec.map(|s| retiled(s, mr, nr)).into_iter().collect())
            }
            ProtoFusedSpec::AddUnicast(spec, v, map) => {
                ProtoFusedSpec::AddUnicast(retiled(spec, mr, nr), *v, map.clone())
            }
            other => other.clone(),
        })
        .collect();
    OptMatMul::new(
        vec![kernel],
        ModePicker::Single,
        op.c_fact.clone(),
        op.c_m_axis,
        op.c_n_axis,
        micro_ops,
        op.trivial_packing,
    )
}

/// The parts of a node [`prefer`] may re-kernel: an f32 `OptMatMul` of the symbolic plan (its
/// `n` a symbol: concrete plans had tract ask its cost model already) with one matmul, whose
/// operands, output `m` axis and current kernel this returns.
fn symbolic_matmul(
    node: &TypedNode,
) -> Option<(
    &OptMatMul,
    usize,
    &MatMulOperand,
    &MatMulOperand,
    &dyn MatMatMul,
)> {
    let op = node.op_as::<OptMatMul>()?;
    let (Some(m_axis), Some(n_axis)) = (op.c_m_axis, op.c_n_axis) else {
        return None;
    };
    if op.c_fact.shape[n_axis].to_usize().is_ok() || op.c_fact.datum_type != f32::datum_type() {
        return None;
    }
    let mut matmuls = op.micro_ops.iter().filter_map(|o| match o {
        ProtoFusedSpec::AddMatMul { a, b, .. } => Some((a, b)),
        _ => None,
    });
    let (Some((a, b)), None) = (matmuls.next(), matmuls.next()) else {
        return None;
    };
    let current = op.mmm.last()?;
    Some((op, m_axis, a, b, &**current))
}

/// Attention's products (`QKᵀ`, `P·V`): both operands are activations, each packed by tract's
/// `OptMatMulPack` for the kernel of the symbolic plan. When `m` is concrete (the head size,
/// 32 for MiniLM: `P·V` computes `Vᵀ` by `P`), this asks tract's cost model with `k` and `n`
/// at [`super::limits::CALL_TOKENS`] (the sequence length, at the default truncation) and, where it
/// prefers another kernel, packs both operands for it. Measured on this project's machine
/// (one head's `P·V`, `m = 32, k = n = 256`, pack and kernel): 78 µs with `64x3` (half of its
/// 64-row tile is padding), 41 µs with `32x6`, 36 µs with `16x12`.
fn plan_for_product(model: &TypedModel, node: &TypedNode) -> TractResult<Option<Plan>> {
    let Some((op, m_axis, MatMulOperand::Input(a_slot), MatMulOperand::Input(b_slot), current)) =
        symbolic_matmul(node)
    else {
        return Ok(None);
    };
    let Ok(m) = op.c_fact.shape[m_axis].to_usize() else {
        return Ok(None);
    };
    let Some((want, p, a_format, b_format)) = preferred_f32(current, m, super::limits::CALL_TOKENS)
    else {
        return Ok(None);
    };
    let mut packs = Vec::new();
    for (slot, format) in [(*a_slot, a_format), (*b_slot, b_format)] {
        let Some(&outlet) = node.inputs.get(slot) else {
            return Ok(None);
        };
        let pack_node = model.node(outlet.node);
        if pack_node.op_as::<OptMatMulPack>().is_none() {
            return Ok(None);
        }
        let Some(&source) = pack_node.inputs.first() else {
            return Ok(None);
        };
        let x = model.outlet_fact(source)?;
        if x.datum_type != f32::datum_type() || x.is_exotic() {
            return Ok(None);
        }
        // Which of the packed tensor's axes are `k` and `mn` (tract's pack names them so).
        let facts = model.node_input_facts(pack_node.id)?;
        let outputs = model.node_output_facts(pack_node.id)?;
        let mapping = pack_node.op.axes_mapping(&facts, &outputs)?;
        let axis = |repr: char| -> TractResult<Option<usize>> {
            Ok(mapping
                .axis(repr)?
                .inputs
                .first()
                .and_then(|i| i.first())
                .copied())
        };
        let (Some(k_axis), Some(mn_axis)) = (axis('K')?, axis('M')?) else {
            return Ok(None);
        };
        packs.push((
            slot,
            source,
            PackActivations {
                format,
                k_axis,
                mn_axis,
            },
        ));
    }
    let new_op = rekernelled(op, want, p, None)?;
    Ok(Some(Plan {
        node: node.id,
        op: new_op,
        packs,
    }))
}

/// What [`prefer`] would make of one node, if anything.
fn plan_for(model: &TypedModel, node: &TypedNode) -> TractResult<Option<Plan>> {
    let Some((op, _, MatMulOperand::Const(weights), MatMulOperand::Input(b_slot), current)) =
        symbolic_matmul(node)
    else {
        return Ok(None);
    };
    let (m, k) = (weights.mn(), weights.k());
    let Some((want, p, a_format, b_format)) = preferred_f32(current, m, k) else {
        return Ok(None);
    };
    // The activations: a pack node over a 2-D f32 tensor whose one concrete axis is `k`.
    let Some(&b_outlet) = node.inputs.get(*b_slot) else {
        return Ok(None);
    };
    let Some(&source) = model.node(b_outlet.node).inputs.first() else {
        return Ok(None);
    };
    let x = model.outlet_fact(source)?;
    if x.rank() != 2 || x.datum_type != f32::datum_type() || x.is_exotic() {
        return Ok(None);
    }
    let k_axes: Vec<usize> = (0..2)
        .filter(|&ax| x.shape[ax].to_usize().ok() == Some(k))
        .collect();
    let [k_axis] = k_axes[..] else {
        return Ok(None);
    };
    let b_fact = model.outlet_fact(b_outlet)?;
    let packs_k = b_fact
        .exotic_fact()
        .and_then(|f| f.downcast_ref::<DynPackedExoticFact>())
        .is_some_and(|f| f.k.to_usize().ok() == Some(k) && f.mn == x.shape[1 - k_axis]);
    if !packs_k {
        return Ok(None);
    }

    let new_weights = a_format.prepare_one(&unpacked(&**weights)?, 1, 0)?;
    let operands = (
        MatMulOperand::Const(new_weights),
        MatMulOperand::Input(*b_slot),
    );
    let new_op = rekernelled(op, want, p, Some(operands))?;
    let pack = PackActivations {
        format: b_format,
        k_axis,
        mn_axis: 1 - k_axis,
    };
    Ok(Some(Plan {
        node: node.id,
        op: new_op,
        packs: vec![(*b_slot, source, pack)],
    }))
}

/// Gives each weight matmul of an optimised symbolic plan the kernel tract's cost model
/// prefers at [`super::limits::CALL_TOKENS`] activations (see the module docs); returns how many
/// matmuls changed. One activation pack is shared by the matmuls that read the same tensor.
pub(crate) fn prefer(model: &mut TypedModel) -> TractResult<usize> {
    // A matmul this cannot re-kernel (an unexpected layout, a refused packing) keeps tract's.
    let plans: Vec<Plan> = model
        .nodes()
        .iter()
        .filter_map(|node| {
            plan_for(model, node)
                .ok()
                .flatten()
                .or_else(|| plan_for_product(model, node).ok().flatten())
        })
        .collect();
    let changed = plans.len();
    let mut packs: Vec<(OutletId, PackActivations, OutletId)> = Vec::new();
    for plan in plans {
        for (slot, source, pack) in plan.packs {
            let shared = packs
                .iter()
                .find(|(s, p, _)| *s == source && *p == pack)
                .map(|p| p.2);
            let packed = match shared {
                Some(outlet) => outlet,
                None => {
                    let name = format!("{}.pack_activations.{slot}", model.node(plan.node).name);
                    let outlet = model.wire_node(name, pack.clone(), &[source])?[0];
                    packs.push((source, pack, outlet));
                    outlet
                }
            };
            model.add_edge(packed, InletId::new(plan.node, slot))?;
        }
        model.node_mut(plan.node).op = Box::new(plan.op);
    }
    // Drop tract's activation packs nothing reads any more.
    if changed > 0 {
        model.compact()?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::super::model::{Model, OnnxBytes};
    use std::path::PathBuf;

    fn onnx() -> Vec<u8> {
        let dir = std::env::var_os("CONDENSE_MODEL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"));
        let path = dir.join("model.onnx");
        std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{} not readable ({e}): run scripts/fetch-models",
                path.display()
            )
        })
    }

    /// Deterministic token ids (not `[PAD]`) and a full mask for `batch × seq`.
    fn inputs(batch: usize, seq: usize) -> (Vec<i64>, Vec<i64>) {
        let ids = (0..batch * seq)
            .map(|i| 1000 + ((i as i64 * 7919) % 28000))
            .collect();
        (ids, vec![1; batch * seq])
    }

    /// The kernel tract's cost model prefers gives the plan's hidden states bit for bit, on
    /// shapes either side of the kernel change's reason (a call of 256 tokens) and on batches.
    #[test]
    fn preferred_kernels_give_the_same_bits() {
        let onnx = onnx();
        let ours =
            Model::load_with(OnnxBytes::Borrowed(&onnx), 1, true, false).expect("model loads");
        let tracts =
            Model::load_with(OnnxBytes::Borrowed(&onnx), 1, false, false).expect("model loads");
        // The plans differ only by the kernel choice, so this is how many matmuls it changed.
        let changed = ours
            .repaired
            .checked_sub(tracts.repaired)
            .expect("the kernel choice only adds repairs");
        // Machines whose cost model agrees with tract's symbolic choice change nothing; this
        // project's (AVX-512) changes all 36 weight matmuls and the 6 attention `P·V`.
        if tract_linalg::MmmDispatch::native()
            .runnable()
            .iter()
            .any(|k| k.name() == "avx512_mmm_f32_64x3")
        {
            // More than the weight matmuls: attention's products changed too.
            assert!(changed > 36, "{changed} matmuls changed kernel");
        }
        for (batch, seq) in [(1, 40), (1, 256), (3, 85), (2, 7)] {
            let (ids, mask) = inputs(batch, seq);
            let a = ours
                .run(batch, seq, ids.clone(), mask.clone(), 0)
                .expect("runs");
            let b = tracts.run(batch, seq, ids, mask, 0).expect("runs");
            assert_eq!(a.len(), batch * seq * crate::embed::vector::DIMS);
            let differ = a
                .iter()
                .zip(&b)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            assert_eq!(differ, 0, "{batch}×{seq}: {differ} values differ");
        }
    }
}
