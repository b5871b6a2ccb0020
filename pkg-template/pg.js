// condense-ctx/pg: the retrieval pipeline of query() over PostgreSQL + pgvector (Node).
//
// Chunking, BM25 analysis and embedding run here (wasm; embedding on worker threads when
// there are cores to spare); the rows live in PostgreSQL: dense candidates come from a pgvector
// HNSW index, lexical candidates from BM25 computed in SQL over term statistics condense keeps
// in its own tables; fusion, calibrated scores and result compression run here again, on the
// rows returned. docs/pg.md describes the schema, its migrations and the limits.
import { availableParallelism } from 'node:os';
import * as glue from './condense.js';
import { CondenseError, compressResults, createWorker, embedParallel, glueEmbedderOf } from './node.js';

/** The schema this release writes and reads (the `schema_version` row of `<table>_meta`). */
export const SCHEMA_VERSION = 1;

const DIMS = 384;

/** The neighbours the dense list fetches from the HNSW index when a query's options do not set
 * `candidates` (`open({denseCandidates})` changes it): the in-memory index's 1000. Fusion
 * normalises the dense side by its list's lowest cosine, so a shallower list moves the ranking;
 * with pseudo-relevance feedback (which learns from the first fusion's top 10) 500 fell outside
 * 0.005 nDCG@10 of the in-memory index on the dev sets (docs/pg.md, "How a query runs"). */
const DEFAULT_DENSE_CANDIDATES = 1000;

/** The postings per term, best impact first, the expanded query of pseudo-relevance feedback
 * reads (`open({feedbackPostingsPerTerm})`; null: all). Its terms are the feedback chunks'
 * most frequent ones, often in a third or more of a large table's chunks: read whole, they made
 * a query at 100k chunks ~3× slower (docs/pg.md, "How a query runs"). */
const DEFAULT_FEEDBACK_POSTINGS = 1000;

function fail(code, path, reason) {
  return new CondenseError(code, path, `${code} at ${path}: ${reason}`, reason);
}

/** Runs `f`, turning the core's errors into CondenseError instances. */
function guard(f) {
  try {
    return f();
  } catch (e) {
    if (e && e.name === 'CondenseError' && !(e instanceof CondenseError) && typeof e.code === 'string') {
      throw new CondenseError(e.code, e.path ?? '', e.message, e.reason);
    }
    throw e;
  }
}

// ------------------------------------------------------------------ names

const IDENT = /^[a-z_][a-z0-9_]{0,47}$/;

/** The quoted names of a table's objects; `table` is `name` or `schema.name` (lower case). */
function namesOf(table) {
  if (typeof table !== 'string') throw fail('invalid_options', 'options.table', 'expected a table name');
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((p) => IDENT.test(p))) {
    throw fail('invalid_options', 'options.table', 'expected `name` or `schema.name`: lower-case letters, digits and _, at most 48 characters each');
  }
  const name = parts.at(-1);
  const schema = parts.length === 2 ? `"${parts[0]}".` : '';
  const q = (suffix) => `${schema}"${name}${suffix}"`;
  return {
    table,
    chunks: q(''),
    docs: q('_docs'),
    terms: q('_terms'),
    postings: q('_postings'),
    stats: q('_stats'),
    meta: q('_meta'),
    // Index names live in the table's schema; only the bare name is given.
    index: (suffix) => `"${name}_${suffix}"`,
    lock: `condense:${table}`,
  };
}

// ------------------------------------------------------------------ schema

/**
 * The migrations, in order: each takes the schema from `version - 1` to `version` and runs in
 * the transaction that holds the table's advisory lock, so concurrent `open()`s apply it once.
 * `ctx`: `{n, identity, options}`. A released migration is never edited: add the next one.
 */
const MIGRATIONS = [
  {
    version: 1,
    statements: ({ n, identity, options }) => {
      const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
      return [
        `CREATE TABLE ${n.meta} (key text PRIMARY KEY, value jsonb NOT NULL)`,
        `CREATE TABLE ${n.docs} (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          doc_id text NOT NULL UNIQUE,
          path text,
          title text,
          chunk_path text,
          metadata jsonb,
          hash text NOT NULL,
          chunks integer NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now())`,
        // Every row names the embedder that made its vector; the constraints pin the table's
        // one embedder, so no client can mix two.
        `CREATE TABLE ${n.chunks} (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          doc bigint NOT NULL REFERENCES ${n.docs} (id) ON DELETE CASCADE,
          chunk_id text NOT NULL UNIQUE,
          ordinal integer NOT NULL,
          header_path text[] NOT NULL,
          content text NOT NULL,
          hash text NOT NULL,
          terms integer NOT NULL,
          embedder text NOT NULL CHECK (embedder = ${lit(embedderName(identity))}),
          model_sha256 text NOT NULL CHECK (model_sha256 = ${lit(identity.modelSha256 ?? '')}),
          embedding vector(${DIMS}) NOT NULL)`,
        `CREATE INDEX ${n.index('doc')} ON ${n.chunks} (doc)`,
        `CREATE INDEX ${n.index('hash')} ON ${n.chunks} (hash)`,
        `CREATE INDEX ${n.index('hnsw')} ON ${n.chunks} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)`,
        `CREATE TABLE ${n.terms} (
          id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          term text NOT NULL UNIQUE,
          df integer NOT NULL)`,
        // One row per (term, chunk). `impact` is the term's BM25 saturation in the chunk at
        // write time: it orders a term's postings so that a query reads the best first.
        `CREATE TABLE ${n.postings} (
          term integer NOT NULL,
          chunk bigint NOT NULL,
          tf integer NOT NULL,
          len integer NOT NULL,
          impact real NOT NULL)`,
        `CREATE INDEX ${n.index('postings_impact')} ON ${n.postings} (term, impact DESC, chunk) INCLUDE (tf, len)`,
        `CREATE INDEX ${n.index('postings_chunk')} ON ${n.postings} (chunk)`,
        `CREATE TABLE ${n.stats} (
          one boolean PRIMARY KEY DEFAULT true CHECK (one),
          docs bigint NOT NULL,
          chunks bigint NOT NULL,
          total_terms bigint NOT NULL)`,
        `INSERT INTO ${n.stats} VALUES (true, 0, 0, 0)`,
        `INSERT INTO ${n.meta} VALUES
          ('embedder', ${lit(JSON.stringify(identity))}::jsonb),
          ('options', ${lit(JSON.stringify(options))}::jsonb)`,
      ];
    },
  },
];

function embedderName(identity) {
  return `${identity.kind}/${identity.version}`;
}

function sameIdentity(a, b) {
  return a.kind === b.kind && (a.modelSha256 ?? null) === (b.modelSha256 ?? null) && a.dims === b.dims
    && (a.maxTokens ?? null) === (b.maxTokens ?? null) && a.version === b.version;
}

function describe(id) {
  return id.modelSha256 ? `${id.kind} (model sha256 ${id.modelSha256})` : `the ${id.kind} embedder v${id.version}`;
}

/** The pgvector version as [major, minor, patch], or null when the extension is missing. */
async function vectorVersion(client) {
  const r = await client.query("SELECT extversion FROM pg_extension WHERE extname = 'vector'");
  if (r.rows.length === 0) return null;
  return r.rows[0].extversion.split('.').map((x) => Number.parseInt(x, 10) || 0);
}

const atLeast = (v, want) => {
  for (let i = 0; i < want.length; i++) {
    if ((v[i] ?? 0) !== want[i]) return (v[i] ?? 0) > want[i];
  }
  return true;
};

// ------------------------------------------------------------------ transactions

// Worth another try: serialization failure, deadlock, a unique key another writer took first.
const RETRY = new Set(['40001', '40P01', '23505']);

/** Runs `f(client)` in a transaction, retried on RETRY's errors. With `own`, `f` sends BEGIN and
 * COMMIT itself (in the round trips of its own statements); the transaction is rolled back on
 * an error either way. */
async function inTransaction(pool, f, { isolation = 'READ COMMITTED', readOnly = false, attempts = 6, own = false } = {}) {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken = false;
    try {
      if (!own) await client.query(`BEGIN ISOLATION LEVEL ${isolation}${readOnly ? ' READ ONLY' : ''}`);
      const out = await f(client);
      if (!own) await client.query('COMMIT');
      return out;
    } catch (e) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      if (attempt < attempts && RETRY.has(e?.code)) {
        await new Promise((r) => setTimeout(r, 5 * attempt + Math.floor(Math.random() * 20)));
        continue;
      }
      throw e;
    } finally {
      client.release(broken ? true : undefined);
    }
  }
}

// ------------------------------------------------------------------ options

const OPEN_KEYS = new Set(['pool', 'connectionString', 'table', 'embedder', 'chunk', 'bm25', 'workers', 'readOnly', 'denseCandidates', 'efSearch', 'postingsPerTerm', 'feedbackPostingsPerTerm']);

function checkOpenOptions(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw fail('invalid_options', 'options', 'expected {pool | connectionString, table, embedder}');
  }
  for (const k of Object.keys(options)) {
    if (!OPEN_KEYS.has(k)) throw fail('invalid_options', `options.${k}`, `unknown option (expected one of ${[...OPEN_KEYS].join(', ')})`);
  }
  if ((options.pool == null) === (options.connectionString == null)) {
    throw fail('invalid_options', 'options.pool', 'give one of pool (a pg.Pool) and connectionString');
  }
  if (options.pool != null && typeof options.pool.connect !== 'function') {
    throw fail('invalid_options', 'options.pool', 'expected a pg.Pool (an object with connect())');
  }
  if (options.connectionString != null && typeof options.connectionString !== 'string') {
    throw fail('invalid_options', 'options.connectionString', 'expected a string');
  }
  // An Embedder of this package (lexicalEmbedder(), loadEmbedder(), externalEmbedder()); throws
  // invalid_options at options.embedder otherwise, invalid_state when it was freed.
  glueEmbedderOf(options.embedder);
  const w = options.workers;
  if (w !== undefined && w !== null && !(Number.isInteger(w) && w >= 0) && !Array.isArray(w)) {
    throw fail('invalid_options', 'options.workers', 'expected a number of workers (0: none) or an array of workers from createWorker()');
  }
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean') {
    throw fail('invalid_options', 'options.readOnly', 'expected a boolean');
  }
  const dc = options.denseCandidates;
  if (dc !== undefined && !(Number.isInteger(dc) && dc >= 1 && dc <= 10000)) {
    throw fail('invalid_options', 'options.denseCandidates', 'expected an integer from 1 to 10000');
  }
  const ef = options.efSearch;
  if (ef !== undefined && !(Number.isInteger(ef) && ef >= 1 && ef <= 1000)) {
    throw fail('invalid_options', 'options.efSearch', 'expected an integer from 1 to 1000');
  }
  const ppt = options.postingsPerTerm;
  if (ppt !== undefined && !(Number.isInteger(ppt) && ppt >= 1 && ppt <= 1000000)) {
    throw fail('invalid_options', 'options.postingsPerTerm', 'expected an integer from 1 to 1000000');
  }
  const fpt = options.feedbackPostingsPerTerm;
  if (fpt !== undefined && fpt !== null && !(Number.isInteger(fpt) && fpt >= 1 && fpt <= 1000000)) {
    throw fail('invalid_options', 'options.feedbackPostingsPerTerm', 'expected an integer from 1 to 1000000, or null (every posting)');
  }
}

/** `pg` (node-postgres), an optional peer dependency, loaded only for `connectionString`. */
async function loadPg() {
  try {
    const mod = await import('pg');
    return mod.default ?? mod;
  } catch (e) {
    throw fail('invalid_options', 'options.connectionString', `needs the pg package (npm install pg), or pass options.pool: ${e.message}`);
  }
}

// ------------------------------------------------------------------ PgIndex

const OPENING = Symbol('opening');
const RUN_QUERY = Symbol('runQuery');

/** A condense index whose rows live in PostgreSQL (see pg.d.ts and docs/pg.md). */
export class PgIndex {
  #pool;
  #ownPool;
  #names;
  #embedder;
  #identity;
  #indexOptions;
  #pgvector;
  #readOnly;
  #denseCandidates;
  #efSearch;
  #postingsPerTerm;
  #feedbackPostingsPerTerm;
  #workers;
  #ownWorkers = null;
  #closed = false;

  constructor(token, state) {
    if (token !== OPENING) throw new TypeError('use PgIndex.open()');
    this.#pool = state.pool;
    this.#ownPool = state.ownPool;
    this.#names = state.names;
    this.#embedder = state.embedder;
    this.#identity = state.identity;
    this.#indexOptions = state.indexOptions;
    this.#pgvector = state.pgvector;
    this.#readOnly = state.readOnly;
    this.#denseCandidates = state.denseCandidates;
    this.#efSearch = state.efSearch;
    this.#postingsPerTerm = state.postingsPerTerm;
    this.#feedbackPostingsPerTerm = state.feedbackPostingsPerTerm;
    this.#workers = state.workers;
  }

  /**
   * Opens (creating or migrating when needed) the index in `options.table`. Checks that the
   * table was built by the same embedder and with the same chunk and BM25 settings.
   */
  static async open(options) {
    checkOpenOptions(options);
    const names = namesOf(options.table);
    const embedder = options.embedder;
    const identity = guard(() => embedder.identity());
    const given = options.chunk !== undefined || options.bm25 !== undefined
      ? { ...(options.chunk !== undefined ? { chunk: options.chunk } : {}), ...(options.bm25 !== undefined ? { bm25: options.bm25 } : {}) }
      : null;
    const resolved = guard(() => glue.resolveIndexOptions(given));
    let pool = options.pool;
    let ownPool = false;
    if (pool == null) {
      const pg = await loadPg();
      pool = new pg.Pool({ connectionString: options.connectionString });
      ownPool = true;
    }
    const readOnly = options.readOnly === true;
    try {
      const state = await inTransaction(pool, async (client) => {
        const pgvector = await vectorVersion(client);
        if (!readOnly) {
          // One migrator at a time per table; the others wait here and then find it done.
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [names.lock]);
        }
        const version = await schemaVersion(client, names);
        if (version > SCHEMA_VERSION) {
          throw fail('invalid_index', 'options.table', `the table has schema version ${version}; this condense-ctx knows up to ${SCHEMA_VERSION} (upgrade condense-ctx)`);
        }
        let vector = pgvector;
        if (version < SCHEMA_VERSION) {
          if (readOnly) {
            throw fail('invalid_index', 'options.table', version === 0
              ? 'no condense index in this table (open it once without readOnly, on the primary)'
              : `the table has schema version ${version} and needs migrating (open it once without readOnly, on the primary)`);
          }
          if (vector === null) {
            await client.query('CREATE EXTENSION IF NOT EXISTS vector');
            vector = await vectorVersion(client);
          }
          if (version === 0) await ensureFresh(client, names);
          for (const m of MIGRATIONS.filter((x) => x.version > version)) {
            for (const sql of m.statements({ n: names, identity, options: resolved })) await client.query(sql);
            await client.query(
              `INSERT INTO ${names.meta} VALUES ('schema_version', $1::jsonb)
               ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [JSON.stringify(m.version)]);
          }
        }
        if (vector === null || !atLeast(vector, [0, 5, 0])) {
          throw fail('invalid_state', 'pgvector', `needs pgvector >= 0.5.0 (HNSW); the server has ${vector ? vector.join('.') : 'none'}`);
        }
        const meta = await client.query(`SELECT key, value FROM ${names.meta} WHERE key IN ('embedder', 'options')`);
        const stored = Object.fromEntries(meta.rows.map((r) => [r.key, r.value]));
        if (!stored.embedder || !sameIdentity(stored.embedder, identity)) {
          throw fail('embedder_mismatch', 'options.embedder',
            `the table ${names.table} holds vectors of ${stored.embedder ? describe(stored.embedder) : 'an unknown embedder'}, and this embedder is ${describe(identity)}`);
        }
        if (given !== null) {
          const chunkSame = stored.options.chunk.minChars === resolved.chunk.minChars && stored.options.chunk.maxChars === resolved.chunk.maxChars;
          const bm25Same = stored.options.bm25.k1 === resolved.bm25.k1 && stored.options.bm25.b === resolved.bm25.b;
          if (!chunkSame || !bm25Same) {
            const which = chunkSame ? 'bm25' : 'chunk';
            const { [which]: was } = stored.options;
            throw fail('invalid_options', `options.${which}`,
              `the table was created with ${which} ${JSON.stringify(was)}; omit the option or give the same`);
          }
        }
        return { pgvector: vector, indexOptions: stored.options };
      }, { attempts: 3 });
      let workers = options.workers;
      if (Array.isArray(workers)) {
        workers.forEach((w, i) => {
          if (!w || typeof w.embed !== 'function' || !w.embedder) {
            throw fail('invalid_options', `options.workers[${i}]`, 'not a worker from createWorker()');
          }
          if (!sameIdentity(w.embedder, identity)) {
            throw fail('embedder_mismatch', `options.workers[${i}]`, `the worker embeds with ${describe(w.embedder)}, the index with ${describe(identity)}`);
          }
        });
      }
      return new PgIndex(OPENING, {
        pool, ownPool, names, embedder, identity, readOnly,
        indexOptions: state.indexOptions, pgvector: state.pgvector,
        denseCandidates: options.denseCandidates ?? DEFAULT_DENSE_CANDIDATES,
        efSearch: options.efSearch ?? null,
        postingsPerTerm: options.postingsPerTerm ?? null,
        feedbackPostingsPerTerm: options.feedbackPostingsPerTerm === undefined ? DEFAULT_FEEDBACK_POSTINGS : options.feedbackPostingsPerTerm,
        workers: workers ?? null,
      });
    } catch (e) {
      if (ownPool) await pool.end().catch(() => {});
      throw e;
    }
  }

  /** The table name as given to `open`. */
  get table() { return this.#names.table; }

  /** The embedder identity the table records (equal to the embedder's). */
  identity() { return { ...this.#identity }; }

  #check(write) {
    if (this.#closed) throw fail('invalid_state', 'index', 'the index was closed');
    if (write && this.#readOnly) throw fail('invalid_state', 'index', 'opened with readOnly: write through an index opened on the primary');
  }

  /**
   * Chunks, embeds and stores documents, one transaction per batch. A document whose id is
   * stored already is skipped when unchanged and replaced when changed (only its changed chunks
   * are embedded again); so re-running an interrupted ingest adds nothing twice.
   */
  async add(documents, options) {
    this.#check(true);
    const opts = options ?? {};
    if (typeof opts !== 'object' || Array.isArray(opts)) throw fail('invalid_options', 'options', 'expected an object');
    for (const k of Object.keys(opts)) {
      if (k !== 'onProgress' && k !== 'batchSize') throw fail('invalid_options', `options.${k}`, 'unknown option (expected onProgress, batchSize)');
    }
    const batchSize = opts.batchSize ?? 64;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10000) throw fail('invalid_options', 'options.batchSize', 'expected an integer from 1 to 10000');
    const onProgress = opts.onProgress;
    if (onProgress !== undefined && typeof onProgress !== 'function') throw fail('invalid_options', 'options.onProgress', 'expected a function');
    const iterable = documents !== null && typeof documents === 'object'
      && (typeof documents[Symbol.iterator] === 'function' || typeof documents[Symbol.asyncIterator] === 'function');
    if (!iterable || typeof documents === 'string') throw fail('invalid_input', 'documents', 'expected an array (or an iterable) of documents');
    const total = Array.isArray(documents) ? documents.length : null;
    const report = (phase, done) => {
      if (!onProgress) return;
      try { onProgress({ phase, done, total }); } catch { /* the caller's callback never breaks the call */ }
    };

    const result = { added: 0, updated: 0, unchanged: 0, chunks: 0, embedded: 0, reused: 0 };
    const seen = new Set();
    let offset = 0;
    let writing = Promise.resolve();
    let batch = [];
    const flush = async () => {
      const docs = batch;
      const at = offset;
      batch = [];
      offset += docs.length;
      const prepared = this.#prepare(docs, at, seen);
      const work = await this.#plan(prepared);
      result.unchanged += work.unchanged;
      const vectors = await this.#vectors(work);
      result.embedded += work.toEmbed.length;
      result.reused += work.reused;
      report('embed', at + docs.length);
      // The previous batch's transaction runs while this batch is embedded; batches commit in order.
      await writing;
      writing = this.#write(work, vectors).then((w) => {
        result.added += w.added;
        result.updated += w.updated;
        result.unchanged += w.unchanged;
        result.chunks += w.chunks;
        report('write', at + docs.length);
      });
      writing.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
    };
    try {
      for await (const d of documents) {
        batch.push(d);
        if (batch.length >= batchSize) await flush();
      }
      if (batch.length > 0) await flush();
    } finally {
      await writing.catch(() => {});
    }
    await writing;
    return result;
  }

  /** Chunked, analysed and hashed documents (the core's `prepareDocuments`), ids checked
   * against the whole call. Errors name the document by its position in the call. */
  #prepare(docs, offset, seen) {
    let prepared;
    try {
      prepared = guard(() => glue.prepareDocuments(docs, this.#indexOptions));
    } catch (e) {
      if (e instanceof CondenseError) {
        const m = /^documents\[(\d+)\](.*)$/.exec(e.path ?? '');
        if (m) {
          const path = `documents[${offset + Number(m[1])}]${m[2]}`;
          throw new CondenseError(e.code, path, `${e.code} at ${path}: ${e.reason}`, e.reason);
        }
      }
      throw e;
    }
    prepared.forEach((p, i) => {
      if (seen.has(p.id)) throw fail('invalid_input', `documents[${offset + i}].id`, `duplicate document id ${JSON.stringify(p.id)}`);
      seen.add(p.id);
    });
    return prepared;
  }

  /** What a batch needs: documents whose stored hash differs (or that are new), the chunk
   * texts without a stored vector, and the stored vectors of the others. */
  async #plan(prepared) {
    const n = this.#names;
    const ids = prepared.map((p) => p.id);
    const client = await this.#pool.connect();
    try {
      const stored = await client.query(`SELECT doc_id, hash FROM ${n.docs} WHERE doc_id = ANY($1::text[])`, [ids]);
      const hashOf = new Map(stored.rows.map((r) => [r.doc_id, r.hash]));
      const docs = prepared.filter((p) => hashOf.get(p.id) !== p.hash);
      // Chunks a changed document keeps as they are (same id, same content) need no vector.
      const stays = new Set();
      const changed = docs.filter((d) => hashOf.has(d.id)).map((d) => d.id);
      if (changed.length > 0) {
        const r = await client.query(
          `SELECT c.chunk_id, c.hash FROM ${n.chunks} c JOIN ${n.docs} d ON d.id = c.doc WHERE d.doc_id = ANY($1::text[])`, [changed]);
        for (const row of r.rows) stays.add(`${row.chunk_id}\u0000${row.hash}`);
      }
      const needed = docs.flatMap((d) => d.chunks.filter((c) => !stays.has(`${c.chunkId}\u0000${c.hash}`)));
      const hashes = [...new Set(needed.map((c) => c.hash))];
      const known = new Map();
      if (hashes.length > 0) {
        const r = await client.query(
          `SELECT DISTINCT ON (hash) hash, embedding::text AS embedding FROM ${n.chunks} WHERE hash = ANY($1::text[])`, [hashes]);
        for (const row of r.rows) known.set(row.hash, row.embedding);
      }
      const toEmbed = [];
      const wanted = new Set();
      for (const c of needed) {
        if (!known.has(c.hash) && !wanted.has(c.hash)) {
          wanted.add(c.hash);
          toEmbed.push(c);
        }
      }
      return { docs, known, toEmbed, unchanged: prepared.length - docs.length, reused: hashes.length - toEmbed.length };
    } finally {
      client.release();
    }
  }

  /** Vectors (pgvector text) by chunk hash: the stored ones, and the new ones embedded on
   * the workers or, without them, on this thread. */
  async #vectors(work) {
    const vectors = new Map(work.known);
    if (work.toEmbed.length === 0) return vectors;
    const texts = work.toEmbed.map((c) => c.embeddingText);
    const workers = await this.#workersFor(texts.length);
    const out = workers.length > 0
      ? await embedParallel(texts, workers)
      : guard(() => this.#embedder.embed(texts));
    out.forEach((v, i) => vectors.set(work.toEmbed[i].hash, vectorText(v)));
    return vectors;
  }

  /** The workers to embed `count` texts on: the caller's, or (by default, with MiniLM, for
   * batches worth it, on a machine with cores to spare) ones this index starts once. */
  async #workersFor(count) {
    if (Array.isArray(this.#workers)) return this.#workers;
    if (this.#workers === 0 || this.#identity.kind !== 'minilm' || count < 32) return [];
    if (this.#ownWorkers === null) {
      const n = this.#workers ?? Math.min(4, availableParallelism());
      this.#ownWorkers = [];
      if (n >= 2 || this.#workers !== null) {
        const started = await Promise.allSettled(Array.from({ length: n }, () => createWorker({ embedder: 'minilm' })));
        const ok = started.filter((s) => s.status === 'fulfilled').map((s) => s.value);
        // Only workers whose model is this index's (a model loaded from elsewhere is not the
        // package's default, which is what a worker loads).
        if (ok.length === n && ok.every((w) => sameIdentity(w.embedder, this.#identity))) {
          this.#ownWorkers = ok;
        } else {
          await Promise.all(ok.map((w) => w.terminate()));
        }
      }
    }
    return this.#ownWorkers;
  }

  /** One batch in one transaction (retried on a deadlock or a unique key another writer took). */
  async #write(work, vectors) {
    if (work.docs.length === 0) return { added: 0, updated: 0, unchanged: 0, chunks: 0 };
    const n = this.#names;
    const { k1, b } = this.#indexOptions.bm25;
    const docs = [...work.docs].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    return inTransaction(this.#pool, async (client) => {
      const out = { added: 0, updated: 0, unchanged: 0, chunks: 0 };
      // 1. The documents: new ones inserted, stored ones locked (in id order).
      const row = (d) => ({ doc_id: d.id, path: d.path ?? null, title: d.title ?? null, chunk_path: d.chunkPath ?? null, metadata: d.metadata ?? null, hash: d.hash, chunks: d.chunks.length });
      const inserted = await client.query(
        `INSERT INTO ${n.docs} (doc_id, path, title, chunk_path, metadata, hash, chunks)
         SELECT x.doc_id, x.path, x.title, x.chunk_path, x.metadata, x.hash, x.chunks
         FROM jsonb_to_recordset($1::jsonb) AS x(doc_id text, path text, title text, chunk_path text, metadata jsonb, hash text, chunks integer)
         ORDER BY x.doc_id
         ON CONFLICT (doc_id) DO NOTHING RETURNING id, doc_id`, [JSON.stringify(docs.map(row))]);
      const docKey = new Map(inserted.rows.map((r) => [r.doc_id, r.id]));
      out.added = inserted.rows.length;
      const rest = docs.filter((d) => !docKey.has(d.id));
      const keep = new Map(); // doc key -> Set of chunk ids kept as they are
      const obsolete = [];
      if (rest.length > 0) {
        const locked = await client.query(
          `SELECT id, doc_id, hash FROM ${n.docs} WHERE doc_id = ANY($1::text[]) ORDER BY doc_id FOR UPDATE`, [rest.map((d) => d.id)]);
        const lockedBy = new Map(locked.rows.map((r) => [r.doc_id, r]));
        const changed = [];
        for (const d of rest) {
          const s = lockedBy.get(d.id);
          if (s === undefined) throw Object.assign(new Error('a document vanished while locked'), { code: '40001' });
          docKey.set(d.id, s.id);
          if (s.hash === d.hash) out.unchanged++;
          else changed.push(d);
        }
        if (changed.length > 0) {
          out.updated = changed.length;
          await client.query(
            `UPDATE ${n.docs} AS t SET path = x.path, title = x.title, chunk_path = x.chunk_path, metadata = x.metadata,
               hash = x.hash, chunks = x.chunks, updated_at = now()
             FROM jsonb_to_recordset($1::jsonb) AS x(doc_id text, path text, title text, chunk_path text, metadata jsonb, hash text, chunks integer)
             WHERE t.doc_id = x.doc_id`, [JSON.stringify(changed.map(row))]);
          const old = await client.query(
            `SELECT id, doc, chunk_id, hash FROM ${n.chunks} WHERE doc = ANY($1::bigint[])`, [changed.map((d) => docKey.get(d.id))]);
          const wanted = new Map(changed.flatMap((d) => d.chunks.map((c) => [c.chunkId, c.hash])));
          for (const r of old.rows) {
            if (wanted.get(r.chunk_id) === r.hash) {
              if (!keep.has(r.doc)) keep.set(r.doc, new Set());
              keep.get(r.doc).add(r.chunk_id);
            } else {
              obsolete.push(r.id);
            }
          }
        }
        // Unchanged documents write nothing.
        for (const d of rest) {
          if (lockedBy.get(d.id).hash === d.hash) docKey.delete(d.id);
        }
      }
      // 2. Obsolete chunks out, with their postings and term statistics.
      const delta = new Map(); // term -> df change
      let chunkDelta = 0;
      let termDelta = 0;
      if (obsolete.length > 0) {
        const gone = await client.query(
          `DELETE FROM ${n.postings} WHERE chunk = ANY($1::bigint[]) RETURNING term`, [obsolete]);
        const removedTerms = new Map();
        for (const r of gone.rows) removedTerms.set(r.term, (removedTerms.get(r.term) ?? 0) + 1);
        const sizes = await client.query(
          `DELETE FROM ${n.chunks} WHERE id = ANY($1::bigint[]) RETURNING terms`, [obsolete]);
        chunkDelta -= sizes.rows.length;
        for (const r of sizes.rows) termDelta -= r.terms;
        if (removedTerms.size > 0) {
          const ids = [...removedTerms.keys()].sort((x, y) => x - y);
          await client.query(
            `UPDATE ${n.terms} AS t SET df = t.df - x.d FROM unnest($1::int[], $2::int[]) AS x(id, d) WHERE t.id = x.id`,
            [ids, ids.map((i) => removedTerms.get(i))]);
        }
      }
      // 3. New chunks.
      const fresh = [];
      for (const d of docs) {
        const key = docKey.get(d.id);
        if (key === undefined) continue;
        const kept = keep.get(key);
        for (const c of d.chunks) {
          if (kept !== undefined && kept.has(c.chunkId)) continue;
          fresh.push({ key, c });
        }
      }
      if (fresh.length > 0) {
        const stats = await client.query(`SELECT chunks, total_terms FROM ${n.stats}`);
        const chunksNow = Number(stats.rows[0].chunks) + fresh.length;
        const termsNow = Number(stats.rows[0].total_terms) + fresh.reduce((s, f) => s + f.c.length, 0);
        const avgdl = chunksNow > 0 ? termsNow / chunksNow : 0;
        // A chunk planned as staying may have changed since (another writer): its vector
        // comes from a row with its content, else from the embedder.
        const missing = [...new Set(fresh.filter(({ c }) => !vectors.has(c.hash)).map(({ c }) => c.hash))];
        if (missing.length > 0) {
          const r = await client.query(
            `SELECT DISTINCT ON (hash) hash, embedding::text AS embedding FROM ${n.chunks} WHERE hash = ANY($1::text[])`, [missing]);
          for (const row of r.rows) vectors.set(row.hash, row.embedding);
          const still = fresh.filter(({ c }) => !vectors.has(c.hash)).map(({ c }) => c);
          if (still.length > 0) {
            const v = guard(() => this.#embedder.embed(still.map((c) => c.embeddingText)));
            still.forEach((c, i) => vectors.set(c.hash, vectorText(v[i])));
          }
        }
        const rows = fresh.map(({ key, c }) => ({
          doc: key, chunk_id: c.chunkId, ordinal: c.ordinal, header_path: c.headerPath, content: c.content,
          hash: c.hash, terms: c.length, embedding: vectors.get(c.hash),
        }));
        const ins = await client.query(
          `INSERT INTO ${n.chunks} (doc, chunk_id, ordinal, header_path, content, hash, terms, embedder, model_sha256, embedding)
           SELECT x.doc, x.chunk_id, x.ordinal, x.header_path, x.content, x.hash, x.terms, $2, $3, x.embedding::vector
           FROM jsonb_to_recordset($1::jsonb) AS x(doc bigint, chunk_id text, ordinal integer, header_path text[], content text, hash text, terms integer, embedding text)
           RETURNING id, chunk_id`, [JSON.stringify(rows), embedderName(this.#identity), this.#identity.modelSha256 ?? '']);
        const chunkKey = new Map(ins.rows.map((r) => [r.chunk_id, r.id]));
        chunkDelta += fresh.length;
        // Term ids (new terms inserted; every df moved by what this batch adds), in term order.
        const added = new Map();
        for (const { c } of fresh) {
          termDelta += c.length;
          for (const t of c.terms) added.set(t, (added.get(t) ?? 0) + 1);
        }
        const terms = [...added.keys()].sort();
        const ids = await client.query(
          `INSERT INTO ${n.terms} (term, df) SELECT u.t, u.d FROM unnest($1::text[], $2::int[]) AS u(t, d) ORDER BY u.t
           ON CONFLICT (term) DO UPDATE SET df = ${n.terms}.df + excluded.df RETURNING id, term`,
          [terms, terms.map((t) => added.get(t))]);
        const termId = new Map(ids.rows.map((r) => [r.term, r.id]));
        const pTerm = [];
        const pChunk = [];
        const pTf = [];
        const pLen = [];
        const pImpact = [];
        const norm = (len) => (avgdl > 0 ? k1 * (1 - b + b * (len / avgdl)) : k1);
        for (const { c } of fresh) {
          const id = chunkKey.get(c.chunkId);
          const z = norm(c.length);
          c.terms.forEach((t, i) => {
            const tf = c.tfs[i];
            pTerm.push(termId.get(t));
            pChunk.push(id);
            pTf.push(tf);
            pLen.push(c.length);
            pImpact.push(tf + z > 0 ? tf / (tf + z) : 0);
          });
        }
        await client.query(
          `INSERT INTO ${n.postings} (term, chunk, tf, len, impact)
           SELECT * FROM unnest($1::int[], $2::bigint[], $3::int[], $4::int[], $5::real[])`,
          [pTerm, pChunk, pTf, pLen, pImpact]);
        out.chunks = fresh.length;
      }
      await client.query(
        `UPDATE ${n.stats} SET docs = docs + $1, chunks = chunks + $2, total_terms = total_terms + $3`,
        [out.added, chunkDelta, termDelta]);
      return out;
    });
  }

  /** Removes documents by id (unknown ids are ignored); returns how many were removed. */
  async remove(ids) {
    this.#check(true);
    if (!Array.isArray(ids)) throw fail('invalid_input', 'ids', 'expected an array of document ids');
    ids.forEach((id, i) => {
      if (typeof id !== 'string') throw fail('invalid_input', `ids[${i}]`, 'expected a string');
    });
    if (ids.length === 0) return 0;
    const n = this.#names;
    const sorted = [...new Set(ids)].sort();
    return inTransaction(this.#pool, async (client) => {
      const docs = await client.query(
        `SELECT id FROM ${n.docs} WHERE doc_id = ANY($1::text[]) ORDER BY doc_id FOR UPDATE`, [sorted]);
      if (docs.rows.length === 0) return 0;
      const keys = docs.rows.map((r) => r.id);
      const chunks = await client.query(
        `SELECT id, terms FROM ${n.chunks} WHERE doc = ANY($1::bigint[])`, [keys]);
      const chunkIds = chunks.rows.map((r) => r.id);
      if (chunkIds.length > 0) {
        await client.query(
          `UPDATE ${n.terms} AS t SET df = t.df - x.d
           FROM (SELECT term, count(*)::int AS d FROM ${n.postings} WHERE chunk = ANY($1::bigint[]) GROUP BY term ORDER BY term) AS x
           WHERE t.id = x.term`, [chunkIds]);
        await client.query(`DELETE FROM ${n.postings} WHERE chunk = ANY($1::bigint[])`, [chunkIds]);
      }
      await client.query(`DELETE FROM ${n.docs} WHERE id = ANY($1::bigint[])`, [keys]);
      const termCount = chunks.rows.reduce((s, r) => s + r.terms, 0);
      await client.query(
        `UPDATE ${n.stats} SET docs = docs - $1, chunks = chunks - $2, total_terms = total_terms - $3`,
        [keys.length, chunkIds.length, termCount]);
      return keys.length;
    });
  }

  /** A stored document with its chunks, or undefined. */
  async get(id) {
    this.#check(false);
    if (typeof id !== 'string') throw fail('invalid_input', 'id', 'expected a string');
    const n = this.#names;
    const r = await this.#pool.query(
      `SELECT d.doc_id, d.path, d.title, d.chunk_path, d.metadata,
              coalesce(json_agg(json_build_object('id', c.chunk_id, 'headerPath', c.header_path, 'text', c.content, 'ordinal', c.ordinal)
                                ORDER BY c.ordinal) FILTER (WHERE c.id IS NOT NULL), '[]') AS chunks
       FROM ${n.docs} d LEFT JOIN ${n.chunks} c ON c.doc = d.id WHERE d.doc_id = $1
       GROUP BY d.id`, [id]);
    if (r.rows.length === 0) return undefined;
    const d = r.rows[0];
    return {
      id: d.doc_id,
      path: d.path,
      title: d.title,
      metadata: d.metadata,
      chunks: d.chunks.map((c) => ({ id: c.id, docId: d.doc_id, path: d.chunk_path, headerPath: c.headerPath, text: c.text, ordinal: c.ordinal })),
    };
  }

  /** Counts and sizes: documents, chunks, distinct terms, the schema and embedder. */
  async stats() {
    this.#check(false);
    const n = this.#names;
    const r = await this.#pool.query(
      `SELECT s.docs, s.chunks, s.total_terms,
              (SELECT count(*) FROM ${n.terms} WHERE df > 0) AS terms,
              (SELECT value FROM ${n.meta} WHERE key = 'schema_version') AS schema_version,
              pg_total_relation_size('${n.chunks}'::regclass) + pg_total_relation_size('${n.docs}'::regclass)
                + pg_total_relation_size('${n.terms}'::regclass) + pg_total_relation_size('${n.postings}'::regclass)
                + pg_total_relation_size('${n.stats}'::regclass) + pg_total_relation_size('${n.meta}'::regclass) AS bytes
       FROM ${n.stats} s`);
    const s = r.rows[0];
    const chunks = Number(s.chunks);
    return {
      table: this.#names.table,
      schemaVersion: Number(s.schema_version),
      documents: Number(s.docs),
      chunks,
      terms: Number(s.terms),
      avgChunkTerms: chunks > 0 ? Number(s.total_terms) / chunks : 0,
      bytes: Number(s.bytes),
      embedder: this.identity(),
      options: structuredClone(this.#indexOptions),
      pgvector: this.#pgvector.join('.'),
    };
  }

  /** Stops the workers this index started and ends the pool it created (a pool you passed
   * stays yours). */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const workers = this.#ownWorkers ?? [];
    this.#ownWorkers = null;
    await Promise.all(workers.map((w) => w.terminate().catch(() => {})));
    if (this.#ownPool) await this.#pool.end();
  }

  /** How many postings per term a lexical list of `depth` hits reads (null: all): the
   * `postingsPerTerm` cap, at least `depth`. */
  #lexicalPerTerm(depth) {
    return this.#postingsPerTerm === null ? null : Math.max(depth, this.#postingsPerTerm);
  }

  /** How many postings per term the expanded query's BM25 list reads (null: all): the smaller
   * of `feedbackPostingsPerTerm` and the lexical lists' cap. */
  #expansionPerTerm(depth) {
    const caps = [this.#feedbackPostingsPerTerm, this.#lexicalPerTerm(depth)].filter((c) => c !== null);
    return caps.length === 0 ? null : Math.min(...caps);
  }

  /** query() over this index (see `query`). */
  query(question, options) {
    return this[RUN_QUERY](question, options, null);
  }

  /** The query, with the lexical list from `lexical` (see `_queryWithLexical`) or BM25 in SQL. */
  async [RUN_QUERY](question, options, lexical) {
    this.#check(false);
    const opts = options ?? null;
    const plan = guard(() => glue.planQuery(question, opts, this.#indexOptions, glueEmbedderOf(this.#embedder)));
    // How many hits each list fetches: the query's `candidates` (default 1000, as in memory);
    // for the dense list, when the query does not set it, this index's `denseCandidates`.
    const depth = plan.depth;
    const denseDepth = opts !== null && opts.candidates !== undefined ? depth : Math.min(depth, this.#denseCandidates);
    const n = this.#names;
    const { k1, b } = this.#indexOptions.bm25;
    const bm25 = plan.lexical && plan.terms.length > 0 && lexical === null;
    const rows = await inTransaction(this.#pool, async (client) => {
      // Round trip 1, sent before the question is embedded, so that the server computes the
      // lexical list while the client runs the model: BEGIN, the HNSW settings, BM25 in SQL.
      // Literals (node-postgres's escapeLiteral) rather than parameters: parameters need one
      // round trip per statement.
      const head = ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'];
      if (plan.dense) {
        head.push(`SET LOCAL hnsw.ef_search = ${this.#efSearch ?? Math.min(1000, Math.max(40, denseDepth))}`);
        if (atLeast(this.#pgvector, [0, 8, 0])) head.push('SET LOCAL hnsw.iterative_scan = strict_order');
      }
      if (bm25) {
        const terms = `ARRAY[${plan.terms.map((t) => client.escapeLiteral(t)).join(',')}]::text[]`;
        head.push(lexicalSql(n, {
          terms, k1, b, depth,
          perTerm: this.#lexicalPerTerm(depth),
        }));
      }
      const first = client.query({ text: head.join(';\n'), rowMode: 'array' });
      first.catch(() => {}); // awaited below (after the embedding); never an unhandled rejection meanwhile
      let qv = null;
      try {
        if (plan.dense) qv = vectorText(guard(() => this.#embedder.embed([question]))[0]);
      } finally {
        await first.catch(() => {});
      }
      const results = [await first].flat();
      let lexicalRows = bm25 ? results.at(-1).rows : [];
      if (lexical !== null && plan.lexical && plan.terms.length > 0) {
        lexicalRows = (await client.query({ text: lexical.sql(n), values: lexical.values({ ...plan, depth }, question), rowMode: 'array' })).rows;
      }
      // Round trip 2: the dense list (pgvector's HNSW index).
      const dense = qv === null ? [] : (await client.query({
        text: `SELECT id, doc, embedding <=> $1::vector AS d FROM ${n.chunks} ORDER BY embedding <=> $1::vector LIMIT $2`,
        values: [qv, denseDepth], rowMode: 'array',
      })).rows;
      // Rows numbered for the core's fusion in the order the chunks were stored (ids ascending),
      // as the in-memory index numbers its slots: fusion breaks ties by that number.
      let num = numberRows([lexicalRows, dense]);
      const lex = scoredRows(lexicalRows, num.rowOf, (r) => r[2]);
      const den = scoredRows(dense, num.rowOf, (r) => 1 - r[2]);
      const ideal = lexicalRows.length > 0 ? lexicalRows[0][3] : 0;
      const glueEmbedder = glueEmbedderOf(this.#embedder);
      // Pseudo-relevance feedback (the in-memory query's `fuse_with_feedback`): the first
      // fusion's top rows, their texts (round trip), the expanded query the core makes of them,
      // and its BM25 list in SQL (another round trip), fused as a third list.
      let expandedRows = [];
      if (plan.feedbackTerms > 0) {
        const top = guard(() => glue.feedbackRows(lex.rows, lex.scores, den.rows, den.scores, num.groups, opts, glueEmbedder));
        const topIds = Array.from(top, (r) => num.keyOf[r]);
        if (!topIds.every((id) => /^[0-9]+$/.test(id))) throw new Error('unexpected chunk id from the server');
        if (topIds.length > 0) {
          const texts = (await client.query({
            text: `SELECT id, header_path, content FROM ${n.chunks} WHERE id = ANY(ARRAY[${topIds.join(',')}]::bigint[])`,
            rowMode: 'array',
          })).rows;
          const textOf = new Map(texts.map((r) => [r[0], { headerPath: r[1], content: r[2] }]));
          const chunks = topIds.filter((id) => textOf.has(id)).map((id) => textOf.get(id));
          const expansion = guard(() => glue.expansionQuery(chunks, this.#indexOptions, plan.feedbackTerms));
          if (expansion.terms.length > 0) {
            expandedRows = (await client.query({
              text: lexicalSql(n, {
                terms: `ARRAY[${expansion.terms.map((t) => client.escapeLiteral(t)).join(',')}]::text[]`,
                weights: Array.from(expansion.weights),
                k1, b, depth,
                perTerm: this.#expansionPerTerm(depth),
              }),
              rowMode: 'array',
            })).rows;
          }
          if (expandedRows.length > 0) num = numberRows([lexicalRows, dense, expandedRows]);
        }
      }
      const { keyOf, groups } = num;
      const [lexF, denF, expF] = [
        scoredRows(lexicalRows, num.rowOf, (r) => r[2]),
        scoredRows(dense, num.rowOf, (r) => 1 - r[2]),
        scoredRows(expandedRows, num.rowOf, (r) => r[2]),
      ];
      const fused = guard(() => glue.fuseLists(lexF.rows, lexF.scores, ideal, denF.rows, denF.scores,
        expF.rows, expF.scores, groups, opts, glueEmbedder));
      const ids = Array.from(fused.rows, (r) => keyOf[r]);
      if (ids.length === 0) {
        await client.query('COMMIT');
        return [];
      }
      // Last round trip: the pool's chunks (vectors in pgvector's binary form) and COMMIT. The ids
      // are the server's own bigint texts.
      if (!ids.every((id) => /^[0-9]+$/.test(id))) throw new Error('unexpected chunk id from the server');
      const [got] = await client.query({
        text: `SELECT c.id, c.chunk_id, d.doc_id, d.chunk_path, c.header_path, c.content, vector_send(c.embedding)
               FROM ${n.chunks} c JOIN ${n.docs} d ON d.id = c.doc WHERE c.id = ANY(ARRAY[${ids.join(',')}]::bigint[]);
               COMMIT`,
        rowMode: 'array',
      });
      const byId = new Map(got.rows.map((r) => [r[0], r]));
      const out = [];
      ids.forEach((id, i) => {
        const r = byId.get(id);
        if (r === undefined) return;
        out.push({ chunkId: r[1], docId: r[2], path: r[3], headerPath: r[4], score: fused.scores[i], content: r[5], embedding: vectorFromBinary(r[6]) });
      });
      return out;
    }, { own: true });
    return compressResults(rows, question, { ...(opts ?? {}), embedder: this.#embedder });
  }
}

/** Numbers the rows of several lists (`[id, doc, ...]` each) for the core's fusion: ids in the
 * order the chunks were stored (ascending), as the in-memory index numbers its slots, and each
 * row's document group, numbered as first met. */
function numberRows(lists) {
  const byKey = (x, y) => x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
  const docOf = new Map();
  for (const list of lists) for (const [id, doc] of list) docOf.set(id, doc);
  const keyOf = [...docOf.keys()].sort(byKey);
  const rowOf = new Map(keyOf.map((id, row) => [id, row]));
  const groupOf = new Map();
  const groups = Uint32Array.from(keyOf, (id) => {
    const doc = docOf.get(id);
    let g = groupOf.get(doc);
    if (g === undefined) { g = groupOf.size; groupOf.set(doc, g); }
    return g;
  });
  return { keyOf, rowOf, groups };
}

/** A list's rows (by `rowOf`) and scores (`score(row)`) as the core's typed arrays. */
function scoredRows(list, rowOf, score) {
  const rows = new Uint32Array(list.length);
  const scores = new Float32Array(list.length);
  list.forEach((r, i) => { rows[i] = rowOf.get(r[0]); scores[i] = score(r); });
  return { rows, scores };
}

/** BM25 in SQL, one statement with literals: `terms` the question's terms as an SQL text[]
 * (repetitions count; with `weights`, an array of numbers parallel to the terms, each term
 * counts its weight instead: the expanded query of pseudo-relevance feedback), `k1`, `b`,
 * `depth` the hits returned, `perTerm` the postings read per
 * term, best impact first (null, the default: all of them, and the scores are exact; a number
 * caps it: exact for every term with no more postings). Rows: chunk, doc, score, and the
 * question's ideal score (terms the table lacks count with df 1, as in the in-memory index). */
function lexicalSql(n, { terms, weights = null, k1, b, depth, perTerm }) {
  const num = (x) => {
    if (!Number.isFinite(x)) throw new Error('not a finite number');
    return `${x}::float8`;
  };
  const K1 = num(k1);
  const B = num(b);
  return `
    WITH s AS MATERIALIZED (
      SELECT chunks::float8 AS n, CASE WHEN chunks > 0 THEN total_terms::float8 / chunks ELSE 0 END AS avgdl FROM ${n.stats}),
    q AS MATERIALIZED (${weights === null
    ? `SELECT term, count(*)::float8 AS qtf FROM unnest(${terms}) AS u(term) GROUP BY term`
    : `SELECT term, sum(w) AS qtf FROM unnest(${terms}, ARRAY[${weights.map(num).join(',')}]::float8[]) AS u(term, w) GROUP BY term`}),
    v AS MATERIALIZED (
      SELECT q.term, q.qtf, t.id, coalesce(t.df, 0) AS df FROM q LEFT JOIN ${n.terms} t ON t.term = q.term),
    ideal AS MATERIALIZED (
      SELECT CASE WHEN s.n > 0 THEN sum(v.qtf * ln(1 + (s.n - greatest(v.df, 1) + 0.5) / (greatest(v.df, 1) + 0.5))) * (${K1} + 1) ELSE 0 END AS score
      FROM v CROSS JOIN s GROUP BY s.n),
    w AS MATERIALIZED (
      SELECT v.id, v.qtf * ln(1 + (s.n - v.df + 0.5) / (v.df + 0.5)) AS idf FROM v CROSS JOIN s WHERE v.df > 0),
    hits AS (
      SELECT p.chunk, sum(w.idf * p.tf * (${K1} + 1)
               / (p.tf + CASE WHEN s.avgdl > 0 THEN ${K1} * (1 - ${B} + ${B} * p.len / s.avgdl) ELSE ${K1} END)) AS score
      FROM w CROSS JOIN s CROSS JOIN LATERAL (
        SELECT chunk, tf, len FROM ${n.postings} WHERE term = w.id ORDER BY impact DESC, chunk LIMIT ${perTerm === null ? 'ALL' : Number(perTerm)}) AS p
      GROUP BY p.chunk
      ORDER BY score DESC, p.chunk
      LIMIT ${Number(depth)})
    SELECT h.chunk, c.doc, h.score, (SELECT score FROM ideal)
    FROM hits h JOIN ${n.chunks} c ON c.id = h.chunk
    ORDER BY h.score DESC, h.chunk`;
}

/** A vector from pgvector's binary form (`vector_send`: int16 dimensions, int16 unused, then
 * big-endian float32s), as an array of numbers. */
function vectorFromBinary(buf) {
  const dims = buf.readInt16BE(0);
  if (dims !== DIMS || buf.length !== 4 + 4 * DIMS) throw fail('invalid_index', 'embedding', `expected ${DIMS} values per stored vector`);
  const out = new Array(DIMS);
  for (let i = 0; i < DIMS; i++) out[i] = buf.readFloatBE(4 + 4 * i);
  return out;
}

/** A vector in pgvector's text form. Each float32 printed as its shortest float64 text, which
 * reads back as the same float32. */
function vectorText(v) {
  if (!v || v.length !== DIMS) throw fail('invalid_model', 'embedder', `expected ${DIMS} values per vector`);
  return `[${Array.prototype.join.call(v, ',')}]`;
}

/** The schema version stored in the table's meta (0 when the table has none). */
async function schemaVersion(client, n) {
  const exists = await client.query('SELECT to_regclass($1) IS NOT NULL AS ok', [n.meta]);
  if (!exists.rows[0].ok) return 0;
  const r = await client.query(`SELECT value FROM ${n.meta} WHERE key = 'schema_version'`);
  return r.rows.length === 0 ? 0 : Number(r.rows[0].value);
}

/** Refuses to create the index over tables of the same names that condense did not make. */
async function ensureFresh(client, n) {
  for (const t of [n.chunks, n.docs, n.terms, n.postings, n.stats, n.meta]) {
    const r = await client.query('SELECT to_regclass($1) IS NOT NULL AS ok', [t]);
    if (r.rows[0].ok) throw fail('invalid_index', 'options.table', `${t} exists but is not a condense index (no schema version): choose another table name`);
  }
}

/** `query(index, question, options)` for a PgIndex: the in-memory query's result shape. */
export async function query(index, question, options) {
  if (!(index instanceof PgIndex)) throw fail('invalid_input', 'index', 'expected a PgIndex');
  return index.query(question, options);
}

/**
 * Not part of the API (not in pg.d.ts): `query` with the lexical list from other SQL, for the
 * benchmark that compares PostgreSQL's full-text search with BM25 in SQL (bench/pg_ir.mjs).
 * `lexical`: `{sql(names) → text, values(plan, question) → parameters}`; its rows are
 * `[chunk, doc, score, ideal]`, best first.
 */
export async function _queryWithLexical(index, question, options, lexical) {
  if (!(index instanceof PgIndex)) throw fail('invalid_input', 'index', 'expected a PgIndex');
  return index[RUN_QUERY](question, options, lexical);
}
