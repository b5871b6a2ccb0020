// embedParallel: MiniLM on two worker_threads at once, as users meet it (`node --test
// tests/npm/` after scripts/build-pkg, with the model files in pkg/models/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const { createWorker, embedParallel, loadEmbedder, CondenseError } =
  await import(new URL('pkg/node.js', root).href);
const reference = JSON.parse(readFileSync(new URL('tests/fixtures/embed/reference.json', root), 'utf8'));

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

async function rejectsCode(promise, code, path) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.path, path, e.message);
    return true;
  });
}

test('embedParallel on two MiniLM workers gives embed\'s vectors, in input order', async () => {
  const workers = await Promise.all([1, 2].map(() => createWorker({ embedder: 'minilm' })));
  try {
    // Texts of mixed lengths (and a duplicate, and an empty one), in an order unlike their lengths.
    const texts = reference.cases.slice(0, 11).map((c) => c.text);
    texts.push(texts[3], '');
    const got = await embedParallel(texts, workers);
    const local = await loadEmbedder();
    const want = local.embed(texts);
    assert.equal(got.length, texts.length);
    got.forEach((v, i) => {
      assert.ok(v instanceof Float32Array && v.length === 384, `vector ${i}`);
      assert.ok(dot(v, want[i]) >= 0.99999, `text ${i}: cosine ${dot(v, want[i])} to embed's`);
    });
    // The order is the input's: every vector is nearest its own text's.
    got.forEach((v, i) => {
      const best = want.reduce((b, w, j) => (dot(v, w) > dot(v, want[b]) ? j : b), 0);
      assert.ok(dot(v, want[best]) - dot(v, want[i]) < 1e-6, `text ${i} came back at ${best}`);
    });
    assert.deepEqual(await embedParallel([], workers), []);
    const one = await embedParallel([texts[0]], workers);
    assert.ok(dot(one[0], want[0]) >= 0.99999);
    local.free();

    await rejectsCode(embedParallel(texts, []), 'invalid_options', 'workers');
    await rejectsCode(embedParallel(texts, [workers[0], {}]), 'invalid_options', 'workers[1]');
    await rejectsCode(embedParallel(['a', 7], workers), 'invalid_input', 'texts[1]');
    const lexical = await createWorker();
    try {
      await rejectsCode(embedParallel(texts, [workers[0], lexical]), 'invalid_options', 'workers[1]');
    } finally {
      await lexical.terminate();
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
});
