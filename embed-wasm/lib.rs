//! The MiniLM engine of the npm package, as its own WebAssembly module
//! (`condense_embed_bg.wasm`).
//!
//! tract makes up most of a build with the model engine (about 3.5 MB of gzip), so the core
//! module (`condense_bg.wasm`: compress, query, applyWatermark, the lexical embedder) is built
//! without it and this module is loaded only when `loadEmbedder()` is called. It exports one
//! class, `Model`; the core wraps a `Model` as an external embedder
//! (`condense::embed::Embedder::external`), so indexes and `compress` use it like any embedder.
//! The vectors are those of `condense::embed::Embedder::from_bytes`: same code, same build
//! flags.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#![deny(missing_docs)]

#[cfg(target_arch = "wasm32")]
mod wasm {
    use condense::embed::{EmbedOptions, Embedder};
    use condense::Error;
    use js_sys::{Array, Float32Array, Reflect};
    use wasm_bindgen::prelude::*;

    fn js_error(err: Error) -> JsValue {
        let e = js_sys::Error::new(&err.to_string());
        e.set_name("CondenseError");
        let _ = Reflect::set(&e, &"code".into(), &err.code().into());
        let _ = Reflect::set(&e, &"path".into(), &err.path().into());
        let _ = Reflect::set(&e, &"reason".into(), &err.reason().into());
        e.into()
    }

    fn input_error(path: String, reason: &str) -> JsValue {
        js_error(Error::new(condense::ErrorKind::InvalidInput, path, reason))
    }

    /// A loaded MiniLM-family encoder.
    #[wasm_bindgen]
    pub struct Model {
        inner: Embedder,
    }

    #[wasm_bindgen]
    impl Model {
        /// Loads the model from the bytes of `model.onnx` and `tokenizer.json`; `options` is
        /// JSON text `{maxTokens?, batchSize?}` or undefined; `sha256` the model's digest if the
        /// caller has it (WebCrypto is far faster than hashing in wasm), else computed here.
        /// The model's bytes are this module's copy, freed as soon as they are decoded: the
        /// load's peak memory, which wasm keeps, does not hold them.
        #[wasm_bindgen(js_name = fromBytes)]
        pub fn from_bytes(
            onnx: Vec<u8>,
            tokenizer: &[u8],
            options: Option<String>,
            sha256: Option<String>,
        ) -> Result<Model, JsValue> {
            console_error_panic_hook::set_once();
            let options = match options {
                None => EmbedOptions::default(),
                Some(json) => EmbedOptions::from_json(&json).map_err(js_error)?,
            };
            let inner = Embedder::from_vec_with_digest(onnx, tokenizer, options, sha256.as_deref())
                .map_err(js_error)?;
            Ok(Model { inner })
        }

        /// The size of this module's linear memory in bytes (it never shrinks: the peak of every
        /// load and call so far). A measuring aid (`bench/embed_footprint_chromium.mjs`).
        #[wasm_bindgen(js_name = memoryBytes)]
        pub fn memory_bytes() -> f64 {
            (core::arch::wasm32::memory_size(0) * 65536) as f64
        }

        /// The identity (JSON text): `{kind, modelSha256, dims, maxTokens, version}`.
        pub fn identity(&self) -> Result<String, JsValue> {
            serde_json::to_string(self.inner.identity())
                .map_err(|e| js_error(Error::new(condense::ErrorKind::Internal, "", e.to_string())))
        }

        /// Sets the model's sha256 in the identity (64 lower-case hex digits): the package
        /// loads with a stand-in digest while WebCrypto hashes the bytes on its own thread.
        #[wasm_bindgen(js_name = setModelSha256)]
        pub fn set_model_sha256(&mut self, sha256: &str) -> Result<(), JsValue> {
            self.inner.set_model_sha256(sha256).map_err(js_error)
        }

        /// The lower-case hex sha256 of `bytes`, hashed in wasm (where WebCrypto is missing:
        /// ~20× slower).
        #[wasm_bindgen(js_name = sha256Hex)]
        pub fn sha256_hex(bytes: &[u8]) -> String {
            condense::embed::sha256_hex(bytes)
        }

        /// `{castsFolded, nodesRepaired, integerMatmuls, loadMs}` (JSON text).
        #[wasm_bindgen(js_name = loadInfo)]
        pub fn load_info(&self) -> String {
            match self.inner.load_info() {
                // A clock that failed gives 0 ms, not a NaN that JSON cannot carry.
                Some(mut i) => {
                    if !i.load_ms.is_finite() {
                        i.load_ms = 0.0;
                    }
                    serde_json::to_string(&i).unwrap_or_else(|_| "null".into())
                }
                None => "null".into(),
            }
        }

        /// The exact token count of `text` in the model's tokenizer: its WordPiece pieces,
        /// without `[CLS]`/`[SEP]` and without truncation (`compress` with
        /// `tokenCounter: "model"`).
        #[wasm_bindgen(js_name = countTokens)]
        pub fn count_tokens(&self, text: &str) -> usize {
            self.inner.tokenizer().map_or(0, |t| t.count_pieces(text))
        }

        /// Embeds `texts` (an array of strings; lone surrogates become U+FFFD): one
        /// `Float32Array` of `texts.length × 384` values, row by row.
        #[wasm_bindgen(js_name = embedFlat)]
        pub fn embed_flat(&self, texts: &JsValue) -> Result<Float32Array, JsValue> {
            let texts = strings(texts)?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = self.inner.embed(&refs).map_err(js_error)?;
            let flat: Vec<f32> = vectors.iter().flat_map(|v| v.iter().copied()).collect();
            Ok(Float32Array::from(flat.as_slice()))
        }

        /// Loads the model as `fromBytes` does, with a row `{stage, ms, memoryBytes}` as each
        /// stage of the load ends (the wasm memory's size: it never shrinks, so it is the peak
        /// so far), then rows for the first call (32 texts of ~128 tokens) and for the model
        /// dropped: JSON text, a measuring aid (`bench/embed_footprint.mjs`; the native bench
        /// gives the live heap per stage). Run it on a fresh instance.
        #[wasm_bindgen(js_name = traceLoad)]
        pub fn trace_load(
            onnx: Vec<u8>,
            tokenizer: &[u8],
            sha256: Option<String>,
        ) -> Result<String, JsValue> {
            use std::cell::RefCell;
            use std::rc::Rc;
            console_error_panic_hook::set_once();
            let start = js_sys::Date::now();
            let rows = Rc::new(RefCell::new(Vec::new()));
            let mark = {
                let rows = Rc::clone(&rows);
                move |stage: &str| {
                    rows.borrow_mut().push(serde_json::json!({
                        "stage": stage,
                        "ms": js_sys::Date::now() - start,
                        "memoryBytes": core::arch::wasm32::memory_size(0) * 65536,
                    }));
                }
            };
            mark("input copied");
            let on_stage = mark.clone();
            let inner = condense::embed::trace_load(on_stage, || {
                Embedder::from_vec_with_digest(
                    onnx,
                    tokenizer,
                    EmbedOptions::default(),
                    sha256.as_deref(),
                )
            })
            .map_err(js_error)?;
            mark("loaded");
            let text = "the quick brown fox jumps over the lazy dog while the engine counts bytes "
                .repeat(9);
            let texts: Vec<&str> = (0..32).map(|_| text.as_str()).collect();
            inner.embed(&texts).map_err(js_error)?;
            mark("first call (32 × 128 tokens)");
            drop(inner);
            mark("embedder dropped");
            let rows = rows.borrow();
            serde_json::to_string(&*rows)
                .map_err(|e| js_error(Error::new(condense::ErrorKind::Internal, "", e.to_string())))
        }

        /// Embeds `texts` (an array of strings) with every operator of the model timed
        /// (a profiling aid, `bench/op_profile.mjs`): JSON text
        /// `[{op, msPerText, evalsPerText}]`, slowest first.
        #[wasm_bindgen(js_name = profileOps)]
        pub fn profile_ops(&self, texts: &JsValue) -> Result<String, JsValue> {
            let texts = strings(texts)?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let rows = self.inner.profile_ops(&refs).map_err(js_error)?;
            serde_json::to_string(&rows)
                .map_err(|e| js_error(Error::new(condense::ErrorKind::Internal, "", e.to_string())))
        }
    }

    /// `texts` as strings: an array of strings, else an error naming the field.
    fn strings(texts: &JsValue) -> Result<Vec<String>, JsValue> {
        if !Array::is_array(texts) {
            return Err(input_error("texts".into(), "expected an array of strings"));
        }
        Array::from(texts)
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_string()
                    .ok_or_else(|| input_error(format!("texts[{i}]"), "expected a string"))
            })
            .collect()
    }
}
