// The Manifest V3 extension in Chromium: assembled from pkg/ by scripts/build-extension, loaded
// unpacked, its popup (opened in a tab) indexes real web pages, answers a query with compressed
// results and copies them to the clipboard; the index survives closing the popup. The service
// worker runs condense itself (condense/manual.js: no top-level await) for the context menu and
// its query service; the content script imports the package into a page. MiniLM is the default
// embedder; the lexical one can be chosen, and stands in (with a note) when MiniLM cannot load.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../../www/serve.mjs';
import { ARTIFACTS, ROOT, launchWithExtension, watchErrors } from './chromium.mjs';

let ext;
let site;
let siteDir;
let extDir;
const pages = {};

/** A small markdown-to-HTML rendering (headings, code fences, lists, paragraphs) of a repo doc. */
function html(title, markdown) {
  const esc = (s) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
  const out = [];
  let para = [];
  let item = null;
  let code = null;
  const flush = () => {
    if (item) out.push(`<ul><li>${esc(item.join(' '))}</li></ul>`);
    else if (para.length) out.push(`<p>${esc(para.join(' '))}</p>`);
    para = [];
    item = null;
  };
  for (const line of markdown.split('\n')) {
    if (code) {
      if (line.startsWith('```')) { out.push(`<pre>${esc(code.join('\n'))}</pre>`); code = null; } else code.push(line);
    } else if (line.startsWith('```')) { flush(); code = []; }
    else if (/^#{1,6} /.test(line)) { flush(); const n = /^#+/.exec(line)[0].length; out.push(`<h${n}>${esc(line.slice(n + 1))}</h${n}>`); }
    else if (/^\s*([-*]|\d+\.) /.test(line)) { flush(); item = [line.replace(/^\s*([-*]|\d+\.) /, '')]; }
    else if (!line.trim()) flush();
    else (item ?? para).push(line.trim());
  }
  flush();
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body><nav>site navigation that must not be indexed: zebra-nav-token</nav><main>${out.join('\n')}</main>
<footer>footer text, not indexed</footer></body></html>`;
}

before(async () => {
  extDir = join(ARTIFACTS, 'extension');
  execFileSync(join(ROOT, 'scripts', 'build-extension'), [extDir], { cwd: ROOT, stdio: 'inherit' });
  siteDir = mkdtempSync(join(tmpdir(), 'condense-site-'));
  for (const [name, file, title] of [
    ['readme', 'README.md', 'condense README'],
    ['architecture', 'ARCHITECTURE.md', 'condense architecture'],
  ]) {
    writeFileSync(join(siteDir, `${name}.html`), html(title, readFileSync(join(ROOT, file), 'utf8')));
    pages[name] = title;
  }
  site = await serve({ port: 0, root: siteDir });
  ext = await launchWithExtension(extDir);
});

after(async () => {
  await ext?.close();
  await site?.close();
  if (siteDir) rmSync(siteDir, { recursive: true, force: true });
});

async function openPopup() {
  const popup = await ext.context.newPage();
  const errors = watchErrors(popup);
  await popup.goto(`chrome-extension://${ext.extensionId}/popup.html`);
  // The popup loads MiniLM (the default embedder) before it is ready.
  await popup.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
  return { popup, errors };
}

test('the extension loads: MV3 service worker, manifest version from Cargo.toml, CSP with wasm-unsafe-eval', async () => {
  const manifest = JSON.parse(readFileSync(join(extDir, 'manifest.json'), 'utf8'));
  const crate = /^version = "([^"]+)"/m.exec(readFileSync(join(ROOT, 'Cargo.toml'), 'utf8'))[1];
  assert.equal(manifest.manifest_version, 3);
  assert.equal(manifest.version, crate);
  assert.equal(manifest.content_security_policy.extension_pages, "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'");
  assert.match(ext.extensionId, /^[a-p]{32}$/);
  assert.equal(await ext.worker.evaluate(() => chrome.runtime.getManifest().name), manifest.name);
  // The content script imports the package from the extension: web-accessible to http(s) pages.
  assert.deepEqual(manifest.web_accessible_resources, [{ resources: ['condense/*', 'extract.js'], matches: ['http://*/*', 'https://*/*'] }]);
  // MiniLM ships in the extension (the default embedder, offline).
  for (const f of ['condense/manual.js', 'condense/condense_embed_bg.wasm', 'condense/models/model.onnx', 'condense/models/tokenizer.json']) {
    assert.ok(existsSync(join(extDir, f)), `${f} is missing`);
  }
});

test('service worker: condense runs in it (manual entry, no top-level await); a result computed there', async () => {
  // Nothing stored yet: an empty index, queried in the worker.
  const r = await ext.worker.evaluate(() => self.condenseQuery('no page stored yet'));
  assert.equal(r.computedIn, 'service-worker');
  assert.match(r.version, /^\d+\.\d+\.\d+/);
  assert.equal(r.embedder, 'minilm');
  assert.equal(r.note, null);
  assert.deepEqual(r.results, []);
  // The worker's engine module holds the model: its wasm memory (bench/embed_footprint_chromium.mjs).
  const bytes = await ext.worker.evaluate(() => self.condenseEngineMemory());
  assert.ok(bytes > 20 * 2 ** 20, `engine memory ${bytes}`);
  assert.equal(r.stats.candidates, 0);
});

test('popup: choose two open pages, index them, query, compressed results, copy to the clipboard', async () => {
  for (const name of Object.keys(pages)) {
    const tab = await ext.context.newPage();
    await tab.goto(`${site.url}/${name}.html`);
  }
  const { popup, errors } = await openPopup();
  assert.match(await popup.locator('#summary').innerText(), /^0 pages, 0 chunks · condense \d+\.\d+\.\d+ · minilm$/);
  assert.equal(await popup.locator('#question').isDisabled(), true);

  await popup.click('#choose');
  await popup.screenshot({ path: join(ARTIFACTS, 'extension-chooser.png') });
  const boxes = popup.locator('#tabs label');
  assert.deepEqual((await boxes.allInnerTexts()).map((s) => s.trim()).sort(), Object.values(pages).sort());
  await popup.click('#add-selected');
  await popup.waitForFunction(() => document.getElementById('page-count').textContent === '2', null, { timeout: 240_000 });
  assert.match(await popup.locator('#status').innerText(), /^added “condense (README|architecture)”, “condense (README|architecture)” · \d+ chunks$/);
  const chunks = Number(/(\d+) chunks/.exec(await popup.locator('#summary').innerText())[1]);
  assert.ok(chunks > 20, `${chunks} chunks`);

  await popup.fill('#question', 'which checkpoint tools move the watermark?');
  await popup.press('#question', 'Enter');
  await popup.locator('#answer').waitFor({ state: 'visible' });
  const results = await popup.locator('#results').innerText();
  // Compact format: "[1] <page title> § <headers> (score)"; headings of the page became the header path.
  assert.match(results, /^\[1\] condense (README|architecture) § .+ \((0\.\d\d|1\.00)\)\n/, results.slice(0, 300));
  assert.doesNotMatch(results, /zebra-nav-token|footer text/);
  const stats = await popup.locator('#stats').innerText();
  const [, candidates, returned, before, after] = /^(\d+) candidates → (\d+) results · ([\d,]+) → ([\d,]+) tokens/.exec(stats);
  assert.ok(Number(returned) >= 1 && Number(returned) <= 5 && Number(candidates) >= Number(returned), stats);
  assert.ok(Number(after.replace(/,/g, '')) < Number(before.replace(/,/g, '')), stats);

  // "Copy as context" puts the question and the compact results on the clipboard.
  await popup.bringToFront(); // the clipboard is written by the focused page only
  await popup.click('#copy');
  await popup.waitForFunction(() => document.getElementById('copied').textContent || /copy failed/.test(document.getElementById('status').textContent));
  assert.equal(await popup.locator('#status').innerText().then((t) => (/copy failed/.test(t) ? t : '')), '');
  assert.match(await popup.locator('#copied').innerText(), /^copied [\d,]+ characters$/);
  await popup.setViewportSize({ width: 480, height: 640 });
  await popup.screenshot({ path: join(ARTIFACTS, 'extension-popup.png') });
  await popup.evaluate(() => {
    const area = document.createElement('textarea');
    area.id = 'paste-here';
    document.body.append(area);
  });
  await popup.bringToFront();
  await popup.focus('#paste-here');
  await popup.keyboard.press('Control+V');
  const pasted = await popup.inputValue('#paste-here');
  assert.equal(pasted, `Context for: which checkpoint tools move the watermark?\n\n${results}`);
  assert.deepEqual(errors, []);
  await popup.close();
});

test('popup: the index is restored from storage when the popup opens again; a page can be removed', async () => {
  const { popup, errors } = await openPopup();
  assert.match(await popup.locator('#summary').innerText(), /^2 pages, \d+ chunks/);
  // Restored (Index.deserialize) without re-reading or re-indexing the pages.
  assert.equal(await popup.evaluate(() => document.body.dataset.index), 'restored');
  const saved = await popup.evaluate(async () => (await chrome.storage.local.get('index')).index);
  assert.equal(saved.ids.length, 2);
  assert.equal(saved.embedder.kind, 'minilm');
  await popup.fill('#question', 'applyWatermark checkpoint tools');
  await popup.click('#search');
  await popup.locator('#answer').waitFor({ state: 'visible' });
  assert.match(await popup.locator('#results').innerText(), /^\[1\] condense (README|architecture) § /);

  await popup.click('#pages-box summary');
  await popup.locator('#pages li', { hasText: 'condense architecture' }).locator('button').click();
  await popup.waitForFunction(() => document.getElementById('page-count').textContent === '1');
  await popup.click('#search');
  const results = await popup.locator('#results').innerText();
  assert.doesNotMatch(results, /condense architecture §/);
  assert.deepEqual(errors, []);
  await popup.close();
});

test('popup: "Add this page" reads the last web page the user was on', async () => {
  const tab = await ext.context.newPage();
  await tab.goto(`${site.url}/architecture.html`);
  await tab.bringToFront();
  const { popup, errors } = await openPopup();
  await popup.click('#add-current');
  await popup.waitForFunction(() => document.getElementById('page-count').textContent === '2', null, { timeout: 240_000 });
  assert.match(await popup.locator('#status').innerText(), /^added “condense architecture” · \d+ chunks$/);
  assert.deepEqual(errors, []);
  await popup.close();
});

test('context menu path: the service worker reads, stores and indexes a page; the popup opens on it', async () => {
  const tab = await ext.context.newPage();
  await tab.goto(`${site.url}/readme.html`);
  // The page's tab id, as the extension sees it.
  const url = tab.url();
  const tabId = await ext.worker.evaluate(async (u) => (await chrome.tabs.query({})).find((t) => t.url === u).id, url);
  // Remove it first (the earlier tests indexed it), then add it the menu's way.
  const { popup: first } = await openPopup();
  await first.click('#pages-box summary');
  await first.locator('#pages li', { hasText: 'condense README' }).locator('button').click();
  await first.waitForFunction(() => document.getElementById('page-count').textContent === '1');
  const chunksBefore = Number(/(\d+) chunks/.exec(await first.locator('#summary').innerText())[1]);
  await first.close();
  const added = await ext.worker.evaluate((id) => self.condenseAddTab(id), tabId);
  assert.equal(added.url, url);
  assert.equal(added.embedder, 'minilm');
  assert.equal(added.note, null);
  assert.ok(added.chunks > chunksBefore, `the worker's index has ${added.chunks} chunks, ${chunksBefore} before`);
  // Indexed in the worker: the saved index has the page before any popup opens.
  const saved = await ext.worker.evaluate(async () => (await chrome.storage.local.get('index')).index.ids);
  assert.ok(saved.includes(url), 'the worker saved the index with the new page');

  const { popup, errors } = await openPopup();
  assert.equal(await popup.evaluate(() => document.body.dataset.index), 'restored');
  assert.equal(await popup.locator('#page-count').innerText(), '2');
  assert.match(await popup.locator('#summary').innerText(), new RegExp(`^2 pages, ${added.chunks} chunks`));
  await popup.fill('#question', 'applyWatermark checkpoint tools');
  await popup.click('#search');
  await popup.locator('#answer').waitFor({ state: 'visible' });
  const inPopup = await popup.locator('#results').innerText();
  assert.match(inPopup, /condense README § /);

  // The worker's query service, asked by the popup (chrome.runtime.sendMessage): the same
  // results, computed in the worker from the saved index.
  const reply = await popup.evaluate((q) => chrome.runtime.sendMessage({ to: 'condense', op: 'query', question: q }), 'applyWatermark checkpoint tools');
  assert.equal(reply.ok, true, JSON.stringify(reply));
  assert.equal(reply.value.computedIn, 'service-worker');
  assert.equal(reply.value.text, inPopup);
  assert.ok(reply.value.results.length >= 1 && reply.value.results[0].score > 0);
  const bad = await popup.evaluate(() => chrome.runtime.sendMessage({ to: 'condense', op: 'query', question: 42 }));
  assert.deepEqual([bad.ok, bad.error.message], [false, 'expected a question']);
  assert.deepEqual(errors, []);
  await popup.close();
});

test('content script: "Ask your pages" imports the package into the page, searches it there and asks the worker', async () => {
  const tab = await ext.context.newPage();
  const tabErrors = watchErrors(tab);
  await tab.goto(`${site.url}/architecture.html?ask`); // a URL of its own: other tabs show this page too
  const tabId = await ext.worker.evaluate(async (u) => (await chrome.tabs.query({})).find((t) => t.url === u).id, tab.url());
  const question = 'which checkpoint tools move the watermark?';
  const r = await ext.worker.evaluate(([id, q]) => self.condenseAskInTab(id, q), [tabId, question]);
  assert.equal(r.question, question);
  // This page: indexed and queried by condense inside the content script.
  assert.equal(r.thisPage.computedIn, 'content-script');
  assert.match(r.thisPage.version, /^\d+\.\d+\.\d+/);
  assert.ok(r.thisPage.returned >= 1 && r.thisPage.returned <= 3, JSON.stringify(r.thisPage));
  assert.match(r.thisPage.text, /^\[1\] condense architecture § /);
  assert.doesNotMatch(r.thisPage.text, /zebra-nav-token/);
  // The saved pages: the worker's answer, relayed by the content script.
  assert.equal(r.savedPages.computedIn, 'service-worker');
  assert.match(r.savedPages.text, /^\[1\] condense (README|architecture) § /);
  // Both shown in the page's overlay (an open shadow root).
  const overlay = tab.locator('#condense-overlay');
  assert.equal(await overlay.locator('h2').innerText(), `condense: “${question}”`);
  assert.equal(await overlay.locator('#here pre').innerText(), r.thisPage.text);
  assert.equal(await overlay.locator('#saved pre').innerText(), r.savedPages.text);
  assert.match(await overlay.locator('#saved .meta').innerText(), /computed in the service worker$/);
  await tab.setViewportSize({ width: 1000, height: 720 });
  await tab.screenshot({ path: join(ARTIFACTS, 'extension-content.png') });
  // Injected again (a second question): the script is loaded once, the overlay replaced.
  const again = await ext.worker.evaluate(([id, q]) => self.condenseAskInTab(id, q), [tabId, 'applyWatermark']);
  assert.equal(again.thisPage.computedIn, 'content-script');
  assert.equal(await tab.locator('#condense-overlay').count(), 1);
  await tab.locator('#condense-overlay button').click();
  assert.equal(await tab.locator('#condense-overlay').count(), 0);
  assert.deepEqual(tabErrors, []);
  await tab.close();
});

test('MiniLM (the default) finds a note with no word in common; the lexical embedder chosen in the popup does not; back to MiniLM with progress; the worker follows', async () => {
  // The ten how-to notes stored as pages (the index of the earlier tests dropped): a question
  // with no word in common with its note, which only MiniLM finds.
  const notes = JSON.parse(readFileSync(join(ROOT, 'www', 'samples', 'notes.json'), 'utf8'));
  const docs = Object.fromEntries(notes.map((n, k) => {
    const url = `${site.url}/notes/${n.id}.html`;
    return [url, { id: url, url, title: n.path, text: n.text, added: k }];
  }));
  await ext.worker.evaluate(async (d) => {
    await chrome.storage.local.remove('index');
    await chrome.storage.local.set({ docs: d });
  }, docs);
  const question = 'my laptop is overheating';
  const answer = 'Cooling a notebook computer';

  const { popup, errors } = await openPopup();
  assert.match(await popup.locator('#summary').innerText(), /^10 pages, 10 chunks · condense \S+ · minilm$/);
  await popup.fill('#question', question);
  await popup.press('#question', 'Enter');
  await popup.waitForFunction((a) => document.getElementById('results').textContent.startsWith(`[1] ${a}`), answer, { timeout: 30_000 });
  assert.match(await popup.locator('#results').innerText(), new RegExp(`^\\[1\\] ${answer} \\((0\\.\\d\\d|1\\.00)\\)\\n`));
  await popup.screenshot({ path: join(ARTIFACTS, 'extension-minilm.png') });
  // The worker (default setting): MiniLM too, on the popup's saved index.
  const r = await ext.worker.evaluate((q) => self.condenseQuery(q), question);
  assert.equal(r.embedder, 'minilm');
  assert.equal(r.results[0].docId, `${site.url}/notes/notebook-heat.html`);

  // The lexical embedder: instant, the index rebuilt, the setting saved; it misses the note.
  await popup.selectOption('#embedder', 'lexical');
  await popup.waitForFunction(() => /with lexical/.test(document.getElementById('status').textContent), null, { timeout: 30_000 });
  assert.match(await popup.locator('#summary').innerText(), /^10 pages, 10 chunks · condense \S+ · lexical$/);
  assert.equal((await popup.evaluate(async () => (await chrome.storage.local.get('settings')))).settings.embedder, 'lexical');
  await popup.press('#question', 'Enter');
  await popup.waitForFunction((a) => !document.getElementById('results').textContent.startsWith(`[1] ${a}`), answer, { timeout: 30_000 });
  assert.doesNotMatch((await popup.locator('#results').innerText()).split('\n')[0], new RegExp(answer));

  // Back to MiniLM: loaded again with the progress bar, the index rebuilt.
  await popup.evaluate(() => {
    window.progress = [];
    const bar = document.getElementById('progress');
    new MutationObserver(() => window.progress.push([bar.hidden, bar.value])).observe(bar, { attributes: true });
  });
  await popup.selectOption('#embedder', 'minilm');
  await popup.waitForFunction(() => /^index built with minilm · \d+ chunks$/.test(document.getElementById('status').textContent), null, { timeout: 240_000 });
  const seen = await popup.evaluate(() => window.progress);
  assert.ok(seen.some(([hidden, v]) => !hidden && v > 0 && v < 0.9), `no download progress: ${JSON.stringify(seen)}`);
  assert.ok(seen.some(([hidden, v]) => !hidden && v === 1), `the bar never reached 1: ${JSON.stringify(seen)}`);
  const saved = await popup.evaluate(async () => (await chrome.storage.local.get(['index', 'settings'])));
  assert.equal(saved.index.embedder.kind, 'minilm');
  assert.equal(saved.settings.embedder, 'minilm');
  assert.deepEqual(errors, []);
  await popup.close();
});

test('MiniLM that cannot load (its model file missing): the lexical embedder stands in, the popup and the worker say why', async () => {
  // The same extension without its model file: the engine is there, so MiniLM stays the default.
  const brokenDir = mkdtempSync(join(tmpdir(), 'condense-ext-broken-'));
  cpSync(extDir, brokenDir, { recursive: true });
  rmSync(join(brokenDir, 'condense', 'models', 'model.onnx'));
  const broken = await launchWithExtension(brokenDir);
  try {
    const popup = await broken.context.newPage();
    // Chromium logs the missing file's failed fetch: the only error expected.
    const errors = watchErrors(popup, { ignore: [/ERR_FILE_NOT_FOUND|status of 404|Failed to load resource/] });
    await popup.goto(`chrome-extension://${broken.extensionId}/popup.html`);
    await popup.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
    assert.equal(await popup.evaluate(() => document.body.dataset.fallback), 'lexical');
    assert.match(await popup.locator('#status').innerText(), /^MiniLM could not load \(.+\): using the lexical embedder$/);
    assert.equal(await popup.locator('#status').isVisible(), true);
    assert.equal(await popup.inputValue('#embedder'), 'lexical');
    assert.match(await popup.locator('#summary').innerText(), /^0 pages, 0 chunks · condense \S+ · lexical$/);
    await popup.screenshot({ path: join(ARTIFACTS, 'extension-fallback.png') });
    // The worker answers on the lexical embedder and carries the same note.
    const r = await broken.worker.evaluate(() => self.condenseQuery('anything'));
    assert.equal(r.embedder, 'lexical');
    assert.match(r.note, /^MiniLM could not load \(.+\): using the lexical embedder$/);
    assert.deepEqual(errors, []);
  } finally {
    await broken.close();
    rmSync(brokenDir, { recursive: true, force: true });
  }
});
