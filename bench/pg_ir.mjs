// Retrieval quality through PostgreSQL (condense-ctx/pg) against the in-memory index, side by
// side in one run, with the same options and the same MiniLM vectors: nDCG@10 on the dev IR
// sets (bench/ir.sh's settings: result compression off, one chunk per document, top 100),
// lexical only, dense only and hybrid. The PgIndex's lexical list is BM25 in SQL (what ships);
// `fts` rows take it from PostgreSQL's full-text search instead (tsvector + GIN, ts_rank_cd),
// measured for comparison.
//
//   scripts/pg start && node bench/pg_ir.mjs [SET ...]        (SET: cisi, med; default both)
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
const sets = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['cisi', 'med'];
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
    const idx = await PgIndex.open({ pool, table: `${schema}.${set}`, embedder: cached, workers: 0 });
    await idx.add(docs, { batchSize: 128 });
    const pgMs = performance.now() - t0;
    await pool.query(`ALTER TABLE ${schema}.${set} ADD COLUMN fts tsvector`);
    await pool.query(`UPDATE ${schema}.${set} SET fts = to_tsvector('english', array_to_string(header_path, ' ') || ' ' || content)`);
    await pool.query(`CREATE INDEX ON ${schema}.${set} USING gin (fts)`);
    await pool.query(`ANALYZE ${schema}.${set}`);
    console.error(`${set}: ${docs.length} documents, ${mem.chunks} chunks; ${list.length} texts embedded in ${(embedMs / 1000).toFixed(1)} s on ${workers.length} workers (0 when cached); in-memory add ${(memMs / 1000).toFixed(1)} s, PgIndex add ${(pgMs / 1000).toFixed(1)} s`);

    for (const [system, weights] of Object.entries(SYSTEMS)) {
      const options = { ...OFF, ...weights };
      const engines = {
        'in-memory Index': (q) => Promise.resolve(mem.query(q, options)),
        'PgIndex (BM25 in SQL)': (q) => query(idx, q, options),
      };
      if (system !== 'dense') engines['PgIndex, lexical list from full-text search'] = (q) => _queryWithLexical(idx, q, options, FTS);
      for (const [engine, run] of Object.entries(engines)) {
        const results = [];
        for (const q of questions) {
          const r = await run(q.text);
          results.push({ id: q.id, results: r.results.map((x) => ({ docId: x.docId, score: x.score })) });
        }
        const m = evaluate(set, `${system}-${engine.replace(/[^a-z]+/gi, '_')}`, results);
        rows.push({ set, system, engine, ...m });
        console.error(`  ${system} ${engine}: nDCG@10 ${m['ndcg@10'].toFixed(4)}`);
      }
    }
    mem.free();
    await idx.close();
  }
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
  await Promise.all(workers.map((w) => w.terminate()));
}

console.log('| set | system | engine | nDCG@10 | R@10 | R@100 | MRR@10 | nDCG@10 vs in-memory |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const base = rows.find((x) => x.set === r.set && x.system === r.system && x.engine === 'in-memory Index');
  const d = r['ndcg@10'] - base['ndcg@10'];
  console.log(`| ${r.set} | ${r.system} | ${r.engine} | ${r['ndcg@10'].toFixed(4)} | ${r['r@10'].toFixed(4)} | ${r['r@100'].toFixed(4)} | ${r['mrr@10'].toFixed(4)} | ${r.engine === 'in-memory Index' ? '–' : (d >= 0 ? '+' : '') + d.toFixed(4)} |`);
}
