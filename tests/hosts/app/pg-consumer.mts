// A strict TypeScript consumer of condense-ctx/pg: every option (objects typed `Required<…>`
// so a new option must appear here) and every result field (`covers` fails to compile when a
// field of a result type is not read here). Checked with `tsc -p tsconfig.json`, not run (the
// tests in tests/pg run the same API against a server). The pool is typed structurally: no
// @types/pg is needed.
import { lexicalEmbedder, createWorker } from 'condense-ctx';
import type { QueryResult, DocumentInfo } from 'condense-ctx';
import { PgIndex, query, SCHEMA_VERSION } from 'condense-ctx/pg';
import type {
  PgPool, PgPoolClient, PgIndexOptions, PgAddOptions, PgAddResult, PgProgress, PgIndexStats,
} from 'condense-ctx/pg';

type Covers<T, K extends keyof T> = [Exclude<keyof T, K>] extends [never] ? true : { missing: Exclude<keyof T, K> };
const read = (...values: unknown[]): number => values.length;

declare const pool: PgPool;
const client: Promise<PgPoolClient> = pool.connect();
const workers = [await createWorker({ embedder: 'minilm' })];

const openOptions: Required<PgIndexOptions> = {
  pool, connectionString: 'postgresql://127.0.0.1/condense', table: 'public.docs', embedder: lexicalEmbedder(),
  chunk: { minChars: 200, maxChars: 1500 }, bm25: { k1: 0.9, b: 0.4 }, workers, readOnly: false, denseCandidates: 500, efSearch: 100,
  postingsPerTerm: 1000, feedbackPostingsPerTerm: null,
};
const index: PgIndex = await PgIndex.open(openOptions);
const counted = await PgIndex.open({ pool, table: 'docs', embedder: lexicalEmbedder(), workers: 2 });
const progress = (p: PgProgress): void => {
  const covered: Covers<PgProgress, 'phase' | 'done' | 'total'> = true;
  read(covered, p.phase === 'embed' || p.phase === 'write', p.done, p.total ?? 0);
};
const addOptions: Required<PgAddOptions> = { onProgress: progress, batchSize: 64 };
const added: PgAddResult = await index.add([{ id: 'a', text: 'Rotate the keys.' }], addOptions);
const addCovered: Covers<PgAddResult, 'added' | 'updated' | 'unchanged' | 'chunks' | 'embedded' | 'reused'> = true;
async function* stream() { yield { id: 'b', text: 'More text.', metadata: { n: 1 } }; }
await index.add(stream());
const removed: number = await index.remove(['a']);
const doc: DocumentInfo | undefined = await index.get('a');
const stats: PgIndexStats = await index.stats();
const statsCovered: Covers<PgIndexStats, 'table' | 'schemaVersion' | 'documents' | 'chunks' | 'terms' | 'avgChunkTerms'
  | 'bytes' | 'embedder' | 'options' | 'pgvector'> = true;
const result: QueryResult = await query(index, 'how often are keys rotated?', { topN: 3, minScore: 0.2 });
const same: QueryResult = await index.query('keys', null);
read(client, addCovered, added.added + added.updated + added.unchanged + added.chunks + added.embedded + added.reused,
  removed, doc?.chunks.length, statsCovered, stats.table, stats.schemaVersion, stats.documents + stats.chunks + stats.terms,
  stats.avgChunkTerms, stats.bytes, stats.embedder.kind, stats.options.chunk.maxChars, stats.options.bm25.k1, stats.pgvector,
  result.results.length, same.queryKind, index.table, index.identity().kind, SCHEMA_VERSION);
await index.close();
await counted.close();
