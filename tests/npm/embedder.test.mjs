// loadEmbedder (MiniLM on tract, compiled to wasm) as users meet it: `node --test tests/npm/`
// after scripts/build-pkg, with the model files in pkg/models/ (scripts/setup fetches them).
// wasm inference is slow: every test embeds a handful of texts only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../../', import.meta.url);
const { loadEmbedder, lexicalEmbedder, embed, Index, query, CondenseError } =
  await import(new URL('pkg/node.js', root).href);
const reference = JSON.parse(readFileSync(new URL('tests/fixtures/embed/reference.json', root), 'utf8'));
const modelPath = fileURLToPath(new URL('pkg/models/model.onnx', root));
const tokenizerPath = fileURLToPath(new URL('pkg/models/tokenizer.json', root));

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

async function rejectsCode(promise, code, path) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (path !== undefined) assert.equal(e.path, path, e.message);
    return true;
  });
}

let shared;
const minilm = async () => (shared ??= await loadEmbedder());

test('loadEmbedder() where WebCrypto is missing: the engine hashes the model, the same identity', async () => {
  const was = Object.getOwnPropertyDescriptor(globalThis, 'crypto');
  Object.defineProperty(globalThis, 'crypto', { value: undefined, configurable: true, writable: true });
  let embedder;
  try {
    embedder = await loadEmbedder();
  } finally {
    Object.defineProperty(globalThis, 'crypto', was);
  }
  assert.equal(globalThis.crypto?.subtle !== undefined, true);
  assert.equal(embedder.identity().modelSha256, reference.model_sha256);
  embedder.free();
});

test('loadEmbedder() reads the model shipped in the package and matches onnxruntime', async () => {
  const seen = [];
  const embedder = await loadEmbedder({ onProgress: (p) => seen.push(`${p.phase}:${p.file}`) });
  assert.ok(seen.includes('download:model') && seen.includes('download:tokenizer') && seen.includes('load:model'), seen.join());
  const id = embedder.identity();
  assert.equal(id.kind, 'minilm');
  assert.equal(id.modelSha256, reference.model_sha256);
  assert.equal(id.dims, 384);
  assert.equal(id.maxTokens, 256);
  assert.ok(embedder.loadInfo().castsFolded > 0);
  assert.ok(embedder.loadInfo().nodesRepaired > 0);
  // MiniLM-L6's 36 weight matmuls run as integer products in wasm.
  assert.equal(embedder.loadInfo().integerMatmuls, 36);
  assert.equal(lexicalEmbedder().loadInfo(), null);
  const cases = reference.cases.slice(0, 3);
  const vectors = embedder.embed(cases.map((c) => c.text));
  cases.forEach((c, i) => {
    assert.ok(vectors[i] instanceof Float32Array && vectors[i].length === 384);
    const cos = dot(vectors[i], c.vector) / Math.sqrt(dot(c.vector, c.vector));
    assert.ok(cos >= 0.9999, `${c.name}: cosine ${cos}`);
  });
  embedder.free();
});

test('MiniLM vectors are semantic: a paraphrase is closer than a lexical look-alike', async () => {
  const e = await minilm();
  const [q, para, lookalike] = embed([
    'How do I reset my password?',
    'Steps to recover access when you forgot your login credentials',
    'How do I reset my router to factory settings?',
  ], { embedder: e });
  assert.ok(dot(q, para) > 0.4, `paraphrase ${dot(q, para)}`);
  // The lexical embedder cannot tell: it scores the look-alike higher.
  const [lq, lpara, llook] = embed(['How do I reset my password?',
    'Steps to recover access when you forgot your login credentials',
    'How do I reset my router to factory settings?']);
  assert.ok(dot(lq, llook) > dot(lq, lpara));
  assert.ok(Math.abs(dot(q, q) - 1) < 1e-5);
  void lookalike;
});

test('an Index built with MiniLM ranks by meaning, records its identity, and refuses another embedder', async () => {
  const e = await minilm();
  const index = Index.create({ embedder: e });
  index.add([
    { id: 'auth', text: 'To recover access to your account when you forgot your login credentials, open the sign-in page and choose "Forgot credentials". A recovery link arrives by e-mail.' },
    { id: 'router', text: 'Hold the button on the back of the device for ten seconds to restore factory settings. All network configuration is erased.' },
    { id: 'bread', text: 'Knead the dough for ten minutes, then let it rise in a warm place for an hour before baking at 220 degrees.' },
  ]);
  assert.equal(index.identity().kind, 'minilm');
  const out = query(index, 'I forgot my password, how can I get back in?');
  assert.equal(out.results[0].docId, 'auth', JSON.stringify(out.results.map((r) => [r.docId, r.score])));
  const bytes = index.serialize();
  assert.deepEqual(Index.deserialize(bytes, { embedder: e }).query('I forgot my password, how can I get back in?'), out);
  assert.throws(() => Index.deserialize(bytes), (err) => err.code === 'embedder_mismatch');
  index.free();
});

test('loadEmbedder takes paths, file: URLs, bytes and options', async () => {
  const fromPaths = await loadEmbedder({ modelPath, tokenizerPath, maxTokens: 128, batchSize: 4 });
  assert.equal(fromPaths.identity().maxTokens, 128);
  const fromBytes = await loadEmbedder({
    model: readFileSync(modelPath),
    tokenizer: readFileSync(tokenizerPath, 'utf8'),
  });
  const fromUrls = await loadEmbedder({
    modelUrl: new URL('pkg/models/model.onnx', root),
    tokenizerUrl: new URL('pkg/models/tokenizer.json', root).href,
  });
  const text = ['a short text to embed'];
  const [a] = fromBytes.embed(text);
  const [b] = fromUrls.embed(text);
  const [c] = fromPaths.embed(text);
  assert.deepEqual(a, b);
  assert.ok(dot(a, c) > 0.99999);
  for (const e of [fromPaths, fromBytes, fromUrls]) e.free();
});

test('loadEmbedder: bad input is a typed error', async () => {
  await rejectsCode(loadEmbedder({ modelPath: '/no/such/model.onnx', tokenizerPath }), 'invalid_model', 'options.modelPath');
  await rejectsCode(loadEmbedder({ model: new Uint8Array([1, 2, 3]), tokenizerPath }), 'invalid_model');
  await rejectsCode(loadEmbedder({ model: readFileSync(modelPath).subarray(0, 1 << 20), tokenizerPath }), 'invalid_model');
  await rejectsCode(loadEmbedder({ modelPath, tokenizer: '{"model": {"type": "BPE", "vocab": {}, "merges": []}}' }), 'invalid_model');
  await rejectsCode(loadEmbedder({ modelPath, tokenizer: 'not json' }), 'invalid_model');
  await rejectsCode(loadEmbedder({ nope: 1 }), 'invalid_options', 'options.nope');
  await rejectsCode(loadEmbedder({ model: new Uint8Array(4), modelPath }), 'invalid_options');
  await rejectsCode(loadEmbedder({ model: 'bytes?' }), 'invalid_options', 'options.model');
  await rejectsCode(loadEmbedder({ maxTokens: 1000 }), 'invalid_options', 'options.maxTokens');
  await rejectsCode(loadEmbedder({ batchSize: 0 }), 'invalid_options', 'options.batchSize');
  await rejectsCode(loadEmbedder({ onProgress: 5 }), 'invalid_options', 'options.onProgress');
  await rejectsCode(loadEmbedder('models/'), 'invalid_options', 'options');
  await rejectsCode(loadEmbedder({ modelUrl: 'not a url', tokenizerPath }), 'invalid_options', 'options.modelUrl');
});

test('MiniLM embed: empty list, empty string, a 1 MB text (truncated), lone surrogates', async () => {
  const e = await minilm();
  assert.deepEqual(e.embed([]), []);
  const [empty, huge, lone] = e.embed(['', 'word '.repeat(200_000), 'bad \uD800 surrogate']);
  for (const v of [empty, huge, lone]) {
    assert.equal(v.length, 384);
    assert.ok(Math.abs(dot(v, v) - 1) < 1e-4);
  }
  // A lone surrogate becomes U+FFFD on the way in (JSON text), so the text still embeds.
  const [replaced] = e.embed(['bad \uFFFD surrogate']);
  assert.ok(dot(lone, replaced) > 0.99999);
  assert.throws(() => e.embed([1, 2]), (err) => err.code === 'invalid_input');
});

test('externalEmbedder: your own function behind the same Embedder', async () => {
  const { externalEmbedder } = await import(new URL('pkg/node.js', root).href);
  const lexical = lexicalEmbedder();
  const calls = [];
  const mirror = externalEmbedder(lexical.identity(), (texts) => {
    calls.push(texts.length);
    return lexical.embed(texts);
  });
  const texts = Array.from({ length: 70 }, (_, i) => `document number ${i} about keys`);
  assert.deepEqual(mirror.embed(texts), lexical.embed(texts));
  assert.deepEqual(calls, [32, 32, 6]);
  // An index built through it equals one built by the lexical embedder itself.
  const docs = texts.map((text, i) => ({ id: `d${i}`, text }));
  const a = Index.create({ embedder: mirror });
  a.add(docs);
  const b = Index.create();
  b.add(docs);
  assert.deepEqual(a.serialize(), b.serialize());
  // Wrong shapes and throwing functions are typed errors, and the module survives.
  const short = externalEmbedder(lexical.identity(), (t) => t.slice(1).map(() => new Float32Array(384)));
  assert.throws(() => short.embed(['a', 'b']), (e) => e.code === 'invalid_model');
  const thrower = externalEmbedder(lexical.identity(), () => { throw new Error('service down'); });
  assert.throws(() => thrower.embed(['a']), (e) => e.code === 'invalid_model' && /service down/.test(e.message));
  assert.throws(() => externalEmbedder({ kind: 'minilm', modelSha256: null, dims: 12, maxTokens: null, version: 1 }, () => []), (e) => e.code === 'invalid_options');
  assert.throws(() => externalEmbedder(lexical.identity(), 'nope'), (e) => e.code === 'invalid_options');
  assert.equal(embed(['still works']).length, 1);
});

test('compress: query relevance with an embedder (lexical and MiniLM), and a bad embedder', async () => {
  const { compress, compressJson } = await import(new URL('pkg/node.js', root).href);
  const filler = (i) => `Paragraph ${i} talks about the weather in the valley, the harvest and the roads. ` +
    'Nothing in it matters for deployments. It goes on for a while to be worth summarising at all.';
  const messages = [
    { role: 'user', content: [filler(1), 'The staging deploy failed because the TLS certificate expired on 2024-03-01.', filler(2)].join(' ') },
    { role: 'assistant', content: [filler(3), 'Renew the certificate with certbot renew and restart nginx.', filler(4)].join(' ') },
    { role: 'user', content: 'thanks' }, { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'next' }, { role: 'assistant', content: 'sure' },
  ];
  const options = { query: 'why did the deploy fail?', recencyWindow: 2, minChars: 40 };
  const plain = compress(messages, options);
  const lexical = compress(messages, { ...options, embedder: lexicalEmbedder() });
  const semantic = compress(messages, { ...options, embedder: await minilm() });
  for (const out of [plain, lexical, semantic]) {
    assert.equal(out.messages.length, messages.length);
    assert.ok(out.stats.summarized > 0, JSON.stringify(out.stats));
  }
  assert.match(JSON.stringify(semantic.messages[0]), /TLS certificate expired/);
  const viaJson = compressJson(JSON.stringify(messages), { ...options, embedder: lexicalEmbedder() });
  assert.deepEqual(JSON.parse(viaJson.json), lexical.messages);
  assert.throws(() => compress(messages, { ...options, embedder: {} }), (e) => e.code === 'invalid_options' && e.path === 'options.embedder');
});

test('compress with tokenCounter "model": budgets and stats in MiniLM word pieces', async () => {
  const { compress, uncompress } = await import(new URL('pkg/node.js', root).href);
  const embedder = await minilm();
  const messages = [
    { role: 'user', content: 'hello world '.repeat(100) },
    { role: 'assistant', content: 'ok then' },
  ];
  // The whole text, past the model's 256-token truncation, without [CLS]/[SEP].
  assert.equal(compress(messages, { tokenCounter: 'model', embedder }).stats.tokensBefore, 202);
  const long = [
    { role: 'user', content: 'The internationalization of parseConfigFile failed at src/config.rs:42. '.repeat(30) },
    { role: 'assistant', content: 'Retrying with RUST_LOG=debug and the 3 flaky tests skipped. '.repeat(30) },
    { role: 'user', content: 'ok' },
  ];
  const exact = compress(long, { tokenCounter: 'model', embedder, targetRatio: 0.3 });
  const estimated = compress(long, { targetRatio: 0.3 });
  assert.notEqual(exact.stats.tokensBefore, estimated.stats.tokensBefore);
  assert.equal(exact.stats.fits, exact.stats.tokensAfter <= exact.stats.budget);
  assert.deepEqual(uncompress(exact.messages, exact.verbatim), long);
});
