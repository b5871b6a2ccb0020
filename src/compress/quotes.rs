//! `preserveQuotes` (docs/design.md, "The compress pipeline"): direct quotes survive summaries
//! verbatim.
//!
//! A quote is a passage between double quotes (`"…"`, `“…”`) of 3 to 300 characters within
//! one line, or a Markdown block-quote line (`> …`). A summary that leaves a quote out gets it
//! appended (`| quotes: "…" "…"`); the size guard still applies (when the summary with its
//! quotes is not shorter, the message stays verbatim, quotes and all).

use std::sync::OnceLock;

use regex::Regex;

fn quote_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#""[^"\n]{3,300}"|“[^”\n]{3,300}”|(?m)^>[ \t]?[^\n]{3,300}$"#).ok()
    })
    .as_ref()
}

/// The quotes of `text`, in order, each once (with their quote marks).
pub(crate) fn extract(text: &str) -> Vec<String> {
    let Some(re) = quote_re() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(text) {
        let q = m.as_str().trim_end().to_string();
        if !out.contains(&q) {
            out.push(q);
        }
    }
    out
}

/// `body` with the quotes of `original` it does not contain appended.
pub(crate) fn keep(body: String, original: &str) -> String {
    let missing: Vec<String> = extract(original)
        .into_iter()
        .filter(|q| !body.contains(q.as_str()))
        .collect();
    if missing.is_empty() {
        body
    } else if body.is_empty() {
        format!("quotes: {}", missing.join(" "))
    } else {
        format!("{body} | quotes: {}", missing.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_found_and_appended_once() {
        let t = "He said \"ship it on Friday\" and later\n> never deploy on a Friday\nThen “fine”.";
        assert_eq!(
            extract(t),
            vec![
                "\"ship it on Friday\"",
                "> never deploy on a Friday",
                "“fine”"
            ]
        );
        let body = keep("He said \"ship it on Friday\".".into(), t);
        assert_eq!(
            body,
            "He said \"ship it on Friday\". | quotes: > never deploy on a Friday “fine”"
        );
        assert_eq!(keep("x".into(), "no quotes here"), "x");
    }
}
