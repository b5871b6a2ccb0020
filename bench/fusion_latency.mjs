// query() latency of the fusions side by side in one run (docs/benchmarks.md, "query"): the
// convex fusion with pseudo-relevance feedback (the default), the convex fusion without it
// (`feedback: false`) and Reciprocal Rank Fusion (`fusion: "rrf"`), natively (the CLI's
// in-process `ms` per question) and in wasm (Node, timed around `query()`).
//
// The corpus and questions are bench/query.mjs's (chunk-sized documents recombined from the
// dev IR corpora, lexical embedder with the vector side forced on, so the fusion sees two
// 1,000-deep lists; a MiniLM query adds the model's time, the same for every variant). Rounds
// interleave the methods (and alternate which goes first) so that a change in machine load hits
// both alike.
//
//   node bench/fusion_latency.mjs [--sizes 10000] [--queries 200] [--rounds 3]
//       (after cargo build --release; the wasm column needs scripts/build-pkg)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { syntheticCorpus } from './synthetic.mjs';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const sizes = arg('--sizes', '10000').split(',').map(Number);
const nq = Number(arg('--queries', '200'));
const rounds = Number(arg('--rounds', '3'));
const here = (p) => new URL(p, import.meta.url).pathname;
const cli = process.env.CARGO_TARGET_DIR ? `${process.env.CARGO_TARGET_DIR}/release/condense` : here('../target/release/condense');
const pkg = here('../pkg/node.js');
const wasm = existsSync(pkg) ? await import(pkg) : null;
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.round((s.length - 1) * p)]; };
const out = here('out/');
mkdirSync(out, { recursive: true });
const corpus = syntheticCorpus();
const variants = {
  'convex+feedback': { denseWeight: 1 },
  convex: { denseWeight: 1, feedback: false },
  rrf: { denseWeight: 1, fusion: 'rrf' },
};
const methods = Object.keys(variants);
const rows = [];
for (const n of sizes) {
  const docs = corpus.docs(n);
  const questions = corpus.questions(nq);
  const docsFile = `${out}fusion-docs-${n}.jsonl`;
  writeFileSync(docsFile, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
  execFileSync(cli, ['index', '--docs', docsFile, '--out', `${out}fusion-${n}.bin`, '--lexical']);
  const input = questions.map((q, i) => JSON.stringify({ id: i, text: q })).join('\n') + '\n';
  const index = wasm ? wasm.Index.create() : null;
  if (index) index.add(docs);
  const times = Object.fromEntries(methods.map((m) => [m, { native: [], wasm: [] }]));
  for (let r = 0; r < rounds; r++) {
    // Which method goes first alternates, so that a garbage collection or a burst of load
    // after the first pass does not always land on the same one.
    for (const m of r % 2 ? [...methods].reverse() : methods) {
      const options = variants[m];
      const lines = execFileSync(cli, ['query', '--index', `${out}fusion-${n}.bin`, '--options', JSON.stringify(options)], {
        input, maxBuffer: 1 << 30,
      }).toString().trimEnd().split('\n').map((l) => JSON.parse(l));
      times[m].native.push(...lines.map((l) => l.ms));
      if (index) {
        for (const q of questions) {
          const t = performance.now();
          wasm.query(index, q, options);
          times[m].wasm.push(performance.now() - t);
        }
      }
    }
  }
  if (index) index.free();
  for (const m of methods) {
    const t = times[m];
    rows.push({
      chunks: n, fusion: m, nativeP50: pct(t.native, 0.5), nativeP95: pct(t.native, 0.95),
      wasmP50: t.wasm.length ? pct(t.wasm, 0.5) : null, wasmP95: t.wasm.length ? pct(t.wasm, 0.95) : null,
    });
  }
}
const f = (x) => (x === null ? '–' : x.toFixed(2));
console.log('| chunks | fusion | native p50 / p95 ms | wasm p50 / p95 ms |');
console.log('|---|---|---|---|');
for (const r of rows) console.log(`| ${r.chunks} | ${r.fusion} | ${f(r.nativeP50)} / ${f(r.nativeP95)} | ${f(r.wasmP50)} / ${f(r.wasmP95)} |`);
writeFileSync(`${out}fusion-latency.json`, JSON.stringify({ node: process.version, queries: nq, rounds, rows }, null, 1));
