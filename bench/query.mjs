// query() latency, native and wasm side by side in one run (docs/design.md, "Targets").
//
// The same synthetic corpus (chunk-sized documents of sentences recombined from the dev IR
// corpora, deterministic) is indexed by the native CLI and by the npm package in Node, both with
// the lexical embedder (the model's vectors have the same shape, so search costs the same); the
// same questions are then timed: the CLI reports each line's in-process time (`ms`), Node times
// `query()` around the call. Query embedding is included on both sides, and the vector side
// runs (`denseWeight: 1`; the lexical embedder's default is 0).
//
// The JS peer, Orama (npm `@orama/orama`, BM25 + vectors, `mode: 'hybrid'`), gets the same
// documents with the same vectors (condense's lexical embedder) and the same questions, each
// embedded inside the timed call like condense's; it returns the top 5 without compression.
// `npm ci` in bench/ installs it (scripts/setup does).
//
//   node bench/query.mjs [--sizes 1000,10000] [--queries 200]    (after scripts/build-pkg and
//                                                                  cargo build --release)
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { syntheticCorpus } from './synthetic.mjs';
import { Index, query, embed } from '../pkg/node.js';
import { create, insertMultiple, search } from '@orama/orama';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const sizes = arg('--sizes', '1000,10000').split(',').map(Number);
const nq = Number(arg('--queries', '200'));
const here = (p) => new URL(p, import.meta.url).pathname;
const cli = process.env.CARGO_TARGET_DIR ? `${process.env.CARGO_TARGET_DIR}/release/condense` : here('../target/release/condense');

// Chunk-sized documents recombined from the dev corpora's sentences (bench/synthetic.mjs).
const corpus = syntheticCorpus();

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.round((s.length - 1) * p)]; };
const out = here('out/');
mkdirSync(out, { recursive: true });
const rows = [];
for (const n of sizes) {
  const docs = corpus.docs(n);
  const questions = corpus.questions(nq);
  const docsFile = `${out}query-docs-${n}.jsonl`;
  writeFileSync(docsFile, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');

  // Native.
  let t = performance.now();
  execFileSync(cli, ['index', '--docs', docsFile, '--out', `${out}query-${n}.bin`, '--lexical']);
  const nativeBuild = performance.now() - t;
  const lines = execFileSync(cli, ['query', '--index', `${out}query-${n}.bin`, '--options', '{"denseWeight":1}'], {
    input: questions.map((q, i) => JSON.stringify({ id: i, text: q })).join('\n') + '\n', maxBuffer: 1 << 30,
  }).toString().trimEnd().split('\n').map((l) => JSON.parse(l));
  const nativeMs = lines.map((l) => l.ms);

  // wasm in Node.
  const index = Index.create();
  t = performance.now();
  index.add(docs);
  const wasmBuild = performance.now() - t;
  const bytes = index.serialize();
  t = performance.now();
  Index.deserialize(bytes).free();
  const deser = performance.now() - t;
  const wasmMs = [];
  for (const q of questions) {
    t = performance.now();
    query(index, q, { denseWeight: 1 });
    wasmMs.push(performance.now() - t);
  }
  // The peer: Orama, hybrid BM25 + vectors, same vectors.
  const vectors = embed(docs.map((d) => d.text));
  const db = create({ schema: { id: 'string', text: 'string', embedding: 'vector[384]' } });
  t = performance.now();
  await insertMultiple(db, docs.map((d, i) => ({ id: d.id, text: d.text, embedding: Array.from(vectors[i]) })), 500);
  const oramaBuild = performance.now() - t;
  const oramaMs = [];
  for (const q of questions) {
    t = performance.now();
    const [qv] = embed([q]);
    await search(db, { term: q, mode: 'hybrid', vector: { value: Array.from(qv), property: 'embedding' }, similarity: 0.1, limit: 5 });
    oramaMs.push(performance.now() - t);
  }
  rows.push({
    oramaBuildS: oramaBuild / 1000, oramaP50: pct(oramaMs, 0.5), oramaP95: pct(oramaMs, 0.95),
    chunks: index.chunks, nativeBuildS: nativeBuild / 1000, wasmBuildS: wasmBuild / 1000,
    bytesPerChunk: bytes.length / index.chunks, wasmDeserializeMs: deser,
    nativeP50: pct(nativeMs, 0.5), nativeP95: pct(nativeMs, 0.95), wasmP50: pct(wasmMs, 0.5), wasmP95: pct(wasmMs, 0.95),
  });
  index.free();
}
console.log(`| chunks | build native s | build wasm s | build Orama s | bytes/chunk | deserialize wasm ms | query p50/p95 native ms | wasm ms | Orama ms | wasm/native p50 |`);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.chunks} | ${r.nativeBuildS.toFixed(1)} | ${r.wasmBuildS.toFixed(1)} | ${r.oramaBuildS.toFixed(1)} | ${r.bytesPerChunk.toFixed(0)} | ${r.wasmDeserializeMs.toFixed(1)} | ${r.nativeP50.toFixed(2)} / ${r.nativeP95.toFixed(2)} | ${r.wasmP50.toFixed(2)} / ${r.wasmP95.toFixed(2)} | ${r.oramaP50.toFixed(2)} / ${r.oramaP95.toFixed(2)} | ${(r.wasmP50 / r.nativeP50).toFixed(2)}x |`);
}
// Install size: bytes on disk of the built package (pkg/, without and with the MiniLM engine and
// model files it ships) against Orama's installed package (bench/node_modules/@orama/orama;
// Orama has no runtime dependencies).
const du = (dir, skip = () => false) => {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (skip(e.name)) continue;
    total += e.isDirectory() ? du(p, skip) : statSync(p).size;
  }
  return total;
};
const install = {
  condense: du(here('../pkg')),
  condenseWithoutMiniLm: du(here('../pkg'), (name) => name === 'models' || name.startsWith('condense_embed')),
  orama: du(here('node_modules/@orama/orama')),
};
const mb = (b) => (b / 1e6).toFixed(2);
console.log(`\ninstall size: condense ${mb(install.condense)} MB (${mb(install.condenseWithoutMiniLm)} MB without the MiniLM engine and model), Orama ${mb(install.orama)} MB; condense without MiniLM / Orama ${(install.condenseWithoutMiniLm / install.orama).toFixed(2)}x`);
writeFileSync(`${out}query-latency.json`, JSON.stringify({ node: process.version, queries: nq, rows, install }, null, 1));
