// Parity of retrieval: the native CLI and the wasm build (npm package, Node) must build
// byte-identical indexes from the same documents and answer every query with identical JSON
// (rankings, scores, contents, stats, text), with compression on and off.
//
//   node tests/parity/query.mjs <pkg dir> <condense binary> <docs.jsonl> <queries.jsonl>
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkgDir, binary, docsFile, queriesFile] = process.argv.slice(2);
if (!pkgDir || !binary || !docsFile || !queriesFile) {
  console.error('usage: node tests/parity/query.mjs <pkg dir> <condense binary> <docs.jsonl> <queries.jsonl>');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const condense = await import(pathToFileURL(resolve(pkgDir, manifest.exports['.'].node.import.default)).href);
const lines = (f) => readFileSync(f, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const docs = lines(docsFile);
const queries = lines(queriesFile);

const dir = mkdtempSync(join(tmpdir(), 'condense-parity-'));
let failures = 0;
try {
  const file = join(dir, 'index.bin');
  execFileSync(binary, ['index', '--docs', docsFile, '--out', file, '--lexical']);
  const nativeBytes = readFileSync(file);

  const index = condense.Index.create();
  index.add(docs.map((d) => ({ id: d._id, title: d.title, text: d.text })));
  const wasmBytes = index.serialize();
  if (Buffer.compare(Buffer.from(wasmBytes), nativeBytes) !== 0) {
    failures++;
    console.error(`parity: serialized indexes differ (native ${nativeBytes.length} bytes, wasm ${wasmBytes.length})`);
  }
  // The wasm build reads the native bytes and answers the same.
  const fromNative = condense.Index.deserialize(new Uint8Array(nativeBytes));

  const OPTION_SETS = [
    {},
    { minScore: 0, ngramThreshold: 1, similarityThreshold: 1, maxChunksPerDoc: 0, topN: 50, truncate: false },
    { format: 'verbose', topN: 10, lexicalWeight: 2 },
  ];
  let cases = 0;
  OPTION_SETS.forEach((options) => {
    const input = queries.map((q) => JSON.stringify({ id: q._id, text: q.text, options })).join('\n') + '\n';
    const native = execFileSync(binary, ['query', '--index', file], { input, maxBuffer: 1 << 30 })
      .toString().trimEnd().split('\n').map((l) => JSON.parse(l));
    queries.forEach((q, i) => {
      cases++;
      const { id, ms, ...n } = native[i];
      for (const [name, idx] of [['wasm', index], ['wasm from native bytes', fromNative]]) {
        const w = idx.query(q.text, options);
        if (JSON.stringify(w) !== JSON.stringify(n)) {
          failures++;
          console.error(`parity: query ${q._id} ${JSON.stringify(options)} differs (${name})`);
        }
      }
    });
  });
  console.log(`parity query: ${cases} queries x 2 wasm indexes; serialized index ${nativeBytes.length} bytes; ${failures} differences`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failures === 0 ? 0 : 1);
