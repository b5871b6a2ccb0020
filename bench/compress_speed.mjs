// compress() speed side by side in one run, on chats (sharegpt_dev) or agent tool sessions
// (tool_sessions_dev_openai: every prefix before a tool call, as the metric's tasks):
//
//   condense/object   compress(messages, options)       the npm package (wasm) in Node
//   condense/string   compressJson(text, options)       JSON text in and out
//   cce/object        context-compression-engine 1.5.0's compress(), the same conversations
//   native/object     the Rust crate's compress() (bench/compress.rs, cargo bench)
//   native/string     the Rust crate's compress_json()
//
// Two configs, as in ../shared/data/conversations/README.md's anchor table: `default`
// (condense's defaults; CCE with recencyWindow 4) and `budget` (tokenBudget = 25 % of each
// conversation's o200k tokens; CCE with budgetStrategy 'tiered' + forceConverge, as its anchor
// numbers were made). Every engine gets the same conversations and budgets; CCE's messages get
// the `id`/`index` fields it requires before timing starts.
//
// Rounds are interleaved (each round runs every engine once, in turn), so a busy machine slows
// them alike; reported: the median over rounds of the total time over all conversations, the
// p50/p95 of one conversation's time (its median over rounds), and the ratio to CCE.
//
// CCE is AGPL-3.0 and not on npm: build it from its public source at the anchor commit and
// point CCE_DIR at it (default /tmp/cce); without it the CCE rows are skipped.
//   git clone https://github.com/SimplyLiz/ContextCompressionEngine /tmp/cce
//   (cd /tmp/cce && git checkout 1d7a8c3 && npm ci --ignore-scripts && npx tsc -p .)
//
//   node --expose-gc bench/compress_speed.mjs [--set sharegpt|tools] [--rounds N] [--no-native]
//   (after scripts/build-pkg; npm ci in bench/ installs gpt-tokenizer, the budget's tokenizer;
//   with --expose-gc each engine's block starts on a collected heap)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { compress, compressJson } from '../pkg/node.js';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const rounds = Number(arg('--rounds', '7'));
const here = (p) => new URL(p, import.meta.url).pathname;
const set = arg('--set', 'sharegpt');
const files = {
  sharegpt: ['sharegpt_dev.jsonl', 'sharegpt_sample.jsonl'],
  tools: ['tool_sessions_dev_openai.jsonl', 'tool_sessions_openai_sample.jsonl'],
};
if (!files[set]) throw new Error(`--set: sharegpt or tools, not ${set}`);
const devSet = here(`../../shared/data/conversations/${files[set][0]}`);
const source = existsSync(devSet) ? devSet : here(`../tests/fixtures/${files[set][1]}`);
const records = readFileSync(source, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
// Tool sessions: the whole session and every prefix that ends before a tool call (what an
// agent compresses before each step); chats: the whole conversation.
const conversations = set === 'tools'
  ? records.flatMap((r) => [r.messages, ...r.messages.flatMap((m, i) => (i > 2 && m.role === 'assistant' && m.tool_calls ? [r.messages.slice(0, i)] : []))])
  : records.map((r) => r.messages);

// The metric's context tokens: every message's text (string content or text blocks), o200k.
const textOf = (m) => [
  typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? m.content.map((b) => b?.text ?? '').join('\n') : '',
  ...(m.tool_calls ?? []).map((c) => `${c.function?.name ?? ''} ${c.function?.arguments ?? ''}`),
].filter(Boolean).join('\n');
const o200k = (msgs) => msgs.reduce((n, m) => n + countTokens(textOf(m)), 0);

const configs = {
  default: { condense: () => ({}), cce: () => ({ recencyWindow: 4 }) },
  budget: {
    condense: (msgs) => ({ tokenBudget: Math.floor(0.25 * o200k(msgs)) }),
    cce: (msgs) => ({ recencyWindow: 4, tokenBudget: Math.floor(0.25 * o200k(msgs)), budgetStrategy: 'tiered', forceConverge: true }),
  },
};

const cceDir = process.env.CCE_DIR ?? '/tmp/cce';
const cceEntry = `${cceDir}/dist/index.js`;
const cce = existsSync(cceEntry) ? await import(pathToFileURL(cceEntry).href) : null;
if (!cce) console.error(`bench: no CCE build at ${cceEntry} (see the header): CCE rows skipped`);

// The inputs, prepared before any timing.
const tasks = [];
for (const [config, make] of Object.entries(configs)) {
  for (const messages of conversations) {
    tasks.push({
      config,
      messages,
      text: JSON.stringify(messages),
      options: make.condense(messages),
      cceMessages: messages.map((m, i) => ({ id: `m${i}`, index: i, ...m })),
      cceOptions: make.cce(messages),
    });
  }
}

const engines = {
  'condense/object': (t) => compress(t.messages, t.options).messages.length,
  'condense/string': (t) => compressJson(t.text, t.options).json.length,
  ...(cce ? { 'cce/object': (t) => cce.compress(t.cceMessages, t.cceOptions).messages.length } : {}),
};

// per engine, per config: round totals; per task index: times over rounds
const totals = {};
const perTask = {};
for (let round = -1; round < rounds; round++) { // round -1 warms every engine up
  for (const [engine, run] of Object.entries(engines)) {
    for (const config of Object.keys(configs)) {
      const key = `${engine} ${config}`;
      // Each engine starts on a collected heap: the garbage of the one before it (CCE's
      // objects, our result objects) is not charged to it. Needs `node --expose-gc`.
      globalThis.gc?.();
      let total = 0;
      tasks.forEach((t, i) => {
        if (t.config !== config) return;
        const t0 = performance.now();
        if (!(run(t) > 0)) throw new Error(`${engine}: empty output`);
        const ms = performance.now() - t0;
        total += ms;
        if (round >= 0) ((perTask[key] ??= {})[i] ??= []).push(ms);
      });
      if (round >= 0) (totals[key] ??= []).push(total);
    }
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const rows = [];
for (const key of Object.keys(totals)) {
  const [engine, config] = key.split(' ');
  const each = Object.values(perTask[key]).map(median);
  rows.push({ engine, config, totalMs: median(totals[key]), p50: pct(each, 0.5), p95: pct(each, 0.95) });
}

// The conversations and options measured, for the native bench and bench/compress_ab.mjs.
mkdirSync(here('out'), { recursive: true });
const file = here('out/compress-tasks.json');
writeFileSync(file, JSON.stringify(tasks.map((t) => ({ config: t.config, messages: t.messages, options: t.options }))));
if (!process.argv.includes('--no-native')) {
  const out = execFileSync('cargo', ['bench', '--quiet', '--bench', 'compress', '--', file, String(rounds)],
    { cwd: here('..'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const native = JSON.parse(out.trim().split('\n').at(-1));
  for (const [config, r] of Object.entries(native)) {
    rows.push({ engine: 'native/object', config, totalMs: r.objectMs });
    rows.push({ engine: 'native/string', config, totalMs: r.stringMs });
  }
}

const fmt = (x) => (x === undefined ? '–' : x.toFixed(2));
console.log(`${conversations.length} conversations from ${source}; ${rounds} rounds; node ${process.version}\n`);
console.log('| config | engine | total ms (median) | p50 / p95 ms per conversation | vs CCE | vs condense/object | budget / default |');
console.log('|---|---|---|---|---|---|---|');
for (const config of Object.keys(configs)) {
  const base = rows.find((r) => r.engine === 'cce/object' && r.config === config);
  const wasm = rows.find((r) => r.engine === 'condense/object' && r.config === config);
  for (const r of rows.filter((x) => x.config === config)) {
    const vs = base ? `${(base.totalMs / r.totalMs).toFixed(1)}×` : '–';
    const dflt = rows.find((x) => x.engine === r.engine && x.config === 'default');
    const cost = config === 'budget' && dflt ? `${(r.totalMs / dflt.totalMs).toFixed(2)}×` : '–';
    console.log(`| ${config} | ${r.engine} | ${fmt(r.totalMs)} | ${fmt(r.p50)} / ${fmt(r.p95)} | ${vs} | ${(wasm.totalMs / r.totalMs).toFixed(2)}× | ${cost} |`);
  }
}
