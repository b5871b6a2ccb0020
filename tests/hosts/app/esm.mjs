// Plain Node ESM, one import. Prints what it saw as JSON for hosts.test.mjs.
import { readFileSync } from 'node:fs';
import { compress, applyWatermark, prepareRequest, Index, CondenseError, version } from 'condense-ctx';

const body = readFileSync(process.argv[2], 'utf8');
const messages = JSON.parse(body).messages;
const c = compress(messages, { recencyWindow: 2 });
const w = applyWatermark(messages, null);
const p = prepareRequest(body);
const index = Index.create();
index.add([{ id: 'a', text: 'Flights to Rivermist cost 250 dollars.' }, { id: 'b', text: 'Cats sleep all day.' }]);
const hit = index.query('flight to Rivermist', { minScore: 0 }).results[0];
let error = null;
try { compress({}); } catch (e) { error = { isCondenseError: e instanceof CondenseError, code: e.code, path: e.path }; }
console.log(JSON.stringify({ version: version(), ratio: c.stats.ratio, watermark: w.state.watermark, saved: p.savings.saved, hit: hit.docId, error }));
