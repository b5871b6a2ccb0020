// CommonJS entry (`require('condense-ctx')`): the ES module entry loaded with require(esm), so
// there is one instance of the package whichever way it is loaded (no dual-package hazard:
// `instanceof CondenseError` and `Index` hold across `import` and `require`). Needs a Node with
// require(esm) on by default: 20.19+ or 22.12+ (the ES entry has no top-level await).
'use strict';
try {
  module.exports = require('./node.js');
} catch (e) {
  if (e && (e.code === 'ERR_REQUIRE_ESM' || e.code === 'ERR_REQUIRE_ASYNC_MODULE')) {
    const err = new Error(
      `condense-ctx: require() of this package needs Node 20.19+ or 22.12+ (require of ES modules); ` +
        `this is Node ${process.versions.node}. Use \`await import('condense-ctx')\` instead.`,
      { cause: e },
    );
    err.code = e.code;
    throw err;
  }
  throw e;
}
