// Hostile input through the npm package (issue 28), after scripts/build-pkg (a test build:
// `__armTrap()` is in it). Every case throws a CondenseError with a code, and the module goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const condense = await import(new URL('pkg/node.js', root).href);
const glue = await import(new URL('pkg/condense.js', root).href);
const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, prepareContext,
  CondenseError, Index, query, compressResults, embed, lexicalEmbedder, externalEmbedder,
} = condense;

/** Asserts `f` throws a CondenseError with this code (and path), then that the module still works. */
function throwsCode(f, code, path) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e?.stack ?? e}`);
    assert.equal(e.code, code, e.message);
    if (path !== undefined) assert.equal(e.path, path, e.message);
    return true;
  });
  assertAlive();
}

function assertAlive() {
  assert.equal(applyWatermark([{ role: 'user', content: 'still alive' }]).messages.length, 1);
  assert.equal(compressJson('[]').json, '[]');
}

const docs = Array.from({ length: 12 }, (_, i) => ({
  id: `d${i}`,
  text: `# Note ${i}\n\nThe parser reads token ${i}. A build error names file ${i} and its line.`,
}));

// Finding 6: NaN and ±Infinity were written as null by JSON.stringify and read as "not given".
test('non-finite numbers in any options object are invalid_options at their path', () => {
  const messages = [{ role: 'user', content: 'hello there' }];
  throwsCode(() => compress(messages, { tokenBudget: NaN }), 'invalid_options', 'options.tokenBudget');
  throwsCode(() => compress(messages, { targetRatio: Infinity }), 'invalid_options', 'options.targetRatio');
  throwsCode(() => compressJson('[]', { tokenBudget: -Infinity }), 'invalid_options', 'options.tokenBudget');
  throwsCode(() => Index.create({ bm25: { k1: NaN } }), 'invalid_options', 'options.bm25.k1');
  throwsCode(() => applyWatermark(messages, null, { keepLastToolResults: NaN }), 'invalid_options', 'options.keepLastToolResults');
  throwsCode(() => applyWatermarkJson('[]', null, { keepLastToolResults: Infinity }), 'invalid_options', 'options.keepLastToolResults');
  throwsCode(() => prepareContext(['a text'], { tokenBudget: NaN }), 'invalid_options', 'options.tokenBudget');
  throwsCode(() => compressResults([], 'q', { minScore: NaN }), 'invalid_options', 'options.minScore');
  const index = Index.create();
  index.add(docs);
  throwsCode(() => index.query('parser', { minScore: NaN }), 'invalid_options', 'options.minScore');
  throwsCode(() => query(index, 'parser', { topN: Infinity }), 'invalid_options', 'options.topN');
  // Inside arrays too, and in the watermark state.
  throwsCode(() => compress(messages, { preservePatterns: ['a', NaN] }), 'invalid_options', 'options.preservePatterns[1]');
  throwsCode(() => applyWatermark(messages, { watermark: NaN }), 'invalid_state', 'state.watermark');
  index.free();
  // Finite numbers and real nulls are as before.
  assert.equal(compress(messages, { tokenBudget: null }).messages.length, 1);
});

// Finding 4 and the duplicate-key rule: a key twice is refused wherever JSON text comes in.
test('a key twice in JSON text is invalid_json at its path', () => {
  const body = '{"model":"m","messages":[],"messages":[{"role":"user","content":"x"}]}';
  throwsCode(() => validate(body), 'invalid_json', 'messages');
  throwsCode(() => applyWatermarkJson(body), 'invalid_json', 'messages');
  throwsCode(() => compressJson(body), 'invalid_json', 'messages');
  const array = '[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]';
  throwsCode(() => applyWatermarkJson(array), 'invalid_json', 'messages[0].content[0].text');
  throwsCode(() => compressJson(array), 'invalid_json', 'messages[0].content[0].text');
  throwsCode(() => compress([{ role: 'user', content: 'x' }], { cache: '{"version":1,"version":1}' }), 'invalid_json', 'options.cache.version');
});

// Finding 10: a freed object, or a call into an index from its own onProgress, threw a plain
// Error ("null pointer passed to rust", "recursive use of an object").
test('freed objects and re-entry from onProgress are invalid_state', () => {
  const index = Index.create();
  index.add(docs.slice(0, 3));
  index.free();
  throwsCode(() => index.query('parser'), 'invalid_state', 'index');
  throwsCode(() => index.size, 'invalid_state', 'index');
  throwsCode(() => index.add(docs), 'invalid_state', 'index');
  index.free(); // twice: nothing

  const embedder = externalEmbedder(lexicalEmbedder().identity(), (texts) => lexicalEmbedder().embed(texts));
  embedder.free();
  throwsCode(() => embedder.embed(['x']), 'invalid_state', 'embedder');
  throwsCode(() => embed(['x'], { embedder }), 'invalid_state', 'options.embedder');
  throwsCode(() => Index.create({ embedder }), 'invalid_state', 'options.embedder');

  const busy = Index.create();
  const seen = [];
  busy.add(docs, {
    onProgress() {
      for (const call of [() => busy.query('parser'), () => busy.size, () => busy.add(docs), () => busy.free()]) {
        try {
          call();
          seen.push('no error');
        } catch (e) {
          seen.push(e instanceof CondenseError ? `${e.code} ${e.path}` : `plain ${e.message}`);
        }
      }
    },
  });
  assert.ok(seen.length >= 4);
  assert.deepEqual(new Set(seen), new Set(['invalid_state index']));
  assert.equal(busy.size, docs.length, 'the add went through');
  assert.ok(busy.query('parser token', { minScore: 0 }).results.length > 0);
  busy.free();
  assertAlive();
});

const hostile = (name) => new Uint8Array(readFileSync(new URL(`tests/fixtures/hostile/${name}`, root)));

// Findings 1 and 3: crafted index bytes (valid format and checksum) that Index.deserialize
// accepted and query then trapped on (or that trapped in deserialize itself).
test('crafted index bytes are invalid_index', () => {
  for (const name of ['hnsw-neighbour.cndx', 'chunk-count-overflow.cndx', 'bm25-total-length.cndx']) {
    throwsCode(() => {
      const index = Index.deserialize(hostile(name));
      index.query('parser token', { denseWeight: 1, minScore: 0 });
    }, 'invalid_index');
  }
});

// Finding 2 and the recovery: a trap (forced by the test build's __armTrap) is a CondenseError
// `internal`, the module is a new instance for the next call, objects of the old one answer
// invalid_state, and every later call answers as before.
test('a trap is internal, the next call works, older objects are invalid_state', () => {
  const messages = [
    { role: 'user', content: 'Please look at the build error in src/parser.rs line 42.' },
    { role: 'assistant', content: 'Looking at the parser now; the literal is a string where a number belongs.' },
  ];
  const expected = JSON.stringify(compress(messages, { tokenBudget: 30 }));
  const index = Index.create();
  index.add(docs);
  const results = JSON.stringify(index.query('parser token 3'));
  const lexical = lexicalEmbedder();
  assert.equal(typeof glue.__armTrap, 'function', 'a test build (scripts/build-pkg without --dist)');

  glue.__armTrap();
  assert.throws(() => applyWatermark(messages, null, {}), (e) => {
    assert.ok(e instanceof CondenseError, `${e}`);
    assert.equal(e.code, 'internal');
    assert.match(e.message, /trapped/);
    return true;
  });
  assert.equal(JSON.stringify(compress(messages, { tokenBudget: 30 })), expected);
  throwsCode(() => index.query('parser token 3'), 'invalid_state', 'index');
  throwsCode(() => lexical.embed(['x']), 'invalid_state', 'embedder');
  throwsCode(() => embed(['x'], { embedder: lexical }), 'invalid_state', 'options.embedder');
  index.free(); // stale: released with its instance, never into the new one
  const again = Index.create();
  again.add(docs);
  assert.equal(JSON.stringify(again.query('parser token 3')), results);
  assert.equal(lexicalEmbedder().embed(['x'])[0].length, 384);
  again.free();
});
