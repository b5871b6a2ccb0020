// The npm package as users meet it: `npm pack` of pkg/ (scripts/build-pkg), installed offline
// from the tarball into a fresh project, then used with one import from plain Node ESM,
// CommonJS require, worker_threads, a strict TypeScript consumer, the README's examples, the
// agent middleware example, and bundled browser pages (esbuild and Vite) in Debian's Chromium,
// each with a user-written module worker and createWorker().
//
//   tests/hosts/run        (npm ci in tests/hosts first: scripts/setup does it)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedDependencies } from '../mcp/app.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '../..');
const pkgDir = join(root, 'pkg');
const bin = (name) => join(here, 'node_modules', '.bin', name);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

let tmp;
let app;
let tarball;
let browser;

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: app, timeout: 120_000, ...opts });
  if (r.error) throw r.error;
  return r;
}

/** Runs a Node script of the app and returns its JSON output (the last stdout line). */
function nodeJson(script, ...args) {
  const r = run(process.execPath, [script, ...args]);
  assert.equal(r.status, 0, `${script} exited ${r.status}\n${r.stderr}`);
  return { out: JSON.parse(r.stdout.trim().split('\n').at(-1)), stderr: r.stderr };
}

before(() => {
  assert.ok(existsSync(join(pkgDir, 'condense_bg.wasm')), 'pkg/ is not built: run scripts/build-pkg');
  tmp = mkdtempSync(join(tmpdir(), 'condense-hosts-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', tmp, pkgDir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  tarball = { path: join(tmp, packed[0].filename), files: packed[0].files.map((f) => f.path).sort(), size: packed[0].size, unpackedSize: packed[0].unpackedSize };
  app = join(tmp, 'app');
  cpSync(join(here, 'app'), app, { recursive: true });
  cpSync(join(here, 'fixtures'), join(tmp, 'fixtures'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, version: '1.0.0' }, null, 2));
  // Offline, from the tarball: nothing may come from a registry. The dependencies of the mcp bin
  // (which the library entry never loads) are copied in as the registry would give them.
  seedDependencies(app);
  const r = run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', tarball.path]);
  assert.equal(r.status, 0, `npm install of the tarball failed:\n${r.stderr}`);
});

after(async () => {
  await browser?.close();
  if (tmp && !process.env.KEEP_HOSTS_TMP) rmSync(tmp, { recursive: true, force: true });
});

test('the tarball holds exactly the package files, and package.json points at them', () => {
  const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const expected = [...manifest.files, 'package.json'].sort();
  assert.deepEqual(tarball.files.filter((f) => !f.startsWith('models/')), expected.filter((f) => !f.startsWith('models')));
  const targets = [];
  const walk = (v) => (typeof v === 'string' ? targets.push(v) : Object.values(v).forEach(walk));
  walk(manifest.exports);
  walk(manifest.main);
  for (const t of targets.filter((t) => !t.includes('*'))) assert.ok(tarball.files.includes(t.replace(/^\.\//, '')), `exports target ${t} is not in the tarball`);
  assert.ok(existsSync(join(app, 'node_modules', 'condense-ctx', 'condense_bg.wasm')));
});

test('the tarball passes publint and arethetypeswrong (types for import, require and bundlers)', () => {
  const lint = run(bin('publint'), ['--strict', pkgDir]);
  assert.equal(lint.status, 0, lint.stdout + lint.stderr);
  // The module entry points (the .wasm and model files are assets); require() of the ES worker
  // and manual entries is require(esm) (Node 20.19+).
  const attw = run(bin('attw'), [tarball.path, '--format', 'json', '--entrypoints', '.', './worker', './manual', './pg', '--ignore-rules', 'cjs-resolves-to-esm']);
  const report = JSON.parse(attw.stdout);
  assert.deepEqual(Object.keys(report.analysis.entrypoints), ['.', './worker', './manual', './pg']);
  const problems = Object.values(report.problems ?? {}).flat()
    .filter((p) => !(p.kind === 'CJSResolvesToESM' && (p.entrypoint === './worker' || p.entrypoint === './manual' || p.entrypoint === './pg')));
  assert.deepEqual(problems, [], attw.stdout);
  assert.equal(attw.status, 0, attw.stdout + attw.stderr);
});

test('Node ESM: one import', () => {
  const { out } = nodeJson('esm.mjs', join(tmp, 'fixtures', 'anthropic-request.json'));
  assert.match(out.version, /^\d+\.\d+\.\d+/);
  assert.ok(out.ratio > 1, `compress ratio ${out.ratio}`);
  assert.equal(out.watermark, 'toolu_01awmPidpl5GFF4SPWD7TVRL');
  assert.ok(out.saved > 0);
  assert.equal(out.hit, 'a');
  assert.deepEqual(out.error, { isCondenseError: true, code: 'invalid_input', path: 'messages' });
});

test('CommonJS require: same module instance as import, no warning', () => {
  const { out, stderr } = nodeJson('cjs.cjs');
  assert.equal(out.messages, 2);
  assert.deepEqual(out.error, { isCondenseError: true, code: 'invalid_input', path: 'messages' });
  assert.equal(out.sameInstance, true, 'require and import must give one instance');
  for (const name of ['compress', 'applyWatermark', 'Index', 'createWorker', 'prepareRequest', 'CondenseError']) {
    assert.ok(out.exports.includes(name), `require() lacks ${name}`);
  }
  assert.doesNotMatch(stderr, /Warning/, stderr);
});

test('Node worker_threads: createWorker with progress, errors and a free main thread', () => {
  const corpus = JSON.parse(readFileSync(join(app, 'web', 'corpus.json'), 'utf8'));
  const docs = Array.from({ length: 8 }, (_, k) => corpus.map((d) => ({ ...d, id: `${d.id}#${k}` }))).flat();
  writeFileSync(join(tmp, 'docs.json'), JSON.stringify(docs));
  const t0 = Date.now();
  const { out } = nodeJson('worker-node.mjs', join(tmp, 'docs.json'));
  assert.ok(Date.now() - t0 < 60_000, 'the process did not exit promptly without terminate()');
  assert.equal(out.added, docs.length);
  assert.equal(out.size, docs.length);
  assert.ok(out.chunks >= docs.length);
  const phases = [...new Set(out.progress.map((p) => p.phase))];
  assert.deepEqual(phases.filter((p) => p !== 'index'), ['chunk', 'embed']);
  const last = out.progress.at(-1);
  assert.equal(last.done, last.total);
  assert.ok(out.results > 0);
  assert.deepEqual(out.errors, [
    { isCondenseError: true, code: 'invalid_input', path: 'messages' },
    { isCondenseError: true, code: 'invalid_options', path: 'options.bogus' },
    { isCondenseError: true, code: 'invalid_input', path: 'question' },
  ]);
  assert.ok(out.bytes > 0 && out.sameSize);
  assert.deepEqual(out.afterFree, { code: 'invalid_state', path: 'index' });
  // The main thread kept ticking while the worker indexed; the same work here blocks it.
  console.log(`worker_threads: indexing ${out.workerMs.toFixed(0)} ms in the worker, longest main-thread gap ${out.maxGap.toFixed(0)} ms; on the main thread it blocks ${out.blockedMs.toFixed(0)} ms`);
  assert.ok(out.ticks > 0, 'no timer tick while the worker indexed');
  assert.ok(out.maxGap < Math.max(150, out.blockedMs / 2), `main thread stalled ${out.maxGap} ms (indexing blocks ${out.blockedMs} ms)`);
});

test('TypeScript: the strict consumer compiles, a wrong one does not', () => {
  const ok = run(bin('tsc'), ['-p', 'tsconfig.json']);
  assert.equal(ok.status, 0, `tsc failed on consumer.mts or cjs-consumer.cts:\n${ok.stdout}${ok.stderr}`);
  const bad = run(bin('tsc'), ['-p', 'tsconfig.bad.json']);
  assert.notEqual(bad.status, 0, 'bad.ts compiled');
  assert.match(bad.stdout, /recencyWindw/);
  assert.match(bad.stdout, /bad\.ts\(4,/);
});

/** The ```js blocks of a markdown file. */
const jsBlocks = (text) => [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);

function runBlocks(name, blocks, prelude) {
  blocks.forEach((code, i) => {
    const file = join(app, `${name}-${i}.mjs`);
    writeFileSync(file, prelude + code);
    const r = run(process.execPath, [file], { cwd: app });
    assert.equal(r.status, 0, `${name} example ${i} failed:\n${code}\n${r.stderr}`);
  });
}

test("the package README's JS examples run as they are", () => {
  const blocks = jsBlocks(readFileSync(join(app, 'node_modules', 'condense-ctx', 'README.md'), 'utf8'));
  assert.ok(blocks.length >= 3, `only ${blocks.length} js blocks in the package README`);
  runBlocks('pkg-readme', blocks, '');
});

test("the repository README's JS examples run (with the fixtures' request, messages, docs)", () => {
  const blocks = jsBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
  assert.ok(blocks.length >= 3, `only ${blocks.length} js blocks in README.md`);
  runBlocks('readme', blocks, "import './readme-prelude.mjs';\n");
});

test('examples/agent-middleware.mjs on recorded request bodies', () => {
  cpSync(join(root, 'examples', 'agent-middleware.mjs'), join(app, 'agent-middleware.mjs'));
  for (const provider of ['anthropic', 'openai']) {
    const r = run(process.execPath, ['agent-middleware.mjs', join(tmp, 'fixtures', `${provider}-request.json`)]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    const calls = lines.filter((l) => l.startsWith('call '));
    assert.ok(calls.length >= 3, r.stdout);
    const total = lines.find((l) => l.startsWith('total'));
    const [, before, after] = total.match(/total: ([\d,]+) → ([\d,]+) characters/).map((x) => Number(String(x).replace(/,/g, '')));
    assert.ok(after < before, total);
    assert.match(r.stdout, /every request valid: yes/);
  }
});

// ------------------------------------------------------------------ browsers

const MIME = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.css': 'text/css' };

/** Serves `dir` on 127.0.0.1; resolves to its base URL and a close function. */
function serve(dir) {
  const server = createServer((req, res) => {
    const path = join(dir, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'index.html') : path;
    if (!file.startsWith(dir) || !existsSync(file)) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': MIME[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() })));
}

async function openPage(dir, file = '', url = null, { allowMissing = [] } = {}) {
  if (!browser) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }
  const server = url ? { url, close() {} } : await serve(dir);
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  const missing = [];
  const expected = ['/favicon.ico', ...allowMissing];
  page.on('response', (r) => { if (r.status() >= 400 && !expected.some((p) => r.url().endsWith(p))) missing.push(`${r.status()} ${r.url()}`); });
  try {
    await page.goto(server.url + file);
    await page.waitForFunction(() => window.__condense || window.__condenseError, null, { timeout: 60_000 })
      .catch((e) => { throw new Error(`${e.message}\npage console:\n${logs.join('\n')}\nfailed requests: ${missing.join(', ')}`); });
    const error = await page.evaluate(() => window.__condenseError);
    assert.equal(error, undefined, `${error}\n${logs.join('\n')}`);
    assert.deepEqual(missing, [], 'failed requests');
    return { result: await page.evaluate(() => window.__condense), logs, requests };
  } finally {
    await page.close();
    server.close();
  }
}

function checkPage({ result, logs, requests }) {
  const { main, userWorker, worker } = result;
  assert.ok(main.ratio > 1);
  assert.equal(main.watermark, 'toolu_01awmPidpl5GFF4SPWD7TVRL');
  assert.ok(main.saved > 0);
  assert.deepEqual(main.error, { isCondenseError: true, code: 'invalid_options', path: 'options.recencyWindow' });
  if (userWorker !== undefined) {
    assert.equal(userWorker.version, main.version);
    assert.ok(userWorker.ratio > 1);
  }
  assert.equal(worker.added, 39 * 8);
  assert.deepEqual(worker.phases.filter((p) => p !== 'index'), ['chunk', 'embed']);
  assert.equal(worker.last.done, worker.last.total);
  assert.ok(worker.results > 0);
  assert.deepEqual(worker.error, { isCondenseError: true, code: 'invalid_options', path: 'options.recencyWindow' });
  assert.equal(worker.saved, main.saved, 'the worker and the page disagree');
  assert.equal(worker.afterTerminate, 'invalid_state');
  console.log(`page: indexing ${worker.workerMs.toFixed(0)} ms in the worker, longest main-thread gap ${worker.maxGap.toFixed(0)} ms; on the page it blocks ${worker.blockedMs.toFixed(0)} ms`);
  assert.ok(worker.maxGap < Math.max(150, worker.blockedMs / 2), `page stalled ${worker.maxGap} ms while the worker indexed (indexing on the page blocks ${worker.blockedMs} ms)`);
  // The wasm was fetched with the right type (instantiateStreaming, no fallback warning), only from this origin.
  assert.ok(!logs.some((l) => /application\/wasm|MIME/i.test(l)), logs.join('\n'));
  assert.ok(requests.every((u) => u.startsWith('http://127.0.0.1:')), requests.join('\n'));
  assert.ok(requests.some((u) => u.endsWith('.wasm')));
}

test('no bundler in Chromium: the installed package served as is, an import map, createWorker(), embedParallel', async () => {
  const { result } = await openPage(app, 'plain.html', null, { allowMissing: ['/no-such-worker.js'] });
  assert.ok(result.main > 1);
  assert.equal(result.inWorker, result.main);
  assert.equal(result.added, 2);
  assert.deepEqual(result.phases.filter((p) => p !== 'index'), ['chunk', 'embed']);
  assert.equal(result.hit, 'a');
  assert.deepEqual(result.missing, { isCondenseError: true, code: 'invalid_state', path: 'worker' });
  assert.equal(result.parallelSame, true, 'embedParallel over two Web Workers gives embed\'s vectors in order');
});

test('esbuild bundle in Chromium: page, user worker, createWorker({worker})', async () => {
  const esbuild = await import('esbuild');
  const out = join(app, 'dist-esbuild');
  await esbuild.build({
    absWorkingDir: join(app, 'web'),
    entryPoints: [
      'main-user.js',
      'my-worker.js',
      // createWorker's worker, bundled as an entry of its own (esbuild does not follow new Worker(new URL(...))).
      { in: 'condense-ctx/worker', out: 'condense-worker' },
    ],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    outdir: out,
    logLevel: 'error',
  });
  // The one documented step: the .wasm beside the bundle (the package fetches new URL('./condense_bg.wasm', import.meta.url)).
  cpSync(join(app, 'node_modules', 'condense-ctx', 'condense_bg.wasm'), join(out, 'condense_bg.wasm'));
  writeFileSync(join(out, 'index.html'), readFileSync(join(app, 'web', 'user-worker.html'), 'utf8')
    .replace('<script type="module"', '<script>window.CONDENSE_WORKER = "./condense-worker.js";</script>\n<script type="module"'));
  const page = await openPage(out);
  assert.ok(page.result.userWorker, 'the user worker did not run');
  checkPage(page);
});

test('Vite build in Chromium: no configuration, createWorker() without options', async () => {
  const { build } = await import('vite');
  const out = join(app, 'dist-vite');
  await build({ root: join(app, 'web'), configFile: false, logLevel: 'error', build: { outDir: out, emptyOutDir: true } });
  const assets = readdirSync(join(out, 'assets'));
  assert.ok(assets.some((f) => f.endsWith('.wasm')), `no .wasm emitted: ${assets}`);
  checkPage(await openPage(out));
});

test("Vite build in Chromium: a user's module worker importing the package, with worker.format 'es'", async () => {
  const { build } = await import('vite');
  const out = join(app, 'dist-vite-user');
  // The one documented option: a worker that imports the package needs ES output (top-level await).
  await build({
    root: join(app, 'web'), configFile: false, logLevel: 'error', worker: { format: 'es' },
    build: { outDir: out, emptyOutDir: true, rollupOptions: { input: join(app, 'web', 'user-worker.html') } },
  });
  const page = await openPage(out, 'user-worker.html');
  assert.ok(page.result.userWorker, 'the user worker did not run');
  checkPage(page);
});

test('Vite dev server in Chromium: no configuration, a user worker and createWorker()', async () => {
  const { createServer: createViteServer } = await import('vite');
  const server = await createViteServer({
    root: join(app, 'web'), configFile: false, logLevel: 'error', cacheDir: join(app, '.vite-cache'),
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false },
  });
  await server.listen();
  try {
    const page = await openPage(null, '', `${server.resolvedUrls.local[0]}user-worker.html`);
    assert.ok(page.result.userWorker, 'the user worker did not run');
    checkPage(page);
  } finally {
    await server.close();
  }
});
