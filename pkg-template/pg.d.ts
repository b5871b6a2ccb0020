// `condense-ctx/pg` (Node): query() over PostgreSQL + pgvector. The index's rows live in
// PostgreSQL; chunking, embedding, fusion, calibrated scores and result compression run in
// condense. `pg` (node-postgres) is an optional peer dependency: pass a `pg.Pool`, or install
// `pg` and pass a connection string. See docs/pg.md in the repository.
import type {
  Document, DocumentInfo, Embedder, EmbedderIdentity, QueryOptions, QueryResult, CondenseWorker,
} from './index.js';

export type { Document, DocumentInfo, EmbedderIdentity, QueryOptions, QueryResult };

/** The schema version this release writes and reads. */
export const SCHEMA_VERSION: number;

/** What `PgIndex` needs of a connection pool: node-postgres's `pg.Pool` has it. */
export interface PgPool {
  connect(): Promise<PgPoolClient>;
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  end(): Promise<void>;
}

/** A client checked out of a `PgPool`. */
export interface PgPoolClient {
  query(text: string | { text: string; values?: unknown[]; rowMode?: 'array' }, values?: unknown[]): Promise<{ rows: any[] }>;
  release(destroy?: boolean | Error): void;
}

/** Options of `PgIndex.open`. Unknown keys are refused with `invalid_options`. */
export interface PgIndexOptions {
  /**
   * A `pg.Pool` (yours: `close()` leaves it open). Give this or `connectionString`. PGlite
   * (PostgreSQL in wasm, in-process) works through its node-postgres connection:
   * `new pg.Pool(createPgConfig(await PGlite.create({ extensions: { vector } })))`
   * (`@electric-sql/pglite/node-postgres`, `@electric-sql/pglite-pgvector`; docs/pg.md, "PGlite").
   */
  pool?: PgPool;
  /** A connection string; the index makes its own `pg.Pool` (needs the `pg` package) and ends it on `close()`. */
  connectionString?: string;
  /**
   * The table: `name` or `schema.name`, lower-case letters, digits and `_` (at most 48
   * characters each). The index keeps its rows in `<name>` (chunks) and `<name>_docs`,
   * `_terms`, `_postings`, `_stats`, `_meta`.
   */
  table: string;
  /** The embedder; a table holds the vectors of one embedder only (`embedder_mismatch` otherwise). */
  embedder: Embedder;
  /** Chunk size bounds, fixed when the table is created (default 200–1500 characters). */
  chunk?: { minChars?: number; maxChars?: number };
  /** BM25 parameters, fixed when the table is created (default k1 0.9, b 0.4). */
  bm25?: { k1?: number; b?: number };
  /**
   * Where `add` embeds: a number of worker threads the index starts on first use (0: on the
   * calling thread), or workers from `createWorker()` with the same embedder (yours to
   * terminate). Default: with MiniLM, min(4, cores) workers on a machine with 2 cores or more
   * (each holds its own copy of the model, ~0.5 GB), for batches of 32 texts or more; else the
   * calling thread.
   */
  workers?: number | CondenseWorker[];
  /** Open without creating or migrating anything and refuse writes: for a read replica. Default false. */
  readOnly?: boolean;
  /**
   * How many neighbours the dense list fetches from the HNSW index for a query whose options do
   * not set `candidates` (1–10000; a query's own `candidates` sets both lists, as in memory).
   * Default 1000, as in memory: the ranking is then the in-memory one. 500 is faster (at 100k
   * chunks the HNSW search took ~31 instead of ~57 ms) but moves the ranking: fusion normalises
   * the dense side by its list's lowest cosine, and pseudo-relevance feedback learns from the
   * first fusion's top 10; on the dev IR sets 500 lost 0.0076 (CISI) and 0.0058 (MED) nDCG@10
   * with feedback on (docs/pg.md, "Measurements").
   */
  denseCandidates?: number;
  /** pgvector's `hnsw.ef_search` for queries (1–1000). Default: the dense list's depth (`denseCandidates` or the query's `candidates`), 40 to 1000. */
  efSearch?: number;
  /**
   * A cap on the postings a query reads per term, best BM25 impact first (at least
   * `candidates`): faster on large tables, but approximate. Scores are exact for every term
   * found in at most this many chunks; beyond, a chunk whose share of a common term is weak
   * misses that term's contribution (at 84k chunks, a cap of 1000 kept 69% of the exact BM25
   * top 10: docs/pg.md). Default: no cap, every posting (exact BM25, the in-memory ranking).
   */
  postingsPerTerm?: number;
  /**
   * The postings per term, best BM25 impact first, that the expanded query of pseudo-relevance
   * feedback (the third list, `feedback` in the query options) reads; `null`: every posting.
   * Its terms are the feedback chunks' most frequent ones, often found in a third or more of a
   * large table's chunks. Default 1000: exact on tables where no expansion term is in more
   * than 1000 chunks (the in-memory ranking); at 100k chunks it cut the expanded list's SQL from
   * ~245 to ~22 ms per query, with 98% of the uncapped top 10 kept (docs/pg.md).
   * The smaller of this and `postingsPerTerm` applies.
   */
  feedbackPostingsPerTerm?: number | null;
}

/** Progress of `PgIndex.add`, after each batch: embedded, then written (committed). */
export interface PgProgress {
  phase: 'embed' | 'write';
  /** Documents of the call handled so far. */
  done: number;
  /** Documents in the call, or null for an iterable. */
  total: number | null;
}

/** Options of `PgIndex.add`. */
export interface PgAddOptions {
  onProgress?: (progress: PgProgress) => void;
  /** Documents per batch, each one transaction (1–10000). Default 64. */
  batchSize?: number;
}

/** What `PgIndex.add` did. */
export interface PgAddResult {
  /** Documents the table did not have. */
  added: number;
  /** Stored documents whose content changed (their changed chunks replaced). */
  updated: number;
  /** Stored documents given again unchanged (nothing written). */
  unchanged: number;
  /** Chunk rows written. */
  chunks: number;
  /** Chunk texts embedded. */
  embedded: number;
  /** Chunk vectors taken from rows with the same content instead of embedding again. */
  reused: number;
}

/** What `PgIndex.stats` reports. */
export interface PgIndexStats {
  table: string;
  schemaVersion: number;
  documents: number;
  chunks: number;
  /** Distinct BM25 terms. */
  terms: number;
  avgChunkTerms: number;
  /** Size of the index's tables and indexes on disk. */
  bytes: number;
  embedder: EmbedderIdentity;
  /** The chunk and BM25 settings the table was created with. */
  options: { chunk: { minChars: number; maxChars: number }; bm25: { k1: number; b: number } };
  /** The pgvector version of the server. */
  pgvector: string;
}

/** A condense index whose rows live in PostgreSQL (pgvector HNSW + BM25 in SQL). */
export class PgIndex {
  private constructor();
  /**
   * Opens the index in `options.table`, creating the tables (and the `vector` extension) or
   * migrating them to this release's schema when needed, under an advisory lock.
   * @throws {CondenseError} `invalid_options`, `embedder_mismatch` (the table holds another
   * embedder's vectors), `invalid_index` (a newer schema, or tables condense did not make),
   * `invalid_state` at `pgvector` (pgvector older than 0.5.0)
   */
  static open(options: PgIndexOptions): Promise<PgIndex>;
  /** The table name as given. */
  readonly table: string;
  /** The embedder identity the table records. */
  identity(): EmbedderIdentity;
  /**
   * Chunks, embeds and stores documents, one transaction per batch, in order. A stored id is
   * skipped when unchanged and replaced when changed, so re-running an interrupted ingest
   * adds nothing twice. Documents: an array or any (async) iterable.
   * @throws {CondenseError} `invalid_input` at `documents[i]…` (bad or duplicate document:
   * the batches before it are committed)
   */
  add(documents: Iterable<Document> | AsyncIterable<Document>, options?: PgAddOptions): Promise<PgAddResult>;
  /** Removes documents by id (unknown ids are ignored), in one transaction; resolves to how many were removed. */
  remove(ids: string[]): Promise<number>;
  /** A stored document with its chunks, or undefined. */
  get(id: string): Promise<DocumentInfo | undefined>;
  /** Counts and sizes. */
  stats(): Promise<PgIndexStats>;
  /** Same as `query(index, question, options)`. */
  query(question: string, options?: QueryOptions | null): Promise<QueryResult>;
  /** Terminates the workers the index started and ends the pool it made. */
  close(): Promise<void>;
}

/**
 * Ranks chunks for a question and compresses the results, as the in-memory `query` does: the
 * same options and the same result shape. Candidates come from PostgreSQL (pgvector HNSW and
 * BM25 in SQL) in one read-only snapshot.
 * @throws {CondenseError} `invalid_input` (question, index), `invalid_options`
 */
export function query(index: PgIndex, question: string, options?: QueryOptions | null): Promise<QueryResult>;
