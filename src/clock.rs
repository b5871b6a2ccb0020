//! The host clock: the one place the crate reads time.
//!
//! `std::time::Instant` panics on `wasm32-unknown-unknown` (there is no clock without a host), so
//! time is read from the host there: `performance.now()` where the global has it (browsers,
//! workers, Node ≥ 16), else `Date.now()`. Natively it is a monotonic [`std::time::Instant`].
//! Time only ever measures durations (`ms` in results, progress); no output depends on it.
//!
//! ```
//! let start = condense::clock::now_ms();
//! let elapsed = condense::clock::now_ms() - start;
//! assert!(elapsed >= 0.0);
//! ```

/// Milliseconds since an arbitrary origin fixed for the process (native: the first call;
/// wasm32: the host's `performance.now()` origin or the Unix epoch). Monotonic natively;
/// use differences only.
pub fn now_ms() -> f64 {
    imp::now_ms()
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::sync::OnceLock;
    use std::time::Instant;

    static ORIGIN: OnceLock<Instant> = OnceLock::new();

    pub fn now_ms() -> f64 {
        let origin = ORIGIN.get_or_init(Instant::now);
        origin.elapsed().as_secs_f64() * 1000.0
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use js_sys::{Date, Function, Reflect};
    use wasm_bindgen::{JsCast, JsValue};

    pub fn now_ms() -> f64 {
        performance_now().unwrap_or_else(Date::now)
    }

    /// `globalThis.performance.now()`, if the host has it.
    fn performance_now() -> Option<f64> {
        let performance =
            Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok()?;
        if performance.is_undefined() || performance.is_null() {
            return None;
        }
        let now = Reflect::get(&performance, &JsValue::from_str("now")).ok()?;
        let now: Function = now.dyn_into().ok()?;
        now.call0(&performance).ok()?.as_f64()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic() {
        let a = super::now_ms();
        let b = super::now_ms();
        assert!(b >= a);
    }
}
