// The document library behind `condense-ctx mcp`: a condense Index (in a worker thread, so the
// server answers while it embeds) over the markdown and text files of some folders, kept in step
// with them, saved to one index file and reopened from it.
//
// Invariant: the manifest's `docs` are exactly the documents of the index; every change to
// either runs as one job of a queue (scans, edits, queries: one at a time, in order), and the
// index file is written from both at the end of a job that changed them.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CondenseError, createWorker } from '../node.js';
import { FolderWatcher, isDocumentName, walk } from './files.js';

/** The first line of an index file; the second is the manifest (JSON), then the index's bytes. */
const MAGIC = 'condense-ctx mcp index 1\n';
/** condense's limit on one document's text. */
const MAX_BYTES = 8 * 1024 * 1024;
/** Files are embedded in batches of at most this many bytes or files (progress between them). */
const BATCH_BYTES = 64 * 1024;
const BATCH_FILES = 16;
/** Quiet time after a file event before the folders are scanned. */
const DEBOUNCE_MS = 150;

/** The package's MiniLM files (scripts/build-pkg copies them into models/). */
export const MODEL_FILES = ['model.onnx', 'tokenizer.json'].map((f) => fileURLToPath(new URL(`../models/${f}`, import.meta.url)));

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const posix = (p) => (sep === '/' ? p : p.split(sep).join('/'));
const under = (abs, dir) => abs === dir || abs.startsWith(dir.endsWith(sep) ? dir : dir + sep);
const inputError = (path, reason) => new CondenseError('invalid_input', path, `invalid_input at ${path}: ${reason}`, reason);

/**
 * The index, its manifest and the folders they follow.
 *
 * Events: `progress` `{ progress, total, message, start? }` while files are embedded (files
 * done, with the running batch's share as a fraction; `start` on a job's first event); `notice` `text` for what a user should know (the
 * lexical fallback, an index rebuilt, a file skipped, watching falling back to polling).
 */
export class Library extends EventEmitter {
  #roots;
  #globs;
  #indexFile;
  #want;
  #worker = null;
  #index = null;
  #manifest;
  #queue = Promise.resolve();
  #pendingSync = null;
  #dirty = false;
  #watcher = null;
  #debounce = null;
  #skipped = new Map();
  #closed = false;
  /** What the last scan did. */
  lastSync = null;
  /** Whether a scan is running. */
  indexing = false;
  /** Everything `notice` said, oldest first (at most 20). */
  notices = [];
  /** Resolves once open() has the index (see open). */
  ready = null;

  /**
   * @param {object} o
   * @param {string[]} o.roots absolute folders (--docs)
   * @param {string} o.indexFile absolute path of the index file
   * @param {string[]} [o.ignore] gitignore patterns applied under every folder
   * @param {'minilm'|'lexical'} [o.embedder]
   */
  constructor({ roots, indexFile, ignore = [], embedder = 'minilm' }) {
    super();
    this.#roots = roots;
    this.#globs = ignore;
    this.#indexFile = indexFile;
    this.#want = embedder;
    this.#manifest = this.#emptyManifest(null);
  }

  /** The folders followed: the --docs folders, then folders given to add_documents. */
  get roots() { return [...this.#roots, ...this.#manifest.added.filter((a) => a.folder).map((a) => a.path)]; }
  get indexFile() { return this.#indexFile; }
  /** `minilm` or `lexical`: what the index was built with. */
  get embedder() { return this.#worker?.embedder.kind ?? this.#want; }
  get documents() { return Object.keys(this.#manifest.docs).length; }
  get chunks() { return Object.values(this.#manifest.docs).reduce((n, d) => n + d.chunks, 0); }
  get watching() { return this.#watcher ? (this.#watcher.polling ? 'polling' : this.#watcher.size) : 0; }
  get skipped() { return [...this.#skipped].map(([file, s]) => ({ file, reason: s.reason })); }

  #notice(text) {
    this.notices.push(text);
    if (this.notices.length > 20) this.notices.shift();
    this.emit('notice', text);
  }

  #emptyManifest(identity) {
    return { embedder: identity, roots: this.#roots, labels: {}, added: [], excluded: [], docs: {} };
  }

  /**
   * Starts the worker (MiniLM, or the lexical embedder with a notice), reopens the index file,
   * then scans the folders and starts watching them, all as queued jobs: it returns at once (a
   * server can answer `initialize` while the model loads), and `ready` resolves once the index is
   * open (rejects if no worker can start).
   */
  open() {
    if (this.#want === 'minilm') {
      const missing = MODEL_FILES.filter((f) => !existsSync(f));
      if (missing.length > 0) {
        this.#notice(`MiniLM model files not found (${missing.join(', ')}): using the lexical embedder (BM25 and hashed n-grams, no semantic matching). Install a build of condense-ctx with models/ to get MiniLM.`);
        this.#want = 'lexical';
      }
    }
    this.ready = this.#enqueue(async () => {
      this.#worker = await this.#startWorker();
      await this.#restore();
    });
    const file = basename(this.#indexFile);
    this.#watcher = new FolderWatcher(() => this.#changed(), (t) => this.#notice(t), new Set([file, `${file}.tmp`]));
    this.sync().catch((e) => this.#notice(`scanning the folders failed: ${e.message}`));
    return this.ready;
  }

  async #startWorker() {
    if (this.#want === 'minilm') {
      try {
        return await createWorker({ embedder: 'minilm' });
      } catch (e) {
        this.#notice(`MiniLM could not be loaded (${e.code ?? e.name}: ${e.message}): using the lexical embedder.`);
      }
    }
    return createWorker({ embedder: 'lexical' });
  }

  async #restore() {
    const identity = this.#worker.embedder;
    let bytes = null;
    try {
      bytes = await readFile(this.#indexFile);
    } catch (e) {
      if (e.code !== 'ENOENT') this.#notice(`cannot read the index file ${this.#indexFile} (${e.code}): building a new index`);
    }
    let kept = {};
    if (bytes) {
      try {
        const { manifest, index } = parseIndexFile(bytes);
        // The user's choices survive a rebuild: added and removed paths, folder labels.
        kept = { labels: manifest.labels ?? {}, added: manifest.added, excluded: manifest.excluded };
        if (JSON.stringify(manifest.embedder) !== JSON.stringify(identity)) {
          this.#notice(`the index file ${this.#indexFile} was built with the ${manifest.embedder?.kind ?? 'unknown'} embedder, this server uses ${identity.kind}: re-indexing every file`);
        } else {
          this.#index = await this.#worker.loadIndex(index);
          this.#manifest = { ...this.#emptyManifest(identity), ...manifest, roots: this.#roots };
          return;
        }
      } catch (e) {
        this.#notice(`the index file ${this.#indexFile} is not usable (${e.code ?? ''} ${e.message}): building a new index`);
      }
    }
    this.#index = await this.#worker.createIndex();
    this.#manifest = { ...this.#emptyManifest(identity), ...kept };
    this.#dirty = true;
  }

  /** Runs `job` after every queued job; the queue goes on if it fails. */
  #enqueue(job) {
    const run = this.#queue.then(job);
    this.#queue = run.catch(() => {});
    return run;
  }

  #changed() {
    if (this.#closed) return;
    clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => this.sync().catch((e) => this.#notice(`scanning the folders failed: ${e.message}`)), DEBOUNCE_MS);
    this.#debounce.unref();
  }

  /** Scans the folders and brings the index up to date (one scan queued at a time); resolves to its summary. */
  sync() {
    if (this.#pendingSync) return this.#pendingSync;
    this.#pendingSync = this.#enqueue(() => {
      this.#pendingSync = null;
      return this.#scanAndUpdate();
    });
    return this.#pendingSync;
  }

  #label(dir) {
    const labels = this.#manifest.labels;
    if (labels[dir]) return labels[dir];
    const base = basename(dir) || 'root';
    const taken = new Set(Object.values(labels));
    let label = base;
    for (let k = 2; taken.has(label); k++) label = `${base}~${k}`;
    labels[dir] = label;
    this.#dirty = true;
    return label;
  }

  #excluded(abs) { return this.#manifest.excluded.some((e) => under(abs, e)); }

  /** The id a file's document has: its folder's label, then its path below that folder. */
  #idOf(abs) {
    for (const root of this.roots) if (under(abs, root) && abs !== root) return `${this.#label(root)}/${posix(relative(root, abs))}`;
    return `${this.#label(dirname(abs))}/${basename(abs)}`;
  }

  /** Every document file now: id → { abs, size, mtimeMs }, and the folders to watch. */
  async #scan() {
    const files = new Map();
    const seen = new Set();
    const dirs = new Set();
    const take = (f) => {
      if (seen.has(f.abs)) return;
      seen.add(f.abs);
      files.set(this.#idOf(f.abs), f);
    };
    for (const root of this.roots) {
      const found = await walk(root, this.#globs, (abs) => this.#excluded(abs));
      found.files.forEach(take);
      found.dirs.forEach((d) => dirs.add(d));
    }
    // Files added one by one: read even where an ignore rule would skip them.
    for (const { path: abs, folder } of this.#manifest.added) {
      if (folder) continue;
      const info = await stat(abs).catch(() => null);
      dirs.add(dirname(abs));
      if (info?.isFile()) take({ abs, size: info.size, mtimeMs: info.mtimeMs });
    }
    return { files, dirs };
  }

  async #scanAndUpdate() {
    if (this.#closed || !this.#index) return null;
    const t0 = Date.now();
    this.indexing = true;
    try {
      const { files, dirs } = await this.#scan();
      const docs = this.#manifest.docs;
      const gone = Object.keys(docs).filter((id) => docs[id].source === 'file' && !files.has(id));
      const changed = [];
      let unchanged = 0;
      const present = new Set([...files.values()].map((f) => f.abs));
      for (const abs of this.#skipped.keys()) if (!present.has(abs)) this.#skipped.delete(abs);
      for (const [id, f] of files) {
        const doc = docs[id];
        if (doc && doc.file === f.abs && doc.size === f.size && doc.mtimeMs === f.mtimeMs) { unchanged++; continue; }
        const skip = this.#skipped.get(f.abs);
        if (skip && skip.size === f.size && skip.mtimeMs === f.mtimeMs) continue;
        let bytes;
        try {
          bytes = await readFile(f.abs);
        } catch (e) {
          this.#skip(f, `cannot read it (${e.code ?? e.message})`);
          if (doc) gone.push(id);
          continue;
        }
        const hash = sha256(bytes);
        if (doc && doc.file === f.abs && doc.sha256 === hash) {
          // Touched, not changed: no embedding.
          Object.assign(doc, { size: f.size, mtimeMs: f.mtimeMs });
          this.#dirty = true;
          unchanged++;
          continue;
        }
        if (bytes.length > MAX_BYTES) {
          this.#skip(f, `too_large: ${bytes.length} bytes (at most ${MAX_BYTES})`);
          if (doc) gone.push(id);
          continue;
        }
        this.#skipped.delete(f.abs);
        changed.push({ id, ...f, sha256: hash, text: bytes.toString('utf8') });
      }
      const replaced = changed.filter((c) => docs[c.id]).map((c) => c.id);
      if (gone.length + replaced.length > 0) {
        await this.#index.remove([...gone, ...replaced]);
        for (const id of [...gone, ...replaced]) delete docs[id];
        this.#dirty = true;
      }
      const embedded = await this.#addFiles(changed);
      if (this.#dirty) await this.#save();
      this.#watcher?.watch(dirs);
      this.lastSync = {
        files: files.size,
        embedded,
        removed: gone.length,
        unchanged,
        skipped: this.#skipped.size,
        ms: Date.now() - t0,
      };
      return this.lastSync;
    } finally {
      this.indexing = false;
    }
  }

  #skip(f, reason) {
    const known = this.#skipped.get(f.abs);
    this.#skipped.set(f.abs, { size: f.size, mtimeMs: f.mtimeMs, reason });
    if (known?.reason !== reason) this.#notice(`skipped ${f.abs}: ${reason}`);
  }

  /** Embeds changed files in batches, with progress; a batch that fails is retried file by file. Returns how many were added. */
  async #addFiles(changed) {
    const total = changed.length;
    if (total === 0) return 0;
    let done = 0;
    let added = 0;
    this.emit('progress', { start: true, progress: 0, total, message: `indexing ${total} file${total === 1 ? '' : 's'}` });
    for (let start = 0; start < total;) {
      // Closing: what is done is saved; the rest is indexed on the next start.
      if (this.#closed) break;
      let end = start;
      let bytes = 0;
      while (end < total && end - start < BATCH_FILES && (end === start || bytes + changed[end].text.length <= BATCH_BYTES)) bytes += changed[end++].text.length;
      const batch = changed.slice(start, end);
      const onProgress = (p) => {
        if (p.phase === 'embed' && p.total > 0) {
          this.emit('progress', { progress: done + (batch.length * p.done) / p.total, total, message: `embedding ${batch[0].id}${batch.length > 1 ? ` and ${batch.length - 1} more` : ''}` });
        }
      };
      try {
        await this.#index.add(batch.map(toDocument), { onProgress });
        batch.forEach((c) => this.#record(c));
        added += batch.length;
      } catch (e) {
        if (!(e instanceof CondenseError)) throw e;
        for (const c of batch) {
          try {
            await this.#index.add([toDocument(c)]);
            this.#record(c);
            added++;
          } catch (err) {
            if (!(err instanceof CondenseError)) throw err;
            this.#skip(c, `${err.code}: ${err.reason}`);
          }
        }
      }
      done = end;
      start = end;
      this.emit('progress', { progress: done, total, message: `indexed ${done}/${total} files` });
    }
    // Chunk counts, for list_documents.
    for (const c of changed) {
      const doc = this.#manifest.docs[c.id];
      if (doc) doc.chunks = (await this.#index.get(c.id))?.chunks.length ?? 0;
    }
    return added;
  }

  #record(c) {
    this.#manifest.docs[c.id] = { source: 'file', file: c.abs, size: c.size, mtimeMs: c.mtimeMs, sha256: c.sha256, chunks: 0 };
    this.#dirty = true;
  }

  async #save() {
    const manifest = JSON.stringify(this.#manifest);
    const index = await this.#index.serialize();
    const dir = dirname(this.#indexFile);
    try {
      await mkdir(dir, { recursive: true });
      // The default folder (.condense/ under the docs) ignores itself for git.
      if (basename(dir) === '.condense' && !existsSync(join(dir, '.gitignore'))) await writeFile(join(dir, '.gitignore'), '*\n');
      const tmp = `${this.#indexFile}.tmp`;
      await writeFile(tmp, Buffer.concat([Buffer.from(MAGIC + manifest + '\n'), index]));
      await rename(tmp, this.#indexFile);
      this.#dirty = false;
    } catch (e) {
      this.#notice(`cannot write the index file ${this.#indexFile} (${e.code ?? e.message}): the index is kept in memory only`);
    }
  }

  // ------------------------------------------------------------------ tool operations

  /** Index.query after every queued scan. */
  query(question, options) {
    return this.#enqueue(() => this.#index.query(question, options));
  }

  /** A document's stored record and chunks (`undefined` if unknown), after every queued scan. */
  document(id) {
    return this.#enqueue(async () => {
      const info = await this.#index.get(id);
      return info && { ...info, source: this.#manifest.docs[id]?.source ?? 'text' };
    });
  }

  /** The file a document was read from (`null` for a text). */
  fileOf(id) {
    return this.#manifest.docs[id]?.file ?? null;
  }

  /** The documents, sorted by id: `{ id, source, file, bytes, chunks }`. */
  list() {
    return Object.entries(this.#manifest.docs)
      .map(([id, d]) => ({ id, source: d.source, file: d.file ?? null, bytes: d.size ?? d.bytes ?? 0, chunks: d.chunks }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Adds files or folders (kept in step like the --docs folders, and remembered in the index
   * file) and texts (`{ id?, title?, text }`; an existing text of that id is replaced). Returns
   * the ids of the documents these gave, per path and per text.
   */
  async add({ paths = [], documents = [] }) {
    const targets = [];
    for (const [i, p] of paths.entries()) {
      const abs = resolve(p);
      const info = await stat(abs).catch(() => null);
      if (!info) throw inputError(`paths[${i}]`, `no such file or folder: ${abs}`);
      if (info.isFile() && !isDocumentName(abs)) throw inputError(`paths[${i}]`, `not a markdown or text file (${abs}): only .md, .markdown, .mdx and .txt files are documents`);
      if (!info.isFile() && !info.isDirectory()) throw inputError(`paths[${i}]`, `neither a file nor a folder: ${abs}`);
      targets.push({ abs, dir: info.isDirectory() });
    }
    const texts = documents.map((d, i) => ({ ...d, id: d.id ?? `text/${sha256(d.text).slice(0, 12)}`, at: i }));
    const byId = new Map();
    for (const t of texts) {
      if (byId.has(t.id)) throw inputError(`documents[${t.at}].id`, `the id ${JSON.stringify(t.id)} is given twice (documents[${byId.get(t.id)}])`);
      byId.set(t.id, t.at);
    }
    if (targets.length > 0) {
      await this.#enqueue(() => {
        const m = this.#manifest;
        for (const { abs, dir } of targets) {
          // Adding a path takes back what was removed under it.
          m.excluded = m.excluded.filter((e) => !under(e, abs));
          if (!m.added.some((a) => a.path === abs)) m.added.push({ path: abs, folder: dir });
        }
        this.#dirty = true;
      });
      await this.sync();
    }
    if (texts.length > 0) {
      await this.#enqueue(async () => {
        const docs = this.#manifest.docs;
        for (const t of texts) {
          if (docs[t.id]?.source === 'file') throw inputError(`documents[${t.at}].id`, `${JSON.stringify(t.id)} is the id of the file ${docs[t.id].file}; give another id`);
        }
        const replace = texts.filter((t) => docs[t.id]).map((t) => t.id);
        if (replace.length > 0) await this.#index.remove(replace);
        for (const id of replace) delete docs[id];
        this.#dirty = true;
        const total = texts.length;
        this.emit('progress', { start: true, progress: 0, total, message: `indexing ${total} text${total === 1 ? '' : 's'}` });
        try {
          await this.#index.add(texts.map((t) => ({ id: t.id, ...(t.title !== undefined ? { title: t.title } : {}), text: t.text })), {
            onProgress: (p) => { if (p.phase === 'embed' && p.total > 0) this.emit('progress', { progress: (total * p.done) / p.total, total, message: 'embedding texts' }); },
          });
        } catch (e) {
          await this.#save();
          throw renamePath(e, (p) => p.replace(/^documents\[(\d+)\]/, (_, k) => `documents[${texts[Number(k)].at}]`));
        }
        for (const t of texts) {
          docs[t.id] = { source: 'text', bytes: Buffer.byteLength(t.text), sha256: sha256(t.text), chunks: (await this.#index.get(t.id))?.chunks.length ?? 0 };
        }
        this.emit('progress', { progress: total, total, message: `indexed ${total} text${total === 1 ? '' : 's'}` });
        await this.#save();
      });
    }
    const docs = this.#manifest.docs;
    return {
      paths: targets.map(({ abs }) => ({ path: abs, ids: Object.keys(docs).filter((id) => docs[id].file && under(docs[id].file, abs)).sort() })),
      texts: texts.map((t) => t.id),
    };
  }

  /**
   * Removes documents by id, and files or folders by path (added ones are forgotten; ones under a
   * --docs folder stay out of the index until add_documents adds them again). Returns what was
   * removed and what was not found.
   */
  async remove({ ids = [], paths = [] }) {
    const result = await this.#enqueue(async () => {
      const m = this.#manifest;
      const removed = [];
      const missing = [];
      for (const id of ids) {
        const doc = m.docs[id];
        if (!doc) { missing.push(id); continue; }
        if (doc.source === 'file') {
          m.added = m.added.filter((a) => a.path !== doc.file);
          if (this.roots.some((r) => under(doc.file, r))) m.excluded.push(doc.file);
        }
        removed.push(id);
      }
      for (const p of paths) {
        const abs = resolve(p);
        const hit = Object.keys(m.docs).filter((id) => m.docs[id].file && under(m.docs[id].file, abs));
        const known = m.added.some((a) => under(a.path, abs)) || this.roots.some((r) => under(abs, r));
        if (hit.length === 0 && !known) { missing.push(p); continue; }
        m.added = m.added.filter((a) => !under(a.path, abs));
        if (this.roots.some((r) => under(abs, r))) m.excluded.push(abs);
        removed.push(...hit);
      }
      const unique = [...new Set(removed)];
      if (unique.length > 0) await this.#index.remove(unique);
      for (const id of unique) delete m.docs[id];
      this.#dirty = true;
      await this.#save();
      return { removed: unique.sort(), missing };
    });
    await this.sync();
    return result;
  }

  /** Stops watching, lets queued jobs finish, saves and stops the worker. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#debounce);
    this.#watcher?.close();
    await this.#queue;
    if (this.#dirty && this.#index) await this.#save();
    await this.#worker?.terminate();
  }
}

/** A scanned file as an Index document. */
const toDocument = (c) => ({ id: c.id, path: c.abs, text: c.text });

/** A CondenseError with its path rewritten (other errors as they are). */
function renamePath(e, f) {
  if (!(e instanceof CondenseError)) return e;
  const path = f(e.path);
  return new CondenseError(e.code, path, `${e.code} at ${path}: ${e.reason}`, e.reason);
}

/** Reads an index file: `{ manifest, index }` (the index's bytes). @throws Error when it is not one. */
export function parseIndexFile(bytes) {
  const head = Buffer.from(MAGIC);
  if (bytes.length < head.length || !bytes.subarray(0, head.length).equals(head)) throw new Error('not a condense-ctx mcp index file');
  const end = bytes.indexOf(0x0a, head.length);
  if (end < 0) throw new Error('the manifest line is cut off');
  const manifest = JSON.parse(bytes.subarray(head.length, end).toString('utf8'));
  if (!manifest || typeof manifest.docs !== 'object' || !Array.isArray(manifest.added) || !Array.isArray(manifest.excluded)) throw new Error('the manifest lacks docs, added or excluded');
  return { manifest, index: new Uint8Array(bytes.subarray(end + 1)) };
}
