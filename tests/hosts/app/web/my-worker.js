// A module Web Worker written by the user: one import of condense-ctx, as on the main thread.
// The import waits for the wasm (top-level await); messages posted to the worker before that
// can be lost, so the worker says when it is ready.
import { compress, version } from 'condense-ctx';

self.onmessage = (event) => {
  const out = compress(event.data, { recencyWindow: 2 });
  self.postMessage({ version: version(), ratio: out.stats.ratio, messages: out.messages.length });
};
self.postMessage('ready');
