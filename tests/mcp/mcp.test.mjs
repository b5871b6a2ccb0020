// `condense-ctx mcp` end to end: the packed package installed as a user gets it, its bin started
// by the MCP SDK's own Client over stdio and over Streamable HTTP, on a fixture folder (copied to
// a scratch folder, then edited). Needs scripts/build-pkg and `npm ci` in tests/mcp.
//
//   node --test tests/mcp/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installPackage } from './app.mjs';
import { connectHttp, connectStdio } from './client.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const TOOLS = ['add_documents', 'expand_chunk', 'list_documents', 'query_documents', 'query_documents_compressed', 'remove_documents'];

let installed;
let scratch = 0;

before(() => {
  installed = installPackage();
});

after(() => {
  if (installed && !process.env.KEEP_MCP_TMP) rmSync(installed.tmp, { recursive: true, force: true });
});

/** A fresh copy of the fixture folder (`docs/`, with its .gitignore) and a place for its index. */
function fixture() {
  const dir = join(installed.tmp, `case-${++scratch}`);
  cpSync(join(here, 'fixture'), dir, { recursive: true });
  renameSync(join(dir, 'docs', 'dot-gitignore'), join(dir, 'docs', '.gitignore'));
  return { dir, docs: join(dir, 'docs') };
}

async function call(client, name, args, options) {
  return client.callTool({ name, arguments: args }, undefined, options);
}

/** Calls until `ok(result)` holds (the watcher runs on its own time), at most `ms`. */
async function until(client, name, args, ok, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await call(client, name, args);
    if (ok(r)) return r;
    if (Date.now() > end) assert.fail(`${name} ${JSON.stringify(args)} never gave the expected answer; last:\n${r.content[0].text}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

const ids = (r) => r.structuredContent.results.map((x) => x.doc_id);

function toolError(r, code, path) {
  assert.equal(r.isError, true, `expected a tool error, got:\n${JSON.stringify(r)}`);
  assert.deepEqual({ code: r._meta['condense/error'].code, path: r._meta['condense/error'].path }, { code, path });
  assert.ok(r.content[0].text.startsWith(`${code} at ${path}: `), r.content[0].text);
}

/** The flow both transports must pass: tools, both queries, expand, formats, edits, bad arguments. */
async function scenario(client, docs) {
  // Tools, with schemas an LLM can act on.
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  for (const t of tools) {
    assert.ok(t.description.length > 80, `${t.name}: description too short`);
    assert.equal(t.inputSchema.type, 'object');
    for (const [k, p] of Object.entries(t.inputSchema.properties)) assert.ok(p.description, `${t.name}.${k} has no description`);
    assert.ok(t.outputSchema, `${t.name} has no outputSchema`);
  }
  const compressed = tools.find((t) => t.name === 'query_documents_compressed').inputSchema;
  assert.deepEqual(compressed.required, ['query']);
  assert.deepEqual(
    Object.fromEntries(['top_n', 'min_score', 'similarity_threshold', 'max_chunks_per_doc', 'format'].map((k) => [k, compressed.properties[k].default])),
    { top_n: 5, min_score: 0.3, similarity_threshold: 0.85, max_chunks_per_doc: 2, format: 'compact' },
  );
  assert.deepEqual([compressed.properties.similarity_threshold.minimum, compressed.properties.top_n.maximum], [0.5, 100]);

  // The index: the folder's markdown and text files, minus .gitignore'd and --ignore'd ones.
  const listed = await until(client, 'list_documents', {}, (r) => r.structuredContent.status.documents === 4 && !r.structuredContent.status.indexing);
  assert.deepEqual(listed.structuredContent.documents.map((d) => d.doc_id), ['docs/guide.md', 'docs/notes.txt', 'docs/reference/api-copy.md', 'docs/reference/api.md']);
  assert.equal(listed.structuredContent.documents[0].file_path, join(docs, 'guide.md'));
  for (const q of ['zebra password rotation', 'walrus notes']) {
    const r = await call(client, 'query_documents', { query: q, top_n: 20 });
    assert.ok(!ids(r).some((id) => /drafts|scratch/.test(id)), `${q}: ${ids(r)}`);
  }

  // query_documents: the top_n chunks in full.
  const full = await call(client, 'query_documents', { query: 'which authentication provider do pilots sign in with', top_n: 10 });
  assert.equal(full.isError, undefined);
  const top = full.structuredContent.results[0];
  assert.equal(top.doc_id, 'docs/guide.md');
  assert.match(top.chunk_id, /^docs\/guide\.md#\d+$/);
  assert.match(top.header_path, /Authentication/);
  assert.equal(top.file_path, join(docs, 'guide.md'));
  assert.ok(full.structuredContent.results.every((r) => !r.truncated));
  assert.ok(readFileSync(join(docs, 'guide.md'), 'utf8').includes(top.content));
  assert.ok(full.content[0].text.startsWith(`[1] ${top.chunk_id} § ${top.header_path} (${top.score.toFixed(2)})\n`), full.content[0].text);
  assert.equal(full.structuredContent.compression_stats, undefined);

  // query_documents_compressed: fewer tokens, stats that add up, duplicates merged.
  const dupQuery = { query: 'getUserById retrieves a pilot by unique identifier cached database lookup', top_n: 10 };
  const plain = await call(client, 'query_documents', { ...dupQuery, max_chunks_per_doc: 0 });
  assert.ok(ids(plain).includes('docs/reference/api.md') && ids(plain).includes('docs/reference/api-copy.md'), ids(plain).join());
  const small = await call(client, 'query_documents_compressed', { ...dupQuery, show_stats: true });
  const s = small.structuredContent.compression_stats;
  assert.ok(s.original_count >= s.after_threshold && s.after_threshold >= s.after_dedup && s.after_dedup >= s.after_doc_limit && s.after_doc_limit >= s.returned);
  assert.equal(s.returned, small.structuredContent.results.length);
  assert.ok(s.clusters_merged >= 1, JSON.stringify(s));
  assert.equal(ids(small).filter((id) => id.startsWith('docs/reference/api')).length, 1, ids(small).join());
  assert.ok(small.structuredContent.results.every((r) => r.score >= 0.3));
  assert.equal(small.structuredContent.query_kind, 'factual');
  assert.ok(small.content[0].text.length < plain.content[0].text.length);
  assert.match(small.content[0].text, /Compression Stats:\n- Original results: \d+\n- After score filter \(≥0\.3\): \d+/);
  const truncated = small.structuredContent.results.find((r) => r.truncated);
  assert.ok(truncated, 'a factual query truncates');
  assert.ok(truncated.content.endsWith('...'));

  // expand_chunk: the full text of a truncated result, and its neighbours.
  const expanded = await call(client, 'expand_chunk', { chunk_id: truncated.chunk_id });
  assert.equal(expanded.structuredContent.chunk_id, truncated.chunk_id);
  assert.ok(expanded.structuredContent.content.startsWith(truncated.content.slice(0, -3).trimEnd()));
  assert.ok(expanded.structuredContent.content.length > truncated.content.length);
  const guideChunks = (await call(client, 'list_documents', { prefix: 'docs/guide' })).structuredContent.documents[0].chunks;
  assert.ok(guideChunks >= 3, `guide.md has ${guideChunks} chunks`);
  const middle = await call(client, 'expand_chunk', { chunk_id: 'docs/guide.md#1', neighbors: 1 });
  assert.deepEqual([middle.structuredContent.before.map((c) => c.chunk_id), middle.structuredContent.after.map((c) => c.chunk_id)], [['docs/guide.md#0'], ['docs/guide.md#2']]);
  assert.equal(middle.structuredContent.chunks_in_document, guideChunks);

  // Formats: verbose (condense's layout), json (the structured answer as text).
  const verbose = await call(client, 'query_documents', { query: 'tide tables', format: 'verbose' });
  assert.match(verbose.content[0].text, /^\*\*Result 1\*\* \(Score: \d\.\d{4}\)\nFile: .*notes\.txt\nDocument: docs\/notes\.txt\nChunk: docs\/notes\.txt#0\n/);
  const json = await call(client, 'query_documents_compressed', { query: 'tide tables', format: 'json' });
  assert.deepEqual(JSON.parse(json.content[0].text), json.structuredContent);

  // Edits reach the index through the watcher; only the changed file is embedded again.
  appendFileSync(join(docs, 'guide.md'), '\n## Wildlife\n\nA quokka colony lives on the breakwater; pilots must not feed the quokkas or let them aboard.\n');
  const seen = await until(client, 'query_documents', { query: 'quokka breakwater' }, (r) => r.structuredContent.results[0]?.content.includes('quokka'));
  assert.equal(seen.structuredContent.results[0].doc_id, 'docs/guide.md');
  const afterEdit = await until(client, 'list_documents', {}, (r) => !r.structuredContent.status.indexing);
  assert.equal(afterEdit.structuredContent.status.last_scan.embedded, 1, JSON.stringify(afterEdit.structuredContent.status.last_scan));
  writeFileSync(join(docs, 'reference', 'ports.md'), '# Ports\n\nThe marina at Puffin Cove has twelve visitor berths and a fuel pontoon open from dawn to dusk.\n');
  await until(client, 'query_documents', { query: 'Puffin Cove visitor berths' }, (r) => ids(r)[0] === 'docs/reference/ports.md');
  rmSync(join(docs, 'notes.txt'));
  await until(client, 'list_documents', {}, (r) => !r.structuredContent.documents.some((d) => d.doc_id === 'docs/notes.txt'));
  assert.ok(!ids(await call(client, 'query_documents', { query: 'tide tables spring tides', top_n: 20 })).includes('docs/notes.txt'));

  // Bad arguments: tool errors with condense's code and the argument's path.
  toolError(await call(client, 'query_documents', { query: 'x', top_n: 0 }), 'invalid_options', 'top_n');
  toolError(await call(client, 'query_documents_compressed', { query: 'x', similarity_threshold: 0.2 }), 'invalid_options', 'similarity_threshold');
  toolError(await call(client, 'query_documents', {}), 'invalid_input', 'query');
  toolError(await call(client, 'query_documents', { query: 42 }), 'invalid_input', 'query');
  toolError(await call(client, 'query_documents', { query: 'x', topN: 3 }), 'invalid_options', 'topN');
  toolError(await call(client, 'query_documents', { query: 'x', format: 'xml' }), 'invalid_options', 'format');
  toolError(await call(client, 'expand_chunk', { chunk_id: 'docs/nowhere.md#3' }), 'invalid_input', 'chunk_id');
  toolError(await call(client, 'expand_chunk', { chunk_id: 'docs/guide.md#999' }), 'invalid_input', 'chunk_id');
  toolError(await call(client, 'add_documents', {}), 'invalid_input', 'arguments');
  toolError(await call(client, 'add_documents', { documents: [{ text: 'ok' }, { text: '' }] }), 'invalid_input', 'documents[1].text');
  toolError(await call(client, 'add_documents', { paths: [join(docs, 'no-such-file.md')] }), 'invalid_input', 'paths[0]');
  toolError(await call(client, 'add_documents', { paths: [join(docs, 'data.json')] }), 'invalid_input', 'paths[0]');
  toolError(await call(client, 'add_documents', { documents: [{ id: 'docs/guide.md', text: 'clash' }] }), 'invalid_input', 'documents[0].id');
  const bad = toolError.bind(null, await call(client, 'list_documents', { limit: 'all' }));
  bad('invalid_options', 'limit');
  await assert.rejects(call(client, 'no_such_tool', {}), /Unknown tool: no_such_tool/);
}

/** Adding and removing documents (texts, a file outside the folder, a folder's file), with progress. */
async function editing(client, dir, docs, wire) {
  const progress = [];
  const from = wire.length;
  const added = await call(client, 'add_documents', {
    documents: [{ id: 'memo/harbour-fees', title: 'Harbour fees', text: 'Harbour dues are charged per gross tonne; yachts under twelve metres pay a flat fee of forty crowns a night.' }],
  }, { onprogress: (p) => progress.push(p) });
  assert.deepEqual(added.structuredContent.texts, ['memo/harbour-fees']);
  // What the server sent for this request (off the wire: see client.mjs): from 0 to the total,
  // only growing. The SDK's `onprogress` sees a prefix of it (none when the notifications and
  // the response arrive in one read).
  const sent = wire.slice(from);
  assert.ok(sent.length >= 2, `progress sent: ${JSON.stringify(sent)}`);
  assert.ok(sent.every((p, i) => p.progressToken === sent[0].progressToken && p.total === 1 && p.progress <= p.total && (i === 0 || p.progress > sent[i - 1].progress)), JSON.stringify(sent));
  assert.deepEqual([sent[0].progress, sent.at(-1).progress], [0, 1]);
  assert.deepEqual(progress, sent.slice(0, progress.length).map(({ progressToken, ...p }) => p));
  const hit = await call(client, 'query_documents', { query: 'harbour dues per gross tonne' });
  assert.equal(hit.structuredContent.results[0].doc_id, 'memo/harbour-fees');
  assert.equal(hit.structuredContent.results[0].file_path, null);

  const outside = join(dir, 'elsewhere');
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'tugs.md'), '# Tugs\n\nTwo tugs, Gannet and Cormorant, assist vessels over 150 metres through the narrows.\n');
  const byPath = await call(client, 'add_documents', { paths: [join(outside, 'tugs.md')] });
  assert.deepEqual(byPath.structuredContent.paths, [{ path: join(outside, 'tugs.md'), doc_ids: ['elsewhere/tugs.md'] }]);
  assert.equal(ids(await call(client, 'query_documents', { query: 'Gannet Cormorant tugs' }))[0], 'elsewhere/tugs.md');
  // An added file is followed too.
  appendFileSync(join(outside, 'tugs.md'), '\nA third tug, Shearwater, joins in the winter season.\n');
  await until(client, 'query_documents', { query: 'Shearwater winter tug' }, (r) => r.structuredContent.results[0]?.content.includes('Shearwater'));

  const removed = await call(client, 'remove_documents', { ids: ['memo/harbour-fees', 'docs/reference/api-copy.md', 'nope'] });
  assert.deepEqual(removed.structuredContent.removed, ['docs/reference/api-copy.md', 'memo/harbour-fees']);
  assert.deepEqual(removed.structuredContent.not_found, ['nope']);
  // A removed file of the folder stays out, even when it changes, until it is added again.
  appendFileSync(join(docs, 'reference', 'api-copy.md'), '\nEdited after removal.\n');
  await new Promise((done) => setTimeout(done, 600));
  const list = await until(client, 'list_documents', {}, (r) => !r.structuredContent.status.indexing);
  assert.ok(!list.structuredContent.documents.some((d) => d.doc_id === 'docs/reference/api-copy.md'));
  const back = await call(client, 'add_documents', { paths: [join(docs, 'reference')] });
  assert.deepEqual(back.structuredContent.paths[0].doc_ids, ['docs/reference/api-copy.md', 'docs/reference/api.md', 'docs/reference/ports.md']);
  await call(client, 'remove_documents', { paths: [join(docs, 'reference', 'ports.md')] });
  return (await call(client, 'list_documents', {})).structuredContent;
}

test('stdio: tools, queries, expand, formats, edits seen, bad arguments; add/remove with progress; the index reopened without re-embedding', async () => {
  const { dir, docs } = fixture();
  const index = join(dir, 'index.cndx');
  const args = ['--docs', docs, '--embedder', 'lexical', '--ignore', 'scratch.md', '--index', index];
  const s = await connectStdio(installed.bin, args, { cwd: dir });
  let before;
  try {
    assert.match(s.client.getInstructions(), /query_documents_compressed/);
    await scenario(s.client, docs);
    before = await editing(s.client, dir, docs, s.progress);
  } finally {
    await s.close();
  }
  assert.ok(existsSync(index));
  // Reopened: the same documents, nothing embedded again; a file changed meanwhile is.
  appendFileSync(join(docs, 'guide.md'), '\nOne more line, written while the server was down.\n');
  const again = await connectStdio(installed.bin, args, { cwd: dir });
  try {
    const list = await until(again.client, 'list_documents', {}, (r) => r.structuredContent.status.last_scan !== null && !r.structuredContent.status.indexing);
    assert.deepEqual(list.structuredContent.documents.map((d) => d.doc_id), before.documents.map((d) => d.doc_id));
    assert.deepEqual(list.structuredContent.documents.map((d) => d.doc_id), ['docs/guide.md', 'docs/reference/api-copy.md', 'docs/reference/api.md', 'elsewhere/tugs.md']);
    assert.equal(list.structuredContent.status.last_scan.embedded, 1, JSON.stringify(list.structuredContent.status.last_scan));
    assert.equal(list.structuredContent.status.last_scan.unchanged, 3);
    assert.equal(ids(await call(again.client, 'query_documents', { query: 'Gannet Cormorant tugs' }))[0], 'elsewhere/tugs.md');
  } finally {
    await again.close();
  }
});

test('Streamable HTTP on 127.0.0.1: the same flow; other Hosts refused; SIGTERM saves and exits', async () => {
  const { dir, docs } = fixture();
  const h = await connectHttp(installed.bin, ['--docs', docs, '--embedder', 'lexical', '--ignore', 'scratch.md'], { cwd: dir });
  let code;
  try {
    assert.match(h.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    await scenario(h.client, docs);
    const status = await new Promise((resolve, reject) => {
      const req = request(h.url, { method: 'POST', headers: { host: 'attacker.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => { res.resume(); resolve(res.statusCode); });
      req.on('error', reject);
      req.end('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}');
    });
    assert.equal(status, 403);
  } finally {
    code = await h.close();
  }
  assert.equal(code, 0, h.stderr());
  // The default index file, in a folder that git ignores.
  assert.ok(existsSync(join(docs, '.condense', 'index.cndx')));
  assert.equal(readFileSync(join(docs, '.condense', '.gitignore'), 'utf8'), '*\n');
});

test('MiniLM by default; without the model files the lexical embedder, with a notice, and the index rebuilt', async () => {
  const { dir, docs } = fixture();
  const args = ['--docs', docs];
  const m = await connectStdio(installed.bin, args, { cwd: dir });
  try {
    // The server answers initialize while the model loads; a first query waits for the first
    // scan and gets its progress.
    const progress = [];
    const first = await call(m.client, 'query_documents_compressed', { query: 'harbour pilots sign in' }, { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true });
    assert.ok(first.structuredContent.results.length > 0);
    assert.ok(progress.length >= 2, JSON.stringify(progress));
    assert.ok(progress.every((p, i) => p.total === 5 && (i === 0 || p.progress > progress[i - 1].progress)), JSON.stringify(progress));
    assert.deepEqual([progress[0].progress, progress.at(-1).progress], [0, 5]);
    const list = await until(m.client, 'list_documents', {}, (r) => r.structuredContent.status.documents === 5 && !r.structuredContent.status.indexing);
    assert.equal(list.structuredContent.status.embedder, 'minilm');
    assert.deepEqual(list.structuredContent.status.notices, []);
    // Semantic: no word of the question is in the answer's section.
    const r = await call(m.client, 'query_documents', { query: 'how do sailors log in' });
    assert.match(r.structuredContent.results[0].header_path, /Authentication/);
  } finally {
    await m.close();
  }
  const models = join(installed.pkg, 'models');
  renameSync(models, `${models}.away`);
  try {
    const l = await connectStdio(installed.bin, args, { cwd: dir });
    try {
      assert.match(l.client.getInstructions(), /MiniLM model files not found .* using the lexical embedder/);
      assert.match(l.stderr(), /MiniLM model files not found/);
      const list = await until(l.client, 'list_documents', {}, (r) => r.structuredContent.status.documents === 5 && !r.structuredContent.status.indexing);
      assert.equal(list.structuredContent.status.embedder, 'lexical');
      assert.ok(list.structuredContent.status.notices.some((n) => /built with the minilm embedder, this server uses lexical: re-indexing/.test(n)), list.structuredContent.status.notices.join('\n'));
      assert.equal(list.structuredContent.status.last_scan.embedded, 5);
      assert.equal(ids(await call(l.client, 'query_documents_compressed', { query: 'auth_provider OAuth2 SAML LDAP' }))[0], 'docs/guide.md');
    } finally {
      await l.close();
    }
  } finally {
    renameSync(`${models}.away`, models);
  }
});

test("the repository's ignore rules above the folder; a damaged index file is rebuilt with a notice", async () => {
  const { dir, docs } = fixture();
  // The scratch folder becomes a repository whose top-level .gitignore and info/exclude reach into docs/.
  mkdirSync(join(dir, '.git', 'info'), { recursive: true });
  writeFileSync(join(dir, '.gitignore'), 'docs/notes.txt\n');
  writeFileSync(join(dir, '.git', 'info', 'exclude'), 'api-copy.md\n');
  // A nested .gitignore can take a file back (negation).
  writeFileSync(join(docs, 'drafts', 'keep.md'), '# Kept\n\nThe ferry timetable draft is meant to be found.\n');
  writeFileSync(join(docs, '.gitignore'), 'drafts/*\n!drafts/keep.md\n');
  const index = join(dir, 'index.cndx');
  writeFileSync(index, 'not an index file at all');
  const s = await connectStdio(installed.bin, ['--docs', docs, '--embedder', 'lexical', '--index', index], { cwd: dir });
  try {
    const list = await until(s.client, 'list_documents', {}, (r) => r.structuredContent.status.last_scan !== null && !r.structuredContent.status.indexing);
    assert.deepEqual(list.structuredContent.documents.map((d) => d.doc_id), ['docs/drafts/keep.md', 'docs/guide.md', 'docs/reference/api.md', 'docs/scratch.md']);
    assert.ok(list.structuredContent.status.notices.some((n) => /is not usable .*not a condense-ctx mcp index file.*building a new index/.test(n)), list.structuredContent.status.notices.join('\n'));
    assert.match(s.stderr(), /is not usable/);
  } finally {
    await s.close();
  }
  assert.ok(readFileSync(index).subarray(0, 25).toString().startsWith('condense-ctx mcp index 1'));
});

test('usage errors exit 2 with the reason', () => {
  const { docs } = fixture();
  for (const [args, reason] of [
    [['mcp'], /--docs DIR is required/],
    [['mcp', '--docs', join(docs, 'guide.md')], /not a folder/],
    [['mcp', '--docs', docs, '--embedder', 'bert'], /--embedder bert: expected minilm or lexical/],
    [['mcp', '--docs', docs, '--format', 'xml'], /--format xml/],
    [['mcp', '--docs', docs, '--http', 'eighty'], /--http eighty/],
    [['mcp', '--docs', docs, '--bogus'], /Unknown option '--bogus'/],
    [['serve'], /unknown command "serve"/],
  ]) {
    const r = spawnSync(installed.bin, args, { encoding: 'utf8' });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, reason);
    assert.match(r.stderr, /usage: condense-ctx mcp --docs DIR/);
  }
  const v = spawnSync(installed.bin, ['--version'], { encoding: 'utf8' });
  assert.equal(v.status, 0);
  assert.equal(v.stdout.trim(), JSON.parse(readFileSync(join(installed.pkg, 'package.json'), 'utf8')).version);
});

test("import 'condense-ctx' stays dependency-free: it works with the MCP SDK and the bin's other dependencies absent", () => {
  const pkg = JSON.parse(readFileSync(join(installed.pkg, 'package.json'), 'utf8'));
  const mine = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
  // tests/mcp pins exactly what the package depends on.
  assert.deepEqual(Object.keys(pkg.dependencies).sort(), Object.keys(mine.dependencies).sort());
  for (const [name, range] of Object.entries(pkg.dependencies)) assert.equal(range, `^${mine.dependencies[name]}`, name);
  // No file outside mcp/ names a dependency.
  for (const f of readdirSync(installed.pkg).filter((f) => /\.(c?js|d\.c?ts)$/.test(f))) {
    const text = readFileSync(join(installed.pkg, f), 'utf8');
    for (const name of Object.keys(pkg.dependencies)) assert.ok(!text.includes(`'${name}`) && !text.includes(`"${name}`), `${f} names ${name}`);
  }
  const nm = join(installed.app, 'node_modules');
  const moved = Object.keys(pkg.dependencies).map((name) => join(nm, name.split('/')[0])).filter((p, i, a) => a.indexOf(p) === i);
  for (const p of moved) renameSync(p, `${p}.away`);
  try {
    writeFileSync(join(installed.app, 'use.mjs'), "import { compress, version } from 'condense-ctx';\nconst r = compress([{ role: 'user', content: 'hello' }]);\nconsole.log(JSON.stringify({ v: version(), n: r.messages.length }));\n");
    writeFileSync(join(installed.app, 'use.cjs'), "const { compress } = require('condense-ctx');\nconsole.log(JSON.stringify({ n: compress([{ role: 'user', content: 'hello' }]).messages.length }));\n");
    for (const f of ['use.mjs', 'use.cjs']) {
      const r = spawnSync(process.execPath, [f], { cwd: installed.app, encoding: 'utf8' });
      assert.equal(r.status, 0, `${f}: ${r.stderr}`);
      assert.equal(JSON.parse(r.stdout).n, 1);
    }
    // The bin needs them, and says which is missing.
    const r = spawnSync(installed.bin, ['mcp', '--docs', installed.app], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /Cannot find package '(@modelcontextprotocol\/sdk|ignore|ajv)'/);
  } finally {
    for (const p of moved) renameSync(`${p}.away`, p);
  }
  assert.ok(statSync(join(nm, '@modelcontextprotocol', 'sdk')).isDirectory());
});
