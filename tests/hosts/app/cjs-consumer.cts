// A CommonJS TypeScript consumer: `require` of the package is typed too (module nodenext).
import condense = require('condense-ctx');

const out: condense.CompressResult = condense.compress([{ role: 'user', content: 'hello' }], { recencyWindow: 1 });
const error: condense.ErrorCode = 'invalid_input';
export const summary = `${out.stats.ratio} ${error}`;
