// Retrieval quality through PostgreSQL (condense-ctx/pg) against the in-memory index, side by
// side in one run, with the same options and the same MiniLM vectors: nDCG@10 on the dev IR
// sets (bench/ir.sh's settings: result compression off, one chunk per document, top 100),
// lexical only, dense only and hybrid. The PgIndex's lexical list is BM25 in SQL (what ships);
// `fts` rows take it from PostgreSQL's full-text search instead (tsvector + GIN, ts_rank_cd),
// measured for comparison.
//
//   scripts/pg start && node bench/pg_ir.mjs [--pglite] [SET ...]   (SET: cisi, med; default both)
//
// --pglite adds the same PgIndex on PGlite (PostgreSQL compiled to wasm, in this process, with
// its pgvector extension; tests/pg's devDependencies), through PGlite's node-postgres
// connection. Each engine's query latency (p50 / p95 over the set's questions, one at a time) is
// in the table too. --open JSON adds PgIndex.open options (e.g. '{"feedbackPostingsPerTerm":null}'),
// --systems lexical,dense,hybrid picks the rows, --no-fts drops the full-text-search engine.
//
// Needs scripts/build-pkg (with the model files), `npm ci` in tests/pg (the pg client) and
// python3 (bench/ir_eval.py). Chunk and question vectors are computed once, on two workers
// (embedParallel), and served to both indexes by one external embedder with MiniLM's identity.
// Output: a markdown table; runs in bench/out/pg-ir/.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';

const root = new URL('../', import.meta.url);
const path = (p) => new URL(p, root).pathname;
const pg = createRequire(path('tests/pg/package.json'))('pg');
const condense = await import(new URL('pkg/node.js', root).href);
const { PgIndex, query, _queryWithLexical } = await import(new URL('pkg/pg.js', root).href);
const { Index, loadEmbedder, externalEmbedder, createWorker, embedParallel, lexicalEmbedder } = condense;

const data = process.env.IR_DATA ?? path('../shared/data/ir');
const PGLITE = process.argv.includes('--pglite');
const NO_FTS = process.argv.includes('--no-fts');
const flag = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const OPEN = JSON.parse(flag('open') ?? '{}');
const ONLY_SYSTEMS = flag('systems')?.split(',');
const named = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !['--open', '--systems'].includes(all[i - 1]));
const sets = named.length > 0 ? named : ['cisi', 'med'];
const url = process.env.CONDENSE_PG_URL ?? execFileSync(path('scripts/pg'), ['url'], { encoding: 'utf8' }).trim();
const out = path('bench/out/pg-ir');
mkdirSync(out, { recursive: true });

const OFF = { minScore: 0, ngramThreshold: 1, similarityThreshold: 1, maxChunksPerDoc: 1, topN: 100, truncate: false };
const SYSTEMS = {
  lexical: { lexicalWeight: 1, denseWeight: 0 },
  dense: { lexicalWeight: 0, denseWeight: 1 },
  hybrid: { lexicalWeight: 1, denseWeight: 1 },
};

/** PostgreSQL's full-text search as the lexical list: the question's words OR'ed, ranked by
 * ts_rank_cd over a tsvector of the chunk ('english': Snowball stemmer, its stop words). */
const FTS = {
  sql: (n) => `
    WITH q AS (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS q
               FROM unnest(to_tsvector('english', $1)))
    SELECT c.id, c.doc, ts_rank_cd(c.fts, q.q) AS score, 1
    FROM ${n.chunks} c, q WHERE q.q IS NOT NULL AND c.fts @@ q.q
    ORDER BY score DESC, c.id LIMIT $2`,
  values: (plan, question) => [question, plan.depth],
};

const lines = (f) => readFileSync(f, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));

function evaluate(set, name, runs) {
  const file = `${out}/${set}-${name}.jsonl`;
  writeFileSync(file, runs.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const m = JSON.parse(execFileSync('python3', [path('bench/ir_eval.py'), '--qrels', `${data}/${set}/qrels.tsv`, '--run', file, '--json'], { encoding: 'utf8' }));
  return m;
}

/** An in-process PGlite database with pgvector, as a node-postgres pool (its own connection). */
async function pglitePool() {
  const req = createRequire(path('tests/pg/package.json'));
  const { PGlite } = req('@electric-sql/pglite');
  const { vector } = req('@electric-sql/pglite-pgvector');
  const { createPgConfig } = req('@electric-sql/pglite/node-postgres');
  const db = await PGlite.create({ extensions: { vector } });
  return { pool: new pg.Pool(createPgConfig(db)), close: () => db.close() };
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

const minilm = await loadEmbedder();
const workers = await Promise.all(Array.from({ length: Math.max(1, Math.min(2, availableParallelism())) }, () => createWorker({ embedder: 'minilm' })));
const pool = new pg.Pool({ connectionString: url, max: 4 });
const schema = `bench_ir_${process.pid}`;
await pool.query(`CREATE SCHEMA ${schema}`);
const rows = [];
try {
  for (const set of sets) {
    const docs = lines(`${data}/${set}/corpus.jsonl`).map((d) => ({ id: d._id, title: d.title || undefined, text: d.text }));
    const questions = lines(`${data}/${set}/queries.jsonl`).map((q) => ({ id: q._id, text: q.text }));
    // Every text either index embeds: the chunks' embedding texts (from the same chunker) and the questions.
    const chunker = Index.create({ embedder: lexicalEmbedder() });
    chunker.add(docs);
    const texts = new Set(questions.map((q) => q.text));
    for (const d of docs) {
      for (const c of chunker.get(d.id).chunks) {
        texts.add(c.headerPath.length > 0 ? `${c.headerPath.join(' > ')}\n${c.text}` : c.text);
      }
    }
    chunker.free();
    let t0 = performance.now();
    const list = [...texts];
    // The vectors are kept in bench/out/pg-ir/ (keyed by the texts and the model): a re-run
    // skips the embedding.
    const key = createHash('sha256').update(JSON.stringify([minilm.identity(), list])).digest('hex').slice(0, 16);
    const file = `${out}/${set}-${key}.f32`;
    let flat;
    if (existsSync(file)) {
      const b = readFileSync(file);
      flat = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    } else {
      const vs = await embedParallel(list, workers);
      flat = new Float32Array(list.length * 384);
      vs.forEach((v, i) => flat.set(v, i * 384));
      writeFileSync(file, Buffer.from(flat.buffer));
    }
    const cache = new Map(list.map((t, i) => [t, flat.subarray(i * 384, (i + 1) * 384)]));
    const embedMs = performance.now() - t0;
    const cached = externalEmbedder(minilm.identity(), (ts) => ts.map((t) => cache.get(t) ?? minilm.embed([t])[0]));

    t0 = performance.now();
    const mem = Index.create({ embedder: cached });
    mem.add(docs);
    const memMs = performance.now() - t0;
    t0 = performance.now();
    const idx = await PgIndex.open({ pool, table: `${schema}.${set}`, embedder: cached, workers: 0, ...OPEN });
    await idx.add(docs, { batchSize: 128 });
    const pgMs = performance.now() - t0;
    let lite = null;
    let liteMs = 0;
    if (PGLITE) {
      t0 = performance.now();
      lite = await pglitePool();
      lite.idx = await PgIndex.open({ pool: lite.pool, table: set, embedder: cached, workers: 0, ...OPEN });
      await lite.idx.add(docs, { batchSize: 128 });
      liteMs = performance.now() - t0;
    }
    await pool.query(`ALTER TABLE ${schema}.${set} ADD COLUMN fts tsvector`);
    await pool.query(`UPDATE ${schema}.${set} SET fts = to_tsvector('english', array_to_string(header_path, ' ') || ' ' || content)`);
    await pool.query(`CREATE INDEX ON ${schema}.${set} USING gin (fts)`);
    await pool.query(`ANALYZE ${schema}.${set}`);
    console.error(`${set}: ${docs.length} documents, ${mem.chunks} chunks; ${list.length} texts embedded in ${(embedMs / 1000).toFixed(1)} s on ${workers.length} workers (0 when cached); in-memory add ${(memMs / 1000).toFixed(1)} s, PgIndex add ${(pgMs / 1000).toFixed(1)} s${lite ? `, on PGlite ${(liteMs / 1000).toFixed(1)} s` : ''}`);

    for (const [system, weights] of Object.entries(SYSTEMS).filter(([k]) => !ONLY_SYSTEMS || ONLY_SYSTEMS.includes(k))) {
      const options = { ...OFF, ...weights };
      const engines = {
        'in-memory Index': (q) => Promise.resolve(mem.query(q, options)),
        'PgIndex (BM25 in SQL)': (q) => query(idx, q, options),
      };
      if (lite) engines['PgIndex on PGlite'] = (q) => query(lite.idx, q, options);
      if (system !== 'dense' && !NO_FTS) engines['PgIndex, lexical list from full-text search'] = (q) => _queryWithLexical(idx, q, options, FTS);
      for (const [engine, run] of Object.entries(engines)) {
        const results = [];
        const ms = [];
        for (const q of questions) {
          const t = performance.now();
          const r = await run(q.text);
          ms.push(performance.now() - t);
          results.push({ id: q.id, results: r.results.map((x) => ({ docId: x.docId, score: x.score })) });
        }
        const m = evaluate(set, `${system}-${engine.replace(/[^a-z]+/gi, '_')}`, results);
        rows.push({ set, system, engine, ...m, p50: pct(ms, 0.5), p95: pct(ms, 0.95) });
        console.error(`  ${system} ${engine}: nDCG@10 ${m['ndcg@10'].toFixed(4)}, p50 ${pct(ms, 0.5).toFixed(1)} ms`);
      }
    }
    mem.free();
    await idx.close();
    if (lite) {
      await lite.idx.close();
      await lite.pool.end();
      await lite.close();
    }
  }
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
  await Promise.all(workers.map((w) => w.terminate()));
}

console.log('| set | system | engine | nDCG@10 | R@10 | R@100 | MRR@10 | nDCG@10 vs in-memory | query p50 / p95 ms |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const base = rows.find((x) => x.set === r.set && x.system === r.system && x.engine === 'in-memory Index');
  const d = r['ndcg@10'] - base['ndcg@10'];
  console.log(`| ${r.set} | ${r.system} | ${r.engine} | ${r['ndcg@10'].toFixed(4)} | ${r['r@10'].toFixed(4)} | ${r['r@100'].toFixed(4)} | ${r['mrr@10'].toFixed(4)} | ${r.engine === 'in-memory Index' ? '–' : (d >= 0 ? '+' : '') + d.toFixed(4)} | ${r.p50.toFixed(1)} / ${r.p95.toFixed(1)} |`);
}
