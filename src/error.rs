//! The one error type of the crate.
//!
//! Every public function returns `Result<_, Error>`. An [`Error`] carries
//! - a [`ErrorKind`], whose stable string [`code`](Error::code) is part of the public API
//!   (mirrored in `index.d.ts`, thrown in JS as `CondenseError.code`, printed by the CLI);
//! - the JSON path of the offending field ([`path`](Error::path)), e.g.
//!   `messages[3].content[1].tool_use_id`, or `""` when the error is not about one field;
//! - a human-readable reason ([`reason`](Error::reason)).
//!
//! Callers branch on the kind or the code, never on the message text.
//!
//! ```
//! use condense::{Error, ErrorKind};
//! let err = Error::new(ErrorKind::InvalidMessage, "messages[0].role", "expected a string");
//! assert_eq!(err.code(), "invalid_message");
//! assert_eq!(err.path(), "messages[0].role");
//! assert_eq!(err.to_string(), "invalid_message at messages[0].role: expected a string");
//! ```

use std::fmt;

/// What went wrong, as a closed set of stable codes.
///
/// The table [`ErrorKind::ALL`] is the single source of the codes: `index.d.ts` and the
/// tests are checked against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is not well-formed JSON (syntax, nesting deeper than the parser's limit).
    InvalidJson,
    /// The input is JSON but not the expected document (e.g. neither a message array nor an
    /// object with a `messages` array).
    InvalidInput,
    /// A message or content block has a wrong type or lacks a required field.
    InvalidMessage,
    /// An option is unknown, has the wrong type, or is out of range.
    InvalidOptions,
    /// The caller-kept state (e.g. the watermark state) is malformed.
    InvalidState,
    /// Messages of both providers' shapes in one array where one format is required.
    MixedFormat,
    /// An input exceeds a documented size limit.
    TooLarge,
    /// Model files are unusable: the ONNX bytes do not parse or are not a MiniLM-family encoder
    /// (wrong inputs/outputs, truncated file), or `tokenizer.json` is not a BERT WordPiece
    /// tokenizer. The path names the file part (`model`, `tokenizer.model.type`, ...).
    InvalidModel,
    /// Serialized index bytes are unusable: not an index, a format version this build cannot
    /// read, or corrupt (checksum mismatch, truncated).
    InvalidIndex,
    /// An index and an embedder that do not belong together: the index was built by another
    /// embedder (kind or model sha256), so its vectors and the query's are not comparable.
    EmbedderMismatch,
    /// A bug: an internal invariant did not hold. Please report it.
    Internal,
}

impl ErrorKind {
    /// Every kind, in declaration order. The codes are stable across releases.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::InvalidJson,
        ErrorKind::InvalidInput,
        ErrorKind::InvalidMessage,
        ErrorKind::InvalidOptions,
        ErrorKind::InvalidState,
        ErrorKind::MixedFormat,
        ErrorKind::TooLarge,
        ErrorKind::InvalidModel,
        ErrorKind::InvalidIndex,
        ErrorKind::EmbedderMismatch,
        ErrorKind::Internal,
    ];

    /// The stable string code of this kind (`snake_case`).
    pub const fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidJson => "invalid_json",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::InvalidMessage => "invalid_message",
            ErrorKind::InvalidOptions => "invalid_options",
            ErrorKind::InvalidState => "invalid_state",
            ErrorKind::MixedFormat => "mixed_format",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::InvalidModel => "invalid_model",
            ErrorKind::InvalidIndex => "invalid_index",
            ErrorKind::EmbedderMismatch => "embedder_mismatch",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The crate's error: a kind, the JSON path of the offending field and a reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    path: String,
    reason: String,
}

impl Error {
    /// Builds an error. `path` is a JSON path such as `messages[2].content[0].id` (or `""`).
    pub fn new(kind: ErrorKind, path: impl Into<String>, reason: impl Into<String>) -> Error {
        Error {
            kind,
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stable string code, e.g. `"invalid_message"`.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The JSON path of the offending field, or `""`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Why the input was refused.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Returns the same error with `prefix` prepended to its path
    /// (`prefix` = `messages`, path `[3].role` → `messages[3].role`).
    pub fn with_path_prefix(mut self, prefix: &str) -> Error {
        if prefix.is_empty() {
            return self;
        }
        self.path = if self.path.is_empty() {
            prefix.to_string()
        } else if self.path.starts_with('[') {
            format!("{prefix}{}", self.path)
        } else {
            format!("{prefix}.{}", self.path)
        };
        self
    }

    /// An [`ErrorKind::InvalidJson`] error from a `serde_json` parse error, naming line and column.
    pub(crate) fn json(path: impl Into<String>, err: &serde_json::Error) -> Error {
        Error::new(ErrorKind::InvalidJson, path, err.to_string())
    }
}

/// Reads a contract type (options, state) from JSON text, naming the exact bad field
/// (`prefix` is the path of the document itself, e.g. `options`):
/// `options.excludeTools[2]: invalid type: integer `3`, expected a string`.
///
/// A key twice in one object, or nesting deeper than [`MAX_DEPTH`](crate::message::MAX_DEPTH),
/// is [`ErrorKind::InvalidJson`] at its path (serde_json would read the first or the last
/// of two keys depending on the type; `JSON.parse` reads the last).
pub fn read_json<T: serde::de::DeserializeOwned>(
    json: &str,
    kind: ErrorKind,
    prefix: &str,
) -> Result<T, Error> {
    crate::message::check_json(json, prefix, crate::message::MAX_DEPTH)?;
    let de = &mut serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(de).map_err(|e| path_error(e, kind, prefix))?;
    Ok(value)
}

/// Like [`read_json`], from a `serde_json::Value`.
pub(crate) fn read_value<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    kind: ErrorKind,
    prefix: &str,
) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(|e| path_error(e, kind, prefix))
}

fn path_error(
    err: serde_path_to_error::Error<serde_json::Error>,
    kind: ErrorKind,
    prefix: &str,
) -> Error {
    let inner = err.path().to_string();
    let path = if inner == "." || inner.is_empty() {
        prefix.to_string()
    } else if inner.starts_with('[') {
        format!("{prefix}{inner}")
    } else {
        join_key(prefix, &inner)
    };
    let kind = match err.inner().classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            ErrorKind::InvalidJson
        }
        _ => kind,
    };
    let reason = err.into_inner().to_string();
    // serde_json appends " at line L column C": keep it only for syntax errors.
    let reason = match reason.rfind(" at line ") {
        Some(at) if kind != ErrorKind::InvalidJson => reason[..at].to_string(),
        _ => reason,
    };
    Error::new(kind, path, reason)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.kind.code(), self.reason)
        } else {
            write!(f, "{} at {}: {}", self.kind.code(), self.path, self.reason)
        }
    }
}

impl std::error::Error for Error {}

/// Appends `.key` or `[index]` to JSON paths.
pub(crate) fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `path[index]`.
pub(crate) fn join_index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in ErrorKind::ALL {
            let code = kind.code();
            assert!(seen.insert(code), "duplicate code {code}");
            assert!(code.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
    }

    #[test]
    fn path_prefix_joins_like_json_paths() {
        let e = Error::new(ErrorKind::InvalidMessage, "[3].role", "x");
        assert_eq!(e.with_path_prefix("messages").path(), "messages[3].role");
        let e = Error::new(ErrorKind::InvalidOptions, "recencyWindow", "x");
        assert_eq!(
            e.with_path_prefix("options").path(),
            "options.recencyWindow"
        );
        let e = Error::new(ErrorKind::InvalidOptions, "", "x");
        assert_eq!(e.with_path_prefix("options").path(), "options");
    }

    #[test]
    fn display_without_path() {
        let e = Error::new(ErrorKind::InvalidJson, "", "eof");
        assert_eq!(e.to_string(), "invalid_json: eof");
    }
}
