//! Query classification (docs/design.md, "Result compression"): factual questions get
//! truncated results, conceptual ones full content.
//!
//! Signals, matched case-insensitively (words as whole words):
//!
//! - **conceptual**: the question words `why`, `how`, `explain`, `what`; the guide phrases
//!   `getting started`, `overview`, `background`; the comparison words `difference`,
//!   `compare`, `versus`; a question mark `?` anywhere.
//! - **factual**: a camelCase identifier (`getUserById`, `parseJSON`), a snake_case identifier
//!   (`get_user_by_id`), a backtick (`` `--flag` ``), a version number (`v1.5`, `2.3.1`), the
//!   command words `install`, `configure`, `enable`, `syntax`.
//!
//! **Priority:** conceptual before factual, first match wins, and a question without any
//! signal is **factual** (the design notes' default). So a conceptual signal always wins
//! (`how to configure authentication` is conceptual even though `configure` is a factual
//! signal), and the factual signals decide nothing on their own; [`explain`] reports them so
//! callers can say why a question was classified as it was.
//!
//! ```
//! use condense::retrieve::classify::{classify, explain, QueryKind, Signal};
//! assert_eq!(classify("getUserById function"), QueryKind::Factual);
//! assert_eq!(classify("why use JWT authentication?"), QueryKind::Conceptual);
//! assert_eq!(explain("getUserById function"), (QueryKind::Factual, Some(Signal::CamelCase)));
//! assert_eq!(explain("deployment guide"), (QueryKind::Factual, None));
//! ```

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// What a question asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryKind {
    /// A specific identifier, command, option or version: results are truncated.
    Factual,
    /// An explanation, rationale, guide or comparison: results keep their full content.
    Conceptual,
}

impl QueryKind {
    /// `"factual"` or `"conceptual"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            QueryKind::Factual => "factual",
            QueryKind::Conceptual => "conceptual",
        }
    }
}

/// The rule that decided a classification, in the order the rules are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Signal {
    /// Conceptual: `why`, `how`, `explain`, `what`.
    QuestionWord,
    /// Conceptual: `getting started`, `overview`, `background`.
    Guide,
    /// Conceptual: `difference`, `compare`, `versus`.
    Comparison,
    /// Conceptual: a `?`.
    QuestionMark,
    /// Factual: a camelCase identifier.
    CamelCase,
    /// Factual: a snake_case identifier.
    SnakeCase,
    /// Factual: a backtick.
    Backtick,
    /// Factual: a version number.
    Version,
    /// Factual: `install`, `configure`, `enable`, `syntax`.
    Command,
}

impl Signal {
    /// The kind this signal stands for.
    pub const fn kind(self) -> QueryKind {
        match self {
            Signal::QuestionWord | Signal::Guide | Signal::Comparison | Signal::QuestionMark => {
                QueryKind::Conceptual
            }
            Signal::CamelCase
            | Signal::SnakeCase
            | Signal::Backtick
            | Signal::Version
            | Signal::Command => QueryKind::Factual,
        }
    }
}

/// The regex-based signals, in priority order. A pattern that fails to compile (a bug, caught
/// by the tests) is left out rather than panicking.
fn rules() -> &'static [(Signal, Regex)] {
    static RULES: OnceLock<Vec<(Signal, Regex)>> = OnceLock::new();
    RULES.get_or_init(|| {
        [
            (Signal::QuestionWord, r"(?i)\b(?:why|how|explain|what)\b"),
            (
                Signal::Guide,
                r"(?i)\bgetting\s+started\b|\boverview\b|\bbackground\b",
            ),
            (Signal::Comparison, r"(?i)\b(?:difference|compare|versus)\b"),
            (Signal::QuestionMark, r"\?"),
            (Signal::CamelCase, r"\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b"),
            (
                Signal::SnakeCase,
                r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b",
            ),
            (Signal::Backtick, r"`"),
            (Signal::Version, r"\b[vV]?[0-9]+(?:\.[0-9]+)+\b"),
            (
                Signal::Command,
                r"(?i)\b(?:install|configure|enable|syntax)\b",
            ),
        ]
        .into_iter()
        .filter_map(|(signal, pattern)| Regex::new(pattern).ok().map(|r| (signal, r)))
        .collect()
    })
}

/// Classifies a question by the signals of the [module docs](self).
pub fn classify(question: &str) -> QueryKind {
    explain(question).0
}

/// Classifies a question and names the first signal that matched (`None`: no signal, the
/// factual default).
pub fn explain(question: &str) -> (QueryKind, Option<Signal>) {
    rules()
        .iter()
        .find(|(_, re)| re.is_match(question))
        .map_or((QueryKind::Factual, None), |(signal, _)| {
            (signal.kind(), Some(*signal))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(question: &str, kind: QueryKind, signal: Option<Signal>) {
        assert_eq!(explain(question), (kind, signal), "{question:?}");
        assert_eq!(classify(question), kind, "{question:?}");
    }

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rules().len(), 9);
    }

    #[test]
    fn seed_factual_signal_examples() {
        use QueryKind::Factual;
        check("getUserById", Factual, Some(Signal::CamelCase));
        check("parseJSON", Factual, Some(Signal::CamelCase));
        check("get_user_by_id", Factual, Some(Signal::SnakeCase));
        check("parse_json", Factual, Some(Signal::SnakeCase));
        check("`configure`", Factual, Some(Signal::Backtick));
        check("`--flag`", Factual, Some(Signal::Backtick));
        check("v1.5", Factual, Some(Signal::Version));
        check("2.3.1", Factual, Some(Signal::Version));
        check("install", Factual, Some(Signal::Command));
        check("configure", Factual, Some(Signal::Command));
        check("enable", Factual, Some(Signal::Command));
        check("syntax", Factual, Some(Signal::Command));
    }

    #[test]
    fn seed_conceptual_signal_examples() {
        use QueryKind::Conceptual;
        check("why", Conceptual, Some(Signal::QuestionWord));
        check("how", Conceptual, Some(Signal::QuestionWord));
        check("explain", Conceptual, Some(Signal::QuestionWord));
        check("what", Conceptual, Some(Signal::QuestionWord));
        check("getting started", Conceptual, Some(Signal::Guide));
        check("overview", Conceptual, Some(Signal::Guide));
        check("background", Conceptual, Some(Signal::Guide));
        check("difference", Conceptual, Some(Signal::Comparison));
        check("compare", Conceptual, Some(Signal::Comparison));
        check("versus", Conceptual, Some(Signal::Comparison));
        check("?", Conceptual, Some(Signal::QuestionMark));
    }

    #[test]
    fn seed_query_examples() {
        // The truncation example and the conceptual example of the design notes (docs/design.md,
        // "Result compression").
        check(
            "getUserById function",
            QueryKind::Factual,
            Some(Signal::CamelCase),
        );
        check(
            "why use JWT authentication?",
            QueryKind::Conceptual,
            Some(Signal::QuestionWord),
        );
        // The impact-measurement and configuration examples: no signal → the factual default,
        // or a command word.
        check(
            "configure authentication",
            QueryKind::Factual,
            Some(Signal::Command),
        );
        check("API reference", QueryKind::Factual, None);
        check("deployment guide", QueryKind::Factual, None);
        check("authentication setup", QueryKind::Factual, None);
        // The design notes' cumulative-impact table labels this query factual, but by its own
        // priority rule ("Conceptual > Factual, first match wins") `how` makes it conceptual.
        check(
            "how to configure authentication",
            QueryKind::Conceptual,
            Some(Signal::QuestionWord),
        );
    }

    #[test]
    fn conceptual_wins_over_factual() {
        check(
            "why does getUserById cache for 60s",
            QueryKind::Conceptual,
            Some(Signal::QuestionWord),
        );
        check(
            "install v1.5?",
            QueryKind::Conceptual,
            Some(Signal::QuestionMark),
        );
        check(
            "difference between parse_json and parseJSON",
            QueryKind::Conceptual,
            Some(Signal::Comparison),
        );
    }

    #[test]
    fn whole_words_and_case() {
        // `however`, `somehow`, `whatever` are not question words; `showcase` is not `how`.
        check("however showcase whatever", QueryKind::Factual, None);
        check("WHY", QueryKind::Conceptual, Some(Signal::QuestionWord));
        check(
            "What's new",
            QueryKind::Conceptual,
            Some(Signal::QuestionWord),
        );
        check(
            "Getting  Started",
            QueryKind::Conceptual,
            Some(Signal::Guide),
        );
        // Sentence case and ALLCAPS are not camelCase; a lone number is not a version.
        check("Authentication HTTP 404", QueryKind::Factual, None);
        check("reinstall", QueryKind::Factual, None);
        check("", QueryKind::Factual, None);
    }

    #[test]
    fn kinds_serialise_lower_case() {
        assert_eq!(
            serde_json::to_string(&QueryKind::Conceptual)
                .ok()
                .as_deref(),
            Some("\"conceptual\"")
        );
        assert_eq!(QueryKind::Factual.as_str(), "factual");
    }
}
