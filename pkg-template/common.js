// Shared by the Node and browser entries: the error class and the wrapped exports.

/** Every error code, as in src/error.rs (`ErrorKind::ALL`). */
export const ERROR_CODES = Object.freeze([
  'invalid_json',
  'invalid_input',
  'invalid_message',
  'invalid_options',
  'invalid_state',
  'mixed_format',
  'too_large',
  'invalid_model',
  'invalid_index',
  'embedder_mismatch',
  'internal',
]);

/** The error every function throws for bad input: a stable `code` and the `path` of the field. */
export class CondenseError extends Error {
  constructor(code, path, message, reason) {
    super(message);
    this.name = 'CondenseError';
    this.code = code;
    this.path = path;
    this.reason = reason ?? message;
  }
}

/** wasm-bindgen's own errors about an object, and what they mean to the caller. */
const OBJECT_ERRORS = [
  ['null pointer passed to rust', 'the object was freed (free()) and cannot be used any more'],
  ['Attempt to use a moved value', 'the object was freed (free()) and cannot be used any more'],
  ['recursive use of an object detected', 'the object is busy: a callback (onProgress) called into it while it was working; call it after the call returns'],
  ['Invalid stale object from previous Wasm instance', 'the object lived in a module instance that trapped and was replaced; create it again'],
];

function invalidState(path, reason) {
  return new CondenseError('invalid_state', path, `invalid_state${path ? ` at ${path}` : ''}: ${reason}`, reason);
}

/** Any error as what the package throws: a CondenseError with a code where one applies. */
function convert(e) {
  if (e instanceof CondenseError) return e;
  if (e && e.name === 'CondenseError' && typeof e.code === 'string') {
    return new CondenseError(e.code, e.path ?? '', e.message, e.reason);
  }
  const message = typeof e?.message === 'string' ? e.message : '';
  for (const [text, reason] of OBJECT_ERRORS) {
    if (message.includes(text)) return invalidState('', reason);
  }
  return e;
}

/** A trap (`WebAssembly.RuntimeError`: a bug, or memory exhausted) as the error callers get. */
function trapError(e) {
  const reason = `the wasm module trapped (${e.message}); it was replaced by a new instance, ` +
    'and objects made before (indexes, embedders) answer invalid_state. Please report this with the input';
  return new CondenseError('internal', '', `internal: ${reason}`, reason);
}

/** JSON text of a message array, or a CondenseError (not an array, cycles, BigInt). */
function stringifyMessages(messages) {
  if (!Array.isArray(messages)) {
    throw new CondenseError('invalid_input', 'messages', 'invalid_input at messages: expected an array of messages', 'expected an array of messages');
  }
  try {
    return JSON.stringify(messages);
  } catch (e) {
    throw new CondenseError('invalid_input', 'messages', `invalid_input at messages: ${e.message}`, e.message);
  }
}

/** String members at least this long go to wasm as UTF-16 and are quoted there ([`piecesOf`]). */
const LONG_STRING = 256;

/**
 * `JSON.stringify(messages)` in pieces: JSON text, then a long string's raw value, then JSON
 * text, and so on (`texts`, starting and ending with JSON text). In Node the core writes the
 * long strings as `JSON.stringify` would (it is several times faster than V8 11 at escaping
 * them; the `compress` export), so the joined result is the same text byte for byte. Plain
 * objects and arrays are walked (to a depth of 6: message, content, block, …) and their long
 * string values split off; every other value is written by `JSON.stringify` itself (one with a
 * `toJSON`, or a BigInt, through a holder so its `toJSON` gets its key), so every rule of it —
 * key order, omitted `undefined`s, `null` for what an array cannot hold, the errors — is its
 * own. `undefined` for what is not an array (or has its own `toJSON`): then `JSON.stringify`
 * writes it all.
 */
function piecesOf(messages) {
  if (!Array.isArray(messages) || typeof messages.toJSON === 'function') return undefined;
  const texts = [];
  let json = '';
  // Appends value `v` held under `key` (a string, or an index for an array element).
  const write = (v, key, depth) => {
    if (typeof v === 'string') {
      if (v.length >= LONG_STRING) {
        texts.push(json, v);
        json = '';
      } else {
        json += JSON.stringify(v);
      }
      return;
    }
    if (typeof v !== 'object' || v === null || depth > 6 || typeof v.toJSON === 'function') {
      json += held(v, key) ?? 'null'; // `undefined` is handled by the callers
      return;
    }
    if (Array.isArray(v)) {
      json += '[';
      for (let i = 0; i < v.length; i++) {
        if (i > 0) json += ',';
        const e = v[i];
        if (e === undefined || typeof e === 'function' || typeof e === 'symbol') json += 'null';
        else write(e, String(i), depth + 1);
      }
      json += ']';
      return;
    }
    if (Object.getPrototypeOf(v) !== Object.prototype) {
      json += held(v, key) ?? 'null';
      return;
    }
    json += '{';
    let first = true;
    for (const k of Object.keys(v)) {
      const member = v[k];
      if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
      // A member whose toJSON answers undefined is left out as JSON.stringify leaves it out.
      const own = writesItself(member) ? held(member, k) : null;
      if (own === undefined) continue;
      json += (first ? '' : ',') + JSON.stringify(k) + ':';
      if (own !== null) json += own;
      else write(member, k, depth + 1);
      first = false;
    }
    json += '}';
  };
  write(messages, '', 0);
  texts.push(json);
  return texts;
}

/** Whether JSON.stringify hands `v` to a `toJSON` with its key: an object with one, or a
 * BigInt (through `BigInt.prototype.toJSON`, if any: else it throws). */
function writesItself(v) {
  return typeof v === 'bigint' || (typeof v === 'object' && v !== null && typeof v.toJSON === 'function');
}

/** `v` as `JSON.stringify` writes it when held under `key` (its `toJSON` gets the key), or
 * `undefined` when it writes nothing there. */
function held(v, key) {
  if (writesItself(v)) {
    const holder = JSON.stringify({ [key]: v });
    return holder === '{}' ? undefined : holder.slice(JSON.stringify(key).length + 2, -1);
  }
  return JSON.stringify(v);
}


const LOAD_KEYS = new Set([
  'model', 'tokenizer', 'modelPath', 'tokenizerPath', 'modelUrl', 'tokenizerUrl',
  'maxTokens', 'batchSize', 'onProgress',
]);

function optionsError(path, reason) {
  return new CondenseError('invalid_options', path, `invalid_options at ${path}: ${reason}`, reason);
}

export function modelError(path, reason) {
  return new CondenseError('invalid_model', path, `invalid_model at ${path}: ${reason}`, reason);
}

/** Bytes given directly: a Uint8Array, an ArrayBuffer (or view), or (tokenizer) JSON text. */
function asBytes(value, path, textOk) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (textOk && typeof value === 'string') return new TextEncoder().encode(value);
  throw optionsError(path, textOk ? 'expected a Uint8Array, an ArrayBuffer or JSON text' : 'expected a Uint8Array or an ArrayBuffer');
}

/**
 * Reads a `Response` body, reporting `{phase: 'download', file, loaded, total}` as chunks
 * arrive (`total` from Content-Length, or null).
 */
export async function readResponse(response, file, path, onProgress) {
  if (!response.ok) throw modelError(path, `HTTP ${response.status} for ${response.url || file}`);
  const header = Number(response.headers.get('content-length'));
  const total = Number.isFinite(header) && header > 0 ? header : null;
  if (!onProgress || !response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onProgress?.({ phase: 'download', file, loaded: bytes.length, total: total ?? bytes.length });
    return bytes;
  }
  const reader = response.body.getReader();
  const parts = [];
  let loaded = 0;
  onProgress({ phase: 'download', file, loaded, total });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    loaded += value.length;
    onProgress({ phase: 'download', file, loaded, total });
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const p of parts) { bytes.set(p, at); at += p.length; }
  return bytes;
}

/** The digest a model is loaded with until its own is known (loadEmbedder). */
const PENDING_DIGEST = '0'.repeat(64);

/** The sha256 of `bytes` as hex with WebCrypto (Node >= 19, browsers in secure contexts), or
 * undefined where it is missing (the engine then hashes in wasm, ~20x slower). */
async function sha256Hex(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) return undefined;
  try {
    const d = new Uint8Array(await subtle.digest('SHA-256', bytes));
    return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
  } catch {
    return undefined;
  }
}

/** The public functions over an initialised wasm-bindgen module. `host` reads model files and
 * loads the model engine: `{ readPath(pathOrUrl, file, path, onProgress),
 * fetchUrl(url, file, path, onProgress), defaultSource(file) → {path} | {url},
 * engine(onProgress) → Promise<the initialised condense_embed glue> }`, and may copy a
 * string's UTF-16 code units into memory: `writeUtf16(text, arrayBuffer, byteOffset)`. */
export function wrap(glue, host) {
  let lexical = null;
  // The exact token counter of each model embedder (tokenCounter: 'model'): the engine's.
  const modelCounters = new WeakMap();
  // Which instance of the module is live: a trap replaces it (`recover`) and counts one up;
  // objects made earlier remember theirs and answer invalid_state.
  let generation = 0;
  let replaceFailed = false;
  /** After a trap: a new instance of the same module (its memory is lost with the old one). */
  const recover = () => {
    generation++;
    lexical = null;
    try {
      glue.__wbg_reset_state();
      replaceFailed = false;
    } catch {
      replaceFailed = true; // retried by the next call
    }
  };
  /** `f` with every error a CondenseError where one applies, and a trap survived. */
  const guard = (f) => function condense(...args) {
    if (replaceFailed) recover();
    try {
      return f(...args);
    } catch (e) {
      if (e instanceof WebAssembly.RuntimeError) {
        recover();
        throw trapError(e);
      }
      throw convert(e);
    }
  };
  /** An object made by the module (an index, an embedder): the glue object of one instance,
   * which answers invalid_state once freed, stale (made before a trap) or busy (called from its
   * own callback). */
  class Held {
    #inner;
    #generation = generation;
    #busy = false;
    #what;
    constructor(inner, what) { this.#inner = inner; this.#what = what; }
    /** The glue object, if it may be used now. */
    live() {
      if (this.#inner === null) throw invalidState(this.#what, `this ${this.#what} was freed (free()) and cannot be used any more`);
      if (this.#generation !== generation) {
        throw invalidState(this.#what, `this ${this.#what} lived in a module instance that trapped and was replaced; create it again`);
      }
      if (this.#busy) {
        throw invalidState(this.#what, `this ${this.#what} is busy: a callback (onProgress) called into it; call it after the call returns`);
      }
      return this.#inner;
    }
    /** `f(glue object)` with the object marked busy meanwhile (its callbacks run inside). */
    busy(f) {
      const inner = this.live();
      this.#busy = true;
      try {
        return f(inner);
      } finally {
        this.#busy = false;
      }
    }
    /** Releases the glue object: once; never into an instance it did not live in. */
    free() {
      if (this.#inner === null) return;
      if (this.#busy) this.live(); // throws: busy
      const inner = this.#inner;
      this.#inner = null;
      if (this.#generation === generation) inner.free();
    }
  }
  /** The embedder handed to callers: one wasm Embedder behind a Held. */
  class Embedder {
    #held;
    constructor(inner) { this.#held = new Held(inner, 'embedder'); }
    /** The glue object (throws invalid_state for a freed or stale embedder). */
    static inner(e) { return e.#held.live(); }
    identity() { return guard(() => this.#held.live().identity())(); }
    embed(texts) { return guard(() => this.#held.live().embed(texts))(); }
    loadInfo() { return guard(() => this.#held.live().loadInfo())(); }
    free() { guard(() => this.#held.free())(); }
  }
  const defaultEmbedder = () => {
    if (lexical === null) lexical = new Embedder(glue.Embedder.lexical());
    return Embedder.inner(lexical);
  };
  /** The messages' JSON text as the `compress` export takes it: `[input, units, bounds]` —
   * the text itself, or (in Node, with long strings) the text written into wasm memory as
   * UTF-16 pieces (piecesOf; host.writeUtf16) with their ends. */
  const messagesInput = (messages) => {
    if (host.writeUtf16 === undefined) return [stringifyMessages(messages), 0, undefined];
    let texts;
    try {
      texts = piecesOf(messages);
    } catch (e) {
      stringifyMessages(messages); // the same error as the plain path's
      throw e;
    }
    if (texts === undefined) return [stringifyMessages(messages), 0, undefined];
    // No long string: the one piece is JSON.stringify(messages).
    if (texts.length === 1) return [texts[0], 0, undefined];
    const bounds = new Uint32Array(texts.length);
    let units = 0;
    for (let k = 0; k < texts.length; k++) {
      units += texts[k].length;
      bounds[k] = units;
    }
    const at = glue.watermarkInput(units);
    const buffer = glue.wasmMemory().buffer;
    for (let k = 0, offset = at; k < texts.length; k++) {
      host.writeUtf16(texts[k], buffer, offset);
      offset += 2 * texts[k].length;
    }
    return [undefined, units, bounds];
  };
  /** Copies `text` into wasm memory as UTF-16 (host.writeUtf16): its length in code units. */
  const writeInput = (text) => {
    const at = glue.watermarkInput(text.length);
    host.writeUtf16(text, glue.wasmMemory().buffer, at);
    return text.length;
  };
  /** The glue embedder of `options.embedder` (the lexical one by default). */
  const embedderOf = (options) => {
    const e = options?.embedder;
    if (e === undefined || e === null) return defaultEmbedder();
    if (!(e instanceof Embedder)) {
      throw new CondenseError('invalid_options', 'options.embedder', 'invalid_options at options.embedder: expected an Embedder (lexicalEmbedder() or loadEmbedder())', 'expected an Embedder');
    }
    try {
      return Embedder.inner(e);
    } catch (err) {
      throw new CondenseError(err.code, 'options.embedder', `${err.code} at options.embedder: ${err.reason}`, err.reason);
    }
  };
  const withoutEmbedder = (options) => {
    if (options === undefined || options === null) return null;
    if (typeof options !== 'object' || Array.isArray(options)) return options;
    const { embedder, ...rest } = options;
    return rest;
  };
  const hasEmbedder = (options) => options?.embedder !== undefined && options?.embedder !== null;
  // The JS-only keys of compress options: functions and objects the core gets as arguments.
  const COMPRESS_JS_KEYS = ['embedder', 'countTokens', 'summarizer', 'summarizerConcurrency', 'cache', 'cacheKey'];

  /** Splits compress options into what the core reads as JSON and the call's context. Only
   * the values' types are checked here; which combinations are allowed is the core's rule. */
  const compressContext = (options) => {
    if (options === undefined || options === null || typeof options !== 'object' || Array.isArray(options)) {
      return { options: options ?? null, embedder: defaultEmbedder(), useEmbedder: false, withCache: false };
    }
    const rest = { ...options };
    for (const k of COMPRESS_JS_KEYS) delete rest[k];
    const useEmbedder = options.embedder !== undefined && options.embedder !== null;
    const embedder = embedderOf(options);
    let counter = options.countTokens;
    if (counter !== undefined && counter !== null && typeof counter !== 'function') {
      throw optionsError('options.countTokens', 'expected a function (text) => number');
    }
    if (counter === null) counter = undefined;
    // A model loaded by loadEmbedder() counts in its own module: its counter goes along for
    // `tokenCounter: "model"` (the core decides whether that goes with the rest).
    const modelCounter = useEmbedder ? modelCounters.get(embedder) : undefined;
    const summarizer = options.summarizer ?? undefined;
    if (summarizer !== undefined && typeof summarizer !== 'function') {
      throw optionsError('options.summarizer', 'expected a function (text, request) => Promise<string>');
    }
    const concurrency = options.summarizerConcurrency ?? 4;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw optionsError('options.summarizerConcurrency', 'expected an integer of at least 1');
    }
    const cacheKey = options.cacheKey ?? undefined;
    if (cacheKey !== undefined && (typeof cacheKey !== 'string' || cacheKey.length === 0)) {
      throw optionsError('options.cacheKey', 'expected a non-empty string (a secret the cache is bound to)');
    }
    return {
      options: rest, embedder, useEmbedder, counter, modelCounter, summarizer, concurrency,
      withCache: 'cache' in options, cache: options.cache ?? null, cacheKey,
    };
  };

  /** One call of the core: `input` as messagesInput gives it, `parts` for a bare array's
   * result as parts of the caller's objects. */
  const callCompress = ([input, units, bounds], ctx, options, cache, parts) => glue.compress(
    input, units, bounds, options, ctx.embedder, ctx.useEmbedder, ctx.counter, ctx.modelCounter,
    ctx.withCache, cache, ctx.cacheKey, parts);

  /** Both phases of the summariser protocol (method abstractive / hybrid): the core's requests,
   * the summaries awaited `concurrency` at a time (a failure keeps the deterministic summary and
   * is counted), then the compression with `summaries`. `makeInput()` gives the input as
   * messagesInput does; `finish(result)` makes the caller's result of the core's. */
  const compressWithSummarizer = async (makeInput, ctx, parts, finish) => {
    const { options, summarizer, concurrency } = ctx;
    const first = guard(() => callCompress(makeInput(), ctx, options, ctx.cache, parts))();
    const requests = first.requests ?? [];
    const summaries = { ...(options?.summaries ?? {}) };
    const warnings = [];
    let failed = 0;
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const r = requests[next++];
        if (Object.hasOwn(summaries, r.id)) continue;
        try {
          const text = await summarizer(r.text, {
            id: r.id, targetTokens: r.targetTokens, originalTokens: r.originalTokens,
            role: r.role, kind: r.kind, index: r.index, block: r.block,
            method: options.method, query: options.query,
          });
          if (typeof text === 'string') {
            summaries[r.id] = text;
          } else {
            failed++;
            warnings.push(`summarizer returned ${text === null ? 'null' : typeof text} for ${r.id}: the deterministic summary is kept`);
          }
        } catch (e) {
          failed++;
          warnings.push(`summarizer failed for ${r.id}: ${e?.message ?? String(e)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, worker));
    // The input made again: in Node it is written into wasm memory, which other calls reuse.
    const out = finish(guard(() => callCompress(makeInput(), ctx, { ...options, summaries }, first.cache ?? ctx.cache, parts))());
    const stats = out.stats;
    stats.summarizer = { accepted: 0, rejected: 0, ...(stats.summarizer ?? {}), requested: requests.length, failed };
    if (warnings.length > 0) stats.warnings = [...(stats.warnings ?? []), ...warnings];
    return out;
  };

  /** compress's result assembled from the core's parts: untouched messages and the originals
   * in `verbatim` are the caller's own objects (as applyWatermark's are); only new messages
   * are parsed. */
  const assemble = (messages, r) => {
    const extra = r.cache !== undefined ? { cache: r.cache } : {};
    if (r.json !== undefined) {
      return { messages: JSON.parse(r.json), verbatim: JSON.parse(r.verbatim), stats: r.stats, trace: r.trace, ...extra };
    }
    const fresh = r.fresh.length > 2 ? JSON.parse(r.fresh) : [];
    const out = new Array(r.keep.length);
    for (let k = 0, f = 0; k < out.length; k++) {
      const src = r.keep[k];
      out[k] = src === 0xffffffff ? fresh[f++] : messages[src];
    }
    const verbatim = {};
    for (let v = 0, k = 0; v < r.verbatimIds.length; v++) {
      const n = r.verbatimIndex[k++];
      const originals = new Array(n);
      for (let j = 0; j < n; j++) originals[j] = messages[r.verbatimIndex[k++]];
      verbatim[r.verbatimIds[v]] = originals;
    }
    return { messages: out, verbatim, stats: r.stats, trace: r.trace, ...extra };
  };

  /** compressJson's result. */
  const written = (r) => {
    const out = { json: r.json, verbatim: r.verbatim, stats: r.stats, trace: r.trace };
    if (r.cache !== undefined) out.cache = r.cache;
    return out;
  };

  /** An in-memory hybrid index (BM25 + vectors); see index.d.ts. */
  class Index {
    #held;
    constructor(inner) { this.#held = new Held(inner, 'index'); }
    static create(options) {
      return guard(() => new Index(glue.Index.create(embedderOf(options), withoutEmbedder(options))))();
    }
    static deserialize(bytes, options) {
      return guard(() => {
        if (!(bytes instanceof Uint8Array)) {
          throw new CondenseError('invalid_input', 'bytes', 'invalid_input at bytes: expected a Uint8Array', 'expected a Uint8Array');
        }
        return new Index(glue.Index.deserialize(bytes, embedderOf(options)));
      })();
    }
    add(documents, options) {
      return guard(() => {
        const onProgress = options?.onProgress;
        const cb = typeof onProgress === 'function' ? (phase, done, total) => onProgress({ phase, done, total }) : undefined;
        return this.#held.busy((inner) => inner.add(documents, cb));
      })();
    }
    remove(ids) { return guard(() => this.#held.live().remove(ids))(); }
    get(id) { return guard(() => this.#held.live().get(String(id)))(); }
    get size() { return guard(() => this.#held.live().size)(); }
    get chunks() { return guard(() => this.#held.live().chunks)(); }
    identity() { return guard(() => this.#held.live().identity())(); }
    serialize() { return guard(() => this.#held.live().serialize())(); }
    query(question, options) {
      return guard(() => {
        if (typeof question !== 'string') throw new CondenseError('invalid_input', 'question', 'invalid_input at question: expected a string', 'expected a string');
        return this.#held.live().query(question, options ?? null);
      })();
    }
    free() { guard(() => this.#held.free())(); }
  }

  /** Loads the MiniLM embedder: bytes, paths (Node), URLs, or the files shipped in the package. */
  async function loadEmbedder(options) {
    const opts = options ?? {};
    if (typeof opts !== 'object' || Array.isArray(opts)) throw optionsError('options', 'expected an object');
    for (const key of Object.keys(opts)) {
      if (!LOAD_KEYS.has(key)) throw optionsError(`options.${key}`, `unknown option (expected one of ${[...LOAD_KEYS].join(', ')})`);
    }
    const onProgress = opts.onProgress;
    if (onProgress !== undefined && typeof onProgress !== 'function') throw optionsError('options.onProgress', 'expected a function');
    for (const key of ['maxTokens', 'batchSize']) {
      if (opts[key] !== undefined && !Number.isInteger(opts[key])) throw optionsError(`options.${key}`, 'expected an integer');
    }
    const source = async (file) => {
      const bytesKey = file;
      const pathKey = `${file}Path`;
      const urlKey = `${file}Url`;
      const given = [bytesKey, pathKey, urlKey].filter((k) => opts[k] !== undefined && opts[k] !== null);
      if (given.length > 1) throw optionsError(`options.${given[1]}`, `give only one of ${given.join(', ')}`);
      if (given[0] === bytesKey) return asBytes(opts[bytesKey], `options.${bytesKey}`, file === 'tokenizer');
      if (given[0] === pathKey) return host.readPath(opts[pathKey], file, `options.${pathKey}`, onProgress);
      if (given[0] === urlKey) return host.fetchUrl(opts[urlKey], file, `options.${urlKey}`, onProgress);
      const def = host.defaultSource(file);
      return def.path !== undefined
        ? host.readPath(def.path, file, `options.${pathKey}`, onProgress)
        : host.fetchUrl(def.url, file, `options.${urlKey}`, onProgress);
    };
    const [engine, model, tokenizer] = await Promise.all([
      host.engine(onProgress), source('model'), source('tokenizer'),
    ]);
    onProgress?.({ phase: 'load', file: 'model', loaded: 0, total: model.length });
    const settings = {};
    if (opts.maxTokens !== undefined) settings.maxTokens = opts.maxTokens;
    if (opts.batchSize !== undefined) settings.batchSize = opts.batchSize;
    // WebCrypto hashes the model on its own thread while the engine loads it (a stand-in
    // digest meanwhile, set once known); where WebCrypto is missing, the engine hashes it.
    const digest = sha256Hex(model);
    // The model runs in its own wasm module (the engine); the core wraps it as an embedder.
    const m = guard(() => engine.Model.fromBytes(model, tokenizer, JSON.stringify(settings), PENDING_DIGEST))();
    const hex = (await digest) ?? engine.Model.sha256Hex(model);
    return guard(() => {
      try {
        m.setModelSha256(hex);
      } catch (e) {
        // Stale when the engine was reset meanwhile (a trap elsewhere): then free() throws too.
        try { m.free(); } catch { /* the reset freed it */ }
        throw e;
      }
      const embedder = modelEmbedder(engine, m);
      onProgress?.({ phase: 'load', file: 'model', loaded: model.length, total: model.length });
      return embedder;
    })();
  }

  /**
   * The Embedder over a model loaded in the engine module. A function of its own, not a closure
   * inside loadEmbedder(): V8 keeps a closure's whole enclosing scope alive, and that scope holds
   * the model's and tokenizer's bytes (22 MB) that the engine has already copied.
   */
  function modelEmbedder(engine, m) {
    // A trap in the engine's module replaces that instance as `guard` does the core's (every
    // model loaded in it is then stale: invalid_state); the core reports the CondenseError.
    const embedFlat = (texts) => {
      try {
        return m.embedFlat(texts);
      } catch (e) {
        if (e instanceof WebAssembly.RuntimeError) {
          try { engine.__wbg_reset_state(); } catch { /* the next load instantiates it */ }
          throw trapError(e);
        }
        throw convert(e);
      }
    };
    const inner = glue.Embedder.external(JSON.parse(m.identity()), JSON.parse(m.loadInfo()), embedFlat);
    modelCounters.set(inner, (text) => m.countTokens(text));
    return new Embedder(inner);
  }

  /** An embedder over your own synchronous function (see index.d.ts). */
  function externalEmbedder(identity, embedFn) {
    if (typeof embedFn !== 'function') throw optionsError('embed', 'expected a function');
    if (identity === null || typeof identity !== 'object' || Array.isArray(identity)) {
      throw optionsError('identity', 'expected {kind, modelSha256, dims, maxTokens, version}');
    }
    const call = (texts) => {
      const out = embedFn(texts);
      if (out instanceof Float32Array) return out;
      if (!Array.isArray(out) || out.length !== texts.length) {
        throw modelError('embedder', `expected ${texts.length} vectors (an array of Float32Array or one flat Float32Array)`);
      }
      const flat = new Float32Array(out.length * 384);
      out.forEach((v, i) => {
        if (!v || v.length !== 384) throw modelError(`embedder[${i}]`, 'expected 384 values');
        flat.set(v, i * 384);
      });
      return flat;
    };
    return guard(() => new Embedder(glue.Embedder.external(identity, null, call)))();
  }

  return {
    Index,
    glueEmbedderOf: (embedder) => embedderOf({ embedder }),
    loadEmbedder,
    externalEmbedder,
    query: (index, question, options) => {
      if (!(index instanceof Index)) throw new CondenseError('invalid_input', 'index', 'invalid_input at index: expected an Index', 'expected an Index');
      return index.query(question, options);
    },
    compressResults: guard((candidates, question, options) => {
      if (typeof question !== 'string') throw new CondenseError('invalid_input', 'question', 'invalid_input at question: expected a string', 'expected a string');
      return glue.compressResults(candidates, question, withoutEmbedder(options), embedderOf(options));
    }),
    embed: guard((texts, options) => embedderOf(options).embed(texts)),
    lexicalEmbedder: guard(() => {
      defaultEmbedder();
      return lexical;
    }),
    applyWatermark: guard((messages, state, options) => {
      const text = stringifyMessages(messages);
      const plan = glue.watermarkPlan(text, state ?? null, options ?? null);
      // Untouched messages are the caller's own objects; rewritten ones are parsed once.
      const fresh = plan.fresh.length > 2 ? JSON.parse(plan.fresh) : [];
      const out = new Array(plan.keep.length);
      for (let i = 0, k = 0; i < plan.keep.length; i++) {
        const src = plan.keep[i];
        out[i] = src === 0xffffffff ? fresh[k++] : messages[src];
      }
      return { messages: out, state: plan.state, stats: plan.stats, warnings: plan.warnings };
    }),
    applyWatermarkJson: guard((json, state, options) => {
      if (typeof json !== 'string') throw new CondenseError('invalid_input', 'json', 'expected JSON text', 'expected JSON text');
      // Where the host copies strings' UTF-16 code units into wasm memory (Node), the text goes
      // in that way and is encoded to UTF-8 in wasm: much faster than encoding it in JS.
      const r = host.writeUtf16 !== undefined
        ? glue.watermarkJsonPartsUtf16(writeInput(json), state ?? null, options ?? null)
        : glue.watermarkJsonParts(json, state ?? null, options ?? null);
      if (r.json !== undefined) return r; // a request body: written in wasm
      // A bare array: untouched messages are slices of the caller's string (never decoded
      // back from UTF-8), rewritten ones come from `fresh`; the same text the core writes.
      const { parts, fresh } = r;
      let out = '[';
      for (let k = 0, f = 0; k < parts.length; k += 2) {
        if (k > 0) out += ',';
        if (parts[k] === 0xffffffff) {
          out += fresh.slice(f, f + parts[k + 1]);
          f += parts[k + 1];
        } else {
          out += json.slice(parts[k], parts[k + 1]);
        }
      }
      out += ']';
      return { json: out, state: r.state, stats: r.stats, warnings: r.warnings };
    }),
    validate: guard((messages, options) => glue.validate(messages, options ?? null)),
    // A Promise only when a summarizer is given (see index.d.ts).
    compress: guard((messages, options) => {
      if (!Array.isArray(messages)) throw new CondenseError('invalid_input', 'messages', 'invalid_input at messages: expected an array of messages', 'expected an array of messages');
      const ctx = compressContext(options);
      if (ctx.summarizer !== undefined) {
        return compressWithSummarizer(() => messagesInput(messages), ctx, true, (r) => assemble(messages, r));
      }
      return assemble(messages, callCompress(messagesInput(messages), ctx, ctx.options, ctx.cache, true));
    }),
    compressJson: guard((json, options) => {
      if (typeof json !== 'string') throw new CondenseError('invalid_input', 'json', 'expected JSON text', 'expected JSON text');
      const ctx = compressContext(options);
      const input = () => [json, 0, undefined];
      if (ctx.summarizer !== undefined) return compressWithSummarizer(input, ctx, false, written);
      // Written in wasm: assembling the text here from slices of `json` measured no faster.
      return written(callCompress(input(), ctx, ctx.options, ctx.cache, false));
    }),
    uncompress: guard((messages, verbatim) => glue.uncompress(messages, verbatim ?? null)),
    prepareContext: guard((chunks, options) => glue.prepareContext(
      chunks, withoutEmbedder(options), embedderOf(options), hasEmbedder(options))),
    version: () => glue.version(),
  };
}
