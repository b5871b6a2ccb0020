//! UTF-16 code units to UTF-8, for the JS entry of `applyWatermarkJson`.
//!
//! Node copies a string's code units into wasm memory as they are (`Buffer#write(…,
//! 'utf16le')`: a copy, or a widening for a one-byte string), which is several times faster
//! than encoding the string in JS: `TextEncoder.encodeInto` encodes about 1.5 GB/s, and
//! wasm-bindgen first walks the string's ASCII prefix in a JS loop (33 ms for a 7 MB ASCII
//! text). The units are encoded here instead, 64 at a time while they are ASCII. An unpaired
//! surrogate becomes U+FFFD, as `TextEncoder` does, so the bytes are the ones wasm-bindgen
//! would have passed.
//!
//! `compress` on objects (the JS entry in Node) also sends its messages' long strings this way,
//! raw: [`append_json_string`] writes each as `JSON.stringify` would, so the message text the
//! core reads is the one `JSON.stringify(messages)` makes (`compressPartsPieces`).

/// Writes the UTF-8 form of `units` into `out` (cleared first; its capacity is reused).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn utf16_to_utf8(units: &[u16], out: &mut Vec<u8>) {
    out.clear();
    append_utf8(units, out);
}

/// Appends the UTF-8 form of `units` to `out` (as [`utf16_to_utf8`] writes it).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn append_utf8(units: &[u16], out: &mut Vec<u8>) {
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

/// Appends `units` as a JSON string, quotes included, exactly as `JSON.stringify` writes a
/// string (ECMAScript's QuoteJSONString) and UTF-8 encodes the result: `"` and `\\` escaped,
/// `\b \t \n \f \r` for those controls, `\u00xx` for the other units below 0x20, an unpaired
/// surrogate as `\udxxx` (lower-case hex), everything else as its UTF-8.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn append_json_string(units: &[u16], out: &mut Vec<u8>) {
    out.reserve(units.len() + 2);
    out.push(b'"');
    let mut i = 0;
    while i < units.len() {
        // Eight units at a time while none needs a look (printable ASCII but `"` and `\`);
        // else those eight one at a time (a surrogate pair may end one unit past them).
        if let Some(chunk) = units
            .get(i..i + 8)
            .and_then(|c| <&[u16; 8]>::try_from(c).ok())
        {
            if let Some(bytes) = plain8(chunk) {
                out.extend_from_slice(&bytes);
                i += 8;
                continue;
            }
            let end = i + 8;
            while i < end {
                i = push_json_unit(units, i, out);
            }
            continue;
        }
        i = push_json_unit(units, i, out);
    }
    out.push(b'"');
}

/// Appends the character starting at `units[i]` as [`append_json_string`] writes it; returns
/// where the next starts.
fn push_json_unit(units: &[u16], i: usize, out: &mut Vec<u8>) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let Some(&u) = units.get(i) else {
        return units.len();
    };
    if (0x20..0x80).contains(&u) && u != 0x22 && u != 0x5C {
        out.push(u as u8);
        return i + 1;
    }
    let escape: Option<&[u8]> = match u {
        0x22 => Some(b"\\\""),
        0x5C => Some(b"\\\\"),
        0x08 => Some(b"\\b"),
        0x09 => Some(b"\\t"),
        0x0A => Some(b"\\n"),
        0x0C => Some(b"\\f"),
        0x0D => Some(b"\\r"),
        _ => None,
    };
    if let Some(e) = escape {
        out.extend_from_slice(e);
        return i + 1;
    }
    let paired = matches!(u, 0xD800..=0xDBFF)
        && units
            .get(i + 1)
            .is_some_and(|l| matches!(l, 0xDC00..=0xDFFF));
    if u < 0x20 || (matches!(u, 0xD800..=0xDFFF) && !paired) {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from((u >> shift) & 0xF)]);
        }
        return i + 1;
    }
    push_char(units, i, out)
}

/// The eight units as bytes when each is printable ASCII other than `"` and `\` (wasm SIMD).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline]
fn plain8(c: &[u16; 8]) -> Option<[u8; 8]> {
    use core::arch::wasm32::{
        u16x8, u16x8_eq, u16x8_ge, u16x8_lt, u16x8_splat, u64x2_extract_lane, u8x16_narrow_i16x8,
        v128_any_true, v128_or,
    };
    let v = u16x8(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    let special = v128_or(
        v128_or(
            u16x8_lt(v, u16x8_splat(0x20)),
            u16x8_ge(v, u16x8_splat(0x80)),
        ),
        v128_or(
            u16x8_eq(v, u16x8_splat(0x22)),
            u16x8_eq(v, u16x8_splat(0x5C)),
        ),
    );
    if v128_any_true(special) {
        return None;
    }
    Some(u64x2_extract_lane::<0>(u8x16_narrow_i16x8(v, v)).to_le_bytes())
}

/// The eight units as bytes when each is printable ASCII other than `"` and `\` (portable).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline]
fn plain8(c: &[u16; 8]) -> Option<[u8; 8]> {
    let mut bytes = [0u8; 8];
    for (b, &u) in bytes.iter_mut().zip(c) {
        if !(0x20..0x80).contains(&u) || u == 0x22 || u == 0x5C {
            return None;
        }
        *b = u as u8;
    }
    Some(bytes)
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

    fn quoted(units: &[u16]) -> String {
        let mut out = b"x".to_vec(); // appended to
        append_json_string(units, &mut out);
        String::from_utf8(out).unwrap()[1..].to_string()
    }

    #[test]
    fn quotes_like_json_stringify() {
        // Valid text: serde_json's escaping is QuoteJSONString's.
        let long = format!("{}\"{}\n", "a".repeat(70), "é".repeat(70));
        for text in [
            "",
            "a",
            "a\"b\\c",
            "\u{8}\t\n\u{b}\u{c}\r\u{0}\u{1f}\u{7f}",
            "日本🎉/</",
            long.as_str(),
        ] {
            let units: Vec<u16> = text.encode_utf16().collect();
            assert_eq!(
                quoted(&units),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
        // Unpaired surrogates as JSON.stringify writes them (well-formed JSON.stringify).
        assert_eq!(quoted(&[0xD800]), "\"\\ud800\"");
        assert_eq!(quoted(&[0x61, 0xDC00, 0x62]), "\"a\\udc00b\"");
        assert_eq!(quoted(&[0xDF89, 0xD83C]), "\"\\udf89\\ud83c\"");
        assert_eq!(quoted(&[0xD83C, 0xDF89]), "\"🎉\"");
        for at in 60..70 {
            let mut units = vec![u16::from(b'a'); 130];
            units[at] = 0xD83C;
            units[at + 1] = 0xDF89;
            assert_eq!(
                quoted(&units),
                serde_json::to_string(&String::from_utf16(&units).unwrap()).unwrap()
            );
            units[at] = u16::from(b'"');
            assert_eq!(
                quoted(&units),
                format!(
                    "\"{}\\\"{}\\udf89{}\"",
                    "a".repeat(at),
                    "",
                    "a".repeat(128 - at)
                )
            );
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// Any valid text is quoted as serde_json (and so JSON.stringify) quotes it.
        #[test]
        fn quotes_any_text_like_serde(text in "(\\PC|[\\x00-\\x1f\"\\\\]|a{60,70}){0,40}") {
            let units: Vec<u16> = text.encode_utf16().collect();
            proptest::prop_assert_eq!(quoted(&units), serde_json::to_string(&text).unwrap());
        }
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
