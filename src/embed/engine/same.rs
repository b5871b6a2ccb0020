//! Operators computed by one portable implementation in both builds, so that their results are
//! the same bits natively and in wasm.
//!
//! **Why.** tract computes the model's f32 operators with different kernels per platform: fused
//! multiply-adds natively and a multiply then an add in wasm, different polynomials, different
//! summation orders. The vectors of the two builds then agree to rounding (cosine 1 − 5e-9),
//! which is enough as long as every operator is continuous. The integer weight matmuls of
//! `super::quant` are not: rounding an activation to 16 bits turns a one-ulp difference into a
//! whole step, and the builds' vectors drift to ~2e-7 apart. With every operator whose result
//! depends on the platform replaced by one from this module, the inputs of every rounding are
//! the same bits in both builds, and so are the vectors.
//!
//! **How.** One source over 4-lane types ([`F4`], [`I4`], `M4`), each lane operation an IEEE
//! operation (no fused multiply-add, no reassociation, no libm call) in a fixed order. The
//! lane types have three implementations with the same bits: plain Rust arrays (the
//! definition, and the fallback), SSE2 natively on x86-64 (baseline, no run-time check; the
//! operations SSE2 lacks built from compares and selects; routines compiled again with AVX
//! enabled for its three-operand encoding), and the `simd128` instruction whose definition the
//! plain version follows in wasm (LLVM's own vectorisation of the plain arrays ran 5× slower
//! there). A native test compares every lane operation with the plain definition on random
//! bit patterns; digests of each routine's output, pinned by a native test, are checked by a
//! wasm test too; the row softmax is also checked against tract's wasm routine in wasm.
//!
//! The operators: the attention's row softmax ([`softmax_rows`]; tract's wasm routine, rows of
//! any length, the last `len % 4` values padded with −∞), GELU's `erf` ([`erf`]), the layer
//! norms' row sums ([`sum_rows`]) and root-mean-square scaling ([`rms_norm_rows`]), each as tract's wasm
//! kernel computes it, and the attention's two activation products ([`SameMatMul`]: every
//! element a multiply then an add in `k` order, which any lane width computes alike).
//! `super::model` puts them in, in both builds, when the model has the integer weight
//! matmuls: [`swap_in_products`] on the decluttered graph (before tract picks per-platform
//! matmul kernels), [`swap_in`] and `super::ops::MaskedSoftmax`'s softmax on the optimised
//! plans (the native single-text plans too, whose softmax tract leaves unfused: [`SameOp`]'s
//! `Softmax`). In wasm the row softmax runs always (tract's own bits there).
//!
//! The products are tiled ([`product_block`]): `B` packed into panels of 8 columns, `A` four
//! rows at a time, a 4 × 8 tile of `C` in eight accumulators over the whole of `k`. In wasm
//! that runs as fast as tract's tuned 8 × 8 f32 kernel did on them (2026-11-26: 25.8 texts/s
//! at 128 tokens, batch 32, against 19.8 for a plain 4-lane row loop); natively, on AVX-512,
//! a 16-lane row loop. Measured (2026-11-26, parity fixture, `condense embed` against the
//! wasm package, single texts and batches): all 57 vectors bit-identical between the builds.

pub(crate) use lanes::{F4, I4};

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// Defines `fn $name(args) -> ret` as `$body(args)` compiled with AVX enabled where the CPU has
/// it: the same SSE2 operations in their VEX (three-operand) encoding, which saves register
/// copies (the row softmax natively: 1.45 → 1.24 ms for 12 × 256 × 256 scores). Elsewhere, and
/// in wasm, `$body(args)` as it is. (A closure passed to one AVX function lost the gain: its
/// body was not compiled with the feature.)
macro_rules! with_vex {
    (
        $(#[$m:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $body:ident
    ) => {
        $(#[$m])*
        #[allow(unsafe_code)]
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx") {
                #[target_feature(enable = "avx")]
                unsafe fn avx($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                // SAFETY: AVX is present (checked above).
                return unsafe { avx($($arg),*) };
            }
            $body($($arg),*)
        }
    };
}

/// The lane types in plain Rust: the definition the others follow (the tests compare them),
/// and the implementation where neither of them applies.
#[cfg_attr(
    any(
        target_arch = "x86_64",
        all(target_arch = "wasm32", target_feature = "simd128")
    ),
    allow(dead_code)
)]
mod plain {
    /// Four f32 lanes.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(crate) struct F4([f32; 4]);

    /// Four i32 lanes.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(crate) struct I4([i32; 4]);

    /// A lane mask (from a comparison).
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(crate) struct M4([bool; 4]);

    impl F4 {
        #[inline(always)]
        pub(crate) fn splat(v: f32) -> F4 {
            F4([v; 4])
        }

        /// The first 4 values of `s` (which holds at least 4).
        #[inline(always)]
        pub(crate) fn load(s: &[f32]) -> F4 {
            F4([s[0], s[1], s[2], s[3]])
        }

        #[inline(always)]
        pub(crate) fn store(self, s: &mut [f32]) {
            s[..4].copy_from_slice(&self.0);
        }

        #[inline(always)]
        pub(crate) fn lanes(self) -> [f32; 4] {
            self.0
        }

        #[inline(always)]
        fn zip(self, o: F4, f: impl Fn(f32, f32) -> f32) -> F4 {
            F4([0, 1, 2, 3].map(|i| f(self.0[i], o.0[i])))
        }

        #[inline(always)]
        fn test(self, o: F4, f: impl Fn(f32, f32) -> bool) -> M4 {
            M4([0, 1, 2, 3].map(|i| f(self.0[i], o.0[i])))
        }

        #[inline(always)]
        pub(crate) fn add(self, o: F4) -> F4 {
            self.zip(o, |a, b| a + b)
        }

        #[inline(always)]
        pub(crate) fn sub(self, o: F4) -> F4 {
            self.zip(o, |a, b| a - b)
        }

        #[inline(always)]
        pub(crate) fn mul(self, o: F4) -> F4 {
            self.zip(o, |a, b| a * b)
        }

        #[inline(always)]
        pub(crate) fn div(self, o: F4) -> F4 {
            self.zip(o, |a, b| a / b)
        }

        /// The sign bit cleared (NaN included).
        #[inline(always)]
        pub(crate) fn abs(self) -> F4 {
            F4(self.0.map(f32::abs))
        }

        /// `self` with the sign bit of `v` or-ed in.
        #[inline(always)]
        pub(crate) fn or_sign_of(self, v: F4) -> F4 {
            self.zip(v, |a, v| {
                f32::from_bits(a.to_bits() | (v.to_bits() & 0x8000_0000))
            })
        }

        /// wasm's `f32x4.pmax`: `b` where `a < b`, else `a` (so a NaN in `a` stays, one in
        /// `b` is dropped).
        #[inline(always)]
        pub(crate) fn pmax(self, b: F4) -> F4 {
            self.zip(b, |a, b| if a < b { b } else { a })
        }

        /// Round to the nearest integer, ties to even (IEEE `roundTiesToEven`, wasm's
        /// `f32x4.nearest`): below 2²³ in magnitude, adding and subtracting 2²³ rounds exactly
        /// (the sum's last place is 1), and the sign is put back (-0.3 gives -0); from 2²³ on,
        /// every f32 is an integer already; NaN stays NaN. (`round_ties_even` is a libm call per
        /// value on baseline x86-64.)
        #[inline(always)]
        pub(crate) fn nearest(self) -> F4 {
            const TWO23: f32 = 8_388_608.0;
            F4(self.0.map(|v| {
                let a = v.abs();
                if a < TWO23 {
                    ((a + TWO23) - TWO23).copysign(v)
                } else {
                    v
                }
            }))
        }

        /// wasm's `i32x4.trunc_sat_f32x4`: toward zero, saturating, NaN → 0 (Rust's `as`).
        #[inline(always)]
        pub(crate) fn trunc_sat(self) -> I4 {
            I4(self.0.map(|v| v as i32))
        }

        /// The f32 values of these bits.
        #[inline(always)]
        pub(crate) fn from_bits(bits: I4) -> F4 {
            F4(bits.0.map(|b| f32::from_bits(b as u32)))
        }

        #[inline(always)]
        pub(crate) fn lt(self, o: F4) -> M4 {
            self.test(o, |a, b| a < b)
        }

        #[inline(always)]
        pub(crate) fn gt(self, o: F4) -> M4 {
            self.test(o, |a, b| a > b)
        }

        /// The lanes that are NaN.
        #[inline(always)]
        pub(crate) fn is_nan(self) -> M4 {
            M4(self.0.map(f32::is_nan))
        }

        /// `a` where `mask`, else `self`.
        #[inline(always)]
        pub(crate) fn select(self, a: F4, mask: M4) -> F4 {
            F4([0, 1, 2, 3].map(|i| if mask.0[i] { a.0[i] } else { self.0[i] }))
        }
    }

    impl I4 {
        #[inline(always)]
        pub(crate) fn splat(v: i32) -> I4 {
            I4([v; 4])
        }

        #[inline(always)]
        fn zip(self, o: I4, f: impl Fn(i32, i32) -> i32) -> I4 {
            I4([0, 1, 2, 3].map(|i| f(self.0[i], o.0[i])))
        }

        /// Wrapping, as wasm's `i32x4.add`.
        #[inline(always)]
        pub(crate) fn add(self, o: I4) -> I4 {
            self.zip(o, i32::wrapping_add)
        }

        #[inline(always)]
        pub(crate) fn min(self, o: I4) -> I4 {
            self.zip(o, i32::min)
        }

        #[inline(always)]
        pub(crate) fn max(self, o: I4) -> I4 {
            self.zip(o, i32::max)
        }

        /// Shift left by `n` < 32 (wasm's `i32x4.shl`).
        #[inline(always)]
        pub(crate) fn shl(self, n: u32) -> I4 {
            I4(self.0.map(|v| v.wrapping_shl(n)))
        }
    }

    impl M4 {
        #[inline(always)]
        pub(crate) fn or(self, o: M4) -> M4 {
            M4([0, 1, 2, 3].map(|i| self.0[i] | o.0[i]))
        }
    }
}

#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
)))]
use plain as lanes;

/// The lane types on x86-64's SSE2 (part of the x86-64 baseline, so no run-time check): each
/// operation gives the plain version's bits (SSE2 has no lane-wise `i32` min, max or rounding,
/// so those are built from compares and selects).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod lanes {
    // SAFETY (every intrinsic below): SSE2 is part of the x86-64 baseline.
    use std::arch::x86_64::*;

    /// Four f32 lanes.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F4(__m128);

    /// Four i32 lanes.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct I4(__m128i);

    /// A lane mask (from a comparison): all ones or all zeros per lane.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct M4(__m128);

    /// `a` where `mask`, else `b`.
    #[inline(always)]
    fn blend(mask: __m128, a: __m128, b: __m128) -> __m128 {
        unsafe { _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b)) }
    }

    /// `a` where `mask`, else `b`, on integers.
    #[inline(always)]
    fn blendi(mask: __m128i, a: __m128i, b: __m128i) -> __m128i {
        unsafe { _mm_or_si128(_mm_and_si128(mask, a), _mm_andnot_si128(mask, b)) }
    }

    impl F4 {
        #[inline(always)]
        pub(crate) fn splat(v: f32) -> F4 {
            F4(unsafe { _mm_set1_ps(v) })
        }

        /// The first 4 values of `s` (which holds at least 4).
        #[inline(always)]
        pub(crate) fn load(s: &[f32]) -> F4 {
            let s = &s[..4];
            // SAFETY: `s` holds 4 values (checked by the slicing above).
            F4(unsafe { _mm_loadu_ps(s.as_ptr()) })
        }

        #[inline(always)]
        pub(crate) fn store(self, s: &mut [f32]) {
            let s = &mut s[..4];
            // SAFETY: `s` holds 4 values (checked by the slicing above).
            unsafe { _mm_storeu_ps(s.as_mut_ptr(), self.0) }
        }

        #[inline(always)]
        pub(crate) fn lanes(self) -> [f32; 4] {
            let mut out = [0f32; 4];
            self.store(&mut out);
            out
        }

        #[inline(always)]
        pub(crate) fn add(self, o: F4) -> F4 {
            F4(unsafe { _mm_add_ps(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn sub(self, o: F4) -> F4 {
            F4(unsafe { _mm_sub_ps(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn mul(self, o: F4) -> F4 {
            F4(unsafe { _mm_mul_ps(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn div(self, o: F4) -> F4 {
            F4(unsafe { _mm_div_ps(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn abs(self) -> F4 {
            F4(unsafe { _mm_andnot_ps(_mm_set1_ps(-0.0), self.0) })
        }

        #[inline(always)]
        pub(crate) fn or_sign_of(self, v: F4) -> F4 {
            F4(unsafe { _mm_or_ps(self.0, _mm_and_ps(_mm_set1_ps(-0.0), v.0)) })
        }

        /// `b` where `a < b`, else `a`: `maxps(b, a)` is `b > a ? b : a`, the same choice.
        #[inline(always)]
        pub(crate) fn pmax(self, b: F4) -> F4 {
            F4(unsafe { _mm_max_ps(b.0, self.0) })
        }

        /// The plain version's steps: below 2²³ in magnitude, `(|v| + 2²³) − 2²³` with `v`'s
        /// sign; else `v` (NaN included, whose compare is false).
        #[inline(always)]
        pub(crate) fn nearest(self) -> F4 {
            unsafe {
                let sign = _mm_set1_ps(-0.0);
                let two23 = _mm_set1_ps(8_388_608.0);
                let a = _mm_andnot_ps(sign, self.0);
                let r = _mm_sub_ps(_mm_add_ps(a, two23), two23);
                let r = _mm_or_ps(r, _mm_and_ps(sign, self.0));
                F4(blend(_mm_cmplt_ps(a, two23), r, self.0))
            }
        }

        /// Toward zero, saturating, NaN → 0 (`cvttps2dq` gives `i32::MIN` for NaN and out of
        /// range, fixed up for NaN and for 2³¹ and above).
        #[inline(always)]
        pub(crate) fn trunc_sat(self) -> I4 {
            unsafe {
                let t = _mm_cvttps_epi32(self.0);
                let high = _mm_castps_si128(_mm_cmpge_ps(self.0, _mm_set1_ps(2_147_483_648.0)));
                let t = blendi(high, _mm_set1_epi32(i32::MAX), t);
                let nan = _mm_castps_si128(_mm_cmpunord_ps(self.0, self.0));
                I4(_mm_andnot_si128(nan, t))
            }
        }

        #[inline(always)]
        pub(crate) fn from_bits(bits: I4) -> F4 {
            F4(unsafe { _mm_castsi128_ps(bits.0) })
        }

        #[inline(always)]
        pub(crate) fn lt(self, o: F4) -> M4 {
            M4(unsafe { _mm_cmplt_ps(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn gt(self, o: F4) -> M4 {
            M4(unsafe { _mm_cmpgt_ps(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn is_nan(self) -> M4 {
            M4(unsafe { _mm_cmpunord_ps(self.0, self.0) })
        }

        #[inline(always)]
        pub(crate) fn select(self, a: F4, mask: M4) -> F4 {
            F4(blend(mask.0, a.0, self.0))
        }
    }

    impl I4 {
        #[inline(always)]
        pub(crate) fn splat(v: i32) -> I4 {
            I4(unsafe { _mm_set1_epi32(v) })
        }

        #[inline(always)]
        pub(crate) fn add(self, o: I4) -> I4 {
            I4(unsafe { _mm_add_epi32(self.0, o.0) })
        }

        #[inline(always)]
        pub(crate) fn min(self, o: I4) -> I4 {
            I4(blendi(unsafe { _mm_cmpgt_epi32(self.0, o.0) }, o.0, self.0))
        }

        #[inline(always)]
        pub(crate) fn max(self, o: I4) -> I4 {
            I4(blendi(unsafe { _mm_cmpgt_epi32(self.0, o.0) }, self.0, o.0))
        }

        /// Shift left by `n` < 32.
        #[inline(always)]
        pub(crate) fn shl(self, n: u32) -> I4 {
            I4(unsafe { _mm_sll_epi32(self.0, _mm_cvtsi32_si128(n as i32)) })
        }
    }

    impl M4 {
        #[inline(always)]
        pub(crate) fn or(self, o: M4) -> M4 {
            M4(unsafe { _mm_or_ps(self.0, o.0) })
        }
    }
}

/// The lane types on wasm SIMD: each operation the instruction whose definition the plain
/// Rust one above follows (LLVM did not vectorise the plain lanes well: the row softmax ran 5×
/// slower than on these).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[allow(unsafe_code)]
mod lanes {
    use core::arch::wasm32::*;

    /// Four f32 lanes.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F4(v128);

    /// Four i32 lanes.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct I4(v128);

    /// A lane mask (from a comparison).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct M4(v128);

    impl F4 {
        #[inline(always)]
        pub(crate) fn splat(v: f32) -> F4 {
            F4(f32x4_splat(v))
        }

        /// The first 4 values of `s` (which holds at least 4).
        #[inline(always)]
        pub(crate) fn load(s: &[f32]) -> F4 {
            let s = &s[..4];
            // SAFETY: `s` holds 4 values (checked by the slicing above).
            F4(unsafe { v128_load(s.as_ptr() as *const v128) })
        }

        #[inline(always)]
        pub(crate) fn store(self, s: &mut [f32]) {
            let s = &mut s[..4];
            // SAFETY: `s` holds 4 values (checked by the slicing above).
            unsafe { v128_store(s.as_mut_ptr() as *mut v128, self.0) }
        }

        #[inline(always)]
        pub(crate) fn lanes(self) -> [f32; 4] {
            [
                f32x4_extract_lane::<0>(self.0),
                f32x4_extract_lane::<1>(self.0),
                f32x4_extract_lane::<2>(self.0),
                f32x4_extract_lane::<3>(self.0),
            ]
        }

        #[inline(always)]
        pub(crate) fn add(self, o: F4) -> F4 {
            F4(f32x4_add(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn sub(self, o: F4) -> F4 {
            F4(f32x4_sub(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn mul(self, o: F4) -> F4 {
            F4(f32x4_mul(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn div(self, o: F4) -> F4 {
            F4(f32x4_div(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn abs(self) -> F4 {
            F4(f32x4_abs(self.0))
        }

        #[inline(always)]
        pub(crate) fn or_sign_of(self, v: F4) -> F4 {
            F4(v128_or(self.0, v128_and(v.0, f32x4_splat(-0.0))))
        }

        #[inline(always)]
        pub(crate) fn pmax(self, b: F4) -> F4 {
            F4(f32x4_pmax(self.0, b.0))
        }

        #[inline(always)]
        pub(crate) fn nearest(self) -> F4 {
            F4(f32x4_nearest(self.0))
        }

        #[inline(always)]
        pub(crate) fn trunc_sat(self) -> I4 {
            I4(i32x4_trunc_sat_f32x4(self.0))
        }

        #[inline(always)]
        pub(crate) fn from_bits(bits: I4) -> F4 {
            F4(bits.0)
        }

        #[inline(always)]
        pub(crate) fn lt(self, o: F4) -> M4 {
            M4(f32x4_lt(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn gt(self, o: F4) -> M4 {
            M4(f32x4_gt(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn is_nan(self) -> M4 {
            M4(f32x4_ne(self.0, self.0))
        }

        #[inline(always)]
        pub(crate) fn select(self, a: F4, mask: M4) -> F4 {
            F4(v128_bitselect(a.0, self.0, mask.0))
        }
    }

    impl I4 {
        #[inline(always)]
        pub(crate) fn splat(v: i32) -> I4 {
            I4(i32x4_splat(v))
        }

        #[inline(always)]
        pub(crate) fn add(self, o: I4) -> I4 {
            I4(i32x4_add(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn min(self, o: I4) -> I4 {
            I4(i32x4_min(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn max(self, o: I4) -> I4 {
            I4(i32x4_max(self.0, o.0))
        }

        #[inline(always)]
        pub(crate) fn shl(self, n: u32) -> I4 {
            I4(i32x4_shl(self.0, n))
        }
    }

    impl M4 {
        #[inline(always)]
        pub(crate) fn or(self, o: M4) -> M4 {
            M4(v128_or(self.0, o.0))
        }
    }
}

/// The constants of tract's 4-lane `exp` (its wasm `softmax_rows_f32::exp_ps`), as lanes built
/// once per call and kept opaque to LLVM (`core::hint::black_box`), which would otherwise
/// rebuild each at its use inside the loop (`v128.const` in wasm, a few instructions each in
/// V8's code).
struct ExpConsts {
    log2e: F4,
    ln2_hi: F4,
    ln2_lo: F4,
    p: [F4; 6],
    bias: I4,
    max_biased: I4,
    min_biased: I4,
    underflow: F4,
    zero: F4,
}

impl ExpConsts {
    // The literals as tract writes them (clippy would round them to the same f32 values).
    #[allow(clippy::excessive_precision, clippy::approx_constant)]
    fn new() -> ExpConsts {
        let f = |v: f32| core::hint::black_box(F4::splat(v));
        let i = |v: i32| core::hint::black_box(I4::splat(v));
        ExpConsts {
            log2e: f(1.442_695_04),
            ln2_hi: f(0.693_145_75),
            ln2_lo: f(1.428_606_8e-6),
            p: [
                f(8.297_653_546e-3),
                f(4.191_538_191e-2),
                f(1.666_757_475e-1),
                f(4.999_889_485e-1),
                f(9.999_996_920e-1),
                f(1.000_000_072),
            ],
            bias: i(127),
            max_biased: i(254),
            min_biased: i(1),
            underflow: f(-103.0),
            zero: f(0.0),
        }
    }
}

/// tract's 4-lane `exp` for softmax inputs (`x ≤ 0`): `2^k · p(r)` with `k = nearest(x ·
/// log2 e)`, `r = x − k · ln 2` in two parts, a degree-5 polynomial `p`, and 0 below -103 or
/// above 0. The same operations in the same order as tract's wasm `exp_ps`.
#[inline(always)]
fn exp4(x: F4, c: &ExpConsts) -> F4 {
    let kf = x.mul(c.log2e).nearest();
    let r = x.sub(kf.mul(c.ln2_hi));
    let r = r.sub(kf.mul(c.ln2_lo));
    let mut q = c.p[0];
    for p in &c.p[1..] {
        q = p.add(q.mul(r));
    }
    let biased = kf
        .trunc_sat()
        .add(c.bias)
        .min(c.max_biased)
        .max(c.min_biased);
    let scale = F4::from_bits(biased.shl(23));
    let out = x.lt(c.underflow).or(x.gt(c.zero));
    q.mul(scale).select(c.zero, out)
}

/// The 1–3 values of `tail` in lanes, the others `fill`.
#[inline(always)]
fn padded(tail: &[f32], fill: f32) -> F4 {
    let mut pad = [fill; 4];
    pad[..tail.len()].copy_from_slice(tail);
    F4::load(&pad)
}

/// Softmax of one row in place, as tract's wasm `softmax_rows_f32` for rows of a multiple of
/// 4, then each NaN → `nan_to`. The last `len % 4` values of other rows go through the same
/// lanes, padded with −∞ (which changes neither the maximum nor, as `exp(−∞) = 0`, the sum).
#[inline(always)]
fn softmax_row(row: &mut [f32], nan_to: f32, c: &ExpConsts) {
    let len = row.len();
    let whole = len - len % 4;
    // tract's `max_pass`: two vectors per step, then the last one; lanes 0, 1, 2, 3.
    let mut acc = F4::splat(f32::NEG_INFINITY);
    let mut i = 0;
    while i + 8 <= whole {
        acc = acc.pmax(F4::load(&row[i..]));
        acc = acc.pmax(F4::load(&row[i + 4..]));
        i += 8;
    }
    if i < whole {
        acc = acc.pmax(F4::load(&row[i..]));
    }
    if whole < len {
        acc = acc.pmax(padded(&row[whole..], f32::NEG_INFINITY));
    }
    let [a0, a1, a2, a3] = acc.lanes();
    let max = a0.max(a1).max(a2).max(a3);

    // `exp_sum_pass`: the sum in the same order.
    let vmax = F4::splat(max);
    let mut vsum = F4::splat(0.0);
    let mut i = 0;
    while i + 8 <= whole {
        let y0 = exp4(F4::load(&row[i..]).sub(vmax), c);
        let y1 = exp4(F4::load(&row[i + 4..]).sub(vmax), c);
        y0.store(&mut row[i..]);
        y1.store(&mut row[i + 4..]);
        vsum = vsum.add(y0);
        vsum = vsum.add(y1);
        i += 8;
    }
    if i < whole {
        let y = exp4(F4::load(&row[i..]).sub(vmax), c);
        y.store(&mut row[i..]);
        vsum = vsum.add(y);
    }
    if whole < len {
        let y = exp4(padded(&row[whole..], f32::NEG_INFINITY).sub(vmax), c);
        let lanes = y.lanes();
        let n = len - whole;
        row[whole..].copy_from_slice(&lanes[..n]);
        vsum = vsum.add(y);
    }
    let [s0, s1, s2, s3] = vsum.lanes();
    let sum = s0 + s1 + s2 + s3;

    // `scale_pass` by `sum.recip()`, then the NaN guard on each product.
    let scale = F4::splat(sum.recip());
    let nan_to = F4::splat(nan_to);
    let mut fours = row.chunks_exact_mut(4);
    for four in &mut fours {
        let y = F4::load(four).mul(scale);
        y.select(nan_to, y.is_nan()).store(four);
    }
    let rest = fours.into_remainder();
    if !rest.is_empty() {
        let y = padded(rest, 0.0).mul(scale);
        let lanes = y.select(nan_to, y.is_nan()).lanes();
        let n = rest.len();
        rest.copy_from_slice(&lanes[..n]);
    }
}

/// Softmax over each `len`-value row of `rows` in place (as tract's wasm `softmax_rows_f32` for
/// rows of a multiple of 4), then every NaN replaced by `nan_to`. `len` must be non-zero and
/// divide `rows.len()` (else nothing is done and `false` is returned).
pub(crate) fn softmax_rows(rows: &mut [f32], len: usize, nan_to: f32) -> bool {
    if len == 0 || !rows.len().is_multiple_of(len) {
        return false;
    }
    softmax_all(rows, len, nan_to);
    true
}

with_vex!(fn softmax_all(rows: &mut [f32], len: usize, nan_to: f32) => softmax_all_body);

#[inline(always)]
fn softmax_all_body(rows: &mut [f32], len: usize, nan_to: f32) {
    let c = ExpConsts::new();
    for row in rows.chunks_exact_mut(len) {
        softmax_row(row, nan_to, &c);
    }
}

with_vex!(
    /// GELU's `erf`, element-wise in place: tract's wasm `WasmErf4` (Abramowitz and Stegun
    /// 7.1.28, `1 − 1 / (1 + a₁|x| + … + a₆|x|⁶)¹⁶` with `x`'s sign), the same operations in
    /// the same order, the last `len % 4` values through the same lanes (padded with zeros).
    pub(crate) fn erf(values: &mut [f32]) => erf_body
);

// The literals as tract writes them (clippy would round them to the same f32 values).
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn erf_body(values: &mut [f32]) {
    let a = [
        0.000_043_063_8,
        0.000_276_567_2,
        0.000_152_014_3,
        0.009_270_527_2,
        0.042_282_012_3,
        0.070_523_078_4,
    ]
    .map(|v| core::hint::black_box(F4::splat(v)));
    let one = core::hint::black_box(F4::splat(1.0));
    let erf4 = |v: F4| {
        let abs = v.abs();
        let mut y = a[0].mul(abs);
        for c in &a[1..] {
            y = y.add(*c).mul(abs);
        }
        let mut r = y.add(one);
        for _ in 0..4 {
            r = r.mul(r);
        }
        one.sub(one.div(r)).or_sign_of(v)
    };
    let mut fours = values.chunks_exact_mut(4);
    for four in &mut fours {
        erf4(F4::load(four)).store(four);
    }
    let rest = fours.into_remainder();
    if !rest.is_empty() {
        let mut pad = [0f32; 4];
        pad[..rest.len()].copy_from_slice(rest);
        erf4(F4::load(&pad)).store(&mut pad);
        let n = rest.len();
        rest.copy_from_slice(&pad[..n]);
    }
}

with_vex!(
    /// The sum of each `len`-value row of `values` into `out` (one per row; nothing if `len` is
    /// 0), each as tract's wasm `wasm_sum_f32_32n` sums a whole row (8 lane accumulators over
    /// chunks of 32, added as a tree, then the lanes in order, then the last `len % 32` values
    /// one by one). One CPU-feature check per tensor, not per row.
    pub(crate) fn sum_rows(values: &[f32], len: usize, out: &mut [f32]) => sum_rows_body
);

#[inline(always)]
fn sum_rows_body(values: &[f32], len: usize, out: &mut [f32]) {
    if len == 0 {
        return;
    }
    for (d, row) in out.iter_mut().zip(values.chunks_exact(len)) {
        *d = sum_body(row);
    }
}

#[inline(always)]
fn sum_body(row: &[f32]) -> f32 {
    let mut acc = [F4::splat(0.0); 8];
    let mut chunks = row.chunks_exact(32);
    for c in &mut chunks {
        for (j, a) in acc.iter_mut().enumerate() {
            *a = a.add(F4::load(&c[4 * j..]));
        }
    }
    let a01 = acc[0].add(acc[1]);
    let a23 = acc[2].add(acc[3]);
    let a45 = acc[4].add(acc[5]);
    let a67 = acc[6].add(acc[7]);
    let [s0, s1, s2, s3] = a01.add(a23).add(a45.add(a67)).lanes();
    let mut total = s0 + s1 + s2 + s3;
    for &v in chunks.remainder() {
        total += v;
    }
    total
}

with_vex!(
    /// Each `len`-value row of `values` divided by the root of its mean square plus `eps`, in
    /// place (nothing if `len` is 0), each as tract's wasm `rms_norm_f32` does a row (16 lane
    /// accumulators of `acc + v · v` over chunks of 64, added pairwise as a tree, the lanes in
    /// order, the last `len % 64` squares one by one; then every value times
    /// `1 / sqrt(sum / len + eps)`). One CPU-feature check per tensor, not per row.
    pub(crate) fn rms_norm_rows(values: &mut [f32], len: usize, eps: f32) => rms_norm_rows_body
);

#[inline(always)]
fn rms_norm_rows_body(values: &mut [f32], len: usize, eps: f32) {
    if len == 0 {
        return;
    }
    values
        .chunks_exact_mut(len)
        .for_each(|row| rms_norm_body(row, eps));
}

#[inline(always)]
fn rms_norm_body(row: &mut [f32], eps: f32) {
    if row.is_empty() {
        return;
    }
    let len = row.len();
    let mut acc = [F4::splat(0.0); 16];
    let mut chunks = row.chunks_exact(64);
    for c in &mut chunks {
        for (j, a) in acc.iter_mut().enumerate() {
            let v = F4::load(&c[4 * j..]);
            *a = a.add(v.mul(v));
        }
    }
    let p = [0, 1, 2, 3, 4, 5, 6, 7].map(|k| acc[2 * k].add(acc[2 * k + 1]));
    let q0 = p[0].add(p[1]).add(p[2].add(p[3]));
    let q1 = p[4].add(p[5]).add(p[6].add(p[7]));
    let [s0, s1, s2, s3] = q0.add(q1).lanes();
    let mut total = s0 + s1 + s2 + s3;
    for &v in chunks.remainder() {
        total += v * v;
    }
    let scale = 1f32 / (total / len as f32 + eps).sqrt();
    let vscale = F4::splat(scale);
    let whole = len - len % 64;
    for four in row[..whole].chunks_exact_mut(4) {
        F4::load(four).mul(vscale).store(four);
    }
    for v in &mut row[whole..] {
        *v *= scale;
    }
}

/// A digest of [`erf`], [`sum_rows`], [`rms_norm_rows`], [`softmax_rows`] (rows of any length) and
/// [`product_block`] on fixed rows (special values included), pinned like [`SOFTMAX_DIGEST`].
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) fn norms_digest() -> u64 {
    let mut next = super::xorshift::xorshift(0x6e72);
    let special = [0.0, -0.0, f32::INFINITY, f32::NAN, f32::MAX, 1e-40, -3.5];
    let mut bytes = Vec::new();
    let mut mix = |v: f32| bytes.extend(bits(v).to_le_bytes());
    for case in 0..150 {
        let len = 1 + case * 7 % 450;
        let row: Vec<f32> = (0..len)
            .map(|_| match next() % 64 {
                0 => special[(next() % special.len() as u64) as usize],
                _ => (next() % 20_001) as f32 / 1000.0 - 10.0,
            })
            .collect();
        let mut e = row.clone();
        erf(&mut e);
        e.into_iter().for_each(&mut mix);
        let mut s = [0f32];
        sum_rows(&row, len, &mut s);
        mix(s[0]);
        let mut r = row.clone();
        rms_norm_rows(&mut r, len, 1e-12);
        r.into_iter().for_each(&mut mix);
        let mut p = row.clone();
        softmax_rows(&mut p, len, -1.5);
        p.into_iter().for_each(&mut mix);
        // One row of an activation product: `k` = 1 + case % 40 steps over the row's values.
        let k = (1 + case % 40).min(len);
        let n = len / k;
        let mut out = vec![0f32; n];
        let block = Block {
            a: &row,
            a_row: 0,
            b: &row,
            b_row: n,
            m: 1,
            k,
            n,
        };
        product_block(&block, &mut out, n, &mut Vec::new());
        out.into_iter().for_each(&mut mix);
    }
    crate::text::hash::fnv1a(&bytes)
}

/// [`norms_digest`] as this module computes it (see [`SOFTMAX_DIGEST`]).
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) const NORMS_DIGEST: u64 = 0xd57b_0a1f_7b18_f55d;

/// One of tract's operators run on this module's routines (f32, the last axis).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SameOp {
    /// `Erf`, element-wise ([`erf`]).
    Erf,
    /// `Reduce<Sum>` over the last axis, kept as an axis of 1 ([`sum_rows`]).
    Sum,
    /// `RmsNorm` over the last axis ([`rms_norm_rows`]).
    RmsNorm { eps: f32 },
    /// A plain `Softmax` over the last axis ([`softmax_rows`], NaN kept): the ones
    /// `super::ops::MaskedSoftmax` does not take, such as the native single-text plans', whose
    /// mask addition tract fuses otherwise.
    Softmax,
}

impl Eq for SameOp {}

impl Op for SameOp {
    fn name(&self) -> StaticName {
        match self {
            SameOp::Erf => "Same(Erf)",
            SameOp::Sum => "Same(Reduce<Sum>)",
            SameOp::RmsNorm { .. } => "Same(RmsNorm)",
            SameOp::Softmax => "Same(Softmax)",
        }
        .into()
    }

    op_as_typed_op!();
}

impl EvalOp for SameOp {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let shape = x.shape().to_vec();
        let len = shape.last().copied().unwrap_or(1);
        match self {
            SameOp::Erf | SameOp::RmsNorm { .. } | SameOp::Softmax => {
                let mut x = x.into_tensor();
                {
                    let mut view = x.try_as_plain_ram_mut()?;
                    let values = view.as_slice_mut::<f32>()?;
                    match self {
                        SameOp::RmsNorm { eps } => rms_norm_rows(values, len, *eps),
                        SameOp::Softmax if len > 0 => {
                            ensure!(softmax_rows(values, len, f32::NAN), "softmax rows");
                        }
                        SameOp::Erf => erf(values),
                        _ => {}
                    }
                }
                Ok(tvec!(x.into_tvalue()))
            }
            SameOp::Sum => {
                let mut out_shape = shape.clone();
                if let Some(last) = out_shape.last_mut() {
                    *last = 1;
                }
                let mut out = Tensor::zero::<f32>(&out_shape)?;
                {
                    let view = x.try_as_plain_ram()?;
                    let mut dst = out.try_as_plain_ram_mut()?;
                    let dst = dst.as_slice_mut::<f32>()?;
                    sum_rows(view.as_slice::<f32>()?, len, dst);
                }
                Ok(tvec!(out.into_tvalue()))
            }
        }
    }
}

impl TypedOp for SameOp {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let fact = inputs.first().context("one input")?;
        let mut shape: TVec<TDim> = fact.shape.iter().cloned().collect();
        if *self == SameOp::Sum {
            if let Some(last) = shape.last_mut() {
                *last = 1.into();
            }
        }
        Ok(tvec!(f32::fact(shape)))
    }

    as_op!();
}

/// Replaces tract's `Erf`, and its `Reduce<Sum>`, `RmsNorm` and plain `Softmax` over the last
/// axis, on f32, by [`SameOp`]s in an optimised model; returns how many.
pub(crate) fn swap_in(model: &mut TypedModel) -> TractResult<usize> {
    use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
    use tract_onnx::tract_core::ops::math;
    use tract_onnx::tract_core::ops::nn::{Reduce, Reducer, RmsNorm, Softmax, SoftmaxKind};
    let mut found = Vec::new();
    for node in model.nodes() {
        let Some(input) = node.inputs.first().copied() else {
            continue;
        };
        let fact = model.outlet_fact(input)?;
        if fact.datum_type != f32::datum_type() || fact.rank() == 0 || node.inputs.len() != 1 {
            continue;
        }
        let last = fact.rank() - 1;
        let op = if node
            .op_as::<ElementWiseOp>()
            .is_some_and(|op| op.0.is::<math::Erf>() && op.1.is_none())
        {
            SameOp::Erf
        } else if node
            .op_as::<Reduce>()
            .is_some_and(|r| r.reducer == Reducer::Sum && r.axes.as_slice() == [last])
        {
            SameOp::Sum
        } else if node.op_as::<Softmax>().is_some_and(|s| {
            s.axes.as_slice() == [last]
                && s.kind == SoftmaxKind::Softmax
                && s.quant_output_dt.is_none()
        }) {
            SameOp::Softmax
        } else if let Some(r) = node.op_as::<RmsNorm>().filter(|r| r.axis == last) {
            if r.eps.len() != 1 {
                continue;
            }
            SameOp::RmsNorm {
                eps: r.eps.cast_to_scalar::<f32>()?,
            }
        } else {
            continue;
        };
        found.push((node.id, node.name.clone(), input, op));
    }
    let count = found.len();
    for (id, name, input, op) in found {
        super::graph::wire_in_place_of(model, id, format!("{name}.same"), op, &[input])?;
    }
    Ok(count)
}

/// The attention's two activation products, as their decluttered `EinSum`s write them:
/// `Q·Kᵀ` is `ambk,abkn->abmn` (`a` batch, `b` heads, `m` and `n` tokens, `k` the head size)
/// and `P·V` is `abmk,akbn->ambn` (`k` tokens, `n` the head size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Product {
    /// `ambk,abkn->abmn`.
    Scores,
    /// `abmk,akbn->ambn`.
    Mix,
}

impl Product {
    fn of(expr: &str) -> Option<Product> {
        match expr {
            "ambk,abkn->abmn" => Some(Product::Scores),
            "abmk,akbn->ambn" => Some(Product::Mix),
            _ => None,
        }
    }
}

/// `C = A · B` for a [`Product`]: every element `c = ((0 + a₀b₀) + a₁b₁) + …` in `k` order, a
/// multiply then an add (no fused multiply-add), so any lane width gives the same bits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SameMatMul {
    product: Product,
}

/// Sizes and element strides of one product: `A[a, b, m, k]`, `B[a, b, k, n]`, `C[a, b, m, n]`
/// (`k` contiguous in `A`, `n` in `B` and `C`).
struct Strides {
    dims: [usize; 5],
    a: [usize; 3],
    b: [usize; 3],
    c: [usize; 3],
}

impl SameMatMul {
    fn strides(&self, a: &[usize], b: &[usize]) -> Option<Strides> {
        let [a0, a1, a2, a3]: [usize; 4] = a.try_into().ok()?;
        let [b0, b1, b2, b3]: [usize; 4] = b.try_into().ok()?;
        match self.product {
            // A [a, m, b, k], B [a, b, k, n], C [a, b, m, n].
            Product::Scores => {
                let (batch, m, heads, k, n) = (a0, a1, a2, a3, b3);
                (b0 == batch && b1 == heads && b2 == k).then_some(Strides {
                    dims: [batch, heads, m, k, n],
                    a: [m * heads * k, k, heads * k],
                    b: [heads * k * n, k * n, n],
                    c: [heads * m * n, m * n, n],
                })
            }
            // A [a, b, m, k], B [a, k, b, n], C [a, m, b, n].
            Product::Mix => {
                let (batch, heads, m, k, n) = (a0, a1, a2, a3, b3);
                (b0 == batch && b1 == k && b2 == heads).then_some(Strides {
                    dims: [batch, heads, m, k, n],
                    a: [heads * m * k, m * k, k],
                    b: [k * heads * n, n, heads * n],
                    c: [m * heads * n, n, heads * n],
                })
            }
        }
    }

    fn output_shape<D: Clone>(&self, a: &[D], b: &[D]) -> Option<TVec<D>> {
        let (a, b) = (a.get(..4)?, b.get(..4)?);
        Some(match self.product {
            Product::Scores => tvec![a[0].clone(), a[2].clone(), a[1].clone(), b[3].clone()],
            Product::Mix => tvec![a[0].clone(), a[2].clone(), a[1].clone(), b[3].clone()],
        })
    }
}

/// One `(batch, head)` block of a product: `C[i, j] = Σ_κ A[i, κ] · B[κ, j]` for `i < m`,
/// `j < n`, `κ < k`, with `A[i, κ] = a[i · a_row + κ]` and `B[κ, j] = b[κ · b_row + j]`.
struct Block<'a> {
    a: &'a [f32],
    a_row: usize,
    b: &'a [f32],
    b_row: usize,
    m: usize,
    k: usize,
    n: usize,
}

impl Block<'_> {
    /// Whether `a`, `b` and an output with rows `c_row` apart (`c.len()` values) hold the block.
    fn fits(&self, c: &[f32], c_row: usize) -> bool {
        let last = |rows: usize, stride: usize, len: usize| match rows {
            0 => 0,
            _ => (rows - 1) * stride + len,
        };
        self.a.len() >= last(self.m, self.a_row, self.k)
            && self.b.len() >= last(self.k, self.b_row, self.n)
            && c.len() >= last(self.m, c_row, self.n)
    }
}

with_vex!(
    /// [`Block`] into `c` (rows `c_row` apart), tiled: `B` packed into panels of 8 columns,
    /// `A` 4 rows at a time, and a 4 × 8 tile of `C` in eight 4-lane accumulators over the
    /// whole of `k`, so every element is still a multiply then an add in `k` order from `+0`.
    /// `scratch` is reused between calls.
    fn product_block(x: &Block, c: &mut [f32], c_row: usize, scratch: &mut Vec<f32>) => product_block_body
);

#[inline(always)]
fn product_block_body(x: &Block, c: &mut [f32], c_row: usize, scratch: &mut Vec<f32>) {
    let (m, k, n) = (x.m, x.k, x.n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        for i in 0..m {
            c[i * c_row..][..n].fill(0.0);
        }
        return;
    }
    let panels = n.div_ceil(8);
    scratch.clear();
    scratch.resize(panels * k * 8 + k * 4, 0.0);
    let (bp, ap) = scratch.split_at_mut(panels * k * 8);
    for (p, panel) in bp.chunks_exact_mut(k * 8).enumerate() {
        let (j0, w) = (8 * p, (n - 8 * p).min(8));
        for (kk, to) in panel.chunks_exact_mut(8).enumerate() {
            to[..w].copy_from_slice(&x.b[kk * x.b_row + j0..][..w]);
        }
    }
    for i0 in (0..m).step_by(4) {
        let rows = (m - i0).min(4);
        for r in 0..4 {
            if r < rows {
                let from = &x.a[(i0 + r) * x.a_row..][..k];
                for (to, &v) in ap.chunks_exact_mut(4).zip(from) {
                    to[r] = v;
                }
            } else {
                ap.chunks_exact_mut(4).for_each(|to| to[r] = 0.0);
            }
        }
        for (p, panel) in bp.chunks_exact(k * 8).enumerate() {
            let acc = product_tile(ap, panel);
            let (j0, w) = (8 * p, (n - 8 * p).min(8));
            for (r, pair) in acc.chunks_exact(2).enumerate().take(rows) {
                let to = &mut c[(i0 + r) * c_row + j0..][..w];
                if w == 8 {
                    pair[0].store(&mut to[..4]);
                    pair[1].store(&mut to[4..]);
                } else {
                    let [l0, l1] = [pair[0].lanes(), pair[1].lanes()];
                    let lanes = [l0[0], l0[1], l0[2], l0[3], l1[0], l1[1], l1[2], l1[3]];
                    to.copy_from_slice(&lanes[..w]);
                }
            }
        }
    }
}

/// A 4 × 8 tile of `C` from a packed `A` group (`ap[4κ + r]`) and a packed `B` panel
/// (`bp[8κ + j]`): accumulator `2r + h` holds row `r`, columns `4h..4h + 4`.
#[inline(always)]
fn product_tile(ap: &[f32], bp: &[f32]) -> [F4; 8] {
    let mut acc = [F4::splat(0.0); 8];
    for (a, b) in ap.chunks_exact(4).zip(bp.chunks_exact(8)) {
        let (b0, b1) = (F4::load(&b[..4]), F4::load(&b[4..]));
        for r in 0..4 {
            let x = F4::splat(a[r]);
            acc[2 * r] = acc[2 * r].add(x.mul(b0));
            acc[2 * r + 1] = acc[2 * r + 1].add(x.mul(b1));
        }
    }
    acc
}

/// One row of a product natively on AVX-512: 64 columns at a time in four 16-lane accumulators
/// (the last ones masked), each element the same multiply then add in `k` order, so the same
/// bits as [`product_block`] (the products' test compares them with the definition).
///
/// # Safety
/// The CPU must have AVX-512 F; `b` must hold `(a.len() - 1) · stride + out.len()` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(unsafe_code)]
unsafe fn product_row_avx512(a: &[f32], b: &[f32], stride: usize, out: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = out.len();
    let mask = |left: usize| -> __mmask16 {
        if left >= 16 {
            !0
        } else {
            (1u16 << left) - 1
        }
    };
    let mut n0 = 0;
    while n0 < n {
        let lanes = (n - n0).min(64);
        let groups = lanes.div_ceil(16);
        let masks = [0, 1, 2, 3].map(|g| mask(lanes.saturating_sub(16 * g)));
        let mut acc = [_mm512_setzero_ps(); 4];
        for (k, &x) in a.iter().enumerate() {
            let x = _mm512_set1_ps(x);
            // SAFETY: masked loads within `b[k · stride + n0 ..][..lanes]` (see above).
            let row = b.as_ptr().add(k * stride + n0);
            for g in 0..groups {
                let v = _mm512_maskz_loadu_ps(masks[g], row.add(16 * g));
                acc[g] = _mm512_add_ps(acc[g], _mm512_mul_ps(x, v));
            }
        }
        for g in 0..groups {
            _mm512_mask_storeu_ps(out.as_mut_ptr().add(n0 + 16 * g), masks[g], acc[g]);
        }
        n0 += lanes;
    }
}

impl Op for SameMatMul {
    fn name(&self) -> StaticName {
        "SameMatMul".into()
    }

    op_as_typed_op!();
}

impl EvalOp for SameMatMul {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, y) = args_2!(inputs);
        Ok(tvec!(self.product(&x, &y, true)?.into_tvalue()))
    }
}

impl SameMatMul {
    /// `x · y` (see [`Product`]); natively on AVX-512 when `wide` and the CPU has it, else
    /// tiled ([`product_block`]): the same bits either way.
    fn product(&self, x: &Tensor, y: &Tensor, wide: bool) -> TractResult<Tensor> {
        let st = self
            .strides(x.shape(), y.shape())
            .with_context(|| format!("SameMatMul: shapes {:?} and {:?}", x.shape(), y.shape()))?;
        let shape = self
            .output_shape(x.shape(), y.shape())
            .context("SameMatMul: rank")?;
        let mut out = Tensor::zero::<f32>(&shape)?;
        {
            let xv = x.try_as_plain_ram()?;
            let yv = y.try_as_plain_ram()?;
            let mut ov = out.try_as_plain_ram_mut()?;
            let (av, bv, cv) = (
                xv.as_slice::<f32>()?,
                yv.as_slice::<f32>()?,
                ov.as_slice_mut::<f32>()?,
            );
            let [batch, heads, m, k, n] = st.dims;
            #[cfg(target_arch = "x86_64")]
            let avx512 = wide && is_x86_feature_detected!("avx512f");
            #[cfg(not(target_arch = "x86_64"))]
            let _ = wide;
            let mut scratch = Vec::new();
            for a in 0..batch {
                for h in 0..heads {
                    let (a0, b0, c0) = (
                        a * st.a[0] + h * st.a[1],
                        a * st.b[0] + h * st.b[1],
                        a * st.c[0] + h * st.c[1],
                    );
                    let block = Block {
                        a: av.get(a0..).unwrap_or_default(),
                        a_row: st.a[2],
                        b: bv.get(b0..).unwrap_or_default(),
                        b_row: st.b[2],
                        m,
                        k,
                        n,
                    };
                    let c = cv.get_mut(c0..).unwrap_or_default();
                    ensure!(block.fits(c, st.c[2]), "SameMatMul: block out of bounds");
                    #[cfg(target_arch = "x86_64")]
                    if avx512 {
                        for i in 0..m {
                            let a_row = &block.a[i * block.a_row..][..k];
                            let c_row = &mut c[i * st.c[2]..][..n];
                            // SAFETY: AVX-512 F is present; `block.b` holds the rows (fits).
                            #[allow(unsafe_code)]
                            unsafe {
                                product_row_avx512(a_row, block.b, block.b_row, c_row)
                            };
                        }
                        continue;
                    }
                    product_block(&block, c, st.c[2], &mut scratch);
                }
            }
        }
        Ok(out)
    }
}

impl TypedOp for SameMatMul {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, y) = (inputs.first().context("A")?, inputs.get(1).context("B")?);
        let a: TVec<TDim> = x.shape.iter().cloned().collect();
        let b: TVec<TDim> = y.shape.iter().cloned().collect();
        let shape = self.output_shape(&a, &b).context("SameMatMul: rank")?;
        Ok(tvec!(f32::fact(shape)))
    }

    as_op!();
}

/// Replaces the attention's two f32 activation products ([`Product`]) by [`SameMatMul`]s in a
/// decluttered model (before tract's optimisation picks per-platform kernels); returns how many.
pub(crate) fn swap_in_products(model: &mut TypedModel) -> TractResult<usize> {
    use tract_onnx::tract_core::ops::einsum::EinSum;
    let mut found = Vec::new();
    for node in model.nodes() {
        let Some(einsum) = node.op_as::<EinSum>() else {
            continue;
        };
        if einsum.q_params.is_some() || einsum.operating_dt != f32::datum_type() {
            continue;
        }
        let Some(product) = Product::of(&einsum.axes.to_string()) else {
            continue;
        };
        let [x, y] = node.inputs[..] else {
            continue;
        };
        let f32s = [x, y].iter().all(|o| {
            model
                .outlet_fact(*o)
                .is_ok_and(|f| f.datum_type == f32::datum_type() && f.konst.is_none())
        });
        if f32s {
            found.push((node.id, node.name.clone(), [x, y], product));
        }
    }
    let count = found.len();
    for (id, name, inputs, product) in found {
        let op = SameMatMul { product };
        super::graph::wire_in_place_of(model, id, format!("{name}.same"), op, &inputs)?;
    }
    Ok(count)
}

/// `v`'s bits as the checks compare them: every NaN as the one quiet NaN `0x7fc0_0000`. Rust
/// and wasm leave the payload of a NaN result unspecified (an optimiser may commute an
/// addition's operands, and which NaN operand's payload survives changes with them: the plain
/// lanes did at opt-level 1), so the checks hold NaN-ness and every other bit, not payloads.
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) fn bits(v: f32) -> u32 {
    if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits()
    }
}

/// [`softmax_digest`] as this module computes it: the native test and the wasm test
/// (`embed::test_hooks::check_same_bits`) both check it, which pins the two builds to the same bits.
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) const SOFTMAX_DIGEST: u64 = 0x9930_d245_e6b1_69d0;

/// A digest of [`softmax_rows`]' bits on fixed rows (special values included).
#[cfg(any(
    test,
    all(
        feature = "test-hooks",
        target_arch = "wasm32",
        target_feature = "simd128"
    )
))]
pub(crate) fn softmax_digest() -> u64 {
    let mut next = super::xorshift::xorshift(0x50f7);
    let special = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        f32::MIN,
        -150.0,
        -103.0,
        -104.0,
    ];
    let mut bytes = Vec::new();
    for case in 0..200 {
        let len = 4 * (1 + case % 70);
        let mut row: Vec<f32> = (0..len)
            .map(|_| match next() % 32 {
                0 => special[(next() % special.len() as u64) as usize],
                _ => (next() % 400_001) as f32 / 1000.0 - 200.0,
            })
            .collect();
        softmax_rows(&mut row, len, if case % 2 == 0 { 0.0 } else { -1.5 });
        bytes.extend(row.iter().flat_map(|v| bits(*v).to_le_bytes()));
    }
    crate::text::hash::fnv1a(&bytes)
}

/// Values the checks mix into their inputs: zeros of both signs, infinities, NaN, the extremes,
/// the exponential's underflow edge.
#[cfg(all(
    feature = "test-hooks",
    target_arch = "wasm32",
    target_feature = "simd128"
))]
const SPECIAL: [f32; 12] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-40,
    -150.0,
    -104.0,
];

/// Runs random rows through [`softmax_rows`] and through tract's `softmax_rows_f32` followed by
/// the NaN select, and returns the first case whose results differ in any bit. Rows mix ordinary
/// scores with zeros of both signs (also at a row's maximum), infinities, NaN and the largest
/// finite values; lengths 4–40 and 256. The wasm tests call it (through
/// `embed::test_hooks::check_wasm_softmax`).
#[cfg(all(
    feature = "test-hooks",
    target_arch = "wasm32",
    target_feature = "simd128"
))]
pub(crate) fn check_against_tract(seed: u64, cases: usize) -> Result<(), String> {
    let theirs = tract_linalg::routines::softmax_rows_f32()
        .ok_or("tract has no wasm softmax_rows_f32 here")?;
    let mut next = super::xorshift::xorshift(seed);
    for case in 0..cases {
        let len = if case % 8 == 0 {
            256
        } else {
            4 * (1 + (next() % 10) as usize)
        };
        let n_rows = 1 + (next() % 5) as usize;
        let special = SPECIAL;
        let values: Vec<f32> = (0..len * n_rows)
            .map(|_| match next() % 16 {
                0 => special[(next() % special.len() as u64) as usize],
                1 => 0.0,
                2 => -0.0,
                // Ordinary scores, wide enough that some underflow against the row's maximum.
                _ => (next() % 400_001) as f32 / 1000.0 - 200.0,
            })
            .collect();
        let nan_to = if case % 2 == 0 { 0.0 } else { -1.5 };
        let mut ours = values.clone();
        if !softmax_rows(&mut ours, len, nan_to) {
            return Err(format!("case {case}: rows of {len} refused"));
        }
        let mut want = values.clone();
        theirs(&mut want, len);
        for v in want.iter_mut() {
            if v.is_nan() {
                *v = nan_to;
            }
        }
        let differ = ours
            .iter()
            .zip(&want)
            .position(|(a, b)| bits(*a) != bits(*b));
        if let Some(at) = differ {
            return Err(format!(
                "case {case} (seed {seed}, rows of {len}): value {at} is {} here, {} in tract \
                 (input row {:?})",
                ours[at],
                want[at],
                &values[at / len * len..at / len * len + len],
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_sum_and_rms_norm_have_the_pinned_bits() {
        assert_eq!(norms_digest(), NORMS_DIGEST, "{:#x}", norms_digest());
    }

    /// Close to the exact functions (the approximation's error, not the bits).
    #[test]
    fn erf_sum_and_rms_norm_approximate_the_functions() {
        let xs: Vec<f32> = (-400..=400).map(|i| i as f32 / 100.0).collect();
        let mut e = xs.clone();
        erf(&mut e);
        for (x, y) in xs.iter().zip(&e) {
            // erf(x) by its series (|x| ≤ 4: the series converges within these terms).
            let x = f64::from(*x);
            let mut term = x;
            let mut total = x;
            for n in 1..200 {
                term *= -x * x / n as f64;
                total += term / (2 * n + 1) as f64;
            }
            let want = total * 2.0 / std::f64::consts::PI.sqrt();
            assert!(
                (f64::from(*y) - want).abs() < 2e-6,
                "erf({x}) = {y}, want {want}"
            );
        }
        let row: Vec<f32> = (0..1000).map(|i| (i % 17) as f32 - 8.0).collect();
        let exact: f64 = row.iter().map(|v| f64::from(*v)).sum();
        let mut s = [0f32];
        sum_rows(&row, row.len(), &mut s);
        assert!((f64::from(s[0]) - exact).abs() < 1e-3);
        let mut r = row.clone();
        rms_norm_rows(&mut r, row.len(), 0.0);
        let ms: f64 = r.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / r.len() as f64;
        assert!((ms - 1.0).abs() < 1e-5, "{ms}");
    }

    /// Both attention products give the definition's bits: every element a multiply then an
    /// add in `k` order from 0, on random shapes (row lengths across the 16-lane chunks).
    #[test]
    fn products_follow_the_definition() {
        let mut next = super::super::xorshift::xorshift(0x9a7);
        for case in 0..40 {
            let (batch, heads) = (1 + case % 2, 1 + case % 3);
            let (m, k, n) = (
                1 + (next() % 9) as usize,
                1 + (next() % 40) as usize,
                1 + (next() % 37) as usize,
            );
            for product in [Product::Scores, Product::Mix] {
                let op = SameMatMul { product };
                let (a_shape, b_shape) = match product {
                    Product::Scores => ([batch, m, heads, k], [batch, heads, k, n]),
                    Product::Mix => ([batch, heads, m, k], [batch, k, heads, n]),
                };
                let mut values = |len: usize| -> Vec<f32> {
                    (0..len)
                        .map(|_| (next() % 20_001) as f32 / 997.0 - 10.0)
                        .collect()
                };
                let a = values(a_shape.iter().product());
                let b = values(b_shape.iter().product());
                let at = |v: &[f32], shape: &[usize; 4], i: [usize; 4]| {
                    v[((i[0] * shape[1] + i[1]) * shape[2] + i[2]) * shape[3] + i[3]]
                };
                let x = Tensor::from_shape(&a_shape, &a).expect("A");
                let y = Tensor::from_shape(&b_shape, &b).expect("B");
                let got = |wide: bool| {
                    let out = op.product(&x, &y, wide).expect("runs");
                    let view = out.try_as_plain_ram().expect("plain");
                    view.as_slice::<f32>().expect("f32").to_vec()
                };
                let mut want = Vec::new();
                for ba in 0..batch {
                    // Output order: Scores [a, b, m, n], Mix [a, m, b, n].
                    let (outer, inner) = match product {
                        Product::Scores => (heads, m),
                        Product::Mix => (m, heads),
                    };
                    for o in 0..outer {
                        for p in 0..inner {
                            let (h, i) = match product {
                                Product::Scores => (o, p),
                                Product::Mix => (p, o),
                            };
                            for j in 0..n {
                                let mut c = 0f32;
                                for kk in 0..k {
                                    let (av, bv) = match product {
                                        Product::Scores => (
                                            at(&a, &a_shape, [ba, i, h, kk]),
                                            at(&b, &b_shape, [ba, h, kk, j]),
                                        ),
                                        Product::Mix => (
                                            at(&a, &a_shape, [ba, h, i, kk]),
                                            at(&b, &b_shape, [ba, kk, h, j]),
                                        ),
                                    };
                                    c += av * bv;
                                }
                                want.push(c);
                            }
                        }
                    }
                }
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                for wide in [false, true] {
                    assert_eq!(
                        bits(&got(wide)),
                        bits(&want),
                        "{product:?} {batch}×{heads}, m {m} k {k} n {n}, wide {wide}"
                    );
                }
            }
        }
    }

    #[test]
    fn softmax_has_the_pinned_bits() {
        assert_eq!(softmax_digest(), SOFTMAX_DIGEST, "{:#x}", softmax_digest());
    }

    /// Each lane operation of the platform's lane types gives the plain definition's bits, on
    /// random bit patterns (NaN, infinities and subnormals among them) and special values.
    #[test]
    fn lanes_follow_the_plain_definition() {
        use super::plain;
        let mut next = super::super::xorshift::xorshift(0x1a7e);
        let special = [
            0.0,
            -0.0,
            0.5,
            -2.5,
            8_388_608.0,
            2_147_483_648.0,
            -2_147_483_904.0,
            f32::MAX,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
        ];
        let mut draw = || -> [f32; 4] {
            [0; 4].map(|_| match next() % 4 {
                0 => special[(next() % special.len() as u64) as usize],
                1 => (next() % 2001) as f32 / 7.0 - 140.0,
                _ => f32::from_bits(next() as u32),
            })
        };
        let bits = |v: [f32; 4]| v.map(bits);
        for _ in 0..20_000 {
            let (a, b) = (draw(), draw());
            let (fa, fb) = (F4::load(&a), F4::load(&b));
            let (pa, pb) = (plain::F4::load(&a), plain::F4::load(&b));
            let same = |x: F4, y: plain::F4, what: &str| {
                assert_eq!(bits(x.lanes()), bits(y.lanes()), "{what} of {a:?}, {b:?}");
            };
            same(fa.add(fb), pa.add(pb), "add");
            same(fa.sub(fb), pa.sub(pb), "sub");
            same(fa.mul(fb), pa.mul(pb), "mul");
            same(fa.pmax(fb), pa.pmax(pb), "pmax");
            same(fa.div(fb), pa.div(pb), "div");
            same(fa.abs(), pa.abs(), "abs");
            same(fa.or_sign_of(fb), pa.or_sign_of(pb), "or_sign_of");
            same(fa.nearest(), pa.nearest(), "nearest");
            let (ta, tp) = (fa.trunc_sat(), pa.trunc_sat());
            same(F4::from_bits(ta), plain::F4::from_bits(tp), "trunc_sat");
            let (ib, pib) = (fb.trunc_sat(), pb.trunc_sat());
            same(
                F4::from_bits(ta.add(ib).min(ib).max(ta).shl(23)),
                plain::F4::from_bits(tp.add(pib).min(pib).max(tp).shl(23)),
                "integer ops",
            );
            let one = F4::splat(1.0);
            let pone = plain::F4::splat(1.0);
            same(
                one.select(fb, fa.lt(fb).or(fa.is_nan())),
                pone.select(pb, pa.lt(pb).or(pa.is_nan())),
                "lt/or/is_nan/select",
            );
            same(one.select(fb, fa.gt(fb)), pone.select(pb, pa.gt(pb)), "gt");
        }
    }

    #[test]
    fn nearest_is_round_ties_even() {
        let mut next = super::super::xorshift::xorshift(9);
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            8_388_607.5,
            8_388_608.0,
            -8_388_609.0,
            f32::MAX,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -1e-40,
        ];
        values.extend((0..100_000).map(|_| f32::from_bits(next() as u32)));
        for v in values {
            let got = F4::splat(v).nearest().lanes()[0];
            let want = v.round_ties_even();
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{v:e}: {got:e} against {want:e}"
            );
        }
    }

    /// Softmax rows sum to 1 and follow the scores' order (a sanity check beside the pinned
    /// bits).
    #[test]
    fn softmax_rows_are_distributions() {
        let mut row = [1.0f32, 2.0, 3.0, 4.0, -1.0, 0.0, 0.5, 10.0];
        assert!(softmax_rows(&mut row, 8, 0.0));
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        assert!(row[7] > row[3] && row[3] > row[2] && row[4] < row[5]);
        assert!(!softmax_rows(&mut row, 3, 0.0));
        assert!(!softmax_rows(&mut row, 0, 0.0));
        // A row of 7: the padded lanes change nothing.
        let mut seven = [0.5f32, -1.0, 2.0, 3.0, 0.0, 1.0, -4.0];
        assert!(softmax_rows(&mut seven, 7, 0.0));
        let sum: f32 = seven.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        assert!(seven[3] > seven[2] && seven[6] < seven[1]);
    }
}
