// The SDK's own Client connected to `condense-ctx mcp` (the installed bin) over stdio or
// Streamable HTTP. Used by tests/mcp/*.test.mjs and bench/mcp.mjs.
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

export { Client, StdioClientTransport, StreamableHTTPClientTransport };

function newClient() {
  const client = new Client({ name: 'condense-tests', version: '1.0.0' });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
  return { client, logs };
}

/**
 * Starts `bin mcp ...args` as the Client's stdio server (the bin itself is the command: its
 * shebang and mode are exercised). Resolves to `{ client, logs, stderr(), close() }`.
 */
export async function connectStdio(bin, args, { cwd, env } = {}) {
  const transport = new StdioClientTransport({ command: bin, args: ['mcp', ...args], cwd, env: { ...process.env, ...env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (b) => { stderr += b; });
  const { client, logs } = newClient();
  try {
    await client.connect(transport);
  } catch (e) {
    await new Promise((done) => setTimeout(done, 100));
    throw new Error(`${e.message}; the server said:\n${stderr}`);
  }
  // Every progress notification as it came off the wire, in order. The SDK's client hands a
  // notification to its handler a microtask late (Protocol._onnotification) but takes a response
  // at once and drops the request's progress handler (_onresponse): notifications that arrive
  // in the same read as the response never reach `onprogress`. What the server sent is this.
  const progress = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message?.method === 'notifications/progress') progress.push(message.params);
    deliver?.(message, extra);
  };
  return {
    client,
    logs,
    transport,
    progress,
    stderr: () => stderr,
    close: () => client.close(),
  };
}

/**
 * Starts `bin mcp ...args --http 0` and connects to the URL it prints. Resolves to
 * `{ client, logs, url, process, stderr(), close() }`; close() ends the session and stops the
 * server with SIGTERM, resolving to its exit code.
 */
export async function connectHttp(bin, args, { cwd, env } = {}) {
  const child = spawn(bin, ['mcp', ...args, '--http', '0'], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL from the server within 60 s:\n${stderr}`)), 60_000);
    child.stderr.on('data', (b) => {
      stderr += b;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the server exited (${code}):\n${stderr}`)); });
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const { client, logs } = newClient();
  await client.connect(transport);
  return {
    client,
    logs,
    url,
    process: child,
    transport,
    stderr: () => stderr,
    async close() {
      await transport.terminateSession().catch(() => {});
      await client.close();
      child.kill('SIGTERM');
      return exited;
    },
  };
}
