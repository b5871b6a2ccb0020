// The glue patch of scripts/patch-glue.mjs: the patched passStringToWasm0 writes the same bytes
// as wasm-bindgen's own on every kind of string, and the built package carries it.
// `node --test tests/npm/` after scripts/build-pkg.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ORIGINAL, PATCHED } from '../../scripts/patch-glue.mjs';

const root = new URL('../../', import.meta.url);

/** The function in `source`, over a growable fake wasm memory with a bump allocator. */
function instantiate(source) {
  const make = new Function('env', `
    let WASM_VECTOR_LEN = 0;
    const cachedTextEncoder = new TextEncoder();
    const getUint8ArrayMemory0 = () => env.memory;
    ${source}
    return (arg) => {
      const ptr = passStringToWasm0(arg, env.malloc, env.realloc);
      return env.memory.slice(ptr, ptr + WASM_VECTOR_LEN);
    };`);
  const env = { memory: new Uint8Array(64), top: 8 };
  const ensure = (end) => {
    if (end <= env.memory.length) return;
    const grown = new Uint8Array(Math.max(end, env.memory.length * 2));
    grown.set(env.memory);
    env.memory = grown; // like memory.grow: old views are detached in spirit
  };
  env.malloc = (size) => {
    const ptr = env.top;
    env.top += size;
    ensure(env.top);
    return ptr;
  };
  env.realloc = (ptr, old, size) => {
    const fresh = env.malloc(size);
    env.memory.copyWithin(fresh, ptr, ptr + Math.min(old, size));
    return fresh;
  };
  return make(env);
}

/** A deterministic pseudo-random generator (xorshift32). */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

/** Strings that stress the encoder: ASCII runs, 2-, 3- and 4-byte characters, lone surrogates. */
function strings() {
  const out = ['', 'a', 'é', '😀', '\ud800', '\udc00x', 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(257)];
  const pieces = ['a', 'Z', ' ', '"', '\n', 'é', 'ß', '€', '中', '😀', '\ud83d', '\ude00', '\u0000', '\u007f', '\u0080', '\uffff'];
  const next = rng(42);
  for (const len of [10, 200, 255, 256, 257, 300, 1000, 5000, 70000]) {
    for (let k = 0; k < 6; k++) {
      let s = '';
      // Mostly ASCII with non-ASCII at a random place (or none), as in real text.
      const asciiOnly = k === 0;
      while (s.length < len) {
        const p = next();
        s += asciiOnly || p < 0.9 ? String.fromCharCode(32 + Math.floor(next() * 95)) : pieces[Math.floor(next() * pieces.length)];
      }
      out.push(s);
      // A non-ASCII character exactly at the end, and right at the start.
      out.push(s.slice(0, len - 1) + '😀', '中' + s);
    }
  }
  return out;
}

test('the patched passStringToWasm0 writes the bytes wasm-bindgen\'s does', () => {
  const original = instantiate(ORIGINAL);
  const patched = instantiate(PATCHED);
  const encoder = new TextEncoder();
  for (const s of strings()) {
    const want = original(s);
    assert.deepEqual(patched(s), want, `length ${s.length}`);
    assert.deepEqual(want, encoder.encode(s));
  }
});

test('the built package carries the patched glue', () => {
  for (const glue of ['pkg/condense.js', 'pkg/condense_embed.js']) {
    const text = readFileSync(new URL(glue, root), 'utf8');
    assert.ok(text.includes(PATCHED), `${glue} is not patched (scripts/build-pkg runs scripts/patch-glue.mjs)`);
    assert.ok(!text.includes(ORIGINAL), glue);
  }
});

test('long non-ASCII strings survive a round trip through the package', async () => {
  const { compressJson, uncompress } = await import(new URL('pkg/node.js', root).href);
  const messages = [];
  for (let i = 0; i < 12; i++) {
    messages.push({ role: i % 2 ? 'assistant' : 'user', content: `Über ${i} — 中文 😀 `.repeat(60) + 'x'.repeat(i * 31) });
  }
  const json = JSON.stringify(messages);
  const out = compressJson(json, {});
  const back = uncompress(JSON.parse(out.json), JSON.parse(out.verbatim));
  assert.equal(JSON.stringify(back), json);
});

test('applyWatermarkJson reads texts of every kind of character at every block offset (Node: UTF-16 in, SIMD to UTF-8)', async () => {
  const { applyWatermarkJson, applyWatermark } = await import(new URL('pkg/node.js', root).href);
  const chars = ['a', 'é', '中', '😀', '\u007f', '\u0080', '\u07ff', '\u0800', '\uffff', '"', '\\', '\n'];
  const next = rng(7);
  for (let round = 0; round < 40; round++) {
    // Plain ASCII up to a random offset (around the 64-unit blocks), then mixed characters.
    let text = 'x'.repeat(Math.floor(next() * 200));
    while (text.length < 300) text += chars[Math.floor(next() * chars.length)];
    const messages = [
      { role: 'user', content: text },
      { role: 'assistant', content: [{ type: 'tool_use', id: `t${round}`, name: 'read', input: { path: text.slice(0, 40) } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${round}`, content: text }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: `c${round}`, name: 'compress_to_checkpoint', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `c${round}`, content: 'ok' }] },
      { role: 'assistant', content: text },
    ];
    const json = JSON.stringify(messages);
    const fromText = applyWatermarkJson(json, null);
    assert.equal(fromText.json, JSON.stringify(applyWatermark(messages, null).messages), `round ${round}`);
    // Not found: the text comes back as it was.
    const plain = JSON.stringify([messages[0], messages[5]]);
    assert.equal(applyWatermarkJson(plain, null).json, plain);
  }
});

test('compress on objects in Node: long strings quoted in wasm give the text JSON.stringify gives (ids, outputs, errors)', async () => {
  const { compress, compressJson } = await import(new URL('pkg/node.js', root).href);
  // Every kind of unit JSON.stringify escapes or encodes (lone surrogates: below).
  const chars = ['a', ' ', 'é', '中', '😀', '"', '\\', '\n', '\t', '\r', '\b', '\f',
    '\u0000', '\u001f', '\u007f', '\u2028', '/', '<'];
  const next = rng(11);
  const prose = (n) => {
    // Sentences (so old messages get summaries, and ids of their exact text) with a random
    // run of special units at a random offset, around the 8-unit steps.
    let t = '';
    while (t.length < n) {
      t += 'The deploy of service alpha failed at step 3 after 45 seconds. ';
      let run = '';
      for (let k = Math.floor(next() * 12); k > 0; k--) run += chars[Math.floor(next() * chars.length)];
      t += 'x'.repeat(Math.floor(next() * 9)) + run + ' ';
    }
    return t;
  };
  for (let round = 0; round < 12; round++) {
    const messages = [];
    for (let i = 0; i < 9; i++) {
      messages.push({ role: i % 2 ? 'assistant' : 'user', content: prose(300 + Math.floor(next() * 900)), ...(i === 2 ? { name: 'x', meta: { n: 1, skip: undefined }, gone: undefined } : {}) });
    }
    const objects = compress(messages, {});
    const text = compressJson(JSON.stringify(messages), {});
    assert.ok(objects.stats.summarized > 0, `round ${round}: something is summarised`);
    assert.deepEqual(JSON.parse(JSON.stringify(objects.messages)), JSON.parse(text.json), `round ${round}`);
    assert.deepEqual(Object.keys(objects.verbatim), Object.keys(JSON.parse(text.verbatim)), `round ${round}: the same ids`);
  }
  // Long strings nested in blocks (Anthropic text and tool_result blocks, OpenAI tool calls),
  // next to what JSON.stringify writes by its own rules at every depth: undefined and functions
  // in arrays (null) and objects (left out), a nested toJSON reading its key, a null-prototype
  // object, a boxed string, nesting deeper than the walk.
  for (let round = 0; round < 6; round++) {
    const deep = { a: { b: { c: { d: { e: { f: { g: prose(300) } } } } } } };
    const bare = Object.assign(Object.create(null), { note: prose(280) });
    const tail = [
      { role: 'assistant', content: prose(600) },
      { role: 'user', content: 'short a' },
      { role: 'assistant', content: 'short b' },
      { role: 'user', content: 'short c' },
      { role: 'assistant', content: 'short d' },
    ];
    const anthropic = [
      { role: 'user', content: [{ type: 'text', text: prose(500) }, { type: 'text', text: 'short' }] },
      { role: 'assistant', content: [{ type: 'text', text: prose(400) }, { type: 'tool_use', id: `t${round}`, name: 'read', input: { path: 'a.rs', why: prose(260), list: [1, undefined, () => 1, 'x'], deep } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${round}`, content: prose(900), extra: undefined, when: { toJSON: (key) => `key:${key}` }, bare, boxed: new String(prose(270)) }] },
      ...tail,
    ];
    const openai = [
      { role: 'user', content: prose(500) },
      { role: 'assistant', content: null, tool_calls: [{ id: `c${round}`, type: 'function', function: { name: 'f', arguments: JSON.stringify({ q: prose(300) }) } }] },
      { role: 'tool', tool_call_id: `c${round}`, content: prose(700), meta: { deep, bare } },
      ...tail,
    ];
    for (const messages of [anthropic, openai]) {
      const a = compress(messages, {});
      const b = compressJson(JSON.stringify(messages), {});
      assert.deepEqual(a.stats, b.stats, `nested round ${round}`);
      assert.deepEqual(Object.keys(a.verbatim), Object.keys(JSON.parse(b.verbatim)), `nested round ${round}: the same ids`);
      assert.ok(Object.keys(a.verbatim).length > 0, `nested round ${round}: something is summarised`);
    }
  }
  // What JSON.stringify writes by its own rules: members with toJSON, class instances, holes.
  class Note { constructor() { this.role = 'user'; this.content = prose(400); } }
  const [p1, p2] = [prose(400), prose(300)];
  const odd = [
    // A toJSON that reads its key: JSON.stringify(messages) passes the index.
    { role: 'user', toJSON(key) { return { role: 'user', content: `message ${key}: ${p1}` }; } },
    { role: 'assistant', content: prose(400), at: new Date(0) },
    new Note(),
    { role: 'assistant', content: prose(400), toJSON() { return { role: 'assistant', content: `replaced ${p2}` }; } },
    { role: 'assistant', content: prose(400) },
    { role: 'user', content: 'short one' },
    { role: 'assistant', content: 'short two' },
    { role: 'user', content: 'short three' },
    { role: 'assistant', content: 'short four' },
  ];
  const a = compress(odd, {});
  const b = compressJson(JSON.stringify(odd), {});
  // (Untouched messages are the caller's objects: stringified again at another index, a
  // key-reading toJSON would write another text, so the texts are compared through the ids.)
  assert.deepEqual(a.stats, b.stats);
  assert.deepEqual(Object.keys(a.verbatim), Object.keys(JSON.parse(b.verbatim)));
  assert.ok(Object.keys(a.verbatim).length >= 3, 'the odd messages are summarised (their ids are hashes of their text)');
  assert.equal(a.messages.length, JSON.parse(b.json).length);
  // A lone surrogate: JSON.stringify writes it as an escape the core's JSON reader refuses
  // (serde_json), on both paths alike.
  for (const lone of ['\ud83d', '\ude00']) {
    const m = [{ role: 'user', content: prose(300) + lone + prose(40) }];
    const caught = (f) => { try { f(); } catch (e) { return `${e.code} ${e.message}`; } return 'no error'; };
    const fromText = caught(() => compressJson(JSON.stringify(m), {}));
    assert.match(fromText, /^invalid_json .*surrogate|^invalid_json .*hex escape/);
    // The same message, at the same column: the same text was read.
    assert.equal(caught(() => compress(m, {})), fromText);
  }
  // A message that writes nothing is `null` on both paths (and not a message).
  const nothing = [{ toJSON() { return undefined; } }];
  const fromText = (() => { try { compressJson(JSON.stringify(nothing), {}); } catch (e) { return e.message; } })();
  assert.throws(() => compress(nothing, {}), (e) => e.message === fromText && e.code === 'invalid_message');
  // Errors are the plain path's.
  const cyclic = { role: 'user', content: prose(300) };
  cyclic.self = { back: cyclic };
  assert.throws(() => compress([cyclic], {}), (e) => e.code === 'invalid_input' && e.path === 'messages');
  assert.throws(() => compress([{ role: 'user', content: prose(300), n: 1n }], {}), (e) => e.code === 'invalid_input');
});
