// The package in Chromium (docs/design.md, "Targets", issue 7 "Measure and report"), with Debian's
// Chromium driven by playwright-core from tests/e2e (scripts/setup installs both):
//
//   1. time to first result: the demo page loaded cold (fresh browser context) with
//      ?search=<question>&embedder=lexical: navigation start → package ready (wasm fetched,
//      compiled, instantiated) → docs fetched and indexed → first query result shown (lexical
//      embedder); and with MiniLM (the page's default; &docs=notes): engine + model fetched and
//      compiled, the 10 notes embedded and indexed, first result;
//   2. bundle size as loaded by that page: every response, raw and gzip -9;
//   3. memory of a 10k-chunk index: wasm linear memory (memory.buffer.byteLength), JS heap
//      (performance.memory, precise) and performance.measureUserAgentSpecificMemory (the page is
//      served cross-origin isolated), before and after indexing; index build time and query
//      p50 (denseWeight 1, query embedding included) at that size.
//
//   node bench/browser.mjs [--runs 5] [--chunks 10000]          (after scripts/build-pkg)
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { syntheticCorpus } from './synthetic.mjs';
import { gzipSync } from 'node:zlib';
import { serve } from '../www/serve.mjs';
import { ARGS, EXECUTABLE, chromium } from '../tests/e2e/chromium.mjs';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const runs = Number(arg('--runs', '5'));
const nChunks = Number(arg('--chunks', '10000'));
const here = (p) => new URL(p, import.meta.url).pathname;
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
const mb = (n) => `${(n / 1048576).toFixed(1)} MiB`;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
if (!existsSync(here('../pkg/condense_bg.wasm'))) throw new Error('pkg/ is missing: run scripts/build-pkg');

const server = await serve({
  port: 0,
  headers: { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' },
});
const browser = await chromium.launch({
  executablePath: EXECUTABLE,
  headless: false,
  args: [...ARGS, '--enable-precise-memory-info', '--js-flags=--expose-gc', '--enable-blink-features=ForceEagerMeasureMemory'],
});
console.log(`Chromium ${browser.version()}, ${runs} cold runs, ${nChunks} chunks`);

// ------------------------------------------------------------------ 1 + 2: first result, bundle
const question = 'how is the token budget met?';
const firsts = [];
let loaded = null;
for (let r = 0; r < runs; r++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const responses = [];
  page.on('response', (res) => responses.push(res));
  await page.goto(`${server.url}/www/?search=${encodeURIComponent(question)}&embedder=lexical`);
  await page.waitForFunction(() => performance.getEntriesByName('condense:first-result').length > 0, null, { timeout: 60_000 });
  const t = await page.evaluate(() => ({
    module: performance.getEntriesByName('condense:module-ready')[0].startTime,
    first: performance.getEntriesByName('condense:first-result')[0].startTime,
    status: document.getElementById('index-status').textContent,
    results: document.getElementById('search-text').textContent.split('\n')[0],
  }));
  firsts.push(t);
  if (r === 0) {
    loaded = [];
    for (const res of responses) {
      const body = await res.body().catch(() => Buffer.alloc(0));
      loaded.push({ path: new URL(res.url()).pathname, raw: body.length, gzip: gzipSync(body, { level: 9 }).length });
    }
  }
  await context.close();
}

// MiniLM: the same, cold, on the notes set (its question shares no word with the answer).
const minilmRuns = [];
for (let r = 0; r < runs; r++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}/www/?search=${encodeURIComponent('my laptop is overheating')}&docs=notes`);
  await page.waitForFunction(() => performance.getEntriesByName('condense:first-result').length > 0, null, { timeout: 300_000 });
  minilmRuns.push(await page.evaluate(() => ({
    module: performance.getEntriesByName('condense:module-ready')[0].startTime,
    first: performance.getEntriesByName('condense:first-result')[0].startTime,
    model: document.getElementById('model-status').textContent,
    status: document.getElementById('index-status').textContent,
    results: document.getElementById('search-text').textContent.split('\n')[0],
  })));
  await context.close();
}

// ------------------------------------------------------------------ 3: memory at 10k chunks
// Chunk-sized documents of sentences from the dev IR corpora (bench/synthetic.mjs).
const corpus = syntheticCorpus();
const docs = corpus.docs(nChunks);
const questions = corpus.questions(50);
mkdirSync(here('out/'), { recursive: true });
writeFileSync(here(`out/browser-docs-${nChunks}.json`), JSON.stringify(docs));
const docChars = docs.reduce((n, d) => n + d.text.length, 0);

const page = await browser.newPage();
await page.goto(`${server.url}/bench/browser/memory.html`);
await page.waitForFunction(() => window.benchReady === true, null, { timeout: 60_000 });
const mem = await page.evaluate(([url, qs]) => window.bench.memory(url, qs), [`/bench/out/browser-docs-${nChunks}.json`, questions]);
await browser.close();
await server.close();

// ------------------------------------------------------------------ report
const lines = [];
const say = (s = '') => { lines.push(s); console.log(s); };
say();
say(`## Time to first result (demo page, cold, lexical embedder; median of ${runs})`);
say(`page: ${firsts[0].status}; first result: ${firsts[0].results}`);
say(`navigation → package ready (wasm compiled + instantiated): ${median(firsts.map((f) => f.module)).toFixed(0)} ms`);
say(`navigation → first query result shown:                      ${median(firsts.map((f) => f.first)).toFixed(0)} ms`);
say(`(runs: ${firsts.map((f) => f.first.toFixed(0)).join(', ')} ms)`);
say();
say(`## Time to first result with MiniLM (demo page, cold, 10 notes; median of ${runs})`);
say(`page: ${minilmRuns[0].model}; ${minilmRuns[0].status}; first result: ${minilmRuns[0].results}`);
say(`navigation → first query result shown: ${median(minilmRuns.map((f) => f.first)).toFixed(0)} ms (runs: ${minilmRuns.map((f) => f.first.toFixed(0)).join(', ')} ms)`);
say();
say('## Bundle as loaded by the demo page (first run, before any click)');
const group = (p) => (p.startsWith('/pkg/') ? `package ${p.endsWith('.wasm') ? 'wasm' : 'JS'}` : p.startsWith('/www/') ? 'page (html, js, css)' : 'indexed docs (search demo)');
const sums = {};
for (const l of loaded) {
  const g = group(l.path);
  sums[g] ??= { raw: 0, gzip: 0, files: [] };
  sums[g].raw += l.raw;
  sums[g].gzip += l.gzip;
  sums[g].files.push(l.path.split('/').pop() || 'index.html');
}
for (const [g, s] of Object.entries(sums)) say(`${g.padEnd(28)} ${kb(s.raw).padStart(11)} raw ${kb(s.gzip).padStart(11)} gzip  (${s.files.join(', ')})`);
const pkgRaw = loaded.filter((l) => l.path.startsWith('/pkg/')).reduce((a, l) => a + l.raw, 0);
const pkgGz = loaded.filter((l) => l.path.startsWith('/pkg/')).reduce((a, l) => a + l.gzip, 0);
say(`${'package total'.padEnd(28)} ${kb(pkgRaw).padStart(11)} raw ${kb(pkgGz).padStart(11)} gzip  (no model: lexical embedder)`);
say();
say(`## A ${num(mem.chunks)}-chunk index in Chromium (${num(mem.documents)} documents, ${mb(docChars)} of text)`);
say(`build: ${(mem.buildMs / 1000).toFixed(1)} s (${Math.round(mem.documents / (mem.buildMs / 1000))} docs/s); query p50 ${mem.queryP50.toFixed(1)} ms, p95 ${mem.queryP95.toFixed(1)} ms (denseWeight 1)`);
say(`wasm memory:  ${mb(mem.before.wasmBytes)} → ${mb(mem.after.wasmBytes)} (+${mb(mem.after.wasmBytes - mem.before.wasmBytes)})`);
say(`JS heap used: ${mb(mem.before.jsHeapUsed)} → ${mb(mem.after.jsHeapUsed)}`);
say(`measureUserAgentSpecificMemory: ${mem.after.uaSpecific === null ? 'unavailable' : `${mb(mem.before.uaSpecific)} → ${mb(mem.after.uaSpecific)}`} (crossOriginIsolated: ${mem.crossOriginIsolated})`);
say(`  breakdown after: ${(mem.after.uaBreakdown ?? []).join(', ')}`);
say(`serialized index: ${mb(mem.serialized)}`);
writeFileSync(here('out/browser.md'), lines.join('\n') + '\n');
function num(n) { return Number(n).toLocaleString('en-US'); }
