// applyWatermark throughput through the JS API, side by side in one run (docs/design.md,
// "Targets"):
//
//   condense/object   applyWatermark(messages, …)            objects in, objects out
//   condense/string   applyWatermarkJson(text, …)            JSON text in, JSON text out
//   seed-js/object    the original proxy's algorithm in plain JS    objects in, objects out
//   seed-js/string    JSON.parse + it + JSON.stringify              text in, text out (the baseline)
//
// Histories of 1k and 10k messages are built from the 40 real BFCL agent sessions of the dev
// set (../shared/data; the 4 of tests/fixtures when it is absent), tool ids made unique, with a
// checkpoint near the end (most history pruned) and one in the middle. Every timed call's output is checked (message count, suffix kept),
// so the benchmark is also a test. Median of the timed runs after the same warm-up for every
// engine, runs interleaved (see timeAll()).
//
//   node bench/watermark.mjs [--runs N] [--dump DIR]   (after scripts/build-pkg; --dump writes the inputs)
import { existsSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { applyWatermark, applyWatermarkJson } from '../pkg/node.js';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 7;
const dump = process.argv.includes('--dump') ? process.argv[process.argv.indexOf('--dump') + 1] : null;
const here = (p) => new URL(p, import.meta.url);
const devSet = here('../../shared/data/conversations/tool_sessions_dev_anthropic.jsonl');
const source = existsSync(devSet) ? devSet : here('../tests/fixtures/tool_sessions_anthropic_sample.jsonl');
const sessions = readFileSync(source, 'utf8')
  .split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l).messages);

/** A valid Anthropic history of about `n` messages with a checkpoint at `at` (0–1). */
function history(n, at) {
  const out = [];
  let k = 0;
  while (out.length < n) {
    for (const s of sessions) {
      const text = JSON.stringify(s).replaceAll('toolu_01', `toolu_${k}x`);
      k++;
      const msgs = JSON.parse(text);
      if (out.length && out.at(-1).role === msgs[0].role) msgs.shift(); // keep roles alternating
      out.push(...msgs);
      if (out.length >= n) break;
    }
  }
  // Insert a checkpoint pair after a user message near `at`.
  let i = Math.floor(out.length * at);
  while (out[i].role !== 'user') i++;
  const ck = [
    { role: 'assistant', content: [{ type: 'text', text: 'Checkpointing.' }, { type: 'tool_use', id: 'toolu_ck', name: 'compress_to_checkpoint', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_ck', content: 'ok' }] },
  ];
  // The next message must be an assistant: merge the user message that follows into ck[1].
  const next = out[i + 1];
  out.splice(i + 1, 0, ...ck);
  if (next && next.role === 'user') throw new Error('unexpected roles');
  return { messages: out, watermarkIndex: i + 1 };
}

// ------------------------------------------------- the original proxy's algorithm in JS
// (what docs/design.md, "Watermark rules", starts from)
function seedFind(messages, toolName, watermarkId) {
  let passed = watermarkId === '';
  for (const m of messages) {
    if (!passed && m.role === 'assistant' && Array.isArray(m.content)) {
      if (m.content.some((b) => b.type === 'tool_use' && b.id === watermarkId)) passed = true;
    }
    if (passed && m.role === 'assistant' && Array.isArray(m.content)) {
      for (const b of m.content) if (b.type === 'tool_use' && b.name === toolName) return b.id;
    }
  }
  return null;
}
function seedCompress(messages, watermarkId) {
  let cp = -1;
  for (let i = 0; i < messages.length && cp < 0; i++) {
    const m = messages[i];
    if (m.role === 'assistant' && Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_use' && b.id === watermarkId)) cp = i;
  }
  if (cp < 0) return messages;
  const out = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (i >= cp || !Array.isArray(m.content)) { out.push(m); continue; }
    const drop = m.role === 'user' ? 'tool_result' : m.role === 'assistant' ? 'tool_use' : null;
    if (!drop) { out.push(m); continue; }
    const kept = m.content.filter((b) => b.type !== drop);
    if (kept.length) out.push({ ...m, content: kept });
  }
  return out;
}
function seed(messages) {
  const id = seedFind(messages, 'compress_to_checkpoint', '') ?? '';
  return seedCompress(messages, id);
}

// ---------------------------------------------------------------- timing
function median(xs) { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; }
/**
 * Times every engine of one case: the same warm-up for each (at least 2 calls and up to 250 ms,
 * 50 calls, so that V8 has tiered up both the JS and the wasm code: wasm starts in its baseline
 * compiler and a 2 MB module takes a few dozen calls to be optimised on a busy machine), then
 * `runs` rounds in which every engine runs once, in turn (the first engine of a round rotates),
 * so a busy machine or a garbage collection slows all of them alike. Median per engine.
 */
function timeAll(engines) {
  for (const { fn, check } of Object.values(engines)) {
    const t0 = performance.now();
    for (let i = 0; i < 2 || (i < 50 && performance.now() - t0 < 250); i++) check(fn());
  }
  const names = Object.keys(engines);
  const ms = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length];
      const { fn, check } = engines[name];
      const t = performance.now();
      const out = fn();
      ms[name].push(performance.now() - t);
      check(out);
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(ms[n])]));
}

const rows = [];
for (const n of [1000, 10000]) {
  for (const [label, at] of [['end', 0.95], ['middle', 0.5]]) {
    const { messages, watermarkIndex } = history(n, at);
    const text = JSON.stringify(messages);
    if (dump) writeFileSync(`${dump}/watermark-${messages.length}-${label}.json`, text);
    const suffix = messages.length - watermarkIndex;
    const lastJson = JSON.stringify(messages.at(-1));
    const checkObj = (msgs) => {
      if (msgs.length < suffix || msgs.at(-1) !== messages.at(-1) && JSON.stringify(msgs.at(-1)) !== lastJson) throw new Error('suffix lost');
    };
    const checkText = (t) => { if (!t.endsWith(lastJson + ']')) throw new Error('suffix lost'); };
    const cases = timeAll({
      'condense/object': { fn: () => applyWatermark(messages, null).messages, check: checkObj },
      'condense/string': { fn: () => applyWatermarkJson(text, null).json, check: checkText },
      'seed-js/object': { fn: () => seed(messages), check: checkObj },
      'seed-js/string': { fn: () => JSON.stringify(seed(JSON.parse(text))), check: checkText },
    });
    for (const [engine, ms] of Object.entries(cases)) {
      rows.push({ task: 'watermark', case: `${messages.length}msgs/checkpoint-${label}`, engine, ms: +ms.toFixed(3), msgsPerSec: Math.round(messages.length / (ms / 1000)), mb: +(text.length / 1e6).toFixed(2) });
    }
  }
}

const wasm = readFileSync(here('../pkg/condense_bg.wasm'));
console.log(`sessions: ${source.pathname} (${sessions.length})\n`);
console.log(`| case | engine | ms (median of ${runs}) | messages/s | MB/s | vs seed-js/string |`);
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  const base = rows.find((b) => b.case === r.case && b.engine === 'seed-js/string');
  console.log(`| ${r.case} (${r.mb} MB) | ${r.engine} | ${r.ms} | ${r.msgsPerSec.toLocaleString('en-US')} | ${(r.mb / (r.ms / 1000)).toFixed(0)} | ${(base.ms / r.ms).toFixed(2)}x |`);
}
console.log(`\n.wasm: ${wasm.length.toLocaleString('en-US')} bytes raw, ${gzipSync(wasm, { level: 9 }).length.toLocaleString('en-US')} bytes gzip; node ${process.version}`);
mkdirSync(here('out/'), { recursive: true });
writeFileSync(here('out/watermark.json'), JSON.stringify({ node: process.version, runs, rows }, null, 1));
