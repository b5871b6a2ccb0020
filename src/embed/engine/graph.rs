//! Editing tract's typed graph: the one primitive every rewrite of the engine uses. A leaf
//! (`super::ops`, `super::same` and `super::quant` import it; it imports none of them).

use tract_onnx::prelude::*;

/// Puts `op`, named `name` and reading `inputs`, in place of node `id`'s first output (its
/// readers read `op`'s instead); what only `id` read is left for the next compaction. Every
/// rewrite of `src/embed/engine/` goes through it.
pub(crate) fn wire_in_place_of(
    model: &mut TypedModel,
    id: usize,
    name: String,
    op: impl Into<Box<dyn TypedOp>>,
    inputs: &[OutletId],
) -> TractResult<()> {
    let mut patch = TypedModelPatch::default();
    let tapped = inputs
        .iter()
        .map(|i| patch.tap_model(model, *i))
        .collect::<TractResult<TVec<_>>>()?;
    let wire = patch.wire_node(name, op, &tapped)?;
    patch.shunt_outside(model, id.into(), wire[0])?;
    patch.apply(model)
}
