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
