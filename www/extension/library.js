// The extension's index over the stored pages, shared by the popup and the service worker: the
// saved index is restored when it was built by the same embedder (pages added or removed since
// are indexed or dropped), otherwise it is rebuilt from the stored pages.
import * as store from './store.js';

/** Embedder identities compared field by field (chrome.storage does not keep key order). */
export const sameIdentity = (a, b) => {
  const keys = [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])];
  return keys.length > 0 && keys.every((k) => a?.[k] === b?.[k]);
};

/** A stored page as a document of the index (its title is the path results show). */
export const asDocument = (d) => ({ id: d.id, path: d.title, text: d.text, metadata: { url: d.url } });

/** Adds pages one at a time (yielding between them); `onFraction(0..1)` follows the work. */
export async function indexPages(index, list, onFraction) {
  for (let k = 0; k < list.length; k++) {
    const d = list[k];
    if (index.get(d.id)) index.remove([d.id]);
    index.add([asDocument(d)], {
      onProgress: (p) => onFraction?.((k + (p.total ? p.done / p.total : 0)) / list.length),
    });
    onFraction?.((k + 1) / list.length);
    await new Promise((r) => setTimeout(r, 0));
  }
}

export function saveIndex(index, docs, embedder) {
  return store.saveIndex(index.serialize(), Object.keys(docs), embedder.identity());
}

/**
 * The index over `docs` (store.docs()) with `embedder`: `{index, how}`, `how` is `restored` (the
 * saved one, brought up to date) or `built` (none saved, or by another embedder). Saves what changed.
 */
export async function openIndex(condense, embedder, docs, { onFraction, onStatus } = {}) {
  const saved = await store.savedIndex();
  const ids = Object.keys(docs);
  if (saved && sameIdentity(saved.embedder, embedder.identity())) {
    try {
      const index = condense.Index.deserialize(saved.bytes, { embedder });
      const missing = ids.filter((id) => !index.get(id));
      const stale = saved.ids.filter((id) => !docs[id] && index.get(id));
      if (stale.length) index.remove(stale);
      if (missing.length) await indexPages(index, missing.map((id) => docs[id]), onFraction);
      if (missing.length || stale.length) await saveIndex(index, docs, embedder);
      return { index, how: 'restored' };
    } catch (e) {
      console.warn('condense: rebuilding the index:', e?.message ?? e);
    }
  }
  const index = condense.Index.create({ embedder });
  if (ids.length) {
    onStatus?.(`indexing ${ids.length} stored pages (${embedder.identity().kind})…`);
    await indexPages(index, Object.values(docs), onFraction);
    await saveIndex(index, docs, embedder);
    onStatus?.('');
  }
  return { index, how: 'built' };
}
