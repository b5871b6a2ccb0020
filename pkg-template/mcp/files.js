// The files of `condense-ctx mcp`: which markdown and text files under a folder are documents
// (its .gitignore files, the repository's above it, --ignore globs), and a watcher that says
// when any of them may have changed.
import { watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, relative, sep } from 'node:path';
import ignore from 'ignore';

/** File name endings that are documents (markdown and plain text). */
export const EXTENSIONS = ['.md', '.markdown', '.mdx', '.txt'];
const EXTENSION_SET = new Set(EXTENSIONS);

/** Never documents, whatever the ignore files say: version control, packages, the index. */
export const ALWAYS_IGNORED = ['.git/', 'node_modules/', '.condense/'];

/** Whether a file name is a document's (by its ending). */
export const isDocumentName = (name) => EXTENSION_SET.has(extname(name).toLowerCase());

const posix = (p) => (sep === '/' ? p : p.split(sep).join('/'));

async function readRules(file) {
  try {
    return ignore().add(await readFile(file, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * The repository's ignore rules above `root`: the .gitignore of each folder from the repository's
 * top (the nearest folder up with a `.git`) down to `root`'s parent, and `.git/info/exclude`.
 * Git applies them to the files under `root` too. Empty outside a repository.
 */
async function ancestorRules(root) {
  const above = []; // root's ancestors up to the repository's top, nearest first
  let top = null;
  for (let d = root; ;) {
    if (await stat(join(d, '.git')).then(() => true, () => false)) {
      top = d;
      break;
    }
    const parent = dirname(d);
    if (parent === d) break;
    d = parent;
    above.push(d);
  }
  if (top === null) return [];
  const levels = [];
  const exclude = await readRules(join(top, '.git', 'info', 'exclude'));
  if (exclude) levels.push({ base: top, rules: exclude });
  for (const dir of above.reverse()) {
    const rules = await readRules(join(dir, '.gitignore'));
    if (rules) levels.push({ base: dir, rules });
  }
  return levels;
}

/** Git's answer for `abs` under the rule levels, outermost first: the deepest rule that matches wins. */
function ignoredBy(levels, abs, isDir) {
  let ignored = false;
  for (const { base, rules } of levels) {
    const rel = posix(relative(base, abs));
    if (rel === '' || rel.startsWith('..')) continue;
    const t = rules.test(isDir ? `${rel}/` : rel);
    if (t.ignored) ignored = true;
    else if (t.unignored) ignored = false;
  }
  return ignored;
}

/**
 * The documents under `root`, in path order: `{ abs, size, mtimeMs }` for every markdown or text
 * file that no ignore rule excludes, and every folder visited (the ones to watch). `globs` are
 * gitignore patterns relative to `root` (`--ignore`). Folders reached through symbolic links are
 * not followed (no cycles); linked files are read. `skip(abs)` excludes more (removed documents).
 */
export async function walk(root, globs, skip = () => false) {
  let levels = await ancestorRules(root);
  // A folder the repository ignores can still be given on purpose: then its rules above do not apply.
  if (ignoredBy(levels, root, true)) levels = [];
  levels = [...levels, { base: root, rules: ignore().add(ALWAYS_IGNORED).add(globs) }];
  const files = [];
  const dirs = [];
  async function visit(dir, levels) {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    dirs.push(dir);
    const own = await readRules(join(dir, '.gitignore'));
    if (own) levels = [...levels, { base: dir, rules: own }];
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const abs = join(dir, entry.name);
      let isDir = entry.isDirectory();
      let info = null;
      if (entry.isSymbolicLink()) {
        info = await stat(abs).catch(() => null);
        if (!info?.isFile()) continue;
        isDir = false;
      } else if (!isDir && !entry.isFile()) {
        continue;
      }
      if (!isDir && !isDocumentName(entry.name)) continue;
      if (ignoredBy(levels, abs, isDir) || skip(abs)) continue;
      if (isDir) {
        await visit(abs, levels);
      } else {
        info ??= await stat(abs).catch(() => null);
        if (info) files.push({ abs, size: info.size, mtimeMs: info.mtimeMs });
      }
    }
  }
  await visit(root, levels);
  return { files, dirs };
}

/**
 * Watches folders (not recursively: one watch per folder, so ignored trees such as
 * node_modules cost nothing) and calls `onChange()` after any entry of one changed. Node's own
 * recursive watch on Linux watches every file under the folder, ignored or not. Where the
 * system refuses more watches, it falls back to calling `onChange()` every `pollMs`.
 */
export class FolderWatcher {
  #watchers = new Map();
  #onChange;
  #notice;
  #ignoreNames;
  #poll = null;
  #pollMs;

  /**
   * @param {() => void} onChange called on every event (the caller debounces)
   * @param {(text: string) => void} notice says when watching falls back to polling
   * @param {Set<string>} ignoreNames file names whose events are not changes (the index file's)
   */
  constructor(onChange, notice, ignoreNames = new Set(), pollMs = 2000) {
    this.#onChange = onChange;
    this.#notice = notice;
    this.#ignoreNames = ignoreNames;
    this.#pollMs = pollMs;
  }

  /** Watches exactly `dirs` (absolute paths): new ones are added, gone ones closed. */
  watch(dirs) {
    if (this.#poll) return;
    const want = new Set(dirs);
    for (const [dir, watcher] of this.#watchers) {
      if (!want.has(dir)) {
        watcher.close();
        this.#watchers.delete(dir);
      }
    }
    for (const dir of want) {
      if (this.#watchers.has(dir)) continue;
      try {
        const watcher = watch(dir, { persistent: false }, (_event, name) => {
          if (name && this.#ignoreNames.has(String(name))) return;
          this.#onChange();
        });
        // A watched folder that disappears errors on some systems: the next scan drops it.
        watcher.on('error', () => { watcher.close(); this.#watchers.delete(dir); this.#onChange(); });
        this.#watchers.set(dir, watcher);
      } catch (e) {
        if (e.code === 'ENOENT') continue;
        this.#fallBack(e);
        return;
      }
    }
  }

  /** How many folders are watched (0 when polling). */
  get size() {
    return this.#watchers.size;
  }

  /** Whether changes are found by polling instead of watches. */
  get polling() {
    return this.#poll !== null;
  }

  #fallBack(error) {
    this.close();
    this.#notice(`cannot watch more folders (${error.code ?? error.message}): checking the files for changes every ${this.#pollMs / 1000} s instead`);
    this.#poll = setInterval(() => this.#onChange(), this.#pollMs);
    this.#poll.unref();
  }

  close() {
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
    if (this.#poll) clearInterval(this.#poll);
  }
}
