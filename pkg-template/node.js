// Node entry: the wasm module is read next to this file and instantiated synchronously, so
// every function works as soon as the import resolves.
import { readFileSync } from 'node:fs';
import * as glue from './condense.js';
import { wrap } from './common.js';

glue.initSync({ module: readFileSync(new URL('./condense_bg.wasm', import.meta.url)) });

const api = wrap(glue);
export const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, version,
  Index, query, compressResults, embed, lexicalEmbedder,
} = api;
export { CondenseError, ERROR_CODES } from './common.js';

// Request-body adapters (adapters.js) and, in node.js and browser.js, createWorker().
import { Worker } from 'node:worker_threads';
import { adapters } from './adapters.js';
import { connect, checkWorkerOptions } from './worker-client.js';
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
