//! Where a single short query's embedding time goes inside tract (profiling aid, not shipped):
//! `cargo run --release --example tract_profile -- BUCKET [REAL]`. Loads the model as
//! src/embed/engine/model.rs does, then times, interleaved in one run, (A) the symbolic plan on REAL
//! tokens (what single texts ran on before the length buckets) and (B) a plan with `batch = 1`
//! and `sequence = BUCKET` concretized, on REAL tokens padded (masked) to BUCKET, and prints
//! B/A. With `PROFILE=1` also a per-operator profile of both (`BY_NODE=1`: per node; `KERNEL=1`:
//! matmuls by the kernel tract chose). Without condense's repairs (`src/embed/engine/ops.rs`,
//! `src/embed/engine/kernels.rs`). `STATE=1`:
//! A is the specialised plan run on one reused state (measured: no gain over `run`).
//! `CHECK=12,16,18,24`: whether padding changes the hidden states bit for bit (it does, by
//! ~2e-6: changing the bucket list changes query vectors in the last bits).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cast::Cast;
use tract_onnx::tract_core::ops::matmul::optimized::OptMatMul;

fn declutter(model: &mut TypedModel) -> TractResult<()> {
    let mut optimizer = tract_onnx::tract_core::optim::Optimizer::declutter();
    optimizer
        .passes
        .retain(|pass| !format!("{pass:?}").starts_with("FoldUniformMask"));
    optimizer.optimize(model)
}

fn fold_constant_casts(model: &mut TypedModel) -> TractResult<()> {
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
    for (id, name, konst, to) in folds {
        let value = konst.cast_to_dt(to)?.into_owned();
        let mut patch = TypedModelPatch::default();
        let wire = patch.add_const(name, value)?;
        patch.shunt_outside(model, id.into(), wire)?;
        patch.apply(model)?;
    }
    model.compact()?;
    Ok(())
}

fn inputs(seq: usize) -> TVec<TValue> {
    let ids: Vec<i64> = (0..seq).map(|i| 1000 + i as i64 * 37).collect();
    let ones = vec![1i64; seq];
    let zeros = vec![0i64; seq];
    tvec![
        Tensor::from_shape(&[1, seq], &ids).unwrap().into(),
        Tensor::from_shape(&[1, seq], &ones).unwrap().into(),
        Tensor::from_shape(&[1, seq], &zeros).unwrap().into(),
    ]
}

fn profile(label: &str, plan: &Arc<TypedRunnableModel>, seq: usize) {
    let mut by_op: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut state = plan.spawn().unwrap();
    for _ in 0..50 {
        state
            .run_plan_with_eval(inputs(seq), |ctx, st, node, inp| {
                let t = Instant::now();
                let r = tract_onnx::tract_core::plan::eval(ctx, st, node, inp);
                let shapes: Vec<String> = node
                    .outputs
                    .iter()
                    .map(|o| format!("{:?}", o.fact.shape))
                    .collect();
                let key = if std::env::var("BY_NODE").is_ok() {
                    format!("{} {} {}", node.op().name(), node.name, shapes.join(","))
                } else if let Some(mm) = node.op_as::<OptMatMul>() {
                    // `KERNEL=1`: matmuls by the kernel they run.
                    let names: Vec<String> = mm.mmm.iter().map(|k| k.name().to_string()).collect();
                    if std::env::var("KERNEL").is_ok() {
                        format!("OptMatMul {}", names.join("/"))
                    } else {
                        "OptMatMul".to_string()
                    }
                } else {
                    node.op().name().to_string()
                };
                let e = by_op.entry(key).or_default();
                e.0 += t.elapsed().as_secs_f64() * 1e3 / 50.0;
                e.1 += 1;
                r
            })
            .unwrap();
    }
    let mut rows: Vec<_> = by_op.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
    let total: f64 = rows.iter().map(|r| r.1 .0).sum();
    println!("-- {label}: {total:.3} ms per run by op --");
    for (op, (ms, n)) in rows.iter().take(if std::env::var("BY_NODE").is_ok() {
        400
    } else {
        14
    }) {
        println!("{ms:8.3} ms  {:4} nodes  {op}", n / 50);
    }
}

/// `CHECK=12,16,18,24 tract_profile`: whether padding is invisible bit for bit: for every real
/// length up to the largest plan, the hidden states of the real tokens from each plan at least
/// that long (batch 1, padded and masked) are compared with those of the symbolic plan run
/// unpadded; prints the lengths and plans that differ (none: any bucket list gives the same
/// vectors).
fn check(
    typed: &TypedModel,
    sym_plan: &Arc<TypedRunnableModel>,
    lens: &[usize],
) -> TractResult<()> {
    let mut plans = Vec::new();
    for &len in lens {
        let mut subs = HashMap::new();
        subs.insert(typed.sym("batch"), TDim::Val(1));
        subs.insert(typed.sym("sequence"), TDim::Val(len as i64));
        let mut m = typed.set_symbols(&subs)?;
        m.optimize()?;
        plans.push((len, m.into_runnable()?));
    }
    let max = lens.iter().copied().max().unwrap_or(0);
    let mut differ = 0;
    for real in 2..=max {
        for trial in 0..3u64 {
            let mut x = (real as u64 * 7919 + trial) | 1;
            let ids: Vec<i64> = (0..real)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match i {
                        0 => 101,
                        _ if i + 1 == real => 102,
                        _ => 1000 + (x % 28000) as i64,
                    }
                })
                .collect();
            let run = |plan: &Arc<TypedRunnableModel>, len: usize| -> TractResult<Vec<f32>> {
                let mut i = ids.clone();
                let mut mask = vec![1i64; real];
                i.resize(len, 0);
                mask.resize(len, 0);
                let out = plan.run(tvec![
                    Tensor::from_shape(&[1, len], &i)?.into(),
                    Tensor::from_shape(&[1, len], &mask)?.into(),
                    Tensor::from_shape(&[1, len], &vec![0i64; len])?.into(),
                ])?;
                let v = out[0].try_as_plain_ram()?.as_slice::<f32>()?[..real * 384].to_vec();
                Ok(v)
            };
            let want = run(sym_plan, real)?;
            for (len, plan) in plans.iter().filter(|(len, _)| *len >= real) {
                let got = run(plan, *len)?;
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                if !same {
                    differ += 1;
                    let diff = got
                        .iter()
                        .zip(&want)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0f32, f32::max);
                    println!("real {real} trial {trial}: plan {len} differs (max {diff:e})");
                }
            }
        }
    }
    println!("check {lens:?}: {differ} differences");
    Ok(())
}

fn main() -> TractResult<()> {
    let seq: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let bytes = std::fs::read(dir.join("model.onnx"))?;
    let onnx = tract_onnx::onnx().with_ignore_value_info(true);
    let model = onnx.model_for_read(&mut bytes.as_slice())?;
    let mut typed = model.into_typed()?;
    declutter(&mut typed)?;
    fold_constant_casts(&mut typed)?;
    declutter(&mut typed)?;
    let mut sym = typed.clone();
    sym.optimize()?;
    let sym_plan = sym.clone().into_runnable()?;
    if let Ok(lens) = std::env::var("CHECK") {
        let lens: Vec<usize> = lens.split(',').filter_map(|s| s.parse().ok()).collect();
        return check(&typed, &sym_plan, &lens);
    }
    let mut subs = HashMap::new();
    subs.insert(typed.sym("batch"), TDim::Val(1));
    if std::env::var("BATCH_ONLY").is_err() {
        subs.insert(typed.sym("sequence"), TDim::Val(seq as i64));
    }
    let mut conc = typed.set_symbols(&subs)?;
    declutter(&mut conc)?;
    conc.optimize()?;
    let conc_plan = conc.into_runnable()?;
    let a = sym_plan.run(inputs(seq))?;
    let b = conc_plan.run(inputs(seq))?;
    let (a, b) = (
        a[0].try_as_plain_ram()?.as_slice::<f32>()?.to_vec(),
        b[0].try_as_plain_ram()?.as_slice::<f32>()?.to_vec(),
    );
    let diff = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    println!(
        "seq {seq}: max |symbolic - concrete| = {diff:e}, {} values",
        a.len()
    );
    // Interleaved A/B: the symbolic plan on `real` tokens (what ran before) against the
    // specialised plan on `real` tokens padded to `seq` (masked), with reused states.
    let real: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(seq);
    let padded = |real: usize, seq: usize| -> TVec<TValue> {
        let mut ids: Vec<i64> = (0..real).map(|i| 1000 + i as i64 * 37).collect();
        let mut mask = vec![1i64; real];
        ids.resize(seq, 0);
        mask.resize(seq, 0);
        tvec![
            Tensor::from_shape(&[1, seq], &ids).unwrap().into(),
            Tensor::from_shape(&[1, seq], &mask).unwrap().into(),
            Tensor::from_shape(&[1, seq], &vec![0i64; seq])
                .unwrap()
                .into(),
        ]
    };
    let (mut a_ms, mut b_ms) = (Vec::new(), Vec::new());
    // STATE=1: A is the specialised plan too, run on one reused state instead of `run`.
    let reuse = std::env::var("STATE").is_ok();
    let mut state = conc_plan.spawn()?;
    for _ in 0..300 {
        let t = Instant::now();
        if reuse {
            state.run(padded(real, seq))?;
        } else {
            sym_plan.run(padded(real, real))?;
        }
        a_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        conc_plan.run(padded(real, seq))?;
        b_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let ratios: Vec<f64> = {
        let mut r: Vec<f64> = b_ms.iter().zip(&a_ms).map(|(b, a)| b / a).collect();
        r.sort_by(f64::total_cmp);
        r
    };
    a_ms.sort_by(f64::total_cmp);
    b_ms.sort_by(f64::total_cmp);
    println!(
        "A symbolic {real} tok: p50 {:.3} ms min {:.3} | B specialised {seq} (padded from {real}): p50 {:.3} ms min {:.3} | B/A per pair p50 {:.3}",
        a_ms[150], a_ms[0], b_ms[150], b_ms[0], ratios[150]
    );
    if std::env::var("PROFILE").is_err() {
        return Ok(());
    }
    profile("symbolic", &sym_plan, seq);
    profile("concrete", &conc_plan, seq);
    Ok(())
}
