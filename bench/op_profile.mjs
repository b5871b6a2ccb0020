// Time per operator of the wasm build in Node, for one case of bench/embed-compare's inputs:
// the engine module's Model.profileOps (every operator of the model timed with
// performance.now around its evaluation), after one untimed pass. One JSON line per operator,
// as `OPS=1 cargo bench --bench embed` prints for native; bench/op-profile tables both.
//
//   node bench/op_profile.mjs bench/out/embed_inputs.json [TOKENS/BATCH]   (default 256/1)
import { readFileSync } from 'node:fs';

const [inputsFile, only = '256/1'] = process.argv.slice(2);
if (!inputsFile) {
  console.error('usage: node bench/op_profile.mjs INPUTS.json [TOKENS/BATCH]');
  process.exit(2);
}
const [tokens, batch] = only.split('/').map(Number);
const { texts } = JSON.parse(readFileSync(inputsFile, 'utf8'));
const pkg = new URL('../pkg/', import.meta.url);
const engine = await import(new URL('condense_embed.js', pkg).href);
engine.initSync({ module: readFileSync(new URL('condense_embed_bg.wasm', pkg)) });
const model = engine.Model.fromBytes(
  readFileSync(new URL('models/model.onnx', pkg)),
  readFileSync(new URL('models/tokenizer.json', pkg)),
  JSON.stringify({ maxTokens: tokens, batchSize: batch }),
  undefined,
);
// The untimed pass: V8's optimising tier and first-use work are not what is profiled.
model.embedFlat(texts);
for (const row of JSON.parse(model.profileOps(texts))) {
  console.log(JSON.stringify({
    case: `ops/${tokens}tok/batch${batch}/tract-wasm-node`,
    op: row.op,
    ms_per_text: row.msPerText,
    evals_per_text: row.evalsPerText,
  }));
}
model.free();
