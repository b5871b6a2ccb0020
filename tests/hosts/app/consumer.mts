// A strict TypeScript consumer of condense-ctx: every option (objects typed `Required<…>` so a
// new option must appear here) and every result field (`covers` fails to compile when a field
// of a result type is not read here). Checked with `tsc --noEmit -p tsconfig.json`, not run.
import {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, version, ready,
  Index, query, compressResults, embed, lexicalEmbedder, loadEmbedder, externalEmbedder, CondenseError, ERROR_CODES,
  watermarkRequest, compressRequest, prepareRequest, createWorker, prepareContext,
} from 'condense-ctx';
import type {
  Message, ContentBlock, ToolCall, ErrorCode, WatermarkState, WatermarkOptions, WatermarkStats, Warning,
  WatermarkResult, WatermarkJsonResult, ValidateOptions, Violation, Validation, CompressOptions,
  CompressStats, Decision, CompressResult, CompressJsonResult, Embedder, EmbedderIdentity, Document,
  IndexOptions, Chunk, DocumentInfo, Progress, QueryOptions, SearchResult, QueryStats, QueryResult,
  Candidate, WatermarkRequestOptions, CompressRequestOptions, WatermarkRequestResult,
  CompressRequestResult, PrepareRequestOptions, PrepareRequestResult, Savings, WorkerOptions,
  CondenseWorker, WorkerIndex, WorkerEmbedder, LoadEmbedderOptions, LoadProgress,
  TokenCounterKind, CompressMethod, SummaryRequest, Summarizer, SummarizerStats, WorkerCompressOptions, CompressCache, ContextChunk, PrepareContextOptions, ChunkReport, PrepareContextStats, PrepareContextResult,
} from 'condense-ctx';
import { init, CondenseError as ManualError } from 'condense-ctx/manual';
import type { InitOptions, Condense } from 'condense-ctx/manual';

/** `true` only when K lists every key of T. */
type Covers<T, K extends keyof T> = [Exclude<keyof T, K>] extends [never] ? true : { missing: Exclude<keyof T, K> };
const read = (...values: unknown[]): number => values.length;

const call: ToolCall = { id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{}' } };
const block: ContentBlock = { type: 'text', text: 'hello' };
const messages: Message[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: [block] },
  { role: 'assistant', content: null, tool_calls: [call] },
  { role: 'tool', tool_call_id: 'call_1', name: 'ls', content: 'a.txt b.txt' },
];

// ------------------------------------------------------------------ applyWatermark
const watermarkOptions: Required<WatermarkOptions> = {
  checkpointTools: ['compress_to_checkpoint'], keepLastToolResults: 1, excludeTools: ['mcp__memory__*'],
  placeholder: true, clearToolInputs: true, keepThinking: false, format: 'openai',
};
let state: WatermarkState = { watermark: null };
const w: WatermarkResult = applyWatermark(messages, state, watermarkOptions);
state = w.state;
const wCovered: Covers<WatermarkResult, 'messages' | 'state' | 'stats' | 'warnings'> = true;
function statsOfWatermark(s: WatermarkStats): number {
  const covered: Covers<WatermarkStats, 'watermarkIndex' | 'advanced' | 'blocksRemoved' | 'toolCallsRemoved' | 'toolResultsRemoved'
    | 'thinkingRemoved' | 'placeholders' | 'inputsCleared' | 'pairsKept' | 'cacheControlMoved' | 'messagesBefore'
    | 'messagesAfter' | 'messagesDropped' | 'messagesMerged' | 'charsBefore' | 'charsAfter' | 'tokensBefore' | 'tokensAfter'> = true;
  const index: number | null = s.watermarkIndex;
  const advanced: boolean = s.advanced;
  return read(covered, index, advanced, s.blocksRemoved + s.toolCallsRemoved + s.toolResultsRemoved + s.thinkingRemoved
    + s.placeholders + s.inputsCleared + s.pairsKept + s.cacheControlMoved + s.messagesBefore + s.messagesAfter
    + s.messagesDropped + s.messagesMerged + s.charsBefore + s.charsAfter + s.tokensBefore + s.tokensAfter);
}
function warningsOf(ws: Warning[]): string[] {
  const covered: Covers<Warning, 'code' | 'message' | 'path'> = true;
  return ws.map((x) => `${covered}${x.code}${x.message}${x.path ?? ''}`);
}
statsOfWatermark(w.stats);
warningsOf(w.warnings);
const wj: WatermarkJsonResult = applyWatermarkJson(JSON.stringify(messages), null, null);
const wjCovered: Covers<WatermarkJsonResult, 'json' | 'state' | 'stats' | 'warnings'> = true;
const wjText: string = wj.json;
read(wCovered, wjCovered, wjText, wj.state.watermark, statsOfWatermark(wj.stats), warningsOf(wj.warnings));

// ------------------------------------------------------------------ validate
const validateOptions: Required<ValidateOptions> = { format: 'anthropic' };
const v: Validation = validate(messages, validateOptions);
const vCovered: Covers<Validation, 'valid' | 'format' | 'violations'> = true;
const violation = (x: Violation): string => {
  const covered: Covers<Violation, 'code' | 'path' | 'message'> = true;
  return `${covered}${x.code}${x.path}${x.message}`;
};
read(vCovered, v.valid, v.format, v.violations.map(violation), validate('[]'));

// ------------------------------------------------------------------ compress
const counterKind: TokenCounterKind = 'estimate';
const method: CompressMethod = 'hierarchical';
const workerCompressOptions: Required<WorkerCompressOptions> = {
  preserveRoles: ['system'], recencyWindow: 2, minChars: 80, dedup: true, fuzzyDedup: true, fuzzyThreshold: 0.9,
  preservePatterns: ['TICKET-\\d+'], query: 'files', preserveCode: true, preserveNumbers: false, lossyToolOutput: false,
  tokenBudget: 2000, targetRatio: null, minTokens: 0, trace: true, format: 'openai', embedder: lexicalEmbedder(),
  tokenCounter: counterKind, method, summaries: { abc: 'a summary' }, cache: null, cacheKey: 'a secret', cacheLimit: 5000,
  prefixStable: false,
  importanceScoring: true, importanceThreshold: 0.65, contradictionDetection: true, preserveQuotes: true, minConfidence: 0,
};
const summarizer: Summarizer = async (text: string, r: SummaryRequest): Promise<string> => {
  const covered: Covers<SummaryRequest, 'id' | 'targetTokens' | 'originalTokens' | 'role' | 'kind' | 'index' | 'block'
    | 'method' | 'query'> = true;
  return `${covered}${text.slice(0, r.targetTokens)}${r.id}${r.originalTokens}${r.role}${r.kind}${r.index}${r.block ?? ''}${r.method ?? ''}${r.query ?? ''}`;
};
// Every option; with a summarizer compress returns a Promise.
const compressOptions: Required<CompressOptions> = {
  ...workerCompressOptions, method: 'abstractive', countTokens: (text: string) => text.length, summarizer,
  summarizerConcurrency: 2,
};
const pending: Promise<CompressResult> = compress(messages, compressOptions);
const pendingJson: Promise<CompressJsonResult> = compressJson('[]', { method: 'hybrid', summarizer });
const summarizerStats = (s?: SummarizerStats): number => {
  const covered: Covers<SummarizerStats, 'requested' | 'accepted' | 'rejected' | 'failed'> = true;
  return read(covered, s === undefined ? 0 : s.requested + s.accepted + s.rejected + s.failed);
};
read(pending.then((r) => summarizerStats(r.stats.summarizer)), pendingJson.then((r) => r.stats.warnings));
const c: CompressResult = compress(messages, { ...workerCompressOptions, countTokens: (text: string) => text.length });
const cCovered: Covers<CompressResult, 'messages' | 'verbatim' | 'stats' | 'trace' | 'cache'> = true;
// The incremental cache: the previous result's cache (or its JSON text) into the next call.
const first: CompressResult = compress(messages, { cache: null, cacheLimit: 5000 });
const cache1: CompressCache | undefined = first.cache;
const again: CompressResult = compress(messages, { cache: cache1 ?? null, prefixStable: true });
const cacheText: string = JSON.stringify(again.cache);
const cacheCovered: Covers<CompressCache, 'version' | 'engine' | 'generation' | 'checksum' | 'entries'> = true;
const cacheOf = (k: CompressCache): number => read(cacheCovered, k.version, k.engine, k.generation, k.checksum,
  k.entries.map((e) => e.key + e.value + e.used));
read(cacheOf(again.cache!), compressJson(JSON.stringify(messages), { cache: cacheText }).cache);
function statsOfCompress(s: CompressStats): number {
  const covered: Covers<CompressStats, 'messagesBefore' | 'messagesAfter' | 'tokensBefore' | 'tokensAfter' | 'ratio' | 'preserved'
    | 'summarized' | 'deduped' | 'merged' | 'codeSplit' | 'superseded' | 'truncated' | 'condensedCalls' | 'folded' | 'budget' | 'fits'
    | 'escalation' | 'level' | 'summarizer' | 'cacheHits' | 'cacheMisses' | 'prefixStable' | 'prefixMessages' | 'warnings'> = true;
  const budget: number | null = s.budget;
  const fits: boolean | null = s.fits;
  const warnings: string[] | undefined = s.warnings;
  read(s.cacheHits, s.cacheMisses, s.prefixStable, s.prefixMessages);
  return read(covered, budget, fits, warnings, s.level, summarizerStats(s.summarizer), s.messagesBefore + s.messagesAfter + s.tokensBefore + s.tokensAfter + s.ratio + s.preserved
    + s.summarized + s.deduped + s.merged + s.codeSplit + s.superseded + s.truncated + s.condensedCalls + s.folded + s.escalation);
}
const decision = (d: Decision): string => {
  const covered: Covers<Decision, 'index' | 'block' | 'action' | 'reason'> = true;
  return `${covered}${d.index}${d.block ?? ''}${d.action}${d.reason}`;
};
const restored: Message[] = uncompress(c.messages, c.verbatim);
const cj: CompressJsonResult = compressJson(JSON.stringify(messages), { recencyWindow: 0 });
const cjCovered: Covers<CompressJsonResult, 'json' | 'verbatim' | 'stats' | 'trace' | 'cache'> = true;
const restoredText: string = uncompress(cj.json, cj.verbatim);
read(cCovered, cjCovered, statsOfCompress(c.stats), c.trace?.map(decision), restored, statsOfCompress(cj.stats), cj.trace, restoredText, cj.cache);

// ------------------------------------------------------------------ prepareContext
const chunks: ContextChunk[] = ['plain text chunk', { id: 'auth', text: 'Tokens rotate every 24 hours.', source: 'docs' }, { id: 7, text: 'x' }];
const pcOptions: Required<PrepareContextOptions> = { tokenBudget: 50, query: 'token rotation', separator: '\n---\n', embedder: lexicalEmbedder() };
const pc: PrepareContextResult = prepareContext(chunks, pcOptions);
const pcCovered: Covers<PrepareContextResult, 'text' | 'chunks' | 'stats'> = true;
const chunkOf = (r: ChunkReport): number => {
  const covered: Covers<ChunkReport, 'id' | 'relevance' | 'share' | 'tokensBefore' | 'tokensAfter' | 'compressed' | 'dropped'> = true;
  return read(covered, r.id, r.relevance, r.share, r.tokensBefore, r.tokensAfter, r.compressed, r.dropped);
};
const pcStats = (s: PrepareContextStats): number => {
  const covered: Covers<PrepareContextStats, 'tokensBefore' | 'tokensAfter' | 'budget' | 'fits' | 'compressed' | 'dropped'> = true;
  return read(covered, s.tokensBefore, s.tokensAfter, s.budget, s.fits, s.compressed, s.dropped);
};
read(pcCovered, pc.text, pc.chunks.map(chunkOf), pcStats(pc.stats), prepareContext(['a'], { tokenBudget: 1 }));

// ------------------------------------------------------------------ errors
try {
  compress(messages, { recencyWindow: -1 });
} catch (e) {
  if (e instanceof CondenseError) {
    const code: ErrorCode = e.code;
    const path: string = e.path;
    const reason: string = e.reason;
    const name: 'CondenseError' = e.name;
    read(code, path, reason, name, ERROR_CODES.includes(code));
  }
}

// ------------------------------------------------------------------ retrieval
const embedder: Embedder = lexicalEmbedder();
const identity: EmbedderIdentity = embedder.identity();
const idCovered: Covers<EmbedderIdentity, 'kind' | 'modelSha256' | 'dims' | 'maxTokens' | 'version'> = true;
read(idCovered, identity.kind, identity.modelSha256, identity.dims, identity.maxTokens, identity.version);
const vectors: Float32Array[] = embed(['a', 'b'], { embedder });
read(vectors, embedder.embed(['c']));
const indexOptions: Required<IndexOptions> = { embedder, chunk: { minChars: 100, maxChars: 1000 }, bm25: { k1: 1.2, b: 0.75 } };
const index: Index = Index.create(indexOptions);
const documents: Document[] = [{ id: 'd1', path: 'docs/d1.md', title: 'One', text: '# One\n\nText.', metadata: { tag: 1 } }];
const added: number = index.add(documents, {
  onProgress: (p: Progress) => {
    const covered: Covers<Progress, 'phase' | 'done' | 'total'> = true;
    read(covered, p.phase, p.done, p.total);
  },
});
const info: DocumentInfo | undefined = index.get('d1');
if (info) {
  const covered: Covers<DocumentInfo, 'id' | 'path' | 'title' | 'metadata' | 'chunks'> = true;
  const chunk = (x: Chunk): string => {
    const chunkCovered: Covers<Chunk, 'id' | 'docId' | 'path' | 'headerPath' | 'text' | 'ordinal'> = true;
    return `${chunkCovered}${x.id}${x.docId}${x.path}${x.headerPath.join('/')}${x.text}${x.ordinal}`;
  };
  read(covered, info.id, info.path, info.title, info.metadata, info.chunks.map(chunk));
}
const queryOptions: Required<QueryOptions> = {
  minScore: 0, ngramThreshold: 0.7, ngramSize: 3, similarityThreshold: 0.85, maxChunksPerDoc: 2, topN: 5, truncate: true,
  truncateChars: 200, format: 'json', lexicalWeight: 1, denseWeight: null, fusion: 'convex', rrfK: 60, feedback: true, feedbackTerms: 10,
  candidates: 1000, queryKind: 'factual',
};
function resultOf(r: QueryResult): number {
  const covered: Covers<QueryResult, 'results' | 'text' | 'stats' | 'queryKind'> = true;
  const one = (x: SearchResult): string => {
    const resultCovered: Covers<SearchResult, 'chunkId' | 'docId' | 'path' | 'headerPath' | 'score' | 'content' | 'truncated'> = true;
    return `${resultCovered}${x.chunkId}${x.docId}${x.path}${x.headerPath.length}${x.score}${x.content}${x.truncated}`;
  };
  const s: QueryStats = r.stats;
  const statsCovered: Covers<QueryStats, 'candidates' | 'afterMinScore' | 'afterNgramDedup' | 'afterSemanticDedup' | 'afterPerDocLimit'
    | 'returned' | 'removedByMinScore' | 'removedAsNearDuplicate' | 'removedAsSemanticDuplicate' | 'removedByPerDocLimit'
    | 'removedByTopN' | 'truncated' | 'charsBefore' | 'charsAfter' | 'tokensBefore' | 'tokensAfter' | 'reductionPercent'
    | 'originalCount' | 'afterThreshold' | 'afterDedup' | 'clustersMerged'> = true;
  return read(covered, statsCovered, r.results.map(one), r.text, r.queryKind, s.candidates + s.afterMinScore + s.afterNgramDedup
    + s.afterSemanticDedup + s.afterPerDocLimit + s.returned + s.removedByMinScore + s.removedAsNearDuplicate
    + s.removedAsSemanticDuplicate + s.removedByPerDocLimit + s.removedByTopN + s.truncated + s.charsBefore + s.charsAfter
    + s.tokensBefore + s.tokensAfter + s.reductionPercent + s.originalCount + s.afterThreshold + s.afterDedup + s.clustersMerged);
}
resultOf(index.query('one', queryOptions));
resultOf(query(index, 'one', null));
const candidate: Required<Candidate> = {
  chunkId: 'x#0', id: 'x#0', docId: 'x', path: null, headerPath: ['H'], score: 0.9, content: 'text', text: 'text', embedding: null,
};
resultOf(compressResults([candidate], 'text', { ...queryOptions, embedder }));
const bytes: Uint8Array = index.serialize();
const copy: Index = Index.deserialize(bytes, { embedder });
read(added, index.size, index.chunks, index.identity(), index.remove(['d1']), copy.size);
copy.free();
index.free();

// ------------------------------------------------------------------ request bodies
const body = JSON.stringify({ model: 'claude-x', max_tokens: 100, messages });
const wrOptions: Required<WatermarkRequestOptions> = {
  checkpointTools: ['compress_to_checkpoint'], keepLastToolResults: 0, excludeTools: [], placeholder: false,
  clearToolInputs: false, keepThinking: false, provider: 'anthropic',
};
const wr: WatermarkRequestResult = watermarkRequest(body, state, wrOptions);
const wrCovered: Covers<WatermarkRequestResult, 'body' | 'state' | 'stats' | 'warnings'> = true;
const crOptions: Required<CompressRequestOptions> = {
  preserveRoles: ['system'], recencyWindow: 4, minChars: 120, dedup: true, fuzzyDedup: false, fuzzyThreshold: 0.85,
  preservePatterns: [], query: null, preserveCode: true, preserveNumbers: false, lossyToolOutput: false, tokenBudget: null,
  targetRatio: 0.5, minTokens: 0, trace: false, provider: 'openai', embedder: lexicalEmbedder(),
  tokenCounter: 'estimate', countTokens: (text: string) => text.length, method: 'extractive', summaries: null,
  cache: null, cacheKey: 'a secret', cacheLimit: 100, prefixStable: true,
  importanceScoring: false, importanceThreshold: 0.65, contradictionDetection: false, preserveQuotes: false, minConfidence: 0,
};
const cr: CompressRequestResult = compressRequest(body, crOptions);
const crCovered: Covers<CompressRequestResult, 'body' | 'verbatim' | 'stats' | 'trace' | 'cache'> = true;
read(cr.cache?.generation);
const prOptions: Required<PrepareRequestOptions> = { provider: 'anthropic', state, watermark: { placeholder: true }, compress: false };
const pr: PrepareRequestResult = prepareRequest(body, prOptions);
const prCovered: Covers<PrepareRequestResult, 'body' | 'state' | 'verbatim' | 'watermark' | 'compress' | 'savings'> = true;
const savings: Savings = pr.savings;
const savingsCovered: Covers<Savings, 'charsBefore' | 'charsAfter' | 'saved' | 'percent' | 'ms'> = true;
read(wrCovered, wr.body, wr.state, statsOfWatermark(wr.stats), warningsOf(wr.warnings), crCovered, cr.body, cr.verbatim,
  statsOfCompress(cr.stats), cr.trace, prCovered, pr.body, pr.state, pr.verbatim, pr.watermark?.stats, pr.watermark?.warnings,
  pr.compress?.stats, pr.compress?.trace, savingsCovered, savings.charsBefore, savings.charsAfter, savings.saved,
  savings.percent, savings.ms);

// ------------------------------------------------------------------ worker
async function inWorker(): Promise<void> {
  await ready;
  const choice: WorkerEmbedder = 'lexical';
  const workerOptions: Required<WorkerOptions> = { embedder: choice, worker: new URL('./my-worker.js', 'file:///app/') };
  const worker: CondenseWorker = await createWorker(workerOptions);
  const version2: string = worker.version;
  const wIdentity: EmbedderIdentity = worker.embedder;
  const wi: WorkerIndex = await worker.createIndex({ chunk: { maxChars: 800 } });
  const n: number = await wi.add(documents, { onProgress: (p: Progress) => read(p.phase) });
  const r: QueryResult = await wi.query('one', queryOptions);
  const info2: DocumentInfo | undefined = await wi.get('d1');
  const saved: Uint8Array = await wi.serialize();
  const loaded: WorkerIndex = await worker.loadIndex(saved);
  read(version2, wIdentity, n, wi.size, wi.chunks, resultOf(r), info2, await wi.identity(), await wi.remove(['d1']), loaded.size);
  await wi.free();
  const cw: CompressResult = await worker.compress(messages, workerCompressOptions);
  const cwj: CompressJsonResult = await worker.compressJson(JSON.stringify(messages), null);
  const ww: WatermarkResult = await worker.applyWatermark(messages, state, watermarkOptions);
  const wwj: WatermarkJsonResult = await worker.applyWatermarkJson(JSON.stringify(messages));
  const vw: Validation = await worker.validate(messages);
  const uw: Message[] = await worker.uncompress(cw.messages, cw.verbatim);
  const uwj: string = await worker.uncompress(cwj.json, cwj.verbatim);
  const pw: PrepareContextResult = await worker.prepareContext(chunks, { tokenBudget: 20, query: 'tokens' });
  read(pw);
  const rw: QueryResult = await worker.compressResults([candidate], 'text', { topN: 1 });
  const ew: Float32Array[] = await worker.embed(['x']);
  const a: WatermarkRequestResult = await worker.watermarkRequest(body, null, { provider: 'anthropic' });
  const b: CompressRequestResult = await worker.compressRequest(body);
  const p: PrepareRequestResult = await worker.prepareRequest(body, { state: a.state });
  read(cw, cwj, ww, wwj, vw, uw, uwj, rw, ew, a, b, p);
  await worker.terminate();
  // A Web Worker started by the caller (a bundle entry importing condense-ctx/worker).
  const own: CondenseWorker = await createWorker({ worker: new Worker(new URL('./condense-worker.js', 'https://example.invalid/'), { type: 'module' }) });
  await own.terminate();
  const minilm: WorkerEmbedder = { minilm: { modelUrl: 'https://example.invalid/model.onnx' } };
  read(minilm, version());
}
void inWorker();

// ------------------------------------------------------------------ MiniLM (loadEmbedder)
async function minilm(): Promise<number> {
  const progress = (p: LoadProgress): void => {
    const covered: Covers<LoadProgress, 'phase' | 'file' | 'loaded' | 'total'> = true;
    read(covered, p.phase, p.file, p.loaded, p.total);
  };
  const options: Required<LoadEmbedderOptions> = {
    model: new Uint8Array(0), tokenizer: '{}', modelPath: 'model.onnx', tokenizerPath: new URL('file:///t.json'),
    modelUrl: 'https://example.invalid/model.onnx', tokenizerUrl: new URL('https://example.invalid/t.json'),
    maxTokens: 256, batchSize: 32, onProgress: progress,
  };
  const e: Embedder = await loadEmbedder(options);
  const info: { castsFolded: number; loadMs: number } | null = e.loadInfo();
  const mirror: Embedder = externalEmbedder(e.identity(), (texts: string[]) => texts.map(() => new Float32Array(384)));
  const flat: Embedder = externalEmbedder(e.identity(), (texts: string[]) => new Float32Array(texts.length * 384));
  return read(info?.castsFolded, info?.loadMs, mirror.embed(['x']), flat.embed(['y']),
    compress(messages, { query: 'files', embedder: e }).stats.ratio);
}
void minilm;

// ------------------------------------------------------------------ condense-ctx/manual (init)
async function manual(): Promise<number> {
  const options: Required<InitOptions> = { wasm: new URL('https://example.invalid/condense_bg.wasm') };
  const sources: InitOptions[] = [
    { wasm: 'condense_bg.wasm' }, { wasm: new Uint8Array(0) }, { wasm: new ArrayBuffer(0) },
    { wasm: new WebAssembly.Module(new Uint8Array(0)) }, { wasm: await fetch('condense_bg.wasm') }, {},
  ];
  const api: Condense = await init(options);
  await init(null);
  await init();
  const r: CompressResult = api.compress(messages, { recencyWindow: 2 });
  const index: Index = api.Index.create({ embedder: api.lexicalEmbedder() });
  const minilm: Embedder = await api.loadEmbedder({ modelUrl: 'https://example.invalid/model.onnx' });
  const same: boolean = ManualError === CondenseError && api.CondenseError === CondenseError;
  return read(sources, r.stats.ratio, api.query(index, 'q').text, minilm.identity().kind, same, api.version(), api.ERROR_CODES.length,
    api.watermarkRequest('{}').body);
}
void manual;
