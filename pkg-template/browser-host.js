// How browsers, Web Workers and extensions get the model files and the model engine: fetched
// (relative to this module by default); there is no file system. No top-level await, so the
// Web Worker (worker.js) can use it in any bundler worker format.
import initEngine, * as engineGlue from './condense_embed.js';
import { CondenseError, modelError, readResponse } from './common.js';

/** Model files are fetched (relative to this module by default); there is no file system. */
export const host = {
  readPath(_where, _file, path) {
    throw new CondenseError('invalid_options', path, `invalid_options at ${path}: paths are for Node; in a browser pass ${path.replace('Path', 'Url')} or bytes`, 'paths are for Node');
  },
  async fetchUrl(url, file, path, onProgress) {
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw modelError(path, `cannot fetch ${url}: ${e.message}`);
    }
    return readResponse(response, file, path, onProgress);
  },
  // Literal URLs, one per file: bundlers (Vite, webpack) rewrite `new URL('./literal',
  // import.meta.url)` to the emitted asset, but turn a template into a glob of the folder.
  defaultSource: (file) => ({
    url: file === 'model'
      ? new URL('./models/model.onnx', import.meta.url)
      : new URL('./models/tokenizer.json', import.meta.url),
  }),
  /** The model engine's wasm module (condense_embed_bg.wasm), fetched on first use with progress
   * (`file: 'engine'`) and instantiated once. */
  engine(onProgress) {
    engineLoading ??= (async () => {
      const url = new URL('./condense_embed_bg.wasm', import.meta.url);
      let response;
      try {
        response = await fetch(url);
      } catch (e) {
        throw modelError('engine', `cannot fetch ${url}: ${e.message}`);
      }
      const bytes = await readResponse(response, 'engine', 'engine', onProgress);
      await initEngine({ module_or_path: bytes });
      return engineGlue;
    })();
    return engineLoading.catch((e) => { engineLoading = null; throw e; });
  },
};
let engineLoading = null;
