// A/B of two builds of the npm package in one Node process: one config of the compress bench
// (`default` or `budget`), compressJson (or compress on objects) over its conversations, the two
// builds taking turns round by round, so a busy machine slows both alike. Outputs are checked
// equal first (a speed change must not change a byte). Prints the median round of each and
// their ratio.
//
//   node bench/compress_ab.mjs PKG_A PKG_B [json|obj] [ROUNDS] [default|budget]
//
// PKG_A / PKG_B are copies of pkg/ (scripts/build-pkg) made before and after a change, e.g.
// `cp -r pkg /tmp/pkgA`. The conversations come from bench/out/compress-tasks.json, written
// by `node bench/compress_speed.mjs [--set sharegpt|tools]`.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dirA, dirB, mode = 'json', roundsArg = '30', config = 'default'] = process.argv.slice(2);
if (!dirA || !dirB || !['json', 'obj'].includes(mode) || !['default', 'budget'].includes(config)) {
  console.error('usage: node bench/compress_ab.mjs PKG_A PKG_B [json|obj] [ROUNDS] [default|budget]');
  process.exit(2);
}
const load = (dir) => import(pathToFileURL(resolve(dir, 'node.js')).href);
const [A, B] = [await load(dirA), await load(dirB)];
const file = new URL('out/compress-tasks.json', import.meta.url);
const tasks = JSON.parse(readFileSync(file, 'utf8')).filter((t) => t.config === config);
const jsons = tasks.map((t) => JSON.stringify(t.messages));

for (let i = 0; i < tasks.length; i++) {
  const a = A.compressJson(jsons[i], tasks[i].options).json;
  const b = B.compressJson(jsons[i], tasks[i].options).json;
  if (a !== b) {
    console.error(`outputs differ on conversation ${i}`);
    process.exit(1);
  }
}
const round = (m) => {
  const t0 = performance.now();
  for (let i = 0; i < tasks.length; i++) {
    if (mode === 'json') m.compressJson(jsons[i], tasks[i].options);
    else m.compress(tasks[i].messages, tasks[i].options);
  }
  return performance.now() - t0;
};
for (let r = 0; r < 5; r++) { round(A); round(B); } // warm-up
const ta = [];
const tb = [];
for (let r = 0; r < Number(roundsArg); r++) { ta.push(round(A)); tb.push(round(B)); }
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const [ma, mb] = [median(ta), median(tb)];
console.log(`${config}, ${mode}: A ${ma.toFixed(2)} ms, B ${mb.toFixed(2)} ms per round of ${tasks.length}; B/A ${(mb / ma).toFixed(3)}`);
