// The MiniLM engine's footprint in Node (issue 30), each figure from a fresh `node` process:
//
//   load   the package's Node entry: RSS before loadEmbedder() (after a GC), its time, RSS after
//          it (after a GC) and again 1 s later (V8's background tier-up done), the engine's
//          wasm memory (memory.buffer.byteLength), then 300
//          documents of the dev IR corpus indexed (RSS and wasm memory again);
//   trace  the engine module alone (its glue and .wasm): Model.traceLoad, the time and the wasm
//          memory as each stage of the load ends (src/embed/engine/model.rs's stages; memory
//          never shrinks, so each row is the peak so far). With --trace-loads N the same process
//          loads the model N times, one time column each: the first load runs the engine's code
//          as V8 first compiled it (Liftoff) while it compiles the hot functions again
//          (TurboFan) on other threads; the later loads run the optimised code.
//
//   node bench/embed_footprint.mjs [--runs 3] [--base DIR] [--trace-loads N] [--node-flag F …] [PKG]
//   (PKG default pkg/; each --node-flag is passed to every child `node`, e.g. --liftoff-only)
//
// With --base DIR (another build of the package, e.g. main's), each run measures both, in
// alternating order, and the table gives the ratio of the two in each run (the machine's load
// from other work hits both alike). Memory does not depend on the load; times do.
// Output: a Markdown table on stdout and bench/out/embed-footprint-node.json.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const MiB = 1024 * 1024;
const args = process.argv.slice(2);

if (args[0] === '--child') {
  const [, mode, dir, loads] = args;
  const pkg = resolve(dir);
  console.log(JSON.stringify(mode === 'trace' ? await trace(pkg, Number(loads)) : await load(pkg)));
  process.exit(0);
}

/** The engine's exports (the glue returns the instance it already has). */
async function engineExports(pkg) {
  const glue = await import(pathToFileURL(join(pkg, 'condense_embed.js')).href);
  return { glue, exports: glue.initSync({ module: readFileSync(join(pkg, 'condense_embed_bg.wasm')) }) };
}

async function load(pkg) {
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  const api = await import(pathToFileURL(join(pkg, manifest.exports['.'].node.import.default)).href);
  globalThis.gc();
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const embedder = await api.loadEmbedder();
  const loadMs = performance.now() - t0;
  globalThis.gc();
  const rssLoaded = process.memoryUsage().rss;
  // V8 keeps optimising the engine's hot functions on background threads for a while after the
  // load (memory that goes back once they finish): RSS again once that settles.
  await new Promise((r) => setTimeout(r, 1000));
  globalThis.gc();
  const rssSettled = process.memoryUsage().rss;
  const { exports } = await engineExports(pkg);
  const wasmLoaded = exports.memory.buffer.byteLength;
  const docs = corpus(300);
  const t1 = performance.now();
  const index = api.Index.create({ embedder });
  index.add(docs);
  const indexMs = performance.now() - t1;
  globalThis.gc();
  return {
    loadMs,
    rssBefore,
    rssLoaded,
    rssSettled,
    wasmLoaded,
    rssIndexed: process.memoryUsage().rss,
    wasmIndexed: exports.memory.buffer.byteLength,
    indexMs,
    chunks: index.chunks,
    integerMatmuls: embedder.loadInfo().integerMatmuls,
  };
}

async function trace(pkg, loads) {
  const { glue, exports } = await engineExports(pkg);
  const before = exports.memory.buffer.byteLength;
  const onnx = readFileSync(join(pkg, 'models', 'model.onnx'));
  const tokenizer = readFileSync(join(pkg, 'models', 'tokenizer.json'));
  const sha = createHash('sha256').update(onnx).digest('hex');
  const rows = JSON.parse(glue.Model.traceLoad(onnx, tokenizer, sha));
  // Later loads in the same process: each stage's time (ms since the load's start).
  const again = [];
  for (let i = 1; i < loads; i++) again.push(JSON.parse(glue.Model.traceLoad(onnx, tokenizer, sha)).map((r) => r.ms));
  return { before, rows, again };
}

/** The first `n` documents of the dev IR corpus (CISI), or the committed fixture without it. */
function corpus(n) {
  const here = (p) => new URL(p, import.meta.url).pathname;
  const file = [here('../../shared/data/ir/cisi/corpus.jsonl'), here('../../../shared/data/ir/cisi/corpus.jsonl'), here('../tests/fixtures/retrieval/docs.jsonl')].find(existsSync);
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).slice(0, n)
    .map((l, i) => { const d = JSON.parse(l); return { id: String(d.id ?? d._id ?? i), text: d.text }; });
}

// ------------------------------------------------------------------ parent
const arg = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const runs = Number(arg('--runs', '3'));
const base = arg('--base', null);
const traceLoads = Math.max(1, Number(arg('--trace-loads', '1')));
const nodeFlags = args.filter((a, i) => args[i - 1] === '--node-flag');
const named = new Set(['--runs', '--base', '--trace-loads', '--node-flag']);
const pkgArg = args.find((a, i) => !a.startsWith('--') && !named.has(args[i - 1]));
const pkg = resolve(pkgArg ?? new URL('../pkg/', import.meta.url).pathname);
const builds = base ? { base: resolve(base), this: pkg } : { this: pkg };
for (const dir of Object.values(builds)) {
  if (!existsSync(join(dir, 'models', 'model.onnx'))) throw new Error(`${dir}: no package with models/ (scripts/build-pkg)`);
}
const child = (mode, dir) => JSON.parse(execFileSync(process.execPath, ['--expose-gc', ...nodeFlags, new URL(import.meta.url).pathname, '--child', mode, dir, String(traceLoads)], { maxBuffer: 1 << 26 }).toString());

const results = Object.fromEntries(Object.keys(builds).map((k) => [k, { load: [], trace: null }]));
for (let r = 0; r < runs; r++) {
  const order = r % 2 ? Object.keys(builds).reverse() : Object.keys(builds);
  for (const k of order) results[k].load.push(child('load', builds[k]));
}
for (const k of Object.keys(builds)) results[k].trace = child('trace', builds[k]);

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const mib = (b) => (b / MiB).toFixed(1);
const lines = [];
const say = (s = '') => { lines.push(s); console.log(s); };
say(`Node ${process.version}${nodeFlags.length ? ` (${nodeFlags.join(' ')})` : ''}, ${runs} fresh process(es) per build${base ? ', alternating' : ''}`);
say();
say('| build | loadEmbedder() ms | RSS before MiB | RSS after load MiB | RSS increase MiB | 1 s later: RSS increase MiB | engine wasm memory MiB | + 300 docs indexed: RSS MiB | wasm MiB | index ms |');
say('|---|---|---|---|---|---|---|---|---|---|');
for (const [k, { load: ls }] of Object.entries(results)) {
  const m = (f) => median(ls.map(f));
  say(`| ${k} | ${m((l) => l.loadMs).toFixed(0)} | ${mib(m((l) => l.rssBefore))} | ${mib(m((l) => l.rssLoaded))} | ${mib(m((l) => l.rssLoaded - l.rssBefore))} | ${mib(m((l) => l.rssSettled - l.rssBefore))} | ${mib(m((l) => l.wasmLoaded))} | ${mib(m((l) => l.rssIndexed))} | ${mib(m((l) => l.wasmIndexed))} | ${m((l) => l.indexMs).toFixed(0)} |`);
}
if (base) {
  const ratios = results.this.load.map((l, i) => l.loadMs / results.base.load[i].loadMs);
  say();
  say(`load time this/base, per run: ${ratios.map((x) => x.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)})`);
}
for (const [k, { trace: t }] of Object.entries(results)) {
  say();
  say(`Model.traceLoad (${k}): wasm memory ${mib(t.before)} MiB before the call`);
  // Each stage's own time (since the stage before), for every load of the process.
  const own = (ms, i) => (i === 0 ? ms[0] : ms[i] - ms[i - 1]).toFixed(0);
  const loads = [t.rows.map((r) => r.ms), ...(t.again ?? [])];
  const heads = loads.map((_, i) => (i === 0 ? 'ms (first load)' : `ms (load ${i + 1})`));
  say(`| stage | ${heads.join(' | ')} | wasm memory MiB (first load) |`);
  say(`|---|${heads.map(() => '---|').join('')}---|`);
  t.rows.forEach((row, i) => say(`| ${row.stage} | ${loads.map((ms) => (ms[i] === undefined ? '' : own(ms, i))).join(' | ')} | ${mib(row.memoryBytes)} |`));
}
const out = new URL('out/', import.meta.url).pathname;
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'embed-footprint-node.json'), JSON.stringify({ node: process.version, nodeFlags, runs, builds, results }, null, 1));
writeFileSync(join(out, 'embed-footprint-node.md'), lines.join('\n') + '\n');
