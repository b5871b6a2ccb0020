// Index.get returns what index.d.ts declares (DocumentInfo, Chunk: camelCase keys), on the
// calling thread and through a worker. `node --test tests/npm/` after scripts/build-pkg.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const condense = await import(new URL('../../pkg/node.js', import.meta.url).href);
const { Index, createWorker } = condense;

const doc = { id: 'guide', path: 'docs/guide.md', text: '# Guide\n\n## Install\n\nRun the installer and answer its two questions about the target folder and the service account.\n\n## Configure\n\nEdit config.toml: every setting has a default, so an empty file is a valid configuration for a first start.' };

function check(info) {
  assert.deepEqual(Object.keys(info).sort(), ['chunks', 'id', 'metadata', 'path', 'title']);
  assert.ok(info.chunks.length >= 1);
  info.chunks.forEach((c, i) => {
    assert.deepEqual(Object.keys(c).sort(), ['docId', 'headerPath', 'id', 'ordinal', 'path', 'text']);
    assert.equal(c.id, `guide#${i}`);
    assert.equal(c.docId, 'guide');
    assert.equal(c.ordinal, i);
    assert.equal(c.path, 'docs/guide.md');
    assert.ok(Array.isArray(c.headerPath) && c.headerPath[0] === 'Guide', JSON.stringify(c.headerPath));
    assert.ok(doc.text.includes(c.text));
  });
}

test('Index.get: DocumentInfo and Chunk keys as index.d.ts declares them', () => {
  const index = Index.create();
  index.add([doc]);
  check(index.get('guide'));
  assert.equal(index.get('nope'), undefined);
  index.free();
});

test('WorkerIndex.get: the same', async () => {
  const worker = await createWorker();
  try {
    const index = await worker.createIndex();
    await index.add([doc]);
    check(await index.get('guide'));
  } finally {
    await worker.terminate();
  }
});
