// Memory of an index in the browser (bench/browser.mjs drives it). Loads the package's glue
// itself (what pkg/browser.js does) to reach the wasm instance's memory.
import init, * as glue from '../../pkg/condense.js';
import { wrap } from '../../pkg/common.js';

const wasm = await init({ module_or_path: new URL('../../pkg/condense_bg.wasm', import.meta.url) });
const { Index, query } = wrap(glue);

async function measure() {
  globalThis.gc?.();
  const m = {
    wasmBytes: wasm.memory.buffer.byteLength,
    jsHeapUsed: performance.memory?.usedJSHeapSize ?? null,
    uaSpecific: null,
  };
  if (globalThis.crossOriginIsolated && performance.measureUserAgentSpecificMemory) {
    const r = await performance.measureUserAgentSpecificMemory();
    m.uaSpecific = r.bytes;
    m.uaBreakdown = r.breakdown.filter((b) => b.bytes > 0).map((b) => `${b.types.join('+') || 'other'} ${b.bytes}`);
  }
  return m;
}

window.bench = {
  /** Indexes the documents at `url` (a JSON array) in batches, then times `questions`. */
  async memory(url, questions) {
    const before = await measure();
    let docs = await (await fetch(url)).json();
    const n = docs.length;
    const index = Index.create();
    let t = performance.now();
    for (let i = 0; i < docs.length; i += 1000) index.add(docs.slice(i, i + 1000));
    const buildMs = performance.now() - t;
    docs = null; // the index keeps its own copy of the texts, in wasm memory
    const after = await measure();
    const times = [];
    for (const q of questions) {
      t = performance.now();
      query(index, q, { denseWeight: 1 });
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const serialized = index.serialize().length;
    return {
      documents: n, chunks: index.chunks, buildMs, before, after, serialized,
      queryP50: times[Math.floor(times.length / 2)], queryP95: times[Math.floor(times.length * 0.95)],
      crossOriginIsolated: globalThis.crossOriginIsolated,
    };
  },
};
document.getElementById('status').textContent = 'ready';
window.benchReady = true;
