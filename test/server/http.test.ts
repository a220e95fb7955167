/**
 * The HTTP API on a real server (startService, loopback port) called over real sockets: POST /json as
 * envoyproxy/ratelimit answers it (proto3 JSON both ways), POST /v1/check and GET /v1/auth (the native API, with the
 * IETF RateLimit fields), /healthcheck, /metrics (bounded label values), and bad input — each a 4xx naming the field,
 * nothing charged, the server serving on — on the memory store, a standalone Redis and a 3-master cluster.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { RedisCluster, RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running, type ServeOptions } from '../../src/server/serve.js';
import { HttpFront } from '../../src/server/http.js';
import { MAX_BODY } from '../../src/server/httpAnswer.js';
import { RateLimitService } from '../../src/server/service.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { http, metric } from './procs.js';
import { configFile, configFrom } from './support.js';

// slidingLog over an hour: no window boundary can fall inside a test and reset a count
const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { name: per_user, unit: hour, requests_per_unit: 3, algorithm: slidingLog }
  - key: path
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 100, algorithm: slidingLog }
  - key: shadow
    shadow_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1, algorithm: slidingLog }
policies:
  login:
    rules: '3/h'
`;

const uid = (tag: string): string => `${tag}-${randomBytes(4).toString('hex')}`;
const user = (value: string): { entries: { key: string; value: string }[] } => ({ entries: [{ key: 'user', value }] });

type StoreKind = 'memory' | 'redis' | 'cluster';

/** useService — a service on `kind` for the enclosing describe; `.running` and `.port` once started. */
function useService(kind: StoreKind): { running: Running; port: number; log: string[] } {
  const s = { log: [] as string[] } as { running: Running; port: number; log: string[] };
  let redis: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  before(async () => {
    const options: ServeOptions = { config: configFile(CONFIG), port: 0, grpcPort: -1, log: (l) => s.log.push(l), prefix: uniquePrefix('http') };
    if (kind === 'redis') {
      redis = await RedisServer.start();
      options.redis = `redis://127.0.0.1:${redis.port}`;
    } else if (kind === 'cluster') {
      cluster = await RedisCluster.start();
      options.redisCluster = cluster.nodes.map((n) => `127.0.0.1:${n.port}`);
    }
    s.running = await startService(options);
    s.port = s.running.httpPort!;
  });
  after(async () => {
    await s.running?.close();
    await redis?.stop();
    await cluster?.stop();
  });
  return s;
}

for (const kind of ['memory', 'redis', 'cluster'] as const) {
  describe(`HTTP API on the ${kind} store`, () => {
    const s = useService(kind);

    test('POST /json: envoyproxy/ratelimit\'s proto3 JSON, 200 then 429, default values left out', async () => {
      const a = uid('a');
      const first = await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [user(a), { entries: [{ key: 'nolimit', value: 'x' }] }] });
      assert.equal(first.status, 200);
      assert.match(first.headers['content-type'] ?? '', /^application\/json/);
      assert.deepEqual(first.json, {
        overallCode: 'OK',
        statuses: [
          { code: 'OK', currentLimit: { name: 'per_user', requestsPerUnit: 3, unit: 'HOUR' }, limitRemaining: 2, durationUntilReset: '3600s' },
          { code: 'OK' }, // no limit: limitRemaining 0 and no currentLimit, both left out
        ],
      });
      // snake_case input (protojson accepts the proto names) and hits_addend as a uint64 string
      const second = await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [user(a)], hits_addend: '2' });
      assert.equal(second.status, 200);
      assert.equal(second.json.statuses[0].limitRemaining, undefined, 'remaining 0 is a default: left out');
      assert.equal(second.json.statuses[0].code, 'OK');
      const third = await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [user(a)], hitsAddend: 1 });
      assert.equal(third.status, 429);
      assert.equal(third.json.overallCode, 'OVER_LIMIT');
      assert.equal(third.json.statuses[0].code, 'OVER_LIMIT');
      assert.match(third.json.statuses[0].durationUntilReset, /^\d+(\.\d{1,9})?s$/);
      assert.deepEqual(Object.keys(third.json).sort(), ['overallCode', 'statuses']);
    });

    test('POST /json: the descriptor\'s own limit and hits_addend, in camelCase and in snake_case', async () => {
      const b = uid('b');
      const camel = { domain: 'api', descriptors: [{ ...user(b), limit: { requestsPerUnit: 5, unit: 'HOUR' }, hitsAddend: 2 }] };
      const r1 = await http(s.port, 'POST', '/json', camel);
      assert.equal(r1.status, 200, r1.text);
      assert.deepEqual(r1.json.statuses[0].currentLimit, { requestsPerUnit: 5, unit: 'HOUR' });
      assert.equal(r1.json.statuses[0].limitRemaining, 3);
      const snake = { domain: 'api', descriptors: [{ ...user(b), limit: { requests_per_unit: 5, unit: 'HOUR' }, hits_addend: { value: 3 } }] };
      const r2 = await http(s.port, 'POST', '/json', snake);
      assert.equal(r2.status, 200, r2.text);
      assert.equal(r2.json.statuses[0].limitRemaining, undefined);
      assert.equal((await http(s.port, 'POST', '/json', snake)).status, 429);
    });

    test('POST /v1/check: the Decision as JSON with RateLimit and RateLimit-Policy; 429 with Retry-After', async () => {
      const key = uid('k');
      for (let i = 0; i < 3; i++) {
        const r = await http(s.port, 'POST', '/v1/check', { policy: 'login', key });
        assert.equal(r.status, 200);
        assert.equal(r.json.allowed, true);
        assert.equal(r.json.remaining, 2 - i);
        assert.equal(r.json.limit, 3);
        assert.equal(r.headers['ratelimit-policy'], '"3/1h";q=3;w=3600');
        assert.equal(r.headers['ratelimit'], `"3/1h";r=${2 - i};t=3600`);
        assert.equal(r.headers['retry-after'], undefined);
      }
      const over = await http(s.port, 'POST', '/v1/check', { policy: 'login', key });
      assert.equal(over.status, 429);
      assert.equal(over.json.allowed, false);
      assert.equal(over.json.reason, 'limited');
      assert.ok(over.json.retryAfter > 3_590_000 && over.json.retryAfter <= 3_600_000, String(over.json.retryAfter));
      assert.match(over.headers['retry-after'] ?? '', /^(359\d|3600)$/);
      assert.match(String(over.headers['ratelimit']), /^"3\/1h";r=0;t=\d+$/);
      // a cost
      const other = uid('k');
      const costly = await http(s.port, 'POST', '/v1/check', { policy: 'login', key: other, cost: 2 });
      assert.equal(costly.json.remaining, 1);
    });

    test('GET /v1/auth: policy and key in headers, 200 then 403 with the RateLimit fields', async () => {
      const key = uid('auth');
      const headers = { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': key };
      for (let i = 0; i < 3; i++) {
        const r = await http(s.port, 'GET', '/v1/auth', undefined, { headers });
        assert.equal(r.status, 200);
        assert.equal(r.headers['ratelimit'], `"3/1h";r=${2 - i};t=3600`);
      }
      const over = await http(s.port, 'GET', '/v1/auth', undefined, { headers });
      assert.equal(over.status, 403);
      assert.match(over.headers['retry-after'] ?? '', /^\d+$/);
      assert.equal(over.headers['ratelimit-policy'], '"3/1h";q=3;w=3600');
      const missing = await http(s.port, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login' } });
      assert.equal(missing.status, 400);
      assert.equal(missing.json.field, 'X-Ratekeeper-Key');
      const long = await http(s.port, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': 'k'.repeat(5000) } });
      assert.equal(long.status, 400);
      assert.equal(long.json.field, 'X-Ratekeeper-Key');
      // a cost is a decimal number: JavaScript's other number syntaxes are not read as one (0x10 would cost 16)
      const fresh = uid('cost');
      for (const cost of ['0x10', '0b11', '1e2', 'Infinity', '-1', '1,2', '']) {
        const r = await http(s.port, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': fresh, 'x-ratekeeper-cost': cost } });
        assert.equal(r.status, 400, `cost ${JSON.stringify(cost)}: ${r.status} ${r.text}`);
        assert.equal(r.json.field, 'X-Ratekeeper-Cost');
      }
      const two = await http(s.port, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': fresh, 'x-ratekeeper-cost': '2.5' } });
      assert.equal(two.status, 200);
      assert.equal(two.headers['ratelimit'], '"3/1h";r=0;t=3600', 'nothing charged before, 2.5 now');
    });

    test('GET /healthcheck: 200 OK', async () => {
      const r = await http(s.port, 'GET', '/healthcheck');
      assert.equal(r.status, 200);
      assert.equal(r.text, 'OK');
    });

    // bad input: [what, method, path, body, status, field, the victim's key (checked uncharged after)]
    const huge = 'v'.repeat(1 << 20);
    const bad: [string, string, string, (victim: string) => unknown, number, string | RegExp, 'json' | 'check'][] = [
      ['a body that is not JSON', 'POST', '/json', (v) => `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"${v}"}]}`, 400, 'body', 'json'],
      ['a body that is a JSON array', 'POST', '/json', (v) => [{ domain: 'api', descriptors: [user(v)] }], 400, 'body', 'json'],
      ['an empty domain', 'POST', '/json', (v) => ({ domain: '', descriptors: [user(v)] }), 400, 'domain', 'json'],
      ['zero descriptors', 'POST', '/json', () => ({ domain: 'api', descriptors: [] }), 400, 'descriptors', 'json'],
      ['a 1 MB descriptor value', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v), user(huge)] }), 400, 'descriptors[1].entries', 'json'],
      ['an unknown field', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v)], domian: 'api' }), 400, 'domian', 'json'],
      ['an unknown descriptor field', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [{ ...user(v), hits: 2 }] }), 400, 'descriptors[0].hits', 'json'],
      ['a value that is not a string', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v), { entries: [{ key: 'user', value: 7 }] }] }), 400, 'descriptors[1].entries[0].value', 'json'],
      ['100 000 descriptors', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v), ...Array.from({ length: 99_999 }, () => ({}))] }), 400, 'descriptors', 'json'],
      ['an unknown entry field', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v), { entries: [{ key: 'user', value: v, vaule: 'x' }] }] }), 400, 'descriptors[1].entries[0].vaule', 'json'],
      ['an unknown field of the request\'s own limit', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v), { ...user(v), limit: { requestsPerUnit: 5, unit: 'HOUR', name: 'x' } }] }), 400, 'descriptors[1].limit.name', 'json'],
      ['a hits_addend past the largest cost', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v), { ...user(v), hitsAddend: '2000000000000000' }] }), 400, 'descriptors[1].hitsAddend', 'json'],
      ['a negative hits_addend', 'POST', '/json', (v) => ({ domain: 'api', descriptors: [user(v)], hitsAddend: -1 }), 400, 'hitsAddend', 'json'],
      ['a check that is not JSON', 'POST', '/v1/check', (v) => `policy=login&key=${v}`, 400, 'body', 'check'],
      ['an unknown policy', 'POST', '/v1/check', (v) => ({ policy: 'logn', key: v }), 400, 'policy', 'check'],
      ['an unknown check field', 'POST', '/v1/check', (v) => ({ policy: 'login', key: v, weight: 2 }), 400, 'weight', 'check'],
      ['a negative cost', 'POST', '/v1/check', (v) => ({ policy: 'login', key: v, cost: -1 }), 400, 'cost', 'check'],
      ['a 1 MB key', 'POST', '/v1/check', () => ({ policy: 'login', key: huge }), 400, 'key', 'check'],
      ['a wrong method', 'GET', '/v1/check', () => undefined, 405, 'method', 'check'],
      ['an unknown path', 'POST', '/v1/chek', (v) => ({ policy: 'login', key: v }), 404, 'path', 'check'],
      ['a body over the limit', 'POST', '/json', (v) => JSON.stringify({ domain: 'api', descriptors: [user(v)], pad: 'x'.repeat(MAX_BODY) }), 413, 'body', 'json'],
    ];
    for (const [what, method, path, body, status, field, api] of bad) {
      test(`bad input, ${what}: ${status} naming ${field}, nothing charged, still serving`, async () => {
        const victim = uid('victim');
        const r = await http(s.port, method, path, body(victim));
        assert.equal(r.status, status, r.text);
        assert.match(r.headers['content-type'] ?? '', /^application\/json/);
        if (typeof field === 'string') assert.equal(r.json.field, field, r.text);
        assert.ok(r.json.error.startsWith(`${r.json.field}: `), r.json.error);
        assert.ok(r.json.error.length < 1000, 'the error does not echo a huge value');
        if (status === 405) assert.equal(r.headers.allow, 'POST');
        // nothing charged: the victim's next decision is its first
        if (api === 'json') {
          const next = await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [user(victim)] });
          assert.equal(next.json.statuses[0].limitRemaining, 2);
        } else {
          const next = await http(s.port, 'POST', '/v1/check', { policy: 'login', key: victim });
          assert.equal(next.json.remaining, 2);
        }
      });
    }
  });
}

describe('GET /metrics: Prometheus text, label values from the configuration only', () => {
  const s = useService('memory');

  test('decisions by domain, limit, rule and outcome: within, near, over and shadow', async () => {
    const a = uid('m');
    for (let i = 0; i < 4; i++) await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [user(a)] });
    const sh = uid('sh');
    for (let i = 0; i < 2; i++) await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'shadow', value: sh }] }] });
    for (let i = 0; i < 4; i++) await http(s.port, 'POST', '/v1/check', { policy: 'login', key: a });
    const r = await http(s.port, 'GET', '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'] ?? '', /^text\/plain; version=0\.0\.4/);
    const at = (labels: Record<string, string>): number | undefined => metric(r.text, 'ratekeeper_decisions_total', labels);
    assert.equal(at({ domain: 'api', limit: 'user', rule: 'per_user', outcome: 'within_limit' }), 2);
    assert.equal(at({ domain: 'api', limit: 'user', rule: 'per_user', outcome: 'near_limit' }), 1);
    assert.equal(at({ domain: 'api', limit: 'user', rule: 'per_user', outcome: 'over_limit' }), 1);
    assert.equal(at({ domain: 'api', limit: 'shadow', outcome: 'shadow_mode' }), 1);
    assert.equal(at({ domain: 'policy', limit: 'login', outcome: 'over_limit' }), 1);
    assert.ok((metric(r.text, 'ratekeeper_request_duration_seconds_count', { api: 'json' }) ?? 0) >= 6);
    assert.equal(metric(r.text, 'ratekeeper_config_loads_total', { result: 'success' }), 1);
    assert.ok(r.text.includes('# TYPE ratekeeper_decisions_total counter'));
  });

  test('a huge random descriptor value never becomes a label value, except under detailed_metric', async () => {
    const secret = randomBytes(1000).toString('hex'); // 2000 characters: a key the service decides (under 4096)
    const r1 = await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [user(secret)] });
    assert.equal(r1.status, 200, r1.text);
    const r2 = await http(s.port, 'POST', '/v1/check', { policy: 'login', key: secret });
    assert.equal(r2.status, 200);
    const r3 = await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'nolimit', value: secret }] }, { ...user('x'), limit: { requestsPerUnit: 9, unit: 'HOUR' } }] });
    assert.equal(r3.status, 200);
    const before = (await http(s.port, 'GET', '/metrics')).text;
    assert.ok(!before.includes(secret.slice(0, 64)), 'a client-supplied value in the metrics');
    // detailed_metric asks for the values: the limit `path` reports the request's value
    const p = uid('p');
    await http(s.port, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'path', value: p }] }] });
    const text = (await http(s.port, 'GET', '/metrics')).text;
    assert.equal(metric(text, 'ratekeeper_decisions_total', { domain: 'api', limit: `path_${p}`, outcome: 'within_limit' }), 1, text.split('\n').filter((l) => l.includes(p)).join('\n'));
  });

  test('a request\'s own limits never multiply the series: their rule label does not carry the client\'s requests_per_unit', async () => {
    const series = (text: string): number => text.split('\n').filter((l) => l.startsWith('ratekeeper_decisions_total{')).length;
    const own = (rpu: number): unknown => ({ domain: 'api', descriptors: [{ ...user(uid('o')), limit: { requestsPerUnit: rpu, unit: 'HOUR' } }] });
    await http(s.port, 'POST', '/json', own(1000));
    const before = series((await http(s.port, 'GET', '/metrics')).text);
    for (let rpu = 1001; rpu <= 1050; rpu++) assert.equal((await http(s.port, 'POST', '/json', own(rpu))).status, 200);
    const text = (await http(s.port, 'GET', '/metrics')).text;
    assert.equal(series(text), before, text.split('\n').filter((l) => l.includes('/1h')).slice(0, 5).join('\n'));
  });

  test('HEAD and GET only: POST /metrics is a 405', async () => {
    const r = await http(s.port, 'POST', '/metrics', '{}');
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, 'GET, HEAD');
  });
});

describe('HTTP drain', () => {
  test('slowloris: a request whose body (or headers) trickles in is cut off with a 408 after requestTimeout, not held for minutes', async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom(CONFIG));
    const front = new HttpFront({ service, healthy: () => true, log: () => undefined, requestTimeout: 400 });
    const port = await front.listen('127.0.0.1', 0);
    try {
      for (const start of ['POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"domain"', 'POST /json HTTP/1.1\r\nHost: x\r\nX-Slow: ']) {
        const t0 = performance.now();
        const sock = connect(port, '127.0.0.1');
        let got = '';
        sock.setEncoding('utf8').on('data', (d: string) => (got += d));
        sock.on('error', () => undefined);
        const closed = new Promise((r) => sock.once('close', r));
        sock.write(start);
        // a byte now and then: never done, never idle
        const drip = setInterval(() => sock.write(start.endsWith(': ') ? 'a' : ' '), 100);
        await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))]);
        clearInterval(drip);
        sock.destroy();
        const ms = performance.now() - t0;
        assert.ok(ms < 4000, `still open after ${Math.round(ms)} ms: ${JSON.stringify(start)}`);
        assert.match(got, /^(HTTP\/1\.1 408 |$)/, got);
      }
      const ok = await http(port, 'POST', '/v1/check', { policy: 'login', key: uid('after-slow') });
      assert.equal(ok.status, 200, 'still serving');
    } finally {
      await front.close(500);
    }
  });

  test('a request that arrives on a kept-alive connection while closing is answered (Connection: close), the process does not crash', async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom(CONFIG));
    const front = new HttpFront({ service, healthy: () => true, log: () => undefined });
    const port = await front.listen('127.0.0.1', 0);
    const crashes: unknown[] = [];
    const onCrash = (e: unknown): void => void crashes.push(e);
    process.on('uncaughtException', onCrash);
    try {
      const sock = connect(port, '127.0.0.1');
      await new Promise((r) => sock.once('connect', r));
      let got = '';
      sock.setEncoding('utf8').on('data', (d: string) => (got += d));
      const closed = new Promise((r) => sock.once('close', r));
      // a check in flight (its body not all sent yet) when close() is called, then a second request pipelined on
      // the same connection: /healthcheck, answered at once
      const body = JSON.stringify({ policy: 'login', key: 'drain' });
      sock.write(`POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
      await new Promise((r) => setTimeout(r, 50));
      const closing = front.close(2000);
      sock.write(`${body.slice(5)}GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n`);
      await closing;
      await closed;
      assert.deepEqual(crashes, []);
      const answers = got.split(/(?=HTTP\/1\.1 )/);
      assert.equal(answers.length, 2, got);
      assert.match(answers[0], /^HTTP\/1\.1 200 /);
      assert.match(answers[1], /^HTTP\/1\.1 200 [^]*\r\nConnection: close\r\n[^]*\r\n\r\nOK$/i);
    } finally {
      process.off('uncaughtException', onCrash);
    }
  });
});
