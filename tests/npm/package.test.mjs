// The npm package as users meet it: `node --test tests/npm/` after scripts/build-pkg.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const read = (p) => readFileSync(new URL(p, root), 'utf8');
const condense = await import(new URL('pkg/node.js', root).href);
const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, version,
  CondenseError, ERROR_CODES, Index, query, compressResults, embed, lexicalEmbedder,
} = condense;

const jsonl = (p) => read(p).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const sessions = jsonl('tests/fixtures/watermark_sessions_dev.jsonl');
const sharegpt = jsonl('tests/fixtures/sharegpt_sample.jsonl');

/** Asserts `f` throws a CondenseError with this code (and path), then that the module still works. */
function throwsCode(f, code, path) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof CondenseError, `not a CondenseError: ${e}`);
    assert.ok(e instanceof Error);
    assert.equal(e.code, code, e.message);
    if (path !== undefined) assert.equal(e.path, path);
    return true;
  });
  assert.equal(applyWatermark([{ role: 'user', content: 'still alive' }]).messages.length, 1);
}

test('version is the crate version', () => {
  const cargo = read('Cargo.toml').match(/^version = "(.*)"/m)[1];
  assert.equal(version(), cargo);
});

test('applyWatermark on the dev sessions: state, validity, untouched suffix objects', () => {
  for (const rec of sessions) {
    const out = applyWatermark(rec.messages, { watermark: null });
    assert.equal(out.state.watermark, rec.expected.watermark ?? null, rec.id);
    assert.ok(validate(out.messages, { format: 'anthropic' }).valid, rec.id);
    if (rec.expected.watermark) {
      const wmi = rec.expected.watermark_message_index;
      const suffix = rec.messages.slice(wmi);
      const tail = out.messages.slice(out.messages.length - suffix.length);
      suffix.forEach((m, i) => assert.equal(tail[i], m, `${rec.id}: suffix message ${i} is the same object`));
      assert.ok(out.stats.tokensAfter < out.stats.tokensBefore);
    } else {
      assert.deepEqual(out.messages, rec.messages);
    }
  }
});

test('applyWatermarkJson keeps a request body and untouched bytes', () => {
  const rec = sessions[0];
  const body = JSON.stringify({ model: 'claude-x', max_tokens: 100, messages: rec.messages, stream: false });
  const out = applyWatermarkJson(body, null, { placeholder: true });
  const parsed = JSON.parse(out.json);
  assert.equal(parsed.model, 'claude-x');
  assert.equal(parsed.stream, false);
  assert.ok(out.json.endsWith(JSON.stringify(rec.messages.at(-1)) + '],"stream":false}'));
  assert.equal(out.state.watermark, rec.expected.watermark);
  const obj = applyWatermark(rec.messages, null, { placeholder: true });
  assert.deepEqual(parsed.messages, obj.messages);
  assert.deepEqual(out.stats, obj.stats);
});

test('watermark not found: unchanged, with a warning', () => {
  const rec = sessions[0];
  const out = applyWatermark(rec.messages, { watermark: 'toolu_gone' });
  assert.deepEqual(out.messages, rec.messages);
  assert.equal(out.warnings[0].code, 'watermark_not_found');
});

test('validate reports violations with paths', () => {
  const r = validate([{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n', input: {} }] }], { format: 'anthropic' });
  assert.equal(r.valid, false);
  assert.deepEqual(r.violations.map((v) => v.code), ['first_not_user', 'orphan_tool_use']);
  assert.equal(validate(JSON.stringify(sessions[1].messages)).valid, true);
});

test('compress and uncompress round trip (objects and JSON text)', () => {
  for (const rec of sharegpt) {
    const out = compress(rec.messages);
    assert.ok(out.stats.tokensAfter <= out.stats.tokensBefore);
    assert.deepEqual(uncompress(out.messages, out.verbatim), rec.messages);
    const text = JSON.stringify(rec.messages);
    const j = compressJson(text, { trace: true });
    assert.ok(Array.isArray(j.trace));
    assert.equal(uncompress(j.json, j.verbatim), text);
  }
});

test('classification stages: importance, superseded-by-correction, quotes, minConfidence', () => {
  const filler = (i) => ({ role: i % 2 ? 'assistant' : 'user',
    content: `Message ${i} talks about the weather and general plans for the week ahead, nothing in particular, just chatting along.` });
  const messages = [
    { role: 'user', content: 'Deploy the billing service on port 8000 behind the nginx proxy, with TLS terminated at the proxy and health checks on /healthz every ten seconds.' },
    filler(1),
    { role: 'user', content: 'Actually, use port 8080 not 8000 for the billing service: nginx already listens on 8000 on that host, and the health checks stay as they are.' },
    ...[3, 4, 5, 6, 7].map(filler),
  ];
  const out = compress(messages, { contradictionDetection: true, trace: true });
  assert.equal(out.stats.superseded, 1);
  assert.match(out.messages[0].content, /^\[summary#[0-9a-f]+: superseded by msg_2/);
  assert.ok(out.trace.some((d) => d.index === 0 && d.action === 'superseded' && d.reason === 'corrected by message 2 (actually)'));
  assert.deepEqual(uncompress(out.messages, out.verbatim), messages);
  assert.equal(compress(messages).stats.superseded, 0, 'opt-in');

  const quoted = [{ role: 'user', content: 'We went through the incident timeline together and the on-call engineer explained every step in detail. The customer wrote "the export has been failing since Tuesday at 14:05" in the ticket. There was a long discussion about dashboards and alert thresholds that went nowhere in particular at all.' },
    ...[1, 2, 3, 4, 5].map(filler)];
  const q = compress(quoted, { preserveQuotes: true });
  assert.ok(q.messages[0].content.includes('"the export has been failing since Tuesday at 14:05"'), q.messages[0].content);

  const imp = compress(messages, { importanceScoring: true, importanceThreshold: 0, trace: true });
  assert.ok(imp.trace.some((d) => d.action === 'preserved' && d.reason.startsWith('importance ')));
  const strict = compress(messages, { minConfidence: 1, trace: true });
  assert.deepEqual(uncompress(strict.messages, strict.verbatim), messages);
  throwsCode(() => compress([], { importanceThreshold: 2 }), 'invalid_options', 'options.importanceThreshold');
  throwsCode(() => compress([], { minConfidence: -1 }), 'invalid_options', 'options.minConfidence');
  throwsCode(() => compress([], { preserveQuotes: 'yes' }), 'invalid_options', 'options.preserveQuotes');
});

test('bad input: typed errors, never a trapped instance', () => {
  throwsCode(() => applyWatermark('not an array'), 'invalid_input', 'messages');
  throwsCode(() => applyWatermark([{ role: 'user', content: 42 }]), 'invalid_message', 'messages[0].content');
  throwsCode(() => applyWatermark([{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'tool_use', name: 'n', input: {} }] }]),
    'invalid_message', 'messages[1].content[0].id');
  throwsCode(() => applyWatermark([], { watermark: 5 }), 'invalid_state', 'state.watermark');
  throwsCode(() => applyWatermark([], null, { keepLast: 2 }), 'invalid_options', 'options.keepLast');
  throwsCode(() => applyWatermark([], null, { excludeTools: ['a['] }), 'invalid_options', 'options.excludeTools[0]');
  const cyclic = { role: 'user', content: 'x' };
  cyclic.self = cyclic;
  throwsCode(() => applyWatermark([cyclic]), 'invalid_input', 'messages');
  throwsCode(() => applyWatermark([{ role: 'user', content: 'x', n: 1n }]), 'invalid_input', 'messages');
  throwsCode(() => applyWatermarkJson('[' .repeat(10_000) + ']'.repeat(10_000)), 'invalid_json');
  throwsCode(() => applyWatermarkJson(42), 'invalid_input', 'json');
  throwsCode(() => compress([], { recencyWindow: -1 }), 'invalid_options', 'options.recencyWindow');
  throwsCode(() => compressJson('{"messages": 3}'), 'invalid_input', 'messages');
  throwsCode(() => validate({}), 'invalid_input', 'messages');
});

test('a 10 MB message goes through', () => {
  const big = 'x'.repeat(10 * 1024 * 1024);
  const messages = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'cat', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: big }, { type: 'text', text: 'next' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'compress_to_checkpoint', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: 'ok' }] },
  ];
  const out = applyWatermark(messages);
  assert.ok(out.stats.charsBefore > 10_000_000);
  assert.ok(out.stats.charsAfter < 1_000);
});

test('ERROR_CODES and index.d.ts match src/error.rs', () => {
  const rust = [...read('src/error.rs').matchAll(/ErrorKind::\w+ => "([a-z_]+)"/g)].map((m) => m[1]);
  assert.ok(rust.length >= 8);
  assert.deepEqual([...ERROR_CODES], rust);
  const dts = read('pkg-template/index.d.ts');
  const union = dts.match(/export type ErrorCode =([^;]+);/)[1];
  assert.deepEqual([...union.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]), rust);
});

/** The camelCase keys of a Rust options struct (its `pub` fields). */
function rustKeys(file, struct) {
  const src = read(file);
  const body = src.slice(src.indexOf(`pub struct ${struct} {`)).split('\n}')[0];
  return [...body.matchAll(/^\s+pub (\w+):/gm)].map((m) => m[1].replace(/_(\w)/g, (_, c) => c.toUpperCase()));
}

/** The keys of a TypeScript interface in index.d.ts. */
function dtsKeys(name) {
  const dts = read('pkg-template/index.d.ts');
  const body = dts.slice(dts.indexOf(`export interface ${name} {`)).split('\n}')[0];
  return [...body.matchAll(/^\s+(\w+)\??:/gm)].map((m) => m[1]);
}

test('option and result keys in index.d.ts match the Rust structs', () => {
  const pairs = [
    ['src/watermark/options.rs', 'WatermarkOptions', 'WatermarkOptions'],
    ['src/watermark/options.rs', 'WatermarkState', 'WatermarkState'],
    ['src/watermark/mod.rs', 'WatermarkStats', 'WatermarkStats'],
    ['src/compress/options.rs', 'CompressOptions', 'CompressOptions'],
    ['src/compress/output.rs', 'CompressStats', 'CompressStats'],
    ['src/message/validate.rs', 'ValidateOptions', 'ValidateOptions'],
    ['src/retrieve/options.rs', 'QueryOptions', 'QueryOptions'],
    ['src/retrieve/results.rs', 'QueryStats', 'QueryStats'],
    ['src/retrieve/results.rs', 'SearchResult', 'SearchResult'],
    ['src/retrieve/results.rs', 'QueryResult', 'QueryResult'],
    ['src/retrieve/mod.rs', 'Chunk', 'Chunk'],
    ['src/compress/prepare.rs', 'PrepareContextOptions', 'PrepareContextOptions'],
    ['src/compress/prepare.rs', 'ChunkReport', 'ChunkReport'],
    ['src/compress/prepare.rs', 'PrepareContextStats', 'PrepareContextStats'],
    ['src/compress/prepare.rs', 'PrepareContextResult', 'PrepareContextResult'],
  ];
  // Keys that exist only on the JS side: the embedder object, the callbacks, the cache and its
  // key are passed to wasm as the compress export's own arguments.
  const jsOnly = { CompressOptions: ['embedder', 'countTokens', 'summarizer', 'summarizerConcurrency', 'cache', 'cacheKey'], PrepareContextOptions: ['embedder'] };
  for (const [file, rust, ts] of pairs) {
    const r = rustKeys(file, rust);
    assert.ok(r.length > 0, `${rust}: no fields read`);
    const keys = dtsKeys(ts).filter((k) => !(jsOnly[ts] ?? []).includes(k));
    assert.deepEqual(keys.sort(), r.sort(), `${ts} vs ${rust}`);
  }
  // And the runtime agrees: every documented stat is present.
  const out = applyWatermark(sessions[0].messages);
  assert.deepEqual(Object.keys(out.stats).sort(), dtsKeys('WatermarkStats').sort());
});

const retrievalDocs = jsonl('tests/fixtures/retrieval/docs.jsonl');
const retrievalQueries = jsonl('tests/fixtures/retrieval/queries.jsonl');

test('Index: add with progress, query, get, remove, serialize round trip', () => {
  const index = Index.create();
  const seen = [];
  const n = index.add(retrievalDocs.slice(0, 60), { onProgress: (p) => seen.push(p.phase) });
  assert.equal(n, 60);
  assert.equal(index.size, 60);
  assert.ok(index.chunks >= 60);
  assert.ok(seen.includes('chunk') && seen.includes('embed'), seen.join());
  const q = retrievalQueries[0].text;
  const out = query(index, q);
  assert.ok(out.results.length > 0 && out.results.length <= 5);
  assert.deepEqual(Object.keys(out.stats).sort(), dtsKeys('QueryStats').sort());
  assert.deepEqual(Object.keys(out.results[0]).sort(), dtsKeys('SearchResult').sort());
  assert.ok(out.text.startsWith('[1] '), out.text);
  assert.ok(out.results.every((r, i) => i === 0 || r.score <= out.results[i - 1].score));
  const s = out.stats;
  assert.equal(s.candidates, s.returned + s.removedByMinScore + s.removedAsNearDuplicate
    + s.removedAsSemanticDuplicate + s.removedByPerDocLimit + s.removedByTopN);

  const doc = index.get(retrievalDocs[0]._id);
  assert.equal(doc.id, retrievalDocs[0]._id);
  assert.ok(doc.chunks[0].text.length > 0);
  assert.equal(index.get('no such id'), undefined);

  const bytes = index.serialize();
  const back = Index.deserialize(bytes);
  assert.deepEqual(back.query(q), out);
  assert.equal(index.remove([retrievalDocs[0]._id, 'unknown']), 1);
  assert.equal(index.size, 59);
  index.free();
  back.free();
});

test('Index: bad input is a typed error, and the index stays usable', () => {
  const index = Index.create();
  index.add([{ id: 'a', text: 'alpha beta gamma' }]);
  throwsCode(() => index.add([{ id: 'b', text: 'x' }, { id: 'b', text: 'y' }]), 'invalid_input', 'documents[1].id');
  throwsCode(() => index.add([{ id: 'c', text: 5 }]), 'invalid_input', 'documents[0].text');
  throwsCode(() => index.add('nope'), 'invalid_input', 'documents');
  throwsCode(() => index.query(''), 'invalid_input', 'question');
  throwsCode(() => index.query('alpha', { topN: 0 }), 'invalid_options', 'options.topN');
  throwsCode(() => index.query('alpha', { nope: 1 }), 'invalid_options');
  throwsCode(() => Index.create({ bm25: { k1: -1 } }), 'invalid_options', 'options.bm25.k1');
  throwsCode(() => Index.deserialize(new Uint8Array([1, 2, 3])), 'invalid_index');
  throwsCode(() => index.add([{ id: 'big', text: 'a'.repeat(9 << 20) }]), 'too_large', 'documents[0].text');
  assert.equal(index.size, 1);
  assert.equal(index.query('alpha gamma').results[0].docId, 'a');
  index.free();
});

test('compressResults and embed work on candidates from another engine', () => {
  const [v1, v2] = embed(['rotate the api keys', 'rotate the api keys']);
  assert.ok(v1 instanceof Float32Array && v1.length === 384);
  assert.deepEqual(v1, v2);
  assert.deepEqual(lexicalEmbedder().identity().kind, 'lexical');
  const candidates = [
    { id: 'k#0', docId: 'keys', path: 'docs/keys.md', headerPath: ['Keys', 'Rotation'], score: 0.9, text: 'Rotate keys with condense keys rotate. Old keys stop working after one hour.' },
    { id: 'k#1', docId: 'keys', score: 0.85, text: 'Rotate keys with condense keys rotate. Old keys stop working after one hour.' },
    { id: 'n#0', docId: 'noise', score: 0.1, text: 'Unrelated text about bread.' },
  ];
  const out = compressResults(candidates, 'how do I rotate keys?', {});
  assert.equal(out.results.length, 1);
  assert.equal(out.stats.removedByMinScore, 1);
  assert.equal(out.stats.removedAsNearDuplicate, 1);
  assert.ok(out.text.startsWith('[1] docs/keys.md § Keys > Rotation (0.90)'), out.text);
  throwsCode(() => compressResults([{ docId: 'x', score: 2, text: 't' }], 'q'), 'invalid_input');
});
