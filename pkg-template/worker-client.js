// The caller's side of createWorker(): every function returns a Promise; the work runs in a
// Web Worker (browsers) or a worker_threads Worker (Node). See worker-core.js for the protocol.
import { CondenseError } from './common.js';

function toError(record) {
  if (record.name === 'CondenseError') return new CondenseError(record.code, record.path, record.message, record.reason);
  const e = new Error(record.message);
  e.name = record.name;
  if (record.stack) e.stack = record.stack;
  return e;
}

const stopped = (why) => new CondenseError('invalid_state', 'worker', `invalid_state at worker: ${why}`, why);

/**
 * Connects to a started worker. `endpoint`: `post(message, transfer)`, `listen(onMessage)`,
 * `onFailure(handler)` (worker error or exit) and `terminate()` (a Promise).
 */
export async function connect(endpoint, options) {
  const pending = new Map();
  let nextId = 1;
  let failure = null;
  let readyResolve;
  let readyReject;
  const ready = new Promise((resolve, reject) => { readyResolve = resolve; readyReject = reject; });

  endpoint.listen((message) => {
    if (message && message.ready === true) { readyResolve(); return; }
    if (message && typeof message.failed === 'string') { fail(message.failed); return; }
    const call = pending.get(message?.id);
    if (!call) return;
    if (message.progress) {
      if (call.onProgress) {
        try { call.onProgress(message.progress); } catch { /* the caller's callback; never breaks the call */ }
      }
      return;
    }
    pending.delete(message.id);
    endpoint.busy?.(pending.size > 0);
    if (message.ok) call.resolve(message.value);
    else call.reject(toError(message.error));
  });

  const fail = (why) => {
    if (failure) return;
    failure = why;
    const error = stopped(why);
    readyReject(error);
    for (const call of pending.values()) call.reject(error);
    pending.clear();
  };
  endpoint.onFailure(fail);
  // A worker passed in may have said `ready` before we listened: ask again (a worker still
  // loading drops the ping and says `ready` when it is).
  try { endpoint.post({ op: 'ping' }, []); } catch { /* reported by onFailure */ }

  function call(op, args, onProgress, transfer) {
    if (failure) return Promise.reject(stopped(failure));
    return new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject, onProgress });
      endpoint.busy?.(true);
      try {
        endpoint.post({ id, op, args }, transfer ?? []);
      } catch (e) {
        // Arguments that cannot be cloned (functions, class instances such as an Embedder).
        pending.delete(id);
        endpoint.busy?.(pending.size > 0);
        reject(new CondenseError('invalid_input', op, `invalid_input at ${op}: the arguments cannot be sent to the worker (${e.message})`, `the arguments cannot be sent to the worker (${e.message})`));
      }
    });
  }

  class WorkerIndex {
    #handle;
    #size = 0;
    #chunks = 0;
    constructor(handle, info) { this.#handle = handle; this.#size = info.size; this.#chunks = info.chunks; }
    get size() { return this.#size; }
    get chunks() { return this.#chunks; }
    async add(documents, opts) {
      const onProgress = typeof opts?.onProgress === 'function' ? opts.onProgress : undefined;
      const r = await call('indexAdd', [this.#handle, documents, !!onProgress], onProgress);
      this.#size = r.size;
      this.#chunks = r.chunks;
      return r.added;
    }
    async remove(ids) {
      const r = await call('indexRemove', [this.#handle, ids]);
      this.#size = r.size;
      this.#chunks = r.chunks;
      return r.removed;
    }
    get(id) { return call('indexGet', [this.#handle, String(id)]); }
    query(question, opts) { return call('indexQuery', [this.#handle, question, opts ?? null]); }
    serialize() { return call('indexSerialize', [this.#handle]); }
    async identity() { return (await call('indexInfo', [this.#handle])).identity; }
    free() { return call('indexFree', [this.#handle]); }
  }

  const newIndex = async (handle) => new WorkerIndex(handle, await call('indexInfo', [handle]));

  const api = {
    applyWatermark: (messages, state, opts) => call('applyWatermark', [messages, state ?? null, opts ?? null]),
    applyWatermarkJson: (json, state, opts) => call('applyWatermarkJson', [json, state ?? null, opts ?? null]),
    validate: (messages, opts) => call('validate', [messages, opts ?? null]),
    compress: (messages, opts) => call('compress', [messages, opts ?? null]),
    compressJson: (json, opts) => call('compressJson', [json, opts ?? null]),
    uncompress: (messages, verbatim) => call('uncompress', [messages, verbatim ?? null]),
    prepareContext: (chunks, opts) => call('prepareContext', [chunks, opts ?? null]),
    compressResults: (candidates, question, opts) => call('compressResults', [candidates, question, opts ?? null]),
    watermarkRequest: (body, state, opts) => call('watermarkRequest', [body, state ?? null, opts ?? null]),
    compressRequest: (body, opts) => call('compressRequest', [body, opts ?? null]),
    prepareRequest: (body, opts) => call('prepareRequest', [body, opts ?? null]),
    embed: (texts) => call('embed', [texts]),
    createIndex: async (opts) => {
      if (opts?.embedder !== undefined) {
        throw new CondenseError('invalid_options', 'options.embedder', 'invalid_options at options.embedder: a worker index uses the worker\'s embedder (createWorker({ embedder }))', 'a worker index uses the worker\'s embedder (createWorker({ embedder }))');
      }
      return newIndex(await call('indexCreate', [opts ?? null]));
    },
    loadIndex: async (bytes) => {
      if (!(bytes instanceof Uint8Array)) throw new CondenseError('invalid_input', 'bytes', 'invalid_input at bytes: expected a Uint8Array', 'expected a Uint8Array');
      return newIndex(await call('indexDeserialize', [bytes]));
    },
    async terminate() {
      fail('terminated');
      await endpoint.terminate();
    },
  };

  try {
    await ready;
    const info = await call('init', [{ embedder: options?.embedder ?? 'lexical' }]);
    api.version = info.version;
    api.embedder = info.embedder;
  } catch (e) {
    await api.terminate().catch(() => {});
    throw e;
  }
  return api;
}

export function checkWorkerOptions(options) {
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw new CondenseError('invalid_options', 'options', 'invalid_options at options: expected an object', 'expected an object');
  }
  for (const key of Object.keys(options ?? {})) {
    if (key !== 'embedder' && key !== 'worker') {
      throw new CondenseError('invalid_options', `options.${key}`, `invalid_options at options.${key}: unknown option (expected embedder, worker)`, 'unknown option (expected embedder, worker)');
    }
  }
}

/** createWorker() for browsers: a module Web Worker running worker.js (or `options.worker`). */
export async function createBrowserWorker(options) {
  checkWorkerOptions(options);
  const given = options?.worker;
  // The literal `new Worker(new URL(...), { type: 'module' })` is what bundlers (Vite, webpack) follow.
  const worker = given === undefined
    ? new Worker(new URL('./worker.js', import.meta.url), { type: 'module' })
    : typeof given === 'string' || given instanceof URL ? new Worker(given, { type: 'module' }) : given;
  return connect({
    post: (message, transfer) => worker.postMessage(message, transfer),
    listen: (handler) => worker.addEventListener('message', (event) => handler(event.data)),
    onFailure: (fail) => {
      worker.addEventListener('error', (event) => fail(event.message
        ? `the worker failed: ${event.message}`
        : given === undefined
          ? 'the worker script could not be loaded (a bundler that does not follow new Worker(new URL(...)), such as esbuild, needs createWorker({ worker }): see the README)'
          : 'the worker script could not be loaded'));
      worker.addEventListener('messageerror', () => fail('a message from the worker could not be read'));
    },
    terminate: async () => worker.terminate(),
  }, options);
}

const badWorkers = (why) => new CondenseError('invalid_options', 'workers', `invalid_options at workers: ${why}`, why);

/**
 * Embeds `texts` on several workers at once (each from createWorker({ embedder })), one share
 * per worker, and returns the vectors in input order. The shares are dealt from the texts sorted
 * by length, so every worker gets as much work and its batches stay tightly padded. A text's
 * vector does not depend on its share (the embedder's batch independence), so the result is
 * the one `embed` gives, to float rounding. See index.d.ts.
 */
export async function embedParallel(texts, workers) {
  if (!Array.isArray(workers) || workers.length === 0) throw badWorkers('expected a non-empty array of workers from createWorker()');
  workers.forEach((w, i) => {
    if (!w || typeof w.embed !== 'function' || !w.embedder) {
      throw new CondenseError('invalid_options', `workers[${i}]`, `invalid_options at workers[${i}]: not a worker from createWorker()`, 'not a worker from createWorker()');
    }
  });
  const same = (a, b) => a.kind === b.kind && a.modelSha256 === b.modelSha256 && a.dims === b.dims
    && a.maxTokens === b.maxTokens && a.version === b.version;
  const first = workers[0].embedder;
  workers.forEach((w, i) => {
    if (!same(w.embedder, first)) {
      throw new CondenseError('invalid_options', `workers[${i}]`, `invalid_options at workers[${i}]: its embedder differs from workers[0]'s`, "its embedder differs from workers[0]'s");
    }
  });
  if (!Array.isArray(texts)) throw new CondenseError('invalid_input', 'texts', 'invalid_input at texts: expected an array of strings', 'expected an array of strings');
  texts.forEach((t, i) => {
    if (typeof t !== 'string') throw new CondenseError('invalid_input', `texts[${i}]`, `invalid_input at texts[${i}]: expected a string`, 'expected a string');
  });
  if (workers.length === 1 || texts.length <= 1) return workers[0].embed(texts);
  // Longest first, dealt round robin: shares of equal size and near-equal length.
  const order = texts.map((_, i) => i).sort((a, b) => texts[b].length - texts[a].length || a - b);
  const shares = workers.map(() => []);
  order.forEach((i, k) => shares[k % workers.length].push(i));
  const results = await Promise.all(shares.map((share, w) => (share.length === 0
    ? []
    : workers[w].embed(share.map((i) => texts[i])))));
  const out = new Array(texts.length);
  shares.forEach((share, w) => share.forEach((i, k) => { out[i] = results[w][k]; }));
  return out;
}
