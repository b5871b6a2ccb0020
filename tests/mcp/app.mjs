// The package as `npx condense-ctx mcp` gets it: pkg/ (scripts/build-pkg) packed and installed
// from the tarball into a fresh project, offline. The bin's dependencies come from this folder's
// node_modules (`npm ci` here, by scripts/setup: the same packages, pinned, that the registry
// gives a user), copied into the project first, so npm finds them installed.
// Used by tests/mcp/*.test.mjs and bench/mcp.mjs.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
export const root = resolve(here, '../..');
export const pkgDir = join(root, 'pkg');

/** Packs pkg/ and installs the tarball into `<tmp>/app`: `{ tmp, app, bin, pkg }` (bin: node_modules/.bin/condense-ctx). */
export function installPackage(tmp = mkdtempSync(join(tmpdir(), 'condense-mcp-'))) {
  if (!existsSync(join(pkgDir, 'condense_bg.wasm'))) throw new Error('pkg/ is not built: run scripts/build-pkg');
  if (!existsSync(join(here, 'node_modules', '@modelcontextprotocol', 'sdk'))) throw new Error('tests/mcp: run npm ci here first (scripts/setup does it)');
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', tmp, pkgDir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const tarball = join(tmp, packed[0].filename);
  const app = join(tmp, 'app');
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, version: '1.0.0' }, null, 2));
  seedDependencies(app);
  const r = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', tarball], { cwd: app, encoding: 'utf8', timeout: 180_000 });
  if (r.status !== 0) throw new Error(`npm install of the tarball failed:\n${r.stderr}`);
  return { tmp, app, tarball, bin: join(app, 'node_modules', '.bin', 'condense-ctx'), pkg: join(app, 'node_modules', 'condense-ctx') };
}

/** Copies the mcp entry's dependencies (tests/mcp/node_modules) into a project's node_modules. */
export function seedDependencies(app) {
  cpSync(join(here, 'node_modules'), join(app, 'node_modules'), { recursive: true, verbatimSymlinks: true });
}
