/**
 * bench/demo-screenshot — the README's dashboard picture, from `ratekeeper demo` itself: starts the demo, lets
 * its traffic run `seconds` (default 45: past the 40 s where the time axis used to run together), opens the dashboard
 * in Debian's headless Chromium at 1400 × 900 and saves docs/img/demo-dashboard.png. It also prints the chart
 * legend's text (values, not `--`). Not a test or a benchmark (nothing runs it for you; under test/ the test runner would): run it by hand after a change to the page:
 *   npx tsc -p tsconfig.json && node dist/bench/demo-screenshot.js [seconds]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runServiceDemo } from '../src/server/demo.js';

declare const document: any; // eslint-disable-line @typescript-eslint/no-explicit-any

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const seconds = Number(process.argv[2] ?? 45);
const demo = await runServiceDemo({ port: 0, print: () => undefined });
const profile = mkdtempSync(join(tmpdir(), 'rk-chromium-'));
try {
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(demo.url);
    await page.waitForFunction(() => document.querySelector('#top tbody tr') !== null, undefined, { timeout: 20_000 });
    await page.waitForTimeout(3000);
    const legend = await page.evaluate(() => document.querySelector('.u-legend')?.textContent ?? '(no legend)');
    process.stdout.write(`legend: ${legend}\n`);
    await page.screenshot({ path: join(root, 'docs/img/demo-dashboard.png'), fullPage: false });
    process.stdout.write('wrote docs/img/demo-dashboard.png\n');
  } finally {
    await context.close();
  }
} finally {
  await demo.close();
  rmSync(profile, { recursive: true, force: true });
}
