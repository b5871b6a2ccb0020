// Parity of compress: the native CLI and the wasm build (npm package, Node) must give
// byte-identical messages and verbatim text and equal stats on every fixture and option set.
//
//   node tests/parity/compress.mjs <pkg dir> <condense binary> <fixture.jsonl>...
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkgDir, binary, ...fixtures] = process.argv.slice(2);
if (!pkgDir || !binary || fixtures.length === 0) {
  console.error('usage: node tests/parity/compress.mjs <pkg dir> <condense binary> <fixture.jsonl>...');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const condense = await import(pathToFileURL(resolve(pkgDir, manifest.exports['.'].node.import.default)).href);

const OPTION_SETS = [{}, { recencyWindow: 2, fuzzyDedup: true }, { preserveNumbers: true, query: 'booking price' }, { targetRatio: 0.25 },
  { targetRatio: 0.1, trace: true },
  { importanceScoring: true, contradictionDetection: true, preserveQuotes: true, minConfidence: 0.5, trace: true }];
const cases = [];
for (const file of fixtures) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    OPTION_SETS.forEach((options, k) => cases.push({ id: `${record.id}#${k}`, messages: record.messages, options }));
  }
}
const input = cases.map((c) => JSON.stringify({ id: c.id, messages: c.messages, options: c.options })).join('\n') + '\n';
const native = execFileSync(binary, ['compress'], { input, maxBuffer: 1 << 30 }).toString().trimEnd().split('\n');
if (native.length !== cases.length) {
  console.error(`parity: the CLI returned ${native.length} lines for ${cases.length} cases`);
  process.exit(1);
}
let failures = 0;
cases.forEach((c, i) => {
  const w = condense.compressJson(JSON.stringify(c.messages), c.options);
  const n = JSON.parse(native[i]);
  const prefix = `{"id":${JSON.stringify(c.id)},"messages":`;
  const nativeMessages = native[i].slice(prefix.length, prefix.length + w.json.length);
  const same = native[i].startsWith(prefix) && nativeMessages === w.json
    && JSON.stringify(n.verbatim) === JSON.stringify(JSON.parse(w.verbatim))
    && JSON.stringify(n.stats) === JSON.stringify(w.stats);
  if (!same) {
    failures++;
    console.error(`parity: compress differs on ${c.id}`);
  }
});
console.log(`parity compress: ${cases.length - failures} of ${cases.length} cases identical (native CLI vs wasm in Node)`);
process.exit(failures === 0 ? 0 : 1);
