// Synthetic chunk-sized documents for the retrieval benchmarks (bench/query.mjs,
// bench/browser.mjs, bench/pg_scale.mjs): sentences of the dev IR corpora ($IR_DATA, default
// ../shared/data/ir; the committed fixture when they are absent) recombined by a fixed xorshift
// stream, so every run and every bench sees the same text.
import { existsSync, readFileSync } from 'node:fs';

const here = (p) => new URL(p, import.meta.url).pathname;

/**
 * The sentence pool of the dev corpora, in file order, by bench/query.rs's `sentences()` rule:
 * every piece of a text split at ". " longer than 30 bytes, its trailing periods replaced by one.
 * (bench/query_minilm.mjs relies on the order: row i of bench/out/minilm_real.f32 is sentence i.)
 */
export function sentencePool() {
  const data = process.env.IR_DATA ?? here('../../shared/data/ir');
  const sources = [`${data}/cisi/corpus.jsonl`, `${data}/med/corpus.jsonl`].filter(existsSync);
  if (sources.length === 0) sources.push(here('../tests/fixtures/retrieval/docs.jsonl'));
  const pool = [];
  for (const f of sources) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      for (const s of (JSON.parse(line).text ?? '').split('. ')) {
        if (Buffer.byteLength(s) > 30) pool.push(`${s.replace(/\.+$/, '')}.`);
      }
    }
  }
  return pool;
}

/** bench/query.rs's generator: xorshift64 from `seed`. */
export class Rng {
  constructor(seed) { this.s = BigInt(seed); }
  /** The next 64-bit state, as a BigInt. */
  next() {
    const m = 0xffffffffffffffffn;
    this.s ^= (this.s << 13n) & m;
    this.s ^= this.s >> 7n;
    this.s ^= (this.s << 17n) & m;
    return this.s;
  }
  /** bench/query.rs's `below(n)`: the next state modulo `n` (at least 1). */
  below(n) { return Number(this.next() % BigInt(Math.max(n, 1))); }
}

/** A corpus generator; `docs(n)` and `questions(n)` draw from one deterministic stream. */
export function syntheticCorpus() {
  const pool = sentencePool();
  const rng = new Rng(42);
  const next = () => Number(rng.next() % 1000003n);
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
