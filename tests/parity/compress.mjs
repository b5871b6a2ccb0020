// Parity of compress: the native CLI and the wasm build (npm package, Node) must give
// byte-identical messages and verbatim text and equal stats on every fixture and option set.
//
//   node tests/parity/compress.mjs <pkg dir> <condense binary> <fixture.jsonl>...
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const [pkgDir, binary, ...fixtures] = process.argv.slice(2);
if (!pkgDir || !binary || fixtures.length === 0) {
  console.error('usage: node tests/parity/compress.mjs <pkg dir> <condense binary> <fixture.jsonl>...');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const condense = await import(pathToFileURL(resolve(pkgDir, manifest.exports['.'].node.import.default)).href);

const OPTION_SETS = [{}, { recencyWindow: 2, fuzzyDedup: true }, { preserveNumbers: true, query: 'booking price' }, { targetRatio: 0.25 },
  { method: 'hierarchical', targetRatio: 0.3 },
  { prefixStable: true }, { prefixStable: true, targetRatio: 0.25, recencyWindow: 2 },
  { targetRatio: 0.1, trace: true },
  { importanceScoring: true, contradictionDetection: true, preserveQuotes: true, minConfidence: 0.5, trace: true }];
const cases = [];
for (const file of fixtures) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    OPTION_SETS.forEach((options, k) => cases.push({ id: `${record.id}#${k}`, messages: record.messages, options }));
    // Phase 2 of the summariser protocol: the same summaries (from a summarizer run in wasm)
    // must give the same bytes natively.
    for (const method of ['abstractive', 'hybrid']) {
      const summaries = {};
      await condense.compress(record.messages, {
        method, targetRatio: 0.4,
        summarizer: (text, r) => { summaries[r.id] = r.index % 2 ? `gist of ${r.index}` : text.slice(0, 40); return summaries[r.id]; },
      });
      cases.push({ id: `${record.id}#${method}`, messages: record.messages, options: { method, targetRatio: 0.4, summaries } });
    }
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
  // compress on objects (in Node its long strings reach the core as UTF-16, quoted there): the
  // same ids (hashes of the input text), messages and stats as compressJson's.
  const o = condense.compress(c.messages, c.options);
  const sameObjects = JSON.stringify(Object.keys(o.verbatim)) === JSON.stringify(Object.keys(JSON.parse(w.verbatim)))
    && JSON.stringify(o.stats) === JSON.stringify(w.stats)
    && isDeepStrictEqual(JSON.parse(JSON.stringify(o.messages)), JSON.parse(w.json));
  if (!sameObjects) {
    failures++;
    console.error(`parity: compress on objects differs from compressJson on ${c.id}`);
  }
});
console.log(`parity compress: ${cases.length - failures} of ${cases.length} cases identical (native CLI vs wasm in Node)`);

// prepareContext: each record's string contents as chunks, at a few budgets.
const prep = [];
for (const c of cases.filter((x) => x.id.endsWith('#0'))) {
  const chunks = c.messages.map((m) => m.content).filter((t) => typeof t === 'string');
  for (const tokenBudget of [0, 50, 400]) prep.push({ id: `${c.id}@${tokenBudget}`, chunks, options: { tokenBudget, query: 'error config' } });
}
const prepNative = execFileSync(binary, ['prepare'], { input: prep.map((p) => JSON.stringify(p)).join('\n') + '\n', maxBuffer: 1 << 30 })
  .toString().trimEnd().split('\n').map((l) => JSON.parse(l));
let prepFailures = 0;
prep.forEach((p, i) => {
  const w = condense.prepareContext(p.chunks, p.options);
  const n = prepNative[i];
  if (n.text !== w.text || JSON.stringify(n.chunks) !== JSON.stringify(w.chunks) || JSON.stringify(n.stats) !== JSON.stringify(w.stats)) {
    prepFailures++;
    console.error(`parity: prepareContext differs on ${p.id}`);
  }
});
failures += prepFailures;
console.log(`parity prepareContext: ${prep.length - prepFailures} of ${prep.length} cases identical (native CLI vs wasm in Node)`);
process.exit(failures === 0 ? 0 : 1);
