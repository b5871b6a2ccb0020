//! The lexical fallback embedder: hashed word and character n-gram features, no model files.
//!
//! Used when no model is loaded, so that retrieval and query-aware compression still work (with
//! lexical, not semantic, similarity: "car" and "automobile" are unrelated here, "configure" and
//! "configuration" are close). Deterministic, identical on every host, about a microsecond per
//! word.
//!
//! **Features** of a text, after lower-casing and dropping combining marks (NFD), with words the
//! maximal runs of alphanumeric characters:
//! - word unigrams (`w:` namespace), weight [`WORD_WEIGHT`];
//! - word bigrams of adjacent words (`b:`), weight [`BIGRAM_WEIGHT`];
//! - character 3-, 4- and 5-grams of each word framed as `<word>` (`c:`), weight [`CHAR_WEIGHT`].
//!
//! **Hashing**: each feature's bytes (namespace byte, then UTF-8) go through 64-bit FNV-1a
//! (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`), then the splitmix64 finaliser to
//! spread FNV's weak low bits. Dimension = `h % 384`, sign = bit 63 (signed hashing keeps
//! collisions unbiased).
//!
//! **Weighting**: per group, counts become sublinear `1 + ln(tf)`; each group's vector is
//! L2-normalised, scaled by its weight, the groups are summed and the result L2-normalised. The
//! empty text (no word) gives the zero vector, whose cosine with anything is 0.
//!
//! Features are summed in hash order (a `BTreeMap`), so the float sums, and so the vectors, are
//! bit-identical on every run and platform.
//!
//! Changing any of this changes the vectors: indexes record [`LEXICAL_VERSION`].

use std::collections::BTreeMap;

use unicode_normalization::UnicodeNormalization;

use super::pooling::l2_normalize;
use super::vector::DIMS;

/// Version of the feature scheme above; bumped whenever vectors would change.
pub const LEXICAL_VERSION: u32 = 1;
/// Weight of the word-unigram group.
pub const WORD_WEIGHT: f32 = 1.0;
/// Weight of the word-bigram group.
pub const BIGRAM_WEIGHT: f32 = 0.5;
/// Weight of the character n-gram group.
pub const CHAR_WEIGHT: f32 = 0.7;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `tag` followed by `bytes`, then the splitmix64 finaliser.
pub fn feature_hash(tag: u8, bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in std::iter::once(&tag).chain(bytes) {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    // splitmix64 finaliser
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The lexical embedding of `text` (see the [module docs](self)).
pub fn embed_lexical(text: &str) -> [f32; DIMS] {
    let normalized: String = text
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect();
    let words: Vec<&str> = normalized
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();

    let mut out = [0f32; DIMS];
    if words.is_empty() {
        return out;
    }
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();

    // Word unigrams.
    for w in &words {
        *counts.entry(feature_hash(b'w', w.as_bytes())).or_default() += 1;
    }
    add_group(&mut out, &mut counts, WORD_WEIGHT);

    // Word bigrams.
    let mut pair = String::new();
    for p in words.windows(2) {
        pair.clear();
        pair.push_str(p[0]);
        pair.push(' ');
        pair.push_str(p[1]);
        *counts
            .entry(feature_hash(b'b', pair.as_bytes()))
            .or_default() += 1;
    }
    add_group(&mut out, &mut counts, BIGRAM_WEIGHT);

    // Character 3..=5-grams of `<word>`.
    let mut framed: Vec<char> = Vec::new();
    let mut gram = String::new();
    for w in &words {
        framed.clear();
        framed.push('<');
        framed.extend(w.chars());
        framed.push('>');
        for n in 3..=5 {
            for g in framed.windows(n) {
                gram.clear();
                gram.extend(g);
                *counts
                    .entry(feature_hash(b'c', gram.as_bytes()))
                    .or_default() += 1;
            }
        }
    }
    add_group(&mut out, &mut counts, CHAR_WEIGHT);

    l2_normalize(&mut out);
    out
}

/// Adds one feature group (sublinear tf, L2-normalised, weighted) to `out` and empties `counts`.
fn add_group(out: &mut [f32; DIMS], counts: &mut BTreeMap<u64, u32>, weight: f32) {
    let mut group = [0f32; DIMS];
    for (&h, &tf) in counts.iter() {
        let value = 1.0 + libm::logf(tf as f32);
        let dim = (h % DIMS as u64) as usize;
        if h >> 63 == 1 {
            group[dim] -= value;
        } else {
            group[dim] += value;
        }
    }
    counts.clear();
    l2_normalize(&mut group);
    for (o, g) in out.iter_mut().zip(group) {
        *o += weight * g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::pooling::cosine;

    #[test]
    fn fnv1a_matches_the_published_vectors_before_mixing() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c; with the tag byte first we hash "wa".
        let mut h = FNV_OFFSET;
        for &b in b"a" {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn unit_length_deterministic_and_case_insensitive() {
        let a = embed_lexical("Configure the HNSW index");
        let n: f32 = a.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-5);
        assert_eq!(a, embed_lexical("configure the hnsw index"));
        assert_eq!(embed_lexical(""), [0.0; DIMS]);
        assert_eq!(embed_lexical("  ,;  "), [0.0; DIMS]);
    }

    #[test]
    fn related_words_are_closer_than_unrelated_ones() {
        let q = embed_lexical("how to configure authentication");
        let near = embed_lexical("authentication configuration guide");
        let far = embed_lexical("banana bread recipe with walnuts");
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.2);
        assert!(cosine(&embed_lexical("café"), &embed_lexical("cafe")) > 0.999);
    }
}
