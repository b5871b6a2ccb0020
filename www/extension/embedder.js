// The embedder of the extension's index, one place for the popup and the service worker: the
// lexical embedder (the default: instant, no download) or MiniLM (semantic: the engine's wasm and
// the model, ~30 MB, loaded from the extension's own files under condense/ on every popup open
// and service-worker start, and a few chunks per second to index). The choice is a setting in
// chrome.storage.local; a saved index built by another embedder is rebuilt from the stored pages
// (library.js compares identities).
//
// `condense` is the package's API: the module namespace of condense/browser.js (popup) or what
// init() of condense/manual.js resolved to (service worker, content script).
export const KINDS = ['lexical', 'minilm'];

export async function embedderKind() {
  const kind = (await chrome.storage.local.get('settings')).settings?.embedder;
  return KINDS.includes(kind) ? kind : 'lexical';
}

export async function setEmbedderKind(kind) {
  if (!KINDS.includes(kind)) throw new Error(`unknown embedder ${kind}`);
  const settings = (await chrome.storage.local.get('settings')).settings ?? {};
  await chrome.storage.local.set({ settings: { ...settings, embedder: kind } });
}

/** The embedder of that kind; `onProgress` receives loadEmbedder's progress (MiniLM only). */
export async function getEmbedder(condense, kind, onProgress) {
  return kind === 'minilm' ? condense.loadEmbedder(onProgress ? { onProgress } : undefined) : condense.lexicalEmbedder();
}
