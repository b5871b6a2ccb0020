//! Sentence vectors from token vectors: mean pooling over the attention mask, then L2
//! normalisation (what sentence-transformers' all-MiniLM-L6-v2 does).

use super::vector::DIMS;

/// Mean of the rows of `hidden` (`tokens × DIMS`, row-major) whose `mask` is 1, L2-normalised.
///
/// `hidden` holds at least `mask.len()` rows; padding rows (mask 0) are skipped, so a text's
/// vector does not depend on how far its batch was padded. A text always has `[CLS]` and
/// `[SEP]`, so at least two rows count; an all-zero mean stays zero.
#[cfg_attr(not(feature = "embed"), allow(dead_code))]
pub(crate) fn mean_pool(hidden: &[f32], mask: &[bool]) -> [f32; DIMS] {
    let mut sum = [0f32; DIMS];
    let mut n = 0u32;
    for (row, &keep) in hidden.chunks_exact(DIMS).zip(mask) {
        if keep {
            for (s, &x) in sum.iter_mut().zip(row) {
                *s += x;
            }
            n += 1;
        }
    }
    if n > 0 {
        let inv = 1.0 / n as f32;
        for s in &mut sum {
            *s *= inv;
        }
    }
    l2_normalize(&mut sum);
    sum
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(crate) fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        let inv = 1.0 / norm;
        for x in v {
            *x *= inv;
        }
    }
}

/// Cosine similarity of two vectors (dot product divided by both norms; 0 if either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (&x, &y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_skips_padding_and_normalises() {
        let mut hidden = vec![0f32; 3 * DIMS];
        hidden[0] = 1.0; // row 0
        hidden[DIMS + 1] = 1.0; // row 1
        hidden[2 * DIMS + 2] = 100.0; // row 2: padding
        let v = mean_pool(&hidden, &[true, true, false]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - h).abs() < 1e-6 && (v[1] - h).abs() < 1e-6 && v[2] == 0.0);
    }

    #[test]
    fn cosine_of_zero_is_zero() {
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-6);
    }
}
