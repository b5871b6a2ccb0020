// The tools of `condense-ctx mcp`: their JSON Schemas (what an LLM reads), the checking of
// arguments against them (errors as condense's: a code and the argument's path), and what each
// returns: a text for the model (compact, verbose or json) and the same answer as
// structuredContent.
import AjvModule from 'ajv';
import { CondenseError } from '../node.js';

const Ajv = AjvModule.default ?? AjvModule;

const FORMATS = ['compact', 'verbose', 'json'];

const query = {
  type: 'string',
  minLength: 1,
  description: 'What to look for, in natural language or as keywords ("how is the index persisted", "max_chunks_per_doc"). Identifiers, commands and version numbers make it a factual query.',
};
const topN = {
  type: 'integer', minimum: 1, maximum: 100, default: 5,
  description: 'Maximum results to return (default: 5).',
};
const format = (dflt) => ({
  type: 'string', enum: FORMATS, default: dflt,
  description: `Layout of the text answer (default: ${dflt}). compact: "[1] chunk_id § Section > Subsection (score)" then the content; verbose: every field on its own line; json: the structured answer as JSON text.`,
});

/** A schema property: its JSON type(s) and what it means. */
const prop = (type, description) => ({ type, description });
/** An object schema whose properties are all required (output shapes always hold every key). */
const object = (properties, extra = {}) => ({ type: 'object', ...extra, properties, required: Object.keys(properties) });

const resultSchema = object({
  chunk_id: prop('string', 'Stable id of the chunk ("{doc_id}#{ordinal}"), for expand_chunk.'),
  doc_id: prop('string', 'The document: for files, the followed folder\'s name and the path below it.'),
  score: prop('number', 'Calibrated relevance in [0, 1]; never increases down the list.'),
  header_path: prop('string', 'Markdown headers above the chunk, outermost first, joined with " > " (empty for plain text).'),
  file_path: prop(['string', 'null'], 'Absolute path of the source file (null for added texts).'),
  content: prop('string', 'The chunk\'s text (ends in "..." when truncated).'),
  truncated: prop('boolean', 'Whether content was cut (a factual query\'s result); expand_chunk gives the full text.'),
});

const statsSchema = object({
  original_count: prop('integer', 'Ranked candidates before compression.'),
  after_threshold: prop('integer', 'Left after the min_score filter.'),
  after_dedup: prop('integer', 'Left after removing near-duplicates and semantic duplicates.'),
  after_doc_limit: prop('integer', 'Left after max_chunks_per_doc.'),
  returned: prop('integer', 'Returned (after top_n).'),
  clusters_merged: prop('integer', 'Duplicates merged into a better-ranked result.'),
  truncated: prop('integer', 'Results whose content was cut.'),
  tokens_before: prop('integer', 'Estimated tokens of the returned results\' full contents.'),
  tokens_after: prop('integer', 'Estimated tokens of the contents returned.'),
}, { description: 'What each compression stage kept (seed names).' });

const queryOutput = (withStats) => object({
  results: { type: 'array', items: resultSchema },
  query_kind: { ...prop('string', 'How the query was classified (factual results are truncated by query_documents_compressed).'), enum: ['factual', 'conceptual'] },
  ...(withStats ? { compression_stats: statsSchema } : {}),
});

const { chunk_id: chunkId, doc_id: docId, header_path: headerPath, file_path: filePath } = resultSchema.properties;
const fullText = prop('string', 'The chunk\'s full text.');
const chunkSchema = object({ chunk_id: chunkId, header_path: headerPath, content: fullText });
const sizes = { documents: prop('integer', 'Documents in the index now.'), chunks: prop('integer', 'Chunks in the index now.') };
const ids = (description) => ({ type: 'array', items: { type: 'string' }, description });

const pathList = (what) => ({
  type: 'array',
  items: { type: 'string', minLength: 1 },
  description: what,
});

/** The tool definitions (tools/list), given the server's default text format. */
export function toolDefinitions(defaultFormat) {
  return [
    {
      name: 'query_documents',
      title: 'Search documents',
      description: 'Search the indexed documents (markdown and text files; see list_documents) and return the top_n most relevant chunks, best first, each with its full text, source file, section and a calibrated score in [0, 1] (BM25 and embeddings fused). Nothing is filtered, merged or cut: use this to see every passage as stored. query_documents_compressed answers the same query with fewer tokens.',
      inputSchema: {
        type: 'object',
        properties: {
          query,
          top_n: topN,
          max_chunks_per_doc: { type: 'integer', minimum: 0, maximum: 100, default: 0, description: 'At most this many results from one document (default: 0 = no limit).' },
          format: format(defaultFormat),
        },
        required: ['query'],
        additionalProperties: false,
      },
      outputSchema: queryOutput(false),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    {
      name: 'query_documents_compressed',
      title: 'Search documents (compressed)',
      description: 'Search documents with context compression: like query_documents, then results scoring below min_score are dropped, near-duplicates and semantic duplicates (cosine >= similarity_threshold) are merged into the best one, at most max_chunks_per_doc are kept per document, and results of factual queries (identifiers, commands, versions) are cut to ~200 characters at a word boundary. Usually far fewer tokens than query_documents with the same answers. A result ending in "..." is truncated: call expand_chunk with its chunk_id for the full text. Prefer this tool for looking things up.',
      inputSchema: {
        type: 'object',
        properties: {
          query,
          top_n: topN,
          min_score: { type: 'number', minimum: 0, maximum: 1, default: 0.3, description: 'Minimum relevance score threshold (default: 0.3); 0 keeps every ranked result.' },
          similarity_threshold: { type: 'number', minimum: 0.5, maximum: 1, default: 0.85, description: 'Cosine similarity threshold for deduplication (default: 0.85); 1 turns semantic deduplication off.' },
          max_chunks_per_doc: { type: 'integer', minimum: 0, maximum: 100, default: 2, description: 'At most this many results from one document (default: 2; 0 = no limit).' },
          truncate: { type: 'boolean', default: true, description: 'Cut the results of factual queries to ~200 characters (default: true).' },
          show_stats: { type: 'boolean', default: false, description: 'Append what each compression stage removed to the text answer (default: false; always in the structured answer).' },
          format: format(defaultFormat),
        },
        required: ['query'],
        additionalProperties: false,
      },
      outputSchema: queryOutput(true),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    {
      name: 'expand_chunk',
      title: 'Expand a chunk',
      description: 'Return the full text of one chunk, given its chunk_id from query_documents or query_documents_compressed (e.g. "docs/guide.md#3"), with its file and section. neighbors adds that many chunks before and after it from the same document, for context.',
      inputSchema: {
        type: 'object',
        properties: {
          chunk_id: { type: 'string', minLength: 1, description: 'A chunk_id from a query result ("{doc_id}#{ordinal}").' },
          neighbors: { type: 'integer', minimum: 0, maximum: 5, default: 0, description: 'Chunks to add before and after it (default: 0).' },
        },
        required: ['chunk_id'],
        additionalProperties: false,
      },
      outputSchema: object({
        chunk_id: chunkId,
        doc_id: docId,
        file_path: filePath,
        header_path: headerPath,
        content: fullText,
        chunks_in_document: prop('integer', 'How many chunks the document has.'),
        before: { type: 'array', items: chunkSchema, description: 'Neighbouring chunks before it, in document order.' },
        after: { type: 'array', items: chunkSchema, description: 'Neighbouring chunks after it, in document order.' },
      }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    {
      name: 'list_documents',
      title: 'List documents',
      description: 'List the indexed documents (id, source file, chunks) and the index status: the folders followed, the embedder, counts, whether indexing is running, and files skipped with the reason. prefix lists one folder (e.g. "docs/api/").',
      inputSchema: {
        type: 'object',
        properties: {
          prefix: { type: 'string', default: '', description: 'Only documents whose id starts with this (default: all).' },
          offset: { type: 'integer', minimum: 0, default: 0, description: 'Skip this many documents (default: 0), for paging.' },
          limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100, description: 'List at most this many (default: 100).' },
        },
        additionalProperties: false,
      },
      outputSchema: object({
        documents: {
          type: 'array',
          items: object({
            doc_id: docId,
            source: { ...prop('string', 'A file under a followed folder or added by path, or a text added with add_documents.'), enum: ['file', 'text'] },
            file_path: filePath,
            bytes: prop('integer', 'Size of the file or text.'),
            chunks: prop('integer', 'Chunks the document was split into.'),
          }),
        },
        matching: prop('integer', 'Documents matching prefix (documents holds at most limit of them, from offset).'),
        status: object({
          folders: { ...ids('Folders followed (--docs, then folders added by path).') },
          embedder: { ...prop('string', 'minilm, or lexical (no model files, or chosen).'), enum: ['minilm', 'lexical'] },
          documents: prop('integer', 'Documents in the index.'),
          chunks: prop('integer', 'Chunks in the index.'),
          indexing: prop('boolean', 'Whether files are being (re-)indexed now.'),
          index_file: prop('string', 'Where the index is saved.'),
          watching: prop(['integer', 'string'], 'Folders watched for changes, or "polling".'),
          last_scan: {
            ...prop(['object', 'null'], 'The last scan of the folders: files found, files (re-)embedded, removed, unchanged, skipped, and its duration.'),
            properties: Object.fromEntries(['files', 'embedded', 'removed', 'unchanged', 'skipped', 'ms'].map((k) => [k, { type: 'number' }])),
          },
          skipped: { type: 'array', items: object({ file_path: prop('string', 'The file.'), reason: prop('string', 'Why it is not indexed.') }) },
          notices: ids('What the server had to tell (embedder fallback, rebuilt index, ...).'),
        }),
      }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    {
      name: 'add_documents',
      title: 'Add documents',
      description: 'Add documents to the index: paths of markdown or text files (.md, .markdown, .mdx, .txt) or folders, which are then kept up to date when they change and remembered across restarts, and/or texts ({id?, title?, text}; a text with an existing id replaces it). Relative paths are resolved against the server\'s working folder. Returns the ids of the documents added. Sends progress notifications while embedding.',
      inputSchema: {
        type: 'object',
        properties: {
          paths: pathList('Files or folders to add.'),
          documents: {
            type: 'array',
            description: 'Texts to add.',
            items: {
              type: 'object',
              properties: {
                id: { type: 'string', minLength: 1, description: 'Its doc_id (default: "text/" and a hash of the text).' },
                title: { type: 'string', description: 'Indexed as the first line.' },
                text: { type: 'string', minLength: 1, description: 'Markdown (chunked by headers) or plain text (by paragraphs); at most 8 MiB.' },
              },
              required: ['text'],
              additionalProperties: false,
            },
          },
        },
        anyOf: [{ required: ['paths'] }, { required: ['documents'] }],
        additionalProperties: false,
      },
      outputSchema: object({
        paths: { type: 'array', items: object({ path: prop('string', 'The path, absolute.'), doc_ids: ids('The documents it gave.') }) },
        texts: ids('doc_ids of the texts, in order.'),
        ...sizes,
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    {
      name: 'remove_documents',
      title: 'Remove documents',
      description: 'Remove documents from the index by id (doc_id from results or list_documents) or by path (a file or folder). A removed file under a followed folder stays out of the index until add_documents adds it again; removed texts are gone. Files themselves are never touched.',
      inputSchema: {
        type: 'object',
        properties: {
          ids: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'doc_ids to remove.' },
          paths: pathList('Files or folders whose documents to remove.'),
        },
        anyOf: [{ required: ['ids'] }, { required: ['paths'] }],
        additionalProperties: false,
      },
      outputSchema: object({
        removed: ids('doc_ids removed.'),
        not_found: ids('ids and paths that matched nothing.'),
        ...sizes,
      }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
  ];
}

/** Arguments that are the input (invalid_input when wrong); every other one is an option (invalid_options). */
const INPUTS = new Set(['query', 'chunk_id', 'paths', 'documents', 'ids']);

/** JSON pointer of ajv (`/documents/0/text`) to condense's path (`documents[0].text`). */
function pathOf(pointer, extra) {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  return parts.reduce((path, p) => (/^\d+$/.test(p) ? `${path}[${p}]` : path ? `${path}.${p}` : p), '');
}

function describe(error, schema) {
  const p = error.params;
  switch (error.keyword) {
    case 'required': return 'missing (required)';
    case 'additionalProperties': {
      const allowed = Object.keys(error.parentSchema?.properties ?? schema.properties ?? {});
      return `unknown argument (expected ${allowed.join(', ')})`;
    }
    case 'type': return `expected ${Array.isArray(p.type) ? p.type.join(' or ') : `${/^[aeiou]/.test(p.type) ? 'an' : 'a'} ${p.type}`}, got ${JSON.stringify(error.data)}`;
    case 'minimum': case 'maximum': {
      const s = error.parentSchema;
      return `expected ${s.type === 'integer' ? 'an integer' : 'a number'} from ${s.minimum ?? '-inf'} to ${s.maximum ?? 'inf'}, got ${JSON.stringify(error.data)}`;
    }
    case 'minLength': return 'must not be empty';
    case 'enum': return `expected one of ${p.allowedValues.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(error.data)}`;
    case 'anyOf': return `give at least one of ${error.parentSchema.anyOf.map((a) => a.required[0]).join(', ')}`;
    default: return error.message;
  }
}

/** Checks a tool's arguments against its inputSchema; throws a CondenseError naming the argument. */
export function makeChecker(definitions) {
  const ajv = new Ajv({ allErrors: false, verbose: true, strict: true, strictRequired: false });
  const checks = new Map(definitions.map((d) => [d.name, { schema: d.inputSchema, validate: ajv.compile(d.inputSchema) }]));
  return (name, args) => {
    const { schema, validate } = checks.get(name);
    if (validate(args ?? {})) return args ?? {};
    // An anyOf ("give paths or documents") says more than the first branch's missing field.
    const error = validate.errors.find((e) => e.keyword === 'anyOf' && e.instancePath === '') ?? validate.errors[0];
    const path = pathOf(error.instancePath, error.params.missingProperty ?? error.params.additionalProperty) || 'arguments';
    const top = path.split(/[.[]/)[0];
    const code = error.keyword === 'additionalProperties' ? 'invalid_options' : INPUTS.has(top) || top === 'arguments' ? 'invalid_input' : 'invalid_options';
    const reason = describe(error, schema);
    throw new CondenseError(code, path, `${code} at ${path}: ${reason}`, reason);
  };
}

/** condense's option paths (`options.topN`) as the tool's argument names. */
const ARGUMENT = { topN: 'top_n', minScore: 'min_score', similarityThreshold: 'similarity_threshold', maxChunksPerDoc: 'max_chunks_per_doc', format: 'format', truncate: 'truncate' };
export function toArgumentPath(path) {
  if (path === 'question') return 'query';
  const m = /^options\.(\w+)(.*)$/.exec(path ?? '');
  return m && ARGUMENT[m[1]] ? ARGUMENT[m[1]] + m[2] : path;
}

// ------------------------------------------------------------------ answers

/** Headers joined with ` > `, each on one line (as condense's formats print them). */
const section = (headers) => headers.map((h) => h.split(/\s+/).filter(Boolean).join(' ')).filter(Boolean).join(' > ');

const result = (library) => (r) => ({
  chunk_id: r.chunkId,
  doc_id: r.docId,
  score: r.score,
  header_path: section(r.headerPath),
  file_path: library.fileOf(r.docId),
  content: r.content,
  truncated: r.truncated,
});

/**
 * The compact layout of `query` with the chunk id where `query` has the file, so that every
 * result can be expanded: `[1] docs/guide.md#3 § Setup > Install (0.92)` and the content.
 */
export function compact(results) {
  return results.map((r, i) => {
    const head = `[${i + 1}] ${r.chunk_id}${r.header_path ? ` § ${r.header_path}` : ''} (${r.score.toFixed(2)})`;
    return r.content ? `${head}\n${r.content}` : head;
  }).join('\n\n');
}

function statsOf(s) {
  return {
    original_count: s.originalCount,
    after_threshold: s.afterThreshold,
    after_dedup: s.afterDedup,
    after_doc_limit: s.afterPerDocLimit,
    returned: s.returned,
    clusters_merged: s.clustersMerged,
    truncated: s.truncated,
    tokens_before: s.tokensBefore,
    tokens_after: s.tokensAfter,
  };
}

/** The `show_stats` lines (docs/design.md, "Result compression"). */
function statsText(s, args) {
  return [
    'Compression Stats:',
    `- Original results: ${s.original_count}`,
    `- After score filter (≥${args.min_score}): ${s.after_threshold}`,
    `- After deduplication: ${s.after_dedup}`,
    `- After document limit (${args.max_chunks_per_doc || 'no limit'} per doc): ${s.after_doc_limit}`,
    `- Clusters merged: ${s.clusters_merged}`,
    `- Truncated: ${s.truncated}`,
  ].join('\n');
}

const DEFAULTS = {
  query_documents: { top_n: 5, max_chunks_per_doc: 0 },
  query_documents_compressed: { top_n: 5, min_score: 0.3, similarity_threshold: 0.85, max_chunks_per_doc: 2, truncate: true, show_stats: false },
  expand_chunk: { neighbors: 0 },
  list_documents: { prefix: '', offset: 0, limit: 100 },
  add_documents: { paths: [], documents: [] },
  remove_documents: { ids: [], paths: [] },
};

/**
 * The tools over a library (library.js). `call(name, args, { onProgress })` returns a
 * CallToolResult; bad arguments and condense's errors come back as tool errors (`isError`) whose
 * text is `code at path: reason`, with `{ code, path, reason }` in `_meta["condense/error"]`.
 */
export function createTools(library, { format: defaultFormat = 'compact' } = {}) {
  const definitions = toolDefinitions(defaultFormat);
  const check = makeChecker(definitions);

  async function queryTool(name, args) {
    const compressed = name === 'query_documents_compressed';
    const options = compressed
      ? { topN: args.top_n, minScore: args.min_score, similarityThreshold: args.similarity_threshold, maxChunksPerDoc: args.max_chunks_per_doc, truncate: args.truncate }
      : { topN: args.top_n, minScore: 0, ngramThreshold: 1, similarityThreshold: 1, maxChunksPerDoc: args.max_chunks_per_doc, truncate: false };
    const out = await library.query(args.query, { ...options, format: args.format === 'verbose' ? 'verbose' : 'compact' });
    const structured = { results: out.results.map(result(library)), query_kind: out.queryKind };
    if (compressed) structured.compression_stats = statsOf(out.stats);
    let text;
    if (args.format === 'json') text = JSON.stringify(structured);
    else if (structured.results.length === 0) {
      text = library.documents === 0
        ? `No results: no documents are indexed yet${library.indexing ? ' (indexing is running)' : ''}. See list_documents.`
        : compressed && out.stats.removedByMinScore > 0
          ? `No results scoring at least min_score ${args.min_score} (${out.stats.removedByMinScore} lower-scoring candidates dropped); try other words or a lower min_score.`
          : `No results in ${library.documents} documents.`;
    } else text = args.format === 'verbose' ? out.text : compact(structured.results);
    if (compressed && args.show_stats && args.format !== 'json') text += `\n\n${statsText(structured.compression_stats, args)}`;
    return { text, structured };
  }

  async function expandTool(args) {
    const id = args.chunk_id;
    const cut = id.lastIndexOf('#');
    const docId = cut > 0 ? id.slice(0, cut) : null;
    const doc = docId === null ? undefined : await library.document(docId);
    const at = doc ? doc.chunks.findIndex((c) => c.id === id) : -1;
    if (at < 0) {
      const reason = doc
        ? `no chunk ${JSON.stringify(id)}: the document ${JSON.stringify(docId)} has ${doc.chunks.length === 0 ? 'no chunks (no text)' : `chunks #0 to #${doc.chunks.length - 1}`} now (it may have changed since the query)`
        : `no chunk ${JSON.stringify(id)} in the index: chunk ids come from query results ("{doc_id}#{ordinal}"); its document may have been removed`;
      throw new CondenseError('invalid_input', 'chunk_id', `invalid_input at chunk_id: ${reason}`, reason);
    }
    const piece = (c) => ({ chunk_id: c.id, header_path: section(c.headerPath), content: c.text });
    const chunk = doc.chunks[at];
    const structured = {
      chunk_id: chunk.id,
      doc_id: doc.id,
      file_path: library.fileOf(doc.id),
      header_path: section(chunk.headerPath),
      content: chunk.text,
      chunks_in_document: doc.chunks.length,
      before: doc.chunks.slice(Math.max(0, at - args.neighbors), at).map(piece),
      after: doc.chunks.slice(at + 1, at + 1 + args.neighbors).map(piece),
    };
    const block = (c) => `${c.chunk_id}${c.header_path ? ` § ${c.header_path}` : ''}\n${c.content}`;
    const text = [...structured.before.map(block), block(structured), ...structured.after.map(block)].join('\n\n');
    return { text: `${text}\n\n(${structured.file_path ?? doc.id}: chunk ${at + 1} of ${doc.chunks.length})`, structured };
  }

  function listTool(args) {
    const all = library.list().filter((d) => d.id.startsWith(args.prefix));
    const page = all.slice(args.offset, args.offset + args.limit);
    const last = library.lastSync;
    const structured = {
      documents: page.map((d) => ({ doc_id: d.id, source: d.source, file_path: d.file, bytes: d.bytes, chunks: d.chunks })),
      matching: all.length,
      status: {
        folders: library.roots,
        embedder: library.embedder,
        documents: library.documents,
        chunks: library.chunks,
        indexing: library.indexing,
        index_file: library.indexFile,
        watching: library.watching,
        last_scan: last,
        skipped: library.skipped.map((s) => ({ file_path: s.file, reason: s.reason })),
        notices: [...library.notices],
      },
    };
    const s = structured.status;
    const lines = [
      `${s.documents} documents, ${s.chunks} chunks (embedder: ${s.embedder}${s.indexing ? '; indexing now' : ''}); folders: ${s.folders.join(', ')}; index file: ${s.index_file}`,
      ...s.notices.map((n) => `notice: ${n}`),
      ...s.skipped.map((k) => `skipped ${k.file_path}: ${k.reason}`),
      ...page.map((d) => `${d.id} (${d.chunks} chunk${d.chunks === 1 ? '' : 's'}${d.source === 'text' ? ', text' : ''})`),
    ];
    if (all.length > args.offset + page.length) lines.push(`... ${all.length - args.offset - page.length} more (offset ${args.offset + page.length})`);
    return { text: lines.join('\n'), structured };
  }

  async function addTool(args) {
    const out = await library.add({ paths: args.paths, documents: args.documents });
    const structured = {
      paths: out.paths.map((p) => ({ path: p.path, doc_ids: p.ids })),
      texts: out.texts,
      documents: library.documents,
      chunks: library.chunks,
    };
    const lines = [
      ...structured.paths.map((p) => `${p.path}: ${p.doc_ids.length} document${p.doc_ids.length === 1 ? '' : 's'}${p.doc_ids.length > 0 && p.doc_ids.length <= 10 ? ` (${p.doc_ids.join(', ')})` : ''}`),
      ...(structured.texts.length > 0 ? [`texts: ${structured.texts.join(', ')}`] : []),
      `index: ${structured.documents} documents, ${structured.chunks} chunks`,
    ];
    return { text: lines.join('\n'), structured };
  }

  async function removeTool(args) {
    const out = await library.remove({ ids: args.ids, paths: args.paths });
    const structured = { removed: out.removed, not_found: out.missing, documents: library.documents, chunks: library.chunks };
    const lines = [
      `removed ${out.removed.length} document${out.removed.length === 1 ? '' : 's'}${out.removed.length > 0 && out.removed.length <= 10 ? `: ${out.removed.join(', ')}` : ''}`,
      ...(out.missing.length > 0 ? [`not found: ${out.missing.join(', ')}`] : []),
      `index: ${structured.documents} documents, ${structured.chunks} chunks`,
    ];
    return { text: lines.join('\n'), structured };
  }

  async function call(name, rawArgs) {
    try {
      if (!DEFAULTS[name]) {
        throw new CondenseError('invalid_input', 'name', `invalid_input at name: unknown tool ${JSON.stringify(name)}`, `unknown tool ${JSON.stringify(name)}`);
      }
      const args = { ...DEFAULTS[name], ...(name.startsWith('query_') ? { format: defaultFormat } : {}), ...check(name, rawArgs) };
      let answer;
      switch (name) {
        case 'query_documents':
        case 'query_documents_compressed': answer = await queryTool(name, args); break;
        case 'expand_chunk': answer = await expandTool(args); break;
        case 'list_documents': await library.ready; answer = listTool(args); break;
        case 'add_documents': answer = await addTool(args); break;
        case 'remove_documents': answer = await removeTool(args); break;
      }
      return { content: [{ type: 'text', text: answer.text }], structuredContent: answer.structured };
    } catch (e) {
      return errorResult(e);
    }
  }

  return { definitions, call };
}

/** A tool error: `code at path: reason` for the model, the same fields in _meta. */
export function errorResult(e) {
  const condense = e instanceof CondenseError || (e?.name === 'CondenseError' && typeof e.code === 'string');
  const code = condense ? e.code : 'internal';
  const path = condense ? toArgumentPath(e.path) : '';
  const reason = condense ? (e.reason ?? e.message) : String(e?.message ?? e);
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}${path ? ` at ${path}` : ''}: ${reason}` }],
    _meta: { 'condense/error': { code, path, reason } },
  };
}
