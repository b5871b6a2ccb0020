// 10,000 forced traps in one process (issue 28, finding 2: after ~180 traps every call failed
// with "memory access out of bounds"). Each cycle traps the module (the test build's
// __armTrap) inside a call, which throws `internal`, then checks that the next calls answer
// exactly as before the first trap. TRAP_CYCLES overrides the count.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const root = new URL('../../', import.meta.url);
const { applyWatermark, compressJson, validate, Index, CondenseError } = await import(new URL('pkg/node.js', root).href);
const glue = await import(new URL('pkg/condense.js', root).href);

const CYCLES = Number(process.env.TRAP_CYCLES ?? 10_000);

test(`${CYCLES} trap-and-recover cycles, every later call still correct`, () => {
  const messages = [
    { role: 'user', content: 'The build fails in src/parser.rs at line 42: a string where a number belongs.' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'src/parser.rs' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'fn parse() { let x: u32 = "a"; }' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'compress_to_checkpoint', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: 'ok' }] },
  ];
  const json = JSON.stringify(messages);
  const watermarked = JSON.stringify(applyWatermark(messages));
  const compressed = JSON.stringify(compressJson(json, { tokenBudget: 40 }));
  const validated = JSON.stringify(validate(messages));
  const docs = [{ id: 'a', text: '# Parser\n\nThe parser reads tokens.' }, { id: 'b', text: 'A build error names the file.' }];
  const index = Index.create();
  index.add(docs);
  const ranked = JSON.stringify(index.query('parser', { minScore: 0 }));
  index.free();

  const started = performance.now();
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    glue.__armTrap();
    assert.throws(() => applyWatermark(messages, null, {}), (e) => e instanceof CondenseError && e.code === 'internal');
    // Every later call, every cycle: the cheap ones; the index every 100th (it embeds).
    assert.equal(JSON.stringify(applyWatermark(messages)), watermarked, `cycle ${cycle}`);
    assert.equal(JSON.stringify(compressJson(json, { tokenBudget: 40 })), compressed, `cycle ${cycle}`);
    assert.equal(JSON.stringify(validate(messages)), validated, `cycle ${cycle}`);
    if (cycle % 100 === 0) {
      const again = Index.create();
      again.add(docs);
      assert.equal(JSON.stringify(again.query('parser', { minScore: 0 })), ranked, `cycle ${cycle}`);
      again.free();
    }
  }
  const ms = performance.now() - started;
  console.log(`# ${CYCLES} cycles in ${(ms / 1000).toFixed(1)} s (${(ms / CYCLES).toFixed(2)} ms per trap, recovery and checks)`);
});
