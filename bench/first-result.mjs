// condense vs transformers.js + a JS vector store in Node (issue 7, "Measure and report"): install
// size, and time to first result from a cold process: start → package imported → MiniLM loaded →
// N small documents indexed → first query result. Both use the same model file (all-MiniLM-L6-v2
// int8, models/model.onnx; transformers.js reads it from a local folder built here around it,
// remote models off) and the same documents and question. Each run is a fresh `node` process;
// runs alternate between the contenders so machine load hits them alike; medians are reported.
//
//   (cd bench/peers && npm ci)          once: transformers.js + Orama (not in scripts/setup: 478 MB)
//   node bench/first-result.mjs [--runs 3] [--docs 20]       (after scripts/build-pkg)
//
// condense: the package's Node entry (wasm, one thread). transformers.js: onnxruntime-node (native
// CPU backend), with its default thread count and with one intra-op thread, + Orama 3 hybrid
// search (BM25 + vector).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { syntheticCorpus } from './synthetic.mjs';
import { seedDependencies } from '../tests/mcp/app.mjs';

const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const runs = Number(arg('--runs', '3'));
const nDocs = Number(arg('--docs', '20'));
const here = (p) => new URL(p, import.meta.url).pathname;
const pkg = here('../pkg/');
const peers = here('peers/');
if (!existsSync(join(pkg, 'models', 'model.onnx'))) throw new Error('pkg/ with models/ is missing: scripts/build-pkg (after scripts/fetch-models)');
if (!existsSync(join(peers, 'node_modules', '@huggingface', 'transformers'))) throw new Error('bench/peers is not installed: (cd bench/peers && npm ci)');
const out = here('out/');
mkdirSync(out, { recursive: true });

// ------------------------------------------------------------------ inputs
// Small documents: the first two sentences of bench/synthetic.mjs's documents.
const corpus = syntheticCorpus();
const docs = corpus.docs(nDocs).map((d) => ({ id: d.id, text: d.text.split('. ').slice(0, 2).join('. ') }));
const question = corpus.questions(1)[0];
const docsFile = join(out, `first-result-docs-${nDocs}.json`);
writeFileSync(docsFile, JSON.stringify(docs));

// transformers.js's model folder around the same files: config, tokenizer, onnx/model_quantized.onnx (dtype q8).
const modelRoot = join(out, 'tfjs-models');
const modelDir = join(modelRoot, 'all-MiniLM-L6-v2');
mkdirSync(join(modelDir, 'onnx'), { recursive: true });
copyFileSync(join(pkg, 'models', 'model.onnx'), join(modelDir, 'onnx', 'model_quantized.onnx'));
// The shipped tokenizer.json pads to a fixed 128 and truncates at 128; condense turns both off and
// truncates at 256 (docs/design.md, "Embedding parity"): the same here (model_max_length below).
const tokenizer = JSON.parse(readFileSync(join(pkg, 'models', 'tokenizer.json'), 'utf8'));
writeFileSync(join(modelDir, 'tokenizer.json'), JSON.stringify({ ...tokenizer, padding: null, truncation: null }));
writeFileSync(join(modelDir, 'config.json'), JSON.stringify({
  model_type: 'bert', architectures: ['BertModel'], hidden_size: 384, num_attention_heads: 12, num_hidden_layers: 6,
  intermediate_size: 1536, max_position_embeddings: 512, vocab_size: 30522, type_vocab_size: 2, hidden_act: 'gelu',
  layer_norm_eps: 1e-12, pad_token_id: 0,
}));
// Truncation at 256 tokens, as condense's embedder.
writeFileSync(join(modelDir, 'tokenizer_config.json'), JSON.stringify({
  tokenizer_class: 'BertTokenizer', do_lower_case: true, model_max_length: 256, clean_up_tokenization_spaces: true,
  pad_token: '[PAD]', unk_token: '[UNK]', cls_token: '[CLS]', sep_token: '[SEP]', mask_token: '[MASK]',
}));

// ------------------------------------------------------------------ install size
const du = (dir) => {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += du(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
};
const mb = (n) => `${(n / 1048576).toFixed(1)} MB`;
const tmp = mkdtempSync(join(tmpdir(), 'condense-first-result-'));
const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', tmp, pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
const app = join(tmp, 'app');
mkdirSync(app);
writeFileSync(join(app, 'package.json'), '{"name":"app","private":true}');
seedDependencies(app); // the mcp bin's dependencies, offline (tests/mcp/app.mjs)
execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', join(tmp, packed.filename)], { cwd: app, stdio: 'ignore' });
const condenseInstalled = du(join(app, 'node_modules'));
const peerInstalled = du(join(peers, 'node_modules'));
/** The packages of a node_modules folder, biggest first. */
const packages = (dir) => readdirSync(join(dir, 'node_modules'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
  .flatMap((e) => (e.name.startsWith('@') ? readdirSync(join(dir, 'node_modules', e.name)).map((s) => `${e.name}/${s}`) : [e.name]))
  .map((name) => ({ name, size: du(join(dir, 'node_modules', name)) }))
  .sort((a, b) => b.size - a.size);
const peerBiggest = packages(peers);
const peerCount = peerBiggest.length;
// condense-ctx and the dependencies of its mcp bin (never loaded by the library entry).
const condenseCount = packages(app).length;
const entry = join(app, 'node_modules', 'condense-ctx', 'node.js');

// ------------------------------------------------------------------ runs
const contenders = [
  { name: 'condense (wasm, 1 thread) + its Index', cmd: [here('first-result/condense-run.mjs'), entry, docsFile, question] },
  { name: `transformers.js (onnxruntime-node, default threads) + Orama`, cmd: [join(peers, 'transformers-run.mjs'), modelRoot, docsFile, question, '0'] },
  { name: 'transformers.js (onnxruntime-node, 1 thread) + Orama', cmd: [join(peers, 'transformers-run.mjs'), modelRoot, docsFile, question, '1'] },
];
const results = contenders.map(() => []);
for (let r = 0; r < runs; r++) {
  contenders.forEach((c, i) => {
    const t = performance.now();
    const p = spawnSync(process.execPath, c.cmd, { encoding: 'utf8', timeout: 600_000 });
    const wall = performance.now() - t;
    if (p.status !== 0) throw new Error(`${c.name} failed (${p.status}):\n${p.stderr}`);
    const line = JSON.parse(p.stdout.trim().split('\n').at(-1));
    results[i].push({ ...line, wall });
  });
}
rmSync(tmp, { recursive: true, force: true });

// ------------------------------------------------------------------ report
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const lines = [];
const say = (s = '') => { lines.push(s); console.log(s); };
say(`## First result in Node: condense vs transformers.js + Orama (${nDocs} small documents, median of ${runs} cold processes)`);
say();
say(`Node ${process.version}, ${availableParallelism()} CPUs; question: "${question}"`);
say();
say('| | installed (node_modules) | import | + model loaded | + indexed | first result | process wall | top-1 |');
say('|---|---|---|---|---|---|---|---|');
const ms = (x) => `${Math.round(x).toLocaleString('en-US')} ms`;
contenders.forEach((c, i) => {
  const rs = results[i];
  const m = (k) => median(rs.map((x) => x.mark[k]));
  const size = i === 0 ? `${mb(condenseInstalled)} (${condenseCount} packages: condense-ctx and its mcp bin's dependencies, ${mb(du(join(app, 'node_modules', 'condense-ctx')))} alone)` : `${mb(peerInstalled)} (${peerCount} packages)`;
  say(`| ${c.name} | ${size} | ${ms(m('imported'))} | ${ms(m('modelLoaded'))} | ${ms(m('indexed'))} | **${ms(m('firstResult'))}** | ${ms(median(rs.map((x) => x.wall)))} | ${rs[0].top[0]} |`);
});
say();
say(`condense tarball: ${mb(packed.size)} packed, ${mb(packed.unpackedSize)} unpacked (model files included: ${mb(statSync(join(pkg, 'models', 'model.onnx')).size + statSync(join(pkg, 'models', 'tokenizer.json')).size)}).`);
say(`transformers.js install, largest: ${peerBiggest.slice(0, 5).map((p) => `${p.name} ${mb(p.size)}`).join(', ')}; the model files are extra (${mb(statSync(join(pkg, 'models', 'model.onnx')).size)}).`);
say(`Times are ms since the process started (performance.now()), each stage cumulative; "process wall" is spawn → exit seen by this script.`);
const cosine = results[0][0].vector.reduce((a, x, k) => a + x * results[1][0].vector[k], 0);
say(`The same model on both sides: cosine of the question's vectors (condense vs transformers.js) ${cosine.toFixed(5)}.`);
const agree = results[0][0].top[0] === results[1][0].top[0];
say(`Top-5 of condense (minScore 0): ${results[0][0].top.join(', ')}; of transformers.js + Orama hybrid: ${results[1][0].top.join(', ')} (top-1 ${agree ? 'agrees' : 'differs'}; two different hybrid rankers over the same vectors).`);
writeFileSync(join(out, 'first-result.md'), lines.join('\n') + '\n');
