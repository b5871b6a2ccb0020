// The incremental cache, prefix-stable mode and the speed of compress on ~10K-token
// conversations (issue 5's acceptance), natively (the CLI) and in Node (the package),
// side by side in one run. Prints tables.
//
//   node bench/incremental.mjs [--sets sharegpt_dev,tool_sessions_dev_openai,…] [--runs N]
//   (after scripts/build-pkg; the CLI is $CONDENSE or $CARGO_TARGET_DIR/release/condense)
//
// Replay: every conversation of each set is compressed after each new message (messages[:1],
// messages[:2], …), once without a cache and once with one cache carried from call to call
// (per conversation, starting empty). Reported: text-level cache hits / (hits + misses) and the
// total time of the replay without and with the cache (the same calls, same process, ratio).
// Every cached call's output is checked byte-identical to the uncached one.
//
// Prefix stability, on the same replay, prefixStable off vs on, default options and a 25%
// budget (targetRatio 0.25): `steps stable` is the share of steps whose output starts with every
// message of the previous step's output that was compressed (a summary or marker) — i.e. the
// earlier compressed messages stayed byte-identical; `prompt reused` is the mean share of the
// previous step's output tokens found again as a common message prefix (what a provider's
// prompt cache can reuse).
import { existsSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { compressJson } from '../pkg/node.js';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const sets = arg('--sets', 'sharegpt_dev,tool_sessions_dev_openai,tool_sessions_dev_anthropic').split(',');
const runs = Number(arg('--runs', '3'));
const here = (p) => new URL(p, import.meta.url);
const target = process.env.CARGO_TARGET_DIR ?? new URL('../target', import.meta.url).pathname;
const cli = process.env.CONDENSE ?? join(target, 'release', 'condense');
const load = (set) => readFileSync(here(`../../shared/data/conversations/${set}.jsonl`), 'utf8')
  .split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const table = (rows) => {
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  for (const r of rows) console.log(r.map((c, i) => String(c).padEnd(w[i])).join('  '));
  console.log();
};
/** Estimated tokens of a message's text, as the engine counts (chars / 4 is close enough here: a ratio). */
const size = (m) => JSON.stringify(m).length;

// ------------------------------------------------------------------ replay, Node
function replayNode(convs, options) {
  let hits = 0; let misses = 0; let tPlain = 0; let tCached = 0; let calls = 0;
  for (const conv of convs) {
    let cache = null;
    for (let k = 1; k <= conv.length; k++) {
      const text = JSON.stringify(conv.slice(0, k));
      let t = performance.now();
      const plain = compressJson(text, options);
      tPlain += performance.now() - t;
      t = performance.now();
      const cached = compressJson(text, { ...options, cache });
      tCached += performance.now() - t;
      if (cached.json !== plain.json || cached.verbatim !== plain.verbatim) throw new Error('cache changed an output');
      cache = cached.cache;
      hits += cached.stats.cacheHits; misses += cached.stats.cacheMisses; calls++;
    }
  }
  return { hits, misses, tPlain, tCached, calls };
}

// ------------------------------------------------------------------ replay, native (CLI)
function replayNative(convs, options) {
  const dir = mkdtempSync(join(tmpdir(), 'condense-incr-'));
  let plainMs = 0; let cachedMs = 0; let hits = 0; let misses = 0;
  convs.forEach((conv, c) => {
    const lines = [];
    for (let k = 1; k <= conv.length; k++) lines.push(JSON.stringify({ id: `${c}:${k}`, messages: conv.slice(0, k), options }));
    const input = `${lines.join('\n')}\n`;
    const plain = spawnSync(cli, ['compress'], { input, maxBuffer: 1 << 30 });
    const cachePath = join(dir, `cache-${c}.json`);
    const cached = spawnSync(cli, ['compress', '--cache', cachePath], { input, maxBuffer: 1 << 30 });
    if (plain.status !== 0 || cached.status !== 0) throw new Error(`CLI failed: ${plain.stderr}${cached.stderr}`);
    const a = plain.stdout.toString().trim().split('\n').map((l) => JSON.parse(l));
    const b = cached.stdout.toString().trim().split('\n').map((l) => JSON.parse(l));
    a.forEach((x, i) => {
      if (JSON.stringify(x.messages) !== JSON.stringify(b[i].messages)) throw new Error('native cache changed an output');
      plainMs += x.ms; cachedMs += b[i].ms; hits += b[i].stats.cacheHits; misses += b[i].stats.cacheMisses;
    });
  });
  return { plainMs, cachedMs, hits, misses };
}

// ------------------------------------------------------------------ prefix stability
const isCompressed = (m) => /\[(summary|dup|truncated|condense)/.test(JSON.stringify(m.content ?? '')) || JSON.stringify(m).includes('_condensed');
function stability(convs, options) {
  let steps = 0; let stable = 0; let reused = 0;
  for (const conv of convs) {
    let prev = null;
    for (let k = 1; k <= conv.length; k++) {
      const out = JSON.parse(compressJson(JSON.stringify(conv.slice(0, k)), options).json);
      if (prev) {
        steps++;
        const same = (i) => i < out.length && JSON.stringify(out[i]) === JSON.stringify(prev[i]);
        if (prev.every((m, i) => !isCompressed(m) || same(i))) stable++;
        let lcp = 0;
        while (lcp < prev.length && same(lcp)) lcp++;
        const total = prev.reduce((s, m) => s + size(m), 0);
        reused += total ? prev.slice(0, lcp).reduce((s, m) => s + size(m), 0) / total : 1;
      }
      prev = out;
    }
  }
  return { steps, stable: stable / steps, reused: reused / steps };
}

// ------------------------------------------------------------------ run
const replayRows = [['set', 'config', 'host', 'calls', 'hit rate', 'no cache ms', 'cache ms', 'speed-up']];
const stabRows = [['set', 'config', 'prefixStable', 'steps', 'steps stable', 'prompt reused']];
const configs = { default: {}, 'budget 25%': { targetRatio: 0.25 } };
for (const set of sets) {
  const convs = load(set).map((r) => r.messages);
  for (const [name, options] of Object.entries(configs)) {
    let best = null;
    for (let r = 0; r < runs; r++) {
      const x = replayNode(convs, options);
      if (!best || x.tCached + x.tPlain < best.tCached + best.tPlain) best = x;
    }
    replayRows.push([set, name, 'node', best.calls, pct(best.hits / (best.hits + best.misses)), best.tPlain.toFixed(0), best.tCached.toFixed(0), `${(best.tPlain / best.tCached).toFixed(2)}x`]);
    if (existsSync(cli)) {
      const n = replayNative(convs, options);
      replayRows.push([set, name, 'native', best.calls, pct(n.hits / (n.hits + n.misses)), n.plainMs.toFixed(0), n.cachedMs.toFixed(0), `${(n.plainMs / n.cachedMs).toFixed(2)}x`]);
    }
    for (const stableMode of [false, true]) {
      const s = stability(convs, { ...options, prefixStable: stableMode });
      stabRows.push([set, name, stableMode, s.steps, pct(s.stable), pct(s.reused)]);
    }
  }
}
console.log('Replay after each new message (one cache per conversation; outputs checked identical):');
table(replayRows);
console.log('Prefix stability on the same replay:');
table(stabRows);

// ------------------------------------------------------------------ ~10K-token conversations
// sharegpt conversations concatenated (valid alternation kept) until ~10K estimated tokens.
const sg = load('sharegpt_dev').map((r) => r.messages.filter((m) => m.role !== 'system'));
const big = [];
let cur = [];
let chars = 0;
for (const conv of sg) {
  for (const m of conv) {
    if (cur.length && cur[cur.length - 1].role === m.role) continue;
    cur.push(m); chars += m.content.length;
  }
  if (chars >= 40000) { big.push(cur); cur = []; chars = 0; }
}
const timeRows = [['host', 'config', 'conversations', 'mean tokens', 'p50 ms', 'max ms']];
const estTokens = (conv) => Math.round(conv.reduce((s, m) => s + m.content.length, 0) / 4);
const meanTok = Math.round(big.reduce((s, c) => s + estTokens(c), 0) / big.length);
const quant = (xs, q) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
for (const [name, options] of Object.entries(configs)) {
  const ms = [];
  for (const conv of big) {
    const text = JSON.stringify(conv);
    compressJson(text, options);
    const t = performance.now();
    compressJson(text, options);
    ms.push(performance.now() - t);
  }
  timeRows.push(['node', name, big.length, meanTok, quant(ms, 0.5).toFixed(2), Math.max(...ms).toFixed(2)]);
  if (existsSync(cli)) {
    const input = `${big.map((conv, i) => JSON.stringify({ id: i, messages: conv, options })).join('\n')}\n`;
    const out = spawnSync(cli, ['compress'], { input, maxBuffer: 1 << 30 });
    const nms = out.stdout.toString().trim().split('\n').map((l) => JSON.parse(l).ms);
    timeRows.push(['native', name, big.length, meanTok, quant(nms, 0.5).toFixed(2), Math.max(...nms).toFixed(2)]);
  }
}
console.log('compress on ~10K-token conversations (sharegpt_dev concatenated; tokens ≈ chars / 4):');
table(timeRows);
writeFileSync(join(tmpdir(), 'condense-incremental.json'), JSON.stringify({ replayRows, stabRows, timeRows }));
