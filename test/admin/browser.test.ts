/**
 * test/admin/browser — the dashboard in a real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core; no browser is downloaded): under live traffic the abuser reaches the top of the table within
 * seconds; a block made from the page with the keyboard makes its next check `blocked`, unblock reverses it; a key
 * that is HTML renders as text and runs nothing; the page breaks none of its own CSP. With UPDATE_SCREENSHOTS=1 it
 * saves the screenshots docs/admin.md shows (docs/img/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { serveAdmin, type AdminServer } from '../../src/admin/index.js';

/** document — the page's, inside the functions evaluated there (this file is compiled without the DOM's types). */
declare const document: any;

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'browser-test-token-0123456789';
const ABUSER = 'bot 203.0.113.7';
const XSS = '<img src=x onerror=alert(1)>';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const shots = process.env.UPDATE_SCREENSHOTS === '1';

describe('the dashboard in Chromium', () => {
  let api: Limiter;
  let login: Limiter;
  let admin: AdminServer;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let traffic: NodeJS.Timeout;
  const dialogs: string[] = [];
  const consoleErrors: string[] = [];

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`the dashboard test needs Debian's Chromium at ${CHROMIUM}: apt-get install chromium (CI installs it in .ci/run)`);
    }
    api = limiter({ rules: [rules.earrrl({ limit: 5, per: '1s', halfLife: '2s', name: 'earrrl 5/s' })], observe: { halfLife: 2000 } });
    login = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '10s', name: '10/10s' })], observe: { halfLife: 2000 } });
    let tick = 0;
    traffic = setInterval(() => {
      tick++;
      for (let u = 0; u < 12; u++) if ((tick + u) % 20 === 0) void api.check(`user:${100 + u}`);
      void api.check(ABUSER); // 20/s, 4× the limit
      if (tick % 5 === 0) void api.check(XSS);
      if (tick % 40 === 0) void login.check('user:100');
    }, 50);
    admin = await serveAdmin({
      limiters: new Map([['api', api], ['login', login]]), port: 0, token: TOKEN, log: () => undefined,
      config: () => ({ text: 'api: earrrl 5/s, half-life 2s\nlogin: fixed window 10/10s\n', loadedAt: Date.now(), files: ['ratekeeper.yaml'] }),
    });
    profile = mkdtempSync(join(tmpdir(), 'rk-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1366, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  });

  after(async () => {
    clearInterval(traffic);
    await context?.close();
    await admin?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('asks for the token, then shows the abuser at the top within seconds', async () => {
    await page.goto(admin.url);
    await page.locator('#token-form').waitFor({ state: 'visible', timeout: 5000 });
    await page.fill('#token', TOKEN);
    await page.click('#token-form button[type=submit]');
    const t0 = Date.now();
    await page.waitForFunction((key) => document.querySelector('#top tbody tr td.key')?.textContent === key, ABUSER, { timeout: 10_000 });
    const took = Date.now() - t0;
    assert.ok(took < 10_000, `the abuser was at the top after ${took} ms`);
    await page.waitForFunction(() => document.querySelectorAll('#chart canvas').length > 0, undefined, { timeout: 5000 });
    await page.waitForFunction(() => (document.querySelector('#tail-list')?.childElementCount ?? 0) > 3, undefined, { timeout: 5000 });
    assert.match(await page.textContent('#config-text') ?? '', /earrrl 5\/s/);
    // the legend shows the newest values while the cursor is off the chart (it showed -- until hovered)
    await page.waitForFunction(() => /allowed \/s:?\s*[\d.,]+/.test(document.querySelector('#chart .u-legend')?.textContent ?? ''), undefined, { timeout: 5000 })
      .catch(async () => assert.fail(`legend: ${await page.textContent('#chart .u-legend')}`));
    assert.doesNotMatch(await page.textContent('#chart .u-legend') ?? '', /--/);
    if (shots) {
      await page.waitForTimeout(2500);
      await page.screenshot({ path: join(root, 'docs/img/admin-dashboard.png'), fullPage: true });
    }
  });

  it('a block made from the page (keyboard only) makes the next check blocked; unblock reverses it', async () => {
    const button = page.getByRole('button', { name: `Block ${ABUSER}` });
    await button.focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'block-for', 'focus moves to the duration');
    assert.equal(await page.inputValue('#block-key'), ABUSER);
    await page.keyboard.type('15m');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'block-reason');
    await page.keyboard.type('scraping the catalogue');
    await page.keyboard.press('Enter');
    await page.waitForFunction((key) => [...document.querySelectorAll('#blocks td.key')].some((td) => td.textContent === key), ABUSER, { timeout: 5000 });
    const d = await api.check(ABUSER);
    assert.equal(d.reason, 'blocked');
    assert.equal(d.blockReason, 'scraping the catalogue');
    const blocks = await api.blocks();
    assert.equal(blocks.length, 1);
    assert.ok(blocks[0].until > Date.now() + 14 * 60_000, 'for 15 minutes');
    assert.notEqual((await login.check(ABUSER)).reason, 'blocked', 'the row\'s Block button blocks in the row\'s limiter');
    if (shots) {
      await page.waitForTimeout(1500);
      await page.screenshot({ path: join(root, 'docs/img/admin-blocked.png'), fullPage: true });
    }
    await page.locator('#blocks').getByRole('button', { name: `Unblock ${ABUSER}` }).click();
    await page.waitForFunction(() => document.querySelectorAll('#blocks tbody tr').length === 0, undefined, { timeout: 5000 });
    assert.notEqual((await api.check(ABUSER)).reason, 'blocked');
    assert.deepEqual(await api.blocks(), []);
  });

  it(`a key such as ${XSS} renders as text and runs nothing`, async () => {
    await page.waitForFunction((key) => [...document.querySelectorAll('#top td.key')].some((td) => td.textContent === key), XSS, { timeout: 10_000 });
    await page.fill('#inspect-key', XSS);
    await page.press('#inspect-key', 'Enter');
    await page.waitForFunction((key) => document.querySelector('#inspect-out h3')?.textContent?.startsWith('api') && document.querySelector('#inspect-out')!.textContent!.includes('earrrl 5/s'), XSS, { timeout: 5000 });
    await page.waitForFunction((key) => [...document.querySelectorAll('#tail-list li')].some((li) => li.textContent!.includes(key)), XSS, { timeout: 5000 });
    await page.waitForTimeout(500);
    assert.equal(await page.locator('img').count(), 0, 'no element was made from the key');
    assert.deepEqual(dialogs, [], 'no script ran');
    if (shots) await page.screenshot({ path: join(root, 'docs/img/admin-inspect.png'), fullPage: true });
    assert.deepEqual(consoleErrors.filter((e) => !/status of 401/.test(e)), [], 'no error, no CSP violation');
  });
});
