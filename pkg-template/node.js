// Node entry: the wasm module is read next to this file and instantiated synchronously, so
// every function works as soon as the import resolves.
import { readFileSync } from 'node:fs';
import * as glue from './condense.js';
import { wrap } from './common.js';

glue.initSync({ module: readFileSync(new URL('./condense_bg.wasm', import.meta.url)) });

const api = wrap(glue);
export const {
  applyWatermark, applyWatermarkJson, validate, compress, compressJson, uncompress, version,
  Index, query, compressResults, embed, lexicalEmbedder,
} = api;
export { CondenseError, ERROR_CODES } from './common.js';
/** Resolved once the module is ready (already, in Node). */
export const ready = Promise.resolve();
