// Request-body adapters: applyWatermark and compress on the `messages` of an Anthropic Messages
// request or an OpenAI Chat Completions request, as JSON text in and out. A thin layer over
// applyWatermarkJson / compressJson (the Rust side already reads request bodies and copies every
// other member, and every untouched message, byte for byte); what it adds is the check that the
// text is a request body, the provider name, and one call for both steps with the savings.
import { CondenseError } from './common.js';

const PROVIDERS = ['anthropic', 'openai'];

function bodyText(body) {
  if (typeof body !== 'string') {
    throw new CondenseError('invalid_input', 'body', 'invalid_input at body: expected the request body as JSON text (JSON.stringify it first)', 'expected the request body as JSON text (JSON.stringify it first)');
  }
  // A bare array is a message list, not a request: refuse it here so the result is always a body.
  const first = body.trimStart()[0];
  if (first !== '{') {
    throw new CondenseError('invalid_input', 'body', 'invalid_input at body: expected a request body (a JSON object with "messages")', 'expected a request body (a JSON object with "messages")');
  }
  return body;
}

/** The options object with `provider` turned into the core's `format`. */
function withFormat(options, provider, path) {
  if (provider === undefined || provider === null) return options ?? null;
  if (!PROVIDERS.includes(provider)) {
    throw new CondenseError('invalid_options', path, `invalid_options at ${path}: expected "anthropic" or "openai"`, 'expected "anthropic" or "openai"');
  }
  return { ...(options ?? {}), format: provider };
}

function checkObject(value, path) {
  if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value))) {
    throw new CondenseError('invalid_options', path, `invalid_options at ${path}: expected an object`, 'expected an object');
  }
}

/** The adapters are synchronous: a summarizer (which makes compress async) is refused. */
function noSummarizer(options, path) {
  if (options && typeof options === 'object' && options.summarizer !== undefined && options.summarizer !== null) {
    throw new CondenseError('invalid_options', `${path}.summarizer`, `invalid_options at ${path}.summarizer: not supported here (synchronous); use compressJson`, 'not supported here (synchronous); use compressJson');
  }
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** The adapters over the wrapped API (`compressJson`, `applyWatermarkJson`). */
export function adapters(api) {
  function watermarkRequest(body, state, options) {
    const text = bodyText(body);
    checkObject(options, 'options');
    const { provider, ...rest } = options ?? {};
    const out = api.applyWatermarkJson(text, state ?? null, withFormat(options ? rest : null, provider, 'options.provider'));
    return { body: out.json, state: out.state, stats: out.stats, warnings: out.warnings };
  }

  function compressRequest(body, options) {
    const text = bodyText(body);
    checkObject(options, 'options');
    noSummarizer(options, 'options');
    const { provider, ...rest } = options ?? {};
    const out = api.compressJson(text, withFormat(options ? rest : null, provider, 'options.provider'));
    const result = { body: out.json, verbatim: out.verbatim, stats: out.stats };
    if (out.trace !== undefined) result.trace = out.trace;
    if (out.cache !== undefined) result.cache = out.cache;
    return result;
  }

  function prepareRequest(body, options) {
    const text = bodyText(body);
    checkObject(options, 'options');
    const opts = options ?? {};
    for (const key of Object.keys(opts)) {
      if (!['provider', 'state', 'watermark', 'compress'].includes(key)) {
        throw new CondenseError('invalid_options', `options.${key}`, `invalid_options at options.${key}: unknown option (expected provider, state, watermark, compress)`, 'unknown option (expected provider, state, watermark, compress)');
      }
    }
    if (opts.watermark !== false) checkObject(opts.watermark, 'options.watermark');
    if (opts.compress !== false) checkObject(opts.compress, 'options.compress');
    noSummarizer(opts.compress, 'options.compress');
    const start = now();
    let current = text;
    let state = opts.state ?? { watermark: null };
    let watermark = null;
    let compressed = null;
    if (opts.watermark !== false) {
      const w = api.applyWatermarkJson(current, state, withFormat(opts.watermark, opts.provider, 'options.provider'));
      current = w.json;
      state = w.state;
      watermark = { stats: w.stats, warnings: w.warnings };
    }
    let verbatim = '{}';
    if (opts.compress !== false) {
      const c = api.compressJson(current, withFormat(opts.compress, opts.provider, 'options.provider'));
      current = c.json;
      verbatim = c.verbatim;
      compressed = { stats: c.stats };
      if (c.trace !== undefined) compressed.trace = c.trace;
    }
    return {
      body: current,
      state,
      verbatim,
      watermark,
      compress: compressed,
      savings: {
        charsBefore: text.length,
        charsAfter: current.length,
        saved: text.length - current.length,
        percent: text.length === 0 ? 0 : Math.round((1000 * (text.length - current.length)) / text.length) / 10,
        ms: Math.round((now() - start) * 1000) / 1000,
      },
    };
  }

  return { watermarkRequest, compressRequest, prepareRequest };
}
