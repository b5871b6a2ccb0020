// The demo page: loads the web build of the package (pkg/browser.js, served from the repo root)
// and runs applyWatermark / compress on a pasted or bundled conversation.
import { applyWatermarkJson, compressJson, validate, version, CondenseError, Index, query } from '../pkg/browser.js';

const $ = (id) => document.getElementById(id);
const num = (n) => Number(n).toLocaleString('en-US');
document.querySelector('.sub').textContent += ` (condense ${version()})`;

async function load(name) {
  const res = await fetch(`./samples/${name}.json`);
  $('input').value = JSON.stringify(await res.json(), null, 1);
}
$('load-agent').onclick = () => load('agent-session');
$('load-chat').onclick = () => load('chat');

function table(el, rows) {
  el.innerHTML = rows.map(([k, a, b]) => `<tr><td>${k}</td><td>${a}</td>${b === undefined ? '' : `<td>${b}</td>`}</tr>`).join('');
}

function show(kind, outJson, stats, warnings) {
  const messages = JSON.parse(outJson);
  const list = Array.isArray(messages) ? messages : messages.messages;
  const v = validate(list);
  $('result').hidden = false;
  const sizes = kind === 'watermark'
    ? [['', 'before', 'after'], ['messages', stats.messagesBefore, stats.messagesAfter], ['characters', num(stats.charsBefore), num(stats.charsAfter)], ['est. tokens', num(stats.tokensBefore), num(stats.tokensAfter)]]
    : [['', 'before', 'after'], ['messages', stats.messagesBefore, stats.messagesAfter], ['est. tokens', num(stats.tokensBefore), num(stats.tokensAfter)], ['ratio', '', stats.ratio.toFixed(2)]];
  sizes.push(['valid request', '', v.valid ? '<span class="ok">yes</span>' : `<span class="bad">no (${v.violations.length})</span>`]);
  table($('sizes'), sizes);
  table($('stats'), Object.entries(stats).map(([k, val]) => [k, val === null ? '–' : typeof val === 'number' ? num(val) : String(val)]));
  $('warnings').innerHTML = (warnings || []).map((w) => `<p class="warn">${w.code}: ${w.message}</p>`).join('');
  $('output').textContent = JSON.stringify(messages, null, 1);
}

function run(kind) {
  $('status').textContent = '';
  try {
    const text = $('input').value;
    const options = JSON.parse($('options').value || '{}');
    const t = performance.now();
    if (kind === 'watermark') {
      const out = applyWatermarkJson(text, JSON.parse($('state').value || 'null'), options);
      $('state').value = JSON.stringify(out.state);
      show(kind, out.json, out.stats, out.warnings);
    } else {
      const out = compressJson(text, options);
      show(kind, out.json, out.stats, []);
    }
    $('status').textContent = `${kind} in ${(performance.now() - t).toFixed(1)} ms`;
  } catch (e) {
    $('result').hidden = true;
    $('status').innerHTML = `<span class="bad">${e instanceof CondenseError ? `${e.code} at ${e.path || '(input)'}: ${e.reason}` : e.message}</span>`;
  }
}
$('run-watermark').onclick = () => run('watermark');
$('run-compress').onclick = () => run('compress');

// ---------------------------------------------------------------- search
// The document set: this repository's own docs, served beside the page.
const DOCS = ['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md', 'pkg-template/README.md'];
let index = null;

async function buildIndex() {
  $('index-status').textContent = 'fetching…';
  const docs = [];
  for (const path of DOCS) {
    const res = await fetch(`../${path}`);
    if (res.ok) docs.push({ id: path, path, text: await res.text() });
  }
  index?.free();
  index = Index.create();
  const t = performance.now();
  // Add one document at a time so the progress bar moves between them.
  let done = 0;
  for (const doc of docs) {
    index.add([doc], { onProgress: (p) => { $('index-status').textContent = `${doc.path}: ${p.phase} ${p.done}/${p.total}`; } });
    done++;
    $('index-progress').value = done / docs.length;
    await new Promise((r) => setTimeout(r, 0));
  }
  $('index-status').textContent = `${index.size} documents, ${index.chunks} chunks in ${(performance.now() - t).toFixed(0)} ms`;
  $('run-query').disabled = false;
}

function runQuery() {
  try {
    const t = performance.now();
    const out = query(index, $('question').value, JSON.parse($('query-options').value || '{}'));
    const ms = performance.now() - t;
    $('search-result').hidden = false;
    $('search-text').textContent = out.text || '(no result above minScore)';
    const s = out.stats;
    table($('search-stats'), [
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
    ]);
  } catch (e) {
    $('search-result').hidden = true;
    $('index-status').innerHTML = `<span class="bad">${e instanceof CondenseError ? `${e.code} at ${e.path || '(input)'}: ${e.reason}` : e.message}</span>`;
  }
}
$('build-index').onclick = () => buildIndex();
$('run-query').onclick = () => runQuery();

// ?sample=agent|chat&run=watermark|compress, ?search=question, for screenshots and end-to-end tests.
if (new URLSearchParams(location.search).get('search')) {
  $('question').value = new URLSearchParams(location.search).get('search');
  await buildIndex();
  runQuery();
}

const params = new URLSearchParams(location.search);
if (params.get('sample')) {
  await load(params.get('sample') === 'chat' ? 'chat' : 'agent-session');
  if (params.get('run')) run(params.get('run') === 'compress' ? 'compress' : 'watermark');
}
