// The Web Worker that createWorker() starts in browsers (a module worker). It loads the wasm
// without top-level await, so bundlers may emit it in any worker format (Vite's default is iife).
// To bundle it yourself (esbuild), make `condense-ctx/worker` an entry point and pass it:
// createWorker({ worker: new URL('./condense-worker.js', import.meta.url) }).
import init, * as glue from './condense.js';
import { wrap } from './common.js';
import { host } from './browser-host.js';
import { adapters } from './adapters.js';
import { serve } from './worker-core.js';

init({ module_or_path: new URL('./condense_bg.wasm', import.meta.url) }).then(
  () => {
    const api = wrap(glue, host);
    Object.assign(api, adapters(api));
    serve(api, {
      post: (message, transfer) => self.postMessage(message, transfer ?? []),
      listen: (handler) => self.addEventListener('message', (event) => handler(event.data)),
    });
    // The client waits for this before its first request.
    self.postMessage({ ready: true });
  },
  (e) => self.postMessage({ failed: `cannot load condense_bg.wasm: ${e && e.message}` }),
);
