// Parity: the wasm build (through the npm package, in Node) and the native CLI must give
// byte-identical JSON for applyWatermark on every fixture and option set.
//
//   node tests/parity/watermark.mjs <pkg dir> <condense binary> <fixture.jsonl>...
//
// For each record × option set it writes one CLI input line, runs the CLI once over all of
// them, and compares each output line with what the package returns:
// - string path: `applyWatermarkJson` must produce the very same line, byte for byte;
// - object path: `applyWatermark` must produce the same messages, state, stats and warnings.
// Exits 1 on the first difference, printing where.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkgDir, binary, ...fixtures] = process.argv.slice(2);
if (!pkgDir || !binary || fixtures.length === 0) {
  console.error('usage: node tests/parity/watermark.mjs <pkg dir> <condense binary> <fixture.jsonl>...');
  process.exit(2);
}

// Resolve the package's Node entry from its own package.json.
const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const dot = manifest.exports?.['.'] ?? manifest.exports ?? manifest.main;
const entry = typeof dot === 'string' ? dot : (dot.node?.import ?? dot.node ?? dot.import ?? dot.default);
const condense = await import(pathToFileURL(resolve(pkgDir, typeof entry === 'string' ? entry : entry.default)).href);

const OPTION_SETS = [
  {},
  { placeholder: true, clearToolInputs: true },
  { keepLastToolResults: 2, excludeTools: ['mcp__*'] },
  { keepThinking: true },
  { checkpointTools: ['get_flight_cost', 'send_message', 'ls'] },
];

const cases = [];
for (const file of fixtures) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    OPTION_SETS.forEach((options, k) => {
      cases.push({ id: `${record.id}#${k}`, messages: record.messages, options });
    });
  }
}
// A state that is not found, on the first record.
cases.push({ id: 'not-found', messages: cases[0].messages, options: {}, state: { watermark: 'toolu_nope' } });

const input = cases
  .map((c) => JSON.stringify({ id: c.id, messages: c.messages, options: c.options, ...(c.state ? { state: c.state } : {}) }))
  .join('\n') + '\n';
const native = execFileSync(binary, ['watermark'], { input, maxBuffer: 1 << 30 }).toString().trimEnd().split('\n');
if (native.length !== cases.length) {
  console.error(`parity: the CLI returned ${native.length} lines for ${cases.length} cases`);
  process.exit(1);
}

let failures = 0;
cases.forEach((c, i) => {
  const state = c.state ?? null;
  const s = condense.applyWatermarkJson(JSON.stringify(c.messages), state, c.options);
  const line = `{"id":${JSON.stringify(c.id)},"messages":${s.json},"state":${JSON.stringify(s.state)},"stats":${JSON.stringify(s.stats)},"warnings":${JSON.stringify(s.warnings)}}`;
  if (line !== native[i]) {
    failures++;
    const at = [...line].findIndex((ch, j) => ch !== native[i][j]);
    console.error(`parity: string path differs on ${c.id} at character ${at}:\n  wasm:   …${line.slice(Math.max(0, at - 60), at + 60)}\n  native: …${native[i].slice(Math.max(0, at - 60), at + 60)}`);
    return;
  }
  const o = condense.applyWatermark(c.messages, state, c.options);
  const objectLine = `{"id":${JSON.stringify(c.id)},"messages":${JSON.stringify(o.messages)},"state":${JSON.stringify(o.state)},"stats":${JSON.stringify(o.stats)},"warnings":${JSON.stringify(o.warnings)}}`;
  if (objectLine !== JSON.stringify(JSON.parse(native[i]))) {
    failures++;
    console.error(`parity: object path differs on ${c.id}`);
  }
});

console.log(`parity watermark: ${cases.length - failures} of ${cases.length} cases identical (native CLI vs wasm in Node)`);
process.exit(failures === 0 ? 0 : 1);
