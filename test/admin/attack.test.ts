/**
 * test/admin/attack — a web page cannot drive the admin listener (issue 15, section 2), tested as the attack was
 * made: the CLI default (loopback, no token), a page of another origin (a second real HTTP server on another loopback
 * port) opened in Debian's headless Chromium that sends `fetch(…, { mode: 'no-cors', method: 'POST', headers:
 * { 'content-type': 'text/plain' } })` and auto-submits plain HTML forms at the listener → nothing is blocked or
 * exempted; a DNS-rebinding request (`Host: evil.example`, node's http client) → 421; the dashboard itself, served by
 * the same listener, still blocks a key from the page.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserContext } from 'playwright-core';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { serveAdmin, type AdminServer } from '../../src/admin/index.js';

const CHROMIUM = '/usr/bin/chromium';

/** raw — one request with node's http client, any Host header (a browser would not let a page set it). */
function raw(port: number, path: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** attackerPage — what the other origin serves: no-cors fetches and self-submitting forms aimed at the admin API. */
function attackerPage(admin: string): string {
  // a text/plain form whose one field name/value pair spells a JSON object: `{"key":"form-victim","x":"="}`
  return `<!doctype html><html><body>
<form id="f1" method="POST" action="${admin}admin/blocks" enctype="text/plain" target="sink1"><input name='{"key":"form-victim","x":"' value='"}'></form>
<form id="f2" method="POST" action="${admin}admin/exemptions" target="sink2"><input name="key" value="form-friend"></form>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<script>
(async () => {
  const opts = (body) => ({ mode: 'no-cors', method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(body) });
  const tries = [
    fetch('${admin}admin/blocks', opts({ key: 'victim', reason: 'csrf' })),
    fetch('${admin}admin/exemptions', opts({ key: 'attacker' })),
    fetch('${admin}admin/keys/victim/reset', opts({})),
  ];
  await Promise.allSettled(tries);
  document.getElementById('f1').submit();
  document.getElementById('f2').submit();
  document.title = 'sent';
})();
</script></body></html>`;
}

describe('a web page cannot drive the admin listener (loopback, no token: the CLI default)', () => {
  let api: Limiter;
  let admin: AdminServer;
  let port: number;
  let evil: http.Server;
  let evilUrl: string;
  let context: BrowserContext;
  let profile: string;
  /** seen — the requests that reached the admin listener, as method path → status. */
  const seen: string[] = [];

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`this test needs Debian's Chromium at ${CHROMIUM}: apt-get install chromium`);
    api = limiter({ rules: [rules.fixedWindow({ limit: 100, per: '1m' })], observe: true });
    admin = await serveAdmin({ limiters: new Map([['api', api]]), port: 0, log: () => undefined });
    port = Number(new URL(admin.url).port);
    admin.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      res.on('finish', () => seen.push(`${req.method} ${req.url} → ${res.statusCode}`));
    });
    evil = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(attackerPage(admin.url));
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
    profile = mkdtempSync(join(tmpdir(), 'rk-attack-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });

  after(async () => {
    await context?.close();
    await admin?.close();
    await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('a page of another origin (no-cors fetch with text/plain, plain HTML forms) blocks and exempts nothing', async () => {
    const page = await context.newPage();
    await page.goto(evilUrl);
    await page.waitForFunction('document.title === "sent"', undefined, { timeout: 10_000 });
    // every attempt reaches the listener (5: three fetches, two forms) and is refused there
    const deadline = Date.now() + 10_000;
    while (seen.filter((s) => s.startsWith('POST')).length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const posts = seen.filter((s) => s.startsWith('POST'));
    assert.equal(posts.length, 5, seen.join('\n'));
    for (const s of posts) assert.match(s, /→ 4\d\d$/, s);
    assert.deepEqual(await api.blocks(), [], 'nothing blocked');
    assert.deepEqual(await api.exemptions(), [], 'nothing exempted');
    await page.close();
  });

  it('DNS rebinding: a Host that is not the listener\'s own address is refused (421), the own address and localhost pass', async () => {
    for (const path of ['/admin/top', '/admin/config', '/admin/blocks', '/admin/store', '/']) {
      const r = await raw(port, path, { host: 'evil.example' });
      assert.equal(r.status, 421, `${path}: ${r.text}`);
      assert.match(r.text, /Host/);
      const rebound = await raw(port, path, { host: `evil.example:${port}` });
      assert.equal(rebound.status, 421, path);
    }
    const post = await raw(port, '/admin/blocks', { host: `evil.example:${port}`, 'content-type': 'application/json' }, 'POST', '{"key":"rebound"}');
    assert.equal(post.status, 421);
    assert.equal((await raw(port, '/admin/top', { host: `127.0.0.1:${port}` })).status, 200);
    assert.equal((await raw(port, '/admin/top', { host: `localhost:${port}` })).status, 200);
    assert.equal((await raw(port, '/admin/top', { host: `127.0.0.1.evil.example:${port}` })).status, 421, 'a name that starts with 127. is not this listener');
    // the store's view (fleet size, fallback, failures) is read-only, and still not for another site's page to read
    assert.equal((await raw(port, '/admin/store', { host: `127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site' })).status, 403);
    assert.equal((await raw(port, '/admin/store', { host: `127.0.0.1:${port}`, origin: 'http://evil.example' })).status, 403);
    assert.equal((await raw(port, '/admin/store', { host: `127.0.0.1:${port}` })).status, 200);
    assert.deepEqual(await api.blocks(), []);
  });

  it('a change must be JSON and must not come from another site; tools without those headers work', async () => {
    const host = `127.0.0.1:${port}`;
    const text = await raw(port, '/admin/blocks', { host, 'content-type': 'text/plain' }, 'POST', '{"key":"k1"}');
    assert.equal(text.status, 415);
    assert.match(text.text, /application\/json/);
    const form = await raw(port, '/admin/blocks', { host, 'content-type': 'application/x-www-form-urlencoded' }, 'POST', 'key=k1');
    assert.equal(form.status, 415);
    const crossSite = await raw(port, '/admin/blocks', { host, 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' }, 'POST', '{"key":"k1"}');
    assert.equal(crossSite.status, 403);
    const sameSite = await raw(port, '/admin/blocks', { host, 'content-type': 'application/json', 'sec-fetch-site': 'same-site' }, 'POST', '{"key":"k1"}');
    assert.equal(sameSite.status, 403, 'same-site is another origin here');
    const origin = await raw(port, '/admin/blocks', { host, 'content-type': 'application/json', origin: 'http://127.0.0.1:1' }, 'POST', '{"key":"k1"}');
    assert.equal(origin.status, 403);
    const nul = await raw(port, '/admin/blocks', { host, 'content-type': 'application/json', origin: 'null' }, 'POST', '{"key":"k1"}');
    assert.equal(nul.status, 403);
    const del = await raw(port, '/admin/blocks/k1', { host }, 'DELETE');
    assert.equal(del.status, 415);
    assert.deepEqual(await api.blocks(), []);
    const ok = await raw(port, '/admin/blocks', { host, 'content-type': 'application/json; charset=utf-8', origin: `http://${host}`, 'sec-fetch-site': 'same-origin' }, 'POST', '{"key":"k1"}');
    assert.equal(ok.status, 201, ok.text);
    const tool = await raw(port, '/admin/blocks/k1', { host, 'content-type': 'application/json' }, 'DELETE');
    assert.equal(tool.status, 200);
    assert.deepEqual(await api.blocks(), []);
  });

  it('the dashboard shows a key with bidi or control characters escaped and marked, and a long key whole', async () => {
    const spoof = 'user\u202Egnp.exe\u0007';
    const long = `long:${'x'.repeat(4000)}:end`;
    for (let i = 0; i < 3; i++) await api.check(spoof);
    await api.check(long);
    await api.block('iso\u2066late\u2069d', { reason: 'r\u202Eeason' });
    const page = await context.newPage();
    await page.goto(admin.url);
    const cells = async (table: string): Promise<{ text: string; cls: string }[]> =>
      page.$$eval(`#${table} td.key`, (tds: any[]) => tds.map((td) => ({ text: td.textContent as string, cls: td.className as string })));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && ((await cells('top')).length < 2 || (await cells('blocks')).length < 1)) await new Promise((r) => setTimeout(r, 100));
    const top = await cells('top');
    const shownSpoof = top.find((c) => c.text.startsWith('user'));
    assert.ok(shownSpoof, JSON.stringify(top.map((c) => c.text.slice(0, 40))));
    assert.equal(shownSpoof.text, 'user\\u202Egnp.exe\\u0007', 'escaped, so it cannot read as "userexe.png"');
    assert.match(shownSpoof.cls, /escaped/, 'and marked');
    const shownLong = top.find((c) => c.text.startsWith('long:'));
    assert.equal(shownLong?.text, long, 'a long key is shown whole');
    const blocks = await cells('blocks');
    assert.equal(blocks[0].text, 'iso\\u2066late\\u2069d');
    const reason = await page.$eval('#blocks tbody tr td:nth-child(4)', (td: any) => td.textContent as string);
    assert.equal(reason, 'r\\u202Eeason');
    await api.unblock('iso\u2066late\u2069d');
    await page.close();
  });

  it('behind a reverse proxy that rewrites Host (nginx\'s default proxy_set_header Host $proxy_host), the dashboard still blocks a key', async () => {
    // the proxy: another loopback port, its own origin in the browser; it forwards with Host: the listener's address,
    // so the browser's Origin (the proxy's) differs from the Host the listener sees, while Sec-Fetch-Site says same-origin
    const target = `127.0.0.1:${port}`;
    const proxy = http.createServer((req, res) => {
      const up = http.request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: { ...req.headers, host: target } }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const page = await context.newPage();
    try {
      await page.goto(`http://localhost:${(proxy.address() as AddressInfo).port}/`);
      await page.fill('#block-key', 'via-proxy');
      await page.fill('#block-reason', 'proxied');
      await page.click('#block-submit');
      const deadline = Date.now() + 10_000;
      while (!(await api.blocks()).some((b) => b.key === 'via-proxy') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual((await api.blocks()).filter((b) => b.key === 'via-proxy').map((b) => b.reason), ['proxied'], seen.filter((s) => s.startsWith('POST')).join('\n'));
      // the same headers without Sec-Fetch-Site (a browser that does not send it): the Origin decides, and it is foreign
      const old = await raw(port, '/admin/blocks', { host: target, 'content-type': 'application/json', origin: `http://localhost:${(proxy.address() as AddressInfo).port}` }, 'POST', '{"key":"k-old"}');
      assert.equal(old.status, 403);
    } finally {
      await page.close();
      await api.unblock('via-proxy');
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  it('the dashboard, served by the same listener, still blocks a key from the page (its requests are same-origin)', async () => {
    const page = await context.newPage();
    await page.goto(admin.url);
    await page.fill('#block-key', 'from-the-page');
    await page.fill('#block-reason', 'manual');
    await page.click('#block-submit');
    const deadline = Date.now() + 10_000;
    while ((await api.blocks()).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual((await api.blocks()).map((b) => [b.key, b.reason]), [['from-the-page', 'manual']]);
    await page.close();
  });
});
