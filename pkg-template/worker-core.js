// The worker side of createWorker(): answers the client's requests (worker-client.js) with the
// package's functions. Used by worker.js (Web Worker) and worker-node.js (worker_threads).
//
// Protocol: requests {id, op, args}; answers {id, ok: true, value} or {id, ok: false, error};
// progress of Index.add as {id, progress: {phase, done, total}}.
import { CondenseError } from './common.js';

/** The functions a client may call by name, with their arguments as sent. */
const CALLS = [
  'applyWatermark', 'applyWatermarkJson', 'validate', 'compress', 'compressJson', 'uncompress',
  'prepareContext', 'compressResults', 'watermarkRequest', 'compressRequest', 'prepareRequest', 'version',
];

function errorRecord(e) {
  if (e instanceof CondenseError || (e && e.name === 'CondenseError' && typeof e.code === 'string')) {
    return { name: 'CondenseError', code: e.code, path: e.path ?? '', message: e.message, reason: e.reason ?? e.message };
  }
  return { name: (e && e.name) || 'Error', message: String((e && e.message) || e), stack: e && e.stack };
}

/** Buffers of typed arrays in a result, to transfer instead of copy. */
function transferables(value) {
  // Only arrays that own their whole buffer (never a view of wasm memory).
  const owned = (v) => (v instanceof Uint8Array || v instanceof Float32Array) && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength;
  if (owned(value)) return [value.buffer];
  if (Array.isArray(value) && value.length > 0 && value.every(owned)) return [...new Set(value.map((v) => v.buffer))];
  return [];
}

/**
 * Serves requests arriving on `port` (`post(message, transfer)` and `listen(handler)`) with
 * `api`, the package's exports. Embedders are made here, from structured-cloneable options.
 */
export function serve(api, port) {
  let embedder = null;
  const indexes = new Map();
  let nextIndex = 1;

  async function makeEmbedder(choice) {
    if (choice === undefined || choice === null || choice === 'lexical') return api.lexicalEmbedder();
    let options;
    if (choice === 'minilm') options = undefined;
    else if (typeof choice === 'object' && !Array.isArray(choice) && 'minilm' in choice) options = choice.minilm ?? undefined;
    else throw new CondenseError('invalid_options', 'options.embedder', 'invalid_options at options.embedder: expected "lexical", "minilm" or {minilm: loadEmbedder options}', 'expected "lexical", "minilm" or {minilm: loadEmbedder options}');
    if (typeof api.loadEmbedder !== 'function') {
      throw new CondenseError('invalid_options', 'options.embedder', 'invalid_options at options.embedder: this build of condense-ctx has no loadEmbedder (MiniLM)', 'this build of condense-ctx has no loadEmbedder (MiniLM)');
    }
    return api.loadEmbedder(options);
  }

  function indexOf(handle) {
    const index = indexes.get(handle);
    if (!index) throw new CondenseError('invalid_state', 'index', 'invalid_state at index: the index was freed', 'the index was freed');
    return index;
  }

  async function run(id, op, args) {
    switch (op) {
      case 'init':
        embedder = await makeEmbedder(args[0]?.embedder);
        return { version: api.version(), embedder: embedder.identity() };
      case 'embed':
        return api.embed(args[0], { embedder });
      case 'compressResults':
        return api.compressResults(args[0], args[1], { ...(args[2] ?? {}), embedder });
      case 'indexCreate': {
        const index = api.Index.create({ ...(args[0] ?? {}), embedder });
        indexes.set(nextIndex, index);
        return nextIndex++;
      }
      case 'indexDeserialize': {
        const index = api.Index.deserialize(args[0], { embedder });
        indexes.set(nextIndex, index);
        return nextIndex++;
      }
      case 'indexAdd': {
        const [handle, documents, wantProgress] = args;
        const onProgress = wantProgress ? (progress) => port.post({ id, progress }) : undefined;
        const added = indexOf(handle).add(documents, { onProgress });
        const index = indexOf(handle);
        return { added, size: index.size, chunks: index.chunks };
      }
      case 'indexRemove': {
        const index = indexOf(args[0]);
        const removed = index.remove(args[1]);
        return { removed, size: index.size, chunks: index.chunks };
      }
      case 'indexGet':
        return indexOf(args[0]).get(args[1]);
      case 'indexQuery':
        return indexOf(args[0]).query(args[1], args[2]);
      case 'indexSerialize':
        return indexOf(args[0]).serialize();
      case 'indexInfo': {
        const index = indexOf(args[0]);
        return { size: index.size, chunks: index.chunks, identity: index.identity() };
      }
      case 'indexFree':
        indexOf(args[0]).free();
        indexes.delete(args[0]);
        return undefined;
      default:
        if (CALLS.includes(op)) return api[op](...args);
        throw new CondenseError('invalid_input', 'op', `invalid_input at op: unknown operation ${JSON.stringify(op)}`, `unknown operation ${JSON.stringify(op)}`);
    }
  }

  // One request at a time, in arrival order (the wasm instance is single-threaded anyway).
  let queue = Promise.resolve();
  port.listen((message) => {
    // A client that attached to an already started worker may have missed `ready`: it pings.
    if (message?.op === 'ping' && message.id === undefined) { port.post({ ready: true }); return; }
    const { id, op, args } = message ?? {};
    queue = queue.then(async () => {
      try {
        const value = await run(id, op, Array.isArray(args) ? args : []);
        port.post({ id, ok: true, value }, transferables(value));
      } catch (e) {
        port.post({ id, ok: false, error: errorRecord(e) });
      }
    });
  });
}
