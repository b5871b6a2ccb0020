// Shared by the tests of condense-ctx/pg and their child processes: the server's URL, a fresh
// schema per test file, the package from pkg/, the fixture documents.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const root = new URL('../../', import.meta.url);
export const condense = await import(new URL('pkg/node.js', root).href);
export const pgApi = await import(new URL('pkg/pg.js', root).href);

/** The server's URL: $CONDENSE_PG_URL (scripts/test sets it), else what scripts/pg says. */
export function serverUrl() {
  if (process.env.CONDENSE_PG_URL) return process.env.CONDENSE_PG_URL;
  try {
    return execFileSync(new URL('scripts/pg', root).pathname, ['url'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('no PostgreSQL: run scripts/pg start (or set CONDENSE_PG_URL)');
  }
}

export function newPool(max = 4) {
  return new pg.Pool({ connectionString: serverUrl(), max });
}

/** A schema of its own for one test file; `drop()` removes it and everything in it. */
export async function freshSchema(pool, prefix = 't') {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await pool.query(`CREATE SCHEMA ${name}`);
  return { name, drop: () => pool.query(`DROP SCHEMA ${name} CASCADE`) };
}

/** The retrieval fixture: 160 documents of the dev IR sets and 20 questions. */
export function fixture() {
  const lines = (f) => readFileSync(new URL(`tests/fixtures/retrieval/${f}`, root), 'utf8').split('\n').filter((l) => l.trim());
  const docs = lines('docs.jsonl').map((l) => JSON.parse(l)).map((d) => ({ id: d._id, title: d.title || undefined, text: d.text }));
  const questions = lines('queries.jsonl').map((l) => JSON.parse(l).text);
  return { docs, questions };
}

/** What the rows say, recounted from scratch: every statistic the index keeps must agree. */
export async function recount(pool, table) {
  const [schema, name] = table.split('.');
  const t = (s) => `"${schema}"."${name}${s}"`;
  const q = async (sql) => (await pool.query(sql)).rows;
  const [stats] = await q(`SELECT docs::int, chunks::int, total_terms::int FROM ${t('_stats')}`);
  const [counts] = await q(`SELECT (SELECT count(*)::int FROM ${t('_docs')}) AS docs, (SELECT count(*)::int FROM ${t('')}) AS chunks,
    (SELECT coalesce(sum(terms), 0)::int FROM ${t('')}) AS total_terms,
    (SELECT count(*)::int FROM ${t('_postings')} p LEFT JOIN ${t('')} c ON c.id = p.chunk WHERE c.id IS NULL) AS orphans,
    (SELECT count(*)::int FROM (SELECT chunk_id FROM ${t('')} GROUP BY chunk_id HAVING count(*) > 1) x) AS duplicates,
    (SELECT count(*)::int FROM ${t('_docs')} d WHERE d.chunks <> (SELECT count(*) FROM ${t('')} c WHERE c.doc = d.id)) AS wrong_chunk_counts`);
  const dfWrong = await q(`SELECT t.term, t.df, coalesce(p.n, 0) AS actual FROM ${t('_terms')} t
    LEFT JOIN (SELECT term, count(*)::int AS n FROM ${t('_postings')} GROUP BY term) p ON p.term = t.id
    WHERE t.df <> coalesce(p.n, 0) LIMIT 5`);
  return { stats, counts, dfWrong };
}
