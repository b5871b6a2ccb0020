//! The wasm-bindgen boundary. It converts JS values to the core's types and back, and turns
//! [`Error`]s into thrown JS errors carrying `code` and `path`; it decides nothing.
//!
//! Messages cross the boundary as JSON text (`JSON.stringify` runs in the JS engine, which is
//! much faster than walking objects field by field from wasm). On the object path, messages
//! the call leaves alone are returned as the very objects the caller passed in.

use std::cell::RefCell;

use js_sys::{Array, Object, Reflect, JSON};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::error::{Error, ErrorKind};
use crate::message::{validate_json, ValidateOptions};
use crate::watermark::layout;
use crate::watermark::utf16::utf16_to_utf8;
use crate::watermark::{plan_json, write_plan, Parsed, WatermarkOptions, WatermarkState};

mod compress;
mod heap;
mod retrieve;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// Turns a core error into a thrown JS `Error` with `name = "CondenseError"`, `code`, `path`.
fn js_error(err: Error) -> JsValue {
    let e = js_sys::Error::new(&err.to_string());
    e.set_name("CondenseError");
    let _ = Reflect::set(&e, &"code".into(), &err.code().into());
    let _ = Reflect::set(&e, &"path".into(), &err.path().into());
    let _ = Reflect::set(&e, &"reason".into(), &err.reason().into());
    e.into()
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    let ser = serde_wasm_bindgen::Serializer::json_compatible();
    value
        .serialize(&ser)
        .map_err(|e| js_error(Error::new(ErrorKind::Internal, "", e.to_string())))
}

/// `JSON.stringify(value)`, as a typed error when JS refuses (cycles, BigInt) or the value
/// has no JSON form.
fn stringify(value: &JsValue, path: &str) -> Result<String, JsValue> {
    match JSON::stringify(value) {
        Ok(s) => s.as_string().ok_or_else(|| {
            js_error(Error::new(
                ErrorKind::InvalidInput,
                path,
                "the value has no JSON representation",
            ))
        }),
        Err(e) => {
            let why = Reflect::get(&e, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "JSON.stringify failed".into());
            Err(js_error(Error::new(ErrorKind::InvalidInput, path, why)))
        }
    }
}

/// Options or state as JSON text; `undefined`/`null` as `None`. Every options object of every
/// function comes through here (and the watermark state), so this is where what JSON cannot
/// carry is refused: `JSON.stringify` writes `NaN` and `±Infinity` as `null`, which the core
/// would read as "not given" and replace by the default, so a non-finite number anywhere in
/// the object is an error at its path (`options.bm25.k1`) instead.
fn optional_json(value: &JsValue, path: &str) -> Result<Option<String>, JsValue> {
    let kind = match path {
        "state" => ErrorKind::InvalidState,
        _ => ErrorKind::InvalidOptions,
    };
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    if !value.is_object() || Array::is_array(value) {
        return Err(js_error(Error::new(kind, path, "expected an object")));
    }
    #[cfg(feature = "test-trap")]
    if TRAP_ARMED.with(|armed| armed.replace(false)) {
        core::arch::wasm32::unreachable();
    }
    let json = stringify(value, path)?;
    // A non-finite number became `null`: only then is the object walked to find it.
    if json.contains("null") {
        if let Some((at, n)) = non_finite(value, path, 0) {
            return Err(js_error(Error::new(
                kind,
                at,
                format!("{n} is not a finite number (JSON has no {n}; it would be read as null)"),
            )));
        }
    }
    Ok(Some(json))
}

/// The path and value of the first non-finite number in `value` (as `JSON.stringify` walks it:
/// own enumerable keys, array elements), within the nesting the core reads.
fn non_finite(value: &JsValue, path: &str, depth: usize) -> Option<(String, f64)> {
    if let Some(n) = value.as_f64() {
        return (!n.is_finite()).then(|| (path.to_string(), n));
    }
    if depth >= crate::message::MAX_DEPTH || !value.is_object() {
        return None;
    }
    if Array::is_array(value) {
        return Array::from(value)
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite(&v, &crate::error::join_index(path, i), depth + 1));
    }
    // An object with a `toJSON` (a Date) is written as what that returns, not walked.
    if Reflect::get(value, &"toJSON".into()).is_ok_and(|f| f.is_function()) {
        return None;
    }
    Object::entries(value.unchecked_ref())
        .iter()
        .find_map(|entry| {
            let entry = Array::from(&entry);
            let key = entry.get(0).as_string()?;
            non_finite(
                &entry.get(1),
                &crate::error::join_key(path, &key),
                depth + 1,
            )
        })
}

/// An options or state object read by `parse` from its JSON text ([`optional_json`]), or
/// `T::default()` when it is `undefined` or `null`: every options object goes through here.
fn read_or_default<T: Default>(
    value: &JsValue,
    path: &str,
    parse: impl FnOnce(&str) -> Result<T, Error>,
) -> Result<T, JsValue> {
    match optional_json(value, path)? {
        None => Ok(T::default()),
        Some(json) => parse(&json).map_err(js_error),
    }
}

/// A JS value (an array or object of input records) read as `T` through its JSON text: an
/// `invalid_input` error at `path` (`documents[2].text`) when it does not fit.
fn read_input<T: serde::de::DeserializeOwned>(value: &JsValue, path: &str) -> Result<T, JsValue> {
    let json = stringify(value, path)?;
    crate::error::read_json(&json, ErrorKind::InvalidInput, path).map_err(js_error)
}

fn read_state(state: &JsValue) -> Result<WatermarkState, JsValue> {
    read_or_default(state, "state", WatermarkState::from_json)
}

fn read_options(options: &JsValue) -> Result<WatermarkOptions, JsValue> {
    read_or_default(options, "options", WatermarkOptions::from_json)
}

fn result_object(entries: &[(&str, JsValue)]) -> Result<JsValue, JsValue> {
    let obj = Object::new();
    for (k, v) in entries {
        Reflect::set(&obj, &(*k).into(), v)?;
    }
    Ok(obj.into())
}

/// The plan of `applyWatermark` for the JS entry, which assembles the output itself from the
/// caller's objects: `{keep, fresh, state, stats, warnings}` ([`layout::keep_and_fresh`]:
/// `0xFFFFFFFF` in `keep` for the next message of `fresh`, parsed once by the caller). `json`
/// is `JSON.stringify(messages)`.
#[wasm_bindgen(js_name = watermarkPlan)]
pub fn watermark_plan(json: &str, state: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let state = read_state(&state)?;
    let options = read_options(&options)?;
    let (plan, _) = plan_json(json, &state, &options).map_err(js_error)?;
    let (keep, fresh) = layout::keep_and_fresh(&plan);
    result_object(&[
        ("keep", js_sys::Uint32Array::from(keep.as_slice()).into()),
        ("fresh", fresh.into()),
        ("state", to_js(&plan.state)?),
        ("stats", to_js(&plan.stats)?),
        ("warnings", to_js(&plan.warnings)?),
    ])
}

/// `applyWatermarkJson` for the JS entry, which assembles the output text itself from slices
/// of the caller's string: `{parts, fresh, state, stats, warnings}`, or `{json, …}` for a
/// request body ([`layout::utf16_parts`]: two numbers per output message, UTF-16 offsets into
/// `json` or `0xFFFFFFFF` and a length in `fresh`).
#[wasm_bindgen(js_name = watermarkJsonParts)]
pub fn watermark_json_parts(
    json: &str,
    state: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let state = read_state(&state)?;
    let options = read_options(&options)?;
    let (plan, parsed) = plan_json(json, &state, &options).map_err(js_error)?;
    let texts = match parsed {
        Parsed::Scanned(texts) => texts,
        Parsed::Document(doc) => {
            let out = write_plan(&doc, &plan, json.len());
            return result_object(&[
                ("json", out.into()),
                ("state", to_js(&plan.state)?),
                ("stats", to_js(&plan.stats)?),
                ("warnings", to_js(&plan.warnings)?),
            ]);
        }
    };
    let (parts, fresh) = layout::utf16_parts(json, &texts, &plan);
    result_object(&[
        ("parts", js_sys::Uint32Array::from(parts.as_slice()).into()),
        ("fresh", fresh.into()),
        ("state", to_js(&plan.state)?),
        ("stats", to_js(&plan.stats)?),
        ("warnings", to_js(&plan.warnings)?),
    ])
}

thread_local! {
    /// The text of the next [`watermark_json_parts_utf16`] call as UTF-16 code units (written
    /// by JS at the address [`watermark_input`] returns) and the buffer for its UTF-8 form.
    /// Kept between calls: once they are large enough, a call allocates nothing for its input.
    static UTF16_INPUT: RefCell<(Vec<u16>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Room for `units` UTF-16 code units of input to [`watermark_json_parts_utf16`]: its byte
/// address in the module's memory ([`wasm_memory`]).
#[wasm_bindgen(js_name = watermarkInput)]
pub fn watermark_input(units: usize) -> usize {
    UTF16_INPUT.with(|buffers| {
        let mut buffers = buffers.borrow_mut();
        if buffers.0.len() < units {
            buffers.0.resize(units, 0);
        }
        buffers.0.as_mut_ptr() as usize
    })
}

/// The module's memory (`WebAssembly.Memory`), for writing input where [`watermark_input`] says.
#[wasm_bindgen(js_name = wasmMemory)]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// [`watermark_json_parts`] on the text JS wrote as `units` UTF-16 code units at
/// `watermarkInput(units)`: Node copies a string's code units much faster than it encodes them
/// to UTF-8 (see [`crate::watermark::utf16`]). Encoded here as `TextEncoder` would.
#[wasm_bindgen(js_name = watermarkJsonPartsUtf16)]
pub fn watermark_json_parts_utf16(
    units: usize,
    state: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    with_utf16_input(
        units,
        "json",
        |written, text| {
            utf16_to_utf8(written, text);
            Ok(())
        },
        |json| watermark_json_parts(json, state, options),
    )
}

/// Runs `f` on the UTF-8 text `encode` makes of the `units` UTF-16 code units JS wrote at
/// `watermarkInput(units)`; errors (no input written, a refusal of `encode`, text that is not
/// UTF-8) are internal ones at `path`. The buffers are taken out of [`UTF16_INPUT`] for the
/// call (a call made meanwhile, from a callback or a toJSON, gets buffers of its own) and kept
/// for the next one unless they are large.
fn with_utf16_input(
    units: usize,
    path: &str,
    encode: impl FnOnce(&[u16], &mut Vec<u8>) -> Result<(), &'static str>,
    f: impl FnOnce(&str) -> Result<JsValue, JsValue>,
) -> Result<JsValue, JsValue> {
    let internal = |reason: String| js_error(Error::new(ErrorKind::Internal, path, reason));
    let (input, mut text) = UTF16_INPUT.with(|buffers| std::mem::take(&mut *buffers.borrow_mut()));
    let result = match input.get(..units) {
        Some(written) => match encode(written, &mut text) {
            Ok(()) => match std::str::from_utf8(&text) {
                Ok(json) => f(json),
                Err(e) => Err(internal(e.to_string())),
            },
            Err(reason) => Err(internal(reason.to_string())),
        },
        None => Err(internal(
            "no input was written (call watermarkInput first)".to_string(),
        )),
    };
    // Kept for the next call unless they are large (a rare huge input should not hold its
    // buffers for the life of the module: freed, the allocator reuses the memory).
    if 2 * input.capacity() + text.capacity() <= UTF16_KEEP_BYTES {
        UTF16_INPUT.with(|buffers| *buffers.borrow_mut() = (input, text));
    }
    result
}

/// The most memory [`UTF16_INPUT`]'s buffers keep between calls (a 10k-message history of
/// 7 MB needs ~21 MB).
const UTF16_KEEP_BYTES: usize = 32 << 20;

/// `applyWatermarkJson(json, state, options)` on JSON text (an array or a request body).
#[wasm_bindgen(js_name = applyWatermarkJson)]
pub fn apply_watermark_json(
    json: &str,
    state: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let state = read_state(&state)?;
    let options = read_options(&options)?;
    let out = crate::watermark::apply_watermark_json(json, &state, &options).map_err(js_error)?;
    result_object(&[
        ("json", out.json.into()),
        ("state", to_js(&out.state)?),
        ("stats", to_js(&out.stats)?),
        ("warnings", to_js(&out.warnings)?),
    ])
}

/// `validate(messages, options)`: `messages` is an array of objects or JSON text.
#[wasm_bindgen(js_name = validate)]
pub fn validate(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let options: ValidateOptions = read_or_default(&options, "options", |json| {
        crate::error::read_json(json, ErrorKind::InvalidOptions, "options")
    })?;
    let json = match messages.as_string() {
        Some(s) => s,
        None if Array::is_array(&messages) => stringify(&messages, "messages")?,
        None => {
            return Err(js_error(Error::new(
                ErrorKind::InvalidInput,
                "messages",
                "expected an array of messages or JSON text",
            )))
        }
    };
    let report = validate_json(&json, &options).map_err(js_error)?;
    to_js(&report)
}

#[cfg(feature = "test-trap")]
thread_local! {
    /// Set by [`arm_trap`]: the next options object read traps.
    static TRAP_ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Test builds only (feature `test-trap`: `scripts/build-pkg` without `--dist`; never in the
/// shipped module): the next call that reads an options or state object traps
/// (`unreachable`), so the npm tests can check that the JS layer survives a trap.
#[cfg(feature = "test-trap")]
#[wasm_bindgen(js_name = __armTrap)]
pub fn arm_trap() {
    TRAP_ARMED.with(|armed| armed.set(true));
}

/// The crate version.
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    crate::VERSION.to_string()
}
