// A second (third) Node process for the tests of condense-ctx/pg (pg.test.mjs):
//
//   node child.mjs ingest TABLE FROM TO BATCH [HANG_AFTER]
//       adds fixture documents FROM..TO in batches of BATCH (lexical embedder); with HANG_AFTER,
//       prints `mid-batch N` once the N-th batch's postings are inserted (its transaction
//       still open) and waits there to be killed
//   node child.mjs query TABLE MS
//       queries the fixture's questions for MS milliseconds; prints one JSON line of counts
//   node child.mjs open TABLE
//       opens (creating or migrating) the table
//
// The last stdout line is JSON: what the call returned.
import { condense, pgApi, newPool, fixture } from './helpers.mjs';

const [mode, table, ...args] = process.argv.slice(2);
const embedder = condense.lexicalEmbedder();
const pool = newPool(4);

/** A pool whose clients report the N-th postings insert and then hold the transaction open. */
function hangingPool(after) {
  let inserts = 0;
  return {
    query: (...a) => pool.query(...a),
    end: () => pool.end(),
    async connect() {
      const client = await pool.connect();
      return {
        release: (x) => client.release(x),
        async query(q, values) {
          const out = await client.query(q, values);
          const text = typeof q === 'string' ? q : q.text;
          if (/^\s*INSERT INTO \S+_postings"/.test(text) && ++inserts === after) {
            process.stdout.write(`mid-batch ${after}\n`);
            await new Promise(() => {}); // killed here, inside the transaction
          }
          return out;
        },
      };
    },
  };
}

try {
  if (mode === 'ingest') {
    const [from, to, batch, hang] = args.map(Number);
    const idx = await pgApi.PgIndex.open({ pool: hang ? hangingPool(hang) : pool, table, embedder });
    const r = await idx.add(fixture().docs.slice(from, to), { batchSize: batch });
    console.log(JSON.stringify(r));
  } else if (mode === 'query') {
    const idx = await pgApi.PgIndex.open({ pool, table, embedder });
    const { questions } = fixture();
    const until = Date.now() + Number(args[0]);
    let queries = 0;
    let results = 0;
    let maxResults = 0;
    while (Date.now() < until) {
      const r = await pgApi.query(idx, questions[queries % questions.length], { minScore: 0, topN: 10 });
      if (r.stats.returned !== r.results.length) throw new Error('stats disagree with the results');
      if (new Set(r.results.map((x) => x.chunkId)).size !== r.results.length) throw new Error('a chunk twice in one result');
      queries++;
      results += r.results.length;
      maxResults = Math.max(maxResults, r.results.length);
    }
    console.log(JSON.stringify({ queries, results, maxResults }));
  } else if (mode === 'open') {
    const idx = await pgApi.PgIndex.open({ pool, table, embedder });
    console.log(JSON.stringify(await idx.stats()));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} finally {
  await pool.end();
}
