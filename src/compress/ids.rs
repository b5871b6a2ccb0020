//! Marker ids: what binds a rewritten message to its originals in `verbatim`.
//!
//! Every message `compress` rewrites carries an id in its marker (`[summary#3f9a0c21: …]`,
//! `[dup#…`, `[truncated#…`, `[call#…`), and `verbatim[id]` holds the originals it replaced. The
//! id is a hash of the originals' position in the conversation (the index of the first) and of
//! their texts, so it is *unforgeable*: [`uncompress`](fn@super::uncompress) restores a message
//! only where the id it carries, recomputed from `verbatim[id]` at that message's position,
//! matches. A message that quotes a marker — of this call or of any other — is left as it is:
//! at its position the quoted id does not check out.
//!
//! The hash reads at most the first [`HEAD`] and the last [`TAIL`] bytes of each text (with its
//! length): ids cost the same for a 50 MB tool output as for a line, and a different
//! conversation at the same position must differ there to collide.

/// Bytes of the start of each original text that an id reads.
const HEAD: usize = 256;
/// Bytes of the end of each original text that an id reads.
const TAIL: usize = 64;

/// The id of the originals starting at `position` (global message index) with these texts
/// (each message's [`message_text`](super::message_text)): 8 hex digits.
pub(super) fn marker_id<'t>(position: usize, texts: impl IntoIterator<Item = &'t str>) -> String {
    let mut h = Fnv::new();
    h.write(&(position as u64).to_le_bytes());
    for t in texts {
        let b = t.as_bytes();
        h.write(&(b.len() as u64).to_le_bytes());
        if b.len() <= HEAD + TAIL {
            h.write(b);
        } else {
            h.write(&b[..HEAD]);
            h.write(&b[b.len() - TAIL..]);
        }
        h.write(&[0]);
    }
    format!("{:08x}", (h.0 >> 32) as u32)
}

/// FNV-1a, streamed.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The marker prefixes an id follows.
pub(super) const ID_PREFIXES: [&str; 4] = ["[summary#", "[dup#", "[truncated#", "[call#"];

/// Every id-shaped run of hex digits right after a marker prefix in `text`, in order.
pub(super) fn candidates(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for prefix in ID_PREFIXES {
        let mut rest = text;
        while let Some(at) = memchr::memmem::find(rest.as_bytes(), prefix.as_bytes()) {
            let after = &rest[at + prefix.len()..];
            let len = after.bytes().take_while(u8::is_ascii_hexdigit).count();
            if len > 0 {
                out.push(&after[..len]);
            }
            rest = after;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_position_and_text() {
        let a = marker_id(0, ["hello"]);
        assert_eq!(a.len(), 8);
        assert_eq!(a, marker_id(0, ["hello"]));
        assert_ne!(a, marker_id(1, ["hello"]));
        assert_ne!(a, marker_id(0, ["hellp"]));
        assert_ne!(marker_id(0, ["ab", "c"]), marker_id(0, ["a", "bc"]));
        let long = "x".repeat(10_000);
        let mut other = long.clone();
        other.replace_range(5000..5001, "y");
        // The middle of a long text is not read; its length and ends are.
        assert_eq!(
            marker_id(3, [long.as_str()]),
            marker_id(3, [other.as_str()])
        );
        assert_ne!(marker_id(3, [long.as_str()]), marker_id(3, [&long[1..]]));
    }

    #[test]
    fn candidates_follow_every_prefix() {
        let t = "see [summary#0a1b2c3d: x] and [dup#ffff0000: same] and [call#zz] [truncated#12";
        assert_eq!(candidates(t), vec!["0a1b2c3d", "ffff0000", "12"]);
    }
}
