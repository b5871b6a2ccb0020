// The npm package as users meet it: `node --test tests/npm/` after scripts/build-pkg.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const read = (p) => readFileSync(new URL(p, root), 'utf8');
const condense = await import(new URL('pkg/node.js', root).href);
const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, version,
  CondenseError, ERROR_CODES,
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
    ['src/compress/mod.rs', 'CompressStats', 'CompressStats'],
    ['src/message/validate.rs', 'ValidateOptions', 'ValidateOptions'],
  ];
  for (const [file, rust, ts] of pairs) {
    const r = rustKeys(file, rust);
    assert.ok(r.length > 0, `${rust}: no fields read`);
    assert.deepEqual(dtsKeys(ts).sort(), r.sort(), `${ts} vs ${rust}`);
  }
  // And the runtime agrees: every documented stat is present.
  const out = applyWatermark(sessions[0].messages);
  assert.deepEqual(Object.keys(out.stats).sort(), dtsKeys('WatermarkStats').sort());
});
