/**
 * test/http/scenarios — the behaviour every adapter must have, run against a real server and a real client for
 * each adapter and each store (adapters.test.ts). Times come from an injected clock, so every number is exact.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseList, type Item } from 'structured-headers';
import { limiter, rules, type Store } from '../../src/index.js';
import { request, type Build, type Hdr, type Res } from './apps.js';

/** StoreFactory — a fresh store whose state is not shared with any other test's. */
export type StoreFactory = () => Store;

/** T0 — a start time aligned to every window used here (10 s, 1 min). */
export const T0 = 1_700_000_040_000;

export class ManualClock {
  t = T0;
  now = (): number => this.t;
}

/** items — a structured list field parsed, as { name: { param: value } } (throws when the syntax is wrong). */
export function items(res: Res, field: string): Record<string, Record<string, unknown>> {
  const raw = res.headers[field.toLowerCase()];
  assert.ok(raw !== undefined, `${field} is missing`);
  const list = parseList(Array.isArray(raw) ? raw.join(', ') : raw);
  const out: Record<string, Record<string, unknown>> = {};
  for (const member of list) {
    const [name, params] = member as Item;
    assert.equal(typeof name, 'string', `${field} items are sf-strings`);
    out[name as string] = Object.fromEntries(params);
  }
  return out;
}

export function scenarios(adapter: string, build: Build, store: StoreFactory): void {
  describe(`${adapter}`, () => {
    const open: { close(): Promise<void> }[] = [];
    after(async () => { for (const a of open) await a.close(); });
    const app = async (...args: Parameters<Build>) => { const a = await build(...args); open.push(a); return a; };

    it('sends RateLimit-Policy and RateLimit, one sf-string item per named rule', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({
        rules: [rules.fixedWindow({ limit: 5, per: '10s', name: 'burst' }), rules.gcra({ limit: 100, per: '1h', name: 'hourly' })],
        store: store(), clock,
      }) }]);
      const res = await fetch(a.url + '/');
      assert.equal(res.status, 200);
      const r: Res = { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text(), json: () => ({}), took: 0 };
      assert.deepEqual(items(r, 'RateLimit-Policy'), { burst: { q: 5, w: 10 }, hourly: { q: 100, w: 3600 } });
      assert.deepEqual(items(r, 'RateLimit'), { burst: { r: 4, t: 10 }, hourly: { r: 99, t: 36 } });
      assert.equal(res.headers.get('x-ratelimit-limit'), null, 'legacy headers are opt-in');
      assert.equal(res.headers.get('retry-after'), null);
    });

    it('refuses with 429 problem+json (quota-exceeded, violated-policies) and Retry-After', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({
        rules: [rules.fixedWindow({ limit: 2, per: '10s', name: 'burst' }), rules.slidingWindow({ limit: 100, per: '1m', name: 'minute' })],
        store: store(), clock,
      }) }]);
      for (let i = 0; i < 2; i++) assert.equal((await fetch(a.url + '/')).status, 200);
      clock.t += 2500;
      const res = await fetch(a.url + '/');
      assert.equal(res.status, 429);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.headers.get('retry-after'), '8'); // 7.5 s left in the window, rounded up
      const body = await res.json() as Record<string, unknown>;
      assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
      assert.equal(body.status, 429);
      assert.deepEqual(body['violated-policies'], ['burst']);
      const r: Res = { status: 429, headers: Object.fromEntries(res.headers), body: '', json: () => ({}), took: 0 };
      assert.deepEqual(items(r, 'RateLimit').burst, { r: 0, t: 8 });
      assert.equal(items(r, 'RateLimit').minute.r, 98);
      assert.equal(a.served.length, 0, 'x-id was not sent, nothing recorded');
    });

    it('Retry-After is the exact wait rounded up: refused one second earlier, admitted then', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({
        rules: [rules.tokenBucket({ limit: 3, per: '10s', name: 'tb' })], store: store(), clock,
      }) }]);
      for (let i = 0; i < 3; i++) assert.equal((await request(a.url + '/')).status, 200);
      const denied = await request(a.url + '/');
      assert.equal(denied.status, 429);
      const ra = Number(denied.headers['retry-after']);
      assert.equal(ra, Math.ceil(10_000 / 3 / 1000)); // one token every 3333.3 ms → 4
      clock.t = T0 + (ra - 1) * 1000;
      const early = await request(a.url + '/');
      assert.equal(early.status, 429, 'one second before Retry-After it is still refused');
      assert.equal(early.headers['retry-after'], '1');
      clock.t = T0 + 3333;
      assert.equal((await request(a.url + '/')).status, 429, 'the exact wait is 3333.3 ms');
      clock.t = T0 + ra * 1000;
      assert.equal((await request(a.url + '/')).status, 200, 'admitted at Retry-After');
    });

    it('legacy X-RateLimit-* headers on request', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({
        rules: [rules.fixedWindow({ limit: 5, per: '10s' })], store: store(), clock, legacyHeaders: true,
      }) }]);
      const res = await request(a.url + '/');
      assert.equal(res.headers['x-ratelimit-limit'], '5');
      assert.equal(res.headers['x-ratelimit-remaining'], '4');
      assert.equal(res.headers['x-ratelimit-reset'], String((T0 + 10_000) / 1000));
    });

    it('an untrusted peer cannot choose its key with X-Forwarded-For or Forwarded', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({ rules: '1/min', store: store(), clock }) }]);
      assert.equal((await request(a.url + '/', { headers: { 'x-forwarded-for': '198.51.100.1' } })).status, 200);
      assert.equal((await request(a.url + '/', { headers: { 'x-forwarded-for': '198.51.100.2' } })).status, 429);
      assert.equal((await request(a.url + '/', { headers: { forwarded: 'for=198.51.100.3' } })).status, 429);
      assert.equal((await request(a.url + '/', { headers: { 'x-real-ip': '198.51.100.4' } })).status, 429);
      // another peer address is another client
      assert.equal((await request(a.url + '/', { localAddress: '127.0.0.3' })).status, 200);
    });

    it('X-Forwarded-For is read only from a trusted proxy, from the right', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({ rules: '1/min', store: store(), clock, trustProxy: ['127.0.0.2'] }) }]);
      const proxy = '127.0.0.2';
      assert.equal((await request(a.url + '/', { localAddress: proxy, headers: { 'x-forwarded-for': '198.51.100.7' } })).status, 200);
      assert.equal((await request(a.url + '/', { localAddress: proxy, headers: { 'x-forwarded-for': '198.51.100.7' } })).status, 429);
      assert.equal((await request(a.url + '/', { localAddress: proxy, headers: { 'x-forwarded-for': '198.51.100.8' } })).status, 200);
      // a client prepending a fake hop is still keyed by the address the proxy saw
      assert.equal((await request(a.url + '/', { localAddress: proxy, headers: { 'x-forwarded-for': '203.0.113.99, 198.51.100.8' } })).status, 429);
      // an untrusted peer's header is ignored: it is keyed by itself
      assert.equal((await request(a.url + '/', { localAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.9' } })).status, 200);
      assert.equal((await request(a.url + '/', { localAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.10' } })).status, 429);
      // a proxy that forwards no header: the proxy itself is the client
      assert.equal((await request(a.url + '/', { localAddress: proxy })).status, 200);
    });

    it('IPv6 clients in one /64 share a key; IPv4-mapped IPv6 is IPv4', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({ rules: '1/min', store: store(), clock, trustProxy: ['loopback'] }) }]);
      const via = (xff: string) => request(a.url + '/', { headers: { 'x-forwarded-for': xff } }).then((r) => r.status);
      assert.equal(await via('2001:db8:1:2::1'), 200);
      assert.equal(await via('2001:db8:1:2:ffff:ffff:ffff:ffff'), 429);
      assert.equal(await via('[2001:db8:1:2::abcd]:4711'), 429);
      assert.equal(await via('2001:db8:1:3::1'), 200);
      assert.equal(await via('::ffff:203.0.113.9'), 200);
      assert.equal(await via('203.0.113.9'), 429);
    });

    it('per-route rules: each route counts on its own; an unlimited route is untouched', async () => {
      const clock = new ManualClock();
      const a = await app([
        { method: 'GET', path: '/a', limit: () => ({ rules: [rules.fixedWindow({ limit: 1, per: '1m', name: 'a' })], store: store(), clock }) },
        { method: 'GET', path: '/b', limit: () => ({ rules: [rules.fixedWindow({ limit: 2, per: '1m', name: 'b' })], store: store(), clock }) },
        { method: 'GET', path: '/free' },
      ]);
      assert.equal((await request(a.url + '/a')).status, 200);
      assert.equal((await request(a.url + '/a')).status, 429);
      const b = await request(a.url + '/b');
      assert.equal(b.status, 200);
      assert.deepEqual(items(b, 'RateLimit'), { b: { r: 1, t: 60 } });
      for (let i = 0; i < 3; i++) {
        const f = await request(a.url + '/free');
        assert.equal(f.status, 200);
        assert.equal(f.headers.ratelimit, undefined);
      }
    });

    it('cost: by Content-Length (qu="content-bytes") and by a function', async () => {
      const clock = new ManualClock();
      const a = await app([
        { method: 'POST', path: '/upload', limit: () => ({ rules: [rules.tokenBucket({ limit: 100, per: '1m', name: 'bytes' })], cost: 'content-length', store: store(), clock }) },
        { method: 'GET', path: '/five', limit: () => ({ rules: [rules.fixedWindow({ limit: 10, per: '1m', name: 'points' })], cost: () => 5, store: store(), clock }) },
      ]);
      const post = (n: number) => request(a.url + '/upload', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(n) });
      const first = await post(60);
      assert.equal(first.status, 200);
      assert.deepEqual(items(first, 'RateLimit-Policy'), { bytes: { q: 100, qu: 'content-bytes', w: 60 } });
      assert.equal(items(first, 'RateLimit').bytes.r, 40);
      const over = await post(50);
      assert.equal(over.status, 429);
      assert.equal(over.headers['retry-after'], '6'); // 10 bytes at 100 per 60 s
      assert.equal((await post(40)).status, 200);
      const f1 = await request(a.url + '/five');
      assert.equal(items(f1, 'RateLimit').points.r, 5);
      assert.equal((await request(a.url + '/five')).status, 200);
      assert.equal((await request(a.url + '/five')).status, 429);
    });

    it('skip: skipped requests are neither counted nor given headers', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: (hdr: Hdr) => ({
        rules: '1/min', store: store(), clock, skip: (req: unknown) => hdr(req, 'x-skip') === '1',
      }) }]);
      for (let i = 0; i < 3; i++) {
        const s = await request(a.url + '/', { headers: { 'x-skip': '1' } });
        assert.equal(s.status, 200);
        assert.equal(s.headers.ratelimit, undefined);
      }
      assert.equal((await request(a.url + '/')).status, 200);
      assert.equal((await request(a.url + '/')).status, 429);
    });

    it('dry-run: always served, with the headers enforcement would have sent', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({ rules: [rules.fixedWindow({ limit: 1, per: '1m', name: 'm' })], dryRun: true, store: store(), clock }) }]);
      const first = await request(a.url + '/', { headers: { 'x-id': '1' } });
      assert.equal(first.status, 200);
      assert.equal(first.json().reason, 'allowed');
      for (let i = 2; i <= 3; i++) {
        const r = await request(a.url + '/', { headers: { 'x-id': String(i) } });
        assert.equal(r.status, 200);
        assert.equal(r.json().reason, 'dry-run');
        assert.deepEqual(items(r, 'RateLimit'), { m: { r: 0, t: 60 } });
        assert.equal(r.headers['retry-after'], undefined);
      }
      assert.deepEqual(a.served, ['1', '2', '3']);
    });

    it('shaping: held by the leaky bucket delay and served in order; past the bound refused and not charged', async () => {
      const clock = new ManualClock();
      const a = await app([{ method: 'GET', path: '/', limit: () => ({
        rules: [rules.leakyBucket({ limit: 10, per: '1s', burst: 5, name: 'smooth' })], shaping: { maxDelay: 250 }, store: store(), clock,
      }) }]);
      const ids = ['a', 'b', 'c', 'd', 'e'];
      const all = await Promise.all(ids.map((id) => request(a.url + '/', { headers: { 'x-id': id } })));
      const ok = all.filter((r) => r.status === 200);
      const refused = all.filter((r) => r.status === 429);
      assert.equal(ok.length, 3);
      assert.equal(refused.length, 2);
      // the delays are the queue ahead: 0, 100, 200 ms (one request per 100 ms); each was held that long
      const delays = ok.map((r) => r.json().delay as number).sort((x, y) => x - y);
      assert.deepEqual(delays, [0, 100, 200]);
      for (const r of ok) assert.ok(r.took >= (r.json().delay as number) - 5, `held ${r.took} ms for a delay of ${r.json().delay}`);
      // served in the order the limiter queued them
      const byId = new Map(ok.map((r) => [r.json().id as string, r.json().delay as number]));
      assert.deepEqual(a.served.map((id) => byId.get(id)), [0, 100, 200]);
      for (const r of refused) {
        assert.equal(r.headers['retry-after'], '1'); // the queue is 50 ms over the bound
        assert.deepEqual(r.json()['violated-policies'], ['smooth']);
      }
      // the refused two were not charged: 50 ms later the queue is 250 ms long, exactly the bound
      clock.t += 50;
      const next = await request(a.url + '/', { headers: { 'x-id': 'f' } });
      assert.equal(next.status, 200);
      assert.equal(next.json().delay, 250);
    });

    it('a blocked client gets 429 abnormal-usage-detected; an exempt one no headers', async () => {
      // real time: a store with its own clock (Redis TIME) times blocks by it
      const lim = limiter({ rules: '100/min', store: store() });
      const a = await app([{ method: 'GET', path: '/', limit: () => ({ limiter: lim }) }]);
      await lim.block('127.0.0.1', { for: '30s', reason: 'internal note' });
      const b = await request(a.url + '/');
      assert.equal(b.status, 429);
      assert.equal(b.headers['retry-after'], '30');
      assert.equal(b.json().type, 'https://iana.org/assignments/http-problem-types#abnormal-usage-detected');
      assert.ok(!b.body.includes('internal note'), 'the block reason is not disclosed');
      assert.deepEqual(items(b, 'RateLimit'), { '100/1m': { r: 0, t: 30 } });
      await lim.exempt('127.0.0.1');
      const e = await request(a.url + '/');
      assert.equal(e.status, 200);
      assert.equal(e.headers.ratelimit, undefined);
      assert.equal(e.json().reason, 'exempt');
    });

    it('limiter errors never crash the server: 503 by default, passed through with onLimiterError "pass"; a request that cannot be keyed is a 400 with the reason', async () => {
      const clock = new ManualClock();
      const seen: unknown[] = [];
      const a = await app([
        // the request gives no key (say, no API key header): the limiter refuses the empty key as misuse
        { method: 'GET', path: '/reject', limit: () => ({ rules: '1/min', store: store(), clock, key: () => '', onError: (e: unknown) => seen.push(e) }) },
        { method: 'GET', path: '/pass', limit: () => ({ rules: '1/min', store: store(), clock, key: () => { throw new Error('no user'); }, onLimiterError: 'pass', onError: (e: unknown) => seen.push(e) }) },
        { method: 'GET', path: '/async', limit: () => ({ rules: '1/min', store: store(), clock, key: async () => { throw new Error('async'); } }) },
      ]);
      const r = await request(a.url + '/reject');
      assert.equal(r.status, 400);
      assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
      assert.match(String(r.json().detail), /cannot be rate limited: key must be a non-empty string/);
      assert.equal(r.headers.ratelimit, undefined);
      for (let i = 0; i < 3; i++) {
        const p = await request(a.url + '/pass', { headers: { 'x-id': `p${i}` } });
        assert.equal(p.status, 200);
        assert.equal(p.headers.ratelimit, undefined);
      }
      assert.equal((await request(a.url + '/async')).status, 503);
      assert.equal(seen.length, 4);
      assert.match(String((seen[0] as Error).message), /key must be a non-empty string/);
      assert.equal((await request(a.url + '/reject')).status, 400, 'still serving');
    });
  });
}
