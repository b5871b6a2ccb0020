//! UTF-16 code units to UTF-8, for the JS entry of `applyWatermarkJson`.
//!
//! Node copies a string's code units into wasm memory as they are (`Buffer#write(…,
//! 'utf16le')`: a copy, or a widening for a one-byte string), which is several times faster
//! than encoding the string in JS: `TextEncoder.encodeInto` encodes about 1.5 GB/s, and
//! wasm-bindgen first walks the string's ASCII prefix in a JS loop (33 ms for a 7 MB ASCII
//! text). The units are encoded here instead, 64 at a time while they are ASCII. An unpaired
//! surrogate becomes U+FFFD, as `TextEncoder` does, so the bytes are the ones wasm-bindgen
//! would have passed.

/// Writes the UTF-8 form of `units` into `out` (cleared first; its capacity is reused).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn utf16_to_utf8(units: &[u16], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(units.len());
    let mut i = 0;
    while i < units.len() {
        if let Some(block) = units
            .get(i..i + 64)
            .and_then(|b| <&[u16; 64]>::try_from(b).ok())
        {
            if let Some(bytes) = ascii_block(block) {
                out.extend_from_slice(&bytes);
                i += 64;
                continue;
            }
        }
        // A block with a non-ASCII unit (or the tail): one character at a time. A surrogate
        // pair may end one unit past the block; the next block starts after it.
        let end = (i + 64).min(units.len());
        while i < end {
            i = push_char(units, i, out);
        }
    }
}

/// Appends the character starting at `units[i]` (`i` in range); returns where the next starts.
fn push_char(units: &[u16], i: usize, out: &mut Vec<u8>) -> usize {
    let Some(&u) = units.get(i) else {
        return units.len();
    };
    if u < 0x80 {
        out.push(u as u8);
        return i + 1;
    }
    let (c, next) = match u {
        0xD800..=0xDBFF => match units.get(i + 1) {
            Some(&low @ 0xDC00..=0xDFFF) => {
                let code = 0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                (char::from_u32(code), i + 2)
            }
            _ => (None, i + 1),
        },
        // A lone low surrogate is no `char` either.
        _ => (char::from_u32(u32::from(u)), i + 1),
    };
    let mut buf = [0u8; 4];
    let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    next
}

/// The 64 units as bytes when they are all ASCII (wasm SIMD: eight units per vector, one test
/// for the block, narrowed sixteen bytes at a time).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline]
fn ascii_block(block: &[u16; 64]) -> Option<[u8; 64]> {
    use core::arch::wasm32::{
        u16x8, u16x8_splat, u64x2_extract_lane, u8x16_narrow_i16x8, v128, v128_and, v128_any_true,
        v128_or,
    };
    let v: [v128; 8] = core::array::from_fn(|k| {
        let c = &block[8 * k..8 * k + 8];
        u16x8(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
    });
    let any = v.iter().fold(u16x8_splat(0), |acc, &x| v128_or(acc, x));
    if v128_any_true(v128_and(any, u16x8_splat(0xFF80))) {
        return None;
    }
    let mut bytes = [0u8; 64];
    for (k, out) in bytes.chunks_exact_mut(16).enumerate() {
        // Every unit is below 0x80: the saturating narrowing keeps it as is.
        let w = u8x16_narrow_i16x8(v[2 * k], v[2 * k + 1]);
        out[..8].copy_from_slice(&u64x2_extract_lane::<0>(w).to_le_bytes());
        out[8..].copy_from_slice(&u64x2_extract_lane::<1>(w).to_le_bytes());
    }
    Some(bytes)
}

/// The 64 units as bytes when they are all ASCII (portable).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline]
fn ascii_block(block: &[u16; 64]) -> Option<[u8; 64]> {
    if block.iter().fold(0, |acc, &u| acc | u) >= 0x80 {
        return None;
    }
    let mut bytes = [0u8; 64];
    for (b, &u) in bytes.iter_mut().zip(block) {
        *b = u as u8;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `TextEncoder` writes: unpaired surrogates as U+FFFD.
    fn expected(units: &[u16]) -> Vec<u8> {
        String::from_utf16_lossy(units).into_bytes()
    }

    fn encoded(units: &[u16]) -> Vec<u8> {
        let mut out = vec![b'x'; 3]; // cleared first
        utf16_to_utf8(units, &mut out);
        out
    }

    #[test]
    fn encodes_like_text_encoder() {
        for text in ["", "a", "héllo", "日本語", "🎉 x", "{\"a\":\"b\"}"] {
            let units: Vec<u16> = text.encode_utf16().collect();
            assert_eq!(encoded(&units), text.as_bytes());
        }
        // Unpaired surrogates, alone, at the end, reversed, around a block edge.
        for units in [
            vec![0xD800],
            vec![0xDC00],
            vec![0x61, 0xD83C],
            vec![0xDF89, 0xD83C],
            vec![0xD83C, 0xD83C, 0xDF89],
        ] {
            assert_eq!(encoded(&units), expected(&units), "{units:x?}");
        }
        for at in 60..70 {
            let mut units = vec![u16::from(b'a'); 130];
            units[at] = 0xD83C;
            units[at + 1] = 0xDF89;
            assert_eq!(encoded(&units), expected(&units), "pair at {at}");
            units[at + 1] = u16::from(b'b');
            assert_eq!(encoded(&units), expected(&units), "lone at {at}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn encodes_any_units_like_text_encoder(
            units in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => 0x20u16..0x7F,
                    1 => 0x80u16..0x800,
                    1 => 0x800u16..0xFFFF,
                    1 => 0xD800u16..0xE000,
                ],
                0..300,
            )
        ) {
            proptest::prop_assert_eq!(encoded(&units), expected(&units));
        }
    }
}
