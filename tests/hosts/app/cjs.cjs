// CommonJS require, one line. Also checks that require and import give the same module instance.
const condense = require('condense-ctx');
const { compress, CondenseError, version } = condense;
const out = compress([{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }]);
let error = null;
try { compress('no'); } catch (e) { error = { isCondenseError: e instanceof CondenseError, code: e.code, path: e.path }; }
import('condense-ctx').then((esm) => {
  console.log(JSON.stringify({
    version: version(),
    messages: out.messages.length,
    error,
    sameInstance: esm.compress === compress && esm.CondenseError === CondenseError,
    exports: Object.keys(condense).sort(),
  }));
});
