//! Multiply-adds per second of tract's AVX-512 f32 matmul kernels on the encoder's shapes
//! (profiling aid, not shipped): `cargo run --release --example mmm_kernels`. Rows are the
//! weight matmuls (`m × k` weights, `n` activations: tokens in a model call) and attention's
//! products; each cell packs the activations and runs the kernel, as a plan does per call.
//! Then one head's `P·V` as the plan runs it (`Vᵀ` by `P`, both operands stored with `k`
//! contiguous and packed per call): microseconds for the two packs and for the kernel.
//! The measurements behind `src/embed/engine/kernels.rs`.
use std::time::Instant;
use tract_linalg::mmm::{AsInputValue, FusedSpec};
use tract_onnx::prelude::*;

/// A `rows × cols` f32 matrix of values in [0, 1), spread by `prime`.
fn matrix(rows: usize, cols: usize, prime: usize) -> Tensor {
    let values: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * prime) % 1000) as f32 / 1000.0)
        .collect();
    Tensor::from_shape(&[rows, cols], &values).unwrap()
}

fn main() {
    let names = [
        "avx512_mmm_f32_64x3",
        "avx512_mmm_f32_32x6",
        "avx512_mmm_f32_32x5",
        "avx512_mmm_f32_48x4",
        "avx512_mmm_f32_16x12",
    ];
    for (m, k) in [
        (1536usize, 384usize),
        (384, 1536),
        (384, 384),
        (256, 64),
        (256, 256),
        (64, 256),
    ] {
        let a = matrix(m, k, 7919);
        for n in [16usize, 128, 256, 1024] {
            let b = matrix(k, n, 104729);
            let mut row = format!("m={m:5} k={k:5} n={n:5}:");
            for name in names {
                let mmm = tract_linalg::MmmDispatch::native()
                    .runnable()
                    .iter()
                    .find(|k| k.name() == name)
                    .unwrap();
                let packing = &mmm.packings()[0];
                let pa = packing.0.prepare_one(&a, 1, 0).unwrap();
                let mut c = Tensor::zero::<f32>(&[m, n]).unwrap();
                let reps = (2e9 / (m * k * n) as f64).max(3.0) as usize;
                let t = Instant::now();
                for _ in 0..reps {
                    let pb = packing.1.prepare_one(&b, 0, 1).unwrap();
                    unsafe {
                        mmm.run(
                            m,
                            n,
                            &[
                                FusedSpec::AddMatMul {
                                    a: AsInputValue::Borrowed(&*pa),
                                    b: AsInputValue::Borrowed(&*pb),
                                    packing: 0,
                                },
                                FusedSpec::Store(mmm.c_view(Some(0), Some(1)).wrap(&c.view_mut())),
                            ],
                        )
                        .unwrap();
                    }
                }
                let s = t.elapsed().as_secs_f64() / reps as f64;
                row += &format!(" {}={:.0}G", &name[15..], (m * k * n) as f64 / s / 1e9);
            }
            println!("{row}");
        }
    }
    // One attention head's P·V: out[d][q] = Σ_key Vᵀ[d][key] · P[q][key] (m = head size 32,
    // k = n = tokens), both operands stored k-contiguous as the plan holds them.
    for tokens in [128usize, 256] {
        let (m, k, n) = (32usize, tokens, tokens);
        let a = matrix(m, k, 7919);
        let bt = matrix(n, k, 104729);
        let mut row = format!("P·V m={m} k=n={tokens}:");
        for name in names {
            let mmm = tract_linalg::MmmDispatch::native()
                .runnable()
                .iter()
                .find(|k| k.name() == name)
                .unwrap();
            let packing = &mmm.packings()[0];
            let mut c = Tensor::zero::<f32>(&[m, n]).unwrap();
            let reps = (2e9 / (m * k * n) as f64).max(3.0) as usize;
            let (mut pack, mut kernel) = (0.0, 0.0);
            for _ in 0..reps {
                let t = Instant::now();
                let pa = packing.0.prepare_one(&a, 1, 0).unwrap();
                let pb = packing.1.prepare_one(&bt, 1, 0).unwrap();
                let packed = Instant::now();
                unsafe {
                    mmm.run(
                        m,
                        n,
                        &[
                            FusedSpec::AddMatMul {
                                a: AsInputValue::Borrowed(&*pa),
                                b: AsInputValue::Borrowed(&*pb),
                                packing: 0,
                            },
                            FusedSpec::Store(mmm.c_view(Some(0), Some(1)).wrap(&c.view_mut())),
                        ],
                    )
                    .unwrap();
                }
                pack += (packed - t).as_secs_f64();
                kernel += packed.elapsed().as_secs_f64();
            }
            let us = |s: f64| s / reps as f64 * 1e6;
            row += &format!(
                " {}=pack {:.1}+kernel {:.1}µs",
                &name[15..],
                us(pack),
                us(kernel)
            );
        }
        println!("{row}");
    }
}
