// Type definitions for condense-ctx. Hand-written; `tests/npm` checks the error codes and the
// option keys against the Rust sources.

/** A message in the Anthropic Messages or OpenAI Chat Completions shape. Unknown fields pass through. */
export type Message = {
  role: 'user' | 'assistant' | 'system' | 'developer' | 'tool';
  content?: string | ContentBlock[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  [field: string]: unknown;
};

/** A content block (`text`, `tool_use`, `tool_result`, `thinking`, `image`, …); any other type passes through. */
export type ContentBlock = { type: string; [field: string]: unknown };

/** An OpenAI tool call. */
export type ToolCall = { id: string; type?: 'function'; function: { name: string; arguments: string }; [field: string]: unknown };

/** A provider's message shape. */
export type Format = 'anthropic' | 'openai';

/**
 * Every error code (`CondenseError.code`). Stable across releases. Among them:
 * - `invalid_json`: not JSON, a key twice in one object (`{"messages": [], "messages": [...]}`,
 *   which JSON.parse and a raw reader read differently), or a message nested deeper than 127
 *   levels; `path` names the spot.
 * - `invalid_options` / `invalid_state`: also a `NaN` or `±Infinity` anywhere in an options or
 *   state object (JSON has no such numbers: `JSON.stringify` would write `null`).
 * - `too_large`: a message of more than 64 MiB of JSON, an index document of more than 8 MiB, an index
 *   past 1,048,576 chunks.
 * - `invalid_state`: an object (an `Index`, an `Embedder`) that was freed, that is busy (called
 *   from its own `onProgress`), or that lived in a module instance that trapped.
 * - `internal`: a bug, or wasm memory exhausted: the module trapped. The package replaced the
 *   instance; the next call works; objects made before answer `invalid_state`.
 */
export type ErrorCode =
  | 'invalid_json'
  | 'invalid_input'
  | 'invalid_message'
  | 'invalid_options'
  | 'invalid_state'
  | 'mixed_format'
  | 'too_large'
  | 'invalid_model'
  | 'invalid_index'
  | 'embedder_mismatch'
  | 'internal';

/** The codes, as an array. */
export const ERROR_CODES: readonly ErrorCode[];

/**
 * Thrown for bad input: branch on `code`, show `path`. Every function throws this and only this
 * for anything the package can name (a trap of the wasm module included: `internal`, after which
 * the package runs a new instance), besides the caller's own callbacks' errors where a function
 * passes them on.
 */
export class CondenseError extends Error {
  readonly name: 'CondenseError';
  /** What went wrong, as a stable code. */
  readonly code: ErrorCode;
  /** The JSON path of the offending field, e.g. `messages[3].content[1].tool_use_id`, or `""`. */
  readonly path: string;
  /** Why, in words (the message without the code and path). */
  readonly reason: string;
}

// ---------------------------------------------------------------------------- applyWatermark

/** The state the caller keeps between calls. */
export interface WatermarkState {
  /** The tool call id of the current checkpoint; `null` before the first. */
  watermark: string | null;
}

/** Options of applyWatermark. Unknown keys are refused with `invalid_options`. */
export interface WatermarkOptions {
  /**
   * Tool names that set a checkpoint; `NAME` and `mcp__<server>__NAME` match.
   * @default ["compress_to_checkpoint", "deactivate_augments"]
   */
  checkpointTools?: string[];
  /** Keep the last N tool call/result pairs before the watermark whole. @default 0 */
  keepLastToolResults?: number;
  /** Tool names or globs (`*`, `?`, `[abc]`, `{a,b}`) whose pairs are kept whole, e.g. `"mcp__memory__*"`. @default [] */
  excludeTools?: string[];
  /**
   * Keep each pair and replace the result's content by a short marker naming the tool, the id and
   * the size — only where the marker is shorter. Server tool pairs are always removed. @default false
   */
  placeholder?: boolean;
  /** With `placeholder`, replace the inputs (arguments) of the kept calls by `{}`. @default false */
  clearToolInputs?: boolean;
  /** Keep thinking blocks before the watermark (the current tool turn's are always kept). @default false */
  keepThinking?: boolean;
  /** Force a provider's shape instead of detecting it. @default detected */
  format?: Format;
}

/** What applyWatermark did. `chars*` and `tokens*` measure the messages' JSON text. */
export interface WatermarkStats {
  /** Index of the watermark message in the input, when a watermark applies. */
  watermarkIndex: number | null;
  /** Whether this call moved the watermark to a newer checkpoint. */
  advanced: boolean;
  /** Tool calls, tool results and thinking blocks removed (the sum of the next three). */
  blocksRemoved: number;
  /** Tool calls removed (`tool_use` blocks, OpenAI `tool_calls` entries). */
  toolCallsRemoved: number;
  /** Tool results removed (`tool_result` blocks, OpenAI `tool` messages). */
  toolResultsRemoved: number;
  /** Thinking blocks removed. */
  thinkingRemoved: number;
  /** Results replaced by a placeholder. */
  placeholders: number;
  /** Tool inputs replaced by `{}`. */
  inputsCleared: number;
  /** Pairs kept whole before the watermark. */
  pairsKept: number;
  /** `cache_control` markers moved to a kept block. */
  cacheControlMoved: number;
  /** Messages in the input. */
  messagesBefore: number;
  /** Messages in the output. */
  messagesAfter: number;
  /** Messages removed (emptied, or OpenAI tool messages). */
  messagesDropped: number;
  /** Messages merged into the one before them. */
  messagesMerged: number;
  /** Characters (code points) of the messages' JSON before. */
  charsBefore: number;
  /** Characters after. */
  charsAfter: number;
  /** Estimated tokens before. */
  tokensBefore: number;
  /** Estimated tokens after. */
  tokensAfter: number;
}

/** Something the caller should know that did not stop the call. */
export interface Warning {
  /** `watermark_not_found`, `merge_field_conflict` or `cache_control_dropped`. */
  code: 'watermark_not_found' | 'merge_field_conflict' | 'cache_control_dropped';
  /** What happened. */
  message: string;
  /** The JSON path concerned. */
  path?: string;
}

/** The result of applyWatermark. */
export interface WatermarkResult {
  /** The pruned messages. Untouched messages are the very objects you passed in: treat them as read-only. */
  messages: Message[];
  /** Pass this to the next call. */
  state: WatermarkState;
  /** Counts. */
  stats: WatermarkStats;
  /** Warnings (e.g. `watermark_not_found`: nothing was pruned). */
  warnings: Warning[];
}

/** The result of applyWatermarkJson. */
export interface WatermarkJsonResult {
  /** The pruned document (array or request body); untouched messages keep their exact bytes. */
  json: string;
  /** Pass this to the next call. */
  state: WatermarkState;
  /** Counts. */
  stats: WatermarkStats;
  /** Warnings. */
  warnings: Warning[];
}

/**
 * Prunes tool calls and results before the newest checkpoint call, keeping every text; the
 * output is a valid request whenever the input was.
 * @throws {CondenseError} for malformed messages, options or state.
 */
export function applyWatermark(messages: Message[], state?: WatermarkState | null, options?: WatermarkOptions | null): WatermarkResult;

/**
 * applyWatermark on JSON text: an array of messages or a provider request body with `messages`.
 * The fast path for proxies: untouched messages and every other body member keep their bytes.
 * @throws {CondenseError}
 */
export function applyWatermarkJson(json: string, state?: WatermarkState | null, options?: WatermarkOptions | null): WatermarkJsonResult;

// ---------------------------------------------------------------------------- validate

/** Options of validate. */
export interface ValidateOptions {
  /** The provider whose rules apply. @default detected (OpenAI rules when nothing tells) */
  format?: Format;
}

/** One broken rule. */
export interface Violation {
  /**
   * `invalid_role`, `first_not_user`, `same_role_run`, `empty_message`, `empty_text_block`,
   * `orphan_tool_use`, `orphan_tool_result`, `tool_result_not_first`, `misplaced_block`,
   * `duplicate_tool_id`.
   */
  code: string;
  /** Where, e.g. `messages[4].content[0]`. */
  path: string;
  /** What is wrong. */
  message: string;
}

/** The result of validate. */
export interface Validation {
  /** No violation. */
  valid: boolean;
  /** The rules applied. */
  format: Format;
  /** Every violation, in message order. */
  violations: Violation[];
}

/**
 * Checks messages (objects or JSON text) against a provider's request rules.
 * @throws {CondenseError} for malformed messages.
 */
export function validate(messages: Message[] | string, options?: ValidateOptions | null): Validation;

// ---------------------------------------------------------------------------- compress

/** Options of compress. Unknown keys are refused with `invalid_options`. */
export interface CompressOptions {
  /** Roles never compressed. @default ["system", "developer"] */
  preserveRoles?: string[];
  /** The last N messages are kept verbatim. @default 4 */
  recencyWindow?: number;
  /** Content shorter than this many characters is kept. @default 120 */
  minChars?: number;
  /** Replace exact duplicates by a reference to the newest copy. @default true */
  dedup?: boolean;
  /** Also replace near-duplicates (line Jaccard ≥ fuzzyThreshold). @default false */
  fuzzyDedup?: boolean;
  /** Similarity from which two texts are near-duplicates (0–1). @default 0.85 */
  fuzzyThreshold?: number;
  /** Regular expressions (Rust syntax): matching content is kept verbatim. @default [] */
  preservePatterns?: string[];
  /** Sentences and entries related to this text are kept first: by embedding cosine with `embedder`, by shared terms without. @default none */
  query?: string | null;
  /**
   * The embedder for query relevance (`await loadEmbedder()` for MiniLM): every unique sentence
   * is embedded once per call, so with MiniLM a long history costs seconds. Only used with
   * `query`. @default none (term overlap)
   */
  embedder?: Embedder;
  /** Code fences are kept verbatim (the prose around them may be summarised). @default true */
  preserveCode?: boolean;
  /**
   * Keep every number of tool output even where a lossy rendering is allowed (under a token
   * budget, or with `lossyToolOutput`): arrays of 24+ numbers are otherwise summarised there by
   * count, range, first and last values. The default pass keeps them all anyway. @default false
   */
  preserveNumbers?: boolean;
  /**
   * Let the default pass summarise tool output lossily (numeric series, strings of 200+
   * characters in JSON, line-structured output by its status lines and paths, plain output as
   * prose with up to 24 key tokens). By default tool output keeps every value: JSON and Python
   * literals are rendered without their syntax only, plain output keeps every key token
   * (numbers, identifiers, paths, URLs), line-structured output stays as it is. A token budget
   * may summarise lossily either way. @default false
   */
  lossyToolOutput?: boolean;
  /**
   * A token budget the result must meet (tokens of the messages' text in the call's counter:
   * the estimate, which errs high against o200k, unless `countTokens` or `tokenCounter` is given). Every compressible text is cut to the largest common share that
   * fits (found by bisection); if that is not enough the pipeline escalates — smaller recency
   * window, condensed tool-call arguments, folding the oldest messages into one summary,
   * truncation of the oldest texts — until it fits or nothing compressible is left;
   * `stats.fits` tells which. @default none
   */
  tokenBudget?: number | null;
  /** A budget as a fraction of the input's tokens (0 < r ≤ 1), used without `tokenBudget`. @default none */
  targetRatio?: number | null;
  /** Conversations of at most this many tokens are returned unchanged. @default 0 */
  minTokens?: number;
  /**
   * Importance scoring: a message whose score (0–1) reaches `importanceThreshold` is kept
   * verbatim (trace reason `importance 0.72 ≥ threshold 0.65`). The score weighs three signals:
   * the share of its key tokens (identifiers, numbers, paths, …) a later message uses again
   * (0.45), decision and constraint language — must, never, always, required, important,
   * decided, make sure, deadline … (0.30), and key-token density (0.25). Applies to the default
   * pass; a token budget the default pass cannot meet may still summarise such messages.
   * @default false
   */
  importanceScoring?: boolean;
  /** The importance score (0–1) from which a message is kept with `importanceScoring`. @default 0.65 */
  importanceThreshold?: number;
  /**
   * Contradiction detection: when a later message of the same role corrects an earlier one
   * ("actually, use port 8080 not 8000", "correction: …", "scratch that", "I meant …") and
   * shares its topic, the earlier message becomes
   * `[summary#id: superseded by <message id> (<signal>) — <short summary>]` (action
   * `superseded`, counted in `stats.superseded`; `uncompress` restores it). @default false
   */
  contradictionDetection?: boolean;
  /** Direct quotes (`"…"`, `“…”`, Markdown `> …` lines) are kept verbatim in summaries (`| quotes: …`). @default false */
  preserveQuotes?: boolean;
  /**
   * The lowest confidence (0–1) a summary needs to replace its original: the share of the
   * original's key tokens (identifiers, numbers, paths, URLs, code spans) it still contains
   * (1 without key tokens). Below it the original stays (trace `confidence 0.40 below
   * minConfidence 0.8`). Duplicate references, and the budget's truncation and folding, are
   * not judged. @default 0
   */
  minConfidence?: number;
  /** Return one decision record per message. @default false */
  trace?: boolean;
  /** Force a provider's shape. @default detected */
  format?: Format;
  /**
   * Which tokens budgets, `minTokens` and every stat count: `"estimate"` (a fast estimator
   * fitted to o200k that errs high) or `"model"` (the exact count in the tokenizer of
   * `embedder`, which must come from `loadEmbedder()`; `invalid_options` otherwise). Use
   * `countTokens` for your own model's tokenizer. @default "estimate"
   */
  tokenCounter?: TokenCounterKind;
  /**
   * Your own token counter, e.g. gpt-tokenizer's `countTokens` (o200k) or a tiktoken
   * encoder's `(t) => enc.encode(t).length`: budgets, `minTokens` and stats are then in its
   * tokens. Called synchronously, once per distinct text per call (memoised). A throw or a
   * result that is not a non-negative integer is a `CondenseError` (`invalid_options`,
   * path `options.countTokens`). Not with `tokenCounter: "model"` (`invalid_options` at
   * `options.tokenCounter`). @default none
   */
  countTokens?: (text: string) => number;
  /**
   * How texts are summarised: `"extractive"` (deterministic sentence selection),
   * `"hierarchical"` (under a budget, the shallowest of the levels 50% → 25% → 12.5% of each
   * text that fits; `stats.level`), `"abstractive"` (`summarizer` rewrites each original text)
   * or `"hybrid"` (extract, then `summarizer` rewrites the extract). Without a `summarizer`,
   * abstractive and hybrid are extractive with a warning in `stats.warnings`.
   * @default "extractive"
   */
  method?: CompressMethod;
  /**
   * An LLM summariser for `method: "abstractive" | "hybrid"`; with it, compress and
   * compressJson return a Promise. Its text is used only when non-empty and shorter (in the
   * call's tokens) than the original it replaces; otherwise, and when it throws or rejects,
   * the deterministic summary stays (`stats.summarizer`, `stats.warnings`). Markers and
   * `uncompress` work as always; the output is deterministic given the summaries. @default none
   */
  summarizer?: Summarizer;
  /** How many summarizer calls may be pending at once. @default 4 */
  summarizerConcurrency?: number;
  /**
   * Summaries by request id (`SummaryRequest.id`), used in place of the deterministic ones
   * where accepted (what `summarizer` fills in; give it yourself to replay a call).
   * @default none
   */
  summaries?: Record<string, string> | null;
  /**
   * The incremental cache: pass `null` for a new one, then the previous result's
   * `cache` on every later call (or its `JSON.stringify`). The result is byte-identical with or
   * without it; it only saves the summaries of texts seen before (keyed by a hash of everything
   * they depend on, so a cache from other options or another query only misses). The result
   * carries the updated cache as `result.cache`, and `stats.cacheHits` / `stats.cacheMisses`.
   * A cache of another version or engine, or edited (checksum), is ignored and rebuilt with a
   * warning in `stats.warnings`; one of the wrong shape throws `invalid_options` at its path
   * (`options.cache.entries[3].value`). Goes with every other option: with `countTokens`,
   * prefix-stable blocks are not stored (a counter has no identity a key could hold), and a
   * `summarizer`'s own summaries are never stored. A cache is trusted input: whoever can write
   * it can put text into later summaries — keep it where only you write, or bind it to a
   * secret with `cacheKey`. @default none (no cache)
   */
  cache?: CompressCache | string | null;
  /**
   * A secret the cache is bound to: its checksum becomes an HMAC-SHA256 under this key, and a
   * cache whose MAC does not check out under it (forged, edited, written without the key or
   * under another) is ignored and rebuilt with a warning in `stats.warnings`. Use it for a
   * cache read back from shared storage. @default none (an unkeyed checksum that only catches
   * accidents)
   */
  cacheKey?: string;
  /**
   * The most entries the cache keeps; the least recently used go first (deterministic). At most
   * 1,048,576, the most a cache may hold: a cache read with more is refused (`too_large` at
   * `options.cache.entries`). @default 10000
   */
  cacheLimit?: number;
  /**
   * Prefix-stable mode: re-compressing the conversation grown by new messages leaves the earlier
   * result's first `stats.prefixMessages` messages byte-identical, so provider prompt caches keep
   * hitting. Messages are compressed in fixed blocks of 4 from the start, each on its own (dedup,
   * merges and references stay inside a block), once all of a block is older than the recency
   * window; later messages are kept verbatim. Under a budget the stable output is used while it
   * fits; otherwise the whole conversation is compressed as usual and `stats.prefixStable` is
   * false, with a warning. Works without a cache (the cache makes frozen blocks free). @default false
   */
  prefixStable?: boolean;
}

/** `CompressOptions.tokenCounter`. */
export type TokenCounterKind = 'estimate' | 'model';

/** `CompressOptions.method`. */
export type CompressMethod = 'extractive' | 'abstractive' | 'hybrid' | 'hierarchical';

/** What the summarizer is asked for one text. */
export interface SummaryRequest {
  /** The key of its summary in `options.summaries` (a hash of the original text). */
  id: string;
  /** The size to aim at: the deterministic summary's tokens (in the call's counter). */
  targetTokens: number;
  /** The original's tokens: a longer or equal summary is not used. */
  originalTokens: number;
  /** The message's role. */
  role: string;
  /** `"prose"`, `"tool_output"` (plain-text tool output) or `"merged"` (a run of messages of one role). */
  kind: string;
  /** The input index of the message (the first of a merged run). */
  index: number;
  /** The block of an Anthropic message, for a block's text. */
  block?: number;
  /** The call's method (`"abstractive"` or `"hybrid"`). */
  method?: CompressMethod;
  /** The call's `query`, if any. */
  query?: string | null;
}

/**
 * A summariser: `text` is the original (abstractive) or its extractive summary (hybrid).
 * Resolve to the summary; anything but a string, or a rejection, keeps the deterministic one.
 */
export type Summarizer = (text: string, request: SummaryRequest) => Promise<string> | string;

/** What became of the summarizer's summaries (`method` abstractive / hybrid with summaries). */
export interface SummarizerStats {
  /** Texts the summarizer was asked for. */
  requested: number;
  /** Summaries used. */
  accepted: number;
  /** Summaries not used: empty, or not shorter than the original. */
  rejected: number;
  /** Calls that threw, rejected or returned no string. Under a budget the final result may fold or truncate a text a summary was asked for: `accepted + rejected + failed ≤ requested`. */
  failed: number;
}

/** compress's incremental cache, as returned in `result.cache` (treat it as opaque; JSON-serialisable). */
export interface CompressCache {
  /** Format version (1). */
  version: number;
  /** The engine that built it (`condense-ctx 0.1.0`): another engine's cache is rebuilt. */
  engine: string;
  /** How many calls have used it. */
  generation: number;
  /** FNV-1a over the entries (an edited cache is rebuilt), or with `cacheKey` `mac:` and an HMAC-SHA256 under the key (a forged one is). */
  checksum: string;
  /** The entries: a hash of what the value depends on, the value, and the call that last used it. */
  entries: { key: string; value: string; used: number }[];
}

/** What compress did. */
export interface CompressStats {
  /** Messages in the input. */
  messagesBefore: number;
  /** Messages in the output. */
  messagesAfter: number;
  /** Tokens of the messages' text before, in the call's counter (the estimator, `tokenCounter: "model"` or `countTokens`). */
  tokensBefore: number;
  /** Tokens after, in the same counter. */
  tokensAfter: number;
  /** tokensBefore / tokensAfter. */
  ratio: number;
  /** Messages kept verbatim. */
  preserved: number;
  /** Texts replaced by a summary. */
  summarized: number;
  /** Texts replaced by a duplicate reference. */
  deduped: number;
  /** Messages merged into the one before them. */
  merged: number;
  /** Texts whose prose was summarised around verbatim code. */
  codeSplit: number;
  /** Messages replaced by a `superseded by …` marker because a later message corrects them (`contradictionDetection`). */
  superseded: number;
  /** Texts cut to a preview by the budget's last step. */
  truncated: number;
  /** Messages whose tool-call arguments the budget condensed to a reference (`{"_condensed":"[call#id]"}`; ids, names and pairing stay). */
  condensedCalls: number;
  /** The oldest messages folded into one `user` summary by the budget's last steps (only where the provider's rules still hold). */
  folded: number;
  /** The budget applied, or null. */
  budget: number | null;
  /** Whether tokensAfter ≤ budget (null without a budget). */
  fits: boolean | null;
  /** How far the budget escalated (0: the default pass was enough; 1–6: the stages that keep less verbatim, in order; 7: truncation; 8: everything folded). */
  escalation: number;
  /** `method: "hierarchical"` under a budget: the level used (0: 50%, 1: 25%, 2: 12.5%); absent when the default pass was used or more than level 2 was needed. */
  level?: number;
  /** `method` abstractive / hybrid with a summarizer (or `summaries`): what became of the summaries. */
  summarizer?: SummarizerStats;
  /** With `cache`: summaries (and prefix-stable blocks) reused from the cache. */
  cacheHits?: number;
  /** With `cache`: summaries (and blocks) computed and stored. */
  cacheMisses?: number;
  /** With `prefixStable`: true when the stable rule held; false when the budget forced a whole re-compression. */
  prefixStable?: boolean;
  /** With `prefixStable` (when it held): how many output messages form the frozen prefix. */
  prefixMessages?: number;
  /** What you should know: a method that fell back to extractive, a summarizer that failed, a cache ignored and rebuilt, a prefix re-compressed. Absent when none. */
  warnings?: string[];
}

/** One classification decision (`trace: true`). */
export interface Decision {
  /** The input message's index. */
  index: number;
  /** The block, for a decision about one block. */
  block?: number;
  /** `preserved`, `summarized`, `deduped`, `merged`, `code_split`, `superseded`, `truncated`, `condensed` or `folded`. */
  action: string;
  /** Why. */
  reason: string;
}

/** The result of compress. */
export interface CompressResult {
  /**
   * The compressed messages, in the input's shape. A message kept as it is is the caller's own
   * object (not a copy), as in applyWatermark; new messages are new objects.
   */
  messages: Message[];
  /**
   * The originals of every rewritten message, by the id in its marker: pass to uncompress.
   * They are the caller's own message objects (not copies).
   */
  verbatim: Record<string, Message[]>;
  /** Counts. */
  stats: CompressStats;
  /** Decisions, with `trace: true`. */
  trace?: Decision[];
  /** The updated incremental cache, when `options.cache` was given: pass it to the next call. */
  cache?: CompressCache;
}

/** The result of compressJson. */
export interface CompressJsonResult {
  /** The compressed document; kept messages keep their exact bytes. */
  json: string;
  /** The verbatim map as JSON text (originals byte-identical). */
  verbatim: string;
  /** Counts. */
  stats: CompressStats;
  /** Decisions, with `trace: true`. */
  trace?: Decision[];
  /** The updated incremental cache, when `options.cache` was given. */
  cache?: CompressCache;
}

/**
 * Compresses a conversation: classify, dedup, merge, summarise, size guard (docs/design.md, "The compress pipeline").
 * With a `summarizer` it returns a Promise (two phases: the texts to summarise, then the
 * compression with the accepted summaries).
 * @throws {CondenseError}
 */
export function compress(messages: Message[], options: CompressOptions & { summarizer: Summarizer }): Promise<CompressResult>;
export function compress(messages: Message[], options?: (CompressOptions & { summarizer?: undefined }) | null): CompressResult;

/** compress on JSON text (an array or a request body); a Promise with a `summarizer`. @throws {CondenseError} */
export function compressJson(json: string, options: CompressOptions & { summarizer: Summarizer }): Promise<CompressJsonResult>;
export function compressJson(json: string, options?: (CompressOptions & { summarizer?: undefined }) | null): CompressJsonResult;

/**
 * The original messages back from compress's output and its verbatim map (objects, or JSON text
 * for both, in which case JSON text is returned with the originals byte-identical). A message
 * is restored only where the marker id it carries checks out at its position (the id is a hash
 * of its originals' position and text): a message that quotes a marker comes back unchanged,
 * and messages appended after the compressed ones are kept.
 * @throws {CondenseError}
 */
export function uncompress(messages: Message[], verbatim: Record<string, Message[]>): Message[];
export function uncompress(json: string, verbatim: string): string;

/** A chunk of context for prepareContext: a string, or an object with `text` (other fields ignored). */
export type ContextChunk = string | { id?: string | number; text: string; [key: string]: unknown };

/** Options of prepareContext. Unknown keys are refused with `invalid_options`. */
export interface PrepareContextOptions {
  /** The budget of the assembled text in estimated tokens. Required. */
  tokenBudget: number;
  /** What the context is for: relevant chunks get larger shares (BM25, or cosine with `embedder`). @default none (all equal) */
  query?: string | null;
  /** Put between chunks (counted in the budget). @default "\n\n" */
  separator?: string;
  /** Relevance by embedding cosine of the query with each chunk instead of BM25. @default none */
  embedder?: Embedder;
}

/** What prepareContext did with one chunk. */
export interface ChunkReport {
  /** The chunk's id (its index as text when it had none). */
  id: string;
  /** Relevance to the query in [0, 1] (1 without a query). */
  relevance: number;
  /** Tokens allocated to it (0 when dropped). */
  share: number;
  /** Its estimated tokens. */
  tokensBefore: number;
  /** Estimated tokens of what went into the text (0 when dropped). */
  tokensAfter: number;
  /** Whether it was summarised. */
  compressed: boolean;
  /** Whether it was left out (the budget could not give it a useful share; least relevant first). */
  dropped: boolean;
}

/** Totals of prepareContext. */
export interface PrepareContextStats {
  /** Estimated tokens of all chunks joined. */
  tokensBefore: number;
  /** Estimated tokens of the assembled text. */
  tokensAfter: number;
  /** The budget. */
  budget: number;
  /** tokensAfter ≤ budget, measured on the text. */
  fits: boolean;
  /** Chunks summarised. */
  compressed: number;
  /** Chunks dropped. */
  dropped: number;
}

/** The result of prepareContext. */
export interface PrepareContextResult {
  /** The kept chunks, each compressed to its share, in input order, joined by the separator. */
  text: string;
  /** One report per input chunk. */
  chunks: ChunkReport[];
  /** Totals. */
  stats: PrepareContextStats;
}

/**
 * The context manager: shares `tokenBudget` across chunks by relevance to `query`
 * (weight 0.25 + 0.75·relevance, water-filled), compresses each chunk to its share with the
 * extractive summariser, drops the least relevant chunks whole when a share would be under 16
 * tokens, and never returns more than the budget (`stats.fits`).
 * @throws {CondenseError}
 */
export function prepareContext(chunks: ContextChunk[], options: PrepareContextOptions): PrepareContextResult;

// ---------------------------------------------------------------------------- retrieval

/** Makes vectors. `lexicalEmbedder()` needs no files; MiniLM needs the model (see README). */
export interface Embedder {
  /** What built this embedder's vectors; indexes record it. */
  identity(): EmbedderIdentity;
  /** One unit-length `Float32Array` (384 values) per text, in input order. @throws {CondenseError} */
  embed(texts: string[]): Float32Array[];
  /**
   * How a model embedder was loaded (`null` for the lexical embedder): int8 casts taken out of
   * the run time (constants folded, tables converted row by row as a call reads them),
   * plan nodes run by condense's own evaluation instead of tract's generic fallbacks, weight
   * matmuls run as integer products (activations rounded to 16 bits; 36 for MiniLM-L6 in wasm,
   * whose vectors are then bit-identical to the native build's on x86-64), and load time.
   */
  loadInfo(): {
    castsFolded: number;
    nodesRepaired: number;
    integerMatmuls: number;
    loadMs: number;
  } | null;
  /** Releases the wasm memory (only once no index uses it). Calls after it throw `invalid_state`. */
  free(): void;
}

/** The identity of an embedder: two vectors are comparable only if their identities are equal. */
export interface EmbedderIdentity {
  kind: 'minilm' | 'lexical';
  /** sha256 of the ONNX model; null for the lexical embedder. */
  modelSha256: string | null;
  dims: number;
  maxTokens: number | null;
  version: number;
}

/** The lexical fallback embedder: hashed word and character n-grams, no model files. */
export function lexicalEmbedder(): Embedder;

/** Where `loadEmbedder` is in its work. */
export interface LoadProgress {
  /** `download`: bytes of a file arriving (Node reads report once per file); `load`: the model is being compiled (start: `loaded` 0; end: `loaded === total`). */
  phase: 'download' | 'load';
  /** Which file: the model, its tokenizer, or (browsers) the model engine's wasm module. */
  file: 'model' | 'tokenizer' | 'engine';
  /** Bytes so far. */
  loaded: number;
  /** Bytes in all (`null` when the server sent no Content-Length). */
  total: number | null;
}

/**
 * Where `loadEmbedder` finds the model. Give at most one source per file; by default both files
 * shipped in the package are used (`models/model.onnx`, `models/tokenizer.json`, next to the entry
 * module: read from disk in Node, fetched relative to the module in browsers and extensions).
 */
export interface LoadEmbedderOptions {
  /** The ONNX model's bytes (a MiniLM-family BERT encoder with 384-dim output). */
  model?: Uint8Array | ArrayBuffer;
  /** The `tokenizer.json` (WordPiece) bytes or text. */
  tokenizer?: Uint8Array | ArrayBuffer | string;
  /** Node only: a file path or `file:` URL of the ONNX model. */
  modelPath?: string | URL;
  /** Node only: a file path or `file:` URL of `tokenizer.json`. */
  tokenizerPath?: string | URL;
  /** A URL to fetch the ONNX model from (browsers, extensions, Node >= 18). */
  modelUrl?: string | URL;
  /** A URL to fetch `tokenizer.json` from. */
  tokenizerUrl?: string | URL;
  /** Token budget per text, `[CLS]`/`[SEP]` included: 2..=512, default 256. Part of the identity. */
  maxTokens?: number;
  /** Texts per model call, default 32. */
  batchSize?: number;
  /** Called as files arrive and while the model compiles. */
  onProgress?: (progress: LoadProgress) => void;
}

/**
 * Loads the all-MiniLM-L6-v2 int8 embedder (or another MiniLM-family model): semantic vectors for
 * `Index`, `embed` and query-aware `compress`. Compiling the model takes a moment and runs on the
 * calling thread; do it once and reuse the embedder.
 * @throws {CondenseError} `invalid_model` (a file missing, unreadable, or not a usable model),
 *   `invalid_options` (an unknown or ill-typed option).
 */
export function loadEmbedder(options?: LoadEmbedderOptions): Promise<Embedder>;

/**
 * An embedder over your own function (another model, a service you have already called, a
 * cache): `embed` gets up to 32 texts at a time and returns one unit-length 384-value vector per
 * text (an array of `Float32Array`/number arrays, or one flat `Float32Array`), synchronously.
 * `identity` names what makes the vectors; indexes compare it, so give MiniLM's identity only for
 * MiniLM's vectors. Errors thrown by `embed` surface as `invalid_model`.
 * @throws {CondenseError} `invalid_options` (a bad identity or a non-function).
 */
export function externalEmbedder(
  identity: EmbedderIdentity,
  embed: (texts: string[]) => Float32Array | ArrayLike<number>[],
): Embedder;

/** Embeds texts (with `options.embedder`, default the lexical embedder). @throws {CondenseError} */
export function embed(texts: string[], options?: { embedder?: Embedder }): Float32Array[];

/** A document to index. BEIR corpus lines (`_id`, `title`, `text`) are accepted as they are. */
export interface Document {
  id: string;
  /** Where it came from; shown in results (default: the title, else the id). */
  path?: string;
  /** Indexed as the first line of the text. */
  title?: string;
  /** Markdown (chunked by headers) or plain text (by paragraphs). At most 8 MiB. */
  text: string;
  /** Returned by `get`; not indexed. */
  metadata?: unknown;
}

/** Settings fixed when an index is created. */
export interface IndexOptions {
  /** The embedder of the index (default: the lexical embedder). */
  embedder?: Embedder;
  /** Chunk size bounds in characters (default 200–1500). */
  chunk?: { minChars?: number; maxChars?: number };
  /** BM25 parameters (default k1 0.9, b 0.4). */
  bm25?: { k1?: number; b?: number };
}

/** A piece of a stored document. */
export interface Chunk {
  /** `{docId}#{ordinal}`, stable. */
  id: string;
  docId: string;
  path: string | null;
  /** Markdown headers above the chunk, outermost first. */
  headerPath: string[];
  text: string;
  ordinal: number;
}

/** What `get` returns. */
export interface DocumentInfo {
  id: string;
  path: string | null;
  title: string | null;
  metadata: unknown;
  chunks: Chunk[];
}

/** Progress of `add`: chunking, embedding, then HNSW graph building. */
export interface Progress {
  phase: 'chunk' | 'embed' | 'index';
  done: number;
  total: number;
}

/** An in-memory hybrid index (BM25 + embeddings, HNSW for large segments). Call `free()` when done. */
export class Index {
  private constructor();
  /** An empty index. @throws {CondenseError} `invalid_options` */
  static create(options?: IndexOptions): Index;
  /** Reads `serialize()` bytes; pass the embedder the index was built with. @throws {CondenseError} `invalid_index`, `embedder_mismatch` */
  static deserialize(bytes: Uint8Array, options?: { embedder?: Embedder }): Index;
  /** Chunks, embeds and indexes documents, all or nothing; returns how many. @throws {CondenseError} */
  add(documents: Document[], options?: { onProgress?: (progress: Progress) => void }): number;
  /** Removes documents by id (unknown ids are ignored); returns how many were removed. */
  remove(ids: string[]): number;
  /** A stored document and its chunks, or undefined. */
  get(id: string): DocumentInfo | undefined;
  /** Number of documents. */
  readonly size: number;
  /** Number of chunks. */
  readonly chunks: number;
  /** The embedder identity the index was built with. */
  identity(): EmbedderIdentity;
  /** The index as bytes (versioned, checksummed). */
  serialize(): Uint8Array;
  /** Same as `query(index, question, options)`. */
  query(question: string, options?: QueryOptions | null): QueryResult;
  /**
   * Releases the wasm memory. Calls after it (and calls from inside this index's own `add`, in an
   * `onProgress` callback) throw `invalid_state`; a second `free()` does nothing.
   */
  free(): void;
}

/** Options of `query` and `compressResults` (docs/design.md, "Result compression"). Every field is optional. */
export interface QueryOptions {
  /** Results scoring below this (calibrated 0–1) are dropped. Default 0.3; 0 keeps all. */
  minScore?: number;
  /** Jaccard of word shingles from which a later result is a near-duplicate. Default 0.7; 1 = off. */
  ngramThreshold?: number;
  /** Words per shingle (1–8). Default 3. */
  ngramSize?: number;
  /** Cosine from which results form one cluster, which keeps its best. Default 0.85; 1 = off. */
  similarityThreshold?: number;
  /** At most this many results per document. Default 2; 0 = no limit. */
  maxChunksPerDoc?: number;
  /** At most this many results (1–100). Default 5. */
  topN?: number;
  /** Truncate the results of factual queries at a word boundary. Default true. */
  truncate?: boolean;
  /** Characters a truncated result keeps (at least 20). Default 200. */
  truncateChars?: number;
  /** Layout of `text`. Default 'compact'. */
  format?: 'compact' | 'verbose' | 'json';
  /** query only: weight of the BM25 list in the fusion. Default 1. */
  lexicalWeight?: number;
  /** query only: weight of the embedding list in the fusion. Default 1 with MiniLM, 0 with the lexical embedder. */
  denseWeight?: number | null;
  /**
   * query only: how the BM25 and embedding lists are combined. 'convex' (default): each list's scores
   * normalised for this query (BM25 by its best, cosines min-max), a quarter lexical and three quarters
   * dense before the two weights; 'rrf': Reciprocal Rank Fusion with `rrfK` (ranks only, the fusion of
   * 0.1.0). Scores are calibrated alike either way, so `minScore` means the same.
   */
  fusion?: 'convex' | 'rrf';
  /** query only: the RRF constant k, used with `fusion: 'rrf'`. Default 60. */
  rrfK?: number;
  /**
   * query only: pseudo-relevance feedback on the lexical side (RM3-style expansion). The first
   * fusion's top 10 chunks are taken as relevant; the `feedbackTerms` most frequent words of
   * their text (by their share of each chunk) make a second, weighted BM25 query, whose list is
   * fused as a third list (plain BM25 0.2, expanded BM25 0.1, embeddings 0.7, before the
   * weights). Default true; applies with `fusion: 'convex'` and a `lexicalWeight` above 0
   * (`'rrf'` ignores it). Scores stay calibrated on the question's own BM25 and embedding
   * evidence, so `minScore` means the same with or without it.
   */
  feedback?: boolean;
  /** query only: expansion terms pseudo-relevance feedback adds (1–100). Default 10. */
  feedbackTerms?: number;
  /** query only: hits of each list that are fused (1–10000). Default 1000. */
  candidates?: number;
  /** Overrides the query classification. */
  queryKind?: 'factual' | 'conceptual';
}

/** One result. */
export interface SearchResult {
  chunkId: string;
  docId: string;
  path: string | null;
  headerPath: string[];
  /** Calibrated relevance, 0–1; never increases down the list. */
  score: number;
  content: string;
  truncated: boolean;
}

/** Counts of every compression stage (they add up), sizes, and the names retrieval tools commonly report. */
export interface QueryStats {
  candidates: number;
  afterMinScore: number;
  afterNgramDedup: number;
  afterSemanticDedup: number;
  afterPerDocLimit: number;
  returned: number;
  removedByMinScore: number;
  removedAsNearDuplicate: number;
  removedAsSemanticDuplicate: number;
  removedByPerDocLimit: number;
  removedByTopN: number;
  truncated: number;
  charsBefore: number;
  charsAfter: number;
  tokensBefore: number;
  tokensAfter: number;
  reductionPercent: number;
  originalCount: number;
  afterThreshold: number;
  afterDedup: number;
  clustersMerged: number;
}

/** What `query` and `compressResults` return. */
export interface QueryResult {
  results: SearchResult[];
  /** The results in the chosen format. */
  text: string;
  stats: QueryStats;
  queryKind: 'factual' | 'conceptual';
}

/** Ranks chunks for a question (BM25 + embeddings, RRF) and compresses the results. @throws {CondenseError} */
export function query(index: Index, question: string, options?: QueryOptions | null): QueryResult;

/** A result from another engine (a vector database, a search cluster), best first. */
export interface Candidate {
  chunkId?: string;
  /** Alias of chunkId. */
  id?: string;
  docId: string;
  path?: string | null;
  headerPath?: string[] | string | null;
  /** Relevance in 0–1. */
  score: number;
  content?: string;
  /** Alias of content. */
  text?: string;
  /** The candidate's vector (from `embed`), used by semantic dedup; embedded when absent. */
  embedding?: number[] | null;
}

/** Runs query's compression stages on candidates from any engine. @throws {CondenseError} */
export function compressResults(
  candidates: Candidate[],
  question: string,
  options?: (QueryOptions & { embedder?: Embedder }) | null,
): QueryResult;

// ---------------------------------------------------------------------------- misc

/** The package version (the crate's). */
export function version(): string;

/** Resolved when the wasm module is ready (the import already waits for it). */
export const ready: Promise<void>;

/**
 * Options of `init()` from `condense-ctx/manual`, the entry without top-level await (Manifest V3
 * extension service workers forbid it; content scripts import it with
 * `import(chrome.runtime.getURL(...))`).
 */
export interface InitOptions {
  /**
   * Where `condense_bg.wasm` comes from: a URL (fetched and compiled with
   * `WebAssembly.instantiateStreaming`; the server must send `application/wasm`), a `Response`,
   * its bytes, or a compiled `WebAssembly.Module`. An extension needs `'wasm-unsafe-eval'` in its
   * CSP. @default the file next to the module (`new URL('./condense_bg.wasm', import.meta.url)`)
   */
  wasm?: string | URL | Response | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
}

// ---------------------------------------------------------------------------- request bodies

/** A provider's request body as JSON text: an Anthropic Messages or OpenAI Chat Completions request. */
export type RequestBody = string;

/** Which provider's rules apply to a request body. @default detected per message */
export type Provider = Format;

/** Options of watermarkRequest: applyWatermark's, with `provider` for `format`. */
export interface WatermarkRequestOptions extends Omit<WatermarkOptions, 'format'> {
  /** Force a provider's shape instead of detecting it. @default detected */
  provider?: Provider;
}

/** compress's options in a worker: everything but the callbacks (they cannot be sent to a worker). */
export type WorkerCompressOptions = Omit<CompressOptions, 'countTokens' | 'summarizer' | 'summarizerConcurrency'>;

/** Options of compressRequest: compress's (synchronous: no `summarizer`), with `provider` for `format`. */
export interface CompressRequestOptions extends Omit<CompressOptions, 'format' | 'summarizer' | 'summarizerConcurrency'> {
  /** Force a provider's shape instead of detecting it. @default detected */
  provider?: Provider;
}

/** The result of watermarkRequest. */
export interface WatermarkRequestResult {
  /** The request body with its `messages` pruned; every other member (model, system, tools, …) keeps its bytes. */
  body: RequestBody;
  /** Pass this to the next call. */
  state: WatermarkState;
  /** Counts (of the messages). */
  stats: WatermarkStats;
  /** Warnings (e.g. `watermark_not_found`: nothing was pruned). */
  warnings: Warning[];
}

/** The result of compressRequest. */
export interface CompressRequestResult {
  /** The request body with its `messages` compressed; every other member keeps its bytes. */
  body: RequestBody;
  /** The originals of rewritten messages as JSON text: `uncompress(messagesJson, verbatim)` restores them. */
  verbatim: string;
  /** Counts (of the messages). */
  stats: CompressStats;
  /** Decisions, with `trace: true`. */
  trace?: Decision[];
  /** The updated incremental cache, when `options.cache` was given. */
  cache?: CompressCache;
}

/** Options of prepareRequest. Unknown keys are refused with `invalid_options`. */
export interface PrepareRequestOptions {
  /** Force a provider's shape for both steps. @default detected */
  provider?: Provider;
  /** The watermark state from the previous call. @default `{ watermark: null }` */
  state?: WatermarkState | null;
  /** applyWatermark's options, or `false` to skip the step. @default {} */
  watermark?: Omit<WatermarkOptions, 'format'> | false | null;
  /** compress's options, or `false` to skip the step. @default {} */
  compress?: Omit<CompressOptions, 'format' | 'summarizer' | 'summarizerConcurrency'> | false | null;
}

/** What prepareRequest saved, measured on the body's JSON text. */
export interface Savings {
  /** Characters (UTF-16 code units) of the body before. */
  charsBefore: number;
  /** Characters after. */
  charsAfter: number;
  /** charsBefore − charsAfter. */
  saved: number;
  /** saved / charsBefore in percent, one decimal. */
  percent: number;
  /** Time both steps took, in milliseconds. */
  ms: number;
}

/** The result of prepareRequest. */
export interface PrepareRequestResult {
  /** The body to send: watermarked, then compressed. */
  body: RequestBody;
  /** Keep for the next call (`options.state`). */
  state: WatermarkState;
  /** compress's verbatim map as JSON text (`"{}"` when the step was skipped). */
  verbatim: string;
  /** The watermark step's stats and warnings, or null when skipped. */
  watermark: { stats: WatermarkStats; warnings: Warning[] } | null;
  /** The compress step's stats (and trace), or null when skipped. */
  compress: { stats: CompressStats; trace?: Decision[] } | null;
  /** Size of the body before and after both steps. */
  savings: Savings;
}

/**
 * applyWatermark on the `messages` of a request body (JSON text in, JSON text out).
 * @throws {CondenseError} `invalid_input` when `body` is not a JSON object text; the core's codes otherwise.
 */
export function watermarkRequest(body: RequestBody, state?: WatermarkState | null, options?: WatermarkRequestOptions | null): WatermarkRequestResult;

/**
 * compress on the `messages` of a request body (JSON text in, JSON text out).
 * @throws {CondenseError} `invalid_input` when `body` is not a JSON object text; the core's codes otherwise.
 */
export function compressRequest(body: RequestBody, options?: CompressRequestOptions | null): CompressRequestResult;

/**
 * What an agent loop runs before each model call: applyWatermark, then compress, on a request
 * body, with the savings.
 * @throws {CondenseError}
 */
export function prepareRequest(body: RequestBody, options?: PrepareRequestOptions | null): PrepareRequestResult;

// ---------------------------------------------------------------------------- worker

/**
 * The embedder a worker makes for itself (wasm objects cannot cross threads): `'lexical'`,
 * `'minilm'` (loadEmbedder() with its defaults) or `{ minilm: options }` (loadEmbedder(options);
 * the options must be structured-cloneable: strings, URLs as strings, bytes as Uint8Array).
 */
export type WorkerEmbedder = 'lexical' | 'minilm' | { minilm: Record<string, unknown> | null };

/** Options of createWorker. Unknown keys are refused with `invalid_options`. */
export interface WorkerOptions {
  /** The embedder of the worker's indexes, `embed` and `compressResults`. @default 'lexical' */
  embedder?: WorkerEmbedder;
  /**
   * The worker to use instead of the package's own: a started Worker (Web Worker, or Node's
   * worker_threads Worker) running `condense-ctx/worker`, or the URL of such a module script.
   * Needed where the bundler does not follow `new Worker(new URL(...))` (esbuild).
   * @default the package's worker.js (browsers) or worker-node.js (Node)
   */
  worker?: string | URL | { postMessage(message: unknown, transfer?: unknown[]): void; terminate(): unknown };
}

/** An Index living in a worker. Same methods as Index, returning Promises. */
export interface WorkerIndex {
  /** Number of documents, as of the last add/remove. */
  readonly size: number;
  /** Number of chunks, as of the last add/remove. */
  readonly chunks: number;
  /** Index.add in the worker; `onProgress` receives its phases on this thread. @throws {CondenseError} */
  add(documents: Document[], options?: { onProgress?: (progress: Progress) => void }): Promise<number>;
  /** Index.remove. */
  remove(ids: string[]): Promise<number>;
  /** Index.get. */
  get(id: string): Promise<DocumentInfo | undefined>;
  /** Index.query. @throws {CondenseError} */
  query(question: string, options?: QueryOptions | null): Promise<QueryResult>;
  /** Index.serialize (the bytes are transferred, not copied). */
  serialize(): Promise<Uint8Array>;
  /** Index.identity. */
  identity(): Promise<EmbedderIdentity>;
  /** Releases the index's memory in the worker; later calls fail with `invalid_state`. */
  free(): Promise<void>;
}

/**
 * The package's functions running in a worker: the same arguments and results, as Promises.
 * Errors arrive as `CondenseError` with `code` and `path`; after `terminate()` or a crash of the
 * worker every call fails with `invalid_state` at `worker`. Calls run one at a time, in order.
 */
export interface CondenseWorker {
  /** The package version in the worker. */
  readonly version: string;
  /** The identity of the worker's embedder. */
  readonly embedder: EmbedderIdentity;
  /** applyWatermark in the worker (the messages are copied, so no result message is your object). */
  applyWatermark(messages: Message[], state?: WatermarkState | null, options?: WatermarkOptions | null): Promise<WatermarkResult>;
  /** applyWatermarkJson in the worker. */
  applyWatermarkJson(json: string, state?: WatermarkState | null, options?: WatermarkOptions | null): Promise<WatermarkJsonResult>;
  /** validate in the worker. */
  validate(messages: Message[] | string, options?: ValidateOptions | null): Promise<Validation>;
  /** compress in the worker (functions do not cross to a worker: no `countTokens` or `summarizer`). */
  compress(messages: Message[], options?: WorkerCompressOptions | null): Promise<CompressResult>;
  /** compressJson in the worker (no `countTokens` or `summarizer`). */
  compressJson(json: string, options?: WorkerCompressOptions | null): Promise<CompressJsonResult>;
  /** uncompress in the worker (objects). */
  uncompress(messages: Message[], verbatim: Record<string, Message[]>): Promise<Message[]>;
  /** uncompress in the worker (JSON text). */
  uncompress(json: string, verbatim: string): Promise<string>;
  /** prepareContext in the worker (relevance by BM25: `embedder` is not sent across). */
  prepareContext(chunks: ContextChunk[], options: Omit<PrepareContextOptions, 'embedder'>): Promise<PrepareContextResult>;
  /** compressResults with the worker's embedder. */
  compressResults(candidates: Candidate[], question: string, options?: QueryOptions | null): Promise<QueryResult>;
  /** watermarkRequest in the worker. */
  watermarkRequest(body: RequestBody, state?: WatermarkState | null, options?: WatermarkRequestOptions | null): Promise<WatermarkRequestResult>;
  /** compressRequest in the worker. */
  compressRequest(body: RequestBody, options?: CompressRequestOptions | null): Promise<CompressRequestResult>;
  /** prepareRequest in the worker (`savings.ms` is the worker's time, without the messaging). */
  prepareRequest(body: RequestBody, options?: PrepareRequestOptions | null): Promise<PrepareRequestResult>;
  /** embed with the worker's embedder (the vectors are transferred). */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** An empty index in the worker, with the worker's embedder. @throws {CondenseError} `invalid_options` */
  createIndex(options?: Omit<IndexOptions, 'embedder'> | null): Promise<WorkerIndex>;
  /** An index from `serialize()` bytes, with the worker's embedder. @throws {CondenseError} `invalid_index`, `embedder_mismatch` */
  loadIndex(bytes: Uint8Array): Promise<WorkerIndex>;
  /** Stops the worker; pending calls fail with `invalid_state`. */
  terminate(): Promise<void>;
}

/**
 * Starts the package in a worker (a module Web Worker in browsers, worker_threads in Node) so
 * indexing and compression do not block this thread. Resolves once the worker's wasm and
 * embedder are loaded. In Node an idle worker does not keep the process alive.
 * @throws {CondenseError} `invalid_options`; `invalid_state` when the worker cannot start.
 */
export function createWorker(options?: WorkerOptions | null): Promise<CondenseWorker>;

/**
 * Embeds `texts` on several workers at once and returns one unit-length `Float32Array` per
 * text, in input order: for large jobs on a machine with free cores (each worker is its own
 * wasm instance, one core each). Start the workers with the same embedder, e.g.
 * `await Promise.all([1, 2].map(() => createWorker({ embedder: 'minilm' })))`; each holds its
 * own copy of the model (~0.5 GB with MiniLM). The texts are dealt to the workers longest first,
 * so the shares are of equal size and length. A text's vector is the one `embed` gives, to
 * float rounding (cosine ≥ 0.99999: only its batch differs).
 * @throws {CondenseError} `invalid_options` at `workers` (empty, not workers, or embedders that
 * differ), `invalid_input` at `texts`.
 */
export function embedParallel(texts: string[], workers: CondenseWorker[]): Promise<Float32Array[]>;
