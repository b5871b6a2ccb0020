// Synthetic chunk-sized documents for the retrieval benchmarks (bench/query.mjs,
// bench/browser.mjs): sentences of the dev IR corpora (the committed fixture when ../shared is
// absent) recombined by a fixed xorshift stream, so every run and every bench sees the same text.
import { existsSync, readFileSync } from 'node:fs';

const here = (p) => new URL(p, import.meta.url).pathname;

/** A corpus generator; `docs(n)` and `questions(n)` draw from one deterministic stream. */
export function syntheticCorpus() {
  const sources = ['../../shared/data/ir/cisi/corpus.jsonl', '../../shared/data/ir/med/corpus.jsonl'].map(here).filter(existsSync);
  if (sources.length === 0) sources.push(here('../tests/fixtures/retrieval/docs.jsonl'));
  const pool = [];
  for (const f of sources) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      for (const s of JSON.parse(line).text.split('. ')) if (s.length > 30) pool.push(`${s.replace(/\.$/, '')}.`);
    }
  }
  let seed = 42n;
  const next = () => { seed ^= (seed << 13n) & 0xffffffffffffffffn; seed ^= seed >> 7n; seed ^= (seed << 17n) & 0xffffffffffffffffn; return Number(seed % 1000003n); };
  return {
    /** `n` documents `{id: 'd<i>', text}` of 4–8 sentences each. */
    docs: (n) => Array.from({ length: n }, (_, i) => {
      const k = 4 + (next() % 5);
      return { id: `d${i}`, text: Array.from({ length: k }, () => pool[next() % pool.length]).join(' ') };
    }),
    /** `n` questions: the first eight words of spread-out sentences. */
    questions: (n) => Array.from({ length: n }, (_, i) => pool[(i * 7919) % pool.length].split(' ').slice(0, 8).join(' ')),
  };
}
