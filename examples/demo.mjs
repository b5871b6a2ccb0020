// The README's demo: condense's three jobs through the npm package as a user imports it:
// applyWatermark and compress on real sessions, query on a few short notes with MiniLM.
// Exits 1 when a result is wrong (tests/npm/demo.test.mjs runs it).
//
//   node examples/demo.mjs          (after scripts/build-pkg; scripts/demo does both)
import { readFileSync } from 'node:fs';
import { applyWatermark, compress, validate, version, loadEmbedder, Index, query, uncompress } from '../pkg/node.js';

const jsonl = (p) => readFileSync(new URL(p, import.meta.url), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const sessions = jsonl('../tests/fixtures/watermark_sessions_dev.jsonl');
const num = (n) => n.toLocaleString('en-US');

console.log(`condense ${version()} — applyWatermark on an agent session (BFCL, Anthropic shape)\n`);
// The session with two checkpoints: deactivate_augments early, compress_to_checkpoint later.
const rec = sessions.find((r) => r.expected.variant === 'both');
let state = { watermark: null };
const out = applyWatermark(rec.messages, state);
state = out.state;
const s = out.stats;
console.log(`  session          ${rec.id}: ${rec.messages.length} messages, ${num(s.charsBefore)} characters`);
console.log(`  watermark        ${state.watermark} (message ${s.watermarkIndex}, the newest of two checkpoints)`);
console.log(`  removed          ${s.toolCallsRemoved} tool calls, ${s.toolResultsRemoved} tool results, ${s.thinkingRemoved} thinking blocks`);
console.log(`  messages         ${s.messagesBefore} -> ${s.messagesAfter} (${s.messagesDropped} dropped, ${s.messagesMerged} merged)`);
console.log(`  characters       ${num(s.charsBefore)} -> ${num(s.charsAfter)}  (${(100 * (1 - s.charsAfter / s.charsBefore)).toFixed(1)}% smaller)`);
console.log(`  est. tokens      ${num(s.tokensBefore)} -> ${num(s.tokensAfter)}`);
const v = validate(out.messages, { format: 'anthropic' });
console.log(`  valid request    ${v.valid ? 'yes' : 'NO: ' + JSON.stringify(v.violations)}`);
const texts = rec.expected.texts_before_watermark;
const kept = texts.filter((t) => JSON.stringify(out.messages).includes(JSON.stringify(t).slice(1, -1))).length;
console.log(`  texts kept       ${kept} of ${texts.length} written before the watermark`);

console.log(`\ncompress on a ShareGPT conversation (OpenAI shape)\n`);
const chat = jsonl('../tests/fixtures/sharegpt_sample.jsonl')[0];
const c = compress(chat.messages);
console.log(`  conversation     ${chat.id}: ${chat.messages.length} messages`);
console.log(`  est. tokens      ${num(c.stats.tokensBefore)} -> ${num(c.stats.tokensAfter)}  (ratio ${c.stats.ratio.toFixed(2)})`);
console.log(`  decisions        ${c.stats.summarized} summarised, ${c.stats.codeSplit} code-split, ${c.stats.deduped} deduplicated, ${c.stats.preserved} kept`);
const first = c.messages.find((m) => typeof m.content === 'string' && m.content.startsWith('[summary#'));
if (first) console.log(`  a summary        ${first.content.slice(0, 160)}…`);
const exact = JSON.stringify(uncompress(c.messages, c.verbatim)) === JSON.stringify(chat.messages);
console.log(`  round trip       ${exact ? 'exact' : 'BROKEN'}`);

console.log(`\nquery on ten short notes (www/samples/notes.json) with MiniLM (the model shipped in the package)\n`);
const notes = JSON.parse(readFileSync(new URL('../www/samples/notes.json', import.meta.url), 'utf8'));
const embedder = await loadEmbedder();
const index = Index.create({ embedder });
index.add(notes);
// The first question shares no word with the note that answers it: only the embeddings connect them.
const questions = [
  ['my laptop is overheating', 'notebook-heat'],
  ['how do I get my dog to stop pulling', 'puppy'],
];
let found = 0;
for (const [question, want] of questions) {
  const out = query(index, question, { topN: 2 });
  const top = out.results[0];
  found += top?.docId === want ? 1 : 0;
  console.log(`  "${question}"`);
  for (const r of out.results) console.log(`      ${r.score.toFixed(3)}  ${r.path}: ${r.content.slice(0, 70)}…`);
}
console.log(`  answered         ${found} of ${questions.length} by the right note first`);
index.free();
if (!v.valid || !exact || found !== questions.length) process.exit(1);
