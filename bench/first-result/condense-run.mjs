// One cold run of condense for bench/first-result.mjs: the npm package's Node entry, MiniLM
// (loadEmbedder() with the model files shipped in the package), Index.add, query. Prints one
// JSON line of times, in ms since the process started (performance.now()).
//   node bench/first-result/condense-run.mjs <package entry> <docs.json> <question>
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [entry, docsFile, question] = process.argv.slice(2);
const mark = {};
mark.start = performance.now();
const { loadEmbedder, Index, query, embed } = await import(pathToFileURL(entry).href);
mark.imported = performance.now();
const embedder = await loadEmbedder();
mark.modelLoaded = performance.now();
const docs = JSON.parse(readFileSync(docsFile, 'utf8'));
const index = Index.create({ embedder });
index.add(docs);
mark.indexed = performance.now();
// minScore 0: a top-5 like Orama's, whatever the calibrated scores.
const out = query(index, question, { topN: 5, minScore: 0 });
mark.firstResult = performance.now();
// The question's vector, after the clock: the caller checks both sides run the same model.
const [vector] = embed([question], { embedder });
console.log(JSON.stringify({ mark, top: out.results.map((r) => r.docId), docs: docs.length, vector: Array.from(vector) }));
