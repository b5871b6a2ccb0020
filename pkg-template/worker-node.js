// The worker_threads worker that createWorker() starts in Node.
import { parentPort } from 'node:worker_threads';
import * as api from './node.js';
import { serve } from './worker-core.js';

serve(api, {
  post: (message, transfer) => parentPort.postMessage(message, transfer ?? []),
  listen: (handler) => parentPort.on('message', handler),
});
parentPort.postMessage({ ready: true });
