// What the package's two WebAssembly modules must not carry: the wasm tests' bit-identity checks
// (`condense::embed::test_hooks`, feature `test-hooks`, with their random-input generators and
// pinned digests) and the test fixtures (tests/fixtures/). Reads the modules scripts/build-pkg
// wrote into pkg/; the same holds for `scripts/build-pkg --dist` (the only difference the test
// build has is the `__armTrap` export of feature `test-trap`, checked below).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const modules = ['pkg/condense_bg.wasm', 'pkg/condense_embed_bg.wasm'].map((p) => ({
  path: p,
  bytes: readFileSync(new URL(p, root)),
}));

// Upper bounds on the modules' sizes (raw bytes): measured 2,619,695 (core, release + wasm-opt)
// and 20,599,954 (engine) on 2026-11-27 (scripts/build-pkg, x86-64 Debian, Rust stable); about
// 18% above, so a fixture of the size of tests/fixtures' larger files, or the checks pulling in
// a second copy of a kernel, fails.
const BOUNDS = { 'pkg/condense_bg.wasm': 3_100_000, 'pkg/condense_embed_bg.wasm': 24_300_000 };

test('each module stays below its size bound', () => {
  for (const m of modules) {
    assert.ok(m.bytes.length < BOUNDS[m.path], `${m.path}: ${m.bytes.length} bytes, bound ${BOUNDS[m.path]}`);
  }
});

// Texts only the checks of src/embed/test_hooks.rs and the kernels' check functions hold.
const HOOK_TEXTS = [
  ', natively ',
  'pack sizes or row scales differ',
  ' in SIMD, ',
  'erf, sum, rms norm and softmax',
  'special case ',
];

// The digests the checks pin (src/embed/engine/same.rs), as the `i64.const` instructions that
// would load them (opcode 0x42, signed LEB128).
function i64Const(value) {
  let v = BigInt.asIntN(64, value);
  const out = [0x42];
  for (;;) {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    if ((v === 0n && !(byte & 0x40)) || (v === -1n && byte & 0x40)) {
      out.push(byte);
      return Buffer.from(out);
    }
    out.push(byte | 0x80);
  }
}
const DIGESTS = [0xd57b_0a1f_7b18_f55dn, 0x9930_d245_e6b1_69d0n];

test('no module carries the test hooks: their messages and pinned digests are absent', () => {
  for (const m of modules) {
    for (const text of HOOK_TEXTS) {
      assert.equal(m.bytes.indexOf(Buffer.from(text)), -1, `${m.path} holds ${JSON.stringify(text)}`);
    }
    for (const d of DIGESTS) {
      assert.equal(m.bytes.indexOf(i64Const(d)), -1, `${m.path} loads the digest ${d.toString(16)}`);
    }
  }
});

test('the digest search finds a digest where one is loaded', () => {
  // The encoder the check above relies on, on a module that loads one: the check can fail.
  const planted = Buffer.concat([Buffer.from([0, 1, 2]), i64Const(DIGESTS[0]), Buffer.from([0x1a])]);
  assert.notEqual(planted.indexOf(i64Const(DIGESTS[0])), -1);
  assert.deepEqual([...i64Const(-1n)], [0x42, 0x7f]);
  assert.deepEqual([...i64Const(624485n)], [0x42, 0xe5, 0x8e, 0x26]);
});

// Distinctive windows of every text fixture: 48 bytes at evenly spaced offsets, skipping windows
// of JSON punctuation or repeated bytes that any module could hold by chance.
function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = `${dir}/${name}`;
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

test('no module carries a test fixture (48-byte windows of every text fixture are absent)', () => {
  const fixtures = [...files(new URL('tests/fixtures', root).pathname)].filter((p) => /\.(jsonl?|md)$/.test(p));
  assert.ok(fixtures.length >= 8, `${fixtures.length} fixtures`);
  let windows = 0;
  for (const path of fixtures) {
    const data = readFileSync(path);
    const step = Math.max(1, Math.floor(data.length / 64));
    for (let at = 0; at + 48 <= data.length; at += step) {
      const w = data.subarray(at, at + 48);
      if (new Set(w).size < 16 || /^[\s\[\]{}",:0-9.eE+-]*$/.test(w.toString('latin1'))) continue;
      windows++;
      for (const m of modules) {
        assert.equal(m.bytes.indexOf(w), -1, `${m.path} holds ${path} at ${at}: ${JSON.stringify(w.toString())}`);
      }
    }
  }
  assert.ok(windows > 300, `${windows} windows checked`);
});

test('only the test build exports __armTrap, and only from the core module', () => {
  const exported = (bytes) => WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map((e) => e.name);
  const [core, engine] = modules.map((m) => exported(m.bytes));
  assert.ok(!engine.some((n) => /trap|check|hook/i.test(n)), engine.join(' '));
  const hooks = core.filter((n) => /trap|check_|hook/i.test(n));
  assert.ok(hooks.every((n) => n === '__armTrap'), hooks.join(' '));
});
