// The embedder of the extension's index: one place to change. With MiniLM (once the package
// exports it) this is `return await loadEmbedder();` (import loadEmbedder from the package);
// a saved index built by another embedder is then rebuilt from the stored pages by popup.js.
import { lexicalEmbedder } from './condense/browser.js';

export async function getEmbedder() {
  return lexicalEmbedder();
}
