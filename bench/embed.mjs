// Embedding speed of the wasm builds, side by side with onnxruntime-web, on the inputs of
// bench/embed-compare (32 CISI texts truncated to 16/128/256 tokens; batch 1 and 32):
//
//   tract-wasm-node     condense's loadEmbedder() in Node (tract compiled to wasm32 + simd128)
//   ort-web-node-1t     onnxruntime-web 1.23 in Node, wasm backend, 1 thread, same model file
//                       (token ids precomputed by the Python tokenizer: its tokenization is free)
//   tract-wasm-chrome   condense in headless Chromium (Debian's), the same loop in a page
//   tract-wasm-node-2workers  embedParallel over two createWorker({embedder: minilm}) workers
//                       (batch rows only: a large job over both cores; not a one-thread engine)
//
// One JSON line per case ({case, sentences_per_s} or {case, ms|bytes}), like bench/embed.rs and
// bench/embed_ort.py, so bench/embed-compare can table them together. Every run checks its
// vectors are unit length (a benchmark is also a test). Also reports model load time, Node RSS
// after the runs and the .wasm size.
//
//   node bench/embed.mjs bench/out/embed_inputs.json [--no-chrome] [--no-ort] [--no-workers] [--seconds S]
import { readFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const args = process.argv.slice(2);
const inputsFile = args.find((a) => a.endsWith('.json'));
if (!inputsFile) {
  console.error('usage: node bench/embed.mjs INPUTS.json [--no-chrome] [--no-ort] [--no-workers] [--seconds S]');
  process.exit(2);
}
const minSeconds = Number(args[args.indexOf('--seconds') + 1]) || 2;
const root = fileURLToPath(new URL('..', import.meta.url));
const inputs = JSON.parse(readFileSync(inputsFile, 'utf8'));
const { texts, tokens: TOKENS, batches: BATCHES, ids } = inputs;
const emit = (o) => console.log(JSON.stringify(o));

/** The timed loop shared by every engine (also serialised into the Chrome page). */
async function timeEngine(embedBatch, texts, batch, minSeconds) {
  // One untimed pass first (every engine): first-use work (a plan built for a shape, JIT tiers)
  // is not throughput.
  for (let i = 0; i < texts.length; i += batch) await embedBatch(texts.slice(i, i + batch), i);
  let done = 0;
  const start = performance.now();
  for (;;) {
    for (let i = 0; i < texts.length; i += batch) {
      const vectors = await embedBatch(texts.slice(i, i + batch), i);
      for (const v of vectors) {
        let n = 0;
        for (let k = 0; k < v.length; k++) n += v[k] * v[k];
        if (Math.abs(n - 1) > 1e-3) throw new Error(`vector norm² ${n}`);
      }
      done += vectors.length;
    }
    const elapsed = (performance.now() - start) / 1000;
    if (elapsed >= minSeconds) return Math.round((done / elapsed) * 100) / 100;
  }
}

// --- condense (tract in wasm) in Node
const condense = await import(new URL('../pkg/node.js', import.meta.url).href);
for (const [name, file] of [['core', 'condense_bg.wasm'], ['engine', 'condense_embed_bg.wasm']]) {
  const bytes = readFileSync(join(root, 'pkg', file));
  emit({ case: `embed/wasm-size/${name}/raw`, bytes: bytes.length });
  emit({ case: `embed/wasm-size/${name}/gzip`, bytes: gzipSync(bytes, { level: 9 }).length });
}
{
  const t0 = performance.now();
  const e = await condense.loadEmbedder();
  emit({ case: 'embed/load/tract-wasm-node', ms: Math.round(performance.now() - t0) });
  e.free();
}
for (const n of TOKENS) {
  for (const b of BATCHES) {
    const e = await condense.loadEmbedder({ maxTokens: n, batchSize: b });
    const sps = await timeEngine(async (batch) => e.embed(batch), texts, b, minSeconds);
    emit({ case: `embed/${n}tok/batch${b}/tract-wasm-node`, sentences_per_s: sps });
    e.free();
  }
}
emit({ case: 'embed/rss-after/tract-wasm-node', bytes: process.memoryUsage().rss });

// --- condense in two worker_threads at once (embedParallel): the batch rows only, a large job
// split over the machine's cores. Not comparable with the one-thread engines: a row of its own.
if (!args.includes('--no-workers')) {
  for (const n of TOKENS) {
    const workers = await Promise.all([1, 2].map(() => condense.createWorker({ embedder: { minilm: { maxTokens: n } } })));
    for (const b of BATCHES.filter((b) => b > 1)) {
      const sps = await timeEngine(async (batch) => condense.embedParallel(batch, workers), texts, b, minSeconds);
      emit({ case: `embed/${n}tok/batch${b}/tract-wasm-node-2workers`, sentences_per_s: sps });
    }
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

// --- onnxruntime-web in Node, wasm backend, one thread
if (!args.includes('--no-ort')) {
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.simd = true;
  const model = readFileSync(join(root, 'models/model.onnx'));
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  emit({ case: 'embed/load/ort-web-node-1t', ms: Math.round(performance.now() - t0) });
  for (const n of TOKENS) {
    const rows = ids[String(n)];
    for (const b of BATCHES) {
      const sps = await timeEngine(async (batch, at) => {
        const seq = rows[at].length;
        const count = batch.length;
        const flat = new BigInt64Array(count * seq);
        const mask = new BigInt64Array(count * seq);
        for (let r = 0; r < count; r++) {
          const row = rows[at + r];
          for (let k = 0; k < row.length; k++) { flat[r * seq + k] = BigInt(row[k]); mask[r * seq + k] = 1n; }
        }
        const feeds = {
          input_ids: new ort.Tensor('int64', flat, [count, seq]),
          attention_mask: new ort.Tensor('int64', mask, [count, seq]),
          token_type_ids: new ort.Tensor('int64', new BigInt64Array(count * seq), [count, seq]),
        };
        const out = await session.run(feeds);
        const h = out.last_hidden_state.data;
        const vectors = [];
        for (let r = 0; r < count; r++) {
          const v = new Float32Array(384);
          let len = 0;
          for (let k = 0; k < seq; k++) {
            if (mask[r * seq + k] === 0n) continue;
            len++;
            const off = (r * seq + k) * 384;
            for (let d = 0; d < 384; d++) v[d] += h[off + d];
          }
          let norm = 0;
          for (let d = 0; d < 384; d++) { v[d] /= len; norm += v[d] * v[d]; }
          norm = Math.sqrt(norm);
          for (let d = 0; d < 384; d++) v[d] /= norm;
          vectors.push(v);
        }
        return vectors;
      }, texts, b, minSeconds);
      emit({ case: `embed/${n}tok/batch${b}/ort-web-node-1t`, sentences_per_s: sps });
    }
  }
  await session.release();
}

// --- condense in headless Chromium: the same loop in a page served from the repository
if (!args.includes('--no-chrome')) {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(existsSync);
  if (!chromium) throw new Error('no Chromium at /usr/bin/chromium (scripts/setup installs it)');
  const { chromium: pw } = await import('playwright-core');
  const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.html': 'text/html', '.onnx': 'application/octet-stream' };
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    const file = join(root, path === '/' ? 'bench/embed-page.html' : path);
    if (!file.startsWith(root) || !existsSync(file)) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const browser = await pw.launch({
    executablePath: chromium,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/bench/embed-page.html`);
    await page.waitForFunction(() => window.condenseReady === true, null, { timeout: 120_000 });
    const rows = await page.evaluate(async ({ texts, TOKENS, BATCHES, minSeconds, loop }) => {
      // eslint-disable-next-line no-new-func
      const timeEngine = new Function(`return (${loop})`)();
      const out = [];
      const t0 = performance.now();
      const first = await window.condense.loadEmbedder();
      out.push({ case: 'embed/load/tract-wasm-chrome', ms: Math.round(performance.now() - t0) });
      first.free();
      for (const n of TOKENS) {
        for (const b of BATCHES) {
          const e = await window.condense.loadEmbedder({ maxTokens: n, batchSize: b });
          const sps = await timeEngine(async (batch) => e.embed(batch), texts, b, minSeconds);
          out.push({ case: `embed/${n}tok/batch${b}/tract-wasm-chrome`, sentences_per_s: sps });
          e.free();
        }
      }
      return out;
    }, { texts, TOKENS, BATCHES, minSeconds, loop: timeEngine.toString() });
    rows.forEach(emit);
  } finally {
    await browser.close();
    server.close();
  }
}
