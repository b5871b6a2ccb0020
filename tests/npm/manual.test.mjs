// condense-ctx/manual (pkg/manual.js): the entry without top-level await that extension service
// workers and content scripts use; here in Node with the wasm given as bytes or as a compiled
// module (Node's fetch cannot read file: URLs). The extension runs it in Chromium (tests/e2e).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const wasmBytes = readFileSync(new URL('pkg/condense_bg.wasm', root));
// Not node.js yet: it would instantiate the glue that manual.js shares (one per process).
const { init, CondenseError, ERROR_CODES } = await import(new URL('pkg/manual.js', root).href);
const mainEntry = () => import(new URL('pkg/node.js', root).href);

async function rejectsAt(promise, path, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.equal(e.code, 'invalid_options', e.message);
    assert.equal(e.path, path, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

// The order matters: the wasm-bindgen glue initialises once per process, so the failures come first.
test('init() rejects bad options with a CondenseError naming the field, before loading anything', async () => {
  await rejectsAt(init('condense_bg.wasm'), 'options', /expected an object/);
  await rejectsAt(init([]), 'options');
  await rejectsAt(init({ wasmUrl: 'x' }), 'options.wasmUrl', /unknown option/);
  await rejectsAt(init({ wasm: 42 }), 'options.wasm', /expected a URL, a Response, bytes/);
  await rejectsAt(init({ wasm: { bytes: wasmBytes } }), 'options.wasm');
});

test('a module that cannot be compiled is an invalid_options error at options.wasm, and init() can be retried', async () => {
  await rejectsAt(init({ wasm: new Uint8Array([0, 97, 115, 109, 9, 9, 9, 9]) }), 'options.wasm', /cannot load condense_bg\.wasm/);
  // The default (a file: URL next to the module) cannot be fetched by Node: also reported, not thrown at import.
  await rejectsAt(init(), 'options.wasm', /cannot load condense_bg\.wasm \(file:/);
  const api = await init({ wasm: wasmBytes });
  assert.match(api.version(), /^\d+\.\d+\.\d+/);
});

test('init() resolves to the main entry\'s functions, which give the same results', async () => {
  const api = await init({ wasm: wasmBytes });
  const main = await mainEntry();
  assert.equal(api.version(), main.version());
  const expected = Object.keys(main).filter((k) => k !== 'createWorker' && k !== 'embedParallel' && k !== 'ready').sort();
  assert.deepEqual(Object.keys(api).sort(), expected);
  assert.equal(api.CondenseError, CondenseError);
  assert.deepEqual(ERROR_CODES, main.ERROR_CODES);
  // The same object on every call, whatever the options (the module is loaded once).
  assert.equal(await init(), api);
  assert.equal(await init({ wasm: new WebAssembly.Module(wasmBytes) }), api);

  const messages = JSON.parse(readFileSync(new URL('www/samples/chat.json', root), 'utf8'));
  assert.equal(JSON.stringify(api.compress(messages)), JSON.stringify(main.compress(messages)));
  const docs = JSON.parse(readFileSync(new URL('www/samples/notes.json', root), 'utf8'));
  const a = api.Index.create();
  a.add(docs);
  const b = main.Index.create();
  b.add(docs);
  const q = 'how do I fix a punctured tyre?';
  assert.deepEqual(api.query(a, q, { topN: 3 }).results, main.query(b, q, { topN: 3 }).results);
  assert.equal(api.query(a, q, { topN: 1 }).results[0].docId, 'bicycle');
  // Errors are the package's CondenseError, with code and path.
  assert.throws(() => api.compress([{ role: 'user', content: 42 }]), (e) => e instanceof CondenseError && e.code === 'invalid_message' && e.path === 'messages[0].content');
});
