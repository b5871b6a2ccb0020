// Helper of bench/compress_eval.sh, run with tsx from a copy of ../shared/eval: checks condense's
// `stats.fits` claim in the metric's own tokens. For each budget run, of the results condense
// says fit, how many are over their `tokenBudget` in o200k tokens (the metric's contextTokens),
// and the worst o200k/budget ratio among them.
//   compress_fits.ts <base> [<base> …]   base = runs/<set>.<config> (reads .tasks.jsonl, .raw.jsonl)
import { contextTokens, readJsonl } from './metrics_compress.ts';

for (const base of process.argv.slice(2)) {
  const tasks = new Map<string, any>(readJsonl(base + '.tasks.jsonl').map((t: any) => [t.task_id, t]));
  let claimed = 0;
  let worst = 0;
  const over: string[] = [];
  for (const o of readJsonl(base + '.raw.jsonl') as any[]) {
    const budget = tasks.get(o.task_id)?.options?.tokenBudget;
    if (!budget || !o.stats?.fits) continue;
    claimed++;
    const real = contextTokens(o.messages);
    if (real > budget) over.push(`${o.task_id}: ${real} o200k tokens for a budget of ${budget} (estimated ${o.stats.tokensAfter})`);
    worst = Math.max(worst, real / budget);
  }
  if (!claimed) continue;
  console.log(JSON.stringify({ run: base, claimedFits: claimed, overInO200k: over.length, worstO200kOverBudget: +worst.toFixed(3), over: over.slice(0, 10) }));
}
