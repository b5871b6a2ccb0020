// The demo page (www/) in Chromium: every function through the UI, assertions on what the page
// shows, screenshots in tests/artifacts/. Needs pkg/ (scripts/build-pkg).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from '../../www/serve.mjs';
import { ARTIFACTS, ROOT, launch, watchErrors } from './chromium.mjs';

let server;
let browser;
let page;
let errors;

before(async () => {
  assert.ok(existsSync(join(ROOT, 'pkg', 'condense_bg.wasm')), 'pkg/ is missing: run scripts/build-pkg');
  server = await serve({ port: 0 });
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  errors = watchErrors(page);
  // Every value the model's progress bar takes while the default embedder, MiniLM, loads.
  await page.addInitScript(() => {
    window.modelProgress = [];
    addEventListener('DOMContentLoaded', () => {
      const bar = document.getElementById('model-progress');
      new MutationObserver(() => window.modelProgress.push([bar.hidden, bar.value])).observe(bar, { attributes: true });
    });
  });
  await page.goto(`${server.url}/www/`);
  await page.waitForFunction(() => window.condenseReady === true, null, { timeout: 30_000 });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const text = (sel) => page.locator(sel).innerText();
const cardValue = async (section, label) => {
  const card = page.locator(`${section} .card`).filter({ has: page.locator('span', { hasText: label }) });
  return (await card.locator('b').innerText()).trim();
};

test('the page loads the package (version in the header) and MiniLM, the default embedder, with a progress bar', async () => {
  assert.match(await text('#tagline'), /condense \d+\.\d+\.\d+/);
  assert.equal(await page.inputValue('#embedder-choice'), 'minilm');
  await page.waitForFunction(() => document.body.dataset.embedder === 'minilm', null, { timeout: 240_000 });
  assert.match(await text('#embedder-name'), /^minilm \(384 dims\)$/);
  assert.match(await text('#model-status'), /^MiniLM loaded in [\d.]+ s \(model compiled in [\d.]+ s\)$/);
  assert.equal(await page.locator('#fallback-note').count(), 0);
  assert.equal(await page.evaluate(() => document.body.dataset.fallback), undefined);
  const seen = await page.evaluate(() => window.modelProgress);
  const values = seen.filter(([hidden]) => !hidden).map(([, v]) => v);
  assert.ok(values.some((v) => v > 0 && v < 1), `no intermediate progress: ${JSON.stringify(seen)}`);
  assert.ok(values.includes(1), `the bar never reached 1: ${JSON.stringify(seen)}`);
  assert.equal(await page.locator('#model-progress').isHidden(), true);
  assert.deepEqual(errors, []);
});

test('MiniLM that cannot load: the lexical embedder stands in, with a visible note saying why', async () => {
  // A fresh page whose model file request fails (the engine and tokenizer load).
  const context = await browser.newContext();
  const other = await context.newPage();
  // The failed model request is logged by Chromium (a 404): the only error expected.
  const otherErrors = watchErrors(other, { ignore: [/status of 404/] });
  await other.route('**/pkg/models/model.onnx', (route) => route.fulfill({ status: 404, body: 'not here' }));
  await other.goto(`${server.url}/www/`);
  await other.waitForFunction(() => window.condenseReady === true, null, { timeout: 30_000 });
  await other.waitForFunction(() => document.body.dataset.fallback === 'lexical', null, { timeout: 120_000 });
  const note = other.locator('#fallback-note');
  assert.equal(await note.isVisible(), true);
  assert.match(await note.innerText(), /^MiniLM could not load \(.*model\.onnx.*\): using the lexical embedder\.$/);
  assert.match(await other.locator('#embedder-name').innerText(), /^lexical \(384 dims\)$/);
  assert.equal(await other.inputValue('#embedder-choice'), 'lexical');
  assert.equal(await other.locator('#model-progress').isHidden(), true);
  // The page works on the fallback: the docs indexed and searched lexically.
  await other.click('#build-index');
  await other.waitForFunction(() => /chunks in \d+ ms \(lexical\)$/.test(document.getElementById('index-status').textContent), null, { timeout: 60_000 });
  await other.fill('#question', 'how is the token budget met?');
  await other.click('#run-query');
  await other.locator('#search-result').waitFor({ state: 'visible' });
  assert.match(await other.locator('#search-text').innerText(), /^\[1\] /);
  await other.locator('#search').screenshot({ path: join(ARTIFACTS, 'demo-fallback.png') });
  assert.deepEqual(otherErrors, []);
  await context.close();
});

test('compress: a loaded chat, before → after, what was kept verbatim, exact round trip', async () => {
  await page.click('button[data-sample="chat"]');
  await page.locator('#c-result').waitFor({ state: 'visible' });
  assert.match(await text('#c-status'), /^compress in [\d.]+ ms$/);

  const [before, afterTokens] = (await cardValue('#compress', 'tokens before → after')).split('→').map((s) => Number(s.replace(/[^\d]/g, '')));
  assert.ok(before > 2000 && afterTokens < before, `tokens ${before} → ${afterTokens}`);
  assert.ok(parseFloat(await cardValue('#compress', 'ratio')) > 1.2);
  assert.equal(await cardValue('#compress', 'valid request'), 'yes');
  assert.equal(await cardValue('#compress', 'uncompress round trip'), 'exact');

  // One row per input message, each with its decision; some kept verbatim, some summarized.
  const rows = page.locator('#c-messages tr[data-action]');
  assert.equal(await rows.count(), 14);
  const kept = await page.locator('#c-messages tr[data-action="preserved"]').count();
  const summarized = await page.locator('#c-messages tr[data-action="summarized"]').count();
  assert.ok(kept >= 4 && summarized >= 1, `kept ${kept}, summarized ${summarized}`);
  assert.match(await text('#c-kept'), new RegExp(`^${kept} of 14 messages kept verbatim \\(.*recency window`));
  // The last message is in the recency window and shown as unchanged; a summary carries its marker.
  assert.match(await rows.nth(13).innerText(), /kept verbatim\s+recency window/);
  assert.match(await page.locator('#c-messages tr[data-action="summarized"] td.after').first().innerText(), /^\[summary#[0-9a-f]{8}: /);
  await page.locator('#compress').screenshot({ path: join(ARTIFACTS, 'demo-compress.png') });
  // The README's picture (docs/demo-compress.png): the page's top, the cards and the first rows.
  await page.evaluate(() => window.scrollTo(0, 0));
  const box = await page.locator('#compress').boundingBox();
  await page.screenshot({ path: join(ARTIFACTS, 'demo-compress-top.png'), clip: { x: box.x - 10, y: 0, width: box.width + 20, height: box.y + 620 } });
  assert.deepEqual(errors, []);
});

test('compress: a 25 % budget is met, code is kept verbatim in a coding chat', async () => {
  await page.click('button[data-sample="coding-chat"]');
  await page.waitForFunction(() => document.querySelectorAll('#c-messages tr[data-action]').length === 12);
  await page.selectOption('#c-budget', '0.25');
  await page.waitForFunction(() => [...document.querySelectorAll('#compress .card span')].some((s) => s.textContent === 'budget'));
  const budget = await cardValue('#compress', 'budget');
  assert.match(budget, /^[\d,]+ ✓ fits$/, budget);
  const [tokensBefore, tokensAfter] = (await cardValue('#compress', 'tokens before → after')).split('→').map((s) => Number(s.replace(/[^\d]/g, '')));
  const budgetTokens = Number(budget.split(' ')[0].replace(/,/g, ''));
  assert.ok(budgetTokens <= Math.ceil(tokensBefore * 0.25) && tokensAfter <= budgetTokens, `${tokensBefore} → ${tokensAfter}, budget ${budgetTokens}`);
  assert.equal(await cardValue('#compress', 'uncompress round trip'), 'exact');
  // Back to no budget: the code fences survive (code kept, prose summarized).
  await page.selectOption('#c-budget', '');
  await page.locator('#c-messages tr[data-action="code_split"]').first().waitFor();
  assert.match(await page.locator('#c-messages tr[data-action="code_split"] td.after').first().innerText(), /```/);
  assert.deepEqual(errors, []);
});

test('compress: a tool session (OpenAI shape): tool calls kept, long tool output summarized, still valid', async () => {
  await page.click('button[data-sample="tool-session-openai"]');
  await page.waitForFunction(() => document.querySelectorAll('#c-messages tr[data-action]').length === 20);
  assert.equal(await cardValue('#compress', 'valid request'), 'yes');
  assert.equal(await cardValue('#compress', 'uncompress round trip'), 'exact');
  const rows = await page.locator('#c-messages tr[data-action]').evaluateAll((trs) => trs.map((tr) => [tr.cells[1].innerText, tr.dataset.action, tr.cells[2].innerText]));
  assert.ok(rows.filter(([role]) => role === 'assistant').every(([, action, why]) => action === 'preserved' && /tool calls|recency/.test(why)), JSON.stringify(rows));
  assert.ok(rows.some(([role, action]) => role === 'tool' && action === 'summarized'), JSON.stringify(rows));
  assert.deepEqual(errors, []);
});

test('compress: bad input shows the error code and path, not a crash', async () => {
  await page.fill('#c-input', '[{"role": "user", "content": 42}]');
  await page.click('#c-run');
  assert.match(await text('#c-status'), /^invalid_message at messages\[0\]\.content: /);
  assert.equal(await page.locator('#c-result').isHidden(), true);
  await page.fill('#c-input', '[{"role": "user"');
  await page.click('#c-run');
  assert.match(await text('#c-status'), /invalid_json|JSON/);
  assert.deepEqual(errors, []);
});

test('Index / query: the docs indexed (MiniLM) with a progress bar, compact results and per-stage stats', async () => {
  await page.click('#build-index');
  await page.waitForFunction(() => /chunks in \d+ ms \(minilm\)$/.test(document.getElementById('index-status').textContent), null, { timeout: 240_000 });
  assert.equal(await page.locator('#index-progress').evaluate((p) => p.value), 1);
  const [, docs, chunks] = /(\d+) documents, (\d+) chunks/.exec(await text('#index-status'));
  assert.equal(Number(docs), 4);
  assert.ok(Number(chunks) > 20, `${chunks} chunks`);

  await page.fill('#question', 'how is the token budget met?');
  await page.click('#run-query');
  await page.locator('#search-result').waitFor({ state: 'visible' });
  const results = await text('#search-text');
  assert.match(results, /^\[1\] \S+\.md § .+ \((0\.\d\d|1\.00)\)/, results.slice(0, 200));
  assert.match(results, /budget/i);
  const stages = await page.locator('#search-stats tr').allInnerTexts();
  assert.equal(stages.length, 10);
  const candidates = Number(stages[1].split('\t')[1]);
  const returned = Number(stages[6].split('\t')[1]);
  assert.ok(candidates >= returned && returned >= 1 && returned <= 5, `${candidates} → ${returned}`);
  assert.match(stages[8], /→/);
  // The options field reaches query: topN 1 returns one result.
  await page.fill('#query-options', '{"topN": 1}');
  await page.click('#run-query');
  await page.waitForFunction(() => !/\n\[2\] /.test(document.getElementById('search-text').textContent));
  assert.equal(Number((await page.locator('#search-stats tr').nth(6).innerText()).split('\t')[1]), 1);
  await page.fill('#query-options', '{"topN": 5}');
  await page.click('#run-query');
  await page.locator('#search').screenshot({ path: join(ARTIFACTS, 'demo-search.png') });
  assert.deepEqual(errors, []);
});

// The semantic case: the question shares no word with the note that answers it ("my laptop is
// overheating" / "Cooling a notebook computer: When a notebook computer gets hot…"). The lexical
// embedder and BM25 have nothing to match; MiniLM does.
const SEMANTIC = { question: 'my laptop is overheating', title: 'Cooling a notebook computer' };

test('MiniLM (the default): a question with no word in common finds its note; lexically it does not; switching is instant both ways', async () => {
  const note = JSON.parse(readFileSync(join(ROOT, 'www', 'samples', 'notes.json'), 'utf8')).find((d) => d.path === SEMANTIC.title);
  const words = (t) => new Set(t.toLowerCase().match(/[a-z']+/g));
  const shared = [...words(SEMANTIC.question)].filter((w) => words(`${note.path} ${note.text}`).has(w));
  assert.deepEqual(shared, [], 'the question must share no word with its note');

  // MiniLM (loaded when the page opened), on the notes.
  await page.selectOption('#doc-set', 'notes');
  await page.waitForFunction(() => /^10 documents, \d+ chunks in \d+ ms \(minilm\)$/.test(document.getElementById('index-status').textContent), null, { timeout: 120_000 });
  await page.fill('#question', SEMANTIC.question);
  await page.fill('#query-options', '{"topN": 3}');
  await page.click('#run-query');
  await page.waitForFunction((t) => document.getElementById('search-text').textContent.split('\n')[0].includes(t), SEMANTIC.title, { timeout: 30_000 });
  const semantic = await text('#search-text');
  assert.match(semantic, new RegExp(`^\\[1\\] ${SEMANTIC.title} .*\\((0\\.\\d\\d|1\\.00)\\)`), semantic);
  await page.locator('#search').screenshot({ path: join(ARTIFACTS, 'demo-minilm.png') });

  // Lexical: instant, the index rebuilt; it does not find the note.
  await page.selectOption('#embedder-choice', 'lexical');
  await page.waitForFunction(() => /\(lexical\)$/.test(document.getElementById('index-status').textContent), null, { timeout: 30_000 });
  assert.match(await text('#embedder-name'), /^lexical /);
  await page.click('#run-query');
  await page.waitForFunction((t) => !document.getElementById('search-text').textContent.split('\n')[0].includes(t), SEMANTIC.title, { timeout: 30_000 });
  const lexical = await text('#search-text');
  assert.doesNotMatch(lexical.split('\n')[0], new RegExp(SEMANTIC.title), `lexical found it: ${lexical}`);

  // Back to MiniLM: already loaded (no second download), the index rebuilt again.
  await page.selectOption('#embedder-choice', 'minilm');
  await page.waitForFunction(() => /\(minilm\)$/.test(document.getElementById('index-status').textContent), null, { timeout: 120_000 });
  assert.match(await text('#embedder-name'), /^minilm \(384 dims\)$/);
  assert.deepEqual(errors, []);
});

test('applyWatermark: a tool session pruned before its checkpoint, valid, state kept', async () => {
  await page.click('#load-agent');
  await page.locator('#w-result').waitFor({ state: 'visible' });
  assert.equal(await cardValue('#watermark', 'watermark'), 'msg 13');
  assert.match(await page.inputValue('#state'), /^\{"watermark":"toolu_[A-Za-z0-9]+"\}$/);
  assert.ok(Number(await cardValue('#watermark', 'blocks removed')) >= 10);
  assert.equal(await cardValue('#watermark', 'valid request'), 'yes');
  const [mb, ma] = (await cardValue('#watermark', 'messages')).split('→').map(Number);
  assert.equal(mb, 17);
  assert.ok(ma < mb);
  assert.equal(await page.locator('#w-before li').count(), mb);
  assert.equal(await page.locator('#w-after li').count(), ma);
  // Before the watermark no tool call is left; the checkpoint and what follows are unchanged.
  const afterRows = await page.locator('#w-after li').allInnerTexts();
  const mark = afterRows.findIndex((r) => r.includes('◀ watermark'));
  assert.ok(mark > 0, 'the watermark row is marked in the output');
  assert.match(afterRows[mark], /compress_to_checkpoint\(\)/);
  assert.ok(afterRows.slice(0, mark).every((r) => !/\(\)|result /.test(r)), afterRows.slice(0, mark).join('\n'));
  await page.locator('#watermark').screenshot({ path: join(ARTIFACTS, 'demo-watermark.png') });

  // Again with the returned state: nothing more to prune, same output size.
  await page.click('#w-run');
  assert.equal((await cardValue('#watermark', 'messages')).split('→').map(Number)[1], ma);
  assert.deepEqual(errors, []);
});

test('the whole page (screenshot)', async () => {
  await page.screenshot({ path: join(ARTIFACTS, 'demo-full.png'), fullPage: true });
  assert.deepEqual(errors, []);
});
