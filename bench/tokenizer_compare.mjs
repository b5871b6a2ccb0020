// The issue-4 tokenizer comparison: condense's hand-written WordPiece against the `tokenizers`
// crate, each alone in a wasm module (bench/tokenizer-wasm, built by bench/tokenizer-compare),
// in Node: module size (raw, gzip -9), the ids on the embedding fixture (both against the
// Python `tokenizers` reference ids), and speed (texts/s and tokens/s, best of 5 passes) over
// the fixture's texts and a corpus (CISI documents, title + text, if ../shared/data is there).
//
//   node bench/tokenizer_compare.mjs <own dir> <crate dir> <tokenizer.json> <reference.json> [corpus.jsonl]
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [ownDir, crateDir, tokenizerFile, referenceFile, corpusFile] = process.argv.slice(2);
if (!ownDir || !crateDir || !tokenizerFile || !referenceFile) {
  console.error('usage: node bench/tokenizer_compare.mjs <own dir> <crate dir> <tokenizer.json> <reference.json> [corpus.jsonl]');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const json = readFileSync(tokenizerFile);
const reference = JSON.parse(readFileSync(referenceFile, 'utf8'));
const fixture = reference.cases.map((c) => c.text);
const corpus = corpusFile && existsSync(corpusFile)
  ? readFileSync(corpusFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).map((d) => `${d.title}\n${d.text}`)
  : [];

const engines = [['hand-written', ownDir], ['tokenizers crate', crateDir]].map(([name, dir]) => {
  const wasm = readFileSync(join(dir, 'tokenizer_wasm_bg.wasm'));
  const t0 = performance.now();
  const mod = require(join(process.cwd(), dir, 'tokenizer_wasm.js'));
  const tok = new mod.Tok(json, reference.max_length);
  const loadMs = performance.now() - t0;
  return { name, tok, raw: wasm.length, gzip: gzipSync(wasm, { level: 9 }).length, loadMs };
});

let failures = 0;
for (const e of engines) {
  let differ = 0;
  reference.cases.forEach((c) => {
    const ids = Array.from(e.tok.encode(c.text));
    if (ids.join() !== c.ids.join()) {
      differ++;
      if (differ <= 3) console.error(`${e.name}: ${c.name}: ids differ from the reference`);
    }
  });
  e.differ = differ;
  failures += differ;
}
// The two engines on the corpus: the same ids?
let corpusDiffer = 0;
for (const t of corpus) {
  if (Array.from(engines[0].tok.encode(t)).join() !== Array.from(engines[1].tok.encode(t)).join()) corpusDiffer++;
}

const speed = (tok, texts) => {
  let best = Infinity;
  let tokens = 0;
  tok.countAll(texts); // warm-up
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    tokens = tok.countAll(texts);
    best = Math.min(best, performance.now() - t0);
  }
  return { textsPerS: texts.length / best * 1000, tokensPerS: tokens / best * 1000 };
};
const sets = [['fixture (57 texts)', fixture]];
if (corpus.length) sets.push([`CISI corpus (${corpus.length} documents)`, corpus]);
console.log('| tokenizer | .wasm raw | .wasm gzip | load ms | fixture ids ≠ reference | ' +
  sets.map(([n]) => `${n} texts/s | tokens/s`).join(' | ') + ' |');
console.log('|---|---|---|---|---|' + sets.map(() => '---|---').join('|') + '|');
for (const e of engines) {
  const cols = sets.map(([, texts]) => {
    const s = speed(e.tok, texts);
    return `${s.textsPerS.toFixed(0)} | ${(s.tokensPerS / 1e6).toFixed(2)} M`;
  });
  console.log(`| ${e.name} | ${(e.raw / 1024).toFixed(0)} KiB | ${(e.gzip / 1024).toFixed(0)} KiB | ` +
    `${e.loadMs.toFixed(1)} | ${e.differ} of ${reference.cases.length} | ${cols.join(' | ')} |`);
}
if (corpus.length) console.log(`corpus texts whose ids differ between the two: ${corpusDiffer} of ${corpus.length}`);
if (failures) process.exit(1);
