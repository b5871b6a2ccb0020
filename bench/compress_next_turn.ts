// Helper of bench/compress_eval.sh (config sets `*_next`), run with tsx from a copy of ../shared/eval:
// a "next turn" variant of a conversation set, to measure query-aware compression where a query can
// matter.
//   npx tsx compress_next_turn.ts <set.jsonl> <out.jsonl>
// For each conversation: the prefix before its last user message (with text: not tool results only)
// that has an assistant reply (k ≥ 4
// messages before it). `next_user` = that user message (the query); `questions` (the metric's QA
// records) = one per key token (the metric's extractKeys) of the reply that also occurs, as a whole
// token, in the prefix outside its last 4 messages, and not in the query nor the last 4 messages: what
// the next answer reuses from the old part of the conversation. The metric's qa retention is then the
// share of those keys the compressed prefix keeps ("outside" = all of them). Conversations with no such
// key are left out.
import { writeFileSync } from 'node:fs';
import { extractKeys, containsToken, messageText, readJsonl, type Rec } from './metrics_compress.ts';

const [src, out] = process.argv.slice(2);
if (!src || !out) {
  console.error('usage: compress_next_turn.ts <set.jsonl> <out.jsonl>');
  process.exit(2);
}
const recency = 4;
// A user turn that says something: string content, or a text block (an Anthropic user message of
// tool_result blocks only is the tool's answer, not the next question).
const asksSomething = (m: any) =>
  typeof m.content === 'string' || (Array.isArray(m.content) && m.content.some((b: any) => b?.type === 'text'));
const lines: string[] = [];
let questions = 0;
for (const rec of readJsonl(src) as Rec[]) {
  const ms = rec.messages;
  let k = -1;
  for (let i = ms.length - 2; i >= recency; i--) {
    if (ms[i].role === 'user' && ms[i + 1].role === 'assistant' && asksSomething(ms[i])) { k = i; break; }
  }
  if (k < 0) continue;
  const prefix = ms.slice(0, k);
  const query = messageText(ms[k]);
  const reply = messageText(ms[k + 1]);
  const lowered = prefix.map((m) => messageText(m).toLowerCase());
  const recent = lowered.slice(-recency).join('\n');
  const qLow = query.toLowerCase();
  const qs: any[] = [];
  for (const key of extractKeys(reply).keys()) {
    const low = key.toLowerCase();
    if (containsToken(qLow, low) || containsToken(recent, low)) continue;
    let at = -1;
    for (let i = prefix.length - recency - 1; i >= 0 && at < 0; i--) {
      if (containsToken(lowered[i], low)) at = i;
    }
    if (at >= 0) qs.push({ question: query, answers: [key], answer_message_index: at });
  }
  if (!qs.length) continue;
  questions += qs.length;
  lines.push(JSON.stringify({ id: rec.id, messages: prefix, questions: qs, next_user: query, meta: rec.meta }));
}
writeFileSync(out, lines.join('\n') + '\n');
console.error(`${lines.length} conversations, ${questions} key questions -> ${out}`);
