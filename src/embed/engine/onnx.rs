//! The ONNX bytes to tract's graph without the int8 model's f32 copies.
//!
//! The int8 model stores each weight as an int8 initialiser `q`, a `Cast` to f32 and a `Mul` by
//! its scale `s`. Left to tract, typing the graph computes every constant node's value: each
//! weight is then held three times (int8, the cast's f32, the product's f32: 9 bytes per
//! weight, ~100 MB for MiniLM-L6) until declutter drops the first two, and the 30522 × 384
//! embedding table stays an f32 constant (47 MB) for the model's life. Measured at a load's peak
//! (`bench/embed_footprint.rs`, docs/embedding.md, "Memory and load time"). Two rewrites of the
//! decoded protobuf, before tract parses it, take that away:
//!
//! - [`int8_matmuls`]: each `MatMul(x, Mul(Cast(q), s))` (and the bias `Add` after it) becomes
//!   one `CondenseQuantMatMul` node on `x` whose weights are packed here, straight from the
//!   initialisers: the same `QuantWeights::recover` of the same f32 values `f32(q) · s` (one
//!   matrix at a time, so the same integers, scales and bits as when they were read back from
//!   tract's folded constant), and the initialisers' bytes are freed as each is packed.
//!   tract never sees those weights; the node becomes a `super::quant::QuantMatMul`.
//! - [`gather_int8_tables`]: `Gather(Mul(Cast(q), s), ids)` with a per-row (or single) scale
//!   becomes `Mul(Cast(Gather(q, ids)), Gather(s, ids))`: the table stays int8 and only the rows
//!   a call reads are converted, each value `f32(q) · s` as before (the same bits).
//!
//! A pattern that does not match exactly (another consumer of a value, a shape or type it does
//! not expect) is left as it is, and the load goes the old way for it.

use std::cell::RefCell;

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::{attribute_proto, tensor_proto, AttributeProto, GraphProto, NodeProto};
use tract_onnx::tract_hir::internal::*;

use super::int8::QuantWeights;
use super::quant::QuantMatMul;

/// The op type of the integer weight matmul nodes [`int8_matmuls`] writes.
pub(crate) const QUANT_MATMUL: &str = "CondenseQuantMatMul";
/// Its attribute: the index of its weights in the table [`with_weights`] installs.
const WEIGHTS_ATTR: &str = "condense_weights";

thread_local! {
    /// The weights of the `CondenseQuantMatMul` nodes of the graph being parsed on this thread.
    static WEIGHTS: RefCell<Vec<Arc<QuantWeights>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `parse` with `weights` as the table the `CondenseQuantMatMul` nodes name (emptied
/// after, whatever happens).
pub(crate) fn with_weights<R>(weights: Vec<Arc<QuantWeights>>, parse: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            WEIGHTS.with(|w| w.borrow_mut().clear());
        }
    }
    WEIGHTS.with(|w| *w.borrow_mut() = weights);
    let _clear = Clear;
    parse()
}

/// The ONNX parser of `CondenseQuantMatMul` (registered by `super::model`).
pub(crate) fn quant_matmul(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let index: usize = node.get_attr(WEIGHTS_ATTR)?;
    let weights = WEIGHTS
        .with(|w| w.borrow().get(index).cloned())
        .with_context(|| format!("{QUANT_MATMUL} {}: no weights #{index}", node.name))?;
    Ok((expand(QuantExpansion { weights }), vec![]))
}

/// `CondenseQuantMatMul` in tract's inference graph: `x · W + bias` over `x`'s last axis.
#[derive(Debug, Clone)]
struct QuantExpansion {
    weights: Arc<QuantWeights>,
}

impl Expansion for QuantExpansion {
    fn name(&self) -> StaticName {
        QUANT_MATMUL.into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        s.equals(&inputs[0].datum_type, f32::datum_type())?;
        s.equals(&outputs[0].datum_type, f32::datum_type())?;
        s.equals(&outputs[0].rank, &inputs[0].rank)?;
        let (k, n) = (self.weights.k.to_dim(), self.weights.n.to_dim());
        s.given(&inputs[0].rank, move |s, rank| {
            let Some(last) = (rank as usize).checked_sub(1) else {
                bail!("{QUANT_MATMUL}: a scalar input");
            };
            for axis in 0..last {
                s.equals(&outputs[0].shape[axis], &inputs[0].shape[axis])?;
            }
            s.equals(&inputs[0].shape[last], k.clone())?;
            s.equals(&outputs[0].shape[last], n.clone())
        })?;
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let op = QuantMatMul {
            weights: Arc::clone(&self.weights),
            contracted: 1,
        };
        model.wire_node(prefix, op, &inputs[..1])
    }
}

/// Where each value of `graph` comes from and how many readers it has.
struct Uses {
    /// Value name → index of the node that outputs it.
    producer: HashMap<String, usize>,
    /// Value name → number of node inputs and graph outputs that read it.
    readers: HashMap<String, usize>,
    /// Initialiser name → its index.
    initializer: HashMap<String, usize>,
}

impl Uses {
    fn of(graph: &GraphProto) -> Uses {
        let mut producer = HashMap::new();
        let mut readers: HashMap<String, usize> = HashMap::new();
        for (i, node) in graph.node.iter().enumerate() {
            for out in &node.output {
                producer.insert(out.clone(), i);
            }
            for input in &node.input {
                *readers.entry(input.clone()).or_default() += 1;
            }
        }
        for out in &graph.output {
            *readers.entry(out.name.clone()).or_default() += 1;
        }
        let initializer = graph
            .initializer
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Uses {
            producer,
            readers,
            initializer,
        }
    }

    fn readers(&self, value: &str) -> usize {
        self.readers.get(value).copied().unwrap_or(0)
    }

    /// The node of `value` if it is `op_type` and `value` has exactly one reader.
    fn only(&self, graph: &GraphProto, value: &str, op_type: &str) -> Option<usize> {
        let i = *self.producer.get(value)?;
        (graph.node[i].op_type == op_type && graph.node[i].domain.is_empty())
            .then_some(i)
            .filter(|_| self.readers(value) == 1)
    }
}

const INT8: i32 = tensor_proto::DataType::Int8 as i32;
const FLOAT: i32 = tensor_proto::DataType::Float as i32;

/// A dequantised constant `Mul(Cast(q), s)` read by one node: the indices of the `Cast` and
/// `Mul` nodes, of the initialisers `q` (int8) and `s` (f32), and their dimensions.
struct Dequant {
    cast: usize,
    mul: usize,
    q: usize,
    s: usize,
    qdims: Vec<usize>,
    sdims: Vec<usize>,
}

/// The [`Dequant`] that computes `value`, if it does, nothing else reads its parts and no
/// dimension of theirs is negative.
fn dequant(graph: &GraphProto, uses: &Uses, value: &str) -> Option<Dequant> {
    let mul = uses.only(graph, value, "Mul")?;
    let [a, b] = &graph.node[mul].input[..] else {
        return None;
    };
    // f32 multiplication commutes exactly: either order computes the same values.
    let (cast, scale) = match uses.only(graph, a, "Cast") {
        Some(c) => (c, b),
        None => (uses.only(graph, b, "Cast")?, a),
    };
    let to = graph.node[cast]
        .attribute
        .iter()
        .find(|a| a.name == "to")
        .map(|a| a.i);
    if to != Some(i64::from(FLOAT)) {
        return None;
    }
    let [q_name] = &graph.node[cast].input[..] else {
        return None;
    };
    let q = *uses.initializer.get(q_name)?;
    let s = *uses.initializer.get(scale)?;
    let plain = |i: usize| {
        let t = &graph.initializer[i];
        t.data_location != Some(tensor_proto::DataLocation::External as i32)
    };
    let (qt, st) = (&graph.initializer[q], &graph.initializer[s]);
    if !(qt.data_type == INT8
        && st.data_type == FLOAT
        && plain(q)
        && plain(s)
        && uses.readers(q_name) == 1
        && uses.readers(scale) == 1)
    {
        return None;
    }
    Some(Dequant {
        cast,
        mul,
        q,
        s,
        qdims: dims(graph, q)?,
        sdims: dims(graph, s)?,
    })
}

/// The dimensions of an initialiser, if none is negative.
fn dims(graph: &GraphProto, i: usize) -> Option<Vec<usize>> {
    graph.initializer[i]
        .dims
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect()
}

/// An initialiser's values as a tensor (tract's own reader of the protobuf).
fn tensor(graph: &GraphProto, i: usize) -> TractResult<Tensor> {
    tract_onnx::tensor::load_tensor(
        &tract_onnx::data_resolver::MmapDataResolver,
        &graph.initializer[i],
        None,
    )
}

/// Where the scales of a `k × n` matrix are, for a scale of `dims` that broadcasts to `k × n`
/// (one value, one per column, one per row, or one per element).
#[derive(Clone, Copy)]
struct ScaleIndex {
    /// Whether the scale varies down a column (one per row or per element).
    by_row: bool,
    /// Whether it varies along a row (one per column or per element).
    by_column: bool,
    cols: usize,
}

impl ScaleIndex {
    fn of(dims: &[usize], k: usize, n: usize) -> Option<ScaleIndex> {
        let lead = dims.len().checked_sub(2).map_or(&[][..], |l| &dims[..l]);
        if lead.iter().any(|&d| d != 1) {
            return None;
        }
        let (rows, cols) = match dims.len() {
            0 => (1, 1),
            1 => (1, dims[0]),
            r => (dims[r - 2], dims[r - 1]),
        };
        ((rows == 1 || rows == k) && (cols == 1 || cols == n)).then_some(ScaleIndex {
            by_row: rows != 1,
            by_column: cols != 1,
            cols,
        })
    }

    /// The index of element `(i, j)`'s scale.
    fn at(self, i: usize, j: usize) -> usize {
        (if self.by_row { i } else { 0 }) * self.cols + if self.by_column { j } else { 0 }
    }
}

/// Rewrites every `MatMul(x, Mul(Cast(q), s))` (+ bias `Add`) of `graph` whose weights are
/// exact int8 multiples of column scales into a `CondenseQuantMatMul` (see the module docs).
/// Returns the packed weights, in the order the nodes' attributes name them.
pub(crate) fn int8_matmuls(graph: &mut GraphProto) -> TractResult<Vec<Arc<QuantWeights>>> {
    let uses = Uses::of(graph);
    let mut weights = Vec::new();
    let mut dead_nodes = Vec::new();
    let mut dead_initializers = Vec::new();
    // One f32 column at a time, where the integers are not taken as they are: the values the
    // folded constant would hold.
    let mut w = Vec::new();
    let mut columns = Vec::new();
    for m in 0..graph.node.len() {
        let node = &graph.node[m];
        if node.op_type != "MatMul" || !node.domain.is_empty() {
            continue;
        }
        let ([x, wname], [y]) = (&node.input[..], &node.output[..]) else {
            continue;
        };
        let Some(d) = dequant(graph, &uses, wname) else {
            continue;
        };
        let [k, n] = d.qdims[..] else {
            continue;
        };
        let Some(at) = ScaleIndex::of(&d.sdims, k, n) else {
            continue;
        };
        let (q, s) = (tensor(graph, d.q)?, tensor(graph, d.s)?);
        let (q, s) = (q.try_as_plain_ram()?, s.try_as_plain_ram()?);
        let (q, s) = (q.as_slice::<i8>()?, s.as_slice::<f32>()?);
        if k == 0 || n == 0 || k.checked_mul(n) != Some(q.len()) {
            continue;
        }
        // Column by column, as the search reads them: the integers transposed in cache-sized
        // blocks first (reading a row-major matrix down its columns misses the cache at every
        // weight).
        columns.clear();
        columns.resize(q.len(), 0);
        transpose::transpose(q, &mut columns, n, k);
        let out_of_range =
            || format_err!("int8 weights of {}: scale index out of range", node.name);
        let mut ints = vec![0i8; q.len()];
        let mut scales = vec![0f32; n];
        let mut recovered = true;
        for (j, (column, out)) in columns
            .chunks_exact(k)
            .zip(ints.chunks_exact_mut(k))
            .enumerate()
        {
            // One scale for the whole column, whose values the search would give back as they
            // are (the usual case): no f32 values made, nothing searched.
            let column_scale = if at.by_row {
                None
            } else {
                Some(*s.get(at.at(0, j)).ok_or_else(out_of_range)?)
            };
            if let Some(scale) =
                column_scale.filter(|&scale| QuantWeights::is_own_recovery(column, scale))
            {
                out.copy_from_slice(column);
                scales[j] = scale;
                continue;
            }
            // Otherwise the values the folded constant would hold, searched for their scale.
            w.clear();
            match column_scale {
                // One scale for the column: a loop the compiler vectorises.
                Some(scale) => w.extend(column.iter().map(|&v| f32::from(v) * scale)),
                None => {
                    for (i, &v) in column.iter().enumerate() {
                        let &scale = s.get(at.at(i, j)).ok_or_else(out_of_range)?;
                        w.push(f32::from(v) * scale);
                    }
                }
            }
            match QuantWeights::recover_column(&w, out) {
                Some(scale) => scales[j] = scale,
                None => {
                    recovered = false;
                    break;
                }
            }
        }
        if !recovered {
            continue;
        }
        // The bias: the one reader of `y`, an `Add` of an f32 vector of `n` values.
        let mut bias = vec![0f32; n];
        let mut out = (y.clone(), None);
        if let Some(add) = uses.only_reader(graph, y, "Add") {
            let other = graph.node[add].input.iter().find(|i| *i != y);
            let b = other.and_then(|o| uses.initializer.get(o).copied());
            if let Some(b) = b {
                let t = &graph.initializer[b];
                let vector = t.data_type == FLOAT
                    && dims(graph, b).is_some_and(|d| d.len() == 1 && d[0] == n);
                if vector && graph.node[add].output.len() == 1 {
                    let values = tensor(graph, b)?;
                    let values = values.try_as_plain_ram()?;
                    let values = values.as_slice::<f32>()?;
                    if values.len() == n {
                        bias.copy_from_slice(values);
                        out = (graph.node[add].output[0].clone(), Some(add));
                    }
                }
            }
        }
        let index = weights.len();
        weights.push(Arc::new(QuantWeights::pack_columns(
            k, n, &ints, scales, bias,
        )));
        let name = format!("{}.quant", graph.node[m].name);
        let x = x.clone();
        graph.node[m] = NodeProto {
            input: vec![x],
            output: vec![out.0],
            name,
            op_type: QUANT_MATMUL.into(),
            domain: "condense".into(),
            attribute: vec![AttributeProto {
                name: WEIGHTS_ATTR.into(),
                r#type: attribute_proto::AttributeType::Int as i32,
                i: index as i64,
                ..AttributeProto::default()
            }],
            ..NodeProto::default()
        };
        dead_nodes.extend([d.cast, d.mul]);
        dead_nodes.extend(out.1);
        // The initialisers' bytes go now: the weights are packed.
        for i in [d.q, d.s] {
            let t = &mut graph.initializer[i];
            t.raw_data = Vec::new();
            t.int32_data = Vec::new();
            t.float_data = Vec::new();
            dead_initializers.push(i);
        }
    }
    remove(&mut graph.node, dead_nodes);
    remove(&mut graph.initializer, dead_initializers);
    Ok(weights)
}

impl Uses {
    /// The node reading `value` if it is its only reader and is `op_type`.
    fn only_reader(&self, graph: &GraphProto, value: &str, op_type: &str) -> Option<usize> {
        if self.readers(value) != 1 {
            return None;
        }
        graph
            .node
            .iter()
            .position(|n| n.input.iter().any(|i| i == value))
            .filter(|&i| graph.node[i].op_type == op_type && graph.node[i].domain.is_empty())
    }
}

/// Removes the items at `indices` from `items`, keeping the others' order.
fn remove<T>(items: &mut Vec<T>, mut indices: Vec<usize>) {
    indices.sort_unstable();
    indices.dedup();
    let mut next = indices.into_iter().peekable();
    let mut i = 0;
    items.retain(|_| {
        let keep = next.peek() != Some(&i);
        if !keep {
            next.next();
        }
        i += 1;
        keep
    });
}

/// Rewrites every `Gather(Mul(Cast(q), s), ids)` on axis 0 of `graph`, with `q` an int8 matrix
/// and `s` one scale per row (or one in all), into `Mul(Cast(Gather(q, ids)), Gather(s, ids))`
/// (see the module docs). Returns how many.
pub(crate) fn gather_int8_tables(graph: &mut GraphProto) -> usize {
    let uses = Uses::of(graph);
    let mut replaced = HashMap::new();
    let mut dead = Vec::new();
    for g in 0..graph.node.len() {
        let node = &graph.node[g];
        if node.op_type != "Gather" || !node.domain.is_empty() {
            continue;
        }
        let axis = node
            .attribute
            .iter()
            .find(|a| a.name == "axis")
            .map_or(0, |a| a.i);
        let ([table, ids], [y]) = (&node.input[..], &node.output[..]) else {
            continue;
        };
        if axis != 0 {
            continue;
        }
        let Some(d) = dequant(graph, &uses, table) else {
            continue;
        };
        let [rows, _] = d.qdims[..] else {
            continue;
        };
        // One scale per row (`rows × 1`, gathered alongside), or one in all (`[]`, `[1]`).
        let per_row = d.sdims == [rows, 1];
        let single = d.sdims.iter().all(|&x| x == 1) && d.sdims.len() <= 1;
        if !per_row && !single {
            continue;
        }
        let (ids, y) = (ids.clone(), y.clone());
        let base = graph.node[g].name.clone();
        let [q, s] = [d.q, d.s].map(|i| graph.initializer[i].name.clone());
        let value = |what: &str| format!("{y}.int8_{what}");
        let gather = |input: String, output: String, name: String| NodeProto {
            input: vec![input, ids.clone()],
            output: vec![output],
            name,
            op_type: "Gather".into(),
            attribute: vec![AttributeProto {
                name: "axis".into(),
                r#type: attribute_proto::AttributeType::Int as i32,
                i: 0,
                ..AttributeProto::default()
            }],
            ..NodeProto::default()
        };
        let mut cast = graph.node[d.cast].clone();
        cast.input = vec![value("rows")];
        cast.output = vec![value("cast")];
        cast.name = format!("{base}.int8_cast");
        let mut mul = graph.node[d.mul].clone();
        let scale = if per_row { value("scales") } else { s.clone() };
        mul.input = vec![value("cast"), scale];
        mul.output = vec![y.clone()];
        mul.name = format!("{base}.int8_mul");
        // Nodes in an order where each value is computed before it is read (tract parses any
        // order, but keep the graph topologically sorted as ONNX requires).
        let mut nodes = vec![gather(q, value("rows"), format!("{base}.int8_rows"))];
        if per_row {
            nodes.push(gather(s, value("scales"), format!("{base}.int8_scales")));
        }
        nodes.extend([cast, mul]);
        replaced.insert(g, nodes);
        dead.extend([d.cast, d.mul]);
    }
    let count = replaced.len();
    if count > 0 {
        let old = std::mem::take(&mut graph.node);
        for (i, node) in old.into_iter().enumerate() {
            if let Some(nodes) = replaced.remove(&i) {
                graph.node.extend(nodes);
            } else if !dead.contains(&i) {
                graph.node.push(node);
            }
        }
    }
    count
}
