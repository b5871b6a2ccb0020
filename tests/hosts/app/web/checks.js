// The checks of the bundled browser pages (esbuild, Vite): the package on the main thread and
// through createWorker(); main.js and main-user.js run them and leave what they saw in
// `window.__condense` for hosts.test.mjs (or the error in `window.__condenseError`).
import { compress, applyWatermark, prepareRequest, Index, createWorker, CondenseError, version } from 'condense-ctx';
export { request };
import request from '../../fixtures/anthropic-request.json';
import messagesCorpus from './corpus.json';

// 39 long ShareGPT messages as documents, eight times over (distinct ids): enough indexing work
// for the main thread to notice.
const corpus = Array.from({ length: 8 }, (_, k) => messagesCorpus.map((d) => ({ ...d, id: `${d.id}#${k}` }))).flat();

export async function viaCreateWorker() {
  // esbuild does not follow new Worker(new URL(...)): its page passes the worker it bundled.
  const options = window.CONDENSE_WORKER ? { worker: new URL(window.CONDENSE_WORKER, location.href) } : undefined;
  const worker = await createWorker(options);
  const index = await worker.createIndex();
  const progress = [];
  // The main thread must stay responsive while the worker indexes: sample it every 10 ms.
  let maxGap = 0;
  let last = performance.now();
  const timer = setInterval(() => { const t = performance.now(); maxGap = Math.max(maxGap, t - last); last = t; }, 10);
  const t0 = performance.now();
  const added = await index.add(corpus, { onProgress: (p) => progress.push(p) });
  const workerMs = performance.now() - t0;
  clearInterval(timer);
  // The same indexing on the main thread, for comparison: how long it blocks.
  const t1 = performance.now();
  const local = Index.create();
  local.add(corpus);
  const blockedMs = performance.now() - t1;
  local.free();
  const result = await index.query('How do I stay updated on programming tools?', { topN: 3 });
  let error = null;
  try { await worker.compress([{ role: 'user', content: 'x' }], { recencyWindow: 'four' }); } catch (e) {
    error = { isCondenseError: e instanceof CondenseError, code: e.code, path: e.path };
  }
  const prepared = await worker.prepareRequest(JSON.stringify(request));
  await worker.terminate();
  let afterTerminate = null;
  try { await worker.compress([]); } catch (e) { afterTerminate = e.code; }
  return { added, chunks: index.chunks, phases: [...new Set(progress.map((p) => p.phase))], last: progress.at(-1), maxGap, workerMs, blockedMs, results: result.results.length, error, saved: prepared.savings.saved, afterTerminate };
}

export function onMainThread() {
  const c = compress(request.messages, { recencyWindow: 2 });
  const w = applyWatermark(request.messages, null);
  const p = prepareRequest(JSON.stringify(request));
  let error = null;
  try { compress(request.messages, { recencyWindow: -2 }); } catch (e) { error = { isCondenseError: e instanceof CondenseError, code: e.code, path: e.path }; }
  return { version: version(), ratio: c.stats.ratio, watermark: w.state.watermark, saved: p.savings.saved, error };
}

export const report = (promise) => promise.then(
  (r) => { window.__condense = r; document.getElementById('out').textContent = JSON.stringify(r, null, 2); },
  (e) => { window.__condenseError = `${e.name}: ${e.message}\n${e.stack}`; document.getElementById('out').textContent = window.__condenseError; },
);
