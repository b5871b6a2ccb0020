// condense-ctx/pg against a real PostgreSQL with pgvector (scripts/pg start; scripts/test
// starts and stops it): `node --test tests/pg/` after scripts/build-pkg. Each run works in a
// schema of its own, dropped at the end.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, rmSync, symlinkSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { condense, pgApi, newPool, freshSchema, fixture, recount, serverUrl, root } from './helpers.mjs';

const { PgIndex, query, SCHEMA_VERSION } = pgApi;
const { Index, lexicalEmbedder, loadEmbedder, createWorker, CondenseError } = condense;

let pool;
let schema;
const lexical = lexicalEmbedder();
const { docs, questions } = fixture();
let tableNo = 0;
const table = (name = 'idx') => `${schema.name}.${name}${++tableNo}`;

before(async () => {
  pool = newPool(8);
  schema = await freshSchema(pool);
});

after(async () => {
  await schema?.drop();
  await pool?.end();
});

async function rejectsCode(promise, code, path) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e?.stack ?? e}`);
    assert.equal(e.code, code, e.message);
    if (path !== undefined) assert.equal(e.path, path, e.message);
    return true;
  });
}

async function consistent(name, expect) {
  const r = await recount(pool, name);
  assert.deepEqual(r.dfWrong, [], 'term document frequencies disagree with the postings');
  assert.equal(r.counts.orphans, 0, 'postings of a chunk that is gone');
  assert.equal(r.counts.duplicates, 0, 'a chunk id twice');
  assert.equal(r.counts.wrong_chunk_counts, 0, 'a document whose chunk count is wrong');
  assert.deepEqual(r.stats, { docs: r.counts.docs, chunks: r.counts.chunks, total_terms: r.counts.total_terms });
  if (expect) {
    assert.equal(r.counts.docs, expect.docs);
    assert.equal(r.counts.chunks, expect.chunks);
  }
  return r;
}

/** Runs tests/pg/child.mjs; resolves to {code, signal, lines}. `onLine` may kill it. */
function child(args, onLine) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(new URL('child.mjs', import.meta.url)), ...args], {
      env: { ...process.env, CONDENSE_PG_URL: serverUrl() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines = [];
    let err = '';
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        onLine?.(line, p);
      }
    });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('exit', (code, signal) => resolve({ code, signal, lines, stderr: err, json: () => JSON.parse(lines.at(-1)) }));
  });
}

/** The in-memory index over the same documents, for comparisons. */
function memoryIndex(embedder, documents, options) {
  const idx = Index.create({ embedder, ...(options ?? {}) });
  idx.add(documents);
  return idx;
}

test('open creates the schema once; stats, get, identity', async () => {
  const name = table();
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  const again = await PgIndex.open({ pool, table: name, embedder: lexical });
  const s = await idx.stats();
  assert.equal(SCHEMA_VERSION, 1);
  assert.equal(s.schemaVersion, SCHEMA_VERSION);
  assert.deepEqual([s.documents, s.chunks, s.terms], [0, 0, 0]);
  assert.deepEqual(s.embedder, lexical.identity());
  assert.deepEqual(s.options, { chunk: { minChars: 200, maxChars: 1500 }, bm25: { k1: 0.9, b: 0.4 } });
  assert.match(s.pgvector, /^\d+\.\d+\.\d+$/);
  assert.equal(idx.table, name);
  assert.deepEqual(idx.identity(), lexical.identity());
  const tables = (await pool.query(
    "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename LIKE $2 ORDER BY 1", [schema.name, `${name.split('.')[1]}%`])).rows.map((r) => r.tablename);
  assert.deepEqual(tables.map((t) => t.slice(name.split('.')[1].length)), ['', '_docs', '_meta', '_postings', '_stats', '_terms']);
  const r = await idx.add(docs.slice(0, 10));
  assert.deepEqual({ added: r.added, updated: r.updated, unchanged: r.unchanged, reused: r.reused }, { added: 10, updated: 0, unchanged: 0, reused: 0 });
  assert.ok(r.chunks >= 10 && r.embedded === r.chunks, JSON.stringify(r));
  const mem = memoryIndex(lexical, docs.slice(0, 10));
  assert.equal(r.chunks, mem.chunks);
  assert.deepEqual(await again.get(docs[3].id), mem.get(docs[3].id));
  assert.equal(await idx.get('nope'), undefined);
  const s2 = await again.stats();
  assert.deepEqual([s2.documents, s2.chunks], [10, mem.chunks]);
  assert.ok(s2.terms > 100 && s2.bytes > 0 && s2.avgChunkTerms > 10, JSON.stringify(s2));
  await consistent(name, { docs: 10, chunks: mem.chunks });
  await idx.close();
  await again.close();
  await rejectsCode(idx.stats(), 'invalid_state', 'index');
});

test('query() gives the in-memory index results (lexical embedder: BM25 in SQL)', async () => {
  const name = table();
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  await idx.add(docs, { batchSize: 25 });
  const mem = memoryIndex(lexical, docs);
  const optionSets = [
    undefined,
    { minScore: 0, topN: 10, maxChunksPerDoc: 0 },
    { topN: 3, format: 'verbose', truncate: false },
    { format: 'json', candidates: 50, rrfK: 20, fusion: 'rrf' },
    { minScore: 0, topN: 10, candidates: 50, fusion: 'convex' },
    // Pseudo-relevance feedback (on by default above): off, and with more terms.
    { minScore: 0, topN: 10, feedback: false },
    { minScore: 0, topN: 10, feedbackTerms: 25 },
  ];
  for (const options of optionSets) {
    for (const q of questions) {
      const want = mem.query(q, options);
      const got = await query(idx, q, options);
      assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
      assert.equal(got.queryKind, want.queryKind);
      assert.deepEqual(got.results.map((r) => r.chunkId), want.results.map((r) => r.chunkId), `${q} ${JSON.stringify(options)}`);
      got.results.forEach((r, i) => {
        const w = want.results[i];
        assert.ok(Math.abs(r.score - w.score) < 1e-4, `${q}: score ${r.score} vs ${w.score}`);
        assert.deepEqual({ ...r, score: 0 }, { ...w, score: 0 });
      });
      assert.deepEqual({ ...got.stats, ms: 0 }, { ...want.stats, ms: 0 });
    }
  }
  // An empty question is the in-memory error.
  await rejectsCode(query(idx, '', {}), 'invalid_input', 'question');
  await rejectsCode(query(idx, 'x', { topN: 0 }), 'invalid_options', 'options.topN');
  await rejectsCode(query(mem, 'x'), 'invalid_input', 'index');
  await idx.close();
});

test('feedbackPostingsPerTerm caps only the expanded query\'s read: exact (null) and the default rank as in memory here', async () => {
  const name = table();
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  await idx.add(docs, { batchSize: 40 });
  const exact = await PgIndex.open({ pool, table: name, embedder: lexical, feedbackPostingsPerTerm: null });
  const one = await PgIndex.open({ pool, table: name, embedder: lexical, feedbackPostingsPerTerm: 1 });
  const mem = memoryIndex(lexical, docs);
  const ids = (r) => r.results.map((x) => x.chunkId);
  let moved = 0;
  for (const q of questions) {
    const want = ids(mem.query(q, { minScore: 0 }));
    // The fixture's terms are in fewer than 1000 chunks each: the default cap reads everything.
    assert.deepEqual(ids(await query(idx, q, { minScore: 0 })), want, q);
    assert.deepEqual(ids(await query(exact, q, { minScore: 0 })), want, q);
    // One posting per expansion term changes the third list, not the other two.
    if (JSON.stringify(ids(await query(one, q, { minScore: 0 }))) !== JSON.stringify(want)) moved++;
    assert.deepEqual(ids(await query(one, q, { minScore: 0, feedback: false })), ids(mem.query(q, { minScore: 0, feedback: false })), q);
  }
  assert.ok(moved > 0, 'a cap of one posting per expansion term changed no ranking: the option does not reach the SQL');
  for (const i of [idx, exact, one]) await i.close();
  mem.free();
});

test('query() with MiniLM: pgvector HNSW + BM25 give the in-memory ranking; workers embed', async () => {
  const minilm = await loadEmbedder();
  const workers = await Promise.all([1, 2].map(() => createWorker({ embedder: 'minilm' })));
  try {
    const subset = docs.slice(0, 40);
    const name = table('minilm');
    const idx = await PgIndex.open({ pool, table: name, embedder: minilm, workers });
    const progress = [];
    const r = await idx.add(subset, { batchSize: 20, onProgress: (p) => progress.push(p) });
    assert.equal(r.added, 40);
    assert.deepEqual(progress.map((p) => `${p.phase}:${p.done}/${p.total}`), ['embed:20/40', 'write:20/40', 'embed:40/40', 'write:40/40']);
    const mem = memoryIndex(minilm, subset);
    // The stored vectors are the in-memory index's, to float32 rounding in both directions.
    const stored = await pool.query(`SELECT chunk_id, embedding::text AS e, embedder, model_sha256 FROM ${name} ORDER BY id LIMIT 3`);
    for (const row of stored.rows) {
      const mine = JSON.parse(row.e);
      const [fresh] = minilm.embed([mem.get(row.chunk_id.split('#')[0]).chunks.find((c) => c.id === row.chunk_id).text]);
      const cos = mine.reduce((s, x, i) => s + x * fresh[i], 0);
      assert.ok(cos > 0.9999, `cosine ${cos}`);
      assert.equal(row.embedder, 'minilm/' + minilm.identity().version);
      assert.equal(row.model_sha256, minilm.identity().modelSha256);
    }
    let same = 0;
    for (const q of questions) {
      const want = mem.query(q, { minScore: 0, topN: 10 });
      const got = await query(idx, q, { minScore: 0, topN: 10 });
      assert.equal(got.queryKind, want.queryKind);
      if (JSON.stringify(got.results.map((x) => x.chunkId)) === JSON.stringify(want.results.map((x) => x.chunkId))) same++;
      // The best result agrees, with its score.
      assert.equal(got.results[0]?.chunkId, want.results[0]?.chunkId, q);
      assert.ok(Math.abs(got.results[0].score - want.results[0].score) < 1e-3, q);
    }
    assert.ok(same >= questions.length - 2, `${same} of ${questions.length} rankings identical`);
    // denseCandidates: the dense list's depth when the query does not set `candidates` (the
    // in-memory index with that many candidates ranks the same); a query's own wins.
    const short = await PgIndex.open({ pool, table: name, embedder: minilm, workers: 0, denseCandidates: 3 });
    const denseOnly = { lexicalWeight: 0, minScore: 0, topN: 10, maxChunksPerDoc: 0 };
    for (const q of questions.slice(0, 5)) {
      const got = (await query(short, q, denseOnly)).results.map((x) => x.chunkId);
      assert.equal(got.length, 3);
      assert.deepEqual(got, mem.query(q, { ...denseOnly, candidates: 3 }).results.map((x) => x.chunkId), q);
      assert.equal((await query(short, q, { ...denseOnly, candidates: 8 })).results.length, 8);
    }
    await short.close();
    await rejectsCode(PgIndex.open({ pool, table: name, embedder: minilm, denseCandidates: 0 }), 'invalid_options', 'options.denseCandidates');
    // Another embedder cannot open the table, and the rows refuse another model.
    await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical }), 'embedder_mismatch', 'options.embedder');
    await assert.rejects(pool.query(`UPDATE ${name} SET model_sha256 = 'x' WHERE id = (SELECT min(id) FROM ${name})`), /check constraint/);
    await rejectsCode(PgIndex.open({ pool, table: table(), embedder: lexical, workers }), 'embedder_mismatch', 'options.workers[0]');
    await idx.close();
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
});

test('re-adding is idempotent: unchanged documents skipped, changed ones replaced chunk by chunk', async () => {
  const name = table();
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  const base = docs.slice(0, 12);
  await idx.add(base, { batchSize: 5 });
  const before = await consistent(name);
  const again = await idx.add(base, { batchSize: 7 });
  assert.deepEqual(again, { added: 0, updated: 0, unchanged: 12, chunks: 0, embedded: 0, reused: 0 });
  // A long document: one changed paragraph changes one chunk; metadata alone changes none.
  const long = { id: 'long', text: Array.from({ length: 8 }, (_, i) => `Paragraph ${i}. ${docs[i].text}`).join('\n\n') };
  const first = await idx.add([long]);
  assert.ok(first.chunks >= 3, JSON.stringify(first));
  const edited = { ...long, text: long.text.replace('Paragraph 7.', 'Paragraph seven.') };
  const second = await idx.add([edited]);
  assert.equal(second.updated, 1);
  assert.equal(second.chunks, 1, JSON.stringify(second));
  assert.equal(second.embedded, 1);
  const third = await idx.add([{ ...edited, metadata: { source: 'x' } }]);
  assert.deepEqual({ ...third }, { added: 0, updated: 1, unchanged: 0, chunks: 0, embedded: 0, reused: 0 });
  assert.deepEqual((await idx.get('long')).metadata, { source: 'x' });
  // The same content under another id reuses the stored vectors.
  const copy = await idx.add([{ id: 'copy', text: docs[0].text, title: docs[0].title }]);
  assert.equal(copy.embedded, 0);
  assert.ok(copy.reused >= 1);
  // The result equals an index built from the final documents directly.
  const mem = memoryIndex(lexical, [...base, { ...edited, metadata: { source: 'x' } }, { id: 'copy', text: docs[0].text, title: docs[0].title }]);
  await consistent(name, { docs: 14, chunks: mem.chunks });
  assert.deepEqual(await idx.get('long'), mem.get('long'));
  for (const q of questions.slice(0, 5)) {
    assert.deepEqual((await idx.query(q, { minScore: 0 })).results.map((r) => r.chunkId), mem.query(q, { minScore: 0 }).results.map((r) => r.chunkId));
  }
  assert.ok(before.counts.chunks > 0);
  await idx.close();
});

test('remove deletes documents with their chunks, postings and statistics', async () => {
  const name = table();
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  await idx.add(docs.slice(0, 30));
  assert.equal(await idx.remove([docs[1].id, docs[5].id, 'unknown', docs[1].id]), 2);
  assert.equal(await idx.remove([]), 0);
  assert.equal(await idx.get(docs[1].id), undefined);
  const rest = docs.slice(0, 30).filter((d) => d.id !== docs[1].id && d.id !== docs[5].id);
  const mem = memoryIndex(lexical, rest);
  await consistent(name, { docs: 28, chunks: mem.chunks });
  for (const q of questions.slice(0, 8)) {
    const got = await query(idx, q, { minScore: 0, topN: 8 });
    const want = mem.query(q, { minScore: 0, topN: 8 });
    assert.deepEqual(got.results.map((r) => r.chunkId), want.results.map((r) => r.chunkId), q);
  }
  await rejectsCode(idx.remove('x'), 'invalid_input', 'ids');
  await rejectsCode(idx.remove([1]), 'invalid_input', 'ids[0]');
  await idx.close();
});

test('bad input and options name their field', async () => {
  const name = table();
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  // Positions count across batches; the batches before a bad document are committed.
  await rejectsCode(idx.add([...docs.slice(0, 5), { id: '', text: 'x' }], { batchSize: 2 }), 'invalid_input', 'documents[5].id');
  assert.equal((await idx.stats()).documents, 4);
  await rejectsCode(idx.add([docs[10], docs[11], docs[10]], { batchSize: 2 }), 'invalid_input', 'documents[2].id');
  await rejectsCode(idx.add([{ id: 'a', text: 'x', bogus: 1 }]), 'invalid_input', 'documents[0].bogus');
  await rejectsCode(idx.add('text'), 'invalid_input', 'documents');
  await rejectsCode(idx.add([], { batchSize: 0 }), 'invalid_options', 'options.batchSize');
  await rejectsCode(idx.add([], { bogus: 1 }), 'invalid_options', 'options.bogus');
  await rejectsCode(PgIndex.open({ pool, table: 'Bad-Name', embedder: lexical }), 'invalid_options', 'options.table');
  await rejectsCode(PgIndex.open({ table: name, embedder: lexical }), 'invalid_options', 'options.pool');
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: {} }), 'invalid_options', 'options.embedder');
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical, bogus: 1 }), 'invalid_options', 'options.bogus');
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical, chunk: { maxChars: 900 } }), 'invalid_options', 'options.chunk');
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical, bm25: { k1: -1 } }), 'invalid_options', 'options.bm25.k1');
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical, feedbackPostingsPerTerm: 0 }), 'invalid_options', 'options.feedbackPostingsPerTerm');
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical, feedbackPostingsPerTerm: '5' }), 'invalid_options', 'options.feedbackPostingsPerTerm');
  // The settings a table was created with are the table's.
  const custom = table();
  await (await PgIndex.open({ pool, table: custom, embedder: lexical, chunk: { maxChars: 900 } })).close();
  const reopened = await PgIndex.open({ pool, table: custom, embedder: lexical });
  assert.equal((await reopened.stats()).options.chunk.maxChars, 900);
  // Generators work too (batches of them).
  const gen = function* () { yield docs[20]; yield docs[21]; };
  assert.equal((await reopened.add(gen())).added, 2);
  await idx.close();
  await reopened.close();
});

test('schema versions: a newer schema, tables condense did not make, readOnly', async () => {
  const name = table();
  await (await PgIndex.open({ pool, table: name, embedder: lexical })).close();
  await pool.query(`UPDATE ${name}_meta SET value = '99' WHERE key = 'schema_version'`);
  await rejectsCode(PgIndex.open({ pool, table: name, embedder: lexical }), 'invalid_index', 'options.table');
  const foreign = table();
  await pool.query(`CREATE TABLE ${foreign}_docs (id int)`);
  await rejectsCode(PgIndex.open({ pool, table: foreign, embedder: lexical }), 'invalid_index', 'options.table');
  await rejectsCode(PgIndex.open({ pool, table: table(), embedder: lexical, readOnly: true }), 'invalid_index', 'options.table');
  const ro = table();
  const w = await PgIndex.open({ pool, table: ro, embedder: lexical });
  await w.add(docs.slice(0, 3));
  const r = await PgIndex.open({ pool, table: ro, embedder: lexical, readOnly: true });
  await rejectsCode(r.add(docs.slice(3, 4)), 'invalid_state', 'index');
  await rejectsCode(r.remove([docs[0].id]), 'invalid_state', 'index');
  assert.equal((await r.query(docs[1].title, { minScore: 0 })).results[0].docId, docs[1].id);
  await w.close();
  await r.close();
});

test('two processes opening a new table at once migrate it once', async () => {
  const name = table();
  const [a, b] = await Promise.all([child(['open', name]), child(['open', name])]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(a.json().schemaVersion, 1);
  const rows = (await pool.query(`SELECT count(*)::int AS n FROM ${name}_meta WHERE key = 'schema_version'`)).rows;
  assert.equal(rows[0].n, 1);
});

test('two processes adding at once, a third querying meanwhile: every document exactly once', async () => {
  const name = table();
  await (await PgIndex.open({ pool, table: name, embedder: lexical })).close();
  // Overlapping ranges (40..120 in both), small batches so that the transactions interleave.
  const [a, b, reader] = await Promise.all([
    child(['ingest', name, '0', '120', '6']),
    child(['ingest', name, '40', '160', '6']),
    child(['query', name, '4000']),
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(reader.code, 0, reader.stderr);
  const ra = a.json();
  const rb = b.json();
  assert.equal(ra.added + rb.added, 160, `${JSON.stringify(ra)} ${JSON.stringify(rb)}`);
  assert.equal(ra.added + ra.unchanged, 120);
  assert.equal(rb.added + rb.unchanged, 120);
  assert.ok(reader.json().queries > 0);
  const mem = memoryIndex(lexical, docs);
  await consistent(name, { docs: 160, chunks: mem.chunks });
  const idx = await PgIndex.open({ pool, table: name, embedder: lexical });
  for (const q of questions.slice(0, 6)) {
    assert.deepEqual((await idx.query(q, { minScore: 0, topN: 10 })).results.map((r) => r.chunkId),
      mem.query(q, { minScore: 0, topN: 10 }).results.map((r) => r.chunkId), q);
  }
  await idx.close();
});

test('an ingest killed mid-batch, re-run, stores every chunk exactly once', async () => {
  const name = table();
  await (await PgIndex.open({ pool, table: name, embedder: lexical })).close();
  const killed = await child(['ingest', name, '0', '160', '16', '3'], (line, p) => {
    if (line === 'mid-batch 3') p.kill('SIGKILL');
  });
  assert.equal(killed.signal, 'SIGKILL', killed.stderr);
  assert.ok(killed.lines.includes('mid-batch 3'));
  // The killed batch's transaction rolled back: exactly the two batches before it are there.
  const partial = await consistent(name);
  assert.equal(partial.counts.docs, 32);
  const rerun = await child(['ingest', name, '0', '160', '16']);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.deepEqual({ added: rerun.json().added, unchanged: rerun.json().unchanged }, { added: 128, unchanged: 32 });
  const mem = memoryIndex(lexical, docs);
  await consistent(name, { docs: 160, chunks: mem.chunks });
  // Every chunk of every document, once.
  const ids = (await pool.query(`SELECT chunk_id FROM ${name} ORDER BY chunk_id`)).rows.map((r) => r.chunk_id);
  const want = docs.flatMap((d) => mem.get(d.id).chunks.map((c) => c.id)).sort();
  assert.deepEqual(ids, want);
});

test('connectionString: the index makes (and ends) its own pool with the pg package', async () => {
  // The package as installed beside pg: pkg/'s files copied, pg linked in (import('pg')
  // resolves from the package's own folder).
  const dir = mkdtempSync(join(tmpdir(), 'condense-pg-'));
  try {
    const pkgDir = join(dir, 'node_modules', 'condense-ctx');
    mkdirSync(pkgDir, { recursive: true });
    for (const f of readdirSync(new URL('pkg/', root))) {
      if (f === 'models') continue;
      cpSync(fileURLToPath(new URL(`pkg/${f}`, root)), join(pkgDir, f), { recursive: true });
    }
    symlinkSync(fileURLToPath(new URL('node_modules/pg', import.meta.url)), join(dir, 'node_modules', 'pg'));
    const name = table();
    writeFileSync(join(dir, 'main.mjs'), `
      import { lexicalEmbedder } from 'condense-ctx';
      import { PgIndex, query } from 'condense-ctx/pg';
      const idx = await PgIndex.open({ connectionString: process.argv[2], table: process.argv[3], embedder: lexicalEmbedder() });
      await idx.add([{ id: 'a', text: 'Rotate the API keys every quarter.' }, { id: 'b', text: 'The cafeteria menu changes weekly.' }]);
      const r = await query(idx, 'how often are keys rotated?', { minScore: 0 });
      await idx.close();
      console.log(JSON.stringify(r.results.map((x) => x.docId)));
    `);
    const out = await new Promise((resolve) => {
      const p = spawn(process.execPath, [join(dir, 'main.mjs'), serverUrl(), name], { stdio: ['ignore', 'pipe', 'pipe'] });
      let so = '';
      let se = '';
      p.stdout.on('data', (d) => { so += d; });
      p.stderr.on('data', (d) => { se += d; });
      p.on('exit', (code) => resolve({ code, so, se }));
    });
    assert.equal(out.code, 0, out.se);
    assert.equal(JSON.parse(out.so.trim())[0], 'a');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
