// Passing strings into wasm memory: wasm-bindgen's passStringToWasm0 (ASCII loop in JS first)
// against the one scripts/patch-glue.mjs puts in the package (encodeInto for long strings),
// side by side in one run on the same strings: every conversation of sharegpt_dev as JSON text
// (tests/fixtures' sample when ../shared is absent), and one 7 MB history built from them.
//
//   node bench/string_pass.mjs [--rounds N]
import { existsSync, readFileSync } from 'node:fs';
import { ORIGINAL, PATCHED } from '../scripts/patch-glue.mjs';

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 21;
const here = (p) => new URL(p, import.meta.url);
const devSet = here('../../shared/data/conversations/sharegpt_dev.jsonl');
const source = existsSync(devSet) ? devSet : here('../tests/fixtures/sharegpt_sample.jsonl');
const texts = readFileSync(source, 'utf8').split('\n').filter((l) => l.trim())
  .map((l) => JSON.stringify(JSON.parse(l).messages));
const big = [];
while (big.reduce((n, t) => n + t.length, 0) < 7e6) big.push(...texts);
const bigText = `[${big.map((t) => t.slice(1, -1)).join(',')}]`;

/** The glue function over one fixed memory (big enough: no growth inside the timed loop). */
function instantiate(fn) {
  return new Function('memory', `
    let WASM_VECTOR_LEN = 0;
    const cachedTextEncoder = new TextEncoder();
    const getUint8ArrayMemory0 = () => memory;
    const malloc = () => 0;
    const realloc = (ptr) => ptr;
    ${fn}
    return (arg) => { passStringToWasm0(arg, malloc, realloc); return WASM_VECTOR_LEN; };`)(new Uint8Array(32 << 20));
}
const engines = { 'wasm-bindgen': instantiate(ORIGINAL), patched: instantiate(PATCHED) };
const sets = { 'sharegpt_dev (150 texts)': texts, 'one 7 MB history': [bigText] };
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

console.log('| strings | bytes | wasm-bindgen | patched | ratio |');
console.log('|---|---|---|---|---|');
for (const [name, set] of Object.entries(sets)) {
  const bytes = set.reduce((n, t) => n + engines.patched(t), 0);
  const times = { 'wasm-bindgen': [], patched: [] };
  for (let r = 0; r < rounds + 3; r++) {
    for (const [e, f] of Object.entries(engines)) {
      const t0 = performance.now();
      for (const t of set) f(t);
      if (r >= 3) times[e].push(performance.now() - t0);
    }
  }
  const a = median(times['wasm-bindgen']);
  const b = median(times.patched);
  console.log(`| ${name} | ${bytes} | ${a.toFixed(2)} ms | ${b.toFixed(2)} ms | ${(a / b).toFixed(1)}× |`);
}
