//! What a store that keeps an index's rows outside this process needs from the core
//! (`condense-ctx/pg`, over PostgreSQL): documents prepared exactly as [`Index::add`] indexes
//! them (the same chunks, embedding texts and BM25 terms), content hashes that make
//! re-ingesting a document idempotent, and a question's BM25 terms. The lists such a store
//! returns are fused by [`fuse_lists`], the function
//! [`Index::candidates`] uses, and compressed by
//! [`compress_results`](super::results::compress_results).
//!
//! Hashes are SHA-256 in lower-case hex:
//! - a chunk's hash is that of its embedding text (header path and text: what its vector and
//!   its BM25 terms are computed from), so equal hashes mean equal vectors and terms;
//! - a document's hash covers its id, path, title, text and metadata (each field
//!   length-prefixed, so no two documents share an encoding), so an unchanged document is
//!   recognised without chunking or embedding it again.
//!
//! [`Index::add`]: super::index::Index::add
//! [`Index::candidates`]: super::index::Index::candidates

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::analyze::{Analyzer, TermCache};
use super::feedback::expansion_terms;
use super::fuse::{feedback_slots, fuse_lists, Fusion};
use super::index::{
    check_documents, chunks_of, embedding_text, embedding_text_of, Document, IndexOptions,
};
use super::options::QueryOptions;
use super::results::check_query;
use crate::embed::EmbedderKind;
use crate::{Error, ErrorKind};

/// One chunk as a store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedChunk {
    /// `{docId}#{ordinal}`.
    pub chunk_id: String,
    /// Position within the document, from 0.
    pub ordinal: u32,
    /// Markdown headers above the chunk, outermost first.
    pub header_path: Vec<String>,
    /// The chunk's text.
    pub content: String,
    /// What the embedder embeds (and BM25 indexes): header path, then text.
    pub embedding_text: String,
    /// SHA-256 (hex) of `embedding_text`.
    pub hash: String,
    /// The chunk's distinct BM25 terms, sorted.
    pub terms: Vec<String>,
    /// Term frequency of each of `terms`.
    pub tfs: Vec<u32>,
    /// Number of terms, repetitions included (BM25's document length).
    pub length: u32,
}

/// One document as a store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedDocument {
    /// The document's id.
    pub id: String,
    /// Its path, if any.
    pub path: Option<String>,
    /// Its title, if any.
    pub title: Option<String>,
    /// Its metadata, as given.
    pub metadata: Option<serde_json::Value>,
    /// SHA-256 (hex) of id, path, title, text and metadata.
    pub hash: String,
    /// What results show as the chunks' `path`: the path, or else the title.
    pub chunk_path: Option<String>,
    /// Its chunks, in order.
    pub chunks: Vec<PreparedChunk>,
}

/// Prepares a batch of documents: checked as [`Index::add`](super::index::Index::add) checks
/// them (ids non-empty and distinct within the batch, texts within the size limit), chunked,
/// analysed and hashed. Whether an id is already stored is the store's business (a store
/// replaces a changed document and skips an unchanged one).
///
/// # Errors
/// [`ErrorKind::InvalidInput`] at `documents[i].id`,
/// [`ErrorKind::TooLarge`] at `documents[i].text`.
pub fn prepare_documents(
    documents: &[Document],
    options: &IndexOptions,
) -> Result<Vec<PreparedDocument>, Error> {
    check_documents(documents, &|_| false)?;
    let analyzer = Analyzer::new(options.analyzer);
    // Each distinct word analysed once for the whole batch (the same terms: TermCache).
    let mut cache = TermCache::default();
    Ok(documents
        .iter()
        .map(|d| {
            let chunks = chunks_of(d, &options.chunk);
            let chunk_path = chunks.first().and_then(|c| c.path.clone());
            let chunks = chunks
                .into_iter()
                .map(|chunk| {
                    let text = embedding_text(&chunk);
                    let mut all = analyzer.terms_cached(&text, &mut cache);
                    let length = u32::try_from(all.len()).unwrap_or(u32::MAX);
                    all.sort_unstable();
                    let mut terms: Vec<String> = Vec::new();
                    let mut tfs: Vec<u32> = Vec::new();
                    for t in all {
                        match (terms.last(), tfs.last_mut()) {
                            (Some(last), Some(tf)) if *last == t => *tf += 1,
                            _ => {
                                terms.push(t);
                                tfs.push(1);
                            }
                        }
                    }
                    PreparedChunk {
                        chunk_id: chunk.id,
                        ordinal: chunk.ordinal,
                        header_path: chunk.header_path,
                        content: chunk.text,
                        hash: hex_sha256(&[text.as_bytes()]),
                        embedding_text: text,
                        terms,
                        tfs,
                        length,
                    }
                })
                .collect();
            PreparedDocument {
                id: d.id.clone(),
                path: d.path.clone(),
                title: d.title.clone(),
                metadata: d.metadata.clone(),
                hash: document_hash(d),
                chunk_path,
                chunks,
            }
        })
        .collect())
}

/// The BM25 terms of a question, as an index with `options` analyses it (repetitions kept:
/// BM25 counts a repeated query term once per repetition).
pub fn query_terms(question: &str, options: &IndexOptions) -> Vec<String> {
    Analyzer::new(options.analyzer).terms(question)
}

/// What a store fetches for a question: its BM25 terms, how many hits of each list to fuse,
/// and whether each list counts at all (a weight of 0 leaves it out). JSON keys camelCase.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryPlan {
    /// The question's BM25 terms ([`query_terms`]).
    pub terms: Vec<String>,
    /// Hits of each list to fetch and fuse (`options.candidates`).
    pub depth: usize,
    /// Whether the lexical (BM25) list is fused.
    pub lexical: bool,
    /// Whether the dense (vector) list is fused.
    pub dense: bool,
    /// Expansion terms of pseudo-relevance feedback (0: no feedback). With feedback the store
    /// asks [`feedback_rows`] which rows to learn from, [`expansion_query`] for the weighted
    /// terms of their texts, and fetches a third, expanded BM25 list for [`fuse_rows`].
    pub feedback_terms: usize,
}

/// Checks a question and its query options and plans what a store fetches for them, with
/// the fusion weights `query` uses for an index of `kind`'s vectors.
///
/// # Errors
/// What `query` refuses for the question and options (`invalid_input`, `invalid_options`).
pub fn plan_query(
    question: &str,
    options: &QueryOptions,
    index_options: &IndexOptions,
    kind: EmbedderKind,
) -> Result<QueryPlan, Error> {
    check_query(question, options)?;
    let fusion = Fusion::new(options, kind);
    Ok(QueryPlan {
        terms: query_terms(question, index_options),
        depth: options.candidates,
        lexical: fusion.lexical_weight > 0.0,
        dense: fusion.dense_weight > 0.0,
        feedback_terms: fusion.feedback_terms,
    })
}

/// A store's rows as the fusion's lists, checked: `(lexical, dense, expanded)`.
#[allow(clippy::type_complexity)]
fn lists_of_rows(
    lexical: (&[u32], &[f32]),
    dense: (&[u32], &[f32]),
    expanded: (&[u32], &[f32]),
    groups: &[u32],
) -> Result<[Vec<(u32, f32)>; 3], Error> {
    let bad = |path: &str, reason: &str| Error::new(ErrorKind::InvalidInput, path, reason);
    if lexical.0.len() != lexical.1.len() {
        return Err(bad("lexicalScores", "expected one score per lexical row"));
    }
    if dense.0.len() != dense.1.len() {
        return Err(bad("denseCosines", "expected one cosine per dense row"));
    }
    if expanded.0.len() != expanded.1.len() {
        return Err(bad("expandedScores", "expected one score per expanded row"));
    }
    let n = groups.len();
    if lexical
        .0
        .iter()
        .chain(dense.0)
        .chain(expanded.0)
        .any(|&r| r as usize >= n)
    {
        return Err(bad("groups", "every row needs its group"));
    }
    let zip = |(rows, scores): (&[u32], &[f32])| -> Vec<(u32, f32)> {
        rows.iter().copied().zip(scores.iter().copied()).collect()
    };
    Ok([zip(lexical), zip(dense), zip(expanded)])
}

/// The rows pseudo-relevance feedback learns from (the first fusion's top
/// [`FEEDBACK_CHUNKS`](super::feedback::FEEDBACK_CHUNKS), best first), for the lexical and
/// dense rows a store fetched (as [`fuse_rows`] takes them); empty when `options` give no
/// feedback.
///
/// # Errors
/// As [`fuse_rows`].
pub fn feedback_rows(
    lexical_rows: &[u32],
    lexical_scores: &[f32],
    dense_rows: &[u32],
    dense_cosines: &[f32],
    groups: &[u32],
    options: &QueryOptions,
    kind: EmbedderKind,
) -> Result<Vec<u32>, Error> {
    let [lexical, dense, _] = lists_of_rows(
        (lexical_rows, lexical_scores),
        (dense_rows, dense_cosines),
        (&[], &[]),
        groups,
    )?;
    let group = |row: u32| groups.get(row as usize).copied().unwrap_or(u32::MAX);
    Ok(feedback_slots(
        &lexical,
        &dense,
        &group,
        &Fusion::new(options, kind),
    ))
}

/// The expanded query of pseudo-relevance feedback: the `terms` most probable terms of the
/// relevance model of `chunks` (each a chunk's `(headerPath, content)`, analysed as an index
/// with `options` indexes it: [`expansion_terms`]), with their weights.
pub fn expansion_query(
    chunks: &[(Vec<String>, String)],
    options: &IndexOptions,
    terms: usize,
) -> Vec<(String, f32)> {
    let analyzer = Analyzer::new(options.analyzer);
    let feedback: Vec<Vec<String>> = chunks
        .iter()
        .map(|(header_path, content)| analyzer.terms(&embedding_text_of(header_path, content)))
        .collect();
    expansion_terms(&feedback, terms)
}

/// [`fuse_lists`] over the lists a store returns as parallel arrays: lexical rows with their
/// BM25 scores (best first; `ideal` the question's ideal BM25 score), dense rows with their
/// cosines (best first), the expanded BM25 list of pseudo-relevance feedback (empty without
/// it) and each row's document `groups[row]`. Best first, cut at the compression pool of
/// `options.topN`, with calibrated scores.
///
/// # Errors
/// `invalid_input` at `lexicalScores`, `denseCosines` or `expandedScores` when a list's
/// arrays differ in length, at `groups` when a row has no group.
#[allow(clippy::too_many_arguments)]
pub fn fuse_rows(
    lexical_rows: &[u32],
    lexical_scores: &[f32],
    ideal: f32,
    dense_rows: &[u32],
    dense_cosines: &[f32],
    expanded_rows: &[u32],
    expanded_scores: &[f32],
    groups: &[u32],
    options: &QueryOptions,
    kind: EmbedderKind,
) -> Result<Vec<(u32, f32)>, Error> {
    let [lexical, dense, expanded] = lists_of_rows(
        (lexical_rows, lexical_scores),
        (dense_rows, dense_cosines),
        (expanded_rows, expanded_scores),
        groups,
    )?;
    let group = |row: u32| groups.get(row as usize).copied().unwrap_or(u32::MAX);
    let fusion = Fusion::new(options, kind);
    Ok(fuse_lists(
        &lexical, ideal, &dense, &expanded, &group, &fusion,
    ))
}

/// `options` with every default filled in, as JSON that [`IndexOptions::from_json`] reads
/// back to the same value (`{chunk: {minChars, maxChars}, bm25: {k1, b}}`): what a store
/// records so that a later release with other defaults still chunks and scores its rows alike.
pub fn resolved_options(options: &IndexOptions) -> serde_json::Value {
    // The f32 parameters as their shortest decimal (0.9, not 0.8999999761581421): the same
    // f32 when read back, and the number a person wrote.
    let short = |x: f32| x.to_string().parse::<f64>().unwrap_or(f64::from(x));
    serde_json::json!({
        "chunk": {"minChars": options.chunk.min_chars, "maxChars": options.chunk.max_chars},
        "bm25": {"k1": short(options.bm25.k1), "b": short(options.bm25.b)},
    })
}

fn document_hash(d: &Document) -> String {
    let metadata = d.metadata.as_ref().map(|m| m.to_string());
    let fields: [Option<&[u8]>; 5] = [
        Some(d.id.as_bytes()),
        d.path.as_deref().map(str::as_bytes),
        d.title.as_deref().map(str::as_bytes),
        Some(d.text.as_bytes()),
        metadata.as_deref().map(str::as_bytes),
    ];
    // Before each field a tag byte (present or not) and its length.
    let prefixes: Vec<[u8; 9]> = fields
        .iter()
        .map(|f| {
            let mut prefix = [0u8; 9];
            if let Some(v) = f {
                prefix[0] = 1;
                prefix[1..].copy_from_slice(&(v.len() as u64).to_le_bytes());
            }
            prefix
        })
        .collect();
    let mut parts: Vec<&[u8]> = vec![b"condense-document-v1"];
    for (prefix, value) in prefixes.iter().zip(fields) {
        parts.push(prefix);
        if let Some(v) = value {
            parts.push(v);
        }
    }
    hex_sha256(&parts)
}

fn hex_sha256(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::Embedder;
    use crate::retrieve::index::Index;

    fn doc(id: &str, text: &str) -> Document {
        Document::new(id, text)
    }

    #[test]
    fn chunks_and_terms_are_those_the_index_stores() {
        let text = "# Setup\n\nInstall the package with npm. The running servers restart.\n\n## Keys\n\nRotate the API keys every quarter; the keys live in the vault.";
        let docs = vec![
            Document {
                title: Some("Guide".into()),
                path: Some("docs/guide.md".into()),
                ..doc("g", text)
            },
            doc("p", "Plain text about keys and keys."),
        ];
        let options = IndexOptions::default();
        let prepared = prepare_documents(&docs, &options).unwrap();
        let embedder = Embedder::lexical();
        let mut index = Index::new(&embedder, options).unwrap();
        index.add(&docs, &embedder, &mut |_| {}).unwrap();
        for (p, d) in prepared.iter().zip(&docs) {
            let info = index.get(&d.id).unwrap();
            assert_eq!(p.chunks.len(), info.chunks.len());
            for (pc, c) in p.chunks.iter().zip(&info.chunks) {
                assert_eq!(pc.chunk_id, c.id);
                assert_eq!(pc.content, c.text);
                assert_eq!(pc.header_path, c.header_path);
                assert_eq!(p.chunk_path, c.path);
                // The terms, with their counts, are the analyser's terms of the embedding text.
                let terms = Analyzer::new(options.analyzer).terms(&pc.embedding_text);
                assert_eq!(pc.length as usize, terms.len());
                for (t, tf) in pc.terms.iter().zip(&pc.tfs) {
                    assert_eq!(terms.iter().filter(|x| *x == t).count(), *tf as usize);
                }
                assert!(pc.terms.windows(2).all(|w| w[0] < w[1]));
            }
        }
        let plain = &prepared[1].chunks[0];
        assert_eq!(plain.terms, ["key", "plain", "text"]);
        assert_eq!(plain.tfs, [2, 1, 1]);
        assert_eq!(plain.length, 4);
    }

    #[test]
    fn hashes_follow_content() {
        let options = IndexOptions::default();
        let a = prepare_documents(&[doc("a", "Same words here.")], &options).unwrap();
        let b = prepare_documents(&[doc("b", "Same words here.")], &options).unwrap();
        // Another id: another document, the same chunk content.
        assert_ne!(a[0].hash, b[0].hash);
        assert_eq!(a[0].chunks[0].hash, b[0].chunks[0].hash);
        assert_eq!(a[0].chunks[0].hash.len(), 64);
        let again = prepare_documents(&[doc("a", "Same words here.")], &options).unwrap();
        assert_eq!(a, again);
        // Fields do not run into each other: title "ab" + text "c" differs from "a" + "bc".
        let t1 = Document {
            title: Some("ab".into()),
            ..doc("x", "c")
        };
        let t2 = Document {
            title: Some("a".into()),
            ..doc("x", "bc")
        };
        assert_ne!(document_hash(&t1), document_hash(&t2));
        let m = Document {
            metadata: Some(serde_json::json!({"k": 1})),
            ..doc("x", "c")
        };
        assert_ne!(document_hash(&m), document_hash(&doc("x", "c")));
    }

    #[test]
    fn bad_documents_are_refused_with_their_path() {
        let options = IndexOptions::default();
        let err = prepare_documents(&[doc("a", "x"), doc("a", "y")], &options).unwrap_err();
        assert_eq!(err.path(), "documents[1].id");
        let err = prepare_documents(&[doc("", "x")], &options).unwrap_err();
        assert_eq!(err.path(), "documents[0].id");
    }

    #[test]
    fn resolved_options_read_back_to_the_same_value() {
        let options =
            IndexOptions::from_json(r#"{"chunk": {"maxChars": 900}, "bm25": {"k1": 1.2}}"#)
                .unwrap();
        let resolved = resolved_options(&options);
        assert_eq!(resolved["bm25"]["k1"], serde_json::json!(1.2));
        assert_eq!(resolved["bm25"]["b"], serde_json::json!(0.4));
        let json = resolved.to_string();
        assert_eq!(IndexOptions::from_json(&json).unwrap(), options);
        assert_eq!(
            query_terms("The keys, rotating keys", &options),
            ["key", "rotat", "key"]
        );
    }

    #[test]
    fn fuse_rows_checks_its_arrays_then_fuses_as_fuse_lists() {
        let options = QueryOptions::default();
        let kind = EmbedderKind::Lexical;
        let path = |r: Result<Vec<(u32, f32)>, Error>| r.map_err(|e| e.path().to_string());
        let fuse = |lr: &[u32], ls: &[f32], dr: &[u32], dc: &[f32], g: &[u32]| {
            path(fuse_rows(lr, ls, 2.0, dr, dc, &[], &[], g, &options, kind))
        };
        assert_eq!(
            path(fuse_rows(
                &[],
                &[],
                0.0,
                &[],
                &[],
                &[0],
                &[],
                &[0],
                &options,
                kind
            )),
            Err("expandedScores".into())
        );
        assert_eq!(
            fuse(&[0, 1], &[1.0], &[], &[], &[0, 1]),
            Err("lexicalScores".into())
        );
        assert_eq!(fuse(&[], &[], &[0], &[], &[0]), Err("denseCosines".into()));
        assert_eq!(
            fuse(&[0, 2], &[2.0, 1.0], &[], &[], &[0, 1]),
            Err("groups".into())
        );
        let fused = fuse(
            &[0, 1, 2],
            &[2.0, 1.0, 0.5],
            &[2, 0],
            &[0.9, 0.5],
            &[0, 1, 1],
        );
        let groups = [0u32, 1, 1];
        let want = fuse_lists(
            &[(0, 2.0), (1, 1.0), (2, 0.5)],
            2.0,
            &[(2, 0.9), (0, 0.5)],
            &[],
            &|r| groups[r as usize],
            &Fusion::new(&options, kind),
        );
        assert!(!want.is_empty());
        assert_eq!(fused, Ok(want));
        // A third, expanded list is fused as fuse_lists fuses it: row 1 moves up.
        let fused = path(fuse_rows(
            &[0, 1, 2],
            &[2.0, 1.0, 0.5],
            2.0,
            &[2, 0],
            &[0.9, 0.5],
            &[1],
            &[3.0],
            &groups,
            &options,
            kind,
        ));
        let want = fuse_lists(
            &[(0, 2.0), (1, 1.0), (2, 0.5)],
            2.0,
            &[(2, 0.9), (0, 0.5)],
            &[(1, 3.0)],
            &|r| groups[r as usize],
            &Fusion::new(&options, kind),
        );
        assert_eq!(fused, Ok(want));
    }

    #[test]
    fn feedback_rows_and_expansion_query_are_the_in_memory_feedback() {
        let options = QueryOptions::default();
        let kind = EmbedderKind::MiniLm;
        let groups = [0u32, 1, 2];
        // The first fusion's order: rows 2, 0, 1 (2 is first in both lists).
        let rows = feedback_rows(
            &[2, 0],
            &[3.0, 1.0],
            &[2, 1, 0],
            &[0.9, 0.5, 0.4],
            &groups,
            &options,
            kind,
        );
        let group = |r: u32| groups[r as usize];
        let want = feedback_slots(
            &[(2, 3.0), (0, 1.0)],
            &[(2, 0.9), (1, 0.5), (0, 0.4)],
            &group,
            &Fusion::new(&options, kind),
        );
        assert_eq!(rows, Ok(want));
        assert_eq!(rows.ok().and_then(|r| r.first().copied()), Some(2));
        let off = QueryOptions {
            feedback: false,
            ..QueryOptions::default()
        };
        assert_eq!(
            feedback_rows(&[0], &[1.0], &[], &[], &[0], &off, kind),
            Ok(Vec::new())
        );
        assert_eq!(
            feedback_rows(&[0], &[], &[], &[], &[0], &options, kind)
                .map_err(|e| e.path().to_string()),
            Err("lexicalScores".into())
        );
        // The terms of "Setup > Install" and its text, analysed (stemmed, stop words out).
        let q = expansion_query(
            &[(
                vec!["Setup".into()],
                "Installing the installer installs.".into(),
            )],
            &IndexOptions::default(),
            2,
        );
        assert_eq!(
            q.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
            ["instal", "setup"]
        );
        assert!((q[0].1 - 0.75).abs() < 1e-6, "{q:?}");
    }

    #[test]
    fn plan_query_checks_the_question_and_plans_both_lists() {
        let (options, index_options) = (QueryOptions::default(), IndexOptions::default());
        let err = plan_query("  ", &options, &index_options, EmbedderKind::MiniLm);
        assert_eq!(
            err.map_err(|e| e.path().to_string()),
            Err("question".into())
        );
        let plan = plan_query(
            "rotating keys",
            &options,
            &index_options,
            EmbedderKind::MiniLm,
        )
        .expect("plan");
        assert_eq!(plan.terms, query_terms("rotating keys", &index_options));
        assert_eq!(plan.depth, options.candidates);
        assert!(plan.lexical && plan.dense, "{plan:?}");
        let json = serde_json::to_value(&plan).expect("json");
        let keys: Vec<&str> = json
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["terms", "depth", "lexical", "dense", "feedbackTerms"]
        );
        assert_eq!(plan.feedback_terms, 10);
        // No feedback when it is off, with RRF, or without the lexical side.
        for json in [
            r#"{"feedback": false}"#,
            r#"{"fusion": "rrf"}"#,
            r#"{"lexicalWeight": 0}"#,
        ] {
            let o = QueryOptions::from_json(json).expect("options");
            let plan = plan_query("rotating keys", &o, &index_options, EmbedderKind::MiniLm)
                .expect("plan");
            assert_eq!(plan.feedback_terms, 0, "{json}");
        }
    }
}
