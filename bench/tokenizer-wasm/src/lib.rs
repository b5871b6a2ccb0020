//! One tokenizer in a wasm module (see Cargo.toml): `Tok::new(tokenizer_json, max_tokens)` and
//! `Tok::encode(text)` → ids with `[CLS] … [SEP]`, truncated to `max_tokens`, no padding.
use wasm_bindgen::prelude::*;

#[cfg(all(feature = "own", feature = "crate"))]
compile_error!("build one tokenizer at a time: --no-default-features --features crate");

/// The error type condense's tokenizer source expects from its crate root.
#[cfg(feature = "own")]
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub path: String,
    pub reason: String,
}

#[cfg(feature = "own")]
impl Error {
    pub fn new(kind: ErrorKind, path: impl Into<String>, reason: impl Into<String>) -> Error {
        Error {
            kind,
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// The error kinds condense's tokenizer source names.
#[cfg(feature = "own")]
#[derive(Debug, Clone, Copy)]
pub enum ErrorKind {
    InvalidModel,
    InvalidOptions,
}

#[cfg(feature = "own")]
#[path = "../../../src/embed/tokenizer.rs"]
#[allow(dead_code)]
mod tokenizer;

#[wasm_bindgen]
pub struct Tok {
    #[cfg(feature = "own")]
    inner: tokenizer::WordPiece,
    #[cfg(feature = "crate")]
    inner: tokenizers::Tokenizer,
}

#[wasm_bindgen]
impl Tok {
    #[wasm_bindgen(constructor)]
    pub fn new(json: &[u8], max_tokens: usize) -> Result<Tok, JsError> {
        #[cfg(feature = "own")]
        {
            let options = tokenizer::TokenizerOptions { max_tokens };
            let inner = tokenizer::WordPiece::from_json(json, options)
                .map_err(|e| JsError::new(&format!("{}: {}", e.path, e.reason)))?;
            Ok(Tok { inner })
        }
        #[cfg(feature = "crate")]
        {
            use tokenizers::{TruncationParams, TruncationStrategy};
            let mut inner = tokenizers::Tokenizer::from_bytes(json)
                .map_err(|e| JsError::new(&e.to_string()))?;
            inner.with_padding(None);
            inner
                .with_truncation(Some(TruncationParams {
                    max_length: max_tokens,
                    strategy: TruncationStrategy::LongestFirst,
                    ..Default::default()
                }))
                .map_err(|e| JsError::new(&e.to_string()))?;
            Ok(Tok { inner })
        }
    }

    /// The ids of `text`.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, JsError> {
        #[cfg(feature = "own")]
        return Ok(self.inner.encode(text));
        #[cfg(feature = "crate")]
        return self
            .inner
            .encode(text, true)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| JsError::new(&e.to_string()));
    }

    /// The number of ids of each text, summed: the timed loop (no array crosses to JS).
    #[wasm_bindgen(js_name = countAll)]
    pub fn count_all(&self, texts: Vec<String>) -> Result<usize, JsError> {
        let mut total = 0;
        for t in &texts {
            total += self.encode(t)?.len();
        }
        Ok(total)
    }
}
