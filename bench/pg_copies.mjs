// A large condense-ctx/pg table for query measurements, made in SQL from a smaller one: the
// synthetic table bench/pg_scale.mjs built (bench_scale.synthetic_N) copied K times, without a
// model run or a client-side ingest.
//
//   scripts/pg start && node bench/pg_copies.mjs [--from 100000] [--copies 10]
//   then: node bench/pg_scale.mjs --only synthetic --synthetic <from × copies> --check ...
//
// The new table (bench_scale.synthetic_<from × copies>) is created by PgIndex.open with the
// synthetic embedder's identity, so its schema is the library's; then, with its secondary
// indexes dropped, each copy k inserts every document and chunk under new ids (document ids
// `<id>~k`, chunk ids `<id>~k#n`; copy 0 keeps the ids), each chunk's vector perturbed by
// uniform noise of ±0.02 per dimension and renormalised (copy 0 keeps it), the postings with the
// new chunk ids, document frequencies and `_stats` × K; then the indexes are built again (the
// HNSW index last, in one CREATE INDEX) and the tables vacuumed and analysed.
//
// What this table is not: K copies of one corpus (each text K times, so BM25 ties come in
// groups of K and every posting list is K times as long as at the smaller size, as a corpus K
// times larger with the same vocabulary would have), with vectors in clusters of K near
// duplicates (pgvector's HNSW graph sees a different geometry than K times as many real texts).
// It measures a query's cost at that size, not retrieval quality, and not the ingest (which
// bench/pg_scale.mjs measures through PgIndex.add). Give the server `maintenance_work_mem` that
// holds the HNSW graph (~2 GB at a million chunks: docs/pg.md).
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';

const root = new URL('../', import.meta.url);
const path = (p) => new URL(p, root).pathname;
const pg = createRequire(path('tests/pg/package.json'))('pg');
const { loadEmbedder, externalEmbedder } = await import(new URL('pkg/node.js', root).href);
const { PgIndex } = await import(new URL('pkg/pg.js', root).href);

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
};
const FROM = Number(arg('from', 100000));
const COPIES = Number(arg('copies', 10));
if (!(Number.isInteger(FROM) && FROM > 0 && Number.isInteger(COPIES) && COPIES >= 2)) {
  throw new Error('--from N (a synthetic table bench/pg_scale.mjs built) and --copies K (2 or more)');
}
const url = process.env.CONDENSE_PG_URL ?? execFileSync(path('scripts/pg'), ['url'], { encoding: 'utf8' }).trim();
const pool = new pg.Pool({ connectionString: url, max: 2 });
const S = `bench_scale.synthetic_${FROM}`;
const name = `synthetic_${FROM * COPIES}`;
const T = `bench_scale.${name}`;

const q = async (sql) => {
  const t = performance.now();
  const r = await pool.query(sql);
  console.error(`${((performance.now() - t) / 1000).toFixed(1)} s  ${sql.replace(/\s+/g, ' ').slice(0, 100)}`);
  return r;
};

try {
  const source = (await pool.query(`SELECT to_regclass('${S}') IS NOT NULL AS ok`)).rows[0].ok;
  if (!source) throw new Error(`${S} does not exist: run bench/pg_scale.mjs --only synthetic --synthetic ${FROM} first`);
  const exists = (await pool.query(`SELECT to_regclass('${T}') IS NOT NULL AS ok`)).rows[0].ok;
  if (exists) throw new Error(`${T} exists already: drop it (and ${T}_docs, _terms, _postings, _stats, _meta) first`);
  // The synthetic table's embedder identity (bench/pg_scale.mjs): PgIndex.open checks it.
  const minilm = await loadEmbedder();
  const identity = { ...minilm.identity(), modelSha256: 'synthetic-means-of-minilm-vectors' };
  const embedder = externalEmbedder(identity, (ts) => ts.map(() => new Float32Array(384)));
  await (await PgIndex.open({ pool, table: T, embedder, workers: 0 })).close();
  minilm.free?.();

  for (const i of ['doc', 'hash', 'hnsw', 'postings_impact', 'postings_chunk']) await q(`DROP INDEX bench_scale."${name}_${i}"`);
  await q(`INSERT INTO ${T}_terms (id, term, df) OVERRIDING SYSTEM VALUE SELECT id, term, df * ${COPIES} FROM ${S}_terms`);
  for (let k = 0; k < COPIES; k++) {
    const sfx = k === 0 ? '' : `~${k}`;
    await q(`INSERT INTO ${T}_docs (doc_id, path, title, chunk_path, metadata, hash, chunks)
             SELECT doc_id || '${sfx}', path, title, chunk_path, metadata, hash, chunks FROM ${S}_docs ORDER BY id`);
    await q(`CREATE TEMP TABLE copy_map AS
             SELECT c.id AS old, nextval(pg_get_serial_sequence('${T}', 'id')) AS new, c.*, nd.id AS ndoc
             FROM ${S} c JOIN ${S}_docs d ON d.id = c.doc JOIN ${T}_docs nd ON nd.doc_id = d.doc_id || '${sfx}' ORDER BY c.id`);
    // The noise subquery names the row (m.old) so that it runs once per row.
    const vector = k === 0
      ? 'm.embedding'
      : 'l2_normalize(m.embedding + (SELECT array_agg((random() - 0.5) * 0.04)::vector FROM generate_series(1, 384) g WHERE m.old IS NOT NULL))';
    await q(`INSERT INTO ${T} (id, doc, chunk_id, ordinal, header_path, content, hash, terms, embedder, model_sha256, embedding) OVERRIDING SYSTEM VALUE
             SELECT m.new, m.ndoc, replace(m.chunk_id, '#', '${sfx}#'), m.ordinal, m.header_path, m.content, m.hash, m.terms,
               m.embedder, m.model_sha256, ${vector}
             FROM copy_map m ORDER BY m.new`);
    await q(`INSERT INTO ${T}_postings (term, chunk, tf, len, impact)
             SELECT p.term, m.new, p.tf, p.len, p.impact FROM ${S}_postings p JOIN copy_map m ON m.old = p.chunk`);
    await q('DROP TABLE copy_map');
  }
  await q(`UPDATE ${T}_stats SET docs = s.docs * ${COPIES}, chunks = s.chunks * ${COPIES}, total_terms = s.total_terms * ${COPIES} FROM ${S}_stats s`);
  // The library's indexes (pkg-template/pg.js, migration 1), built once over the whole table.
  await q(`CREATE INDEX "${name}_postings_impact" ON ${T}_postings (term, impact DESC, chunk) INCLUDE (tf, len)`);
  await q(`CREATE INDEX "${name}_postings_chunk" ON ${T}_postings (chunk)`);
  await q(`CREATE INDEX "${name}_doc" ON ${T} (doc)`);
  await q(`CREATE INDEX "${name}_hash" ON ${T} (hash)`);
  await q(`CREATE INDEX "${name}_hnsw" ON ${T} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)`);
  for (const t of [`${T}_postings`, T, `${T}_terms`, `${T}_docs`]) await q(`VACUUM (ANALYZE) ${t}`);
  const size = (await pool.query(`SELECT pg_total_relation_size('${T}') + pg_total_relation_size('${T}_postings')
    + pg_total_relation_size('${T}_docs') + pg_total_relation_size('${T}_terms') AS bytes, (SELECT chunks FROM ${T}_stats) AS chunks`)).rows[0];
  console.log(JSON.stringify({ table: T, chunks: Number(size.chunks), mb: Math.round(Number(size.bytes) / 2 ** 20) }));
} finally {
  await pool.end();
}
