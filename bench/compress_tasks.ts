// Helper of bench/compress_eval.sh, run with tsx from a copy of ../shared/eval (it imports the metric).
//   tasks  <set.jsonl> <config> <out.jsonl>   the metric's tasks with per-line `options` for <config>:
//          default | budget (tokenBudget = floor(0.25 × o200k tokens)) | budget-query (the same plus
//          `query` = the text of the next user message after the task's messages; for a whole
//          conversation, its last user message)
//   merge  <outputs.jsonl> <restored.jsonl> <merged.jsonl>   adds `roundTrip` (uncompress gives the
//          task's messages back, compared as parsed JSON) to each output line
import { readFileSync, writeFileSync } from 'node:fs';
import { makeTasks, contextTokens, readJsonl, type Msg, type Rec } from './metrics_compress.ts';

function userText(m: Msg): string | null {
  if (m.role !== 'user') return null;
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) {
    const t = m.content.filter((b: any) => b?.type === 'text' && typeof b.text === 'string').map((b: any) => b.text);
    return t.length ? t.join('\n') : null;
  }
  return null;
}

const [cmd, a, b, c] = process.argv.slice(2);
if (cmd === 'tasks') {
  const ratio = Number(process.env.BUDGET_RATIO ?? '0.25');
  const recs: Rec[] = readJsonl(a);
  const lines: string[] = [];
  for (const rec of recs) {
    for (const t of makeTasks(rec)) {
      const options: Record<string, unknown> = {};
      if (b !== 'default') options.tokenBudget = Math.floor(ratio * contextTokens(t.messages));
      if (b === 'budget-query') {
        // A `*_next` set (compress_next_turn.ts) names the next user message itself.
        let q: string | null = typeof (rec as any).next_user === 'string' ? (rec as any).next_user : null;
        for (let i = t.messages.length; i < rec.messages.length && q == null; i++) q = userText(rec.messages[i]);
        for (let i = t.messages.length - 1; i >= 0 && q == null; i--) q = userText(t.messages[i]);
        if (q) options.query = q;
      }
      lines.push(JSON.stringify({ task_id: t.task_id, messages: t.messages, options }));
    }
  }
  writeFileSync(c, lines.join('\n') + '\n');
} else if (cmd === 'merge') {
  const restored = new Map<string, any>(readJsonl(b).map((r: any) => [r.id, r.messages]));
  const tasks = new Map<string, any>(readJsonl(process.env.TASKS!).map((t: any) => [t.task_id, t.messages]));
  const out: string[] = [];
  for (const o of readJsonl(a)) {
    const r = restored.get(o.task_id);
    o.roundTrip = r !== undefined && JSON.stringify(r) === JSON.stringify(tasks.get(o.task_id));
    out.push(JSON.stringify(o));
  }
  writeFileSync(c, out.join('\n') + '\n');
} else {
  console.error('usage: compress_tasks.ts tasks <set> <default|budget|budget-query> <out> | merge <outs> <restored> <merged>');
  process.exit(2);
}
