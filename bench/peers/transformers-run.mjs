// One cold run of the peer for bench/first-result.mjs: transformers.js (feature-extraction on
// onnxruntime-node, the same int8 all-MiniLM-L6-v2 file as condense, from a local folder, remote
// models off) + Orama (hybrid BM25 + vector search). Prints one JSON line of times, in ms since
// the process started (performance.now()).
//   node bench/peers/transformers-run.mjs <model root> <docs.json> <question> [threads]
import { readFileSync } from 'node:fs';

const [root, docsFile, question, threadsArg] = process.argv.slice(2);
const threads = Number(threadsArg ?? 0);
const mark = {};
mark.start = performance.now();
const { pipeline, env } = await import('@huggingface/transformers');
const { create, insertMultiple, search } = await import('@orama/orama');
mark.imported = performance.now();

env.allowRemoteModels = false;
env.localModelPath = root;
const extractor = await pipeline('feature-extraction', 'all-MiniLM-L6-v2', {
  dtype: 'q8', // onnx/model_quantized.onnx: condense's models/model.onnx
  device: 'cpu',
  ...(threads ? { session_options: { intraOpNumThreads: threads, interOpNumThreads: 1 } } : {}),
});
mark.modelLoaded = performance.now();

const docs = JSON.parse(readFileSync(docsFile, 'utf8'));
const db = create({ schema: { text: 'string', embedding: 'vector[384]' } });
const vectors = [];
for (let i = 0; i < docs.length; i += 32) {
  const out = await extractor(docs.slice(i, i + 32).map((d) => d.text), { pooling: 'mean', normalize: true });
  vectors.push(...out.tolist());
}
await insertMultiple(db, docs.map((d, i) => ({ id: d.id, text: d.text, embedding: vectors[i] })));
mark.indexed = performance.now();

const [q] = (await extractor([question], { pooling: 'mean', normalize: true })).tolist();
const hits = await search(db, { mode: 'hybrid', term: question, vector: { value: q, property: 'embedding' }, similarity: 0, limit: 5 });
mark.firstResult = performance.now();
console.log(JSON.stringify({ mark, top: hits.hits.map((h) => h.id), docs: docs.length, vector: q }));
