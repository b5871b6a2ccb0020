// condense-ctx/pg on PGlite (PostgreSQL compiled to wasm, in this process) with its pgvector
// extension, through PGlite's node-postgres connection (`createPgConfig`): the same schema,
// migrations, writes and queries as on the server, with no server. Needs no scripts/pg.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import pg from 'pg';
import { condense, pgApi, fixture, recount } from './helpers.mjs';

const { PgIndex, query, SCHEMA_VERSION } = pgApi;
const { Index, lexicalEmbedder } = condense;
const lexical = lexicalEmbedder();
const { docs, questions } = fixture();

let db;
let pool;

before(async () => {
  db = await PGlite.create({ extensions: { vector } });
  pool = new pg.Pool(createPgConfig(db));
});

after(async () => {
  await pool?.end();
  await db?.close();
});

test('PgIndex on PGlite: the in-memory index results, writes consistent, remove and reopen', async () => {
  const idx = await PgIndex.open({ pool, table: 'public.kb', embedder: lexical });
  const s0 = await idx.stats();
  assert.equal(s0.schemaVersion, SCHEMA_VERSION);
  assert.match(s0.pgvector, /^0\.8\.\d+$/);
  const r = await idx.add(docs, { batchSize: 40 });
  assert.equal(r.added, docs.length);
  const mem = Index.create({ embedder: lexical });
  mem.add(docs);
  assert.equal(r.chunks, mem.chunks);
  for (const options of [undefined, { minScore: 0, topN: 10, maxChunksPerDoc: 0 }, { format: 'json', fusion: 'rrf' }, { minScore: 0, feedback: false }]) {
    for (const q of questions) {
      const want = mem.query(q, options);
      const got = await query(idx, q, options);
      assert.deepEqual(got.results.map((x) => x.chunkId), want.results.map((x) => x.chunkId), `${q} ${JSON.stringify(options)}`);
      got.results.forEach((x, i) => assert.ok(Math.abs(x.score - want.results[i].score) < 1e-4, `${q}: ${x.score} vs ${want.results[i].score}`));
      // (`text` carries the scores, which agree to float32 rounding, not to the last digit.)
      assert.deepEqual({ ...got.stats, ms: 0 }, { ...want.stats, ms: 0 });
    }
  }
  // Re-adding changes nothing; a removal is the in-memory removal.
  const again = await idx.add(docs, { batchSize: 40 });
  assert.deepEqual([again.added, again.unchanged, again.embedded], [0, docs.length, 0]);
  const gone = docs.slice(0, 7).map((d) => d.id);
  assert.equal(await idx.remove(gone), gone.length);
  mem.remove(gone);
  const reopened = await PgIndex.open({ pool, table: 'public.kb', embedder: lexical });
  const s = await reopened.stats();
  assert.deepEqual([s.documents, s.chunks], [docs.length - gone.length, mem.chunks]);
  for (const q of questions.slice(0, 5)) {
    assert.deepEqual((await query(reopened, q, { minScore: 0 })).results.map((x) => x.chunkId),
      mem.query(q, { minScore: 0 }).results.map((x) => x.chunkId), q);
  }
  const counts = await recount(pool, 'public.kb');
  assert.deepEqual(counts.dfWrong, []);
  assert.deepEqual([counts.counts.orphans, counts.counts.duplicates, counts.counts.wrong_chunk_counts], [0, 0, 0]);
  assert.equal(counts.stats.chunks, mem.chunks);
  await reopened.close();
  await idx.close();
  mem.free();
});
