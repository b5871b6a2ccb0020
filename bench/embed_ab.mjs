// Embedding speed of two builds of the package in one Node process, paired: for each case (32
// CISI texts of over 1500 characters truncated to 16/128/256 tokens, batch 1 and 32, as
// bench/embed-compare), the two builds run in turns A B B A per round, so a change of the machine's speed (other work on its cores)
// hits both alike; the table gives each build's median texts/s and the ratio B/A of each round
// (median and range). For a change to the engine measured on a busy machine.
//
//   node bench/embed_ab.mjs A_PKG B_PKG [--rounds 3] [--seconds 2]
//
// Every call checks its vectors (count, unit length); the two builds must give the same vectors
// bit for bit (the engine's parity contract: a change of speed may not change a bit).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const arg = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const named = new Set(['--rounds', '--seconds']);
const dirs = args.filter((a, i) => !a.startsWith('--') && !named.has(args[i - 1])).map((d) => resolve(d));
if (dirs.length !== 2) {
  console.error('usage: node bench/embed_ab.mjs A_PKG B_PKG [--rounds 3] [--seconds 2]');
  process.exit(2);
}
const rounds = Number(arg('--rounds', '3'));
const seconds = Number(arg('--seconds', '2'));

const here = (p) => new URL(p, import.meta.url).pathname;
const file = [here('../../shared/data/ir/cisi/corpus.jsonl'), here('../../../shared/data/ir/cisi/corpus.jsonl'), here('../tests/fixtures/retrieval/docs.jsonl')].find(existsSync);
const docs = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l).text);

const builds = [];
for (const dir of dirs) {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const api = await import(pathToFileURL(join(dir, manifest.exports['.'].node.import.default)).href);
  builds.push({ dir, api });
}
// 32 texts of over 1500 characters (~256 tokens or more), truncated by maxTokens.
const texts = docs.filter((t) => t.length > 1500).slice(0, 32);
if (texts.length < 32) throw new Error(`only ${texts.length} long texts in ${file}`);

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
function time(embedder, batch) {
  const run = () => {
    const out = [];
    for (let i = 0; i < texts.length; i += batch) out.push(...embedder.embed(texts.slice(i, i + batch)));
    return out;
  };
  const first = run();
  if (first.length !== texts.length || first.some((v) => Math.abs(v.reduce((s, x) => s + x * x, 0) - 1) > 1e-4)) throw new Error('bad vectors');
  let done = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) { run(); done += texts.length; }
  return { perS: done / ((performance.now() - t0) / 1000), vectors: first };
}

const cases = [];
for (const tokens of [16, 128, 256]) for (const batch of [1, 32]) cases.push({ tokens, batch });
const speeds = cases.map(() => [[], []]);
for (let r = 0; r < rounds; r++) {
  for (const [c, { tokens, batch }] of cases.entries()) {
    const embedders = await Promise.all(builds.map((b) => b.api.loadEmbedder({ maxTokens: tokens, batchSize: batch })));
    const vectors = [];
    for (const k of [0, 1, 1, 0]) {
      const { perS, vectors: v } = time(embedders[k], batch);
      speeds[c][k].push(perS);
      vectors[k] = v;
    }
    const same = vectors[0].every((v, i) => v.every((x, j) => Object.is(x, vectors[1][i][j])));
    if (!same) throw new Error(`${tokens} tokens, batch ${batch}: the two builds' vectors differ`);
    embedders.forEach((e) => e.free());
  }
}
console.log(`A = ${dirs[0]}\nB = ${dirs[1]}\n${rounds} round(s), A B B A per case, ${seconds} s per turn; texts/s (median of the turns)\n`);
console.log('| tokens | batch | A texts/s | B texts/s | B/A per round: median [min–max] |');
console.log('|---|---|---|---|---|');
for (const [c, { tokens, batch }] of cases.entries()) {
  const [a, b] = speeds[c];
  // Each round has two turns per build: the round's ratio is the ratio of their sums.
  const ratios = Array.from({ length: rounds }, (_, r) => (b[2 * r] + b[2 * r + 1]) / (a[2 * r] + a[2 * r + 1]));
  console.log(`| ${tokens} | ${batch} | ${median(a).toFixed(1)} | ${median(b).toFixed(1)} | ${median(ratios).toFixed(3)} [${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}] |`);
}
