// The demo page: the web build of the package (pkg/browser.js, served from the repo root by
// `node www/serve.mjs`) running compress, Index/query and applyWatermark on bundled samples or
// pasted input. No framework, no build step.
import {
  applyWatermarkJson, compressJson, uncompress, validate, version, CondenseError, Index, query,
  lexicalEmbedder, loadEmbedder,
} from '../pkg/browser.js';

// The embedder of the search index: MiniLM by default, loaded when the page opens with
// loadEmbedder() (the engine's wasm and the model files fetched from pkg/, with progress), or
// lexical (instant, no download) by the "embedder" choice or ?embedder=lexical. The lexical
// embedder serves until MiniLM is loaded, and stays when MiniLM cannot load (a note says why).
let embedder = lexicalEmbedder();
performance.mark('condense:module-ready'); // the package (wasm included) is loaded: bench/browser.mjs

const $ = (id) => document.getElementById(id);
const num = (n) => Number(n).toLocaleString('en-US');
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const errorText = (e) => (e instanceof CondenseError ? `${e.code} at ${e.path || '(input)'}: ${e.reason}` : e.message);
$('tagline').textContent += ` condense ${version()}.`;
const showEmbedder = () => {
  $('embedder-name').textContent = `${embedder.identity().kind} (${embedder.identity().dims} dims)`;
  document.body.dataset.embedder = embedder.identity().kind;
};
showEmbedder();

async function sample(name) {
  const res = await fetch(`./samples/${name}.json`);
  if (!res.ok) throw new Error(`samples/${name}.json: HTTP ${res.status}`);
  return JSON.stringify(await res.json(), null, 1);
}
const cards = (el, items) => {
  el.innerHTML = items.map(([label, value, cls]) => `<div class="card"><b class="${cls || ''}">${value}</b><span>${label}</span></div>`).join('');
};
const kv = (el, obj) => {
  el.innerHTML = Object.entries(obj)
    .map(([k, v]) => `<tr><td>${esc(k)}</td><td>${v === null ? '–' : typeof v === 'number' ? num(Number.isInteger(v) ? v : v.toFixed(3)) : esc(String(v))}</td></tr>`)
    .join('');
};
/** The messages of a document: an array, or a request body with `messages`. */
const messagesOf = (doc) => (Array.isArray(doc) ? doc : doc?.messages ?? []);

/** The visible text of one message (strings, text blocks, tool calls and results, OpenAI tool_calls). */
function messageText(m) {
  const parts = [];
  const block = (b) => {
    if (typeof b === 'string') return parts.push(b);
    if (b.type === 'text') return parts.push(b.text);
    if (b.type === 'thinking') return parts.push(`(thinking) ${b.thinking}`);
    if (b.type === 'tool_use') return parts.push(`→ ${b.name}(${JSON.stringify(b.input)})`);
    if (b.type === 'tool_result') {
      const c = b.content;
      return parts.push(`← ${typeof c === 'string' ? c : Array.isArray(c) ? c.map((x) => x.text ?? `[${x.type}]`).join('\n') : ''}`);
    }
    return parts.push(`[${b.type}]`);
  };
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content)) m.content.forEach(block);
  for (const c of m.tool_calls ?? []) parts.push(`→ ${c.function?.name}(${c.function?.arguments})`);
  return parts.join('\n');
}

// ---------------------------------------------------------------- compress

const ACTION_LABEL = {
  preserved: 'kept verbatim',
  summarized: 'summarized',
  code_split: 'code kept, prose summarized',
  deduped: 'deduplicated',
  merged: 'merged',
  truncated: 'truncated',
};

/** One action per input message from the trace (block decisions folded: the strongest change wins). */
function actionsByMessage(trace, n) {
  const order = ['preserved', 'merged', 'deduped', 'code_split', 'summarized', 'truncated'];
  const out = Array.from({ length: n }, () => null);
  for (const d of trace ?? []) {
    const cur = out[d.index];
    if (!cur || order.indexOf(d.action) > order.indexOf(cur.action)) out[d.index] = d;
  }
  return out;
}

function runCompress() {
  $('c-status').textContent = '';
  try {
    const text = $('c-input').value;
    const options = { ...JSON.parse($('c-options').value || '{}'), trace: true };
    if ($('c-budget').value) options.targetRatio = Number($('c-budget').value);
    const t = performance.now();
    const out = compressJson(text, options);
    const ms = performance.now() - t;
    // The round trip: the verbatim map restores the input exactly.
    const back = uncompress(out.json, out.verbatim);
    const exact = back === text || JSON.stringify(JSON.parse(back)) === JSON.stringify(JSON.parse(text));
    showCompress(JSON.parse(text), JSON.parse(out.json), out, exact);
    $('c-status').textContent = `compress in ${ms.toFixed(1)} ms`;
  } catch (e) {
    $('c-result').hidden = true;
    $('c-status').innerHTML = `<span class="bad">${esc(errorText(e))}</span>`;
  }
}

function showCompress(inDoc, outDoc, out, exact) {
  const before = messagesOf(inDoc);
  const after = messagesOf(outDoc);
  const s = out.stats;
  const v = validate(after);
  const stored = Object.keys(JSON.parse(out.verbatim)).length;
  cards($('c-cards'), [
    ['tokens before → after', `${num(s.tokensBefore)} → ${num(s.tokensAfter)}`],
    ['ratio', `${s.ratio.toFixed(2)}×`],
    ['messages', `${s.messagesBefore} → ${s.messagesAfter}`],
    ['summarized / code split', `${s.summarized} / ${s.codeSplit}`],
    ['deduped / merged', `${s.deduped} / ${s.merged}`],
    ...(s.budget === null ? [] : [['budget', `${num(s.budget)} ${s.fits ? '✓ fits' : '✗ over'}`, s.fits ? 'ok' : 'bad']]),
    ['valid request', v.valid ? 'yes' : `no (${v.violations.length})`, v.valid ? 'ok' : 'bad'],
    ['uncompress round trip', exact ? 'exact' : 'differs', exact ? 'ok' : 'bad'],
  ]);
  const actions = actionsByMessage(out.trace, before.length);
  const kept = actions.filter((a) => a?.action === 'preserved');
  const reasons = {};
  for (const a of kept) reasons[a.reason] = (reasons[a.reason] || 0) + 1;
  $('c-kept').innerHTML = `<b>${kept.length} of ${before.length}</b> messages kept verbatim (${Object.entries(reasons).map(([r, n]) => `${n} ${esc(r)}`).join(', ') || 'none'}); `
    + `the originals of the ${stored} rewritten ones are in <code>verbatim</code>, and <code>uncompress</code> restores the input ${exact ? '<span class="ok">exactly</span>' : '<span class="bad">with differences</span>'}.`;

  // Input message i goes to output message j; a merged message joins the one before it.
  let j = -1;
  const rows = before.map((m, i) => {
    const a = actions[i] ?? { action: 'preserved', reason: '' };
    if (a.action !== 'merged' || j < 0) j++;
    const o = after[j];
    const bt = messageText(m);
    const at = a.action === 'merged' ? `(merged into #${j})` : o ? messageText(o) : '';
    const changed = a.action !== 'preserved';
    return `<tr class="${changed ? 'changed' : 'kept'}" data-action="${a.action}">
      <td>${i}</td><td>${esc(m.role)}</td>
      <td><span class="badge ${a.action}">${ACTION_LABEL[a.action] ?? a.action}</span><span class="reason">${esc(a.reason)}</span></td>
      <td class="text"><div>${esc(bt.slice(0, 700))}</div><span class="size">${num(bt.length)} chars</span></td>
      <td class="text after"><div>${changed ? esc(at.slice(0, 700)) : '<span class="reason">(same)</span>'}</div>${changed && a.action !== 'merged' ? `<span class="size">${num(at.length)} chars</span>` : ''}</td></tr>`;
  });
  $('c-messages').innerHTML = '<tr><th>#</th><th>role</th><th>decision</th><th>before</th><th>after</th></tr>' + rows.join('');
  kv($('c-stats'), s);
  $('c-output').textContent = JSON.stringify(outDoc, null, 1);
  $('c-result').hidden = false;
}

for (const b of document.querySelectorAll('button[data-sample]')) {
  b.onclick = async () => { $('c-input').value = await sample(b.dataset.sample); runCompress(); };
}
$('c-run').onclick = runCompress;
$('c-budget').onchange = () => { if ($('c-input').value) runCompress(); };

// ---------------------------------------------------------------- applyWatermark

const CHECKPOINT = /(^|__)(compress_to_checkpoint|deactivate_augments)$/;

/** Chips for the blocks of one message. */
function chips(m) {
  const size = (x) => { const n = JSON.stringify(x ?? '').length; return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : `${n}`; };
  const out = [];
  if (typeof m.content === 'string') out.push(`<span class="chip text">text ${size(m.content)}</span>`);
  for (const b of Array.isArray(m.content) ? m.content : []) {
    if (b.type === 'tool_use') out.push(`<span class="chip tool_use${CHECKPOINT.test(b.name) ? ' checkpoint' : ''}">${esc(b.name)}()</span>`);
    else if (b.type === 'tool_result') out.push(`<span class="chip tool_result">result ${size(b.content)}</span>`);
    else out.push(`<span class="chip ${esc(b.type)}">${esc(b.type)} ${size(b.text ?? b.thinking)}</span>`);
  }
  for (const c of m.tool_calls ?? []) out.push(`<span class="chip tool_use${CHECKPOINT.test(c.function?.name) ? ' checkpoint' : ''}">${esc(c.function?.name)}()</span>`);
  return out.join('');
}
const timeline = (el, list, markAt) => {
  el.innerHTML = list.map((m, i) => `<li class="${i === markAt ? 'mark' : ''}"><span class="role">${esc(m.role)}</span>${chips(m)}${i === markAt ? ' ◀ watermark' : ''}</li>`).join('');
};

function runWatermark() {
  $('w-status').textContent = '';
  try {
    const text = $('w-input').value;
    const options = JSON.parse($('w-options').value || '{}');
    const state = JSON.parse($('state').value || 'null');
    const t = performance.now();
    const out = applyWatermarkJson(text, state, options);
    const ms = performance.now() - t;
    $('state').value = JSON.stringify(out.state);
    const before = messagesOf(JSON.parse(text));
    const after = messagesOf(JSON.parse(out.json));
    const s = out.stats;
    const v = validate(after);
    cards($('w-cards'), [
      ['watermark', out.state.watermark ? `msg ${s.watermarkIndex}` : 'none', out.state.watermark ? '' : 'bad'],
      ['tokens before → after', `${num(s.tokensBefore)} → ${num(s.tokensAfter)}`],
      ['messages', `${s.messagesBefore} → ${s.messagesAfter}`],
      ['blocks removed', `${s.blocksRemoved}`],
      ['calls / results / thinking', `${s.toolCallsRemoved} / ${s.toolResultsRemoved} / ${s.thinkingRemoved}`],
      ['valid request', v.valid ? 'yes' : `no (${v.violations.length})`, v.valid ? 'ok' : 'bad'],
    ]);
    $('w-warnings').innerHTML = (out.warnings || []).map((w) => `<p class="warn">${esc(w.code)}: ${esc(w.message)}</p>`).join('');
    // The watermark message is the same message on both sides; in the output it sits after the pruned prefix.
    const markAfter = s.watermarkIndex === null ? -1 : after.length - (before.length - s.watermarkIndex);
    timeline($('w-before'), before, s.watermarkIndex);
    timeline($('w-after'), after, markAfter);
    kv($('w-stats'), s);
    $('w-output').textContent = JSON.stringify(JSON.parse(out.json), null, 1);
    $('w-result').hidden = false;
    $('w-status').textContent = `applyWatermark in ${ms.toFixed(2)} ms`;
  } catch (e) {
    $('w-result').hidden = true;
    $('w-status').innerHTML = `<span class="bad">${esc(errorText(e))}</span>`;
  }
}
$('load-agent').onclick = async () => {
  $('w-input').value = await sample('agent-session');
  $('state').value = '{"watermark": null}';
  runWatermark();
};
$('w-run').onclick = runWatermark;

// ---------------------------------------------------------------- Index / query
// The document sets: this repository's own docs, served beside the page, or short notes on
// everyday topics (samples/notes.json), where MiniLM finds answers that share no word with the
// question and the lexical embedder does not.
const DOCS = ['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md', 'pkg-template/README.md'];
let index = null;

async function fetchDocs() {
  if ($('doc-set').value === 'notes') return JSON.parse(await sample('notes'));
  const docs = [];
  for (const path of DOCS) {
    const res = await fetch(`../${path}`);
    if (res.ok) docs.push({ id: path, path, text: await res.text() });
  }
  return docs;
}

const mb = (n) => `${(n / 1048576).toFixed(1)} MB`;

/** Switches the embedder; MiniLM is loaded once (engine + model + tokenizer, with progress). */
let minilm = null;
/** The embedder choice under way (buildIndex waits for it). */
let choosing = Promise.resolve();
/** Whether the MiniLM load under way has failed (its other downloads' progress is then ignored). */
let failed = false;
function chooseEmbedder(kind) {
  choosing = switchEmbedder(kind);
  return choosing;
}
async function switchEmbedder(kind) {
  const bar = $('model-progress');
  $('embedder-choice').disabled = true;
  $('build-index').disabled = true;
  try {
    if (kind === 'minilm') {
      if (!minilm) {
        const files = {};
        const t = performance.now();
        bar.hidden = false;
        bar.value = 0;
        // A failed file ends the load while the others may still report progress: they must
        // not overwrite the fallback note.
        failed = false;
        minilm = await loadEmbedder({
          onProgress: (p) => {
            if (failed) return;
            // Downloading the three files (engine, model, tokenizer) fills 90% of the bar, by
            // bytes once every file has told its size; compiling the model the last tenth.
            if (p.phase === 'download') {
              files[p.file] = p;
              const all = Object.values(files);
              const sized = all.length === 3 && all.every((f) => f.total);
              const share = sized
                ? all.reduce((n, f) => n + f.loaded, 0) / all.reduce((n, f) => n + f.total, 0)
                : all.filter((f) => f.loaded > 0).length / 3;
              bar.value = 0.9 * share;
              $('model-status').textContent = `downloading ${all.map((f) => `${f.file} ${mb(f.loaded)}${f.total ? ` / ${mb(f.total)}` : ''}`).join(', ')}`;
            } else {
              bar.value = p.loaded === 0 ? 0.9 : 1;
              $('model-status').textContent = 'compiling the model…';
            }
          },
        });
        delete document.body.dataset.fallback;
        const info = minilm.loadInfo();
        $('model-status').textContent = `MiniLM loaded in ${((performance.now() - t) / 1000).toFixed(1)} s (model compiled in ${(info.loadMs / 1000).toFixed(1)} s)`;
        bar.hidden = true;
      }
      embedder = minilm;
    } else {
      embedder = lexicalEmbedder();
      $('model-status').textContent = '';
    }
    showEmbedder();
    // An index belongs to its embedder: build it again with the new one.
    if (index) await build();
  } catch (e) {
    // The fallback: the lexical embedder stays, and the note says why MiniLM is not used.
    failed = true;
    bar.hidden = true;
    $('embedder-choice').value = embedder.identity().kind;
    $('model-status').innerHTML = `<span class="bad" id="fallback-note">MiniLM could not load (${esc(errorText(e))}): using the lexical embedder.</span>`;
    document.body.dataset.fallback = 'lexical';
  } finally {
    $('embedder-choice').disabled = false;
    $('build-index').disabled = false;
  }
}

/** Builds the index once the embedder choice under way is settled. */
async function buildIndex() {
  await choosing;
  await build();
}

async function build() {
  $('build-index').disabled = true;
  $('run-query').disabled = true;
  $('index-progress').value = 0;
  $('index-status').textContent = 'fetching…';
  try {
    const docs = await fetchDocs();
    if (!docs.length) throw new Error('no document could be fetched (serve the repository root: node www/serve.mjs)');
    index?.free();
    index = Index.create({ embedder });
    const t = performance.now();
    // One document at a time, yielding between them, so the progress bar moves.
    for (let k = 0; k < docs.length; k++) {
      const doc = docs[k];
      index.add([doc], {
        onProgress: (p) => {
          $('index-progress').value = (k + (p.total ? p.done / p.total : 0)) / docs.length;
          $('index-status').textContent = `${doc.path}: ${p.phase} ${p.done}/${p.total}`;
        },
      });
      $('index-progress').value = (k + 1) / docs.length;
      await new Promise((r) => setTimeout(r, 0));
    }
    $('index-status').textContent = `${index.size} documents, ${index.chunks} chunks in ${(performance.now() - t).toFixed(0)} ms (${embedder.identity().kind})`;
    $('run-query').disabled = false;
  } catch (e) {
    $('index-status').innerHTML = `<span class="bad">${esc(errorText(e))}</span>`;
  } finally {
    $('build-index').disabled = false;
  }
}

function runQuery() {
  try {
    const t = performance.now();
    const out = query(index, $('question').value, JSON.parse($('query-options').value || '{}'));
    const ms = performance.now() - t;
    $('search-result').hidden = false;
    $('search-text').textContent = out.text || '(no result above minScore)';
    const s = out.stats;
    $('search-stats').innerHTML = [
      ['stage', 'left', 'removed'],
      ['candidates', s.candidates, ''],
      ['minScore', s.afterMinScore, s.removedByMinScore],
      ['n-gram near-duplicates', s.afterNgramDedup, s.removedAsNearDuplicate],
      ['semantic dedup', s.afterSemanticDedup, s.removedAsSemanticDuplicate],
      ['maxChunksPerDoc', s.afterPerDocLimit, s.removedByPerDocLimit],
      ['topN', s.returned, s.removedByTopN],
      ['truncated', s.truncated, ''],
      ['est. tokens', `${num(s.tokensBefore)} → ${num(s.tokensAfter)}`, `${s.reductionPercent}%`],
      ['query kind', out.queryKind, `${ms.toFixed(1)} ms`],
    ].map((r, i) => `<tr>${r.map((c) => (i ? `<td>${c}</td>` : `<th>${c}</th>`)).join('')}</tr>`).join('');
  } catch (e) {
    $('search-result').hidden = true;
    $('index-status').innerHTML = `<span class="bad">${esc(errorText(e))}</span>`;
  }
}
$('build-index').onclick = buildIndex;
$('embedder-choice').onchange = () => chooseEmbedder($('embedder-choice').value);
$('doc-set').onchange = () => { if (index) buildIndex(); };
$('run-query').onclick = runQuery;
$('question').onkeydown = (e) => { if (e.key === 'Enter' && !$('run-query').disabled) runQuery(); };

// Links that run a demo on load (screenshots, bench/browser.mjs):
//   ?compress=chat|coding-chat|tool-session-openai   ?watermark=agent   ?search=<question>
//   with ?search: &docs=notes (the notes set); ?embedder=lexical: no MiniLM (loaded by default)
// (?sample=agent|chat&run=watermark|compress, the older form, still works.)
const params = new URLSearchParams(location.search);
if (params.get('sample')) params.set(params.get('run') === 'compress' ? 'compress' : 'watermark', params.get('sample'));
if (params.get('compress')) {
  $('c-input').value = await sample(['chat', 'coding-chat', 'tool-session-openai'].includes(params.get('compress')) ? params.get('compress') : 'chat');
  runCompress();
}
if (params.get('watermark')) {
  $('w-input').value = await sample('agent-session');
  runWatermark();
}
// The default embedder, MiniLM, loads now (the page stays usable meanwhile).
const firstKind = params.get('embedder') === 'lexical' ? 'lexical' : 'minilm';
$('embedder-choice').value = firstKind;
chooseEmbedder(firstKind);
if (params.get('search')) {
  $('question').value = params.get('search');
  if (params.get('docs') === 'notes') $('doc-set').value = 'notes';
  await buildIndex();
  runQuery();
  performance.mark('condense:first-result');
}
window.condenseReady = true;
