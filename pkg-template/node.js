// Node entry: the wasm module is read next to this file and instantiated synchronously, so
// every function works as soon as the import resolves.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as glue from './condense.js';
import * as engineGlue from './condense_embed.js';
import { wrap, CondenseError, modelError, readResponse } from './common.js';

glue.initSync({ module: readFileSync(new URL('./condense_bg.wasm', import.meta.url)) });

/** Model files: from disk (a path, a file: URL), or fetched (http(s) URLs, Node >= 18). */
const host = {
  async readPath(where, file, path, onProgress) {
    if (typeof where !== 'string' && !(where instanceof URL)) {
      throw new CondenseError('invalid_options', path, `invalid_options at ${path}: expected a path or a file: URL`, 'expected a path or a file: URL');
    }
    let bytes;
    try {
      // A plain Uint8Array view of the Buffer readFile returns (its own memory at this size):
      // no 22 MB copy.
      const read = await readFile(where);
      bytes = new Uint8Array(read.buffer, read.byteOffset, read.byteLength);
    } catch (e) {
      throw modelError(path, `cannot read ${where}: ${e.code ?? e.message}${where === defaults[file] ? ' (the package was built without model files: pass modelPath/tokenizerPath, or bytes)' : ''}`);
    }
    onProgress?.({ phase: 'download', file, loaded: bytes.length, total: bytes.length });
    return bytes;
  },
  async fetchUrl(url, file, path, onProgress) {
    let u;
    try {
      u = new URL(url);
    } catch {
      throw new CondenseError('invalid_options', path, `invalid_options at ${path}: not a URL: ${url}`, 'not a URL');
    }
    if (u.protocol === 'file:') return host.readPath(u, file, path, onProgress);
    let response;
    try {
      response = await fetch(u);
    } catch (e) {
      throw modelError(path, `cannot fetch ${u}: ${e.message}`);
    }
    return readResponse(response, file, path, onProgress);
  },
  defaultSource: (file) => ({ path: defaults[file] }),
  /** A string's UTF-16 code units into wasm memory (applyWatermarkJson's input): a copy. */
  writeUtf16(text, buffer, byteOffset) {
    Buffer.from(buffer, byteOffset, 2 * text.length).write(text, 0, 'utf16le');
  },
  /** The model engine's wasm module (condense_embed_bg.wasm), instantiated on first use. */
  async engine() {
    if (!engineReady) {
      const where = new URL('./condense_embed_bg.wasm', import.meta.url);
      let bytes;
      try {
        bytes = await readFile(where);
      } catch (e) {
        throw modelError('engine', `cannot read the model engine ${fileURLToPath(where)}: ${e.code ?? e.message}`);
      }
      engineGlue.initSync({ module: bytes });
      engineReady = true;
    }
    return engineGlue;
  },
};
let engineReady = false;
const defaults = {
  model: fileURLToPath(new URL('./models/model.onnx', import.meta.url)),
  tokenizer: fileURLToPath(new URL('./models/tokenizer.json', import.meta.url)),
};

const api = wrap(glue, host);
export const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, prepareContext, version,
  Index, query, compressResults, embed, lexicalEmbedder, loadEmbedder, externalEmbedder,
} = api;
export { CondenseError, ERROR_CODES } from './common.js';
/** @internal For condense-ctx/pg (not in index.d.ts): the module's object behind an `Embedder`
 * from this entry, which the glue functions take; `invalid_options` at `options.embedder` for
 * anything else, `invalid_state` for a freed one. */
export const glueEmbedderOf = api.glueEmbedderOf;

// Request-body adapters (adapters.js) and, in node.js and browser.js, createWorker().
import { Worker } from 'node:worker_threads';
import { adapters } from './adapters.js';
import { connect, checkWorkerOptions } from './worker-client.js';
export { embedParallel } from './worker-client.js';
export const { watermarkRequest, compressRequest, prepareRequest } = adapters(api);

/** The package in a worker_threads Worker (worker-node.js); see index.d.ts. */
export async function createWorker(options) {
  checkWorkerOptions(options);
  const given = options?.worker;
  const worker = given === undefined || typeof given === 'string' || given instanceof URL
    ? new Worker(given ?? new URL('./worker-node.js', import.meta.url))
    : given;
  return connect({
    post: (message, transfer) => worker.postMessage(message, transfer),
    listen: (handler) => worker.on('message', handler),
    onFailure: (fail) => {
      worker.on('error', (e) => fail(`the worker failed: ${e.message}`));
      worker.on('exit', (code) => fail(`the worker exited (code ${code})`));
    },
    // An idle worker does not keep the process alive: referenced only while calls are pending
    // (and while it starts).
    busy: (busy) => (busy ? worker.ref() : worker.unref()),
    terminate: async () => { await worker.terminate(); },
  }, options);
}
/** Resolved once the module is ready (already, in Node). */
export const ready = Promise.resolve();
