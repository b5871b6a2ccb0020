// The best token ratio any compressor can reach on a conversation set while keeping every value
// of its tool outputs (issue 27's "lossless by default"), in the metric's own terms: run with tsx
// from a copy of ../shared/eval (as bench/compress_eval.sh's helpers are).
//
//   cp bench/compress_bound.ts $EVAL_DIR/ && cd $EVAL_DIR &&
//   npx tsx compress_bound.ts ../shared/data/conversations/tool_sessions_dev_openai.jsonl […]
//
// The metric's token ratio is Σ original tokens / Σ compressed tokens over whole conversations,
// keeping the last `recency` messages' text as it is (they are the context the next call
// needs; condense keeps them verbatim). The bound gives every other message nothing at all
// (every user turn, assistant text and tool call dropped) and writes each older tool output as
// its bare values, one space apart: the leaves of its JSON (strings, numbers, booleans), or the
// whole text when it is not JSON. That is a floor of what a rendering keeping every value can
// cost, so `everyValue` is a ceiling of its ratio. `distinctValues` counts each value once per
// conversation (repeats and their order dropped too: no longer lossless), a looser ceiling.
// `condense`, with `--outputs runs/<set>.default.out.jsonl` (bench/compress_eval.sh's merged
// outputs), is what the outputs reach, for comparison.
import { contextTokens, countTokens, readJsonl } from './metrics_compress.ts';

const args = process.argv.slice(2);
const recency = 4;
const outputsAt = args.indexOf('--outputs');
const outputsFile = outputsAt >= 0 ? args.splice(outputsAt, 2)[1] : undefined;

/** The texts of a message's tool outputs (OpenAI `tool` messages, Anthropic `tool_result` blocks). */
function toolTexts(m: any): string[] {
  if (m?.role === 'tool' && typeof m.content === 'string') return [m.content];
  if (!Array.isArray(m?.content)) return [];
  return m.content
    .filter((b: any) => b?.type === 'tool_result')
    .map((b: any) =>
      typeof b.content === 'string'
        ? b.content
        : Array.isArray(b.content)
          ? b.content.map((x: any) => (typeof x?.text === 'string' ? x.text : '')).join('\n')
          : '',
    );
}

/** The values of one tool output: its JSON leaves, or the text itself. */
function values(text: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [text];
  }
  const leaves: string[] = [];
  const walk = (v: unknown) => {
    if (v === null || v === undefined) return;
    if (typeof v === 'object') for (const x of Object.values(v as object)) walk(x);
    else leaves.push(String(v));
  };
  walk(parsed);
  return leaves;
}

for (const set of args) {
  const records = readJsonl(set) as any[];
  let original = 0;
  let everyValue = 0;
  let distinctValues = 0;
  for (const r of records) {
    const ms: any[] = r.messages;
    const old = Math.max(0, ms.length - recency);
    original += contextTokens(ms);
    const recent = contextTokens(ms.slice(old));
    everyValue += recent;
    distinctValues += recent;
    const seen = new Set<string>();
    for (const m of ms.slice(0, old)) {
      for (const text of toolTexts(m)) {
        for (const v of values(text)) {
          const tokens = countTokens(' ' + v);
          everyValue += tokens;
          if (!seen.has(v)) distinctValues += tokens;
          seen.add(v);
        }
      }
    }
  }
  const row: Record<string, unknown> = {
    set,
    conversations: records.length,
    originalTokens: original,
    everyValue: +(original / everyValue).toFixed(3),
    distinctValues: +(original / distinctValues).toFixed(3),
  };
  if (outputsFile) {
    const byId = new Map<string, any>((readJsonl(outputsFile) as any[]).map((o) => [o.task_id, o]));
    let compressed = 0;
    for (const r of records) compressed += contextTokens(byId.get(r.id)?.messages ?? r.messages);
    row.condense = +(original / compressed).toFixed(3);
  }
  console.log(JSON.stringify(row));
}
