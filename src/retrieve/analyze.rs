//! The BM25 analyser: text → index terms.
//!
//! The English pipeline ([`Analyzer::english`], also [`Analyzer::default`]), in order:
//!
//! 1. **Normalise**: Unicode NFKD, combining marks removed (`café` → `cafe`, `ﬁ` → `fi`,
//!    full-width letters → ASCII), the typographic apostrophe `’` read as `'`. ASCII text skips
//!    this step (it would not change it).
//! 2. **Lower-case** (Unicode `to_lowercase`).
//! 3. **Words**: Unicode word segmentation (UAX #29: `unicode-segmentation`'s `unicode_words`, through
//!    [`crate::text::words`], which takes ASCII text on a fast path that yields the same words);
//!    numbers are words and are kept (`1990`, `3.14`).
//! 4. **Split inside words** (option, on by default): a UAX #29 word such as `foo_bar`, `a.b`,
//!    `don't` or `v1.2` is split further at every character that is not alphanumeric
//!    (`foo`, `bar`), like the reference analyser's `[a-z0-9]+` tokens. On the dev IR sets
//!    (BM25 1.2/0.75, nDCG@10) keeping words whole scores CISI 0.3970 vs 0.3929 split and MED
//!    0.6927 vs 0.6928 (the difference comes from `e.g`, `i.e`, `u.s` becoming terms); emitting
//!    both the word and its parts scores lower on both (0.3796, 0.6902). Splitting is kept
//!    because condense indexes code and paths, where a query for `bar` must find `foo_bar`,
//!    `foo.bar` and `src/bar.rs`.
//! 5. **Stop words**: NLTK's 179-word English list ([`ENGLISH_STOP_WORDS`]) is dropped, compared
//!    before stemming.
//! 6. **Stem**: the Snowball English (Porter2) stemmer (`rust-stemmers`).
//!
//! Empty terms never come out. The analyser is deterministic and has no state besides its
//! options, so the same text gives the same terms natively and in wasm.
//!
//! ```
//! use condense::retrieve::analyze::Analyzer;
//! let a = Analyzer::english();
//! assert_eq!(a.terms("The Connections of café_owners, in 1990!"), ["connect", "cafe", "owner", "1990"]);
//! ```

use std::borrow::Cow;
use std::fmt;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// NLTK's English stop word list (`nltk.corpus.stopwords.words("english")`, 179 words), sorted
/// so that membership is a binary search. The BM25 reference numbers of the dev IR sets use it.
pub const ENGLISH_STOP_WORDS: [&str; 179] = [
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "aren't",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "couldn",
    "couldn't",
    "d",
    "did",
    "didn",
    "didn't",
    "do",
    "does",
    "doesn",
    "doesn't",
    "doing",
    "don",
    "don't",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "hadn't",
    "has",
    "hasn",
    "hasn't",
    "have",
    "haven",
    "haven't",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "isn't",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "ma",
    "me",
    "mightn",
    "mightn't",
    "more",
    "most",
    "mustn",
    "mustn't",
    "my",
    "myself",
    "needn",
    "needn't",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "shan't",
    "she",
    "she's",
    "should",
    "should've",
    "shouldn",
    "shouldn't",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "that'll",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "wasn't",
    "we",
    "were",
    "weren",
    "weren't",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "won't",
    "wouldn",
    "wouldn't",
    "y",
    "you",
    "you'd",
    "you'll",
    "you're",
    "you've",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lower-case, unstemmed) is in [`ENGLISH_STOP_WORDS`].
pub fn is_english_stop_word(word: &str) -> bool {
    ENGLISH_STOP_WORDS.binary_search(&word).is_ok()
}

/// The analyser's switches. The defaults are the English pipeline described in the
/// [module docs](self); indexes store them so that queries are analysed like the documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AnalyzerOptions {
    /// Split UAX #29 words further at non-alphanumeric characters (`foo_bar` → `foo`, `bar`).
    pub split_inner: bool,
    /// Drop [`ENGLISH_STOP_WORDS`].
    pub stop_words: bool,
    /// Stem with the Snowball English stemmer.
    pub stem: bool,
}

impl Default for AnalyzerOptions {
    fn default() -> Self {
        AnalyzerOptions {
            split_inner: true,
            stop_words: true,
            stem: true,
        }
    }
}

/// Turns text into BM25 terms; see the [module docs](self) for the pipeline.
pub struct Analyzer {
    options: AnalyzerOptions,
    stemmer: Stemmer,
}

impl fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Analyzer")
            .field("options", &self.options)
            .finish()
    }
}

impl Clone for Analyzer {
    fn clone(&self) -> Self {
        Analyzer::new(self.options)
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer::english()
    }
}

impl Analyzer {
    /// The English analyser with the default options.
    pub fn english() -> Analyzer {
        Analyzer::new(AnalyzerOptions::default())
    }

    /// An English analyser with the given switches.
    pub fn new(options: AnalyzerOptions) -> Analyzer {
        Analyzer {
            options,
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// The analyser's switches.
    pub fn options(&self) -> AnalyzerOptions {
        self.options
    }

    /// The terms of `text`, in text order (duplicates kept: they are term frequencies).
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.words(text, |word| {
            if let Some(term) = self.term(word) {
                out.push(term);
            }
        });
        out
    }

    /// [`terms`](Self::terms), each word's term looked up in `cache` first (and recorded
    /// there): for many texts analysed in a row, whose words repeat, most of the work (the
    /// stemmer) is done once per distinct word. The same terms as `terms`.
    pub fn terms_cached(&self, text: &str, cache: &mut TermCache) -> Vec<String> {
        let mut out = Vec::new();
        self.words(text, |word| {
            let term = match cache.terms.get(word) {
                Some(known) => known.clone(),
                None => {
                    let term = self.term(word);
                    if cache.terms.len() < TermCache::MAX_WORDS {
                        cache.terms.insert(word.into(), term.clone());
                    }
                    term
                }
            };
            if let Some(term) = term {
                out.push(term);
            }
        });
        out
    }

    /// Calls `f` with each word of `text` the terms come from: normalised, split into words,
    /// lower-cased and (with `split_inner`) split at non-alphanumeric characters.
    fn words(&self, text: &str, mut f: impl FnMut(&str)) {
        let normalized = normalize(text);
        for word in crate::text::words::words(&normalized) {
            let lower: Cow<'_, str> = if word.chars().any(char::is_uppercase) {
                Cow::Owned(word.to_lowercase())
            } else {
                Cow::Borrowed(word)
            };
            if self.options.split_inner {
                for part in lower.split(|c: char| !c.is_alphanumeric()) {
                    f(part);
                }
            } else {
                f(&lower);
            }
        }
    }

    /// The term of one word: `None` for an empty word, a stop word (when dropped) or an
    /// empty stem.
    fn term(&self, word: &str) -> Option<String> {
        if word.is_empty() || (self.options.stop_words && is_english_stop_word(word)) {
            return None;
        }
        let term = if self.options.stem {
            self.stemmer.stem(word).into_owned()
        } else {
            word.to_string()
        };
        (!term.is_empty()).then_some(term)
    }
}

/// The terms an [`Analyzer`] found for words it has seen, for [`Analyzer::terms_cached`]. It
/// holds at most [`TermCache::MAX_WORDS`] words (later new words are analysed each time), and
/// belongs with one analyser's options.
#[derive(Default)]
pub struct TermCache {
    terms: crate::text::hash::FastMap<Box<str>, Option<String>>,
}

impl TermCache {
    /// The most distinct words a cache records.
    pub const MAX_WORDS: usize = 1 << 16;
}

/// NFKD without combining marks, `’` as `'`; ASCII text is returned as it is.
fn normalize(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.nfkd()
            .filter(|&c| !is_combining_mark(c))
            .map(|c| if c == '\u{2019}' { '\'' } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_terms_are_the_terms() {
        let texts = [
            "Running runners ran; the RUNNING of foo_bar.baz",
            "Café naïve résumé — l’été d'Ünïcode İstanbul",
            "running again, and again: the runners",
            "",
            "a an the of",
        ];
        for options in [
            AnalyzerOptions::default(),
            AnalyzerOptions {
                split_inner: false,
                stop_words: false,
                stem: false,
            },
        ] {
            let analyzer = Analyzer::new(options);
            let mut cache = TermCache::default();
            for _ in 0..2 {
                for t in texts {
                    assert_eq!(
                        analyzer.terms_cached(t, &mut cache),
                        analyzer.terms(t),
                        "{t}"
                    );
                }
            }
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        /// A cache shared by many texts changes no text's terms.
        #[test]
        fn a_shared_cache_changes_no_terms(texts in proptest::collection::vec("\\PC{0,40}", 1..12)) {
            let analyzer = Analyzer::english();
            let mut cache = TermCache::default();
            for t in &texts {
                proptest::prop_assert_eq!(analyzer.terms_cached(t, &mut cache), analyzer.terms(t));
            }
        }
    }

    #[test]
    fn stop_list_is_sorted_and_unique() {
        assert!(ENGLISH_STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_english_stop_word("the"));
        assert!(is_english_stop_word("don't"));
        assert!(!is_english_stop_word("information"));
    }

    #[test]
    fn pipeline() {
        let a = Analyzer::english();
        assert_eq!(a.terms(""), Vec::<String>::new());
        assert_eq!(a.terms("  ...  "), Vec::<String>::new());
        assert_eq!(a.terms("Retrieval of INFORMATION"), ["retriev", "inform"]);
        assert_eq!(a.terms("Crème brûlée"), ["creme", "brule"]);
        assert_eq!(a.terms("foo_bar a.b"), ["foo", "bar", "b"]);
        assert_eq!(a.terms("don’t stop"), ["stop"]);
        assert_eq!(a.terms("ＡＢＣ 42 3.14"), ["abc", "42", "3", "14"]);
        let whole = Analyzer::new(AnalyzerOptions {
            split_inner: false,
            ..AnalyzerOptions::default()
        });
        assert_eq!(whole.terms("foo_bar 3.14"), ["foo_bar", "3.14"]);
    }
}
