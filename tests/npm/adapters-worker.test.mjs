// Request-body adapters and createWorker() in Node: `node --test tests/npm/` after scripts/build-pkg.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const condense = await import(new URL('pkg/node.js', root).href);
const {
  watermarkRequest, compressRequest, prepareRequest, applyWatermarkJson, compressJson, uncompress, validate,
  createWorker, CondenseError,
} = condense;

const anthropic = readFileSync(new URL('tests/hosts/fixtures/anthropic-request.json', root), 'utf8');
const openai = readFileSync(new URL('tests/hosts/fixtures/openai-request.json', root), 'utf8');

function throwsCode(f, code, path) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.path, path);
    return true;
  });
}

async function rejectsCode(promise, code, path) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.path, path);
    return true;
  });
}

/** The body's members other than `messages`, as their exact JSON text. */
function otherMembers(text) {
  const body = JSON.parse(text);
  return Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'messages').map(([k, v]) => [k, JSON.stringify(v)]));
}

test('watermarkRequest = applyWatermarkJson on a body; other members kept, in order', () => {
  const out = watermarkRequest(anthropic, null, { placeholder: true });
  const core = applyWatermarkJson(anthropic, null, { placeholder: true });
  assert.equal(out.body, core.json);
  assert.deepEqual(out.stats, core.stats);
  assert.deepEqual(Object.keys(JSON.parse(out.body)), Object.keys(JSON.parse(anthropic)));
  assert.deepEqual(otherMembers(out.body), otherMembers(anthropic));
  assert.equal(out.state.watermark, 'toolu_01awmPidpl5GFF4SPWD7TVRL');
  assert.ok(out.stats.placeholders > 0);
  assert.ok(validate(JSON.parse(out.body).messages, { format: 'anthropic' }).valid);
});

test('compressRequest on both providers: other members kept, messages restorable', () => {
  for (const [provider, body] of [['anthropic', anthropic], ['openai', openai]]) {
    const out = compressRequest(body, { recencyWindow: 2, provider });
    const core = compressJson(body, { recencyWindow: 2, format: provider });
    assert.equal(out.body, core.json, provider);
    assert.deepEqual(otherMembers(out.body), otherMembers(body), provider);
    assert.ok(out.stats.tokensAfter < out.stats.tokensBefore, provider);
    const messages = JSON.stringify(JSON.parse(out.body).messages);
    assert.deepEqual(JSON.parse(uncompress(messages, out.verbatim)), JSON.parse(body).messages, provider);
    assert.ok(validate(JSON.parse(out.body).messages, { format: provider }).valid, provider);
  }
});

test('prepareRequest = watermark then compress, savings add up, state threads through calls', () => {
  const out = prepareRequest(anthropic, { compress: { recencyWindow: 2 } });
  const w = applyWatermarkJson(anthropic, { watermark: null }, null);
  const c = compressJson(w.json, { recencyWindow: 2 });
  assert.equal(out.body, c.json);
  assert.equal(out.verbatim, c.verbatim);
  assert.deepEqual(out.watermark.stats, w.stats);
  assert.deepEqual(out.compress.stats, c.stats);
  assert.equal(out.savings.charsBefore, anthropic.length);
  assert.equal(out.savings.charsAfter, out.body.length);
  assert.equal(out.savings.saved, anthropic.length - out.body.length);
  assert.ok(out.savings.percent > 0 && out.savings.ms >= 0);
  // Skipping both steps returns the body unchanged.
  const none = prepareRequest(openai, { watermark: false, compress: false });
  assert.equal(none.body, openai);
  assert.equal(none.watermark, null);
  assert.equal(none.compress, null);
  assert.equal(none.verbatim, '{}');
  // The state of one call is honoured by the next.
  const again = prepareRequest(anthropic, { state: out.state, compress: false });
  assert.equal(again.state.watermark, out.state.watermark);
  assert.equal(again.watermark.stats.advanced, false);
});

test('adapters refuse what is not a request body, and bad options, with codes and paths', () => {
  throwsCode(() => compressRequest(JSON.parse(anthropic)), 'invalid_input', 'body');
  throwsCode(() => compressRequest('[{"role":"user","content":"x"}]'), 'invalid_input', 'body');
  throwsCode(() => watermarkRequest('{"model":"x"}'), 'invalid_input', 'messages');
  throwsCode(() => compressRequest('{"messages": [}'), 'invalid_json', '');
  throwsCode(() => compressRequest(openai, { provider: 'gemini' }), 'invalid_options', 'options.provider');
  throwsCode(() => compressRequest(openai, { recencyWindow: -1 }), 'invalid_options', 'options.recencyWindow');
  throwsCode(() => prepareRequest(openai, { budget: 10 }), 'invalid_options', 'options.budget');
  throwsCode(() => prepareRequest(openai, { compress: 3 }), 'invalid_options', 'options.compress');
  throwsCode(() => watermarkRequest(openai, null, []), 'invalid_options', 'options');
});

test('createWorker: options checked, worker errors and a crashed worker arrive as CondenseError', async () => {
  await rejectsCode(createWorker({ embeder: 'lexical' }), 'invalid_options', 'options.embeder');
  await rejectsCode(createWorker({ embedder: 'bm25' }), 'invalid_options', 'options.embedder');
  if (typeof condense.loadEmbedder !== 'function') {
    await rejectsCode(createWorker({ embedder: 'minilm' }), 'invalid_options', 'options.embedder');
  }
  // A worker script that is not condense's: it never says ready, and dies.
  const bogus = new URL('data:text/javascript,throw new Error("boom")');
  await rejectsCode(createWorker({ worker: bogus }), 'invalid_state', 'worker');

  const worker = await createWorker();
  assert.equal(worker.version, condense.version());
  assert.equal(worker.embedder.kind, 'lexical');
  await rejectsCode(worker.createIndex({ embedder: condense.lexicalEmbedder() }), 'invalid_options', 'options.embedder');
  await rejectsCode(worker.loadIndex(new Uint8Array([1, 2, 3])), 'invalid_index', '');
  await rejectsCode(worker.loadIndex([1, 2, 3]), 'invalid_input', 'bytes');
  // Arguments that cannot be cloned to the worker.
  await rejectsCode(worker.compress([{ role: 'user', content: 'x', f: () => 1 }]), 'invalid_input', 'compress');
  // Same results as on this thread.
  const messages = JSON.parse(openai).messages;
  assert.deepEqual(await worker.compress(messages, { recencyWindow: 2 }), condense.compress(messages, { recencyWindow: 2 }));
  const withoutMs = ({ savings: { ms, ...savings }, ...rest }) => ({ ...rest, savings });
  assert.deepEqual(withoutMs(await worker.prepareRequest(anthropic)), withoutMs(prepareRequest(anthropic)));
  const vectors = await worker.embed(['hello world', 'goodbye']);
  assert.deepEqual(vectors, condense.embed(['hello world', 'goodbye']));
  // Calls in flight when the worker stops fail with invalid_state; so does every later call.
  const inFlight = rejectsCode(worker.compress(messages), 'invalid_state', 'worker');
  await worker.terminate();
  await inFlight;
  await rejectsCode(worker.validate(messages), 'invalid_state', 'worker');
});

test('createWorker attaches to a worker started earlier (its ready message already sent)', { timeout: 20_000 }, async () => {
  const { Worker } = await import('node:worker_threads');
  const started = new Worker(new URL('pkg/worker-node.js', root));
  await new Promise((ok) => started.once('message', ok)); // its `ready`, gone before createWorker listens
  const worker = await createWorker({ worker: started });
  assert.equal((await worker.compress([{ role: 'user', content: 'hi' }])).messages.length, 1);
  await worker.terminate();
});
