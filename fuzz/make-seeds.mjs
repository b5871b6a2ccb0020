// Writes the committed seed corpus of the fuzz targets (fuzz/seeds/TARGET/*) from the test
// fixtures, with the native CLI for what only the crate can write (an index file, a cache).
// Run it again after a change of the index or cache format (the seeds must be what the crate
// writes, or the index and cache targets start from bytes that fail at the version check):
//
//   node fuzz/make-seeds.mjs PATH/TO/condense
//
// Each seed is small: libFuzzer mutates from them, so a few of each shape reach the code faster
// than many of one. Deterministic: the same fixtures and CLI write the same files.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cli = process.argv[2];
if (!cli) {
  console.error('usage: node fuzz/make-seeds.mjs PATH/TO/condense');
  process.exit(2);
}
const root = new URL('../', import.meta.url);
const at = (p) => new URL(p, root).pathname;
const jsonl = (p) => readFileSync(at(p), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const tmp = mkdtempSync(join(tmpdir(), 'condense-seeds-'));

function run(args, input) {
  const r = spawnSync(cli, args, { input, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`condense ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

const seeds = new Map();
const seed = (target, name, bytes) => {
  if (!seeds.has(target)) seeds.set(target, []);
  seeds.get(target).push([name, Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes)]);
};

/** The first `n` messages of a conversation. */
const head = (messages, n) => messages.slice(0, n);

// Conversations: two of each provider's tool sessions (cut short), a chat, a watermark session.
const anthropic = jsonl('tests/fixtures/tool_sessions_anthropic_sample.jsonl');
const openai = jsonl('tests/fixtures/tool_sessions_openai_sample.jsonl');
const chat = jsonl('tests/fixtures/sharegpt_sample.jsonl');
const wm = jsonl('tests/fixtures/watermark_sessions_dev.jsonl');
const conversations = [
  ['anthropic-tools', head(anthropic[0].messages, 12)],
  ['anthropic-tools-2', head(anthropic[1].messages, 8)],
  ['openai-tools', head(openai[0].messages, 12)],
  ['chat', head(chat[0].messages, 4)],
  ['watermark', head(wm[0].messages, 16)],
];

// messages: 8 knob bytes (format, budget, recency, flags, minChars, method, watermark flags),
// then the document: a bare array, or a request body.
conversations.forEach(([name, messages], i) => {
  const knobs = Buffer.from([i, i + 1, i % 4, 0x55 + i, i, i % 3, 0x0b + i * 8, 0]);
  seed('messages', `${name}.bin`, Buffer.concat([knobs, Buffer.from(JSON.stringify(messages))]));
});
seed('messages', 'request-body.bin', Buffer.concat([
  Buffer.from([2, 1, 1, 0x3f, 1, 1, 0x1b, 0]),
  Buffer.from(JSON.stringify({ model: 'm', max_tokens: 100, messages: head(anthropic[0].messages, 6) })),
]));

// options: one of each function's options objects, and a watermark state.
for (const [name, o] of [
  ['compress', { tokenBudget: 80, recencyWindow: 2, dedup: true, fuzzyDedup: true, preservePatterns: ['E\\d+'], query: 'parser error', method: 'hierarchical' }],
  ['compress-ratio', { targetRatio: 0.4, prefixStable: true, importanceScoring: true, contradictionDetection: true, minChars: 10 }],
  ['watermark', { format: 'anthropic', placeholder: true, clearToolInputs: true, keepLastToolResults: 1, excludeTools: ['mcp__memory__*'], keepThinking: true }],
  ['state', { watermark: 't2' }],
  ['query', { topN: 5, denseWeight: 0.5, lexicalWeight: 0.5, minScore: 0, maxChunksPerDoc: 2, similarityThreshold: 0.9, format: 'json' }],
  ['index', { chunk: { minChars: 50, maxChars: 400 }, bm25: { k1: 1.2, b: 0.75 } }],
  ['prepare', { tokenBudget: 50, query: 'build error' }],
]) {
  seed('options', `${name}.json`, JSON.stringify(o));
}

// index: small indexes without a graph (the CLI cannot set a segment size small enough for
// one), as they are (first byte even) and as bodies (first byte odd: the target adds the
// header and the checksum). The seed with an HNSW graph, graph-file.bin, is written by
// src/retrieve/index.rs's test `fuzz_index_seed_is_current` (CONDENSE_WRITE_FIXTURES=1), which
// builds it with segments of 64 vectors.
const docs = jsonl('tests/fixtures/retrieval/docs.jsonl').slice(0, 12)
  .map((d) => ({ id: d._id, text: d.text.slice(0, 400) }));
for (const [name, slice, options] of [
  ['twelve', docs, '{"chunk":{"minChars":50,"maxChars":200}}'],
  ['small', docs.slice(0, 3), '{}'],
]) {
  const file = join(tmp, `${name}.jsonl`);
  writeFileSync(file, slice.map((d) => JSON.stringify(d)).join('\n') + '\n');
  const out = join(tmp, `${name}.cndx`);
  run(['index', '--docs', file, '--out', out, '--lexical', '--index-options', options]);
  const bytes = readFileSync(out);
  seed('index', `${name}-file.bin`, Buffer.concat([Buffer.from([0]), bytes]));
  // CNDX, u32 version | body | u64 FNV-1a of the body.
  seed('index', `${name}-body.bin`, Buffer.concat([Buffer.from([1]), bytes.subarray(8, bytes.length - 8)]));
}

// cache: what `compress --cache` writes after two conversations, as it is (first byte even) and
// to be re-checksummed (odd).
const cacheFile = join(tmp, 'cache.json');
const lines = conversations.slice(0, 3)
  .map(([, messages], i) => JSON.stringify({ id: i, messages, options: { tokenBudget: 60, prefixStable: true } }))
  .join('\n') + '\n';
run(['compress', '--cache', cacheFile], lines);
const cache = readFileSync(cacheFile);
seed('cache', 'cache.bin', Buffer.concat([Buffer.from([0]), cache]));
seed('cache', 'cache-fixed.bin', Buffer.concat([Buffer.from([1]), cache]));

// cli_jsonl: a command byte (validate, watermark, compress, uncompress, prepare, embed), then
// the lines.
const line = (o) => JSON.stringify(o);
const compressed = JSON.parse(run(['compress'], line({ id: 1, messages: conversations[0][1], options: { tokenBudget: 60 } }) + '\n').toString());
for (const [command, name, body] of [
  [0, 'validate', [line({ id: 1, messages: conversations[2][1] }), '', 'not json', line({ id: 2, messages: conversations[0][1] })]],
  [1, 'watermark', [line({ id: 1, messages: conversations[4][1], options: { placeholder: true } }), line({ id: 2, messages: [] })]],
  [2, 'compress', [line({ task_id: 'a', messages: conversations[3][1], options: { tokenBudget: 40 } })]],
  [3, 'uncompress', [line({ id: 1, messages: compressed.messages, verbatim: compressed.verbatim })]],
  [4, 'prepare', [line({ id: 1, chunks: ['The parser reads tokens.', { id: 'b', text: 'A build error names the file.' }], options: { tokenBudget: 20, query: 'parser' } })]],
  [5, 'embed', [line({ id: 1, text: 'the parser' }), line({ id: 2, text: '' })]],
]) {
  seed('cli_jsonl', `${name}.bin`, Buffer.concat([Buffer.from([command]), Buffer.from(body.join('\n') + '\n')]));
}

for (const [target, files] of seeds) {
  const dir = at(`fuzz/seeds/${target}`);
  mkdirSync(dir, { recursive: true });
  for (const old of readdirSync(dir)) {
    if (!(target === 'index' && old === 'graph-file.bin')) rmSync(join(dir, old));
  }
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
  console.log(`${target}: ${files.length} seeds, ${files.reduce((n, [, b]) => n + b.length, 0)} bytes`);
}
rmSync(tmp, { recursive: true, force: true });
