// `condense-ctx/manual`: the browser entry without top-level await, for hosts that forbid it
// (Manifest V3 extension service workers: "top-level await is disallowed in service workers") or
// that must say where the wasm comes from (a content script passing chrome.runtime.getURL, bytes
// from a cache). Importing it runs nothing; `await init()` fetches and instantiates
// condense_bg.wasm (relative to this module by default) and resolves to the package's functions.
// No dynamic import() anywhere below: service workers forbid that too.
import initWasm, * as glue from './condense.js';
import { wrap, CondenseError, ERROR_CODES } from './common.js';
import { host } from './browser-host.js';
import { adapters } from './adapters.js';

export { CondenseError, ERROR_CODES };

const INIT_KEYS = new Set(['wasm']);
let loading = null;

function initError(path, reason) {
  return new CondenseError('invalid_options', path, `invalid_options at ${path}: ${reason}`, reason);
}

/** Where the wasm module comes from: a URL (string or URL), a Response, bytes or a compiled Module. */
function wasmSource(value) {
  if (value === undefined || value === null) return new URL('./condense_bg.wasm', import.meta.url);
  if (typeof value === 'string' || value instanceof URL) return value;
  if (typeof Response !== 'undefined' && value instanceof Response) return value;
  if (value instanceof WebAssembly.Module || value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return value;
  throw initError('options.wasm', 'expected a URL, a Response, bytes (ArrayBuffer or a typed array) or a WebAssembly.Module');
}

/**
 * Loads the wasm module once and resolves to the package's functions (the same as the main
 * entry's exports, without createWorker and ready). Calls after the first return the same
 * object; a failed load can be retried.
 */
export function init(options) {
  try {
    if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
      throw initError('options', 'expected an object');
    }
    for (const key of Object.keys(options ?? {})) {
      if (!INIT_KEYS.has(key)) throw initError(`options.${key}`, 'unknown option (expected wasm)');
    }
    const source = wasmSource(options?.wasm);
    loading ??= (async () => {
      try {
        await initWasm({ module_or_path: source });
      } catch (e) {
        throw initError('options.wasm', `cannot load condense_bg.wasm (${source instanceof URL || typeof source === 'string' ? String(source) : 'the given module'}): ${e?.message ?? e}`);
      }
      const api = wrap(glue, host);
      return Object.freeze({ ...api, ...adapters(api), CondenseError, ERROR_CODES });
    })();
    return loading.catch((e) => { loading = null; throw e; });
  } catch (e) {
    return Promise.reject(e);
  }
}
