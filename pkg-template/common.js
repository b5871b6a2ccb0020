// Shared by the Node and browser entries: the error class and the wrapped exports.

/** Every error code, as in src/error.rs (`ErrorKind::ALL`). */
export const ERROR_CODES = Object.freeze([
  'invalid_json',
  'invalid_input',
  'invalid_message',
  'invalid_options',
  'invalid_state',
  'mixed_format',
  'too_large',
  'internal',
]);

/** The error every function throws for bad input: a stable `code` and the `path` of the field. */
export class CondenseError extends Error {
  constructor(code, path, message, reason) {
    super(message);
    this.name = 'CondenseError';
    this.code = code;
    this.path = path;
    this.reason = reason ?? message;
  }
}

function convert(e) {
  if (e instanceof CondenseError) return e;
  if (e && e.name === 'CondenseError' && typeof e.code === 'string') {
    return new CondenseError(e.code, e.path ?? '', e.message, e.reason);
  }
  return e;
}

function guard(f) {
  return function condense(...args) {
    try {
      return f(...args);
    } catch (e) {
      throw convert(e);
    }
  };
}

/** The public functions over an initialised wasm-bindgen module. */
export function wrap(glue) {
  return {
    applyWatermark: guard((messages, state, options) => glue.applyWatermark(messages, state ?? null, options ?? null)),
    applyWatermarkJson: guard((json, state, options) => {
      if (typeof json !== 'string') throw new CondenseError('invalid_input', 'json', 'expected JSON text', 'expected JSON text');
      return glue.applyWatermarkJson(json, state ?? null, options ?? null);
    }),
    validate: guard((messages, options) => glue.validate(messages, options ?? null)),
    compress: guard((messages, options) => glue.compress(messages, options ?? null)),
    compressJson: guard((json, options) => {
      if (typeof json !== 'string') throw new CondenseError('invalid_input', 'json', 'expected JSON text', 'expected JSON text');
      return glue.compressJson(json, options ?? null);
    }),
    uncompress: guard((messages, verbatim) => glue.uncompress(messages, verbatim ?? null)),
    version: () => glue.version(),
  };
}
