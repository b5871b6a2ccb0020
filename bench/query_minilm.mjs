// Whole query() with MiniLM in wasm (Node): the wasm counterpart of the third table of
// bench/query.rs (`--features embed --vectors bench/out/minilm_real.f32`), built the same way so
// the two can be read side by side:
//
// - the chunks are the same synthetic documents (4-8 sentences of the dev IR corpora, drawn by
//   the same xorshift generator from the same sentence pool, in the same order);
// - their vectors are the normalised means of their sentences' real MiniLM vectors, read from
//   the file `cargo run --release --example embed_corpus -- bench/out/minilm_real.f32` writes
//   (10k chunks need no 10k model runs in wasm);
// - each question (the first 12 words of a pool sentence + "?", as bench/query.rs asks) is
//   embedded by the real MiniLM model in wasm (`loadEmbedder()`) inside the timed call.
//
// Both go through one `externalEmbedder` with MiniLM's identity: known sentences are summed from
// the file's rows, anything else goes to the loaded model. Also timed, per size: the model alone
// on the same questions (`embed([q])`), and the query with the question's vector cached (the
// whole query minus the model). p50/p95 in ms.
//
//   node bench/query_minilm.mjs [--sizes 1000,10000] [--queries 200]
//       (after scripts/build-pkg, with the model files, and the vectors file above)
import { readFileSync, existsSync, writeFileSync, mkdirSync } from 'node:fs';
import { Index, externalEmbedder, loadEmbedder } from '../pkg/node.js';
import { Rng, sentencePool } from './synthetic.mjs';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const sizes = arg('--sizes', '1000,10000').split(',').map(Number);
const nq = Number(arg('--queries', '200'));
const here = (p) => new URL(p, import.meta.url).pathname;
const vectorsFile = here('out/minilm_real.f32');
if (!existsSync(vectorsFile)) {
  console.error(`query_minilm: ${vectorsFile} is missing: cargo run --release --example embed_corpus -- bench/out/minilm_real.f32`);
  process.exit(2);
}

const pool = sentencePool();
const raw = readFileSync(vectorsFile);
const rows = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
const nrows = Math.min(pool.length, rows.length / 384);
const known = new Map();
// The last row of a repeated sentence, as bench/query.rs's map keeps it.
for (let i = 0; i < nrows; i++) known.set(pool[i], i);

// bench/query.rs's `chunk_docs`.
const chunkDocs = (n) => {
  const rng = new Rng(42);
  const docs = [];
  for (let i = 0; i < n; i++) {
    const k = 4 + rng.below(5);
    const text = [];
    for (let j = 0; j < k; j++) text.push(pool[rng.below(pool.length)]);
    docs.push({ id: `d${i}`, text: text.join(' ') });
  }
  return docs;
};
const questions = Array.from({ length: nq }, (_, i) => {
  const q = pool[(i * 7919) % pool.length].split(' ').slice(0, 12).join(' ');
  return q.replace(/\.+$/, '') + '?';
});

const minilm = await loadEmbedder();
let modelCalls = 0;
const cached = new Map();
const embedOne = (text) => {
  const v = new Float32Array(384);
  let found = 0;
  for (const piece of text.split('. ')) {
    const i = known.get(piece.replace(/\.+$/, '') + '.');
    if (i === undefined) continue;
    for (let d = 0; d < 384; d++) v[d] += rows[i * 384 + d];
    found++;
  }
  if (found === 0) {
    const c = cached.get(text);
    if (c) return c;
    modelCalls++;
    return minilm.embed([text])[0];
  }
  let n = 0;
  for (let d = 0; d < 384; d++) n += v[d] * v[d];
  n = Math.sqrt(n);
  for (let d = 0; d < 384; d++) v[d] /= n;
  return v;
};
const embedder = externalEmbedder(minilm.identity(), (texts) => texts.map(embedOne));

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.round((s.length - 1) * p)]; };
const time = (f) => { const t = performance.now(); f(); return performance.now() - t; };
const out = [];
console.log('| chunks | build s | model alone p50/p95 ms | query minus the model p50/p95 ms | whole query p50/p95 ms |');
console.log('|---|---|---|---|---|');
for (const n of sizes) {
  const docs = chunkDocs(n);
  const index = Index.create({ embedder });
  const build = time(() => index.add(docs)) / 1000;
  // Warm-up: the model's first calls (wasm tier-up) are not what a running agent sees.
  for (const q of questions.slice(0, 10)) index.query(q, {});
  const before = modelCalls;
  const whole = questions.map((q) => time(() => index.query(q, {})));
  if (modelCalls - before !== nq) throw new Error(`expected ${nq} model calls, got ${modelCalls - before}`);
  const model = questions.map((q) => time(() => minilm.embed([q])));
  for (const q of questions) cached.set(q, minilm.embed([q])[0]);
  const rest = questions.map((q) => time(() => index.query(q, {})));
  cached.clear();
  const row = {
    chunks: index.chunks, buildS: build,
    modelP50: pct(model, 0.5), modelP95: pct(model, 0.95),
    restP50: pct(rest, 0.5), restP95: pct(rest, 0.95),
    p50: pct(whole, 0.5), p95: pct(whole, 0.95),
  };
  out.push(row);
  const f = (x) => x.toFixed(2);
  console.log(`| ${row.chunks} | ${build.toFixed(1)} | ${f(row.modelP50)} / ${f(row.modelP95)} | ${f(row.restP50)} / ${f(row.restP95)} | **${f(row.p50)} / ${f(row.p95)}** |`);
  index.free();
}
mkdirSync(here('out'), { recursive: true });
writeFileSync(here('out/query-minilm-wasm.json'), JSON.stringify({ node: process.version, queries: nq, rows: out }, null, 1));
