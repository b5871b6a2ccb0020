// Browser (and bundler) entry: the wasm module is fetched relative to this file and
// instantiated with top-level await, so every function works once the import resolves.
import init, * as glue from './condense.js';
import { wrap } from './common.js';
import { host } from './browser-host.js';

await init({ module_or_path: new URL('./condense_bg.wasm', import.meta.url) });

const api = wrap(glue, host);
export const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, prepareContext, version,
  Index, query, compressResults, embed, lexicalEmbedder, loadEmbedder, externalEmbedder,
} = api;
export { CondenseError, ERROR_CODES } from './common.js';

// Request-body adapters (adapters.js) and, in node.js and browser.js, createWorker().
import { adapters } from './adapters.js';
export const { watermarkRequest, compressRequest, prepareRequest } = adapters(api);
/** The package in a module Web Worker (worker.js); see index.d.ts. */
export { createBrowserWorker as createWorker, embedParallel } from './worker-client.js';
/** Resolved once the module is ready (already, after the import). */
export const ready = Promise.resolve();
