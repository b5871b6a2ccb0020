// The MiniLM engine's footprint in Chromium (issue 30), Debian's Chromium driven by
// playwright-core from tests/e2e (scripts/setup installs both), each run cold (a fresh browser
// context):
//
//   bench/browser/embed-footprint.html: the package's browser entry, loadEmbedder(), a
//   60-section markdown page indexed, one query; times from navigation start, the engine's wasm
//   memory (memory.buffer.byteLength) after the load and after indexing.
//
//   node bench/embed_footprint_chromium.mjs [--runs 3] [--base DIR]      (after scripts/build-pkg)
//
// With --base DIR (another build of the package), the page runs alternate between the two and the
// table gives each run's ratio. Output: a Markdown table on stdout and
// bench/out/embed-footprint-chromium.json.
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serve } from '../www/serve.mjs';
import { ARGS, EXECUTABLE, ROOT, chromium } from '../tests/e2e/chromium.mjs';
import { syntheticCorpus } from './synthetic.mjs';

const args = process.argv.slice(2);
const arg = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const runs = Number(arg('--runs', '3'));
const base = arg('--base', null);
const MiB = 1024 * 1024;
const mib = (b) => (b / MiB).toFixed(1);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const here = (p) => new URL(p, import.meta.url).pathname;
if (!existsSync(join(ROOT, 'pkg', 'models', 'model.onnx'))) throw new Error('pkg/ with models/ is missing: scripts/build-pkg');

// The page: 60 sections of 4-8 sentences of the dev IR corpus (bench/synthetic.mjs), each a chunk.
const corpus = syntheticCorpus();
const sections = corpus.docs(60).map((d, i) => `## Section ${i + 1}\n\n${d.text}\n`);
const page = `# A page of sixty sections\n\n${sections.join('\n')}`;
const question = corpus.questions(1)[0];
mkdirSync(here('out/'), { recursive: true });
writeFileSync(here('out/embed-footprint-page.md'), page);

// The builds: this one (pkg/) and, with --base, another, served under /base/pkg/.
const site = mkdtempSync(join(tmpdir(), 'condense-footprint-'));
symlinkSync(ROOT, join(site, 'this'));
if (base) {
  mkdirSync(join(site, 'base'));
  symlinkSync(resolve(base), join(site, 'base', 'pkg'));
  symlinkSync(join(ROOT, 'bench'), join(site, 'base', 'bench'));
}
const server = await serve({ port: 0, root: site });
const browser = await chromium.launch({ executablePath: EXECUTABLE, headless: false, args: ARGS });
const version = browser.version();

async function pageRun(build) {
  const context = await browser.newContext();
  const p = await context.newPage();
  const url = `${server.url}/${build}/bench/browser/embed-footprint.html?page=/this/bench/out/embed-footprint-page.md&q=${encodeURIComponent(question)}`;
  await p.goto(url);
  await p.waitForFunction(() => window.result !== undefined, null, { timeout: 300_000 });
  const r = await p.evaluate(() => window.result);
  await context.close();
  if (r.error) throw new Error(`${build}: ${r.error}`);
  return r;
}

const builds = base ? ['base', 'this'] : ['this'];
const pages = Object.fromEntries(builds.map((b) => [b, []]));
for (let r = 0; r < runs; r++) {
  for (const b of r % 2 ? [...builds].reverse() : builds) pages[b].push(await pageRun(b));
}
await browser.close();

await server.close();
rmSync(site, { recursive: true, force: true });

const lines = [];
const say = (s = '') => { lines.push(s); console.log(s); };
say(`Chromium ${version}, ${runs} cold run(s)${base ? ' per build, alternating' : ''}; page: ${pages.this[0].chunks} chunks`);
say();
say('| build | package ready ms | loadEmbedder() ms | + page indexed ms | first result ms | engine wasm MiB after load | after indexing | core wasm MiB |');
say('|---|---|---|---|---|---|---|---|');
for (const b of builds) {
  const m = (f) => median(pages[b].map(f));
  say(`| ${b} | ${m((r) => r.t.module).toFixed(0)} | ${m((r) => r.t.loaded - r.t.module).toFixed(0)} | ${m((r) => r.t.indexed - r.t.fetched).toFixed(0)} | ${m((r) => r.t.first).toFixed(0)} | ${mib(m((r) => r.engineLoaded))} | ${mib(m((r) => r.engineIndexed))} | ${mib(m((r) => r.coreIndexed))} |`);
}
if (base) {
  const ratio = (f) => pages.this.map((r, i) => f(r) / f(pages.base[i]));
  say();
  say(`this/base per run: loadEmbedder() ${ratio((r) => r.t.loaded - r.t.module).map((x) => x.toFixed(2)).join(', ')}; first result ${ratio((r) => r.t.first).map((x) => x.toFixed(2)).join(', ')}`);
}
writeFileSync(here('out/embed-footprint-chromium.json'), JSON.stringify({ chromium: version, runs, pages }, null, 1));
writeFileSync(here('out/embed-footprint-chromium.md'), lines.join('\n') + '\n');
