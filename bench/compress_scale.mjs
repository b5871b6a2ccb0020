// compress at scale: time per message from 10k to 400k short messages, wasm (the npm package
// in Node) beside native (the release CLI, which reports the call's own time as `ms`), with
// default options and with `targetRatio: 0.25`; and prepareContext on 2.5k–10k chunks.
//
//   node --expose-gc bench/compress_scale.mjs [--sizes 10000,50000,100000,200000,400000]
//        [--chunks 2500,5000,10000] [--configs default,budget]
//   (after scripts/build-pkg and `cargo build --release --bin condense`; env CONDENSE names another
//   build of the CLI, e.g. one built with --no-default-features, which compresses the same)
//
// The conversation is generated (deterministic): alternating user/assistant turns of 40–400
// characters drawn from a pool of sentences with ids and numbers, every 8th turn a JSON tool
// output, so every stage runs (short content kept, prose summarised, JSON rendered, exact
// duplicates). Each size runs once per engine after a warm-up at the smallest size; the
// scaling law, not the exact figure, is what this measures.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { compressJson, prepareContext } from '../pkg/node.js';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const sizes = arg('--sizes', '10000,50000,100000,200000,400000').split(',').map(Number);
const chunkSizes = arg('--chunks', '2500,5000,10000').split(',').map(Number);
const configs = arg('--configs', 'default,budget').split(',');
const here = (p) => new URL(p, import.meta.url).pathname;
const cli = process.env.CONDENSE ?? here('../target/release/condense');

let state = 12345;
const rand = () => {
  state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0;
  return state / 4294967296;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const SENTENCES = [
  'The deploy of service_a failed after 30 seconds.',
  'We retried it twice and it worked on the third attempt.',
  'See src/worker.rs:88 for the retry loop.',
  'parse_config returned an empty map for the billing tenant.',
  'The cache hit rate dropped to 41% after the migration.',
  'Could you check the logs under /var/log/app.log?',
  'Sure, happy to help with that.',
  'The p95 latency went from 120 ms to 480 ms on Tuesday.',
  'Order ORD-77812 was refunded to the original card.',
  'I think the root cause is the connection pool size of 8.',
];
function message(i) {
  if (i % 8 === 7) {
    const rows = Array.from({ length: 3 + Math.floor(rand() * 5) }, (_, k) => ({ id: 1000 + i + k, status: pick(['ok', 'failed', 'retry']), ms: Math.floor(rand() * 900) }));
    return { role: 'user', content: JSON.stringify({ results: rows, total: rows.length }) };
  }
  const n = 1 + Math.floor(rand() * 6);
  const text = Array.from({ length: n }, () => pick(SENTENCES)).join(' ');
  return { role: i % 2 === 0 ? 'user' : 'assistant', content: text };
}
const conversation = (n) => Array.from({ length: n }, (_, i) => message(i));
const optionsOf = (config) => (config === 'budget' ? { targetRatio: 0.25 } : {});

/** Runs one JSONL line through the release CLI (stdin from a file); its output line. */
function runCli(command, line) {
  mkdirSync(here('out'), { recursive: true });
  const file = here(`out/${command}-scale.jsonl`);
  writeFileSync(file, `${JSON.stringify(line)}\n`);
  const fd = openSync(file, 'r');
  try {
    return JSON.parse(execFileSync(cli, [command], { stdio: [fd, 'pipe', 'inherit'], maxBuffer: 1 << 30, encoding: 'utf8' }));
  } finally {
    closeSync(fd);
  }
}

const rows = [];
// Warm-up: the smallest size, twice per config. V8 compiles the module's functions on their
// first call and tiers the hot ones up in the background over the next calls: the first large
// call of a process costs up to ~0.9 s more (10k messages: ~1 s, then ~0.15 s), which is not
// the per-message cost this measures.
for (const config of configs) {
  for (let k = 0; k < 2; k++) compressJson(JSON.stringify(conversation(sizes[0])), optionsOf(config));
}
for (const config of configs) {
  for (const n of sizes) {
    const messages = conversation(n);
    const json = JSON.stringify(messages);
    globalThis.gc?.();
    const t0 = performance.now();
    const out = compressJson(json, optionsOf(config));
    const wasm = performance.now() - t0;
    const nat = runCli('compress', { id: 0, messages, options: optionsOf(config) }).ms;
    rows.push({ config, n, wasm, nat, ratio: out.stats.ratio });
    console.error(`${config} ${n}: wasm ${wasm.toFixed(0)} ms, native ${nat.toFixed(0)} ms`);
  }
}
console.log('| config | messages | wasm ms | wasm µs/msg | native ms | native µs/msg | wasm/native | token ratio |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.config} | ${r.n} | ${r.wasm.toFixed(0)} | ${(1000 * r.wasm / r.n).toFixed(2)} | ${r.nat.toFixed(0)} | ${(1000 * r.nat / r.n).toFixed(2)} | ${(r.wasm / r.nat).toFixed(2)} | ${r.ratio.toFixed(2)} |`);
}

// prepareContext: chunks of ~300 characters, a query, a budget of a fifth of the tokens.
console.log('\n| chunks | prepareContext wasm ms | native ms |');
console.log('|---|---|---|');
for (const n of chunkSizes) {
  const chunks = Array.from({ length: n }, (_, i) => ({ id: `c${i}`, text: Array.from({ length: 6 }, () => pick(SENTENCES)).join(' ') }));
  const options = { query: 'why did the deploy fail after the retry', tokenBudget: Math.floor(n * 70 / 5) };
  globalThis.gc?.();
  const t0 = performance.now();
  const out = prepareContext(chunks, options);
  const wasm = performance.now() - t0;
  const nat = runCli('prepare', { id: 0, chunks, options }).ms;
  console.log(`| ${n} | ${wasm.toFixed(0)} | ${nat.toFixed(0)} |`);
  if (!out.stats.fits) throw new Error('prepareContext: does not fit');
}
