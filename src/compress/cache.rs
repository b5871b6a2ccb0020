//! The incremental cache of `compress` (docs/design.md, "The compress pipeline") and the per-call
//! memo under it.
//!
//! **What it is.** [`CompressCache`] is a plain value the caller keeps between calls (the API
//! stays stateless): pass it in the context ([`CompressContext::with_cache`](super::CompressContext::with_cache); JS:
//! `options.cache`, returned updated as `result.cache`), and the expensive per-text work of
//! earlier calls is reused. It is JSON-serialisable ([`CompressCache::to_json`] /
//! [`CompressCache::from_json`]), versioned and bounded.
//!
//! **What is cached, keyed by what.** Each entry's key is a SHA-256 (first 128 bits, hex) of
//! everything its value depends on — never of anything less — so a cache built with other
//! options, another query or another embedder can never give a wrong answer, only a miss:
//! - a text's summary (prose, code-split, structured, lossy JSON, budget-fill prose): the
//!   summariser's name, the text, the level (ratio, bounds, key allowance, fill mode), the
//!   query's fingerprint (its terms, and with an embedder the query text and the embedder's
//!   identity) and, for budget-fill prose, the key tokens kept verbatim elsewhere;
//! - a sentence's score: the sentence. An edited text misses as a whole
//!   but reuses the scores of its unchanged sentences, so a minor edit recomputes only the
//!   changed sentences;
//! - a prefix-stable block (see [`CompressOptions::prefix_stable`](super::CompressOptions)):
//!   the block's messages, its position, the options and the query's fingerprint.
//!
//! Under the cache, a per-call memo (always on, cache or not) keeps the key tokens of every
//! text seen in the call, so the budget loop's repeated passes extract them once (a token's
//! class is memoised by `text::keys::classify` itself, per thread, across calls).
//!
//! **The law.** With or without a cache, and whatever the cache holds (as long as it was built
//! by this crate), `compress` returns the same bytes: the cache only saves time
//! (`tests/compress_cache.rs` checks it on random sequences of calls).
//!
//! **Counts.** `stats.cacheHits` / `stats.cacheMisses` count the text-level lookups (a summary
//! or a prefix-stable block): a hit reused a whole result; a miss computed it (possibly from
//! cached sentence scores). Sentence-score lookups are not counted.
//!
//! **Bound and eviction.** At the end of a call the cache keeps at most
//! `options.cacheLimit` entries (default 10,000): the most recently used first (every entry
//! records the call — `generation` — that last used it), ties by key. Deterministic. A cache
//! read with more than [`MAX_CACHE_ENTRIES`] entries is refused (`too_large` at its
//! `entries`), and `cacheLimit` may not exceed it.
//!
//! **Bad cache input.** A cache that is not the shape below is a typed error at its path
//! (`invalid_options` at `options.cache.entries[3].value`): that is a caller's bug. A cache of
//! another format version or another crate version, or whose checksum does not match its
//! entries (edited or corrupted), is ignored and rebuilt: the call succeeds, its result is the
//! same, and `stats.warnings` says why.
//!
//! **A cache is trusted input.** Its entries are used as they are: whoever can write a cache
//! the caller reads back can put any text into the summaries of later calls. The unkeyed
//! checksum only catches accidents (an edit, a truncated file) — anyone can recompute it. A
//! cache kept where others can write it (shared storage, a browser's local storage, a file
//! another process writes) should be *bound to its caller* with a secret key
//! ([`CompressCache::with_key`], [`CompressCache::from_json_keyed`]; JS `options.cacheKey`):
//! its checksum is then an HMAC-SHA256 under that key, and a cache whose MAC does not check out
//! under the caller's key (forged, or written under another key, or without one) is ignored and
//! rebuilt, with a warning.
//!
//! The JSON form:
//! ```json
//! {"version": 1, "engine": "condense-ctx 0.1.0", "generation": 3, "checksum": "9f…",
//!  "entries": [{"key": "3a…", "value": "…", "used": 3}]}
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{read_json, read_value, Error, ErrorKind};
use crate::text::hash::{fnv1a, FastMap};
use crate::text::keys::{self, KeyKind};

/// The cache's format version.
pub const CACHE_VERSION: u32 = 1;

/// The default bound on a cache's entries (`options.cacheLimit`).
pub const DEFAULT_CACHE_LIMIT: usize = 10_000;

/// The most entries a cache may hold: a cache read with more is refused (`too_large` at its
/// `entries`), and `options.cacheLimit` may not ask for more. A hundred times the default; at
/// the sizes summaries have (a few hundred bytes) that is a few hundred megabytes of cache.
pub const MAX_CACHE_ENTRIES: usize = 1 << 20;

/// The engine a cache was built by: values computed by another release may differ.
fn engine() -> String {
    format!("condense-ctx {}", crate::VERSION)
}

/// The incremental cache the caller keeps between `compress` calls (see the module docs).
#[derive(Clone, Default, PartialEq)]
pub struct CompressCache {
    generation: u64,
    entries: BTreeMap<String, Entry>,
    /// Why the cache read was ignored and rebuilt (reported by the next call's stats).
    warning: Option<String>,
    /// The caller's secret key: the checksum is an HMAC-SHA256 under it.
    key: Option<Vec<u8>>,
}

impl std::fmt::Debug for CompressCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressCache")
            .field("generation", &self.generation)
            .field("entries", &self.entries.len())
            .field("warning", &self.warning)
            .field("keyed", &self.key.is_some())
            .finish()
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    value: String,
    used: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEntry {
    key: String,
    value: String,
    used: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: u32,
    engine: String,
    generation: u64,
    checksum: String,
    entries: Vec<WireEntry>,
}

impl CompressCache {
    /// An empty cache.
    pub fn new() -> CompressCache {
        CompressCache::default()
    }

    /// An empty cache bound to the caller's secret `key` (see the module docs): its JSON form
    /// carries an HMAC-SHA256 under the key, and only [`from_json_keyed`](Self::from_json_keyed)
    /// with the same key reads it back.
    pub fn with_key(key: &[u8]) -> CompressCache {
        CompressCache {
            key: Some(key.to_vec()),
            ..CompressCache::default()
        }
    }

    /// Reads a cache bound to `key` (see [`with_key`](Self::with_key)): a cache whose MAC does
    /// not check out under `key` is read as an empty cache (bound to `key`) with a
    /// [`warning`](Self::warning).
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_json_keyed(json: &str, path: &str, key: &[u8]) -> Result<CompressCache, Error> {
        let wire: Wire = read_json(json, ErrorKind::InvalidOptions, path)?;
        Self::from_wire(wire, path, Some(key))
    }

    /// Reads a cache from a JSON value bound to `key` (`null`: an empty cache), as
    /// [`from_json_keyed`](Self::from_json_keyed).
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_value_keyed(
        value: &serde_json::Value,
        path: &str,
        key: &[u8],
    ) -> Result<CompressCache, Error> {
        if value.is_null() {
            return Ok(CompressCache::with_key(key));
        }
        let wire: Wire = read_value(value, ErrorKind::InvalidOptions, path)?;
        Self::from_wire(wire, path, Some(key))
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many calls have used it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The JSON form (see the module docs). Deterministic: entries in key order.
    pub fn to_json(&self) -> String {
        let wire = Wire {
            version: CACHE_VERSION,
            engine: engine(),
            generation: self.generation,
            checksum: self.checksum(),
            entries: self
                .entries
                .iter()
                .map(|(k, e)| WireEntry {
                    key: k.clone(),
                    value: e.value.clone(),
                    used: e.used,
                })
                .collect(),
        };
        serde_json::to_string(&wire).unwrap_or_else(|_| "{}".into())
    }

    /// The JSON form as a value.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json()).unwrap_or(serde_json::Value::Null)
    }

    /// Why the cache this was read from was ignored (another version or engine, a checksum that
    /// does not match): it is then empty, and the next `compress` call reports the reason in
    /// `stats.warnings`.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Reads a cache from JSON text; `path` names it in errors (`options.cache`). A cache of
    /// another version or engine, or with a checksum that does not match, is read as an empty
    /// cache with a [`warning`](Self::warning).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] at the offending field when the JSON is not a cache's shape.
    pub fn from_json(json: &str, path: &str) -> Result<CompressCache, Error> {
        let wire: Wire = read_json(json, ErrorKind::InvalidOptions, path)?;
        Self::from_wire(wire, path, None)
    }

    /// Reads a cache from a JSON value (`null`: an empty cache), as [`from_json`](Self::from_json).
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json).
    pub fn from_value(value: &serde_json::Value, path: &str) -> Result<CompressCache, Error> {
        if value.is_null() {
            return Ok(CompressCache::new());
        }
        let wire: Wire = read_value(value, ErrorKind::InvalidOptions, path)?;
        Self::from_wire(wire, path, None)
    }

    fn from_wire(wire: Wire, path: &str, key: Option<&[u8]>) -> Result<CompressCache, Error> {
        Self::from_wire_within(wire, path, key, MAX_CACHE_ENTRIES)
    }

    /// [`from_wire`](Self::from_wire) with the bound on entries given (tests use a small one).
    fn from_wire_within(
        wire: Wire,
        path: &str,
        key: Option<&[u8]>,
        max_entries: usize,
    ) -> Result<CompressCache, Error> {
        let ignored = |why: String| CompressCache {
            warning: Some(format!("cache ignored and rebuilt: {why}")),
            key: key.map(<[u8]>::to_vec),
            ..CompressCache::default()
        };
        if wire.entries.len() > max_entries {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("{path}.entries"),
                format!(
                    "a cache holds at most {max_entries} entries (this one has {})",
                    wire.entries.len()
                ),
            ));
        }
        let mut entries = BTreeMap::new();
        for (i, e) in wire.entries.into_iter().enumerate() {
            if e.key.len() != 32 || !e.key.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    format!("{path}.entries[{i}].key"),
                    "expected 32 hex digits",
                ));
            }
            if entries.contains_key(&e.key) {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    format!("{path}.entries[{i}].key"),
                    "duplicate key",
                ));
            }
            entries.insert(
                e.key,
                Entry {
                    value: e.value,
                    used: e.used,
                },
            );
        }
        if wire.version != CACHE_VERSION {
            return Ok(ignored(format!(
                "format version {} (this engine reads {CACHE_VERSION})",
                wire.version
            )));
        }
        if wire.engine != engine() {
            return Ok(ignored(format!(
                "built by {} (this is {})",
                wire.engine,
                engine()
            )));
        }
        let cache = CompressCache {
            generation: wire.generation,
            entries,
            warning: None,
            key: key.map(<[u8]>::to_vec),
        };
        if cache.checksum() != wire.checksum {
            return Ok(ignored(if key.is_some() {
                "its MAC does not check out under the caller's key (forged, edited, or written \
                 under another key)"
                    .into()
            } else {
                "checksum mismatch (edited or corrupted)".into()
            }));
        }
        Ok(cache)
    }

    /// FNV-1a over the version, the generation and every entry, in key order; with a key,
    /// HMAC-SHA256 under it over the same bytes (`mac:` and 64 hex digits).
    fn checksum(&self) -> String {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&CACHE_VERSION.to_le_bytes());
        bytes.extend_from_slice(&self.generation.to_le_bytes());
        for (k, e) in &self.entries {
            bytes.extend_from_slice(k.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(&(e.value.len() as u64).to_le_bytes());
            bytes.extend_from_slice(e.value.as_bytes());
            bytes.extend_from_slice(&e.used.to_le_bytes());
        }
        match &self.key {
            None => format!("{:016x}", fnv1a(&bytes)),
            Some(key) => {
                use hmac::Mac;
                // HMAC accepts keys of any length: `new_from_slice` cannot fail for it.
                match hmac::Hmac::<Sha256>::new_from_slice(key) {
                    Ok(mut mac) => {
                        mac.update(&bytes);
                        let tag = mac.finalize().into_bytes();
                        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
                        format!("mac:{hex}")
                    }
                    Err(_) => String::new(),
                }
            }
        }
    }

    /// Keeps at most `limit` entries: the most recently used, ties by key.
    fn evict(&mut self, limit: usize) {
        if self.entries.len() <= limit {
            return;
        }
        let mut order: Vec<(u64, String)> = self
            .entries
            .iter()
            .map(|(k, e)| (e.used, k.clone()))
            .collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, k) in order.into_iter().skip(limit) {
            self.entries.remove(&k);
        }
    }
}

/// A cache key: the first 128 bits of SHA-256 over the parts (each length-prefixed), in hex.
pub(crate) fn key(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let d = h.finalize();
    d.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The memo of one call: key tokens by text (always), and the caller's cache
/// while the call runs (see the module docs). Interior mutability: summarisers take `&Query`.
#[derive(Clone, Default)]
pub struct Memo {
    inner: Rc<RefCell<MemoInner>>,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

#[derive(Default)]
struct MemoInner {
    // foldhash maps: probed for every text and sentence of the call (never iterated).
    keys: FastMap<String, Rc<Vec<(String, KeyKind)>>>,
    scores: FastMap<String, f64>,
    /// One pass over the messages (no budget loop, no cache): sentence scores and a text's
    /// key tokens are computed where asked, not stored (each is asked for once, and storing
    /// copies every sentence). Token classes are memoised by `keys::classify` either way.
    single_pass: bool,
    cache: Option<CompressCache>,
    hits: usize,
    misses: usize,
}

impl Memo {
    /// A memo over the caller's cache for one call (its generation advanced).
    pub(crate) fn with_cache(mut cache: CompressCache) -> Memo {
        // Saturating: a cache is input, and a generation of u64::MAX must not overflow (it
        // only makes every entry as recent as the next).
        cache.generation = cache.generation.saturating_add(1);
        cache.warning = None;
        Memo {
            inner: Rc::new(RefCell::new(MemoInner {
                cache: Some(cache),
                ..MemoInner::default()
            })),
        }
    }

    /// Marks the call as one pass (see `MemoInner::single_pass`); ignored with a cache.
    pub(crate) fn set_single_pass(&self) {
        let mut m = self.inner.borrow_mut();
        m.single_pass = m.cache.is_none();
    }

    /// Whether a caller's cache is attached.
    pub(crate) fn has_cache(&self) -> bool {
        self.inner.borrow().cache.is_some()
    }

    /// Text-level hits and misses so far.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let m = self.inner.borrow();
        (m.hits, m.misses)
    }

    /// The caller's cache back, bounded to `limit` entries.
    pub(crate) fn take_cache(&self, limit: usize) -> Option<CompressCache> {
        let mut cache = self.inner.borrow_mut().cache.take()?;
        cache.evict(limit);
        Some(cache)
    }

    /// [`keys::extract`] of `text`, memoised by text and by token.
    pub(crate) fn keys(&self, text: &str) -> Rc<Vec<(String, KeyKind)>> {
        {
            let m = self.inner.borrow();
            if m.single_pass {
                drop(m);
                return Rc::new(keys::extract_with(text, &mut |t| self.classify(t)));
            }
            if let Some(k) = m.keys.get(text) {
                return Rc::clone(k);
            }
        }
        let extracted = Rc::new(keys::extract_with(text, &mut keys::classify));
        self.inner
            .borrow_mut()
            .keys
            .insert(text.to_string(), Rc::clone(&extracted));
        extracted
    }

    /// Records `extracted` as [`keys`](Self::keys) of `text` (what a walk over the text found
    /// anyway: `keys::TextKeys::all`), unless the call is one pass or the text has them.
    pub(crate) fn seed_keys(&self, text: &str, extracted: impl FnOnce() -> Vec<(String, KeyKind)>) {
        let mut m = self.inner.borrow_mut();
        if m.single_pass || m.keys.contains_key(text) {
            return;
        }
        m.keys.insert(text.to_string(), Rc::new(extracted()));
    }

    /// [`keys::classify`] of one token (memoised there, per thread, across calls).
    pub(crate) fn classify(&self, token: &str) -> Option<KeyKind> {
        keys::classify(token)
    }

    /// A sentence's score: from the call's memo, else the cache, else `compute` (then stored
    /// in both). Not counted in hits and misses.
    pub(crate) fn score(&self, sentence: &str, compute: impl FnOnce() -> f64) -> f64 {
        {
            let m = self.inner.borrow();
            if m.single_pass {
                drop(m);
                return compute();
            }
            if let Some(&s) = m.scores.get(sentence) {
                return s;
            }
        }
        let k = self
            .has_cache()
            .then(|| key(&[b"score", sentence.as_bytes()]));
        if let Some(k) = &k {
            let mut m = self.inner.borrow_mut();
            if let Some(cache) = m.cache.as_mut() {
                let generation = cache.generation;
                if let Some(e) = cache.entries.get_mut(k) {
                    if let Ok(bits) = u64::from_str_radix(&e.value, 16) {
                        e.used = generation;
                        let s = f64::from_bits(bits);
                        m.scores.insert(sentence.to_string(), s);
                        return s;
                    }
                }
            }
        }
        let s = compute();
        let mut m = self.inner.borrow_mut();
        m.scores.insert(sentence.to_string(), s);
        if let (Some(k), Some(cache)) = (k, m.cache.as_mut()) {
            let used = cache.generation;
            cache.entries.insert(
                k,
                Entry {
                    value: format!("{:016x}", s.to_bits()),
                    used,
                },
            );
        }
        s
    }

    /// A text-level result (a summary, a block): from the cache under the key of `parts`, else
    /// `compute` (then stored). Without a cache, just `compute`. Counted in hits and misses.
    pub(crate) fn text(&self, parts: &[&[u8]], compute: impl FnOnce() -> String) -> String {
        if !self.has_cache() {
            return compute();
        }
        let k = key(parts);
        {
            let mut m = self.inner.borrow_mut();
            let found = m.cache.as_mut().and_then(|cache| {
                let generation = cache.generation;
                cache.entries.get_mut(&k).map(|e| {
                    e.used = generation;
                    e.value.clone()
                })
            });
            if let Some(v) = found {
                m.hits += 1;
                return v;
            }
        }
        // Computed without holding the borrow: `compute` may use the memo itself.
        let v = compute();
        let mut m = self.inner.borrow_mut();
        m.misses += 1;
        if let Some(cache) = m.cache.as_mut() {
            let used = cache.generation;
            cache.entries.insert(
                k,
                Entry {
                    value: v.clone(),
                    used,
                },
            );
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache read back with the largest generation (checksum and all valid) is used, not an
    /// overflow: the generation saturates.
    #[test]
    fn the_largest_generation_saturates() {
        let mut cache = CompressCache::new();
        cache.generation = u64::MAX;
        let back = CompressCache::from_json(&cache.to_json(), "cache").unwrap();
        assert_eq!(back.warning(), None);
        let memo = Memo::with_cache(back);
        assert_eq!(memo.text(&[b"t", b"x"], || "s".into()), "s");
        let after = memo.take_cache(100).unwrap();
        assert_eq!(after.generation(), u64::MAX);
        assert_eq!(after.len(), 1);
    }

    /// A cache with more entries than the bound is refused at its `entries`, before any entry
    /// is read; one at the bound is read.
    #[test]
    fn a_cache_over_the_entry_bound_is_refused() {
        let memo = Memo::with_cache(CompressCache::new());
        for i in 0..3u8 {
            memo.text(&[b"t", &[i]], || "s".into());
        }
        let json = memo.take_cache(100).unwrap().to_json();
        let wire = || read_json::<Wire>(&json, ErrorKind::InvalidOptions, "c").unwrap();
        let err = CompressCache::from_wire_within(wire(), "options.cache", None, 2).unwrap_err();
        assert_eq!(err.code(), "too_large");
        assert_eq!(err.path(), "options.cache.entries");
        let read = CompressCache::from_wire_within(wire(), "options.cache", None, 3).unwrap();
        assert_eq!((read.len(), read.warning()), (3, None));
    }

    /// `cacheLimit` may not ask for more than a cache may hold.
    #[test]
    fn cache_limit_is_bounded() {
        let over = serde_json::json!({ "cacheLimit": MAX_CACHE_ENTRIES + 1 });
        let err = crate::compress::CompressOptions::from_value(&over).unwrap_err();
        assert_eq!(
            (err.code(), err.path()),
            ("invalid_options", "options.cacheLimit")
        );
        let at = serde_json::json!({ "cacheLimit": MAX_CACHE_ENTRIES });
        assert!(crate::compress::CompressOptions::from_value(&at).is_ok());
    }

    #[test]
    fn json_round_trip_and_checksum() {
        let memo = Memo::with_cache(CompressCache::new());
        let v = memo.text(&[b"t", b"hello"], || "summary".into());
        assert_eq!(v, "summary");
        let s = memo.score("A sentence.", || 1.25);
        assert_eq!(s, 1.25);
        assert_eq!(memo.counts(), (0, 1));
        let cache = memo.take_cache(100).unwrap();
        assert_eq!(cache.len(), 2);
        let json = cache.to_json();
        let back = CompressCache::from_json(&json, "cache").unwrap();
        assert_eq!(back.warning(), None);
        assert_eq!(back, cache);
        // A second call hits, and never recomputes.
        let memo = Memo::with_cache(back);
        assert_eq!(memo.text(&[b"t", b"hello"], || unreachable!()), "summary");
        assert_eq!(memo.score("A sentence.", || unreachable!()), 1.25);
        assert_eq!(memo.counts(), (1, 0));
        // Tampered: ignored and rebuilt, with a reason.
        let tampered = json.replace("\"summary\"", "\"forged\"");
        let c = CompressCache::from_json(&tampered, "cache").unwrap();
        assert!(c.is_empty());
        assert!(c.warning().unwrap().contains("checksum"), "tampered");
        let other = json.replace("\"version\":1", "\"version\":99");
        let c = CompressCache::from_json(&other, "cache").unwrap();
        assert!(c.is_empty() && c.warning().unwrap().contains("version"));
    }

    #[test]
    fn bad_shapes_are_errors_with_paths() {
        let e = CompressCache::from_json(r#"{"version":1}"#, "options.cache").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidOptions);
        let e = CompressCache::from_json(
            r#"{"version":1,"engine":"x","generation":0,"checksum":"0","entries":[{"key":"zz","value":"","used":0}]}"#,
            "options.cache",
        )
        .unwrap_err();
        assert_eq!(e.path(), "options.cache.entries[0].key");
        let e = CompressCache::from_json(
            r#"{"version":1,"engine":"x","generation":0,"checksum":"0","entries":[{"key":"00000000000000000000000000000000","value":3,"used":0}]}"#,
            "options.cache",
        )
        .unwrap_err();
        assert_eq!(e.path(), "options.cache.entries[0].value");
    }

    #[test]
    fn eviction_keeps_the_most_recent_deterministically() {
        let mut cache = CompressCache::new();
        for (i, used) in [(1u8, 1u64), (2, 3), (3, 2), (4, 3)] {
            cache.entries.insert(
                key(&[&[i]]),
                Entry {
                    value: i.to_string(),
                    used,
                },
            );
        }
        cache.evict(2);
        let mut kept: Vec<&str> = cache.entries.values().map(|e| e.value.as_str()).collect();
        kept.sort_unstable();
        assert_eq!(kept, vec!["2", "4"]);
    }
}
