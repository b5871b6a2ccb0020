// A middleware for a Node agent loop: before each model call it applies applyWatermark (prune
// tool history before the newest checkpoint) and compress (summarise old turns) to the request
// body, logs what it saved, and keeps the watermark state between calls.
//
//   node examples/agent-middleware.mjs [request.json]
//
// Run it where condense-ctx is installed (`npm i condense-ctx`); tests/hosts runs it against the
// packed package. No network: the "model" below replays a recorded request body turn by turn
// (default: tests/hosts/fixtures/anthropic-request.json; an OpenAI Chat Completions body works too).
import { readFileSync } from 'node:fs';
import { prepareRequest, validate } from 'condense-ctx';

/**
 * Wraps `callModel(body: string) => Promise<response>` so every request is watermarked and
 * compressed first. `log` receives one record per call.
 */
export function condenseMiddleware(callModel, { compress = { recencyWindow: 4 }, watermark = {}, log = console.log } = {}) {
  let state = { watermark: null };
  return async function condensedCall(body) {
    const out = prepareRequest(body, { state, watermark, compress });
    state = out.state;
    log({
      before: out.savings.charsBefore,
      after: out.savings.charsAfter,
      percent: out.savings.percent,
      ms: out.savings.ms,
      watermark: state.watermark,
      toolPairsRemoved: out.watermark?.stats.toolResultsRemoved ?? 0,
      summarized: out.compress?.stats.summarized ?? 0,
    });
    return callModel(out.body);
  };
}

// ---------------------------------------------------------------------------- a replayed session

const path = process.argv[2] ?? new URL('../tests/hosts/fixtures/anthropic-request.json', import.meta.url);
const recorded = JSON.parse(readFileSync(path, 'utf8'));
const num = (n) => n.toLocaleString('en-US');

// The model: checks what it is sent, and answers with the recorded assistant turn.
let allValid = true;
async function fakeModel(body) {
  const request = JSON.parse(body);
  allValid &&= validate(request.messages).valid;
  return recorded.messages[request.messages.length] ?? { role: 'assistant', content: 'Done.' };
}

let calls = 0;
let totalBefore = 0;
let totalAfter = 0;
const call = condenseMiddleware(fakeModel, {
  log: (r) => {
    calls++;
    totalBefore += r.before;
    totalAfter += r.after;
    console.log(`call ${calls}: ${num(r.before)} → ${num(r.after)} characters (−${r.percent}%) in ${r.ms} ms; watermark ${r.watermark ?? 'none'}, ${r.toolPairsRemoved} tool results pruned, ${r.summarized} texts summarised`);
  },
});

// The agent loop: each turn sends the history up to the next assistant message.
const { messages, ...rest } = recorded;
for (let i = 1; i <= messages.length; i++) {
  if (messages[i]?.role !== 'assistant' && i !== messages.length) continue;
  if (messages[i - 1].role === 'assistant') continue;
  await call(JSON.stringify({ ...rest, messages: messages.slice(0, i) }));
}
console.log(`total: ${num(totalBefore)} → ${num(totalAfter)} characters over ${calls} calls (−${(100 * (1 - totalAfter / totalBefore)).toFixed(1)}%)`);
console.log(`every request valid: ${allValid ? 'yes' : 'NO'}`);
