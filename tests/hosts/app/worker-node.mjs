// createWorker() in Node (worker_threads): progress events, errors as CondenseError, the main
// thread stays responsive while the worker indexes, and the process exits without terminate().
import { readFileSync } from 'node:fs';
import { createWorker, CondenseError, Index } from 'condense-ctx';

const docs = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const worker = await createWorker({ embedder: 'lexical' });
const index = await worker.createIndex();
const progress = [];
let ticks = 0;
let maxGap = 0;
let last = performance.now();
const timer = setInterval(() => {
  const t = performance.now();
  maxGap = Math.max(maxGap, t - last);
  last = t;
  ticks++;
}, 5);
const t0 = performance.now();
const added = await index.add(docs, { onProgress: (p) => progress.push(p) });
const workerMs = performance.now() - t0;
clearInterval(timer);
// The same work on this thread, for comparison: how long it blocks.
const t1 = performance.now();
const local = Index.create();
local.add(docs);
const blockedMs = performance.now() - t1;
const result = await index.query('How do I stay updated on programming tools?', { topN: 3 });
const errors = [];
for (const f of [() => worker.compress('not messages'), () => worker.compress([], { bogus: 1 }), () => index.query(42)]) {
  try { await f(); errors.push(null); } catch (e) { errors.push({ isCondenseError: e instanceof CondenseError, code: e.code, path: e.path }); }
}
const bytes = await index.serialize();
const again = await worker.loadIndex(bytes);
const sameSize = again.size === index.size;
await index.free();
let afterFree = null;
try { await index.query('x'); } catch (e) { afterFree = { code: e.code, path: e.path }; }
console.log(JSON.stringify({ added, size: index.size, chunks: index.chunks, progress, ticks, maxGap, workerMs, blockedMs, results: result.results.length, errors, bytes: bytes.length, sameSize, afterFree }));
// No terminate(): an idle worker must not keep the process alive.
