// The embedder of the extension's index, one place for the popup and the service worker: MiniLM
// (semantic; the engine's wasm and the model, ~24 MB, loaded from the extension's own files under
// condense/ on every popup open and service-worker start) by default when the extension carries
// it, or the lexical embedder (instant, no download). The choice is a setting in
// chrome.storage.local; a saved index built by another embedder is rebuilt from the stored pages
// (library.js compares identities). When MiniLM cannot load, the lexical embedder is used and a
// note says why (the popup shows it; the worker's answers carry it).
//
// `condense` is the package's API: the module namespace of condense/browser.js (popup) or what
// init() of condense/manual.js resolved to (service worker, content script).
export const KINDS = ['lexical', 'minilm'];

/** Whether this build of the extension carries MiniLM (scripts/build-extension --no-minilm leaves it out). */
async function hasMiniLM() {
  try {
    const res = await fetch(new URL('./condense/condense_embed_bg.wasm', import.meta.url), { method: 'HEAD' });
    return res.ok;
  } catch {
    return false;
  }
}

export async function embedderKind() {
  const kind = (await chrome.storage.local.get('settings')).settings?.embedder;
  if (KINDS.includes(kind)) return kind;
  return (await hasMiniLM()) ? 'minilm' : 'lexical';
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

/**
 * The embedder of that kind, or the lexical one when MiniLM cannot load: `{embedder, note}`, the
 * note (null when the chosen embedder loaded) saying why the fallback is used.
 */
export async function embedderOrFallback(condense, kind, onProgress) {
  try {
    return { embedder: await getEmbedder(condense, kind, onProgress), note: null };
  } catch (e) {
    if (kind === 'lexical') throw e;
    const why = e?.code ? `${e.code}: ${e.reason ?? e.message}` : e?.message ?? String(e);
    return { embedder: condense.lexicalEmbedder(), note: `MiniLM could not load (${why}): using the lexical embedder` };
  }
}
