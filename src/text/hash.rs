//! A stable 64-bit hash (FNV-1a) for ids that must be equal on every host and every release:
//! summary ids, dedup groups, cache keys. Not for untrusted-input hash tables (use the std maps).

/// FNV-1a over `bytes`.
///
/// ```
/// assert_eq!(condense::text::hash::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(condense::text::hash::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The first 12 hex digits of the FNV-1a hash of the parts, each followed by a 0 byte.
pub fn short_id<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    // FNV-1a streamed over the parts (no copy of them).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.as_bytes().iter().chain(std::iter::once(&0u8)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{:012x}", h >> 16)
}

/// A hash map with foldhash's fast hasher: for the hot paths (key extraction, dedup,
/// applyWatermark's id maps), where std's SipHash cost a fifth of the time in wasm. Seeded per
/// process like std's; never iterated where order could reach an output.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A hash set with foldhash's fast hasher (see [`FastMap`]).
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_id_is_fnv1a_of_the_parts_each_followed_by_a_zero_byte() {
        let parts = ["{\"role\":\"user\"}", "", "héllo"];
        let mut all = Vec::new();
        for p in parts {
            all.extend_from_slice(p.as_bytes());
            all.push(0);
        }
        assert_eq!(short_id(parts), format!("{:012x}", fnv1a(&all) >> 16));
    }
}
