// Shared by the end-to-end tests: Debian's Chromium driven by playwright-core (which never
// downloads a browser: it is given the executable), the demo's static server, the artifacts folder.
import { chromium } from 'playwright-core';

export { chromium };
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const ARTIFACTS = join(ROOT, 'tests', 'artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

export const EXECUTABLE = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const ARGS = [
  '--no-sandbox', '--headless=new', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run',
];

function checkExecutable() {
  assert.ok(existsSync(EXECUTABLE), `${EXECUTABLE} is missing: run scripts/setup (apt chromium)`);
}

/** A browser for pages; asserts that it really is a running Chromium. */
export async function launch() {
  checkExecutable();
  const browser = await chromium.launch({ executablePath: EXECUTABLE, headless: false, args: ARGS });
  assert.match(browser.version(), /^\d+\./, 'Chromium did not report a version');
  return browser;
}

/** A persistent context with the unpacked extension at `dir` loaded; `{context, extensionId, close}`. */
export async function launchWithExtension(dir) {
  checkExecutable();
  const profile = mkdtempSync(join(tmpdir(), 'condense-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: EXECUTABLE,
    headless: false, // the new headless mode comes from ARGS: MV3 extensions need it
    ignoreDefaultArgs: ['--disable-extensions'],
    args: [...ARGS, `--disable-extensions-except=${dir}`, `--load-extension=${dir}`],
    viewport: { width: 480, height: 720 },
  });
  let [worker] = context.serviceWorkers();
  worker ??= await context.waitForEvent('serviceworker', { timeout: 20_000 });
  const url = new URL(worker.url());
  assert.equal(url.protocol, 'chrome-extension:', `unexpected service worker ${worker.url()}`);
  return {
    context,
    worker,
    extensionId: url.host,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Collects uncaught errors, console errors and the glue's instantiateStreaming fallback warning. */
export function watchErrors(page, { ignore = [] } = {}) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // The wasm-bindgen glue warns when it falls back from instantiateStreaming (wrong MIME type).
    const bad = m.type() === 'error' || (m.type() === 'warning' && /instantiateStreaming/.test(m.text()));
    if (bad && !ignore.some((re) => re.test(m.text()))) errors.push(`console ${m.type()}: ${m.text()}`);
  });
  return errors;
}
