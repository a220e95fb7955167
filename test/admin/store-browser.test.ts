/**
 * test/admin/store-browser — the dashboard's Store panel in a real headless Chromium (Debian's /usr/bin/chromium
 * driven by playwright-core) over a real redis-server: a Redis store in local-first mode (a gcra limiter decided on
 * copies, whose burst of 50 checks of one key at a cost above maxUnsynced goes to the exact mode as one batch) with a second
 * instance registered (N = 2), and a memory-store limiter. The panel shows the unsynced units with their bound,
 * then the flush (unsynced 0, flushed units, sync latency), the batch, N, and, while Redis is SIGSTOPped, the
 * fallback active since then; each figure with its line of explanation; no error, no CSP violation. With
 * UPDATE_SCREENSHOTS=1 it saves docs/img/admin-store.png.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { serveAdmin, type AdminServer } from '../../src/admin/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';

/** document — the page's, inside the functions evaluated there (this file is compiled without the DOM's types). */
declare const document: any;

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'store-browser-token-0123456789';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const shots = process.env.UPDATE_SCREENSHOTS === '1';

describe('the Store panel in Chromium', () => {
  let redis: RedisServer;
  let clients: Redis[];
  let store: RedisStore;
  let other: RedisStore;
  let copies: Limiter;
  let exact: Limiter;
  let admin: AdminServer;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const consoleErrors: string[] = [];

  /** figure — the text of the panel's cell of `name` (data-figure) once `ok` holds for it. */
  const figure = async (name: string, ok: (text: string) => boolean, what: string): Promise<string> => {
    const sel = `#store-out [data-figure="${name}"]`;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const text = (await page.locator(sel).first().textContent({ timeout: 5000 }).catch(() => null)) ?? '';
      if (ok(text)) return text;
      if (Date.now() > deadline) assert.fail(`${name}: ${what}, shows ${JSON.stringify(text)}`);
      await page.waitForTimeout(100);
    }
  };
  /** meaning — the explanation beside figure `name`. */
  const meaning = (name: string): Promise<string | null> => page.locator(`#store-out tr:has([data-figure="${name}"]) td.muted`).textContent();

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`the dashboard test needs Debian's Chromium at ${CHROMIUM}: apt-get install chromium`);
    redis = await RedisServer.start();
    clients = [0, 1].map(() => new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 }));
    const prefix = uniquePrefix('store-page');
    // the other instance registers first: this store's first heartbeat counts N = 2
    other = new RedisStore({ client: clients[1], prefix, onError: 'memory', fleet: { expiry: 60_000 } });
    await (other.fleet as { beat(): Promise<number> }).beat();
    store = new RedisStore({ client: clients[0], prefix, onError: 'memory', timeout: 300, fleet: { expiry: 60_000 }, localFirst: { maxUnsynced: 10, flushEvery: '4s' } });
    copies = limiter({ rules: [rules.gcra({ limit: 1000, per: '1h' })], store });
    exact = limiter({ rules: [rules.slidingLog({ limit: 1000, per: '1h' })], store });
    const mem = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1m' })] });
    admin = await serveAdmin({ limiters: new Map([['api', copies], ['login', exact], ['local', mem]]), port: 0, token: TOKEN, log: () => undefined,
      config: () => ({ text: 'api: gcra 1000/h (local-first)\nlogin: sliding log 1000/h\n', loadedAt: Date.now(), files: ['ratekeeper.yaml'] }),
    });
    profile = mkdtempSync(join(tmpdir(), 'rk-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1366, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
  });

  after(async () => {
    redis?.resume();
    await context?.close();
    await admin?.close();
    await store?.close();
    await other?.close();
    for (const c of clients ?? []) c.disconnect();
    await redis?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('shows unsynced units and their bound, the flush, the batch, N, and the memory store', async () => {
    for (let i = 0; i < 6; i++) assert.ok((await copies.check('user:1')).allowed);
    // a cost above maxUnsynced (10) is the exact mode's: the 50 of one tick are one batch
    const burst = await Promise.all(Array.from({ length: 50 }, () => exact.check('hot', { cost: 11 })));
    assert.ok(burst.every((d) => d.allowed));
    await page.goto(admin.url);
    await page.locator('#token-form').waitFor({ state: 'visible', timeout: 5000 });
    await page.fill('#token', TOKEN);
    await page.click('#token-form button[type=submit]');

    const unsynced = Number(await figure('unsynced', (t) => Number(t) > 0, 'unsynced units before the flush'));
    assert.ok(unsynced >= 5 && unsynced <= 6, `unsynced ${unsynced}`);
    assert.match(await meaning('unsynced') ?? '', /Redis has not acknowledged; bound \(N−1\)×maxUnsynced = 10 per key with N = 2/);
    assert.equal(await figure('instances', (t) => t === '2', 'N = 2'), '2');
    assert.match(await meaning('instances') ?? '', /registry last counted/);
    assert.equal(await figure('batches', (t) => t === '1', 'one batch'), '1');
    assert.equal(await figure('batch-mean', (t) => t === '50.0', 'a batch of 50'), '50.0');
    assert.equal(await figure('batch-largest', (t) => t === '50', 'the largest 50'), '50');
    assert.match(await meaning('batches') ?? '', /2 or more checks of one key/);
    assert.equal(await figure('fallback', (t) => t === 'inactive', 'the fallback inactive'), 'inactive');
    assert.match(await page.textContent('#store-out [data-store="memory"]') ?? '', /Memory store \(1 limiter\).*nothing to sync/);
    assert.match(await page.textContent('#store-out caption') ?? '', /Hot keys coalesced/);
    if (shots) await page.locator('#store').screenshot({ path: join(root, 'docs/img/admin-store.png') });

    // flushEvery 4 s: the panel (refreshed every second) shows the flush
    await figure('unsynced', (t) => t === '0', 'nothing unsynced after the flush');
    assert.equal(await figure('flushed', (t) => Number(t) === unsynced, 'the units flushed'), String(unsynced));
    await figure('sync-max', (t) => /ms$/.test(t), 'a sync round trip');
    assert.match(await meaning('sync-histogram') ?? '', /calls by round trip \(ms\): ≤0\.25: \d+, ≤0\.5: \d+.*≤1000: \d+$/);
  });

  it('while Redis is SIGSTOPped: the fallback active since then; back to inactive after SIGCONT', async () => {
    redis.pause();
    try {
      const d = await exact.check('during');
      assert.equal(d.fallback, true);
      assert.equal(await figure('fallback', (t) => t === 'active', 'the fallback active'), 'active');
      assert.match(await meaning('fallback') ?? '', /^active since \d{1,2}:\d{2}:\d{2}.*memory fallback, each key's limit ÷ N/);
      assert.ok(Number(await figure('store-failures', (t) => Number(t) >= 1, 'a failure counted')) >= 1);
    } finally {
      redis.resume();
    }
    for (let i = 0; i < 100 && (await exact.check('after')).fallback === true; i++) await page.waitForTimeout(100);
    await figure('fallback', (t) => t === 'inactive', 'the fallback inactive again');
    assert.deepEqual(consoleErrors.filter((e) => !/status of 401/.test(e)), [], 'no error, no CSP violation');
  });
});
