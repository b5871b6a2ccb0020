// The MCP wiring of `condense-ctx mcp`, on the official TypeScript SDK: one SDK Server per
// connection over the shared library and tools, on stdio or on Streamable HTTP (127.0.0.1 only).
//
// The SDK's low-level `Server` is used (not `McpServer`) because the tools are declared with
// hand-written JSON Schemas and their arguments are checked by tools.js, so that a bad argument
// comes back as a tool error with condense's code and the argument's path.
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { version } from '../node.js';

/** What the client tells its model about this server (the initialize result's `instructions`). */
export function instructions(library) {
  const embedder = library.embedder === 'minilm'
    ? 'Ranking: BM25 and MiniLM embeddings, fused.'
    : 'Ranking: BM25 and hashed n-grams (the lexical embedder: exact words matter, synonyms do not).';
  return [
    `Search the markdown and text files under ${library.roots.join(', ')}.`,
    'query_documents_compressed finds passages with few tokens (low scores dropped, duplicates merged, at most 2 per document, results of factual queries cut; expand_chunk(chunk_id) gives a full chunk).',
    'query_documents returns the top_n chunks in full. list_documents shows what is indexed; add_documents and remove_documents change it.',
    'The index follows edits to the files by itself.',
    embedder,
    ...library.notices.map((n) => `Note: ${n}`),
  ].join(' ');
}

/**
 * An SDK Server with the tools. Progress of indexing reaches a tool call that sent a
 * `progressToken` (while it waits for indexing, or while add_documents embeds); notices from the
 * library go out as logging messages (`warning`).
 */
export function createMcpServer(library, tools) {
  const server = new Server(
    { name: 'condense-ctx', title: 'condense documents', version: version() },
    { capabilities: { tools: {}, logging: {} }, instructions: instructions(library) },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.definitions }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    if (!tools.definitions.some((d) => d.name === name)) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name} (tools: ${tools.definitions.map((d) => d.name).join(', ')})`);
    }
    const token = request.params._meta?.progressToken;
    let stop = () => {};
    if (token !== undefined) {
      // Progress only grows within one request: a second indexing job continues the count.
      let base = 0;
      let last = -1;
      const listener = (p) => {
        if (p.start && last >= 0) base = last;
        const progress = base + p.progress;
        if (progress <= last) return;
        last = progress;
        extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: base + p.total, message: p.message } }).catch(() => {});
      };
      library.on('progress', listener);
      stop = () => library.off('progress', listener);
    }
    try {
      return await tools.call(name, args);
    } finally {
      stop();
    }
  });
  const onNotice = (text) => { server.sendLoggingMessage({ level: 'warning', logger: 'condense', data: text }).catch(() => {}); };
  library.on('notice', onNotice);
  server.onclose = () => library.off('notice', onNotice);
  return server;
}

/** Serves on stdin/stdout; resolves to the transport (its `onclose` is when the client went away). */
export async function serveStdio(library, tools) {
  const server = createMcpServer(library, tools);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  return { server, transport };
}

const LOCAL = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Whether a request's Host (and Origin, if any) name this machine: no DNS rebinding. */
function local(req) {
  const host = req.headers.host;
  if (!host) return false;
  try {
    if (!LOCAL.has(new URL(`http://${host}`).hostname)) return false;
    const origin = req.headers.origin;
    return origin === undefined || LOCAL.has(new URL(origin).hostname);
  } catch {
    return false;
  }
}

function reject(res, status, message, code = -32000) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (b) => parts.push(b));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Serves Streamable HTTP at `http://127.0.0.1:PORT/mcp` (port 0: any free port), one session
 * (SDK Server and transport) per client. Resolves to the node:http server once it listens.
 */
export async function serveHttp(library, tools, port) {
  const sessions = new Map();
  const http = createHttpServer(async (req, res) => {
    try {
      if (!local(req)) return reject(res, 403, 'Forbidden: the Host and Origin must be 127.0.0.1 or localhost');
      if (new URL(req.url, 'http://127.0.0.1').pathname !== '/mcp') return reject(res, 404, 'Not found: the MCP endpoint is /mcp');
      const id = req.headers['mcp-session-id'];
      const session = typeof id === 'string' ? sessions.get(id) : undefined;
      if (typeof id === 'string' && !session) return reject(res, 404, 'Session not found');
      if (req.method === 'POST') {
        let body;
        try {
          body = JSON.parse(await readBody(req));
        } catch {
          return reject(res, 400, 'Parse error: the body is not JSON', ErrorCode.ParseError);
        }
        if (session) return await session.transport.handleRequest(req, res, body);
        if (!isInitializeRequest(body)) return reject(res, 400, 'Bad Request: no Mcp-Session-Id header (initialize first)');
        const server = createMcpServer(library, tools);
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (sid) => { sessions.set(sid, { server, transport }); },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await server.connect(transport);
        return await transport.handleRequest(req, res, body);
      }
      if (req.method === 'GET' || req.method === 'DELETE') {
        if (!session) return reject(res, 400, 'Bad Request: no Mcp-Session-Id header');
        return await session.transport.handleRequest(req, res);
      }
      res.setHeader('allow', 'GET, POST, DELETE');
      return reject(res, 405, 'Method not allowed');
    } catch (e) {
      if (!res.headersSent) reject(res, 500, `Internal error: ${e.message}`, ErrorCode.InternalError);
      else res.end();
    }
  });
  await new Promise((resolve, fail) => {
    http.once('error', fail);
    http.listen(port, '127.0.0.1', resolve);
  });
  http.closeSessions = async () => {
    for (const { server } of sessions.values()) await server.close().catch(() => {});
    sessions.clear();
  };
  return http;
}
