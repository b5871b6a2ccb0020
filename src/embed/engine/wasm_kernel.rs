//! The f32 8×8 matmul micro-kernel of the wasm build, in halves that fit V8's registers.
//!
//! tract's `wasm_f32_8x8` keeps the whole 8×8 C tile in 16 `v128` accumulators through its
//! k-loop, plus the A and B operands and their broadcasts. V8 on x86-64 allocates at most 15
//! vector registers, so that loop spills on every step; it took 73% of an embedding in Node.
//!
//! This kernel takes the same packed panels (A: `k × 8` rows, B: `k × 8` columns, both
//! contiguous per k) and the same fused-op protocol, and computes the tile as two 8×4 halves:
//! for each half, a k-loop with 8 accumulators (one column of 8 rows = two vectors, for 4
//! columns), the two A vectors and one broadcast B value: 11 live vectors, no spill. The k-loop
//! runs in chunks of [`K_CHUNK`] steps, both halves per chunk, so the second half reads the
//! chunk's panels from L1 (whole 1536-long panels, 96 KB for A and B, do not fit).
//!
//! A tile stored to a C whose columns are contiguous and rows are not (attention's `Q·Kᵀ`,
//! `[queries, keys]` with the queries on the kernel's M axis) is transposed 4×4 block by block
//! in registers and written two vectors per row; tract's kernel writes such a tile one value at a
//! time (64 lane extracts and scalar stores). 256 tokens in Node, one paired run: `Q·Kᵀ` 8.36 →
//! 7.99 ms per text (later runs varied by about as much).
//!
//! Every C element gets the same IEEE operations in the same order as in tract's kernel
//! (`c += a·b` for k = 0, 1, …, a multiply then an add, no FMA), and every fused op the same
//! operand order, so the results are the same bits; a wasm test checks this against tract's
//! kernel on random programs. [`swap_in`] puts it in place of `wasm_f32_8x8` in an optimised
//! plan: same packings, so the packed weights and the plan are unchanged otherwise.
//!
//! `unsafe` code (with `same.rs`, `wasm_quant.rs` and `x86_quant.rs`, the crate's only):
//! tract's kernel protocol hands a kernel raw pointers to its packed panels and C tile, and
//! wasm SIMD loads through them. The pointers and sizes are tract's (the same it gives its own
//! 8×8 kernel); nothing here comes from input.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

use tract_linalg::mmm::{FusedKerSpec, MatMatMul, OutputStoreKer};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::matmul::optimized::OptMatMul;

/// The C tile, column-major: `t[2 * c + h]` holds rows `4h..4h + 4` of column `c`.
type Tile = [v128; 16];

/// Name of the kernel this one replaces, and its own.
const TRACT_KERNEL: &str = "wasm_f32_8x8";
const NAME: &str = "condense_wasm_f32_8x8_halves";

/// The k-loop runs in chunks of this many steps, each chunk's two halves back to back: the
/// second half then reads the chunk's panels (2 × 8 KB) from L1. Over a whole 1536-long k the
/// panels (2 × 48 KB) overflow L1 and the second half re-read them from L2: 128-token texts ran
/// at 14.7 texts/s in Node without the chunks and 16.8 with them (64- and 128-step chunks
/// measured the same, within noise).
const K_CHUNK: usize = 256;

#[inline(always)]
fn each(t: &mut Tile, f: impl Fn(v128) -> v128) {
    for v in t.iter_mut() {
        *v = f(*v);
    }
}

/// `t = op(row value, t)` (or `op(t, row value)` when `flipped`) for the 8 per-row values at `row`.
#[inline(always)]
unsafe fn per_row(t: &mut Tile, row: *const f32, op: fn(v128, v128) -> v128, flipped: bool) {
    // SAFETY: the caller's spec points at 8 values.
    let (lo, hi) = unsafe {
        (
            v128_load(row as *const v128),
            v128_load(row.add(4) as *const v128),
        )
    };
    for (i, v) in t.iter_mut().enumerate() {
        let r = if i % 2 == 0 { lo } else { hi };
        *v = if flipped { op(*v, r) } else { op(r, *v) };
    }
}

/// `t = op(column value, t)` (or flipped) for the 8 per-column values at `cols`.
#[inline(always)]
unsafe fn per_col(t: &mut Tile, cols: *const f32, op: fn(v128, v128) -> v128, flipped: bool) {
    for c in 0..8 {
        // SAFETY: the caller's spec points at 8 values.
        let s = f32x4_splat(unsafe { *cols.add(c) });
        for v in &mut t[2 * c..2 * c + 2] {
            *v = if flipped { op(*v, s) } else { op(s, *v) };
        }
    }
}

/// The 4×4 transpose of the columns `c0..c3` (each holding 4 rows): the 4 rows.
#[inline(always)]
fn transpose4(c0: v128, c1: v128, c2: v128, c3: v128) -> [v128; 4] {
    // Interleave pairs of columns, then pairs of pairs.
    let t0 = i32x4_shuffle::<0, 4, 1, 5>(c0, c1); // r0c0 r0c1 r1c0 r1c1
    let t1 = i32x4_shuffle::<2, 6, 3, 7>(c0, c1); // r2c0 r2c1 r3c0 r3c1
    let t2 = i32x4_shuffle::<0, 4, 1, 5>(c2, c3); // r0c2 r0c3 r1c2 r1c3
    let t3 = i32x4_shuffle::<2, 6, 3, 7>(c2, c3); // r2c2 r2c3 r3c2 r3c3
    [
        i64x2_shuffle::<0, 2>(t0, t2),
        i64x2_shuffle::<1, 3>(t0, t2),
        i64x2_shuffle::<0, 2>(t1, t3),
        i64x2_shuffle::<1, 3>(t1, t3),
    ]
}

/// Address of C's element (row `r`, column `c`) in a tile store.
#[inline(always)]
fn at(tile: &OutputStoreKer, r: usize, c: usize) -> *mut f32 {
    tile.ptr
        .wrapping_offset(tile.row_byte_stride * r as isize + tile.col_byte_stride * c as isize)
        as *mut f32
}

/// One half (`h` = 0: columns 0–3, 1: columns 4–7) of `C += A·B` over `k` packed steps.
#[inline(never)]
unsafe fn add_mat_mul_half(t: &mut Tile, h: usize, k: usize, pa: *const u8, pb: *const u8) {
    let a = pa as *const v128;
    let b = (pb as *const f32).wrapping_add(4 * h);
    let acc = &mut t[8 * h..8 * h + 8];
    let (mut c0, mut c1, mut c2, mut c3) = (acc[0], acc[1], acc[2], acc[3]);
    let (mut c4, mut c5, mut c6, mut c7) = (acc[4], acc[5], acc[6], acc[7]);
    for i in 0..k {
        // SAFETY: the packed panels hold k × 8 values each (tract's packing for mr = nr = 8).
        unsafe {
            let alo = v128_load(a.add(2 * i));
            let ahi = v128_load(a.add(2 * i + 1));
            let col = b.add(8 * i) as *const u32;
            let b0 = v128_load32_splat(col);
            c0 = f32x4_add(c0, f32x4_mul(alo, b0));
            c1 = f32x4_add(c1, f32x4_mul(ahi, b0));
            let b1 = v128_load32_splat(col.add(1));
            c2 = f32x4_add(c2, f32x4_mul(alo, b1));
            c3 = f32x4_add(c3, f32x4_mul(ahi, b1));
            let b2 = v128_load32_splat(col.add(2));
            c4 = f32x4_add(c4, f32x4_mul(alo, b2));
            c5 = f32x4_add(c5, f32x4_mul(ahi, b2));
            let b3 = v128_load32_splat(col.add(3));
            c6 = f32x4_add(c6, f32x4_mul(alo, b3));
            c7 = f32x4_add(c7, f32x4_mul(ahi, b3));
        }
    }
    acc.copy_from_slice(&[c0, c1, c2, c3, c4, c5, c6, c7]);
}

/// The kernel (tract's `Kernel<f32>` signature): runs a fused-op program on one 8×8 tile.
///
/// # Safety
/// `spec` must be a program tract built for an 8×8 f32 kernel with tract's f32 packings for
/// mr = nr = 8: its pointers valid for the panel and tile sizes that implies.
pub(crate) unsafe fn kernel(spec: &[FusedKerSpec<f32>]) -> isize {
    let zero = f32x4_splat(0.0);
    let mut t: Tile = [zero; 16];
    for op in spec {
        // SAFETY (all arms): the pointers come from tract's program for this tile (see above).
        unsafe {
            match *op {
                FusedKerSpec::Done => break,
                FusedKerSpec::Clear => t = [zero; 16],
                FusedKerSpec::LoadTile(col_major, _row_major) => {
                    for (i, v) in t.iter_mut().enumerate() {
                        *v = v128_load((col_major as *const v128).add(i));
                    }
                }
                FusedKerSpec::ScalarMin(a) => each(&mut t, |v| f32x4_min(f32x4_splat(a), v)),
                FusedKerSpec::ScalarMax(a) => each(&mut t, |v| f32x4_max(f32x4_splat(a), v)),
                FusedKerSpec::ScalarAdd(a) => each(&mut t, |v| f32x4_add(f32x4_splat(a), v)),
                FusedKerSpec::ScalarMul(a) => each(&mut t, |v| f32x4_mul(f32x4_splat(a), v)),
                FusedKerSpec::ScalarSub(a) => each(&mut t, |v| f32x4_sub(f32x4_splat(a), v)),
                FusedKerSpec::ScalarSubF(a) => each(&mut t, |v| f32x4_sub(v, f32x4_splat(a))),
                FusedKerSpec::LeakyRelu(a) => each(&mut t, |v| {
                    let m = f32x4_gt(v, zero);
                    v128_bitselect(v, f32x4_mul(f32x4_splat(a), v), m)
                }),
                FusedKerSpec::PerRowMin(row) => per_row(&mut t, row, f32x4_min, false),
                FusedKerSpec::PerRowMax(row) => per_row(&mut t, row, f32x4_max, false),
                FusedKerSpec::PerRowAdd(row) => per_row(&mut t, row, f32x4_add, false),
                FusedKerSpec::PerRowMul(row) => per_row(&mut t, row, f32x4_mul, false),
                FusedKerSpec::PerRowSub(row) => per_row(&mut t, row, f32x4_sub, false),
                FusedKerSpec::PerRowSubF(row) => per_row(&mut t, row, f32x4_sub, true),
                FusedKerSpec::PerColMin(cols) => per_col(&mut t, cols, f32x4_min, false),
                FusedKerSpec::PerColMax(cols) => per_col(&mut t, cols, f32x4_max, false),
                FusedKerSpec::PerColAdd(cols) => per_col(&mut t, cols, f32x4_add, false),
                FusedKerSpec::PerColMul(cols) => per_col(&mut t, cols, f32x4_mul, false),
                FusedKerSpec::PerColSub(cols) => per_col(&mut t, cols, f32x4_sub, false),
                FusedKerSpec::PerColSubF(cols) => per_col(&mut t, cols, f32x4_sub, true),
                FusedKerSpec::QScale(shift, rp, mult) => {
                    let s = tract_linalg::Scaler::from_fuse_params(shift, rp, mult).scale;
                    each(&mut t, |v| f32x4_mul(f32x4_splat(s), v))
                }
                FusedKerSpec::RoundingShiftRight(shift, _rp) => {
                    let s = 2f32.powi(-(shift as i32));
                    each(&mut t, |v| f32x4_mul(f32x4_splat(s), v))
                }
                FusedKerSpec::ShiftLeft(shift) => {
                    let s = 2f32.powi(shift as i32);
                    each(&mut t, |v| f32x4_mul(f32x4_splat(s), v))
                }
                FusedKerSpec::AddUnicast(tile) if tile.row_byte_stride == 4 => {
                    for c in 0..8 {
                        for h in 0..2 {
                            let m = v128_load(at(&tile, 4 * h, c) as *const v128);
                            t[2 * c + h] = f32x4_add(t[2 * c + h], m);
                        }
                    }
                }
                FusedKerSpec::AddUnicast(tile) => {
                    for c in 0..8 {
                        for h in 0..2 {
                            let r = 4 * h;
                            let m = f32x4(
                                *at(&tile, r, c),
                                *at(&tile, r + 1, c),
                                *at(&tile, r + 2, c),
                                *at(&tile, r + 3, c),
                            );
                            t[2 * c + h] = f32x4_add(t[2 * c + h], m);
                        }
                    }
                }
                FusedKerSpec::AddRowColProducts(rows, cols) => {
                    let lo = v128_load(rows as *const v128);
                    let hi = v128_load(rows.add(4) as *const v128);
                    for c in 0..8 {
                        let s = f32x4_splat(*cols.add(c));
                        t[2 * c] = f32x4_add(t[2 * c], f32x4_mul(lo, s));
                        t[2 * c + 1] = f32x4_add(t[2 * c + 1], f32x4_mul(hi, s));
                    }
                }
                FusedKerSpec::Store(tile) if tile.row_byte_stride == 4 => {
                    // Rows contiguous in C (its M axis): each vector is 4 consecutive values.
                    for c in 0..8 {
                        v128_store(at(&tile, 0, c) as *mut v128, t[2 * c]);
                        v128_store(at(&tile, 4, c) as *mut v128, t[2 * c + 1]);
                    }
                }
                FusedKerSpec::Store(tile) if tile.col_byte_stride == 4 => {
                    // Columns contiguous in C (its N axis): transpose each 4×4 block of the
                    // column-major tile, then each row's 8 values are two vectors.
                    for h in 0..2 {
                        for q in 0..2 {
                            let [r0, r1, r2, r3] = transpose4(
                                t[2 * (4 * q) + h],
                                t[2 * (4 * q + 1) + h],
                                t[2 * (4 * q + 2) + h],
                                t[2 * (4 * q + 3) + h],
                            );
                            for (i, r) in [r0, r1, r2, r3].into_iter().enumerate() {
                                v128_store(at(&tile, 4 * h + i, 4 * q) as *mut v128, r);
                            }
                        }
                    }
                }
                FusedKerSpec::Store(tile) => {
                    for c in 0..8 {
                        let (lo, hi) = (t[2 * c], t[2 * c + 1]);
                        *at(&tile, 0, c) = f32x4_extract_lane::<0>(lo);
                        *at(&tile, 1, c) = f32x4_extract_lane::<1>(lo);
                        *at(&tile, 2, c) = f32x4_extract_lane::<2>(lo);
                        *at(&tile, 3, c) = f32x4_extract_lane::<3>(lo);
                        *at(&tile, 4, c) = f32x4_extract_lane::<0>(hi);
                        *at(&tile, 5, c) = f32x4_extract_lane::<1>(hi);
                        *at(&tile, 6, c) = f32x4_extract_lane::<2>(hi);
                        *at(&tile, 7, c) = f32x4_extract_lane::<3>(hi);
                    }
                }
                FusedKerSpec::AddMatMul { k, pa, pb, .. } => {
                    let mut done = 0;
                    while done < k {
                        let kc = (k - done).min(K_CHUNK);
                        // Both panels hold 8 f32 (32 bytes) per k step.
                        let (a, b) = (pa.add(32 * done), pb.add(32 * done));
                        add_mat_mul_half(&mut t, 0, kc, a, b);
                        add_mat_mul_half(&mut t, 1, kc, a, b);
                        done += kc;
                    }
                }
            }
        }
    }
    0
}

/// tract's 8×8 kernel with [`kernel`] as its code (its packings, stores and fusion rules).
pub(crate) fn halves() -> Box<dyn MatMatMul> {
    let mut k = tract_linalg::wasm::wasm_f32_8x8.clone();
    k.name = NAME.to_string();
    k.kernel = kernel;
    k.mmm()
}

/// Replaces `wasm_f32_8x8` by [`halves`] in every matmul of an optimised model; returns how
/// many matmuls changed.
pub(crate) fn swap_in(model: &mut TypedModel) -> usize {
    let ours = halves();
    let mut swapped = 0;
    for node in model.nodes_mut() {
        let Some(op) = node.op_as_mut::<OptMatMul>() else {
            continue;
        };
        let mut changed = false;
        for mmm in op.mmm.iter_mut() {
            if mmm.name() == TRACT_KERNEL {
                *mmm = ours.clone();
                changed = true;
            }
        }
        swapped += usize::from(changed);
    }
    swapped
}

/// Runs `programs` random fused-op programs (random k, panels, fused ops, tile strides) through
/// [`kernel`] and through tract's `wasm_f32_8x8`, and returns the first program whose stored
/// tiles differ in any bit. The wasm tests call it (through `embed::test_hooks::check_wasm_kernel`).
#[cfg(feature = "test-hooks")]
pub(crate) fn check_against_tract(seed: u64, programs: usize) -> Result<(), String> {
    use tract_linalg::mmm::{MatMatMulKer, RoundingPolicy};

    let mut next = super::xorshift::xorshift(seed);
    let theirs = &*tract_linalg::wasm::wasm_f32_8x8;
    for program in 0..programs {
        let value = |next: &mut dyn FnMut() -> u64| (next() % 20_001) as f32 / 1000.0 - 10.0;
        // Every fourth program crosses the k-chunk boundaries (k from K_CHUNK - 3 to
        // 2 K_CHUNK + 3: one, two or three chunks, a last chunk of 1..K_CHUNK).
        let k = if program % 4 == 0 {
            K_CHUNK - 3 + (next() % (K_CHUNK as u64 + 7)) as usize
        } else {
            1 + (next() % 48) as usize
        };
        // 16-byte aligned panels, as tract packs them.
        let mut pa = vec![f32x4_splat(0.0); 2 * k];
        let mut pb = vec![f32x4_splat(0.0); 2 * k];
        for v in pa.iter_mut().chain(pb.iter_mut()) {
            *v = f32x4(
                value(&mut next),
                value(&mut next),
                value(&mut next),
                value(&mut next),
            );
        }
        let rows: Vec<f32> = (0..8).map(|_| value(&mut next)).collect();
        let cols: Vec<f32> = (0..8).map(|_| value(&mut next)).collect();
        let unicast: Vec<f32> = (0..64).map(|_| value(&mut next)).collect();
        // A tile for LoadTile, in both layouts (tract's kernel reads the row-major one, ours the
        // column-major one).
        let tile: Vec<f32> = (0..64).map(|_| value(&mut next)).collect();
        let lanes = |at: &dyn Fn(usize) -> f32| -> Vec<v128> {
            (0..16)
                .map(|v| f32x4(at(4 * v), at(4 * v + 1), at(4 * v + 2), at(4 * v + 3)))
                .collect()
        };
        let tile_rows = lanes(&|i| tile[i]);
        let tile_cols = lanes(&|i| tile[(i % 8) * 8 + i / 8]);
        let scalar = value(&mut next);
        let (row_major, col_major) = (next().is_multiple_of(2), next().is_multiple_of(2));
        let strides = |row_major: bool| {
            if row_major {
                (32isize, 4isize)
            } else {
                (4, 32)
            }
        };

        let run = |run_kernel: &dyn Fn(&[FusedKerSpec<f32>]) -> isize,
                   ops: &[FusedKerSpec<f32>]|
         -> Vec<u32> {
            let mut out = vec![0f32; 64];
            let (rbs, cbs) = strides(col_major);
            let mut spec = ops.to_vec();
            spec.push(FusedKerSpec::Store(OutputStoreKer {
                ptr: out.as_mut_ptr() as *mut u8,
                row_byte_stride: rbs,
                col_byte_stride: cbs,
                item_size: 4,
            }));
            spec.push(FusedKerSpec::Done);
            run_kernel(&spec);
            out.iter().map(|x| x.to_bits()).collect()
        };
        let (urbs, ucbs) = strides(row_major);
        let all = [
            FusedKerSpec::ScalarMin(scalar),
            FusedKerSpec::ScalarMax(scalar),
            FusedKerSpec::ScalarAdd(scalar),
            FusedKerSpec::ScalarMul(scalar),
            FusedKerSpec::ScalarSub(scalar),
            FusedKerSpec::ScalarSubF(scalar),
            FusedKerSpec::LeakyRelu(scalar),
            FusedKerSpec::PerRowMin(rows.as_ptr()),
            FusedKerSpec::PerRowMax(rows.as_ptr()),
            FusedKerSpec::PerRowAdd(rows.as_ptr()),
            FusedKerSpec::PerRowMul(rows.as_ptr()),
            FusedKerSpec::PerRowSub(rows.as_ptr()),
            FusedKerSpec::PerRowSubF(rows.as_ptr()),
            FusedKerSpec::PerColMin(cols.as_ptr()),
            FusedKerSpec::PerColMax(cols.as_ptr()),
            FusedKerSpec::PerColAdd(cols.as_ptr()),
            FusedKerSpec::PerColMul(cols.as_ptr()),
            FusedKerSpec::PerColSub(cols.as_ptr()),
            FusedKerSpec::PerColSubF(cols.as_ptr()),
            FusedKerSpec::QScale(2, RoundingPolicy::Even, 1 << 30),
            FusedKerSpec::RoundingShiftRight(3, RoundingPolicy::Native),
            FusedKerSpec::ShiftLeft(2),
            FusedKerSpec::AddUnicast(OutputStoreKer {
                ptr: unicast.as_ptr() as *mut u8,
                row_byte_stride: urbs,
                col_byte_stride: ucbs,
                item_size: 4,
            }),
            FusedKerSpec::AddRowColProducts(rows.as_ptr(), cols.as_ptr()),
        ];
        let mut ops = vec![if program % 4 == 0 {
            FusedKerSpec::LoadTile(
                tile_cols.as_ptr() as *const f32,
                tile_rows.as_ptr() as *const f32,
            )
        } else {
            FusedKerSpec::Clear
        }];
        ops.push(FusedKerSpec::AddMatMul {
            k,
            pa: pa.as_ptr() as *const u8,
            pb: pb.as_ptr() as *const u8,
            packing: 0,
        });
        for _ in 0..(next() % 6) {
            ops.push(all[(next() % all.len() as u64) as usize]);
        }
        if next().is_multiple_of(2) {
            ops.push(FusedKerSpec::AddMatMul {
                k,
                pa: pa.as_ptr() as *const u8,
                pb: pb.as_ptr() as *const u8,
                packing: 0,
            });
        }
        let ours = run(&|s| unsafe { kernel(s) }, &ops);
        let want = run(&|s| theirs.kernel(s), &ops);
        if ours != want {
            return Err(format!(
                "program {program} (seed {seed}, k {k}): {ops:?} gives different bits"
            ));
        }
    }
    Ok(())
}
