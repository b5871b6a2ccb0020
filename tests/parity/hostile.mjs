// Hostile input (issue 28) through the npm package and through the native CLI: the same error
// code for every case (paths differ only by the CLI line around the messages).
//
//   node tests/parity/hostile.mjs PKG_DIR CLI
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkgDir, cli] = process.argv.slice(2);
const pkg = await import(pathToFileURL(resolve(pkgDir, 'node.js')).href);
const root = new URL('../../', import.meta.url);

/** The code of what `f` throws, or 'ok'. */
function js(f) {
  try {
    f();
    return 'ok';
  } catch (e) {
    if (!(e instanceof pkg.CondenseError)) throw new Error(`not a CondenseError: ${e?.stack ?? e}`);
    return e.code;
  }
}

/** The code of the CLI's one output line for `messages` (JSON text) under `command`, or 'ok'. */
function cliLine(command, messages, extra = '') {
  const line = `{"id":1,"messages":${messages}${extra}}\n`;
  const r = spawnSync(cli, [command], { input: line, maxBuffer: 1 << 30 });
  if (r.status !== 0 && r.status !== 1) throw new Error(`${command}: exit ${r.status}: ${r.stderr}`);
  const out = r.stdout.toString().split('\n').filter((l) => l.trim());
  if (out.length !== 1) throw new Error(`${command}: ${out.length} output lines for one input line`);
  const v = JSON.parse(out[0]);
  if (v.error) return v.error.code;
  return command === 'validate' && !v.valid ? v.violations.map((x) => x.code).join(',') : 'ok';
}

/** `validate`'s violation codes in JS, as the CLI line gives them. */
function jsValidate(json) {
  const code = js(() => pkg.validate(json));
  if (code !== 'ok') return code;
  const r = pkg.validate(json);
  return r.valid ? 'ok' : r.violations.map((x) => x.code).join(',');
}

const deep = (n) => `[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"x":${'['.repeat(n)}${']'.repeat(n)}}}]}]`;
const big = `[{"role":"user","content":"${'a'.repeat(64 << 20)}"}]`;
const cases = [
  ['request body with messages twice', '{"model":"m","messages":[],"messages":[{"role":"user","content":"x"}]}'],
  ['a key twice in a message', '[{"role":"user","role":"assistant","content":"x"}]'],
  ['a key twice in a tool input', '[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1,"\\u0061":2}}]}]'],
  ['nesting at the limit', deep(123)],
  ['nesting past the limit', deep(124)],
  ['nesting of 100,000 levels', deep(100_000)],
  ['a message over 64 MiB', big],
  ['not JSON', '[{"role":"user",'],
  ['a role that is a number', '[{"role":1,"content":"x"}]'],
  ['an unknown role', '[{"role":"robot","content":"x"}]'],
  ['both shapes at once', '[{"role":"system","content":"s"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}]'],
  ['a tool_use block in an OpenAI user message', '[{"role":"system","content":"s"},{"role":"user","content":[{"type":"tool_use","id":"x","name":"compress_to_checkpoint","input":{}}]}]'],
  ['lone surrogates and NUL', '[{"role":"user","content":"\\ud800 a \\u0000 b \\udfff"}]'],
  ['messages that are not an array', '{"messages":{"role":"user"}}'],
];

const rows = [];
let failed = 0;
for (const [name, json] of cases) {
  const pairs = [
    ['validate', jsValidate(json), cliLine('validate', json)],
    ['watermark', js(() => pkg.applyWatermarkJson(json)), cliLine('watermark', json)],
    ['compress', js(() => pkg.compressJson(json)), cliLine('compress', json)],
    ['uncompress', js(() => pkg.uncompress(json, {})), cliLine('uncompress', json)],
  ];
  for (const [op, a, b] of pairs) {
    rows.push(`| ${name} | ${op} | ${a} | ${b} |`);
    if (a !== b) failed++;
  }
}

// Crafted index files: Index.deserialize in JS, `condense query --index` natively.
for (const name of ['hnsw-neighbour.cndx', 'chunk-count-overflow.cndx', 'bm25-total-length.cndx']) {
  const path = new URL(`tests/fixtures/hostile/${name}`, root);
  const a = js(() => pkg.Index.deserialize(new Uint8Array(readFileSync(path))).query('parser', { denseWeight: 1, minScore: 0 }));
  const r = spawnSync(cli, ['query', '--index', path.pathname], { input: '{"id":1,"text":"parser"}\n' });
  const b = r.stderr.toString().match(/condense: ([a-z_]+)/)?.[1] ?? `exit ${r.status}`;
  rows.push(`| ${name} | index | ${a} | ${b} |`);
  if (a !== b || r.status !== 1) failed++;
}

console.log('| case | operation | npm package | CLI |\n|---|---|---|---|');
console.log(rows.join('\n'));
if (failed > 0) {
  console.error(`hostile: ${failed} cases where the npm package and the CLI disagree`);
  process.exit(1);
}
console.log(`hostile: the npm package and the CLI agree on all ${rows.length} cases`);
