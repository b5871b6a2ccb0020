// A cold MiniLM start in the browser (bench/embed_footprint_chromium.mjs drives it): the
// package's browser entry, loadEmbedder(), one page of `?page=` (markdown) indexed, one query.
// Times are from navigation start (performance.now()); the engine's wasm memory is read from its
// glue, which returns the instance the package already made.
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
try {
  const t = {};
  const condense = await import('../../pkg/browser.js');
  t.module = performance.now();
  const embedder = await condense.loadEmbedder();
  t.loaded = performance.now();
  const engine = await import('../../pkg/condense_embed.js');
  const wasm = await engine.default();
  const engineLoaded = wasm.memory.buffer.byteLength;
  const text = await (await fetch(params.get('page'))).text();
  t.fetched = performance.now();
  const index = condense.Index.create({ embedder });
  index.add([{ id: 'page', text }]);
  t.indexed = performance.now();
  const out = condense.query(index, params.get('q'), { topN: 5, minScore: 0 });
  t.first = performance.now();
  window.result = {
    t,
    chunks: index.chunks,
    results: out.results.length,
    engineLoaded,
    engineIndexed: wasm.memory.buffer.byteLength,
    coreIndexed: (await (await import('../../pkg/condense.js')).default()).memory.buffer.byteLength,
    loadMs: embedder.loadInfo().loadMs,
    integerMatmuls: embedder.loadInfo().integerMatmuls,
  };
  $('status').textContent = JSON.stringify(window.result);
} catch (e) {
  window.result = { error: String(e?.stack ?? e) };
  $('status').textContent = window.result.error;
}
