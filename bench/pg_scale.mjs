// condense-ctx/pg at scale: ingest and query through PostgreSQL, side by side with the
// in-memory Index over the same documents and vectors, in one run.
//
//   scripts/pg start && node bench/pg_scale.mjs [--real N] [--synthetic N] [--queries N]
//                                              [--exact N] [--only real|synthetic] [--check]
//                                              [--out FILE] [--no-ingest] [--append N --prefix P]
//
// Documents are bench/synthetic.mjs's (4–8 sentences of the dev IR corpora, one chunk each),
// streamed to PgIndex.add in batches of 256; the questions are bench/synthetic.mjs's too.
//
// - real (default 10,000 chunks): vectors by MiniLM (wasm), embedded on worker threads inside
//   PgIndex.add (its default: min(4, cores) workers).
// - synthetic (default 100,000 chunks; 0 skips): the same kind of text, but the chunks' vectors
//   are not MiniLM's: each is the normalised mean of 2–4 vectors of the real table, picked by
//   the text's hash, so the HNSW graph sees MiniLM-like geometry without a model run per chunk
//   (the table records its own embedder identity, modelSha256 "synthetic-…"). The questions are
//   embedded by MiniLM for real, so query latency includes the question's embedding.
//
// For each table: ingest time and the Node process's RSS every 5% of the ingest; query
// latency p50/p95 (default options, the question's embedding included) through PgIndex (whole
// posting lists: exact BM25), through PgIndex with `postingsPerTerm: 1000`, and through the
// in-memory Index built in this process over the same documents and vectors (its build time
// and RSS growth); the question's embedding alone; and how much of the exact BM25 top 10 /
// top 100 the capped (impact-ordered) lexical list finds (--exact questions).
//
// --check measures tables an earlier run built, without writing: where a PgIndex query's time
// goes (the question's embedding, each round trip, the rest in the client; with the default
// options, with `candidates: 1000` and with `feedback: false`), the recall of pgvector's HNSW search against an exact
// scan (dense lists of 500 and 1000), and the exact BM25 agreement of the default lexical list
// (whole posting lists: it must be 1, which checks the comparison itself) and of
// `postingsPerTerm: 1000`.
//
// --no-ingest measures a table as it is (an ingest stopped part way: batches commit in order,
// so it holds documents d0… up to some batch) instead of completing it first.
//
// --append N (with --only synthetic) adds N new documents (ids P0, P1, …; text drawn as the
// others', from a seed of its own) to the synthetic table and reports the ingest rate at that
// size and the server's shared_buffers: what a table's size and the server's buffers do to
// writes, without building the table again.
//
// A table complete from an earlier run is reused (`add` skips unchanged documents; ingest
// figures are kept from the run that wrote them). Results: stdout (JSON) and --out (default
// bench/out/pg-scale.json). Needs scripts/build-pkg, `npm ci` in tests/pg.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { availableParallelism, cpus } from 'node:os';
import { Rng, sentencePool } from './synthetic.mjs';

const root = new URL('../', import.meta.url);
const path = (p) => new URL(p, root).pathname;
const pg = createRequire(path('tests/pg/package.json'))('pg');
const { Index, loadEmbedder, externalEmbedder, glueEmbedderOf } = await import(new URL('pkg/node.js', root).href);
const { PgIndex, query } = await import(new URL('pkg/pg.js', root).href);
const glue = await import(new URL('pkg/condense.js', root).href);

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
};
const REAL = Number(arg('real', 10000));
const SYNTH = Number(arg('synthetic', 100000));
const QUERIES = Number(arg('queries', 200));
const EXACT = Number(arg('exact', 50));
const ONLY = arg('only', null);
const CHECK = process.argv.includes('--check');
const NO_INGEST = process.argv.includes('--no-ingest');
const APPEND = Number(arg('append', 0));
const PREFIX = arg('prefix', 'a');
const url = process.env.CONDENSE_PG_URL ?? execFileSync(path('scripts/pg'), ['url'], { encoding: 'utf8' }).trim();
const outFile = arg('out', path('bench/out/pg-scale.json'));
mkdirSync(path('bench/out'), { recursive: true });
const report = existsSync(outFile) ? JSON.parse(readFileSync(outFile, 'utf8')) : {};
const save = () => writeFileSync(outFile, JSON.stringify(report, null, 2));

const POOL = sentencePool();

/** bench/synthetic.mjs's documents d0, d1, … (syntheticCorpus().docs), one at a time; with
 * another `prefix` and `seed`, documents of the same kind under other ids. */
function* documents(n, prefix = 'd', seed = 42) {
  const rng = new Rng(seed);
  const next = () => Number(rng.next() % 1000003n);
  for (let i = 0; i < n; i++) {
    const k = 4 + (next() % 5);
    yield { id: `${prefix}${i}`, text: Array.from({ length: k }, () => POOL[next() % POOL.length]).join(' ') };
  }
}

/** bench/synthetic.mjs's questions: the first eight words of spread-out sentences. */
const questions = (n) => Array.from({ length: n }, (_, i) => POOL[(i * 7919) % POOL.length].split(' ').slice(0, 8).join(' '));

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const mb = (b) => Math.round(b / 2 ** 20);
const round = (x, d = 2) => +x.toFixed(d);

async function ingest(idx, n, label) {
  const rss = [];
  const t0 = performance.now();
  let last = 0;
  const r = await idx.add(documents(n), {
    batchSize: 256,
    onProgress: (p) => {
      if (p.phase !== 'write' || (p.done - last < n / 20 && p.done < n)) return;
      last = p.done;
      rss.push({ docs: p.done, s: round((performance.now() - t0) / 1000, 1), rssMb: mb(process.memoryUsage().rss) });
      console.error(`${label}: ${p.done} documents, ${rss.at(-1).s} s, RSS ${rss.at(-1).rssMb} MB`);
    },
  });
  const s = (performance.now() - t0) / 1000;
  return { ...r, seconds: round(s, 1), chunksPerSecond: r.chunks > 0 ? round(r.chunks / s, 1) : null, rss };
}

/** Two warm-up questions, then each question once, one at a time. */
async function latency(run, qs) {
  for (const q of qs.slice(0, 2)) await run(q);
  const ms = [];
  for (const q of qs) {
    const t0 = performance.now();
    await run(q);
    ms.push(performance.now() - t0);
  }
  return { p50: round(pct(ms, 0.5)), p95: round(pct(ms, 0.95)), mean: round(ms.reduce((a, b) => a + b, 0) / ms.length), n: ms.length };
}

/** The exact BM25 top k of the whole table (every posting read; the table's k1 and b). */
async function exactBm25(client, table, terms, k, { k1, b }) {
  const r = await client.query(`
    WITH s AS (SELECT chunks::float8 n, total_terms::float8 / chunks avgdl FROM ${table}_stats),
    q AS (SELECT term, count(*)::float8 qtf FROM unnest($1::text[]) term GROUP BY term),
    w AS MATERIALIZED (SELECT t.id, q.qtf * ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) idf
                       FROM q JOIN ${table}_terms t USING (term), s WHERE t.df > 0)
    SELECT c.chunk_id FROM (
      SELECT p.chunk, sum(w.idf * p.tf * ($3::float8 + 1) / (p.tf + $3::float8 * (1 - $4::float8 + $4::float8 * p.len / s.avgdl))) score
      FROM w JOIN ${table}_postings p ON p.term = w.id, s GROUP BY p.chunk ORDER BY score DESC, p.chunk LIMIT $2) x
    JOIN ${table} c ON c.id = x.chunk ORDER BY x.score DESC, x.chunk`, [terms, k, k1, b]);
  return r.rows.map((x) => x.chunk_id);
}

/** Share of the exact BM25 top 10 / top 100 in the lexical list's top 10 / top 100 (the lexical list alone: no dense side, no feedback). */
async function lexicalAgreement(pool, idx, table, qs, embedder) {
  const options = (await idx.stats()).options;
  const lexOnly = { lexicalWeight: 1, denseWeight: 0, feedback: false, minScore: 0, ngramThreshold: 1, similarityThreshold: 1, maxChunksPerDoc: 0, topN: 100, truncate: false };
  const client = await pool.connect();
  let at10 = 0;
  let at100 = 0;
  try {
    for (const q of qs) {
      const got = (await query(idx, q, lexOnly)).results.map((x) => x.chunkId);
      const exact = await exactBm25(client, table, glue.planQuery(q, null, options, glueEmbedderOf(embedder)).terms, 100, options.bm25);
      const share = (k) => got.slice(0, k).filter((x) => exact.slice(0, k).includes(x)).length / Math.max(1, Math.min(k, exact.length));
      at10 += share(10);
      at100 += share(100);
    }
  } finally {
    client.release();
  }
  return { questions: qs.length, at10: round(at10 / qs.length, 4), at100: round(at100 / qs.length, 4) };
}

/** pgvector's HNSW against an exact scan: the share of the exact 10 / 100 nearest chunks that
 * the dense list of `depth` hits (ef_search as PgIndex sets it) finds in its top 10 / 100. */
async function denseRecall(pool, table, qs, embedder, depth) {
  const client = await pool.connect();
  let at10 = 0;
  let at100 = 0;
  try {
    for (const q of qs) {
      const v = `[${Array.from(embedder.embed([q])[0]).join(',')}]`;
      await client.query('BEGIN');
      await client.query(`SET LOCAL hnsw.ef_search = ${Math.min(1000, Math.max(40, depth))}; SET LOCAL hnsw.iterative_scan = strict_order`);
      const got = (await client.query(`SELECT id FROM ${table} ORDER BY embedding <=> $1::vector LIMIT $2`, [v, depth])).rows.map((r) => r.id);
      await client.query('SET LOCAL enable_indexscan = off');
      const exact = (await client.query(`SELECT id FROM ${table} ORDER BY embedding <=> $1::vector LIMIT 100`, [v])).rows.map((r) => r.id);
      await client.query('COMMIT');
      const share = (k) => got.slice(0, k).filter((x) => exact.slice(0, k).includes(x)).length / Math.max(1, Math.min(k, exact.length));
      at10 += share(10);
      at100 += share(100);
    }
  } finally {
    client.release();
  }
  return { questions: qs.length, depth, at10: round(at10 / qs.length, 4), at100: round(at100 / qs.length, 4) };
}

/** The in-memory Index over the same documents, vectors from `embedder`, in this process. */
async function inMemory(n, embedder, qs) {
  const before = process.memoryUsage().rss;
  const t0 = performance.now();
  const mem = Index.create({ embedder });
  let batch = [];
  for (const d of documents(n)) {
    batch.push(d);
    if (batch.length === 5000) { mem.add(batch); batch = []; }
  }
  if (batch.length > 0) mem.add(batch);
  const buildSeconds = round((performance.now() - t0) / 1000, 1);
  const rssGrowthMb = mb(process.memoryUsage().rss - before);
  const q = await latency((x) => Promise.resolve(mem.query(x)), qs);
  const out = { chunks: mem.chunks, buildSeconds, rssGrowthMb, query: q };
  mem.free();
  return out;
}

/** Where a PgIndex query's time goes: each SQL statement's round trip (timed around
 * node-postgres's Client#query), the question's embedding, and the rest (fusion, result
 * compression, the client's bookkeeping); means over `qs` in ms. */
async function breakdown(idx, qs, embedder, options) {
  const proto = pg.Client.prototype;
  const original = proto.query;
  const spent = { beginLexicalSql: 0, denseSql: 0, feedbackTextsSql: 0, expandedLexicalSql: 0, fetchCommitSql: 0, otherSql: 0 };
  proto.query = function timed(config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text ?? '';
    const kind = text.includes('ORDER BY embedding <=>') ? 'denseSql'
      : text.startsWith('BEGIN') ? 'beginLexicalSql'
        : text.includes('vector_send') || text === 'COMMIT' ? 'fetchCommitSql'
          : text.includes('header_path, content FROM') ? 'feedbackTextsSql'
            : text.includes('WITH s AS') ? 'expandedLexicalSql' : 'otherSql';
    const t0 = performance.now();
    const r = original.call(this, config, ...rest);
    if (r && typeof r.then === 'function') r.then(() => { spent[kind] += performance.now() - t0; }, () => {});
    return r;
  };
  let total = 0;
  let embed = 0;
  try {
    for (const q of qs) {
      const t0 = performance.now();
      embedder.embed([q]);
      embed += performance.now() - t0;
    }
    for (const k of Object.keys(spent)) spent[k] = 0;
    for (const q of qs) {
      const t0 = performance.now();
      await query(idx, q, options);
      total += performance.now() - t0;
    }
  } finally {
    proto.query = original;
  }
  const mean = (x) => round(x / qs.length);
  const sql = Object.values(spent).reduce((a, b) => a + b, 0);
  return {
    n: qs.length, total: mean(total), embedQuestion: mean(embed),
    ...Object.fromEntries(Object.entries(spent).map(([k, v]) => [k, mean(v)])),
    // The first round trip (BEGIN, settings, BM25) is sent before the question is embedded and
    // read after: its time includes the embedding's.
    client: mean(total - sql),
  };
}

/** --check: the breakdown and both agreements on a table an earlier run built. */
async function check(entry, { pool, table, embedder, label }) {
  const qs = questions(QUERIES);
  const idx = await PgIndex.open({ pool, table, embedder, workers: 0 });
  const capped = await PgIndex.open({ pool, table, embedder, workers: 0, postingsPerTerm: 1000 });
  try {
    const chunks = (await idx.stats()).chunks;
    if (chunks === 0) throw new Error(`${table} is empty: run without --check first`);
    for (const q of qs.slice(0, 2)) await query(idx, q); // warm-up
    const out = { chunks, breakdown: await breakdown(idx, qs, embedder) };
    console.error(`${label}: breakdown ${JSON.stringify(out.breakdown)}`);
    // `candidates: 1000` set by the query: both lists 1000 deep, as in memory (PgIndex's own
    // defaults since the dense list's went from 500 to 1000; earlier tables measured 500 here).
    out.breakdownCandidates1000 = await breakdown(idx, qs, embedder, { candidates: 1000 });
    console.error(`${label}: breakdown, candidates 1000 ${JSON.stringify(out.breakdownCandidates1000)}`);
    // Without pseudo-relevance feedback (its two round trips: the feedback chunks' texts and the
    // expanded query's BM25 list).
    out.breakdownNoFeedback = await breakdown(idx, qs, embedder, { feedback: false });
    console.error(`${label}: breakdown, feedback off ${JSON.stringify(out.breakdownNoFeedback)}`);
    out.denseRecall = await denseRecall(pool, table, qs.slice(0, EXACT), embedder, 500);
    out.denseRecall1000 = await denseRecall(pool, table, qs.slice(0, EXACT), embedder, 1000);
    console.error(`${label}: HNSW recall of the exact nearest ${JSON.stringify(out.denseRecall)} ${JSON.stringify(out.denseRecall1000)}`);
    out.lexicalAgreement = await lexicalAgreement(pool, idx, table, qs.slice(0, EXACT), embedder);
    out.lexicalAgreementCapped = await lexicalAgreement(pool, capped, table, qs.slice(0, EXACT), embedder);
    console.error(`${label}: exact BM25 found ${JSON.stringify(out.lexicalAgreement)}; with postingsPerTerm 1000 ${JSON.stringify(out.lexicalAgreementCapped)}`);
    entry.check = out;
    save();
  } finally {
    await idx.close();
    await capped.close();
  }
}

/** Everything measured on one table; `served()`: the in-memory Index's embedder (same vectors). */
async function measure(entry, { pool, table, embedder, served, n: wanted, label, workers }) {
  let n = wanted;
  const qs = questions(QUERIES);
  const idx = await PgIndex.open({ pool, table, embedder, workers });
  if (!NO_INGEST) {
    const r = await ingest(idx, n, label);
    if (r.chunks > 0) entry.ingest = r;
  }
  const stats = await idx.stats();
  if (NO_INGEST) n = stats.documents; // the documents d0… an interrupted ingest committed
  entry.table = { documents: stats.documents, chunks: stats.chunks, mb: mb(stats.bytes), kbPerChunk: round(stats.bytes / 1024 / Math.max(1, stats.chunks), 1) };
  console.error(`${label}: ${JSON.stringify(entry.table)}`);
  await pool.query(`ANALYZE ${table}; ANALYZE ${table}_postings; ANALYZE ${table}_terms`);
  entry.query = await latency((q) => query(idx, q), qs);
  console.error(`${label}: PgIndex query ${JSON.stringify(entry.query)}`);
  const capped = await PgIndex.open({ pool, table, embedder, workers: 0, postingsPerTerm: 1000 });
  entry.queryCapped = await latency((q) => query(capped, q), qs);
  console.error(`${label}: PgIndex query, postingsPerTerm 1000 ${JSON.stringify(entry.queryCapped)}`);
  entry.embedQuestion = await latency((q) => Promise.resolve(embedder.embed([q])), qs);
  entry.lexicalAgreementCapped = await lexicalAgreement(pool, capped, table, qs.slice(0, EXACT), embedder);
  console.error(`${label}: exact BM25 found with postingsPerTerm 1000 ${JSON.stringify(entry.lexicalAgreementCapped)}`);
  await capped.close();
  entry.rssAfterMb = mb(process.memoryUsage().rss);
  await idx.close();
  save();
  entry.memory = await inMemory(n, await served(), qs);
  console.error(`${label}: in-memory Index ${JSON.stringify(entry.memory)}`);
  save();
}

const pool = new pg.Pool({ connectionString: url, max: 4 });
await pool.query('CREATE SCHEMA IF NOT EXISTS bench_scale');
const minilm = await loadEmbedder();
const server = (await pool.query("SELECT version() v, current_setting('shared_buffers') sb, (SELECT extversion FROM pg_extension WHERE extname = 'vector') pv")).rows[0];
report[CHECK ? 'checkDate' : 'date'] = new Date().toISOString();
report.machine = { cpus: availableParallelism(), model: cpus()[0]?.model, node: process.version };
report.server = { version: server.v.split(' on ')[0], sharedBuffers: server.sb, pgvector: server.pv };
console.error(`${report.server.version}, pgvector ${server.pv}, shared_buffers ${server.sb}`);

try {
  const realTable = `bench_scale.real_${REAL}`;
  if (ONLY !== 'synthetic' && REAL > 0) {
    // The in-memory Index gets the table's vectors (the same MiniLM vectors; no second model run).
    const served = async () => {
      const rows = await pool.query(`SELECT content, embedding::text e FROM ${realTable}`);
      const cache = new Map(rows.rows.map((x) => [x.content, new Float32Array(JSON.parse(x.e))]));
      return externalEmbedder(minilm.identity(), (ts) => ts.map((t) => cache.get(t) ?? minilm.embed([t])[0]));
    };
    const t = { pool, table: realTable, embedder: minilm, served, n: REAL, label: `real ${REAL}` };
    await (CHECK ? check : measure)((report.real ??= {}), t);
  }
  if (ONLY !== 'real' && SYNTH > 0) {
    const base = (await pool.query(`SELECT embedding::text e FROM ${realTable} ORDER BY id LIMIT 20000`)).rows
      .map((x) => new Float32Array(JSON.parse(x.e)));
    if (base.length === 0) throw new Error(`the synthetic vectors draw on ${realTable}: run --only real first`);
    const asked = new Set(questions(QUERIES));
    const synthetic = (t) => {
      if (asked.has(t)) return minilm.embed([t])[0];
      const h = createHash('sha256').update(t).digest();
      const k = 2 + (h[0] % 3);
      const v = new Float32Array(384);
      for (let j = 0; j < k; j++) {
        const src = base[h.readUInt32LE(1 + 4 * j) % base.length];
        for (let d = 0; d < 384; d++) v[d] += src[d];
      }
      const norm = Math.hypot(...v);
      for (let d = 0; d < 384; d++) v[d] /= norm;
      return v;
    };
    const identity = { ...minilm.identity(), modelSha256: 'synthetic-means-of-minilm-vectors' };
    const embedder = externalEmbedder(identity, (ts) => ts.map(synthetic));
    const entry = (report.synthetic ??= {});
    entry.vectors = `normalised means of 2-4 of the first ${base.length} MiniLM vectors of ${realTable}; questions by MiniLM`;
    const t = { pool, table: `bench_scale.synthetic_${SYNTH}`, embedder, served: async () => embedder, n: SYNTH, label: `synthetic ${SYNTH}`, workers: 0 };
    if (APPEND > 0) {
      const idx = await PgIndex.open({ pool, table: t.table, embedder, workers: 0 });
      const before = (await idx.stats()).chunks;
      const t0 = performance.now();
      const r = await idx.add(documents(APPEND, PREFIX, 1000 + PREFIX.charCodeAt(0)), { batchSize: 256 });
      const seconds = (performance.now() - t0) / 1000;
      await idx.close();
      const run = { prefix: PREFIX, chunksBefore: before, added: r.added, chunks: r.chunks, seconds: round(seconds, 1), chunksPerSecond: round(r.chunks / seconds, 1), sharedBuffers: server.sb };
      console.error(`synthetic ${SYNTH}: appended ${JSON.stringify(run)}`);
      (entry.appends ??= []).push(run);
      save();
    } else {
      await (CHECK ? check : measure)(entry, t);
    }
  }
} finally {
  await pool.end();
}

console.log(JSON.stringify(report, null, 2));
