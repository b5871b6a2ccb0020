// The popup: keeps an Index over the pages the user added, answers a question with compressed
// results (condense's query) and copies them as context for an LLM. The package is bundled
// under ./condense/ by scripts/build-extension; its wasm loads from the extension's own files
// (instantiateStreaming, allowed by the manifest's 'wasm-unsafe-eval'). The popup uses the
// package's main browser entry (top-level await is allowed in pages); the service worker and the
// content script use condense/manual.js (background.js, content.js).
import * as condense from './condense/browser.js';
import { embedderKind, embedderOrFallback, setEmbedderKind } from './embedder.js';
import { readablePage } from './extract.js';
import { indexPages, openIndex, saveIndex } from './library.js';
import * as store from './store.js';

const { query, version, CondenseError } = condense;

const $ = (id) => document.getElementById(id);
const num = (n) => Number(n).toLocaleString('en-US');
const errorText = (e) => (e instanceof CondenseError ? `${e.code} at ${e.path || '(input)'}: ${e.reason}` : e?.message ?? String(e));
const READABLE = /^(https?|file):/;

let embedder;
let index;
let docs = {};
let lastContext = '';

function status(text, bad = false) {
  $('status').textContent = text;
  $('status').className = bad ? 'bad' : 'muted';
}

function render() {
  const list = Object.values(docs).sort((a, b) => b.added - a.added);
  $('summary').textContent = `${list.length} page${list.length === 1 ? '' : 's'}, ${num(index?.chunks ?? 0)} chunks · condense ${version()} · ${embedder.identity().kind}`;
  $('page-count').textContent = list.length;
  $('pages').innerHTML = '';
  for (const d of list) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = d.url;
    a.target = '_blank';
    a.textContent = d.title;
    const meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = ` ${num(d.text.length)} chars`;
    const rm = document.createElement('button');
    rm.textContent = '×';
    rm.title = 'Remove from the index';
    rm.onclick = () => removePage(d.id);
    li.append(a, meta, rm);
    $('pages').append(li);
  }
  const empty = list.length === 0;
  $('question').disabled = empty;
  $('search').disabled = empty;
  $('question').placeholder = empty ? 'Add a page first' : 'Ask your pages…';
}

/** Runs `work(onFraction)` with the progress bar shown. */
async function withProgress(work) {
  const bar = $('progress');
  bar.hidden = false;
  bar.value = 0;
  try {
    return await work((f) => { bar.value = f; });
  } finally {
    bar.hidden = true;
  }
}

/** Adds documents to the index, one at a time, with the progress bar. */
const addToIndex = (list) => withProgress((onFraction) => indexPages(index, list, onFraction));
const save = () => saveIndex(index, docs, embedder);

/** The saved index when it was built by this embedder (brought up to date), else a new one. */
async function open() {
  index?.free();
  const opened = await withProgress((onFraction) => openIndex(condense, embedder, docs, { onFraction, onStatus: (t) => status(t) }));
  index = opened.index;
  document.body.dataset.index = opened.how;
}

/**
 * The share of MiniLM's three files (engine, model, tokenizer) downloaded: by bytes when every
 * file has told its size, else by files begun (the extension's own files come without a
 * Content-Length).
 */
const downloaded = (files) => (files.length === 3 && files.every((f) => f.total)
  ? files.reduce((n, f) => n + f.loaded, 0) / files.reduce((n, f) => n + f.total, 0)
  : files.filter((f) => f.loaded > 0).length / 3);

/**
 * Loads the chosen embedder (MiniLM: engine and model files, with the progress bar: the last
 * tenth is compiling): `{embedder, note}`, the note saying why the lexical embedder stands in
 * when MiniLM cannot load.
 */
async function loadChosenEmbedder(kind) {
  if (kind === 'lexical') return embedderOrFallback(condense, kind);
  status('loading MiniLM…');
  const files = {};
  const t = performance.now();
  // A failed file ends the load while the others may still report progress: once it has
  // settled, progress must not overwrite the status (the fallback note).
  let settled = false;
  const loaded = await withProgress((onFraction) => embedderOrFallback(condense, kind, (p) => {
    if (settled) return;
    if (p.phase === 'load') {
      status('compiling the model…');
      return onFraction(p.loaded === 0 ? 0.9 : 1);
    }
    files[p.file] = p;
    onFraction(0.9 * downloaded(Object.values(files)));
  }));
  settled = true;
  if (loaded.note) {
    status(loaded.note, true);
    document.body.dataset.fallback = 'lexical';
  } else {
    status(`MiniLM loaded in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    delete document.body.dataset.fallback;
  }
  return loaded;
}

/** The embedder choice: saved as a setting; the index is rebuilt with the new embedder. */
async function switchEmbedder(kind) {
  $('embedder').disabled = true;
  try {
    const next = await loadChosenEmbedder(kind);
    if (next.note) throw new Error(next.note);
    await setEmbedderKind(kind);
    embedder = next.embedder;
    await open();
    render();
    status(`index ${document.body.dataset.index} with ${kind} · ${num(index.chunks)} chunks`);
  } catch (e) {
    $('embedder').value = embedder.identity().kind;
    status(errorText(e), true);
  } finally {
    $('embedder').disabled = false;
  }
}

async function readTab(tab) {
  const [{ result }] = await chrome.scripting.executeScript({ target: { tabId: tab.id }, func: readablePage });
  if (!result?.text) throw new Error(`no readable text on ${tab.url}`);
  return { id: result.url, url: result.url, title: result.title, text: result.text, added: Date.now() };
}

async function addTabs(tabs) {
  const added = [];
  const failed = [];
  for (const tab of tabs) {
    try {
      const doc = await readTab(tab);
      docs = await store.putDoc(doc);
      added.push(doc);
    } catch (e) {
      failed.push(`${tab.title || tab.url}: ${e.message}`);
    }
  }
  if (added.length) {
    await addToIndex(added);
    await save();
  }
  render();
  const chunks = num(index.chunks);
  status(failed.length
    ? `added ${added.length}, could not read ${failed.length} (${failed.join('; ')})`
    : `added ${added.map((d) => `“${d.title}”`).join(', ')} · ${chunks} chunks`, failed.length > 0 && !added.length);
}

/** The current page: the active tab; when the popup itself is open in a tab, the last web page used. */
async function currentPage() {
  const [active] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  if (active && READABLE.test(active.url ?? '')) return active;
  const tabs = (await chrome.tabs.query({})).filter((t) => READABLE.test(t.url ?? ''));
  tabs.sort((a, b) => (b.lastAccessed ?? 0) - (a.lastAccessed ?? 0));
  return tabs[0] ?? null;
}

async function removePage(id) {
  docs = await store.removeDoc(id);
  if (index.get(id)) index.remove([id]);
  await save();
  render();
  status('removed');
}

async function showChooser() {
  const tabs = (await chrome.tabs.query({})).filter((t) => READABLE.test(t.url ?? ''));
  $('tabs').innerHTML = '';
  for (const t of tabs) {
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = t.id;
    box.checked = !docs[t.url.replace(/#.*$/, '')];
    label.append(box, ` ${t.title || t.url}`);
    label.title = t.url;
    $('tabs').append(label);
  }
  if (!tabs.length) $('tabs').textContent = 'No web page is open.';
  $('chooser').hidden = false;
}

function ask(e) {
  e?.preventDefault();
  const question = $('question').value.trim();
  if (!question) return;
  try {
    const t = performance.now();
    const out = query(index, question, { topN: 5, format: 'compact' });
    const ms = performance.now() - t;
    const s = out.stats;
    $('answer').hidden = false;
    $('results').textContent = out.text || '(no result above minScore: try other words)';
    $('stats').textContent = `${s.candidates} candidates → ${s.returned} results · ${num(s.tokensBefore)} → ${num(s.tokensAfter)} tokens (${s.reductionPercent}% less) · ${out.queryKind} · ${ms.toFixed(1)} ms`;
    lastContext = out.results.length ? `Context for: ${question}\n\n${out.text}` : '';
    $('copy').disabled = !lastContext;
    $('copied').textContent = '';
  } catch (err) {
    status(errorText(err), true);
  }
}

async function copy() {
  await navigator.clipboard.writeText(lastContext);
  $('copied').textContent = `copied ${num(lastContext.length)} characters`;
}

async function main() {
  const kind = await embedderKind();
  $('embedder').value = kind;
  const loaded = await loadChosenEmbedder(kind);
  embedder = loaded.embedder;
  docs = await store.docs();
  await open();
  render();
  if (loaded.note) {
    // The lexical embedder stands in: the choice shows it (the setting stays, MiniLM is tried again next time).
    $('embedder').value = 'lexical';
    status(loaded.note, true);
  }
  $('embedder').onchange = () => switchEmbedder($('embedder').value);
  $('add-current').disabled = false;
  $('choose').disabled = false;
  $('add-current').onclick = async () => {
    const tab = await currentPage();
    if (!tab) return status('no web page to read in this window', true);
    await addTabs([tab]);
  };
  $('choose').onclick = showChooser;
  $('chooser-close').onclick = () => { $('chooser').hidden = true; };
  $('add-selected').onclick = async () => {
    const ids = [...$('tabs').querySelectorAll('input:checked')].map((b) => Number(b.value));
    $('chooser').hidden = true;
    const tabs = (await chrome.tabs.query({})).filter((t) => ids.includes(t.id));
    await addTabs(tabs);
  };
  $('ask').onsubmit = ask;
  $('copy').onclick = () => copy().catch((e) => status(`copy failed: ${e.message}`, true));
  $('question').focus();
  document.body.dataset.ready = 'true';
}

main().catch((e) => status(errorText(e), true));
