#!/usr/bin/env node
// `npx condense-ctx mcp --docs DIR ...`: condense as an MCP server (the package's `bin`).
// Only this entry loads the MCP SDK: `import 'condense-ctx'` never does.
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `usage: condense-ctx mcp --docs DIR [--docs DIR ...] [options]

Serves the markdown and text files under the folders as MCP tools (query_documents,
query_documents_compressed, expand_chunk, list_documents, add_documents, remove_documents),
on stdio (default) or Streamable HTTP.

  --docs DIR          a folder of documents (.md, .markdown, .mdx, .txt); repeatable
  --index FILE        the index file (default: DIR/.condense/index.cndx of the first folder,
                      in a folder that ignores itself for git)
  --embedder NAME     minilm (default; lexical when the model files are absent) or lexical
  --format NAME       text layout of query answers: compact (default), verbose or json
  --http PORT         serve Streamable HTTP at http://127.0.0.1:PORT/mcp (0: any free port)
  --ignore GLOB       gitignore-style pattern of files to leave out; repeatable
                      (.gitignore files are honoured too)
  -h, --help          this text
  -v, --version       the package version`;

function usage(message) {
  process.stderr.write(`condense-ctx: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function options(argv) {
  if (argv[0] === '-h' || argv[0] === '--help') {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (argv[0] === '-v' || argv[0] === '--version') return { version: true };
  if (argv[0] !== 'mcp') usage(argv.length === 0 ? 'no command' : `unknown command ${JSON.stringify(argv[0])} (the command is mcp)`);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv.slice(1),
      options: {
        docs: { type: 'string', multiple: true },
        index: { type: 'string' },
        embedder: { type: 'string', default: 'minilm' },
        format: { type: 'string', default: 'compact' },
        http: { type: 'string' },
        ignore: { type: 'string', multiple: true, default: [] },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      allowPositionals: false,
      strict: true,
    }).values;
  } catch (e) {
    usage(e.message);
  }
  if (parsed.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (parsed.version) return { version: true };
  if (!parsed.docs?.length) usage('--docs DIR is required');
  const roots = [...new Set(parsed.docs.map((d) => resolve(d)))];
  for (const root of roots) {
    let info = null;
    try { info = statSync(root); } catch { /* reported below */ }
    if (!info?.isDirectory()) usage(`--docs ${root}: not a folder`);
  }
  if (!['minilm', 'lexical'].includes(parsed.embedder)) usage(`--embedder ${parsed.embedder}: expected minilm or lexical`);
  if (!['compact', 'verbose', 'json'].includes(parsed.format)) usage(`--format ${parsed.format}: expected compact, verbose or json`);
  let port = null;
  if (parsed.http !== undefined) {
    port = Number(parsed.http);
    if (!/^\d+$/.test(parsed.http) || port > 65535) usage(`--http ${parsed.http}: expected a port number (0-65535)`);
  }
  return {
    roots,
    indexFile: resolve(parsed.index ?? join(roots[0], '.condense', 'index.cndx')),
    embedder: parsed.embedder,
    format: parsed.format,
    port,
    ignore: parsed.ignore,
  };
}

async function main() {
  const opts = options(process.argv.slice(2));
  // The package (wasm) and the SDK load only now: --help and usage errors answer at once.
  const { version } = await import('../node.js');
  if (opts.version) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const { Library } = await import('./library.js');
  const { createTools } = await import('./tools.js');
  const { serveHttp, serveStdio } = await import('./server.js');
  const say = (text) => process.stderr.write(`condense-ctx mcp: ${text}\n`);

  const library = new Library({ roots: opts.roots, indexFile: opts.indexFile, ignore: opts.ignore, embedder: opts.embedder });
  library.on('notice', say);
  // The model loads and the index opens while the server already answers `initialize`.
  library.open().catch((e) => {
    say(`cannot start: ${e.stack ?? e}`);
    process.exit(1);
  });
  const tools = createTools(library, { format: opts.format });

  let stopping = false;
  let stopServer = async () => {};
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stopServer();
    await library.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  if (opts.port !== null) {
    const http = await serveHttp(library, tools, opts.port);
    stopServer = async () => {
      await http.closeSessions();
      await new Promise((done) => http.close(done));
    };
    say(`listening on http://127.0.0.1:${http.address().port}/mcp (embedder ${library.embedder}; index ${library.indexFile})`);
  } else {
    const { server } = await serveStdio(library, tools);
    stopServer = () => server.close();
    // The client closing stdin ends the session.
    process.stdin.on('end', stop);
    process.stdin.on('close', stop);
    say(`serving on stdio (embedder ${library.embedder}; index ${library.indexFile})`);
  }
}

main().catch((e) => {
  process.stderr.write(`condense-ctx mcp: ${e.stack ?? e}\n`);
  process.exit(1);
});
