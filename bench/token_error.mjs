// The default token estimator against o200k (gpt-tokenizer 4.0.0, the metric's tokenizer) on
// the dev conversations, and what a caller's counter costs compress (memoised per call).
//
//   node bench/token_error.mjs [file.jsonl …]      after scripts/build-pkg
//   default files: ../shared/data/conversations/{sharegpt_dev,tool_sessions_dev_openai,
//   tool_sessions_dev_anthropic}.jsonl, else the samples in tests/fixtures/.
// gpt-tokenizer comes from tests/npm/node_modules (`cd tests/npm && npm ci`).
//
// Prints, per set, the ratio estimate / o200k over message texts, whole conversations before
// compress, and after compress (default options and `targetRatio: 0.25`); how many budgeted
// results the estimator says fit but exceed the budget in o200k tokens; and the time of
// compress with `countTokens: o200k` against the estimator in the same run (and the calls).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('../', import.meta.url);
const require = createRequire(new URL('tests/npm/package.json', root));
const { encode } = require('gpt-tokenizer/encoding/o200k_base');
const { compress } = await import(new URL('pkg/node.js', root).href);

const o200k = (t) => (t ? encode(t).length : 0);
function messageText(m) {
  const block = (b) => {
    switch (b?.type) {
      case 'text': return typeof b.text === 'string' ? b.text : '';
      case 'thinking': return typeof b.thinking === 'string' ? b.thinking : '';
      case 'tool_use': return `${b.name ?? ''} ${JSON.stringify(b.input ?? {})}`;
      case 'tool_result':
        if (typeof b.content === 'string') return b.content;
        if (Array.isArray(b.content)) return b.content.map(block).filter((s) => s).join('\n');
        return '';
      default: return typeof b?.text === 'string' ? b.text : '';
    }
  };
  const parts = [];
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content)) parts.push(...m.content.map(block).filter((s) => s));
  for (const c of m.tool_calls ?? []) parts.push(`${c.function?.name ?? ''} ${c.function?.arguments ?? ''}`);
  return parts.join('\n');
}
const tokensOf = (ms) => ms.reduce((a, m) => a + o200k(messageText(m)), 0);

const shared = new URL('../shared/data/conversations/', root);
const names = ['sharegpt_dev', 'tool_sessions_dev_openai', 'tool_sessions_dev_anthropic'];
let files = process.argv.slice(2);
if (files.length === 0) {
  files = names.map((n) => new URL(`${n}.jsonl`, shared).pathname);
  if (!files.every((f) => existsSync(f))) {
    files = ['sharegpt_sample', 'tool_sessions_openai_sample', 'tool_sessions_anthropic_sample']
      .map((n) => new URL(`tests/fixtures/${n}.jsonl`, root).pathname);
  }
}

const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
function summary(label, ratios) {
  const xs = [...ratios].sort((a, b) => a - b);
  const under = xs.filter((x) => x < 1).length;
  return `${label.padEnd(22)} n=${String(xs.length).padStart(5)}  min ${xs[0].toFixed(2)}  p5 ${q(xs, 0.05).toFixed(2)}  median ${q(xs, 0.5).toFixed(2)}  p95 ${q(xs, 0.95).toFixed(2)}  max ${xs[xs.length - 1].toFixed(2)}  under 1.0: ${under}`;
}

const all = { texts: [], before: [], after: [], budget: [] };
for (const file of files) {
  const records = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  const r = { texts: [], before: [], after: [], budget: [] };
  let overBudget = 0;
  let fitting = 0;
  let estMs = 0;
  let cntMs = 0;
  let inCounter = 0;
  let calls = 0;
  for (const rec of records) {
    const ms = rec.messages;
    for (const m of ms) {
      const t = messageText(m);
      const exact = o200k(t);
      if (exact >= 5) r.texts.push(compress([{ role: 'user', content: t }], { recencyWindow: 1 }).stats.tokensBefore / exact);
    }
    const exactBefore = tokensOf(ms);
    if (exactBefore === 0) continue;
    let t0 = performance.now();
    const d = compress(ms);
    const b = compress(ms, { targetRatio: 0.25 });
    estMs += performance.now() - t0;
    r.before.push(d.stats.tokensBefore / exactBefore);
    r.after.push(d.stats.tokensAfter / Math.max(1, tokensOf(d.messages)));
    r.budget.push(b.stats.tokensAfter / Math.max(1, tokensOf(b.messages)));
    if (b.stats.fits) {
      fitting++;
      if (tokensOf(b.messages) > b.stats.budget) overBudget++;
    }
    // The same two calls counting in o200k through a JS callback.
    const counter = (text) => { calls++; const s = performance.now(); const n = o200k(text); inCounter += performance.now() - s; return n; };
    t0 = performance.now();
    compress(ms, { countTokens: counter });
    compress(ms, { targetRatio: 0.25, countTokens: counter });
    cntMs += performance.now() - t0;
  }
  const set = file.split('/').pop().replace('.jsonl', '');
  console.log(`\n${set}: ${records.length} conversations`);
  console.log(summary('message texts', r.texts));
  console.log(summary('conversations before', r.before));
  console.log(summary('after compress', r.after));
  console.log(summary('after targetRatio 0.25', r.budget));
  console.log(`estimator says fits: ${fitting}; of those over the budget in o200k: ${overBudget}`);
  console.log(`compress (default + targetRatio 0.25): estimator ${estMs.toFixed(0)} ms, countTokens o200k ${cntMs.toFixed(0)} ms (${(cntMs / estMs).toFixed(2)}x; ${inCounter.toFixed(0)} ms inside the counter, ${calls} calls)`);
  for (const k of Object.keys(all)) all[k].push(...r[k]);
}
console.log('\nall sets');
console.log(summary('message texts', all.texts));
console.log(summary('conversations before', all.before));
console.log(summary('after compress', all.after));
console.log(summary('after targetRatio 0.25', all.budget));
