// docs/mcp.md's measurements of `condense-ctx mcp`, through the MCP SDK's own Client over stdio
// against the packed package (tests/mcp/app.mjs installs it; scripts/build-pkg first):
//
//   sizes    tokens per answer (o200k, gpt-tokenizer) of query_documents vs
//            query_documents_compressed at top_n 5/10/25 in the compact, verbose and json
//            formats, on this repository's own files at HEAD (`git archive`: the committed
//            tree, whatever the work tree holds), MiniLM
//   start    cold start to the first answer (no index file: model load + indexing) and warm
//            start (the index file reopened), MiniLM
//   latency  per-query latency of both tools over stdio, beside the same Index.query called
//            in-process on the same index (the baseline, run in the same process)
//   ir       the share of relevant results kept: CISI and MED queries over their corpora
//            written as one .txt file per document (/work/shared/data/ir), qrels as judgments
//
//   node bench/mcp.mjs [sizes,start,latency,ir]   (default: all) → bench/out/mcp.json (each part
//                                                 with its date, commit, machine and load; parts
//                                                 not run are kept) and bench/out/mcp.md (tables)
//   node bench/mcp.mjs render                     the tables again from bench/out/mcp.json
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { countTokens } from 'gpt-tokenizer';
import { installPackage, root } from '../tests/mcp/app.mjs';
import { connectStdio } from '../tests/mcp/client.mjs';

const parts = new Set((process.argv[2] ?? 'sizes,start,latency,ir').split(','));
const IR = process.env.IR_DATA ?? '/work/shared/data/ir';
const LONG = { timeout: 60 * 60_000, resetTimeoutOnProgress: true };

/** Questions a developer would ask an agent about this repository. */
const QUESTIONS = [
  'how is the index persisted and reopened',
  'what does applyWatermark do to tool results before the watermark',
  'which wasm-opt version breaks modules',
  'default minScore and maxChunksPerDoc of query',
  'how are MiniLM vectors made identical between native and wasm',
  'how do I use condense from a browser extension service worker',
  'what happens when compress is given a token budget it cannot meet',
  'createWorker progress and errors',
  'uncompress verbatim markers',
  'how does semantic deduplication cluster results',
  'prefixStable mode and prompt caching',
  'which error codes can CondenseError have',
  'how are chunks split from markdown documents',
  'BM25 parameters k1 b',
  'how to run the test suite',
  'why is the model engine a separate wasm module',
  'HNSW segments and exact scan of the tail',
  'what is the lexical embedder',
  'embedParallel across several workers',
  'how does the query classifier decide factual or conceptual',
];

const machine = () => {
  const cpu = cpus();
  return `${cpu[0]?.model.trim()} (${cpu.length} cores), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
};
const commit = () => execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const call = (client, name, args, options) => client.callTool({ name, arguments: args }, undefined, options);

async function ready(client, documents) {
  for (;;) {
    const r = await call(client, 'list_documents', { limit: 1 });
    const s = r.structuredContent.status;
    if (!s.indexing && s.last_scan && (documents === undefined || s.documents === documents)) return s;
    await new Promise((done) => setTimeout(done, 250));
  }
}

const outFile = join(root, 'bench', 'out', 'mcp.json');
const out = existsSync(outFile) ? JSON.parse(readFileSync(outFile, 'utf8')) : {};
/** Where and when a part ran (the load average: other jobs share the machine). */
const stamp = () => ({ date: new Date().toISOString().slice(0, 10), commit: commit(), machine: machine(), load: loadavg().map((x) => x.toFixed(1)).join(' ') });

if (parts.has('render')) {
  render();
  process.exit(0);
}
const installed = installPackage();
const scratch = mkdtempSync(join(tmpdir(), 'condense-mcp-bench-'));
const repoDir = join(scratch, 'condense');
const repoArgs = (index) => ['--docs', repoDir, '--index', index];

try {
  const repoIndex = join(scratch, 'repo.cndx');

  if (parts.has('start') || parts.has('sizes') || parts.has('latency')) {
    mkdirSync(repoDir);
    execFileSync('sh', ['-c', `git -C "${root}" archive --format=tar HEAD | tar -x -C "${repoDir}"`]);
    // Cold: no index file. Spawn → initialize → first answer (which waits for the indexing).
    const t0 = performance.now();
    const s = await connectStdio(installed.bin, repoArgs(repoIndex), { cwd: root });
    const connected = performance.now() - t0;
    const first = await call(s.client, 'query_documents_compressed', { query: QUESTIONS[0] }, LONG);
    const cold = performance.now() - t0;
    const status = await ready(s.client);
    const repo = { documents: status.documents, chunks: status.chunks, embedder: status.embedder };
    const start = { ...stamp(), ...repo, coldInitializeMs: connected, coldFirstAnswerMs: cold, firstResults: first.structuredContent.results.length };
    console.log(`repo: ${status.documents} documents, ${status.chunks} chunks (${status.embedder}); cold: initialize ${connected.toFixed(0)} ms, first answer ${cold.toFixed(0)} ms`);

    if (parts.has('sizes')) {
      const rows = [];
      for (const tool of ['query_documents', 'query_documents_compressed']) {
        for (const topN of [5, 10, 25]) {
          for (const format of ['compact', 'verbose', 'json']) {
            const tokens = [];
            const chars = [];
            const results = [];
            for (const q of QUESTIONS) {
              const r = await call(s.client, tool, { query: q, top_n: topN, format });
              tokens.push(countTokens(r.content[0].text));
              chars.push(r.content[0].text.length);
              results.push(r.structuredContent.results.length);
            }
            rows.push({ tool, topN, format, tokens: mean(tokens), chars: mean(chars), results: mean(results) });
          }
        }
      }
      out.sizes = { ...stamp(), ...repo, questions: QUESTIONS.length, rows };
      console.table(rows);
    }
    await s.close();

    // Warm: the index file is there; only the model loads and the folder is scanned.
    const w0 = performance.now();
    const warm = await connectStdio(installed.bin, repoArgs(repoIndex), { cwd: root });
    const warmConnected = performance.now() - w0;
    await call(warm.client, 'query_documents_compressed', { query: QUESTIONS[0] }, LONG);
    start.warmInitializeMs = warmConnected;
    start.warmFirstAnswerMs = performance.now() - w0;
    const warmStatus = await ready(warm.client);
    start.warmEmbedded = warmStatus.last_scan.embedded;
    if (parts.has('start')) out.start = start;
    console.log(`warm: initialize ${warmConnected.toFixed(0)} ms, first answer ${start.warmFirstAnswerMs.toFixed(0)} ms (${warmStatus.last_scan.embedded} files embedded)`);

    if (parts.has('latency')) {
      // Baseline: the same index and queries through Index.query in this process.
      const pkg = (f) => pathToFileURL(join(installed.pkg, f)).href;
      const api = await import(pkg('node.js'));
      const { parseIndexFile } = await import(pkg('mcp/library.js'));
      const embedder = await api.loadEmbedder();
      const direct = api.Index.deserialize(parseIndexFile(readFileSync(repoIndex)).index, { embedder });
      const lat = {};
      const ROUNDS = 3;
      for (const tool of ['query_documents', 'query_documents_compressed']) {
        const options = tool === 'query_documents'
          ? { topN: 5, minScore: 0, ngramThreshold: 1, similarityThreshold: 1, maxChunksPerDoc: 0, truncate: false }
          : { topN: 5 };
        const mcp = [];
        const inproc = [];
        for (let round = 0; round < ROUNDS; round++) {
          for (const q of QUESTIONS) {
            let t = performance.now();
            await call(warm.client, tool, { query: q });
            mcp.push(performance.now() - t);
            t = performance.now();
            direct.query(q, options);
            inproc.push(performance.now() - t);
          }
        }
        lat[tool] = { p50: median(mcp), p90: quantile(mcp, 0.9), directP50: median(inproc), directP90: quantile(inproc, 0.9), ratioP50: median(mcp) / median(inproc), n: mcp.length };
      }
      direct.free();
      out.latency = { ...stamp(), ...repo, rounds: ROUNDS, questions: QUESTIONS.length, tools: lat };
      console.table(lat);
    }
    await warm.close();
  }

  if (parts.has('ir')) {
    out.ir = stamp();
    for (const set of ['cisi', 'med']) {
      const dir = join(scratch, set, 'docs');
      mkdirSync(dir, { recursive: true });
      const corpus = readFileSync(join(IR, set, 'corpus.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      for (const d of corpus) writeFileSync(join(dir, `${d._id}.txt`), d.title ? `${d.title}\n\n${d.text}\n` : `${d.text}\n`);
      const queries = readFileSync(join(IR, set, 'queries.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const qrels = new Map();
      for (const line of readFileSync(join(IR, set, 'qrels.tsv'), 'utf8').trim().split('\n').slice(1)) {
        const [q, d] = line.split('\t');
        if (!qrels.has(q)) qrels.set(q, new Set());
        qrels.get(q).add(d);
      }
      const judged = queries.filter((q) => qrels.has(q._id));
      const t0 = performance.now();
      const s = await connectStdio(installed.bin, ['--docs', dir, '--index', join(scratch, `${set}.cndx`)], { cwd: scratch });
      const status = await ready(s.client, corpus.length);
      const indexMs = performance.now() - t0;
      console.log(`${set}: ${status.documents} documents, ${status.chunks} chunks (${status.embedder}) indexed in ${(indexMs / 1000).toFixed(1)} s`);
      const docOf = (r) => r.doc_id.replace(/^docs\//, '').replace(/\.txt$/, '');
      const rows = [];
      for (const topN of [5, 10, 25]) {
        const sum = { relevantPlain: 0, relevantCompressed: 0, kept: 0, resultsPlain: 0, resultsCompressed: 0, tokensPlain: 0, tokensCompressed: 0 };
        for (const q of judged) {
          const rel = qrels.get(q._id);
          const plain = await call(s.client, 'query_documents', { query: q.text, top_n: topN });
          const comp = await call(s.client, 'query_documents_compressed', { query: q.text, top_n: topN });
          const p = new Set(plain.structuredContent.results.map(docOf).filter((d) => rel.has(d)));
          const c = new Set(comp.structuredContent.results.map(docOf).filter((d) => rel.has(d)));
          sum.relevantPlain += p.size;
          sum.relevantCompressed += c.size;
          sum.kept += [...p].filter((d) => c.has(d)).length;
          sum.resultsPlain += plain.structuredContent.results.length;
          sum.resultsCompressed += comp.structuredContent.results.length;
          sum.tokensPlain += countTokens(plain.content[0].text);
          sum.tokensCompressed += countTokens(comp.content[0].text);
        }
        const n = judged.length;
        rows.push({
          topN,
          queries: n,
          resultsPlain: sum.resultsPlain / n,
          resultsCompressed: sum.resultsCompressed / n,
          relevantPlain: sum.relevantPlain / n,
          relevantCompressed: sum.relevantCompressed / n,
          keptShare: sum.kept / sum.relevantPlain,
          relevantShare: sum.relevantCompressed / sum.relevantPlain,
          tokensPlain: sum.tokensPlain / n,
          tokensCompressed: sum.tokensCompressed / n,
        });
      }
      await s.close();
      out.ir[set] = { documents: status.documents, chunks: status.chunks, embedder: status.embedder, indexSeconds: indexMs / 1000, rows };
      console.table(rows);
    }
  }
} finally {
  mkdirSync(join(root, 'bench', 'out'), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(out, null, 2)}\n`);
  rmSync(scratch, { recursive: true, force: true });
  rmSync(installed.tmp, { recursive: true, force: true });
}
render();

/** docs/mcp.md's tables from `out`, to stdout and bench/out/mcp.md. */
function render() {
  const lines = [];
  const say = (l = '') => lines.push(l);
  const at = (p) => `${p.date}, commit \`${p.commit}\`, ${p.machine}, load average ${p.load}`;
  const n = (x, d = 0) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  if (out.sizes) {
    const z = out.sizes;
    say(`Tokens per answer (o200k, mean of ${z.questions} questions; ${z.documents} files, ${z.chunks} chunks, ${z.embedder}). ${at(z)}.`);
    say();
    say('| top_n | format | query_documents | query_documents_compressed | saved | results (plain / compressed) |');
    say('|---|---|---|---|---|---|');
    for (const topN of [5, 10, 25]) {
      for (const format of ['compact', 'verbose', 'json']) {
        const row = (tool) => z.rows.find((r) => r.tool === tool && r.topN === topN && r.format === format);
        const a = row('query_documents');
        const b = row('query_documents_compressed');
        say(`| ${topN} | ${format} | ${n(a.tokens)} | ${n(b.tokens)} | ${pct(1 - b.tokens / a.tokens)} | ${n(a.results, 1)} / ${n(b.results, 1)} |`);
      }
    }
    say();
  }
  if (out.ir) {
    for (const set of ['cisi', 'med']) {
      const r = out.ir[set];
      if (!r) continue;
      say(`${set.toUpperCase()}: ${r.documents} files, ${r.chunks} chunks (${r.embedder}, indexed in ${n(r.indexSeconds)} s), ${r.rows[0].queries} judged queries, compact format. ${at(out.ir)}.`);
      say();
      say('| top_n | relevant kept | relevant returned (compressed / plain) | results (plain / compressed) | tokens (plain / compressed) | saved |');
      say('|---|---|---|---|---|---|');
      for (const x of r.rows) {
        say(`| ${x.topN} | ${pct(x.keptShare)} | ${pct(x.relevantShare)} (${n(x.relevantCompressed, 2)} / ${n(x.relevantPlain, 2)}) | ${n(x.resultsPlain, 1)} / ${n(x.resultsCompressed, 1)} | ${n(x.tokensPlain)} / ${n(x.tokensCompressed)} | ${pct(1 - x.tokensCompressed / x.tokensPlain)} |`);
      }
      say();
    }
  }
  if (out.start) {
    const t = out.start;
    say(`Start (MiniLM; ${t.documents} files, ${t.chunks} chunks). ${at(t)}.`);
    say();
    say('| | initialize answered | first answer |');
    say('|---|---|---|');
    say(`| cold (no index file: model load, every file embedded) | ${n(t.coldInitializeMs)} ms | ${n(t.coldFirstAnswerMs)} ms |`);
    say(`| warm (the index file reopened, ${t.warmEmbedded} files embedded) | ${n(t.warmInitializeMs)} ms | ${n(t.warmFirstAnswerMs)} ms |`);
    say();
  }
  if (out.latency) {
    const l = out.latency;
    say(`Per-query latency (MiniLM, top_n 5, ${l.questions} questions × ${l.rounds} rounds, ${l.documents} files, ${l.chunks} chunks): the tool call over stdio beside \`Index.query\` in-process on the same index, in the same run. ${at(l)}.`);
    say();
    say('| tool | MCP p50 | MCP p90 | in-process p50 | in-process p90 | MCP / in-process (p50) |');
    say('|---|---|---|---|---|---|');
    for (const [tool, x] of Object.entries(l.tools)) say(`| ${tool} | ${n(x.p50, 1)} ms | ${n(x.p90, 1)} ms | ${n(x.directP50, 1)} ms | ${n(x.directP90, 1)} ms | ${n(x.ratioP50, 2)} |`);
    say();
  }
  const text = lines.join('\n');
  mkdirSync(join(root, 'bench', 'out'), { recursive: true });
  writeFileSync(join(root, 'bench', 'out', 'mcp.md'), `${text}\n`);
  console.log(text);
}
