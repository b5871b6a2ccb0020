#!/usr/bin/env node
// A dependency-free static file server for the demo page: serves the repository root (so the page
// at /www/ finds the package at /pkg/ and the docs it indexes), with the right MIME type for .wasm
// (WebAssembly.instantiateStreaming needs `application/wasm`).
//
//   node www/serve.mjs [--port 8000] [--host 127.0.0.1]     then open http://127.0.0.1:8000/www/
//
// Also imported by the end-to-end tests (`serve({port: 0})` picks a free port).
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.md': 'text/markdown; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
  '.onnx': 'application/octet-stream',
};

/**
 * Starts the server; resolves to `{url, server, close()}` once it listens.
 * `log(line)` receives one line per request (default: none); `headers` are added to every
 * response (bench/browser.mjs sets COOP/COEP for performance.measureUserAgentSpecificMemory).
 */
export function serve({ port = 8000, host = '127.0.0.1', root = ROOT, log, headers = {} } = {}) {
  const server = createServer(async (req, res) => {
    let path;
    try {
      path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400).end('bad request');
      return;
    }
    let file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end('forbidden');
      return;
    }
    try {
      let info = await stat(file);
      if (info.isDirectory()) {
        if (!path.endsWith('/')) {
          res.writeHead(301, { location: `${path}/` }).end();
          return;
        }
        file = join(file, 'index.html');
        info = await stat(file);
      }
      const body = await readFile(file);
      res.writeHead(200, {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'content-length': body.length,
        'cache-control': 'no-cache',
        ...headers,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      log?.(`200 ${path}`);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${path}`);
      log?.(`404 ${path}`);
    }
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      const { port: p } = server.address();
      ok({ url: `http://${host}:${p}`, server, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : dflt;
  };
  const { url } = await serve({ port: Number(arg('--port', 8000)), host: arg('--host', '127.0.0.1') });
  console.log(`condense demo: ${url}/www/   (serving ${ROOT}; Ctrl-C stops)`);
}
