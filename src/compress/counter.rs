//! Token counting for `compress`: the fast estimator by default, the loaded model's tokenizer
//! on request (`tokenCounter: "model"`), or a caller's counter ([`TokenCounter`]: a trait in
//! Rust, a `countTokens` callback in JS).
//!
//! Whichever counter a call uses, it is the only one: the budget (`tokenBudget`,
//! `targetRatio`), `minTokens`, the size guard and every stat (`tokensBefore`, `tokensAfter`,
//! `fits`) are in its tokens. The budget loop counts the same texts many times (every pass
//! re-counts the messages it keeps), so a caller's counter is memoised per call: each distinct
//! text is counted once ([`Tokens`]).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};
use crate::text::estimate_tokens;

/// Makes a trait object `Send + Sync` natively (so a counter or summariser can be shared across
/// threads, like [`crate::embed::EmbedFn`]) and places no bound on wasm32, where one thread
/// may hold JS values. Implemented for every type that qualifies.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSendSync: Send + Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + Sync + ?Sized> MaybeSendSync for T {}
/// Makes a trait object `Send + Sync` natively (so a counter or summariser can be shared across
/// threads, like [`crate::embed::EmbedFn`]) and places no bound on wasm32, where one thread
/// may hold JS values. Implemented for every type that qualifies.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSendSync {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSendSync for T {}

/// Counts the tokens of a text in the caller's tokenizer (for example o200k through a
/// tiktoken binding). Object-safe; `Send + Sync` natively.
///
/// A counter must be a function of the text: the same text always gets the same count (the
/// result is deterministic only then). An `Err` stops the call with that error.
///
/// ```
/// use condense::compress::{compress, CompressContext, CompressOptions, TokenCounter};
/// struct Words;
/// impl TokenCounter for Words {
///     fn count(&self, text: &str) -> Result<usize, condense::Error> {
///         Ok(text.split_whitespace().count())
///     }
/// }
/// let messages = vec![serde_json::json!({"role": "user", "content": "one two three"})];
/// let ctx = CompressContext::new().with_counter(&Words);
/// let out = compress(&messages, &CompressOptions::default(), ctx)?;
/// assert_eq!(out.stats.tokens_before, 3);
/// # Ok::<(), condense::Error>(())
/// ```
pub trait TokenCounter: MaybeSendSync {
    /// The number of tokens of `text`.
    ///
    /// # Errors
    /// Whatever the counter reports; `compress` returns it unchanged.
    fn count(&self, text: &str) -> Result<usize, Error>;
}

/// The default estimator ([`estimate_tokens`]) as a [`TokenCounter`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Estimator;

impl TokenCounter for Estimator {
    fn count(&self, text: &str) -> Result<usize, Error> {
        Ok(estimate_tokens(text))
    }
}

/// The exact count with a MiniLM tokenizer: the WordPiece pieces of the whole text, without
/// `[CLS]`/`[SEP]` and without the model's truncation.
#[cfg(feature = "embed")]
#[derive(Clone, Copy, Debug)]
pub struct ModelCounter<'a>(pub &'a crate::embed::tokenizer::WordPiece);

#[cfg(feature = "embed")]
impl TokenCounter for ModelCounter<'_> {
    fn count(&self, text: &str) -> Result<usize, Error> {
        Ok(self.0.count_pieces(text))
    }
}

/// `options.tokenCounter`: which built-in counter a call uses when no caller's counter is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TokenCounterKind {
    /// The fast estimator ([`estimate_tokens`]), fitted to o200k and erring high.
    #[default]
    Estimate,
    /// The loaded embedding model's tokenizer (WordPiece): exact in that tokenizer; needs an
    /// embedder with a tokenizer.
    Model,
}

/// The counter of one call, memoised: every distinct text is counted once per call. The
/// estimator is not memoised (it is cheaper than a lookup). The first error of a caller's
/// counter is kept (counts are 0 from then on) and returned by [`Tokens::check`].
pub(crate) struct Tokens<'a> {
    counter: Option<&'a dyn TokenCounter>,
    /// What counts (`estimate`, `model:<sha256>`), for cache keys; `None` for a caller's
    /// counter, which has no identity a key could hold.
    identity: Option<String>,
    memo: RefCell<HashMap<Box<str>, usize>>,
    error: RefCell<Option<Error>>,
    calls: Cell<usize>,
}

impl<'a> Tokens<'a> {
    /// A call's counter: `counter`, else the estimator. `identity` names the counter for
    /// cache keys (`None` for a caller's).
    pub(crate) fn new(
        counter: Option<&'a dyn TokenCounter>,
        identity: Option<String>,
    ) -> Tokens<'a> {
        Tokens {
            counter,
            identity,
            memo: RefCell::new(HashMap::new()),
            error: RefCell::new(None),
            calls: Cell::new(0),
        }
    }

    /// Whether this is the default estimator (no caller's or model's counter).
    pub(crate) fn is_estimate(&self) -> bool {
        self.counter.is_none()
    }

    /// What counts, for cache keys (`None`: a caller's counter).
    pub(crate) fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// The tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> usize {
        let Some(counter) = self.counter else {
            return estimate_tokens(text);
        };
        if text.is_empty() {
            return 0;
        }
        if let Some(&n) = self.memo.borrow().get(text) {
            return n;
        }
        if self.error.borrow().is_some() {
            return 0;
        }
        self.calls.set(self.calls.get() + 1);
        match counter.count(text) {
            Ok(n) => {
                self.memo.borrow_mut().insert(text.into(), n);
                n
            }
            Err(e) => {
                *self.error.borrow_mut() = Some(e);
                0
            }
        }
    }

    /// What a marker id (8 hex digits) may cost beyond what `id` costs: the tokens of
    /// [`COSTLIEST_ID`] less those of `id`. Size guards add it to a marker's count, so whether a
    /// text is replaced does not hang on its id, which depends on the message's position: a
    /// message kept in one call is kept again once earlier messages were merged and it moved
    /// (compress is idempotent on its own output). Exact for the estimator, where an id between
    /// `#` and a delimiter is its own runs and `a0a0a0a0` is the costliest (one token per
    /// character); for other counters the same difference, a close guess.
    pub(crate) fn id_slack(&self, id: &str) -> usize {
        self.count(COSTLIEST_ID).saturating_sub(self.count(id))
    }

    /// How many times the caller's counter was called (distinct texts).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn calls(&self) -> usize {
        self.calls.get()
    }

    /// The first error of the caller's counter, if any.
    pub(crate) fn check(&self) -> Result<(), Error> {
        match self.error.borrow().as_ref() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// The marker id the size guards count in place of a real one ([`Tokens::id_slack`]): letters
/// and digits alternating, the costliest 8 hex digits for the estimator.
pub(crate) const COSTLIEST_ID: &str = "a0a0a0a0";

/// The error of a counter that returned something other than a count (JS: `NaN`, a negative
/// or fractional number, not a number).
pub fn bad_count(path: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOptions,
        path,
        format!("the counter returned {what}; expected a non-negative integer"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Chars;
    impl TokenCounter for Chars {
        fn count(&self, text: &str) -> Result<usize, Error> {
            Ok(text.chars().count())
        }
    }

    struct Failing;
    impl TokenCounter for Failing {
        fn count(&self, _: &str) -> Result<usize, Error> {
            Err(bad_count("options.countTokens", "NaN"))
        }
    }

    #[test]
    fn memoises_each_distinct_text_once() {
        let t = Tokens::new(Some(&Chars), None);
        assert_eq!(t.count("abc"), 3);
        assert_eq!(t.count("abc"), 3);
        assert_eq!(t.count("abcd"), 4);
        assert_eq!(t.count(""), 0);
        assert_eq!(t.calls(), 2);
        assert!(t.check().is_ok());
    }

    #[test]
    fn estimator_is_the_default() {
        let t = Tokens::new(None, Some("estimate".into()));
        assert_eq!(t.count("hello world"), estimate_tokens("hello world"));
        assert_eq!(t.calls(), 0);
    }

    #[test]
    fn the_costliest_id_bounds_every_id_for_the_estimator() {
        let t = Tokens::new(None, Some("estimate".into()));
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let id = format!("{x:08x}");
            // An id between `#` and `:` (or ` —`, `]`) is its own runs: the marker's count
            // with the costliest id is its count plus the slack.
            for marker in [
                format!("[summary#{id}: Step 0 updates config_0.yaml]"),
                format!("[truncated#{id} — 120 chars: so]"),
                format!("{{\"_condensed\":\"[call#{id}]\"}}"),
            ] {
                let worst = marker.replacen(&id, COSTLIEST_ID, 1);
                assert_eq!(
                    t.count(&marker) + t.id_slack(&id),
                    t.count(&worst),
                    "{marker}"
                );
            }
        }
        assert_eq!(t.id_slack(COSTLIEST_ID), 0);
        assert_eq!(t.id_slack("12345678"), 5);
    }

    #[test]
    fn keeps_the_first_error() {
        let t = Tokens::new(Some(&Failing), None);
        assert_eq!(t.count("abc"), 0);
        assert_eq!(t.count("def"), 0);
        assert_eq!(t.calls(), 1);
        let e = t.check().unwrap_err();
        assert_eq!(e.path(), "options.countTokens");
        assert_eq!(e.kind(), ErrorKind::InvalidOptions);
    }
}
