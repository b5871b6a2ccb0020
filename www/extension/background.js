// The service worker. It runs condense itself through condense/manual.js (the package's entry
// without top-level await, which service workers forbid; init() fetches the wasm from the
// extension's files, allowed by the manifest's 'wasm-unsafe-eval'):
//   - the context-menu entry "Add this page to condense" reads the page, stores it and indexes it
//     here, so the popup opens on an index that already has it;
//   - the context-menu entry "Ask your pages about “…”" injects content.js into the tab, which
//     searches the page itself (the package in the content script) and asks this worker;
//   - a query service on chrome.runtime messages, `{to: 'condense', op: 'query', question,
//     options?}` → `{ok, value: {text, results, stats, queryKind, embedder, note, version,
//     computedIn}}` (`note`: why the lexical embedder stands in for MiniLM, or null)
//     or `{ok: false, error: {code, path, message}}`, over the saved index of the stored pages.
// The worker keeps no index between calls (it may be stopped any time): each call opens the saved
// one (library.js), so the popup and the worker never hold diverging copies.
import { init } from './condense/manual.js';
import * as engineGlue from './condense/condense_embed.js';
import { embedderKind, embedderOrFallback } from './embedder.js';
import { readablePage } from './extract.js';
import { asDocument, openIndex, saveIndex } from './library.js';
import * as store from './store.js';

chrome.runtime.onInstalled.addListener(() => {
  chrome.contextMenus.create({ id: 'condense-add-page', title: 'Add this page to condense', contexts: ['page'] });
  chrome.contextMenus.create({ id: 'condense-ask', title: 'Ask your pages about “%s”', contexts: ['selection'] });
});

/**
 * The package and the chosen embedder (loaded once per kind while the worker lives); `note` says
 * why the lexical embedder stands in when MiniLM cannot load (tried again at the next start).
 */
const embedders = {};
async function engine() {
  const condense = await init();
  const kind = await embedderKind();
  embedders[kind] ??= embedderOrFallback(condense, kind).catch((e) => { delete embedders[kind]; throw e; });
  const { embedder, note } = await embedders[kind];
  return { condense, embedder, note };
}

/** One call at a time: every call reads and may write the saved index. */
let queue = Promise.resolve();
function serial(work) {
  const run = queue.then(work, work);
  queue = run.catch(() => {});
  return run;
}

/** Reads a tab's page, stores it and adds it to the saved index; `{url, chunks, embedder}` or null. */
async function addTab(tabId) {
  const [{ result }] = await chrome.scripting.executeScript({ target: { tabId }, func: readablePage });
  if (!result?.text) return null;
  return serial(async () => {
    const { condense, embedder, note } = await engine();
    // The index of the pages stored so far, then this page (re-read when it was there already).
    const { index } = await openIndex(condense, embedder, await store.docs());
    try {
      const doc = { id: result.url, url: result.url, title: result.title, text: result.text, added: Date.now() };
      const docs = await store.putDoc(doc);
      if (index.get(doc.id)) index.remove([doc.id]);
      index.add([asDocument(doc)]);
      await saveIndex(index, docs, embedder);
      await chrome.action.setBadgeText({ tabId, text: '+' });
      return { url: result.url, chunks: index.chunks, embedder: embedder.identity().kind, note };
    } finally {
      index.free();
    }
  });
}

/** The query service: compressed results over the saved pages, computed here. */
function ask(question, options) {
  if (typeof question !== 'string' || !question.trim()) throw new Error('expected a question');
  return serial(async () => {
    const { condense, embedder, note } = await engine();
    const { index } = await openIndex(condense, embedder, await store.docs());
    try {
      const out = condense.query(index, question, { topN: 5, format: 'compact', ...options });
      return {
        text: out.text,
        results: out.results.map((r) => ({ docId: r.docId, path: r.path, headerPath: r.headerPath, score: r.score })),
        stats: out.stats,
        queryKind: out.queryKind,
        embedder: embedder.identity().kind,
        note,
        version: condense.version(),
        computedIn: 'service-worker',
      };
    } finally {
      index.free();
    }
  });
}

/** Injects content.js and asks from the tab: the page searched there, the saved pages here. */
async function askInTab(tabId, question) {
  await chrome.scripting.executeScript({ target: { tabId }, files: ['content.js'] });
  const [{ result }] = await chrome.scripting.executeScript({
    target: { tabId }, func: (q) => self.condenseAsk(q), args: [question],
  });
  return result;
}

// What the menu entries do, reachable by the end-to-end tests and bench/embed_footprint_chromium.mjs
// (with the engine's wasm memory in bytes, null before MiniLM is loaded).
self.condenseAddTab = addTab;
self.condenseQuery = ask;
self.condenseAskInTab = askInTab;
self.condenseEngineMemory = () => {
  try {
    return engineGlue.Model.memoryBytes();
  } catch {
    return null;
  }
};

chrome.contextMenus.onClicked.addListener((info, tab) => {
  if (!tab?.id) return;
  const work = info.menuItemId === 'condense-add-page' ? addTab(tab.id)
    : info.menuItemId === 'condense-ask' ? askInTab(tab.id, info.selectionText ?? '')
      : null;
  work?.catch((e) => console.warn('condense:', e?.message ?? e));
});

chrome.runtime.onMessage.addListener((message, _sender, reply) => {
  if (message?.to !== 'condense') return false;
  const work = message.op === 'query'
    ? Promise.resolve().then(() => ask(message.question, message.options))
    : Promise.reject(new Error(`unknown op ${message.op}`));
  work.then(
    (value) => reply({ ok: true, value }),
    (e) => reply({ ok: false, error: { code: e?.code ?? 'error', path: e?.path ?? '', message: e?.message ?? String(e) } }),
  );
  return true; // the reply comes later
});
