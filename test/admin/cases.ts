/**
 * test/admin/cases — the admin API's behaviour, run on every store (memory, Redis, Cluster): auth, every bad
 * input a 400 naming its field, 404/405, and blocks, exemptions, resets, inspect, top and the live tail end to end
 * through a real HTTP server, checked against the limiters' own decisions.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules, type Limiter, type Store } from '../../src/index.js';
import { serveAdmin } from '../../src/admin/index.js';
import { call, externalAddress, serve } from './support.js';

const TOKEN = 'test-token-0123456789abcdef';

export function adminCases(makeStore: () => Store): void {
  let api: Limiter;
  let login: Limiter;
  let limiters: Map<string, Limiter>;
  let server: Awaited<ReturnType<typeof serve>>;
  let open: Awaited<ReturnType<typeof serve>>;
  const url = (): string => server.url;
  before(async () => {
    const store = makeStore();
    api = limiter({ rules: [rules.fixedWindow({ limit: 3, per: '1m', name: 'api 3/1m' })], store, observe: { share: false } });
    login = limiter({ rules: [rules.slidingLog({ limit: 100, per: '1m', name: 'login' })], store, observe: { share: false } });
    limiters = new Map([['api', api], ['login', login]]);
    server = await serve({ limiters: () => limiters.entries(), token: TOKEN, config: () => ({ text: 'limits: []\n', loadedAt: 1_700_000_000_000, files: ['/etc/rk.yaml'] }) });
    open = await serve({ limiters });
  });
  after(async () => {
    await server.close();
    await open.close();
    await api.close();
    await login.close();
  });

  describe('auth', () => {
    it('with a token: none or a wrong one is 401 (any length), the right one passes; the page itself needs none', async () => {
      const none = await call(url(), 'admin/top');
      assert.equal(none.status, 401);
      assert.match(none.headers['www-authenticate'] ?? '', /^Bearer/);
      assert.equal((await call(url(), 'admin/top', { token: 'x' })).status, 401);
      assert.equal((await call(url(), 'admin/top', { token: TOKEN.slice(0, -1) + 'g' })).status, 401);
      assert.equal((await call(url(), 'admin/top', { headers: { authorization: `Basic ${TOKEN}` } })).status, 401);
      assert.equal((await call(url(), 'admin/top', { token: TOKEN })).status, 200);
      assert.equal((await call(url(), '', {})).status, 200);
    });

    it('without a token the API answers on loopback only (403 off loopback); serveAdmin refuses to start off loopback without one', async () => {
      assert.equal((await call(open.url, 'admin/top')).status, 200);
      const ext = await externalAddress();
      const off = await serve({ limiters }, ext);
      try {
        const r = await call(off.url, 'admin/blocks', { method: 'POST', body: { key: 'k' } });
        assert.equal(r.status, 403);
        assert.match(r.json.error, /needs a token when it is reached off loopback/);
        assert.equal((await api.blocks()).length, 0);
      } finally {
        await off.close();
      }
      await assert.rejects(serveAdmin({ limiters, host: ext, port: 0 }), /not loopback: give it a token/);
      await assert.rejects(serveAdmin({ limiters, host: '0.0.0.0', port: 0 }), /not loopback/);
      await assert.rejects(serveAdmin({ limiters, host: ext, port: 0, token: 'short' }), /token must be a string of at least 16 characters/);
      const s = await serveAdmin({ limiters, host: ext, port: 0, token: TOKEN });
      try {
        assert.equal((await call(s.url, 'admin/top')).status, 401);
        assert.equal((await call(s.url, 'admin/top', { token: TOKEN })).status, 200);
      } finally {
        await s.close();
      }
    });

    it('no cookies and no CORS headers, even to a cross-origin request; a CSP on everything', async () => {
      for (const path of ['', 'assets/app.js', 'admin/top']) {
        const r = await call(url(), path, { token: TOKEN, headers: { origin: 'https://evil.example' } });
        assert.equal(r.headers['set-cookie'], undefined);
        assert.equal(r.headers['access-control-allow-origin'], undefined);
        assert.match(r.headers['content-security-policy'] ?? '', /^default-src 'self'/);
      }
      const pre = await call(url(), 'admin/blocks', { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
      assert.equal(pre.headers['access-control-allow-origin'], undefined);
      assert.notEqual(pre.status, 204);
    });
  });

  describe('bad input: 400 naming the field', () => {
    const cases: [string, string, { method?: string; body?: unknown }, string][] = [
      ['n out of range', 'admin/top?n=0', {}, 'n'],
      ['n not a number', 'admin/top?n=ten', {}, 'n'],
      ['by unknown', 'admin/top?by=size', {}, 'by'],
      ['limiter unknown', 'admin/top?limiter=nope', {}, 'limiter'],
      ['stats last', 'admin/stats?last=99999', {}, 'last'],
      ['key bad encoding', 'admin/keys/%E0%A4%A', {}, 'key'],
      ['key too long', `admin/keys/${'k'.repeat(5000)}`, {}, 'key'],
      ['reset: limiter unknown', 'admin/keys/k/reset?limiter=nope', { method: 'POST' }, 'limiter'],
      ['body not JSON', 'admin/blocks', { method: 'POST', body: '{key:' }, 'body'],
      ['body empty', 'admin/blocks', { method: 'POST', body: '' }, 'body'],
      ['body an array', 'admin/blocks', { method: 'POST', body: [] }, 'body'],
      ['key missing', 'admin/blocks', { method: 'POST', body: { for: '1m' } }, 'key'],
      ['key empty', 'admin/blocks', { method: 'POST', body: { key: '' } }, 'key'],
      ['key a number', 'admin/blocks', { method: 'POST', body: { key: 5 } }, 'key'],
      ['key too long (body)', 'admin/blocks', { method: 'POST', body: { key: 'k'.repeat(5000) } }, 'key'],
      ['for not a duration', 'admin/blocks', { method: 'POST', body: { key: 'k', for: 'soon' } }, 'for'],
      ['for negative', 'admin/blocks', { method: 'POST', body: { key: 'k', for: -5 } }, 'for'],
      ['reason a number', 'admin/blocks', { method: 'POST', body: { key: 'k', reason: 5 } }, 'reason'],
      ['reason too long', 'admin/blocks', { method: 'POST', body: { key: 'k', reason: 'r'.repeat(501) } }, 'reason'],
      ['unknown field', 'admin/blocks', { method: 'POST', body: { key: 'k', duration: '1m' } }, 'duration'],
      ['limiter unknown (body)', 'admin/blocks', { method: 'POST', body: { key: 'k', limiter: 'nope' } }, 'limiter'],
      ['exemption reason too long', 'admin/exemptions', { method: 'POST', body: { key: 'k', reason: 'r'.repeat(501) } }, 'reason'],
      ['exemption reason a number', 'admin/exemptions', { method: 'POST', body: { key: 'k', reason: 5 } }, 'reason'],
      ['exemption for', 'admin/exemptions', { method: 'POST', body: { key: 'k', for: '1 fortnight' } }, 'for'],
      ['unblock: limiter unknown', 'admin/blocks/k?limiter=nope', { method: 'DELETE' }, 'limiter'],
    ];
    for (const [what, path, options, field] of cases) {
      it(what, async () => {
        const r = await call(url(), path, { ...options, token: TOKEN });
        assert.equal(r.status, 400, `${path}: ${r.text}`);
        assert.equal(r.json.field, field);
        assert.equal(typeof r.json.error, 'string');
      });
    }
    it('nothing was changed by them', async () => {
      assert.deepEqual(await api.blocks(), []);
      assert.deepEqual(await api.exemptions(), []);
      assert.equal(server.logs.length, 0);
    });
  });

  describe('404 and 405', () => {
    const cases: [string, string, number, string?][] = [
      ['GET', 'admin', 404], ['GET', 'admin/', 404], ['GET', 'admin/nope', 404], ['GET', 'admin/top/x', 404], ['GET', 'admin/keys', 404],
      ['GET', 'admin/keys/k/nope', 404], ['GET', 'admin/blocks/k/x', 404], ['GET', 'nope', 404], ['GET', 'assets/nope.js', 404],
      ['DELETE', 'admin/top', 405, 'GET'], ['PUT', 'admin/blocks', 405, 'GET, POST'], ['GET', 'admin/blocks/k', 405, 'DELETE'],
      ['GET', 'admin/keys/k/reset', 405, 'POST'], ['POST', 'admin/stats', 405, 'GET'], ['POST', '', 405, 'GET, HEAD'],
    ];
    for (const [method, path, status, allow] of cases) {
      it(`${method} /${path} → ${status}`, async () => {
        const r = await call(url(), path, { method, token: TOKEN });
        assert.equal(r.status, status, r.text);
        if (allow !== undefined) assert.equal(r.headers.allow, allow);
        assert.equal(typeof r.json.error, 'string');
      });
    }
  });

  describe('operations', () => {
    it('block (all limiters or one), listed, inspected, logged; unblock reverses it', async () => {
      const key = 'abuser 203.0.113.7';
      const r = await call(url(), 'admin/blocks', { method: 'POST', token: TOKEN, body: { key, for: '10m', reason: 'scraping' } });
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(r.json, { what: 'block', key, limiters: ['api', 'login'], for: 600_000, reason: 'scraping' });
      const d = await api.check(key);
      assert.equal(d.reason, 'blocked');
      assert.equal(d.blockReason, 'scraping');
      assert.equal((await login.check(key)).reason, 'blocked');
      const list = await call(url(), 'admin/blocks', { token: TOKEN });
      assert.deepEqual(list.json.blocks.map((b: any) => [b.limiter, b.key, b.reason]).sort(), [['api', key, 'scraping'], ['login', key, 'scraping']]);
      const b = list.json.blocks[0];
      assert.ok(b.until > Date.now() + 590_000 && b.until <= Date.now() + 600_000, `until ${b.until}`);
      const one = await call(url(), `admin/blocks?limiter=login`, { token: TOKEN });
      assert.deepEqual(one.json.blocks.map((x: any) => x.limiter), ['login']);
      const ins = await call(url(), `admin/keys/${encodeURIComponent(key)}`, { token: TOKEN });
      assert.equal(ins.status, 200);
      const inApi = ins.json.limiters.find((l: any) => l.limiter === 'api');
      assert.equal(inApi.decision.reason, 'blocked');
      assert.equal(inApi.override.kind, 'block');
      assert.equal(inApi.override.reason, 'scraping');
      assert.equal(inApi.observed.key, key);
      const top = await call(url(), 'admin/top?n=5', { token: TOKEN });
      assert.ok(top.json.top.some((e: any) => e.key === key && e.blocked === true && e.limiter === 'api'));
      assert.deepEqual(server.logs.at(-1), { time: server.logs.at(-1)!.time, who: server.logs.at(-1)!.who, from: server.logs.at(-1)!.from, what: 'block', key, limiters: ['api', 'login'], for: 600_000, reason: 'scraping' });
      assert.match(server.logs.at(-1)!.who, /^token:[0-9a-f]{8}$/);
      assert.match(server.logs.at(-1)!.from ?? '', /127\.0\.0\.1/);

      const un = await call(url(), `admin/blocks/${encodeURIComponent(key)}?limiter=api`, { method: 'DELETE', token: TOKEN });
      assert.deepEqual(un.json, { what: 'unblock', key, limiters: ['api'] });
      assert.notEqual((await api.check(key)).reason, 'blocked');
      assert.equal((await login.check(key)).reason, 'blocked');
      await call(url(), `admin/blocks/${encodeURIComponent(key)}`, { method: 'DELETE', token: TOKEN });
      assert.notEqual((await login.check(key)).reason, 'blocked');
      assert.deepEqual((await call(url(), 'admin/blocks', { token: TOKEN })).json.blocks, []);
      assert.deepEqual(server.logs.slice(-2).map((e) => [e.what, e.limiters]), [['unblock', ['api']], ['unblock', ['api', 'login']]]);
    });

    it('a block without `for` lasts until lifted (until: null in JSON)', async () => {
      await call(url(), 'admin/blocks', { method: 'POST', token: TOKEN, body: { key: 'forever', limiter: 'api' } });
      const list = await call(url(), 'admin/blocks', { token: TOKEN });
      assert.deepEqual(list.json.blocks.map((b: any) => [b.key, b.until]), [['forever', null]]);
      assert.equal((await api.check('forever')).retryAfter, Infinity);
      await call(url(), 'admin/blocks/forever', { method: 'DELETE', token: TOKEN });
    });

    it('exempt, listed, lifted; reset forgets the rule state', async () => {
      const key = 'partner/42';
      for (let i = 0; i < 3; i++) await api.check(key);
      assert.equal((await api.check(key)).reason, 'limited');
      const e = await call(url(), 'admin/exemptions', { method: 'POST', token: TOKEN, body: { key, for: 60_000, limiter: 'api', reason: 'partner contract' } });
      assert.equal(e.status, 201, e.text);
      assert.equal(e.json.reason, 'partner contract');
      assert.equal((await api.check(key)).reason, 'exempt');
      // an exemption's reason is kept and listed like a block's (DESIGN.md: exempt(key, { for?, reason? }))
      assert.deepEqual((await call(url(), 'admin/exemptions', { token: TOKEN })).json.exemptions.map((x: any) => [x.limiter, x.key, x.reason]), [['api', key, 'partner contract']]);
      assert.equal((await api.exemptions())[0].reason, 'partner contract');
      const seen = await call(url(), `admin/keys/${encodeURIComponent(key)}?limiter=api`, { token: TOKEN });
      assert.equal(seen.json.limiters[0].override.reason, 'partner contract');
      await call(url(), `admin/exemptions/${encodeURIComponent(key)}`, { method: 'DELETE', token: TOKEN });
      assert.equal((await api.check(key)).reason, 'limited');
      const r = await call(url(), `admin/keys/${encodeURIComponent(key)}/reset?limiter=api`, { method: 'POST', token: TOKEN });
      assert.deepEqual(r.json, { what: 'reset', key, limiters: ['api'] });
      assert.equal((await api.check(key)).reason, 'allowed');
      assert.deepEqual(server.logs.slice(-3).map((x) => x.what), ['exempt', 'unexempt', 'reset']);
    });

    it('top orders by rate or refusals; stats count outcomes per rule', async () => {
      for (let i = 0; i < 20; i++) await api.check('heavy');
      await api.check('light');
      const byRate = await call(url(), 'admin/top?n=2&limiter=api', { token: TOKEN });
      assert.equal(byRate.json.top[0].key, 'heavy');
      assert.equal(byRate.json.top.length, 2);
      const byRefused = await call(url(), 'admin/top?by=refused&limiter=api', { token: TOKEN });
      assert.equal(byRefused.json.top[0].key, 'heavy');
      assert.ok(byRefused.json.top[0].refused >= 17);
      assert.ok(byRefused.json.top.every((e: any) => e.refusedRate > 0));
      const st = await call(url(), 'admin/stats?last=60&limiter=api', { token: TOKEN });
      const l = st.json.limiters[0];
      assert.equal(l.name, 'api');
      assert.ok(l.outcomes.limited >= 17);
      assert.equal(l.refusedByRule['api 3/1m'], l.outcomes.limited);
      assert.ok(l.series.limited.values.reduce((a: number, b: number) => a + b, 0) >= 17);
      assert.deepEqual(l.rules, [{ name: 'api 3/1m', algorithm: 'fixedWindow', limit: 3, per: 60_000 }]);
    });

    it('config: as given, loadedAt in ISO 8601; 404 without one', async () => {
      const c = await call(url(), 'admin/config', { token: TOKEN });
      assert.deepEqual(c.json, { text: 'limits: []\n', loadedAt: '2023-11-14T22:13:20.000Z', files: ['/etc/rk.yaml'] });
      assert.equal((await call(open.url, 'admin/config')).status, 404);
    });

    it('limiters given as a function are re-read on every request (a reload)', async () => {
      const extra = limiter({ rules: '5/s', store: makeStore(), observe: { share: false } });
      limiters.set('extra', extra);
      try {
        const st = await call(url(), 'admin/stats', { token: TOKEN });
        assert.deepEqual(st.json.limiters.map((l: any) => l.name), ['api', 'login', 'extra']);
      } finally {
        limiters.delete('extra');
        await extra.close();
      }
      assert.equal((await call(url(), 'admin/top?limiter=extra', { token: TOKEN })).json.field, 'limiter');
    });

    it('events: a live tail over SSE, every refusal in it', async () => {
      const res = await fetch(new URL('admin/events?limiter=api', url()), { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const reader = res.body!.getReader();
      const seen: any[] = [];
      const decoder = new TextDecoder();
      let buf = '';
      await new Promise((r) => setTimeout(r, 50));
      for (let i = 0; i < 5; i++) await api.check('tail-key');
      const deadline = Date.now() + 5000;
      while (seen.filter((e) => e.key === 'tail-key' && !e.allowed).length < 2 && Date.now() < deadline) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let at;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const data = block.split('\n').find((l) => l.startsWith('data: '));
          if (data) seen.push(JSON.parse(data.slice(6)));
        }
      }
      await reader.cancel();
      const refusals = seen.filter((e) => e.key === 'tail-key' && !e.allowed);
      assert.equal(refusals.length, 2, JSON.stringify(seen));
      assert.equal(refusals[0].limiter, 'api');
      assert.equal(refusals[0].reason, 'limited');
      assert.equal(refusals[0].rule, 'api 3/1m');
      assert.equal((await call(url(), 'admin/events')).status, 401);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(api.observer!.watchers, 0, 'the watch ends with the connection');
    });
  });
}
