//! The transformer: an ONNX BERT-family encoder run by tract.
//!
//! Loading (once): parse the ONNX bytes, keep the model's own symbolic dimensions (`batch`,
//! `sequence`), type it, declutter, then **fold every constant `Cast`**: the int8 model stores
//! each weight as int8 + `Cast` + `Mul` (scale); tract's own constant folding skips folds whose
//! output outgrows a 4 MiB budget (the 30522 × 384 embedding table, the FFN matrices), which would
//! leave the int8 → f32 dequantisation to run on every call. After a fold a second declutter
//! folds what became constant (the `Mul` by the scale; skipped when nothing was folded, as
//! with the integer matmuls, whose weights are packed before tract parses the graph), then
//! tract optimises for the CPU (matmul kernels, fused ops). The result is one plan for every
//! batch and sequence length.
//! Where `super::quant` has a fast kernel (wasm, x86-64 with AVX2), the weight matmuls become
//! integer products before that optimisation, and the f32 operators that decide the inputs of
//! their roundings become `super::same`'s, so that both builds give the same bits.
//! Before it, the inputs' symbols are bounded (batch ≤ [`MAX_BATCH`], sequence ≤ 512) so tract
//! can prove its fast element-wise kernels apply; after it, [`repair`] puts condense's own
//! evaluation in place of tract's slow paths for these shapes (`super::ops`), natively on
//! x86-64 the matmul kernels tract's cost model prefers (`super::kernels`) and, in wasm, its
//! matmul kernel (`super::wasm_kernel`), all computing the same bits.
//!
//! **Single short texts** (a query), natively, run on a plan specialised to `batch = 1` and a padded length
//! bucket ([`BUCKETS`]: 12, 16, 20, 24 or 32 tokens), built on first use of its bucket from the
//! decluttered graph kept at load. With every dimension known, tract fuses the bias and residual
//! additions into its matmuls and picks broadcast-free element-wise kernels; on the symbolic plan
//! those run as generic broadcasting ops. Measured (examples/tract_profile.rs, 16 tokens): the
//! specialised plan runs in ~0.75× the time of the symbolic one with tract's f32 matmuls; with
//! the integer path, the same time (2026-11-26, 16 tokens: 590 against 593 texts/s, two runs
//! each). Building a bucket's plan on first use costs little natively (`condense embed` of one
//! query: 0.44–0.45 s with or without them). The padding is masked (the attention mask hides
//! it and pooling skips it), so a text's vector is the same to rounding
//! (the batch-independence test covers padding; with the integer path, the same bits). With
//! tract's f32 matmuls each bucket's plan holds its own packed weights (~43 MB, allocated only
//! when the bucket is used); the integer weights are shared by every plan. Longer texts and
//! batches use the symbolic plan.
//!
//! Running: `input_ids`, `attention_mask` and `token_type_ids` (all `i64`, `batch × sequence`), in
//! whatever order the model declares them; the output `last_hidden_state` (`batch × sequence ×
//! 384`) goes to mean pooling.

use std::collections::HashMap;
use std::sync::OnceLock;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cast::Cast;

use crate::embed::tokenizer::MAX_MODEL_TOKENS;
use crate::embed::vector::DIMS;
use crate::{Error, ErrorKind};

/// What the model's inputs are, by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    Ids,
    Mask,
    TokenTypes,
}

/// Padded lengths (tokens, `[CLS]` and `[SEP]` included) of the specialised single-text plans.
///
/// Questions are mostly 10-30 tokens: an edge every 4 tokens up to 24 keeps the padding (run at
/// full cost) under a fifth of a question of 16+ tokens; each bucket used costs its plan's packed
/// weights (~43 MB), so the list stays short. Moving an edge changes the vectors of the texts
/// whose padded length changes by ~2e-6 (`examples/tract_profile.rs CHECK=`).
const BUCKETS: [usize; 5] = [12, 16, 20, 24, 32];

/// A loaded, optimised encoder.
#[derive(Debug)]
pub(crate) struct Model {
    /// Any batch and sequence length.
    pub(crate) plan: Arc<TypedRunnableModel>,
    /// The decluttered graph the specialised plans are made from; natively only (in wasm the
    /// graph and each bucket's packed weights would cost a browser tab ~80 MB + ~43 MB per
    /// bucket for a ~20% faster query).
    typed: Option<TypedModel>,
    /// Plans for one text padded to `BUCKETS[i]` tokens, built on first use; `None` if
    /// specialising failed (the symbolic plan is used instead).
    single: [OnceLock<Option<Arc<TypedRunnableModel>>>; BUCKETS.len()],
    inputs: Vec<Input>,
    /// Index of `last_hidden_state` among the outputs.
    output: usize,
    /// Number of constant casts folded at load (for tests and diagnostics).
    pub(crate) casts_folded: usize,
    /// Number of plan nodes wrapped by [`super::ops`] (reshapes and broadcast arithmetic),
    /// given the kernel tract's cost model prefers (`super::kernels`, x86-64) or, in wasm,
    /// given condense's matmul kernel (`super::wasm_kernel`).
    pub(crate) repaired: usize,
    /// Number of weight matmuls run as integer products (`super::quant`).
    pub(crate) quantized: usize,
    /// The pool the matmuls share their tiles over (`EmbedOptions::threads` > 1, natively).
    #[cfg(not(target_arch = "wasm32"))]
    executor: Option<tract_linalg::multithread::Executor>,
}

fn invalid(path: &str, reason: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidModel, path, reason)
}

/// tract errors are `anyhow` chains: keep the whole chain, it names the failing node.
/// The matmuls' thread pool for `threads` > 1 (its own rayon pool, not the global one).
#[cfg(not(target_arch = "wasm32"))]
fn thread_pool(threads: usize) -> Result<Option<tract_linalg::multithread::Executor>, Error> {
    if threads <= 1 {
        return Ok(None);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("condense-embed-{i}"))
        .build()
        .map_err(|e| Error::new(ErrorKind::Internal, "threads", format!("thread pool: {e}")))?;
    Ok(Some(tract_linalg::multithread::Executor::MultiThread(
        Arc::new(pool),
    )))
}

fn tract_error(path: &str, what: &str, e: &TractError) -> Error {
    invalid(path, format!("{what}: {e:#}"))
}

/// The bytes of `model.onnx` as a load gets them: borrowed from the caller, or given by value,
/// and then freed as soon as the protobuf is decoded (in wasm, whose memory never shrinks, that
/// keeps them out of the load's peak: 22 MB for the default model).
pub(crate) enum OnnxBytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl OnnxBytes<'_> {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            OnnxBytes::Borrowed(b) => b,
            OnnxBytes::Owned(v) => v,
        }
    }
}

impl Model {
    /// Loads and optimises an ONNX encoder (see the module docs).
    pub(crate) fn load(onnx: OnnxBytes<'_>, threads: usize) -> Result<Model, Error> {
        let quant = super::quant::ENABLED && super::quant::available();
        Model::load_with(onnx, threads, true, quant)
    }

    /// [`Model::load`], with or without `super::kernels`' kernel choice and `super::quant`'s
    /// integer weight matmuls (tests compare them). A model with the integer matmuls also gets
    /// `super::same`'s operators (see `repair`).
    pub(crate) fn load_with(
        onnx: OnnxBytes<'_>,
        threads: usize,
        kernels: bool,
        quant: bool,
    ) -> Result<Model, Error> {
        // One thread in wasm (EmbedOptions::threads is checked to be 1 there).
        #[cfg(target_arch = "wasm32")]
        let _ = threads;
        stage("start");
        // The graph's `value_info` shape annotations are hints, and the exporter's can be wrong:
        // the default model annotates its attention-mask `Where` as `batch×1×sequence×sequence`
        // where it computes `batch×1×1×sequence` (a broadcast), which tract would then enforce
        // at run time. Shapes are inferred from the operators instead.
        let mut onnx_framework = tract_onnx::onnx().with_ignore_value_info(true);
        onnx_framework
            .op_register
            .insert(super::onnx::QUANT_MATMUL, super::onnx::quant_matmul);
        let mut proto = <tract_onnx::pb::ModelProto as prost::Message>::decode(onnx.as_slice())
            .map_err(|e| invalid("model", format!("not an ONNX model: {e}")))?;
        // The decoded protobuf holds copies of everything the graph needs: bytes given by value
        // go now, before the load's peak.
        drop(onnx);
        stage("protobuf decoded");
        // Before tract sees the graph: the int8 embedding table is gathered row by row and the
        // int8 weights are packed for the integer matmuls, each freed from the protobuf as it
        // is packed (super::onnx), so no f32 copy of them is ever made.
        let graph = proto
            .graph
            .as_mut()
            .ok_or_else(|| invalid("model", "not an ONNX model: no graph"))?;
        let tables = super::onnx::gather_int8_tables(graph);
        let packed = if quant {
            super::onnx::int8_matmuls(graph)
                .map_err(|e| tract_error("model", "integer matmuls", &e))?
        } else {
            Vec::new()
        };
        let prepacked = packed.len();
        stage("int8 weights packed");
        let model =
            super::onnx::with_weights(packed, || onnx_framework.model_for_proto_model(&proto))
                .map_err(|e| tract_error("model", "unsupported ONNX graph", &e))?;
        stage("graph parsed");
        drop(proto);
        stage("protobuf dropped");

        let names = |outlets: &[OutletId]| -> Vec<String> {
            outlets
                .iter()
                .map(|o| model.node(o.node).name.clone())
                .collect()
        };
        let input_names = names(
            model
                .input_outlets()
                .map_err(|e| tract_error("model", "no inputs", &e))?,
        );
        let inputs = input_names
            .iter()
            .map(|name| match name.as_str() {
                "input_ids" => Ok(Input::Ids),
                "attention_mask" => Ok(Input::Mask),
                "token_type_ids" => Ok(Input::TokenTypes),
                other => Err(invalid(
                    "model.inputs",
                    format!(
                        "unexpected input {other:?}: expected input_ids, attention_mask and \
                         token_type_ids (a BERT-family encoder)"
                    ),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !inputs.contains(&Input::Ids) || !inputs.contains(&Input::Mask) {
            return Err(invalid(
                "model.inputs",
                format!("expected input_ids and attention_mask, found {input_names:?}"),
            ));
        }
        let output_names = names(
            model
                .output_outlets()
                .map_err(|e| tract_error("model", "no outputs", &e))?,
        );
        let output = output_names
            .iter()
            .position(|n| n == "last_hidden_state")
            .or(if output_names.len() == 1 {
                Some(0)
            } else {
                None
            })
            .ok_or_else(|| {
                invalid(
                    "model.outputs",
                    format!("no last_hidden_state among {output_names:?}"),
                )
            })?;

        let mut typed = model
            .into_typed()
            .map_err(|e| tract_error("model", "cannot type the graph", &e))?;
        stage("typed");
        declutter(&mut typed).map_err(|e| tract_error("model", "declutter failed", &e))?;
        stage("decluttered");
        let folded = fold_constant_casts(&mut typed)
            .map_err(|e| tract_error("model", "constant folding failed", &e))?;
        let casts_folded = tables + folded;
        stage("casts folded");
        // What a fold made constant (each weight's `Mul` by its scale) folds in a second
        // declutter. With the integer matmuls the weights were packed before tract saw them
        // and no constant `Cast` is left (MiniLM: none), so the graph is as the first declutter
        // left it and the second pass, a whole walk of the graph's rules, is skipped.
        if folded > 0 {
            declutter(&mut typed).map_err(|e| tract_error("model", "declutter failed", &e))?;
        }
        stage("decluttered again");
        let quantized = if quant {
            let n = prepacked
                + super::quant::swap_in(&mut typed)
                    .map_err(|e| tract_error("model", "integer matmuls", &e))?;
            super::same::swap_in_products(&mut typed)
                .map_err(|e| tract_error("model", "attention products", &e))?;
            n
        } else {
            0
        };
        stage("integer matmuls");

        // The output must be `batch × sequence × 384` floats.
        let out_outlet = typed
            .output_outlets()
            .ok()
            .and_then(|o| o.get(output).copied())
            .ok_or_else(|| invalid("model.outputs", "output vanished while typing"))?;
        let fact = typed
            .outlet_fact(out_outlet)
            .map_err(|e| tract_error("model.outputs", "no output fact", &e))?
            .clone();
        let last = fact.shape.iter().last().and_then(|d| d.to_i64().ok());
        if fact.datum_type != f32::datum_type() || fact.rank() != 3 || last != Some(DIMS as i64) {
            return Err(invalid(
                "model.outputs",
                format!(
                    "expected last_hidden_state of f32 × [batch, sequence, {DIMS}], found {:?} × {:?}",
                    fact.datum_type, fact.shape
                ),
            ));
        }

        bound_symbols(&typed).map_err(|e| tract_error("model", "symbol bounds", &e))?;
        let decluttered = if cfg!(target_arch = "wasm32") {
            None
        } else {
            Some(typed.clone())
        };
        typed
            .optimize()
            .map_err(|e| tract_error("model", "optimisation failed", &e))?;
        stage("optimised");
        let repaired = repair(&mut typed, kernels, quantized > 0)
            .map_err(|e| tract_error("model", "plan repair failed", &e))?;
        stage("repaired");
        let plan = typed
            .into_runnable()
            .map_err(|e| tract_error("model", "cannot plan the graph", &e))?;
        stage("plan built");
        Ok(Model {
            plan,
            typed: decluttered,
            single: Default::default(),
            inputs,
            output,
            casts_folded,
            repaired,
            quantized,
            #[cfg(not(target_arch = "wasm32"))]
            executor: thread_pool(threads)?,
        })
    }

    /// The plan specialised to one text of `BUCKETS[bucket]` tokens (built on first use).
    fn single_plan(&self, bucket: usize) -> Option<&Arc<TypedRunnableModel>> {
        let len = *BUCKETS.get(bucket)?;
        let cell = self.single.get(bucket)?;
        cell.get_or_init(|| {
            let typed = self.typed.as_ref()?;
            let mut subs = HashMap::new();
            subs.insert(typed.sym("batch"), TDim::Val(1));
            subs.insert(typed.sym("sequence"), TDim::Val(len as i64));
            let mut model = typed.set_symbols(&subs).ok()?;
            model.optimize().ok()?;
            repair(&mut model, true, self.quantized > 0).ok()?;
            model.into_runnable().ok()
        })
        .as_ref()
    }

    /// Runs a batch: `ids` and `mask` are `batch × seq`, row-major (`pad` is the padding
    /// token's id). Returns `batch × seq × 384`.
    pub(crate) fn run(
        &self,
        batch: usize,
        seq: usize,
        mut ids: Vec<i64>,
        mut mask: Vec<i64>,
        pad: i64,
    ) -> Result<Vec<f32>, Error> {
        // One short text: pad it to its bucket (masked) and run the specialised plan.
        let mut plan = &self.plan;
        let mut padded = seq;
        // With the integer path these give the symbolic plan's bits (and so the wasm build's,
        // which has no such plans): padding changes no row, and the softmax tract leaves unfused
        // here is `super::same`'s too (`SameOp::Softmax`).
        if batch == 1 && ids.len() == seq && mask.len() == seq {
            if let Some(b) = BUCKETS.iter().position(|&len| seq <= len) {
                if let Some(p) = self.single_plan(b) {
                    plan = p;
                    padded = BUCKETS[b];
                    ids.resize(padded, pad);
                    mask.resize(padded, 0);
                }
            }
        }
        let mut data = self.run_plan(plan, batch, padded, ids, mask)?;
        data.truncate(batch * seq * DIMS);
        Ok(data)
    }

    fn run_plan(
        &self,
        plan: &Arc<TypedRunnableModel>,
        batch: usize,
        seq: usize,
        ids: Vec<i64>,
        mask: Vec<i64>,
    ) -> Result<Vec<f32>, Error> {
        let shape = [batch, seq];
        let ids = tensor_from(&shape, ids).map_err(|e| internal("input_ids", e))?;
        let mask = tensor_from(&shape, mask).map_err(|e| internal("attention_mask", e))?;
        let types = tensor_from(&shape, vec![0i64; batch * seq])
            .map_err(|e| internal("token_type_ids", e))?;
        let mut slots = [Some(ids), Some(mask), Some(types)];
        let inputs: TVec<TValue> = self
            .inputs
            .iter()
            .filter_map(|i| slots[*i as usize].take())
            .map(TValue::from)
            .collect();
        if profiling() {
            return self.output(run_profiled(plan, inputs)?, batch, seq);
        }
        #[cfg(not(target_arch = "wasm32"))]
        let outputs = match &self.executor {
            Some(pool) => tract_linalg::multithread::multithread_tract_scope(pool.clone(), || {
                plan.run(inputs)
            }),
            None => plan.run(inputs),
        };
        #[cfg(target_arch = "wasm32")]
        let outputs = plan.run(inputs);
        self.output(outputs.map_err(|e| internal("inference", e))?, batch, seq)
    }

    /// The hidden states among a run's `outputs`, checked to hold `batch × seq × 384` values.
    fn output(
        &self,
        mut outputs: TVec<TValue>,
        batch: usize,
        seq: usize,
    ) -> Result<Vec<f32>, Error> {
        if self.output >= outputs.len() {
            return Err(Error::new(ErrorKind::Internal, "", "model output missing"));
        }
        let out = outputs.swap_remove(self.output);
        let view = out.try_as_plain_ram().map_err(|e| internal("output", e))?;
        let data = view.as_slice::<f32>().map_err(|e| internal("output", e))?;
        if data.len() != batch * seq * DIMS {
            return Err(Error::new(
                ErrorKind::Internal,
                "",
                format!(
                    "output has {} values, expected {}",
                    data.len(),
                    batch * seq * DIMS
                ),
            ));
        }
        Ok(data.to_vec())
    }
}

/// condense's repairs to an optimised plan (`super::ops`; on x86-64, when `kernels`,
/// `super::kernels`; in wasm `super::wasm_kernel`): the same values, computed faster. With
/// `same` (a model with the integer weight matmuls), `super::same`'s operators also take the
/// place of tract's per-platform softmax, `erf` and layer-norm kernels, so that both builds
/// compute the same bits. Returns how many nodes changed.
fn repair(model: &mut TypedModel, kernels: bool, same: bool) -> TractResult<usize> {
    let repaired = super::ops::nan_guards(model)?
        + super::ops::natural_strides(model)
        + super::ops::blockwise_broadcasts(model);
    let repaired = repaired + super::ops::masked_softmaxes(model, same)?;
    let repaired = repaired
        + if same {
            super::same::swap_in(model)?
        } else {
            0
        };
    #[cfg(target_arch = "x86_64")]
    let chosen = if kernels {
        super::kernels::prefer(model)?
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let chosen = {
        let _ = kernels;
        0
    };
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let repaired = repaired + super::wasm_kernel::swap_in(model);
    Ok(repaired + chosen)
}

/// Most texts one run of the model takes (`batch` ≤ this; the embedder splits larger batches).
pub(crate) const MAX_BATCH: usize = 1 << 12;

/// Tells tract the ranges of the inputs' symbolic dimensions: `batch` in 1..=[`MAX_BATCH`] and
/// `sequence` in 1..=[`MAX_MODEL_TOKENS`] (the first axis of each input is taken as the
/// batch, the others as lengths). With bounds, tract can prove its element-wise operations
/// large enough for its fast kernels; unbounded symbols left them on a generic per-element
/// loop (`batch = 32`, 128 tokens: 16.5 → 26 texts/s natively with the fixes of
/// `super::ops`). The embedder keeps to both bounds (`max_tokens` ≤ 512, model calls of at
/// most `MAX_BATCH` texts).
fn bound_symbols(model: &TypedModel) -> TractResult<()> {
    let mut seen = Vec::new();
    for outlet in model.input_outlets()? {
        let fact = model.outlet_fact(*outlet)?;
        for (axis, dim) in fact.shape.iter().enumerate() {
            if let TDim::Sym(sym) = dim {
                let name = format!("{sym}");
                if seen.contains(&name) {
                    continue;
                }
                let max = if axis == 0 {
                    MAX_BATCH
                } else {
                    MAX_MODEL_TOKENS
                };
                // Assertions are parsed from text: a name that is not a plain identifier (ONNX
                // allows any string) is left unbounded, and that model runs on the slower
                // kernels, as does one whose assertion tract refuses.
                let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !plain {
                    continue;
                }
                let bounded = model
                    .symbols
                    .add_assertion(format!("{name}>=1"))
                    .and_then(|()| model.symbols.add_assertion(format!("{name}<={max}")));
                if bounded.is_err() {
                    continue;
                }
                seen.push(name);
            }
        }
    }
    Ok(())
}

/// tract's error in a run, as condense's internal error (a bug: inputs are always well-formed).
fn internal(what: &str, e: TractError) -> Error {
    Error::new(ErrorKind::Internal, "", format!("{what}: {e:#}"))
}

fn tensor_from(shape: &[usize], data: Vec<i64>) -> TractResult<Tensor> {
    Tensor::from_shape(shape, &data)
}

/// tract's declutter passes, less `FoldUniformMask`.
///
/// That pass (tract 0.23.9) replaces a boolean input it proves all-true by a `[1, 1, …]` constant
/// but keeps the node's output shape, which is wrong when that input was the one contributing a
/// broadcast axis. The default model's attention mask is `And(q ≥ 0 : [1,1,seq,1],
/// mask : [batch,1,1,seq])`; after the pass the graph computes `[batch,1,1,seq]` while its facts
/// say `[batch,1,seq,seq]`, and evaluation fails on the mismatch. Without the pass the mask is
/// built as exported (a few thousand booleans per call; no measurable cost).
fn declutter(model: &mut TypedModel) -> TractResult<()> {
    let mut optimizer = tract_onnx::tract_core::optim::Optimizer::declutter();
    optimizer
        .passes
        .retain(|pass| !format!("{pass:?}").starts_with("FoldUniformMask"));
    optimizer.optimize(model)
}

/// Replaces every `Cast` of a constant with the constant it computes. Returns how many.
fn fold_constant_casts(model: &mut TypedModel) -> TractResult<usize> {
    let mut folds = Vec::new();
    for node in model.nodes() {
        let Some(cast) = node.op_as::<Cast>() else {
            continue;
        };
        let Some(input) = node.inputs.first() else {
            continue;
        };
        if let Some(k) = model.outlet_fact(*input)?.konst.clone() {
            folds.push((node.id, node.name.clone(), k, cast.to));
        }
    }
    let count = folds.len();
    for (id, name, konst, to) in folds {
        let value = konst.cast_to_dt(to)?.into_owned();
        let mut patch = TypedModelPatch::default();
        let wire = patch.add_const(name, value)?;
        patch.shunt_outside(model, id.into(), wire)?;
        patch.apply(model)?;
    }
    model.compact()?;
    Ok(count)
}

/// What [`trace_load`] calls at each stage.
type OnStage = Box<dyn FnMut(&'static str)>;

thread_local! {
    /// What [`trace_load`] calls at each stage of a load on this thread.
    static LOAD_TRACE: std::cell::RefCell<Option<OnStage>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `on_stage` called with the name of each stage of every model load on this
/// thread as the stage ends (`"protobuf decoded"`, `"graph parsed"`, …, `"plan built"`): a
/// measuring aid (`bench/embed-footprint`) that reads memory and time between stages.
pub(crate) fn trace_load<R>(
    on_stage: impl FnMut(&'static str) + 'static,
    f: impl FnOnce() -> R,
) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            LOAD_TRACE.with(|t| *t.borrow_mut() = None);
        }
    }
    LOAD_TRACE.with(|t| *t.borrow_mut() = Some(Box::new(on_stage)));
    let _reset = Reset;
    f()
}

/// Tells [`trace_load`]'s caller that a load stage ended (nothing when no trace runs).
pub(crate) fn stage(name: &'static str) {
    LOAD_TRACE.with(|t| {
        if let Some(on_stage) = t.borrow_mut().as_mut() {
            on_stage(name);
        }
    });
}

thread_local! {
    /// Where [`profile_ops`] collects time per operator while it runs (this thread only).
    static OP_TIMES: std::cell::RefCell<Option<OpTimes>> = const { std::cell::RefCell::new(None) };
}

/// Milliseconds and evaluations per operator key (see [`op_key`]).
pub(crate) type OpTimes = std::collections::BTreeMap<String, (f64, usize)>;

/// Runs `f` with every model run on this thread timed operator by operator, and returns the
/// times (a profiling aid: `Embedder::profile_ops`).
pub(crate) fn profile_ops<R>(f: impl FnOnce() -> R) -> (R, OpTimes) {
    OP_TIMES.with(|t| *t.borrow_mut() = Some(OpTimes::new()));
    let r = f();
    let times = OP_TIMES.with(|t| t.borrow_mut().take()).unwrap_or_default();
    (r, times)
}

/// An operator's key in a profile: its name, and for matmuls the kernels and output shape.
fn op_key(node: &TypedNode) -> String {
    use tract_onnx::tract_core::ops::matmul::optimized::OptMatMul;
    match node.op_as::<OptMatMul>() {
        Some(mm) => {
            let kernels: Vec<&str> = mm.mmm.iter().map(|k| k.name()).collect();
            let shape = node.outputs.first().map(|o| format!("{:?}", o.fact.shape));
            format!(
                "OptMatMul {} {}",
                kernels.join("/"),
                shape.unwrap_or_default()
            )
        }
        None => node.op().name().to_string(),
    }
}

/// Whether [`profile_ops`] is collecting on this thread.
fn profiling() -> bool {
    OP_TIMES.with(|t| t.borrow().is_some())
}

/// One run of `plan` with each node's evaluation timed into [`OP_TIMES`] (the key is built
/// outside the timed span). Single-threaded: tract's executor is not installed for it.
fn run_profiled(
    plan: &Arc<TypedRunnableModel>,
    inputs: TVec<TValue>,
) -> Result<TVec<TValue>, Error> {
    let run = || -> TractResult<TVec<TValue>> {
        let mut state = plan.spawn()?;
        state.run_plan_with_eval(inputs, |ctx, st, node, inp| {
            let start = crate::clock::now_ms();
            let out = tract_onnx::tract_core::plan::eval(ctx, st, node, inp);
            let ms = crate::clock::now_ms() - start;
            let key = op_key(node);
            OP_TIMES.with(|t| {
                if let Some(times) = t.borrow_mut().as_mut() {
                    let e = times.entry(key).or_insert((0.0, 0));
                    e.0 += ms;
                    e.1 += 1;
                }
            });
            out
        })
    };
    run().map_err(|e| internal("inference", e))
}
