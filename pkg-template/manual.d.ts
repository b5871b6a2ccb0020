// `condense-ctx/manual`: the package without top-level await. Nothing runs at import; `await
// init()` loads the wasm module and resolves to the functions of the main entry.
import type * as condense from './index.js';
import type { InitOptions } from './index.js';

export type { InitOptions };
export { CondenseError, ERROR_CODES } from './index.js';

/** The package's functions once the wasm module is loaded: the main entry's exports without `createWorker`, `embedParallel` and `ready`. */
export type Condense = Omit<typeof condense, 'createWorker' | 'embedParallel' | 'ready'>;

/**
 * Loads `condense_bg.wasm` once (later calls resolve to the same object; a failed load may be
 * retried) and resolves to the package's functions.
 * @throws {CondenseError} `invalid_options` at `options.wasm` (an ill-typed source, or the module
 *   could not be fetched or compiled: a missing file, a CSP without `'wasm-unsafe-eval'`),
 *   `invalid_options` at `options.<key>` (an unknown option).
 */
export function init(options?: InitOptions | null): Promise<Condense>;
