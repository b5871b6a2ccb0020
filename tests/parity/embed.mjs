// Parity of the MiniLM embedder (issue 4, docs/design.md, "Embedding parity"): tract compiled to
// wasm (the npm package in Node, `loadEmbedder()` with the model files shipped in the package)
// against the native build (`condense embed`) and against the onnxruntime reference vectors, on
// every text of tests/fixtures/embed/reference.json.
//
//   wasm vs onnxruntime   cosine >= 0.9999 for every text
//   wasm vs native        cosine >= 0.99999 for every text, and identical top-10 neighbour order
//                         (neighbours among the fixture's texts, by dot product); bit-identical
//                         vectors where the native build runs the integer weight matmuls too
//                         (x86-64 with AVX2, read from /proc/cpuinfo)
//
// Both builds then compute every operator's bits the same way (src/embed/engine/quant.rs, same.rs);
// elsewhere (f32 natively, e.g. on aarch64) the kernels differ and vectors agree to rounding.
//
//   node tests/parity/embed.mjs <pkg dir> <condense binary> <reference.json>
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkgDir, binary, referenceFile] = process.argv.slice(2);
if (!pkgDir || !binary || !referenceFile) {
  console.error('usage: node tests/parity/embed.mjs <pkg dir> <condense binary> <reference.json>');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const condense = await import(pathToFileURL(resolve(pkgDir, manifest.exports['.'].node.import.default)).href);
const reference = JSON.parse(readFileSync(referenceFile, 'utf8'));
const cases = reference.cases;

const dot = (a, b) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };
const cosine = (a, b) => dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b) || 1);
const neighbours = (vectors, i) => vectors
  .map((v, j) => [j, dot(vectors[i], v)])
  .filter(([j]) => j !== i)
  .sort((x, y) => y[1] - x[1] || x[0] - y[0])
  .slice(0, 10)
  .map(([j]) => j);

const start = performance.now();
const embedder = await condense.loadEmbedder();
const loadMs = performance.now() - start;
const identity = embedder.identity();
if (identity.kind !== 'minilm' || identity.modelSha256 !== reference.model_sha256) {
  console.error(`parity: the package's embedder is ${JSON.stringify(identity)}, not the reference model`);
  process.exit(1);
}
const t0 = performance.now();
const wasm = embedder.embed(cases.map((c) => c.text));
const embedMs = performance.now() - t0;

const input = cases.map((c, i) => JSON.stringify({ id: i, text: c.text })).join('\n') + '\n';
const native = execFileSync(binary, ['embed'], { input, maxBuffer: 1 << 28 })
  .toString().trimEnd().split('\n').map((l) => JSON.parse(l).vector);

let failures = 0;
let minRef = 1;
let minNative = 1;
cases.forEach((c, i) => {
  const r = cosine(wasm[i], c.vector);
  const n = cosine(wasm[i], native[i]);
  minRef = Math.min(minRef, r);
  minNative = Math.min(minNative, n);
  if (!(r >= 0.9999)) { failures++; console.error(`parity: ${c.name}: wasm vs onnxruntime cosine ${r}`); }
  if (!(n >= 0.99999)) { failures++; console.error(`parity: ${c.name}: wasm vs native cosine ${n}`); }
});
// The native build's weight matmuls are integer products where the CPU has AVX2 (x86-64).
const nativeInteger = process.arch === 'x64' && existsSync('/proc/cpuinfo') &&
  /^flags\s*:.*\bavx2\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
const wasmInteger = embedder.loadInfo().integerMatmuls > 0;
let bitIdentical = 0;
cases.forEach((c, i) => {
  const same = wasm[i].length === native[i].length &&
    wasm[i].every((v, k) => Object.is(v, Math.fround(native[i][k])));
  if (same) bitIdentical++;
  else if (nativeInteger && wasmInteger) {
    failures++;
    console.error(`parity: ${c.name}: wasm and native vectors differ in their bits`);
  }
});
let orderDiffs = 0;
cases.forEach((c, i) => {
  const a = neighbours(wasm, i).join();
  const b = neighbours(native, i).join();
  if (a !== b) { orderDiffs++; failures++; console.error(`parity: ${c.name}: top-10 neighbours differ\n  wasm   ${a}\n  native ${b}`); }
});
console.log(`parity embed: ${cases.length} texts, min cosine wasm/onnxruntime ${minRef.toFixed(7)}, ` +
  `wasm/native ${minNative.toFixed(8)}, bit-identical ${bitIdentical}` +
  `${nativeInteger && wasmInteger ? ' (required)' : ''}, neighbour orders differing ${orderDiffs}; ` +
  `load ${loadMs.toFixed(0)} ms, embed ${embedMs.toFixed(0)} ms in wasm`);
if (failures) {
  console.error(`parity embed: ${failures} failures`);
  process.exit(1);
}
