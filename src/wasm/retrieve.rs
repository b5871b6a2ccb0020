//! The wasm classes of retrieval: `Embedder` and `Index`, and `compressResults`.
//!
//! Documents, options and candidates cross as JSON text (`JSON.stringify` in the engine), so
//! errors name exact paths (`documents[3].id`) as they do natively. Progress callbacks receive
//! `(phase, done, total)`.

use std::rc::Rc;

use js_sys::{Array, Float32Array, Function, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{js_error, optional_json, read_input, read_or_default, to_js};
use crate::embed::{Embedder, EmbedderIdentity, LoadInfo, Vector, DIMS};
use crate::error::{read_json, Error, ErrorKind};
use crate::retrieve::index::{Document, Index, IndexOptions};
use crate::retrieve::options::QueryOptions;
use crate::retrieve::results::{compress_results, Candidate};

/// An embedder shared by the indexes that use it.
#[wasm_bindgen(js_name = Embedder)]
pub struct WasmEmbedder {
    inner: Rc<Embedder>,
}

#[wasm_bindgen(js_class = Embedder)]
impl WasmEmbedder {
    /// The lexical fallback embedder (no model files).
    pub fn lexical() -> WasmEmbedder {
        WasmEmbedder {
            inner: Rc::new(Embedder::lexical()),
        }
    }

    /// Loads a MiniLM-family model from the bytes of `model.onnx` and `tokenizer.json`.
    /// `options`: `{maxTokens, batchSize}` (both optional; defaults 256 and 32).
    #[cfg(feature = "embed")]
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        onnx: &[u8],
        tokenizer: &[u8],
        options: JsValue,
    ) -> Result<WasmEmbedder, JsValue> {
        let options = read_or_default(&options, "options", crate::embed::EmbedOptions::from_json)?;
        let inner = Embedder::from_bytes_with(onnx, tokenizer, options).map_err(js_error)?;
        Ok(WasmEmbedder {
            inner: Rc::new(inner),
        })
    }

    /// An embedder whose vectors come from a JS function: `embed(texts: string[])` returns a
    /// `Float32Array` of `texts.length × 384` values (row by row, unit-length rows). `identity`
    /// (`{kind, modelSha256, dims, maxTokens, version}`) says what makes them; `loadInfo` is
    /// `{castsFolded, nodesRepaired, integerMatmuls, loadMs}` or null. `loadEmbedder()` builds MiniLM this way: the model runs
    /// in its own wasm module (`condense_embed_bg.wasm`).
    pub fn external(
        identity: JsValue,
        load_info: JsValue,
        embed: Function,
    ) -> Result<WasmEmbedder, JsValue> {
        let identity: EmbedderIdentity = match optional_json(&identity, "identity")? {
            Some(json) => {
                read_json(&json, ErrorKind::InvalidOptions, "identity").map_err(js_error)?
            }
            None => {
                return Err(js_error(Error::new(
                    ErrorKind::InvalidOptions,
                    "identity",
                    "expected the embedder's identity",
                )))
            }
        };
        if identity.dims != DIMS {
            return Err(js_error(Error::new(
                ErrorKind::InvalidOptions,
                "identity.dims",
                format!("must be {DIMS}"),
            )));
        }
        let load = match optional_json(&load_info, "loadInfo")? {
            None => None,
            Some(json) => Some(
                read_json::<LoadInfo>(&json, ErrorKind::InvalidOptions, "loadInfo")
                    .map_err(js_error)?,
            ),
        };
        let call = move |texts: &[&str]| -> Result<Vec<Vector>, Error> {
            let failed = |reason: String| Error::new(ErrorKind::InvalidModel, "embedder", reason);
            let array: Array = texts.iter().map(|t| JsValue::from_str(t)).collect();
            let out = embed.call1(&JsValue::NULL, &array).map_err(|e| {
                let field = |name: &str| {
                    js_sys::Reflect::get(&e, &name.into())
                        .ok()
                        .and_then(|m| m.as_string())
                };
                // A CondenseError the function threw keeps its code (the engine's module
                // trapped: `internal`; a model used after that: `invalid_state`).
                let kind = field("code")
                    .and_then(|code| ErrorKind::ALL.into_iter().find(|k| k.code() == code));
                match kind {
                    Some(kind) => Error::new(
                        kind,
                        "embedder",
                        field("reason").unwrap_or_else(|| "the embed function threw".into()),
                    ),
                    None => failed(
                        field("message").unwrap_or_else(|| "the embed function threw".into()),
                    ),
                }
            })?;
            let flat = out
                .dyn_into::<Float32Array>()
                .map_err(|_| failed("the embed function must return a Float32Array".into()))?;
            let values = flat.to_vec();
            if values.len() != texts.len() * DIMS {
                return Err(failed(format!(
                    "the embed function returned {} values for {} texts (expected {} each)",
                    values.len(),
                    texts.len(),
                    DIMS
                )));
            }
            Ok(values
                .chunks_exact(DIMS)
                .map(|row| {
                    let mut v = [0f32; DIMS];
                    v.copy_from_slice(row);
                    v
                })
                .collect())
        };
        Ok(WasmEmbedder {
            inner: Rc::new(Embedder::external(identity, load, Box::new(call))),
        })
    }

    /// Whether this build carries the model engine (`fromBytes`); false in a build without the
    /// `embed` feature.
    #[wasm_bindgen(js_name = hasModelEngine)]
    pub fn has_model_engine() -> bool {
        cfg!(feature = "embed")
    }

    /// `{castsFolded, nodesRepaired, integerMatmuls, loadMs}` for a model embedder, `null` for the lexical one.
    #[wasm_bindgen(js_name = loadInfo)]
    pub fn load_info(&self) -> Result<JsValue, JsValue> {
        match self.inner.load_info() {
            None => Ok(JsValue::NULL),
            Some(info) => to_js(&info),
        }
    }

    /// What built this embedder's vectors: `{kind, modelSha256, dims, maxTokens, version}`.
    pub fn identity(&self) -> Result<JsValue, JsValue> {
        to_js(self.inner.identity())
    }

    /// One `Float32Array` (384 values, unit length) per text, in input order. Lone UTF-16
    /// surrogates (invalid UTF-16) become U+FFFD, as `TextEncoder` does.
    pub fn embed(&self, texts: JsValue) -> Result<Array, JsValue> {
        if !Array::is_array(&texts) {
            return Err(js_error(Error::new(
                ErrorKind::InvalidInput,
                "texts",
                "expected an array of strings",
            )));
        }
        let texts: Vec<String> = Array::from(&texts)
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_string().ok_or_else(|| {
                    js_error(Error::new(
                        ErrorKind::InvalidInput,
                        format!("texts[{i}]"),
                        "expected a string",
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = self.inner.embed(&refs).map_err(js_error)?;
        let out = Array::new();
        for v in &vectors {
            out.push(&Float32Array::from(v.as_slice()));
        }
        Ok(out)
    }
}

/// An in-memory hybrid index (BM25 + vectors) over chunked documents.
#[wasm_bindgen(js_name = Index)]
pub struct WasmIndex {
    inner: Index,
    embedder: Rc<Embedder>,
}

fn progress_fn(callback: &Option<Function>) -> impl FnMut(crate::retrieve::index::Progress) + '_ {
    move |p| {
        if let Some(f) = callback {
            let _ = f.call3(
                &JsValue::NULL,
                &p.phase.into(),
                &(p.done as f64).into(),
                &(p.total as f64).into(),
            );
        }
    }
}

#[wasm_bindgen(js_class = Index)]
impl WasmIndex {
    /// An empty index for `embedder`'s vectors. `options`: `{chunk: {minChars, maxChars},
    /// bm25: {k1, b}}` (all optional).
    pub fn create(embedder: &WasmEmbedder, options: JsValue) -> Result<WasmIndex, JsValue> {
        let options = read_index_options(&options)?;
        let inner = Index::new(&embedder.inner, options).map_err(js_error)?;
        Ok(WasmIndex {
            inner,
            embedder: embedder.inner.clone(),
        })
    }

    /// Reads bytes from `serialize()`; `embedder` must be the one the index was built with.
    pub fn deserialize(bytes: &[u8], embedder: &WasmEmbedder) -> Result<WasmIndex, JsValue> {
        let inner = Index::deserialize(bytes).map_err(js_error)?;
        if inner.identity() != embedder.inner.identity() {
            return Err(js_error(Error::new(
                ErrorKind::EmbedderMismatch,
                "embedder",
                "the index was built by another embedder (see index identity)",
            )));
        }
        Ok(WasmIndex {
            inner,
            embedder: embedder.inner.clone(),
        })
    }

    /// Adds documents `[{id, path?, title?, text, metadata?}]`; returns how many.
    pub fn add(
        &mut self,
        documents: JsValue,
        on_progress: Option<Function>,
    ) -> Result<u32, JsValue> {
        let docs: Vec<Document> = read_input(&documents, "documents")?;
        let mut progress = progress_fn(&on_progress);
        let n = self
            .inner
            .add(&docs, &self.embedder, &mut progress)
            .map_err(js_error)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Removes documents by id; returns how many were removed.
    pub fn remove(&mut self, ids: JsValue) -> Result<u32, JsValue> {
        let ids: Vec<String> = read_input(&ids, "ids")?;
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let n = self.inner.remove(&refs).map_err(js_error)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// A stored document with its chunks, or `undefined`.
    pub fn get(&self, id: &str) -> Result<JsValue, JsValue> {
        match self.inner.get(id) {
            Some(doc) => to_js(&doc),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Number of documents.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }

    /// Number of chunks.
    #[wasm_bindgen(getter)]
    pub fn chunks(&self) -> u32 {
        u32::try_from(self.inner.chunks()).unwrap_or(u32::MAX)
    }

    /// The embedder identity recorded in the index.
    pub fn identity(&self) -> Result<JsValue, JsValue> {
        to_js(self.inner.identity())
    }

    /// The index as bytes.
    pub fn serialize(&self) -> Result<Uint8Array, JsValue> {
        let bytes = self.inner.serialize().map_err(js_error)?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// Ranks and compresses: `{results, text, stats, queryKind}`.
    pub fn query(&self, question: &str, options: JsValue) -> Result<JsValue, JsValue> {
        let options = read_query_options(&options)?;
        let out = self
            .inner
            .query(question, &options, &self.embedder)
            .map_err(js_error)?;
        to_js(&out)
    }
}

fn read_query_options(options: &JsValue) -> Result<QueryOptions, JsValue> {
    read_or_default(options, "options", QueryOptions::from_json)
}

/// Result compression over candidates from any engine: `[{chunkId|id, docId, path?,
/// headerPath?, score, content|text, embedding?}]`, best first.
#[wasm_bindgen(js_name = compressResults)]
pub fn compress_results_js(
    candidates: JsValue,
    question: &str,
    options: JsValue,
    embedder: &WasmEmbedder,
) -> Result<JsValue, JsValue> {
    let options = read_query_options(&options)?;
    let candidates: Vec<Candidate> = read_input(&candidates, "candidates")?;
    let out =
        compress_results(candidates, question, &options, &embedder.inner).map_err(js_error)?;
    to_js(&out)
}

impl WasmEmbedder {
    /// The embedder, for the other bindings (`compress` with a query).
    pub(crate) fn embedder(&self) -> &Embedder {
        &self.inner
    }
}

// ------------------------------------------------------------------ external stores
// What `condense-ctx/pg` calls: the index's own chunking, analysis and fusion over rows kept in
// PostgreSQL (src/retrieve/store.rs).

fn read_index_options(options: &JsValue) -> Result<IndexOptions, JsValue> {
    read_or_default(options, "options", IndexOptions::from_json)
}

/// `options` (`{chunk?, bm25?}`, as `Index.create` takes them) with every default filled in.
#[wasm_bindgen(js_name = resolveIndexOptions)]
pub fn resolve_index_options(options: JsValue) -> Result<JsValue, JsValue> {
    let options = read_index_options(&options)?;
    to_js(&crate::retrieve::store::resolved_options(&options))
}

/// Documents `[{id, path?, title?, text, metadata?}]` chunked, analysed and hashed as an
/// `Index` with `options` would index them (`PreparedDocument`s, camelCase).
#[wasm_bindgen(js_name = prepareDocuments)]
pub fn prepare_documents_js(documents: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let options = read_index_options(&options)?;
    let docs: Vec<Document> = read_input(&documents, "documents")?;
    let prepared = crate::retrieve::store::prepare_documents(&docs, &options).map_err(js_error)?;
    to_js(&prepared)
}

/// Checks a question and query options and says what to fetch: `{terms, depth, lexical,
/// dense, feedbackTerms}` (the question's BM25 terms, how many hits of each list to fuse,
/// whether each list has weight, and the expansion terms of pseudo-relevance feedback, 0 for
/// none).
#[wasm_bindgen(js_name = planQuery)]
pub fn plan_query(
    question: &str,
    options: JsValue,
    index_options: JsValue,
    embedder: &WasmEmbedder,
) -> Result<JsValue, JsValue> {
    let options = read_query_options(&options)?;
    let index_options = read_index_options(&index_options)?;
    let kind = embedder.inner.identity().kind;
    to_js(
        &crate::retrieve::store::plan_query(question, &options, &index_options, kind)
            .map_err(js_error)?,
    )
}

/// Fuses a lexical list (rows and BM25 scores, best first; `ideal` the question's ideal BM25
/// score), a dense list (rows and cosines, best first) and the expanded BM25 list of
/// pseudo-relevance feedback (rows and scores, best first; empty without feedback) as `query`
/// does; `groups[row]` is each row's document. Returns `{rows: Uint32Array, scores:
/// Float32Array}`, best first, cut at the compression pool of `options.topN`, with calibrated
/// scores.
#[wasm_bindgen(js_name = fuseLists)]
#[allow(clippy::too_many_arguments)]
pub fn fuse_lists_js(
    lexical_rows: &[u32],
    lexical_scores: &[f32],
    ideal: f32,
    dense_rows: &[u32],
    dense_cosines: &[f32],
    expanded_rows: &[u32],
    expanded_scores: &[f32],
    groups: &[u32],
    options: JsValue,
    embedder: &WasmEmbedder,
) -> Result<JsValue, JsValue> {
    let options = read_query_options(&options)?;
    let kind = embedder.inner.identity().kind;
    let fused = crate::retrieve::store::fuse_rows(
        lexical_rows,
        lexical_scores,
        ideal,
        dense_rows,
        dense_cosines,
        expanded_rows,
        expanded_scores,
        groups,
        &options,
        kind,
    )
    .map_err(js_error)?;
    let rows: Vec<u32> = fused.iter().map(|f| f.0).collect();
    let scores: Vec<f32> = fused.iter().map(|f| f.1).collect();
    let out = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&out, &k.into(), v);
    set("rows", &js_sys::Uint32Array::from(rows.as_slice()).into())?;
    set("scores", &Float32Array::from(scores.as_slice()).into())?;
    Ok(out.into())
}

/// The rows pseudo-relevance feedback learns from (the first fusion's top 10, best first) for
/// a lexical and a dense list as `fuseLists` takes them; empty when `options` give no
/// feedback.
#[wasm_bindgen(js_name = feedbackRows)]
pub fn feedback_rows_js(
    lexical_rows: &[u32],
    lexical_scores: &[f32],
    dense_rows: &[u32],
    dense_cosines: &[f32],
    groups: &[u32],
    options: JsValue,
    embedder: &WasmEmbedder,
) -> Result<js_sys::Uint32Array, JsValue> {
    let options = read_query_options(&options)?;
    let kind = embedder.inner.identity().kind;
    let rows = crate::retrieve::store::feedback_rows(
        lexical_rows,
        lexical_scores,
        dense_rows,
        dense_cosines,
        groups,
        &options,
        kind,
    )
    .map_err(js_error)?;
    Ok(js_sys::Uint32Array::from(rows.as_slice()))
}

/// The expanded query of pseudo-relevance feedback for the chunks `[{headerPath, content}]` it
/// learns from, analysed as an index with `indexOptions` analyses them: `{terms: string[],
/// weights: Float32Array}`, the `count` most probable terms, weights summing to 1.
#[wasm_bindgen(js_name = expansionQuery)]
pub fn expansion_query_js(
    chunks: JsValue,
    index_options: JsValue,
    count: u32,
) -> Result<JsValue, JsValue> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct FeedbackChunk {
        header_path: Vec<String>,
        content: String,
    }
    let index_options = read_index_options(&index_options)?;
    let chunks: Vec<FeedbackChunk> = read_input(&chunks, "chunks")?;
    let chunks: Vec<(Vec<String>, String)> = chunks
        .into_iter()
        .map(|c| (c.header_path, c.content))
        .collect();
    let query = crate::retrieve::store::expansion_query(&chunks, &index_options, count as usize);
    let terms = Array::new();
    for (t, _) in &query {
        terms.push(&JsValue::from_str(t));
    }
    let weights: Vec<f32> = query.iter().map(|q| q.1).collect();
    let out = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&out, &k.into(), v);
    set("terms", &terms.into())?;
    set("weights", &Float32Array::from(weights.as_slice()).into())?;
    Ok(out.into())
}
