// The content script of "Ask your pages about “…”", injected by the service worker
// (chrome.scripting.executeScript({files: ['content.js']})). Content scripts are classic scripts,
// so the package comes in with import() of its manual entry (listed in the manifest's
// web_accessible_resources) and init() loads the wasm from the extension's files. It answers from
// two places and shows both in an overlay on the page:
//   - this page: its readable text indexed here, in the content script (lexical embedder);
//   - the saved pages: the service worker's query service (chrome.runtime.sendMessage).
// self.condenseAsk(question) resolves to what it showed (the end-to-end tests read it).
if (!self.condenseAsk) {
  const load = async () => {
    const [{ init }, { readablePage }] = await Promise.all([
      import(chrome.runtime.getURL('condense/manual.js')),
      import(chrome.runtime.getURL('extract.js')),
    ]);
    return { condense: await init(), readablePage };
  };
  let loaded = null;

  /** The overlay: a closed-off panel (shadow DOM) in the page's corner. */
  function show(question, here, saved) {
    document.getElementById('condense-overlay')?.remove();
    const host = document.createElement('div');
    host.id = 'condense-overlay';
    const root = host.attachShadow({ mode: 'open' });
    root.innerHTML = `<style>
      .panel { position: fixed; right: 12px; bottom: 12px; width: 420px; max-height: 70vh; overflow: auto; z-index: 2147483647;
        background: #fff; color: #1d1d1f; border: 1px solid #c7c7cc; border-radius: 8px; box-shadow: 0 4px 18px rgba(0,0,0,.18);
        font: 13px/1.4 system-ui, sans-serif; padding: .6rem .8rem; }
      h2 { font-size: 14px; margin: 0 0 .3rem; } h3 { font-size: 12.5px; margin: .5rem 0 .1rem; }
      pre { background: #f6f8fa; padding: .4rem; white-space: pre-wrap; word-break: break-word; font-size: 11px; margin: .2rem 0; max-height: 14rem; overflow: auto; }
      .meta { color: #666; font-size: 11.5px; margin: 0; } button { float: right; }
    </style><div class="panel"><button id="close" title="Close">×</button><h2></h2>
      <div id="here"><h3>This page</h3><p class="meta"></p><pre></pre></div>
      <div id="saved"><h3>Your saved pages</h3><p class="meta"></p><pre></pre></div></div>`;
    root.querySelector('h2').textContent = `condense: “${question}”`;
    const fill = (id, meta, text) => {
      root.querySelector(`#${id} .meta`).textContent = meta;
      root.querySelector(`#${id} pre`).textContent = text;
    };
    fill('here', `${here.returned} results · searched here, in the content script (condense ${here.version})`, here.text || '(nothing above minScore)');
    fill('saved', saved.error
      ? `error: ${saved.error}`
      : `${saved.results.length} results · ${saved.embedder}${saved.note ? ` (${saved.note})` : ''} · computed in the ${saved.computedIn.replace('-', ' ')}`,
    saved.error ? '' : saved.text || '(no saved page matches)');
    root.getElementById('close').onclick = () => host.remove();
    document.documentElement.append(host);
  }

  self.condenseAsk = async (question) => {
    loaded ??= load().catch((e) => { loaded = null; throw e; });
    const { condense, readablePage } = await loaded;
    const page = readablePage();
    const index = condense.Index.create();
    let here;
    try {
      index.add([{ id: page.url, path: page.title, text: page.text }]);
      const out = condense.query(index, question, { topN: 3, format: 'compact' });
      here = { text: out.text, returned: out.stats.returned, version: condense.version(), computedIn: 'content-script' };
    } finally {
      index.free();
    }
    const reply = await chrome.runtime.sendMessage({ to: 'condense', op: 'query', question });
    const saved = reply?.ok ? reply.value : { error: reply?.error?.message ?? 'no reply from the service worker' };
    show(question, here, saved);
    return { question, thisPage: here, savedPages: saved };
  };
}
