// What the npm package costs its users: tarball and install size, bundle sizes (JS + wasm, raw,
// gzip and brotli) for a page built with esbuild and with Vite, and the time to first result in
// Node (fresh processes: import, first compress, first query, createWorker ready).
//
//   scripts/build-pkg --dist && node bench/package-size.mjs [--runs 7] [--json out.json]
//
// Uses esbuild and Vite from tests/hosts/node_modules (npm ci there; scripts/setup does it).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { seedDependencies } from '../tests/mcp/app.mjs';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const runs = Number(opt('--runs', 7));
const jsonOut = opt('--json', null);
const hostsRequire = createRequire(join(root, 'tests/hosts/package.json'));
const load = async (name) => import(pathToFileURL(hostsRequire.resolve(name)).href);

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
const sizes = (buf) => ({
  raw: buf.length,
  gzip: gzipSync(buf, { level: 9 }).length,
  brotli: brotliCompressSync(buf, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function du(dir) {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    total += e.isDirectory() ? du(p) : statSync(p).size;
  }
  return total;
}
function files(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name));
}

const report = { node: process.version };
const tmp = mkdtempSync(join(tmpdir(), 'condense-size-'));
try {
  // ---------------------------------------------------------------- tarball and install
  const pkgJson = JSON.parse(readFileSync(join(root, 'pkg/package.json'), 'utf8'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', tmp, join(root, 'pkg')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))[0];
  const app = join(tmp, 'app');
  cpSync(join(root, 'tests/hosts/app/web'), join(app, 'web'), { recursive: true });
  cpSync(join(root, 'tests/hosts/fixtures'), join(tmp, 'fixtures'), { recursive: true });
  writeFileSync(join(app, 'package.json'), '{"name":"app","private":true,"version":"1.0.0"}');
  // The mcp bin's dependencies, as the registry gives them (offline: from tests/mcp).
  seedDependencies(app);
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', join(tmp, packed.filename)], { cwd: app, stdio: 'ignore' });
  const installed = join(app, 'node_modules/condense-ctx');
  const modelBytes = files(installed).filter((f) => relative(installed, f).startsWith('models')).reduce((s, f) => s + statSync(f).size, 0);
  report.package = {
    version: pkgJson.version,
    tarball: packed.size,
    unpacked: packed.unpackedSize,
    files: packed.entryCount,
    installed: du(installed),
    installedWithDependencies: du(join(app, 'node_modules')),
    models: modelBytes,
    dependencies: Object.keys(pkgJson.dependencies ?? {}).length,
  };
  report.wasm = sizes(readFileSync(join(installed, 'condense_bg.wasm')));

  // ---------------------------------------------------------------- bundles
  const esbuild = await load('esbuild');
  const eOut = join(app, 'dist-esbuild');
  // Two pages: one function, and every export (the worker client and adapters included).
  writeFileSync(join(app, 'web/compress-only.js'), "import { compress } from 'condense-ctx';\nconsole.log(compress([{ role: 'user', content: 'hi' }]).stats);\n");
  writeFileSync(join(app, 'web/all-exports.js'), "import * as condense from 'condense-ctx';\nconsole.log(Object.keys(condense), condense.createWorker);\n");
  writeFileSync(join(app, 'web/index.html'), '<!doctype html><script type="module" src="./all-exports.js"></script>');
  await esbuild.build({
    absWorkingDir: join(app, 'web'),
    entryPoints: ['compress-only.js', 'all-exports.js', { in: 'condense-ctx/worker', out: 'condense-worker' }],
    bundle: true, minify: true, format: 'esm', platform: 'browser', outdir: eOut, logLevel: 'error',
  });
  report.esbuild = Object.fromEntries(['compress-only.js', 'all-exports.js', 'condense-worker.js'].map((f) => [f, sizes(readFileSync(join(eOut, f)))]));
  const vite = await load('vite');
  const vOut = join(app, 'dist-vite');
  await vite.build({ root: join(app, 'web'), configFile: false, logLevel: 'error', build: { outDir: vOut, emptyOutDir: true } });
  const vFiles = files(vOut).filter((f) => /\.(js|wasm)$/.test(f));
  const vJs = vFiles.filter((f) => f.endsWith('.js'));
  report.vite = {
    files: Object.fromEntries(vFiles.map((f) => [relative(vOut, f), sizes(readFileSync(f))])),
    js: sizes(Buffer.concat(vJs.map((f) => readFileSync(f)))),
  };

  // ---------------------------------------------------------------- time to first result
  const probe = join(app, 'first-result.mjs');
  writeFileSync(probe, `
    const t0 = performance.now();
    const c = await import('condense-ctx');
    const t1 = performance.now();
    const { readFileSync } = await import('node:fs');
    const body = readFileSync(process.argv[2], 'utf8');
    const messages = JSON.parse(body).messages;
    const out = c.compress(messages);
    const t2 = performance.now();
    const docs = JSON.parse(readFileSync(process.argv[3], 'utf8'));
    const index = c.Index.create();
    index.add(docs);
    const hits = index.query('How do I stay updated on programming tools?').results.length;
    const t3 = performance.now();
    const w = await c.createWorker();
    const t4 = performance.now();
    await w.compress(messages);
    const t5 = performance.now();
    await w.terminate();
    console.log(JSON.stringify({ import: t1 - t0, compress: t2 - t1, indexAndQuery: t3 - t2, workerReady: t4 - t3, workerCompress: t5 - t4, hits, ratio: out.stats.ratio }));
  `);
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [probe, join(tmp, 'fixtures/anthropic-request.json'), join(app, 'web/corpus.json')], { cwd: app, encoding: 'utf8' });
    const wall = Number(process.hrtime.bigint() - start) / 1e6;
    if (r.status !== 0) throw new Error(r.stderr);
    samples.push({ ...JSON.parse(r.stdout), process: wall });
  }
  report.nodeFirstResult = Object.fromEntries(Object.keys(samples[0]).filter((k) => k !== 'hits' && k !== 'ratio').map((k) => [k, Math.round(median(samples.map((s) => s[k])) * 10) / 10]));
  report.nodeFirstResult.runs = runs;
  report.nodeFirstResult.documents = JSON.parse(readFileSync(join(app, 'web/corpus.json'), 'utf8')).length;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

// ---------------------------------------------------------------- report
const s = (x) => `${kb(x.raw)} raw, ${kb(x.gzip)} gzip, ${kb(x.brotli)} brotli`;
const p = report.package;
console.log(`condense-ctx ${p.version} (${report.node})`);
console.log(`  tarball            ${kb(p.tarball)} (${p.files} files), unpacked ${kb(p.unpacked)}, installed ${kb(p.installed)} (${kb(p.installedWithDependencies)} with the ${p.dependencies} dependencies of the mcp bin), models ${kb(p.models)}`);
console.log(`  condense_bg.wasm   ${s(report.wasm)}`);
for (const [f, x] of Object.entries(report.esbuild)) console.log(`  esbuild ${f.padEnd(18)} ${s(x)} (minified JS, + the wasm)`);
console.log(`  vite (every export, createWorker's worker included): all JS ${s(report.vite.js)} (+ the wasm)`);
const t = report.nodeFirstResult;
console.log(`  Node, fresh process (median of ${t.runs}): import ${t.import} ms; first compress ${t.compress} ms; index ${t.documents} docs + first query ${t.indexAndQuery} ms; createWorker ready ${t.workerReady} ms, first worker compress ${t.workerCompress} ms; whole process ${t.process} ms`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2) + '\n');
