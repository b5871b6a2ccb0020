//! Result layouts: the `text` of [`QueryResult`](super::results::QueryResult).
//!
//! - **compact** (default; docs/design.md, "Result compression"): per result a header line
//!   `[rank] source § Header > Subheader (score)` and the content on the next lines; results
//!   separated by a blank line. `source` is the path, or the `docId` when there is no path;
//!   without headers the ` § …` part is left out; the score has 2 decimals.
//!   ```text
//!   [1] docs/auth.md § Configuration > Authentication (0.92)
//!   Authentication is configured in the auth section of config.toml.
//!
//!   [2] billing (0.81)
//!   Invoices are generated monthly.
//!   ```
//! - **verbose** (the long layout retrieval tools print, extended with every field):
//!   ```text
//!   **Result 1** (Score: 0.9234)
//!   File: docs/auth.md
//!   Section: Configuration > Authentication
//!   Document: auth
//!   Chunk: auth#0
//!   Truncated: no
//!
//!   Authentication is configured in the auth section of config.toml.
//!   ```
//!   `File` and `Section` lines are left out when there is no path or no header; results are
//!   separated by a blank line.
//! - **json**: the results array, as compact JSON (`[{"chunkId": …, "truncated": false}]`).
//!
//! Header fields are printed on one line: line breaks and runs of white space inside a path,
//! a header or an id become one space. No results give `""` (compact, verbose) or `[]` (json).

use std::fmt::Write as _;

use super::options::ResultFormat;
use super::results::SearchResult;
use crate::error::{Error, ErrorKind};

/// Lays `results` out in `format` (see the [module docs](self)).
///
/// # Errors
/// [`ErrorKind::Internal`] if JSON serialisation fails (it cannot for these types).
pub fn render(results: &[SearchResult], format: ResultFormat) -> Result<String, Error> {
    match format {
        ResultFormat::Compact => Ok(compact(results)),
        ResultFormat::Verbose => Ok(verbose(results)),
        ResultFormat::Json => json(results),
    }
}

/// The compact layout: `[1] docs/auth.md § Configuration > Authentication (0.92)` + content.
pub fn compact(results: &[SearchResult]) -> String {
    let mut out = String::new();
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let source = match r.path.as_deref().map(one_line) {
            Some(p) if !p.is_empty() => p,
            _ => one_line(&r.doc_id),
        };
        let _ = write!(out, "[{}] {source}", i + 1);
        let section = section(&r.header_path);
        if !section.is_empty() {
            let _ = write!(out, " § {section}");
        }
        let _ = write!(out, " ({:.2})", r.score);
        if !r.content.is_empty() {
            out.push('\n');
            out.push_str(&r.content);
        }
    }
    out
}

/// The verbose layout: every field, score to 4 decimals.
pub fn verbose(results: &[SearchResult]) -> String {
    let mut out = String::new();
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let _ = writeln!(out, "**Result {}** (Score: {:.4})", i + 1, r.score);
        if let Some(p) = r.path.as_deref().map(one_line).filter(|p| !p.is_empty()) {
            let _ = writeln!(out, "File: {p}");
        }
        let section = section(&r.header_path);
        if !section.is_empty() {
            let _ = writeln!(out, "Section: {section}");
        }
        let _ = writeln!(out, "Document: {}", one_line(&r.doc_id));
        let _ = writeln!(out, "Chunk: {}", one_line(&r.chunk_id));
        let _ = writeln!(out, "Truncated: {}", if r.truncated { "yes" } else { "no" });
        if !r.content.is_empty() {
            out.push('\n');
            out.push_str(&r.content);
        }
    }
    out
}

/// The json layout: the results array as compact JSON text.
///
/// # Errors
/// [`ErrorKind::Internal`] if serialisation fails (it cannot for these types).
pub fn json(results: &[SearchResult]) -> Result<String, Error> {
    serde_json::to_string(results).map_err(|e| Error::new(ErrorKind::Internal, "", e.to_string()))
}

/// Headers joined with ` > `, each on one line; empty headers left out.
fn section(headers: &[String]) -> String {
    headers
        .iter()
        .map(|h| one_line(h))
        .filter(|h| !h.is_empty())
        .collect::<Vec<_>>()
        .join(" > ")
}

/// White-space runs (line breaks included) become one space; ends trimmed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(path: Option<&str>, headers: &[&str], score: f32, content: &str) -> SearchResult {
        SearchResult {
            chunk_id: "auth#0".into(),
            doc_id: "auth".into(),
            path: path.map(String::from),
            header_path: headers.iter().map(|h| h.to_string()).collect(),
            score,
            content: content.into(),
            truncated: false,
        }
    }

    const AUTH: &str = "Authentication is configured in the auth section of config.toml.\nUse the `auth_provider` field to specify the authentication backend.\nSupported providers include OAuth2, SAML, and LDAP.";

    #[test]
    fn compact_matches_seed_003() {
        let r = result(
            Some("docs/authentication.md"),
            &["Configuration", "Authentication"],
            0.9234,
            AUTH,
        );
        assert_eq!(
            compact(&[r]),
            format!("[1] docs/authentication.md § Configuration > Authentication (0.92)\n{AUTH}")
        );
        // The migration example: one header.
        let r = result(Some("docs/auth.md"), &["Configuration"], 0.9234, "x");
        assert_eq!(compact(&[r]), "[1] docs/auth.md § Configuration (0.92)\nx");
    }

    #[test]
    fn compact_without_path_or_headers() {
        let a = result(None, &[], 0.815, "one");
        let b = result(Some(""), &["", "Setup"], 1.0, "two");
        let c = result(Some("a\nb.md"), &["Multi\nline"], 0.0, "");
        assert_eq!(
            compact(&[a, b, c]),
            "[1] auth (0.81)\none\n\n[2] auth § Setup (1.00)\ntwo\n\n[3] a b.md § Multi line (0.00)"
        );
        assert_eq!(compact(&[]), "");
    }

    #[test]
    fn verbose_has_every_field() {
        let mut r = result(
            Some("docs/authentication.md"),
            &["Configuration", "Authentication"],
            0.9234,
            AUTH,
        );
        r.truncated = true;
        let plain = result(None, &[], 0.5, "x");
        assert_eq!(
            verbose(&[r, plain]),
            format!(
                "**Result 1** (Score: 0.9234)\nFile: docs/authentication.md\n\
                 Section: Configuration > Authentication\nDocument: auth\nChunk: auth#0\n\
                 Truncated: yes\n\n{AUTH}\n\n\
                 **Result 2** (Score: 0.5000)\nDocument: auth\nChunk: auth#0\nTruncated: no\n\nx"
            )
        );
        assert_eq!(verbose(&[]), "");
    }

    #[test]
    fn json_is_the_results_array() {
        let r = result(Some("docs/a.md"), &["H"], 0.5, "x");
        assert_eq!(
            json(&[r]).ok().as_deref(),
            Some(
                r#"[{"chunkId":"auth#0","docId":"auth","path":"docs/a.md","headerPath":["H"],"score":0.5,"content":"x","truncated":false}]"#
            )
        );
        assert_eq!(json(&[]).ok().as_deref(), Some("[]"));
        assert_eq!(render(&[], ResultFormat::Json).ok().as_deref(), Some("[]"));
    }
}
