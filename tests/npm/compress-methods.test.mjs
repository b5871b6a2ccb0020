// compress with a caller's token counter (o200k through gpt-tokenizer), tokenCounter, and the
// methods: hierarchical, and abstractive / hybrid with an async summarizer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';

const root = new URL('../../', import.meta.url);
const read = (p) => readFileSync(new URL(p, root), 'utf8');
const { compress, compressJson, uncompress, compressRequest, lexicalEmbedder, CondenseError } = await import(new URL('pkg/node.js', root).href);

const jsonl = (p) => read(p).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const records = [
  ...jsonl('tests/fixtures/sharegpt_sample.jsonl'),
  ...jsonl('tests/fixtures/tool_sessions_openai_sample.jsonl'),
  ...jsonl('tests/fixtures/tool_sessions_anthropic_sample.jsonl'),
];
const o200k = (text) => (text ? encode(text).length : 0);

/** A message's text as compress counts it (`message_text` in src/compress/parse.rs). */
function messageText(m) {
  const block = (b) => {
    switch (b?.type) {
      case 'text': return typeof b.text === 'string' ? b.text : '';
      case 'thinking': return typeof b.thinking === 'string' ? b.thinking : '';
      case 'tool_use': return `${b.name ?? ''} ${JSON.stringify(b.input ?? {})}`;
      case 'tool_result':
        if (typeof b.content === 'string') return b.content;
        if (Array.isArray(b.content)) return b.content.map(block).filter((s) => s).join('\n');
        return '';
      default: return typeof b?.text === 'string' ? b.text : '';
    }
  };
  const parts = [];
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content)) parts.push(...m.content.map(block).filter((s) => s));
  for (const c of m.tool_calls ?? []) parts.push(`${c.function?.name ?? ''} ${c.function?.arguments ?? ''}`);
  return parts.join('\n');
}
const tokensOf = (messages) => messages.reduce((a, m) => a + o200k(messageText(m)), 0);

function rejectsCode(f, code, path) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.path, path);
    return true;
  });
}

test('countTokens (o200k): what fits is within the budget in o200k tokens', () => {
  let fitting = 0;
  let calls = 0;
  const counting = (t) => { calls++; return o200k(t); };
  for (const r of records) {
    const before = tokensOf(r.messages);
    for (const share of [0.5, 0.25, 0.1]) {
      const tokenBudget = Math.floor(before * share);
      calls = 0;
      const out = compress(r.messages, { tokenBudget, countTokens: counting });
      assert.equal(out.stats.tokensBefore, before, r.id);
      // The stats are exact o200k counts of the output.
      assert.equal(out.stats.tokensAfter, tokensOf(out.messages), r.id);
      if (out.stats.fits) {
        fitting++;
        assert.ok(tokensOf(out.messages) <= tokenBudget, `${r.id}: ${tokensOf(out.messages)} > ${tokenBudget}`);
      }
      assert.deepEqual(uncompress(out.messages, out.verbatim), r.messages);
      // Memoised: the counter saw each distinct text once, far fewer calls than passes × texts.
      assert.ok(calls > 0);
    }
  }
  assert.ok(fitting >= records.length * 2, `only ${fitting} fitted`);
});

test('countTokens memoises: each distinct text is counted once per call', () => {
  const r = records[0];
  const seen = new Map();
  const counter = (t) => { seen.set(t, (seen.get(t) ?? 0) + 1); return o200k(t); };
  compress(r.messages, { targetRatio: 0.2, countTokens: counter });
  assert.ok(seen.size > r.messages.length);
  for (const [t, n] of seen) assert.equal(n, 1, `counted ${n} times: ${t.slice(0, 60)}`);
});

test('compressJson takes countTokens too; the estimator stays the default', () => {
  const r = records[1];
  const json = JSON.stringify(r.messages);
  const a = compressJson(json, { targetRatio: 0.3, countTokens: o200k });
  assert.equal(a.stats.tokensBefore, tokensOf(r.messages));
  assert.equal(uncompress(a.json, a.verbatim), json);
  const b = compressJson(json, { targetRatio: 0.3 });
  assert.notEqual(b.stats.tokensBefore, a.stats.tokensBefore);
  assert.deepEqual(compressJson(json, { targetRatio: 0.3, tokenCounter: 'estimate' }), b);
});

test('bad counters are typed errors at options.countTokens', () => {
  const m = records[0].messages;
  for (const bad of [() => NaN, () => -1, () => 1.5, () => '3', () => undefined, () => Infinity, () => { throw new Error('tokenizer down'); }]) {
    rejectsCode(() => compress(m, { countTokens: bad }), 'invalid_options', 'options.countTokens');
  }
  try {
    compress(m, { countTokens: () => { throw new Error('tokenizer down'); } });
  } catch (e) {
    assert.match(e.message, /tokenizer down/);
  }
  rejectsCode(() => compress(m, { countTokens: 42 }), 'invalid_options', 'options.countTokens');
  // Still usable afterwards.
  assert.equal(compress(m).messages.length > 0, true);
});

test('tokenCounter "model" needs a loaded model', () => {
  const m = records[0].messages;
  rejectsCode(() => compress(m, { tokenCounter: 'model' }), 'invalid_options', 'options.tokenCounter');
  rejectsCode(() => compress(m, { tokenCounter: 'model', embedder: lexicalEmbedder() }), 'invalid_options', 'options.tokenCounter');
  rejectsCode(() => compress(m, { tokenCounter: 'model', countTokens: o200k }), 'invalid_options', 'options.tokenCounter');
  rejectsCode(() => compress(m, { tokenCounter: 'o200k' }), 'invalid_options', 'options.tokenCounter');
});

test('method hierarchical: a level of 50/25/12.5% chosen by the budget', () => {
  let levels = new Set();
  for (const r of records) {
    const out = compress(r.messages, { method: 'hierarchical', targetRatio: 0.3 });
    assert.deepEqual(uncompress(out.messages, out.verbatim), r.messages);
    if (out.stats.level !== undefined) {
      levels.add(out.stats.level);
      assert.equal(out.stats.fits, true);
    }
    // Without a budget it is the default pass.
    assert.deepEqual(compress(r.messages, { method: 'hierarchical' }), compress(r.messages));
  }
  assert.ok(levels.size > 0);
  rejectsCode(() => compress(records[0].messages, { method: 'lexrank' }), 'invalid_options', 'options.method');
});

test('abstractive without a summarizer: extractive with a warning', () => {
  const r = records[0];
  const out = compress(r.messages, { method: 'abstractive' });
  const base = compress(r.messages);
  assert.deepEqual(out.messages, base.messages);
  assert.equal(out.stats.warnings.length, 1);
  assert.match(out.stats.warnings[0], /abstractive/);
  assert.equal(base.stats.warnings, undefined);
});

/** A fake LLM: the answer depends on the request's index (shorter, longer, empty, throws). */
const fake = (log) => async (text, req) => {
  await new Promise((resolve) => setTimeout(resolve, 1));
  const answer = [`LLM summary ${req.id}`, text + text, '', null][req.index % 4];
  log?.push({ ...req, answer, original: text });
  if (answer === null) throw new Error('rate limited');
  return answer;
};

test('summarizer: shorter accepted, longer / empty rejected, throws counted; round trip holds', async () => {
  let accepted = 0;
  for (const r of records) {
    for (const method of ['abstractive', 'hybrid']) {
      const log = [];
      const pending = compress(r.messages, { method, summarizer: fake(log), summarizerConcurrency: 2 });
      assert.ok(pending instanceof Promise);
      const out = await pending;
      const s = out.stats.summarizer;
      assert.equal(s.requested, log.length, r.id);
      const throws = log.filter((q) => q.index % 4 === 3).length;
      assert.equal(s.failed, throws);
      assert.equal((out.stats.warnings ?? []).length, throws);
      // Every accepted answer is in the output, shorter than its original; the short ones
      // always are, the doubled original never is (a doubled extract may be: hybrid).
      const text = out.messages.map(messageText).join('\n');
      const used = log.filter((q) => q.answer && text.includes(`: ${q.answer}]`));
      assert.equal(used.length, s.accepted, r.id);
      for (const q of used) assert.ok(o200k(q.answer) <= q.originalTokens * 4);
      for (const q of log.filter((x) => x.index % 4 === 0)) assert.ok(text.includes(q.answer), `${r.id}: ${q.answer}`);
      if (method === 'abstractive') assert.ok(!used.some((q) => q.index % 4 === 1));
      assert.equal(s.accepted + s.rejected, log.length - throws);
      accepted += s.accepted;
      for (const q of log) {
        assert.ok(q.targetTokens < q.originalTokens);
        assert.equal(q.method, method);
        assert.ok(['prose', 'tool_output', 'merged'].includes(q.kind));
      }
      assert.deepEqual(uncompress(out.messages, out.verbatim), r.messages);
      assert.ok(out.stats.tokensAfter <= out.stats.tokensBefore);
      // Deterministic given the summaries.
      const again = await compress(r.messages, { method, summarizer: fake() });
      assert.deepEqual(again.messages, out.messages);
    }
  }
  assert.ok(accepted > 0);
});

test('summarizer with compressJson and a budget in o200k tokens', async () => {
  const r = records[0];
  const json = JSON.stringify(r.messages);
  const before = tokensOf(r.messages);
  const out = await compressJson(json, { method: 'abstractive', summarizer: fake(), tokenBudget: Math.floor(before / 3), countTokens: o200k });
  assert.equal(uncompress(out.json, out.verbatim), json);
  if (out.stats.fits) assert.ok(tokensOf(JSON.parse(out.json)) <= Math.floor(before / 3));
});

test('summarizer: the concurrency limit holds', async () => {
  let active = 0;
  let most = 0;
  const slow = async () => {
    active++;
    most = Math.max(most, active);
    await new Promise((resolve) => setTimeout(resolve, 2));
    active--;
    return 'x';
  };
  const out = await compress(records[0].messages, { method: 'hybrid', summarizer: slow, summarizerConcurrency: 2 });
  assert.ok(out.stats.summarizer.requested > 2);
  assert.ok(most <= 2 && most >= 1, `${most} at once`);
  rejectsCode(() => compress(records[0].messages, { summarizer: slow, summarizerConcurrency: 0 }), 'invalid_options', 'options.summarizerConcurrency');
  rejectsCode(() => compress(records[0].messages, { summarizer: 'gpt' }), 'invalid_options', 'options.summarizer');
  rejectsCode(() => compressRequest(JSON.stringify({ messages: records[0].messages }), { summarizer: slow }), 'invalid_options', 'options.summarizer');
});

test('context combinations: the same outcome as in Rust and the CLI (tests/fixtures/compress_context_cases.json)', async () => {
  const fixture = JSON.parse(read('tests/fixtures/compress_context_cases.json'));
  const words = (t) => t.split(/\s+/).filter(Boolean).length;
  const firstWords = async (t) => t.split(/\s+/).filter(Boolean).slice(0, 5).join(' ');
  let ran = 0;
  for (const c of fixture.cases) {
    const options = { ...c.options };
    if (c.counter) options.countTokens = words;
    if (c.summarizer) options.summarizer = firstWords;
    if (c.cache) options.cache = null;
    if (c.embedder === 'lexical') options.embedder = lexicalEmbedder();
    let out;
    let error;
    try {
      out = await compress(fixture.messages, options);
    } catch (e) {
      error = e;
    }
    if (c.expect === 'ok') {
      assert.equal(error, undefined, `${c.name}: ${error}`);
      assert.deepEqual(uncompress(out.messages, out.verbatim), fixture.messages, c.name);
      assert.equal(out.cache !== undefined, Boolean(c.cache), c.name);
      assert.equal(typeof out.stats.cacheHits === 'number', Boolean(c.cache), c.name);
    } else {
      assert.ok(error instanceof CondenseError, `${c.name}: ${error}`);
      assert.equal(error.code, c.expect.code, c.name);
      assert.equal(error.path, c.expect.path, c.name);
    }
    ran++;
  }
  assert.equal(ran, fixture.cases.length);
});
