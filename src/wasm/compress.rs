//! The compress exports: one `compress` (what `compress`, `compressJson` and the cache, the
//! counter and the summariser's phases of the JS entry all call), `uncompress`,
//! `prepareContext`. Every rule of how the context's parts combine is the core's
//! ([`crate::compress::CompressContext`]); this file converts.

use js_sys::{Array, Reflect, JSON};
use wasm_bindgen::prelude::*;

use super::retrieve::WasmEmbedder;
use super::{js_error, optional_json, result_object, stringify, to_js, with_utf16_input};
use crate::compress::{
    bad_count, compress_parts, prepare_context_json, uncompress_json, CompressCache,
    CompressContext, CompressJsonResult, CompressOptions, Compressed, PrepareContextOptions,
    TokenCounter,
};
use crate::error::{Error, ErrorKind};

fn read_compress_options(options: &JsValue) -> Result<CompressOptions, JsValue> {
    match optional_json(options, "options")? {
        None => Ok(CompressOptions::default()),
        Some(json) => CompressOptions::from_json(&json).map_err(js_error),
    }
}

/// A JS function `(text) => number` as a token counter (`options.countTokens`): a throw, or
/// anything but a non-negative integer, is an `invalid_options` error at `options.countTokens`.
struct JsCounter(js_sys::Function);

impl TokenCounter for JsCounter {
    fn count(&self, text: &str) -> Result<usize, Error> {
        let path = "options.countTokens";
        let r = self.0.call1(&JsValue::NULL, &text.into()).map_err(|e| {
            let why = Reflect::get(&e, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .or_else(|| e.as_string())
                .unwrap_or_else(|| "an exception".into());
            Error::new(
                ErrorKind::InvalidOptions,
                path,
                format!("the counter threw: {why}"),
            )
        })?;
        let Some(n) = r.as_f64() else {
            let what = r.js_typeof().as_string().unwrap_or_default();
            return Err(bad_count(path, &format!("a value of type {what}")));
        };
        if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0) {
            return Err(bad_count(path, &format!("{n}")));
        }
        Ok(n as usize)
    }
}

/// Reads the incremental cache (`options.cache`): `null` (a new cache), JSON text, or the
/// object a previous result returned; bound to `key` when one is given (`options.cacheKey`).
fn read_cache(cache: &JsValue, key: Option<&str>) -> Result<CompressCache, JsValue> {
    const PATH: &str = "options.cache";
    let json = if cache.is_undefined() || cache.is_null() {
        None
    } else if let Some(s) = cache.as_string() {
        Some(s)
    } else if cache.is_object() && !Array::is_array(cache) {
        Some(stringify(cache, PATH)?)
    } else {
        return Err(js_error(Error::new(
            ErrorKind::InvalidOptions,
            PATH,
            "expected a cache object (result.cache) or its JSON text",
        )));
    };
    match (json, key) {
        (None, None) => Ok(CompressCache::new()),
        (None, Some(k)) => Ok(CompressCache::with_key(k.as_bytes())),
        (Some(j), None) => CompressCache::from_json(&j, PATH).map_err(js_error),
        (Some(j), Some(k)) => {
            CompressCache::from_json_keyed(&j, PATH, k.as_bytes()).map_err(js_error)
        }
    }
}

/// `compress(input, units, bounds, options, embedder, useEmbedder, countTokens, modelCounter,
/// withCache, cache, cacheKey, parts)`: compresses the messages' JSON text — `input`, or (when `input` is
/// `undefined`) the `units` UTF-16 code units JS wrote at `watermarkInput(units)` in pieces
/// whose ends are `bounds`: the first, third, … piece JSON text, the second, fourth, … a string
/// value to be written as `JSON.stringify` writes a string (in Node, `compress` on objects sends
/// its long strings so, because V8's `JSON.stringify` escapes them slowly; together the pieces
/// make the very text `JSON.stringify(messages)` would have).
///
/// The context: the embedder when `useEmbedder` (wasm-bindgen takes no optional borrowed
/// class), the counter when given, the model's counter (`tokenCounter: "model"` with a model
/// that runs in the engine module) when given, the cache when `withCache` (`cache`: `null`, a previous
/// result's `cache`, or its JSON text; bound to `cacheKey` when given).
///
/// The result, for a bare array with `parts`: `{keep, fresh, verbatimIds, verbatimIndex, stats,
/// trace, requests, cache?}` for the JS entry to assemble from the caller's own objects —
/// `keep[k]` the input index of output message `k`, or `0xFFFFFFFF` for the next message of
/// `fresh` (the new messages as one JSON array text); the id `verbatimIds[v]` maps to `n` input
/// messages, listed in `verbatimIndex` as `n, i1 … in` one id after the other. Otherwise (a
/// request body, or text wanted): `{json, verbatim, stats, trace, requests, cache?}` with
/// `verbatim` as JSON text.
#[wasm_bindgen(js_name = compress)]
#[allow(clippy::too_many_arguments)]
pub fn compress(
    input: JsValue,
    units: usize,
    bounds: Option<Box<[u32]>>,
    options: JsValue,
    embedder: &WasmEmbedder,
    use_embedder: bool,
    count_tokens: Option<js_sys::Function>,
    model_counter: Option<js_sys::Function>,
    with_cache: bool,
    cache: JsValue,
    cache_key: Option<String>,
    parts: bool,
) -> Result<JsValue, JsValue> {
    let run = |json: &str| -> Result<JsValue, JsValue> {
        let options = read_compress_options(&options)?;
        let mut cache = if with_cache {
            Some(read_cache(&cache, cache_key.as_deref())?)
        } else {
            None
        };
        let counter = count_tokens.clone().map(JsCounter);
        let model = model_counter.clone().map(JsCounter);
        let ctx = CompressContext {
            embedder: use_embedder.then(|| embedder.embedder()),
            counter: counter.as_ref().map(|c| c as &dyn TokenCounter),
            model_counter: model.as_ref().map(|c| c as &dyn TokenCounter),
            summarizer: None,
            cache: cache.as_mut(),
        };
        let out = compress_parts(json, &options, ctx).map_err(js_error)?;
        let cache = match &cache {
            Some(c) => JSON::parse(&c.to_json())?,
            None => JsValue::UNDEFINED,
        };
        match out {
            Compressed::Written(out) => written_js(out, cache),
            Compressed::Parts(p) if parts => {
                let keep: Vec<u32> = p
                    .messages
                    .iter()
                    .map(|m| m.map_or(u32::MAX, |i| i as u32))
                    .collect();
                let mut fresh = String::from("[");
                for (n, text) in p.fresh.iter().enumerate() {
                    if n > 0 {
                        fresh.push(',');
                    }
                    fresh.push_str(text);
                }
                fresh.push(']');
                let mut ids = Vec::with_capacity(p.verbatim.len());
                let mut index = Vec::new();
                for (id, originals) in &p.verbatim {
                    ids.push(JsValue::from_str(id));
                    index.push(originals.len() as u32);
                    index.extend(originals.iter().map(|&i| i as u32));
                }
                result_object(&[
                    ("keep", js_sys::Uint32Array::from(keep.as_slice()).into()),
                    ("fresh", fresh.into()),
                    ("verbatimIds", ids.into_iter().collect::<Array>().into()),
                    (
                        "verbatimIndex",
                        js_sys::Uint32Array::from(index.as_slice()).into(),
                    ),
                    ("stats", to_js(&p.stats)?),
                    ("trace", trace_js(&p.trace)?),
                    ("requests", to_js(&p.requests)?),
                    ("cache", cache),
                ])
            }
            Compressed::Parts(p) => written_js(p.into_written(json), cache),
        }
    };
    if let Some(json) = input.as_string() {
        return run(&json);
    }
    let Some(bounds) = bounds else {
        return Err(js_error(Error::new(
            ErrorKind::InvalidInput,
            "messages",
            "expected JSON text of messages",
        )));
    };
    with_utf16_input(
        units,
        "messages",
        |written, text| {
            text.clear();
            let mut start = 0usize;
            for (k, &end) in bounds.iter().enumerate() {
                let piece = written
                    .get(start..end as usize)
                    .ok_or("the pieces do not cover the input written")?;
                if k % 2 == 0 {
                    crate::watermark::utf16::append_utf8(piece, text);
                } else {
                    crate::watermark::utf16::append_json_string(piece, text);
                }
                start = end as usize;
            }
            if start == units {
                Ok(())
            } else {
                Err("the pieces do not cover the input written")
            }
        },
        run,
    )
}

/// `{json, verbatim, stats, trace, requests, cache}` of a written result.
fn written_js(out: CompressJsonResult, cache: JsValue) -> Result<JsValue, JsValue> {
    result_object(&[
        ("json", out.json.into()),
        ("verbatim", out.verbatim.into()),
        ("stats", to_js(&out.stats)?),
        ("trace", trace_js(&out.trace)?),
        ("requests", to_js(&out.requests)?),
        ("cache", cache),
    ])
}

fn trace_js(trace: &Option<Vec<crate::compress::Decision>>) -> Result<JsValue, JsValue> {
    match trace {
        Some(t) => to_js(t),
        None => Ok(JsValue::UNDEFINED),
    }
}

fn read_prepare_options(options: &JsValue) -> Result<PrepareContextOptions, JsValue> {
    match optional_json(options, "options")? {
        None => PrepareContextOptions::from_value(&serde_json::Value::Null).map_err(js_error),
        Some(json) => PrepareContextOptions::from_json(&json).map_err(js_error),
    }
}

/// `prepareContext(chunks, options, embedder, useEmbedder)`: a token budget shared across
/// chunks by relevance (by embedding cosine when `useEmbedder`), each compressed to its share:
/// `{text, chunks, stats}`.
#[wasm_bindgen(js_name = prepareContext)]
pub fn prepare_context(
    chunks: JsValue,
    options: JsValue,
    embedder: &WasmEmbedder,
    use_embedder: bool,
) -> Result<JsValue, JsValue> {
    if !Array::is_array(&chunks) {
        return Err(js_error(Error::new(
            ErrorKind::InvalidInput,
            "chunks",
            "expected an array of chunks (strings or {id, text} objects)",
        )));
    }
    let options = read_prepare_options(&options)?;
    let json = stringify(&chunks, "chunks")?;
    let embedder = use_embedder.then(|| embedder.embedder());
    let out = prepare_context_json(&json, &options, embedder).map_err(js_error)?;
    to_js(&out)
}

/// `uncompress(messages, verbatim)`: the original messages back (JSON text in, JSON text out).
#[wasm_bindgen(js_name = uncompress)]
pub fn uncompress(messages: JsValue, verbatim: JsValue) -> Result<JsValue, JsValue> {
    let json = match messages.as_string() {
        Some(s) => s,
        None => stringify(&messages, "messages")?,
    };
    let verbatim = match verbatim.as_string() {
        Some(s) => s,
        None if verbatim.is_undefined() || verbatim.is_null() => "{}".to_string(),
        None => stringify(&verbatim, "verbatim")?,
    };
    let text = uncompress_json(&json, &verbatim).map_err(js_error)?;
    if messages.is_string() {
        Ok(text.into())
    } else {
        JSON::parse(&text)
    }
}
