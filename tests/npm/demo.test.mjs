// scripts/demo (the README's demo) runs, and shows all three jobs with correct results: the
// demo exits 1 when a result is wrong. DEMO_NO_BUILD: pkg/ is the one scripts/build-pkg built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('scripts/demo shows applyWatermark, compress and query, each with a correct result', () => {
  const out = execFileSync('bash', ['scripts/demo'], {
    cwd: root,
    env: { ...process.env, DEMO_NO_BUILD: '1' },
    encoding: 'utf8',
  });
  assert.match(out, /applyWatermark on an agent session/);
  assert.match(out, /valid request {4}yes/);
  assert.match(out, /compress on a ShareGPT conversation/);
  assert.match(out, /round trip {7}exact/);
  assert.match(out, /query on ten short notes/);
  assert.match(out, /answered {9}2 of 2 by the right note first/);
  assert.match(out, /Cooling a notebook computer/);
});
