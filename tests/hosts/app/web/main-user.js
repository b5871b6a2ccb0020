// The page with a user-written module worker (my-worker.js) besides createWorker().
import { onMainThread, viaCreateWorker, report, request } from './checks.js';

async function userWorker() {
  // The user's own module worker that imports the package (my-worker.js).
  const worker = new Worker(new URL('./my-worker.js', import.meta.url), { type: 'module' });
  const answer = await new Promise((resolve, reject) => {
    worker.onmessage = (e) => (e.data === 'ready' ? worker.postMessage(request.messages) : resolve(e.data));
    worker.onerror = (e) => reject(new Error(`my-worker.js failed: ${e.message}`));
  });
  worker.terminate();
  return answer;
}

report((async () => ({ main: onMainThread(), userWorker: await userWorker(), worker: await viaCreateWorker() }))());
