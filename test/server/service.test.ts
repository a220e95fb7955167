/**
 * The service's decisions as tables of (config, requests at explicit times) → (overall code, per-descriptor codes,
 * remaining, reset), on the memory store, a standalone Redis and the 3-master cluster: envoyproxy/ratelimit's
 * documented examples (nested keys, value-less keys, shadow_mode, replaces, unlimited, the request's own limit,
 * hits_addend) and ratekeeper's additions (all-or-nothing across descriptors, algorithms, several limits, policies).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/types.js';
import { RateLimitService } from '../../src/server/service.js';
import type { RlsRequest, RlsResponse } from '../../src/server/rls.js';
import { MAX_DESCRIPTORS, MAX_OVERRIDES } from '../../src/server/envoy.js';
import { uniquePrefix, useCluster, useRedis } from '../support/redis-suite.js';
import { configFrom } from './support.js';
import { Metrics } from '../../src/server/metrics.js';
import { metric } from './procs.js';

/** T0 — a time at the start of a minute (and so of a second and an hour: 2026-11-23T00:00:00Z). */
const T0 = Date.UTC(2026, 10, 23);

type Entries = [string, string][];
interface Row {
  /** at — ms after T0. */
  at: number;
  descriptors: (Entries | { entries: Entries; hits?: number; limit?: [number, string] })[];
  hits?: number;
  domain?: string;
  /** expect — the overall code, then each descriptor's [code, remaining, reset seconds?]. */
  overall: 'OK' | 'OVER_LIMIT';
  statuses?: ([string, number] | [string, number, number])[];
}

interface Case { name: string; config: string; rows: Row[] }

function request(r: Row): RlsRequest {
  return {
    domain: r.domain ?? 'd',
    hits_addend: r.hits,
    descriptors: r.descriptors.map((d) => {
      const x = Array.isArray(d) ? { entries: d } : d;
      return {
        entries: x.entries.map(([key, value]) => ({ key, value })),
        ...('hits' in x && x.hits !== undefined ? { hits_addend: { value: x.hits } } : {}),
        ...('limit' in x && x.limit !== undefined ? { limit: { requests_per_unit: x.limit[0], unit: x.limit[1] as 'SECOND' } } : {}),
      };
    }),
  };
}

const CASES: Case[] = [
  {
    name: 'envoy example 1: nested keys and a value-less key, windows aligned to the unit',
    config: `
domain: d
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: key2
        rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: key1
    value: value2
    descriptors:
      - key: key2
        value: value2
        rate_limit: { unit: second, requests_per_unit: 1 }
`,
    rows: [
      { at: 0, descriptors: [[['key1', 'value1'], ['key2', 'a']]], overall: 'OK', statuses: [['OK', 1, 60]] },
      { at: 10_000, descriptors: [[['key1', 'value1'], ['key2', 'a']]], overall: 'OK', statuses: [['OK', 0, 50]] },
      { at: 20_000, descriptors: [[['key1', 'value1'], ['key2', 'a']]], overall: 'OVER_LIMIT', statuses: [['OVER_LIMIT', 0, 40]] },
      // another value of the value-less key2 has its own counter
      { at: 20_000, descriptors: [[['key1', 'value1'], ['key2', 'b']]], overall: 'OK', statuses: [['OK', 1, 40]] },
      // a new minute: a new window
      { at: 60_000, descriptors: [[['key1', 'value1'], ['key2', 'a']]], overall: 'OK', statuses: [['OK', 1, 60]] },
      { at: 60_500, descriptors: [[['key1', 'value2'], ['key2', 'value2']]], overall: 'OK', statuses: [['OK', 0, 0.5]] },
      { at: 60_700, descriptors: [[['key1', 'value2'], ['key2', 'value2']]], overall: 'OVER_LIMIT', statuses: [['OVER_LIMIT', 0, 0.3]] },
      // no limit for key2=other under key1=value2, nor for a shorter or longer descriptor, nor another domain
      { at: 60_700, descriptors: [[['key1', 'value2'], ['key2', 'other']]], overall: 'OK', statuses: [['OK', 0]] },
      { at: 60_700, descriptors: [[['key1', 'value1']]], overall: 'OK', statuses: [['OK', 0]] },
      { at: 60_700, descriptors: [[['key1', 'value1'], ['key2', 'a'], ['key3', 'x']]], overall: 'OK', statuses: [['OK', 0]] },
      { at: 60_700, domain: 'nope', descriptors: [[['key1', 'value1'], ['key2', 'a']]], overall: 'OK', statuses: [['OK', 0]] },
    ],
  },
  {
    name: 'all-or-nothing: a request refused by one descriptor charges none of the others (envoyproxy/ratelimit#1060)',
    config: `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 1 }
`,
    rows: [
      { at: 0, descriptors: [[['user', 'u']], [['path', '/a']]], overall: 'OK', statuses: [['OK', 2, 60], ['OK', 0, 60]] },
      // /a is over: refused, and user u is not charged (remaining stays 2)
      { at: 1000, descriptors: [[['user', 'u']], [['path', '/a']]], overall: 'OVER_LIMIT', statuses: [['OK', 2, 59], ['OVER_LIMIT', 0, 59]] },
      { at: 2000, descriptors: [[['user', 'u']], [['path', '/a']]], overall: 'OVER_LIMIT', statuses: [['OK', 2, 58], ['OVER_LIMIT', 0, 58]] },
      { at: 3000, descriptors: [[['user', 'u']], [['path', '/b']]], overall: 'OK', statuses: [['OK', 1, 57], ['OK', 0, 57]] },
      { at: 4000, descriptors: [[['user', 'u']], [['path', '/c']]], overall: 'OK', statuses: [['OK', 0, 56], ['OK', 0, 56]] },
      // now the user is over: /d is not charged
      { at: 5000, descriptors: [[['user', 'u']], [['path', '/d']]], overall: 'OVER_LIMIT', statuses: [['OVER_LIMIT', 0, 55], ['OK', 1]] },
      { at: 5000, descriptors: [[['path', '/d']]], overall: 'OK', statuses: [['OK', 0, 55]] },
    ],
  },
  {
    name: 'envoy example 6: shadow_mode reports OK while over its limit; the other limit enforces',
    config: `
domain: d
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit: { requests_per_unit: 1, unit: second }
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit: { requests_per_unit: 1, unit: second }
`,
    rows: [
      { at: 0, descriptors: [[['service', 's'], ['user', 'user-a']]], overall: 'OK' },
      { at: 100, descriptors: [[['service', 's'], ['user', 'user-a']]], overall: 'OK', statuses: [['OK', 0]] },
      { at: 200, descriptors: [[['service', 's'], ['user', 'user-b']]], overall: 'OK' },
      { at: 300, descriptors: [[['service', 's'], ['user', 'user-b']]], overall: 'OVER_LIMIT' },
    ],
  },
  {
    name: 'envoy example 7: replaces — a named limit is replaced by the one naming it, in the same request',
    config: `
domain: d
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit: { name: specific_limit, requests_per_unit: 1, unit: second }
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces: [{ name: specific_limit }]
          requests_per_unit: 2
          unit: second
`,
    rows: [
      { at: 0, descriptors: [[['key_1', 'value_1'], ['user', 'bkthomps']]], overall: 'OK', statuses: [['OK', 0]] },
      { at: 10, descriptors: [[['key_1', 'value_1'], ['user', 'bkthomps']]], overall: 'OVER_LIMIT' },
      // with key_2 in the request, the 1/s limit does not apply: only the 2/s one
      { at: 20, descriptors: [[['key_1', 'value_1'], ['user', 'bkthomps']], [['key_2', 'value_2'], ['user', 'bkthomps']]], overall: 'OK', statuses: [['OK', 0], ['OK', 1]] },
      { at: 30, descriptors: [[['key_1', 'value_1'], ['user', 'bkthomps']], [['key_2', 'value_2'], ['user', 'bkthomps']]], overall: 'OK', statuses: [['OK', 0], ['OK', 0]] },
      { at: 40, descriptors: [[['key_1', 'value_1'], ['user', 'bkthomps']], [['key_2', 'value_2'], ['user', 'bkthomps']]], overall: 'OVER_LIMIT' },
    ],
  },
  {
    name: 'unlimited, the request\'s own limit, and hits_addend (request and per descriptor)',
    config: `
domain: d
descriptors:
  - key: internal
    rate_limit: { unlimited: true }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 10 }
`,
    rows: [
      { at: 0, descriptors: [[['internal', 'x']]], overall: 'OK', statuses: [['OK', 4294967295]] },
      { at: 0, hits: 4, descriptors: [[['user', 'u']]], overall: 'OK', statuses: [['OK', 6, 60]] },
      { at: 1, hits: 4, descriptors: [{ entries: [['user', 'u']], hits: 5 }], overall: 'OK', statuses: [['OK', 1, 59.999]] },
      // 2 more do not fit: refused, and (leaky, the default) not counted: 1 still fits
      { at: 2, descriptors: [{ entries: [['user', 'u']], hits: 2 }], overall: 'OVER_LIMIT', statuses: [['OVER_LIMIT', 0, 59.998]] },
      { at: 3, descriptors: [[['user', 'u']]], overall: 'OK', statuses: [['OK', 0, 59.997]] },
      // the request's own limit: 1 per second for this descriptor, whatever the configuration says
      { at: 1000, descriptors: [{ entries: [['user', 'v']], limit: [1, 'SECOND'] }], overall: 'OK', statuses: [['OK', 0, 1]] },
      { at: 1500, descriptors: [{ entries: [['user', 'v']], limit: [1, 'SECOND'] }], overall: 'OVER_LIMIT', statuses: [['OVER_LIMIT', 0, 0.5]] },
      { at: 1500, descriptors: [{ entries: [['user', 'w']], limit: [0, 'MINUTE'] }], overall: 'OVER_LIMIT', statuses: [['OVER_LIMIT', 0]] },
    ],
  },
  {
    name: 'ratekeeper additions: an algorithm and several limits on one descriptor',
    config: `
domain: d
descriptors:
  - key: api_key
    rate_limits:
      - { algorithm: gcra, requests_per_unit: 2, unit: second }
      - { algorithm: slidingLog, requests_per_unit: 3, unit: minute }
`,
    rows: [
      { at: 0, descriptors: [[['api_key', 'k']]], overall: 'OK' },
      { at: 1, descriptors: [[['api_key', 'k']]], overall: 'OK' },
      // gcra 2/s: the third at once is refused; half a second later one more fits
      { at: 2, descriptors: [[['api_key', 'k']]], overall: 'OVER_LIMIT' },
      { at: 600, descriptors: [[['api_key', 'k']]], overall: 'OK' },
      // the sliding log: 3 in any minute, even across the minute boundary
      { at: 59_000, descriptors: [[['api_key', 'k']]], overall: 'OVER_LIMIT' },
      { at: 60_001, descriptors: [[['api_key', 'k']]], overall: 'OK' },
    ],
  },
];

function check(got: RlsResponse, row: Row, i: number): void {
  const where = `row ${i} (at ${row.at})`;
  assert.equal(got.overall_code, row.overall, `${where}: overall ${JSON.stringify(got)}`);
  if (row.statuses === undefined) return;
  assert.equal(got.statuses.length, row.descriptors.length, `${where}: one status per descriptor`);
  row.statuses.forEach(([code, remaining, reset], j) => {
    const s = got.statuses[j];
    assert.equal(s.code, code, `${where} descriptor ${j}: code ${JSON.stringify(s)}`);
    assert.equal(s.limit_remaining, remaining, `${where} descriptor ${j}: remaining ${JSON.stringify(s)}`);
    if (reset !== undefined) {
      const ms = (s.duration_until_reset?.seconds ?? 0) * 1000 + (s.duration_until_reset?.nanos ?? 0) / 1e6;
      assert.ok(Math.abs(ms - reset * 1000) <= 1, `${where} descriptor ${j}: reset ${ms} ms, want ${reset} s`);
    }
  });
}

function suite(store: () => Store): void {
  for (const c of CASES) {
    test(c.name, async () => {
      let now = T0;
      const service = new RateLimitService({ store: store(), clock: { now: () => now } });
      service.setConfig(await configFrom(c.config));
      for (const [i, row] of c.rows.entries()) {
        now = T0 + row.at;
        check(await service.shouldRateLimit(request(row)), row, i);
      }
    });
  }

  test('native policies: the key is the client, namespaced by the policy', async () => {
    let now = T0;
    const service = new RateLimitService({ store: store(), clock: { now: () => now } });
    service.setConfig(await configFrom(`
policies:
  login: { rules: '2/min' }
  search: { rules: [{ algorithm: gcra, limit: 1, per: 1s }] }
`));
    assert.equal((await service.check('login', 'u', 1)).remaining, 1);
    assert.equal((await service.check('login', 'u', 1)).allowed, true);
    assert.equal((await service.check('login', 'u', 1)).allowed, false);
    // the same client under another policy has its own state
    assert.equal((await service.check('search', 'u', 1)).allowed, true);
    now += 1000;
    assert.equal((await service.check('search', 'u', 1)).allowed, true);
    await assert.rejects(service.check('nope', 'u', 1), /policy: no policy "nope"/);
  });
}

describe('service decisions on the memory store', () => suite(() => new MemoryStore()));
describe('service decisions on a standalone Redis', () => {
  const redis = useRedis();
  suite(() => new RedisStore({ client: redis.client, prefix: uniquePrefix('svc'), timeout: 5000 }));
});
describe('service decisions on a 3-master Redis Cluster', () => {
  const redis = useCluster();
  suite(() => new RedisStore({ client: redis.client, prefix: uniquePrefix('svc'), timeout: 5000 }));
});

test('a reload that changes a limit\'s rules frees the old limiter\'s table on the memory store (no growth across reloads)', async () => {
  const store = new MemoryStore();
  let now = Date.now();
  const service = new RateLimitService({ store, clock: { now: () => now } });
  const tables = (): number => (store as unknown as { tables: Map<unknown, unknown> }).tables.size;
  for (let i = 1; i <= 5; i++) {
    service.setConfig(await configFrom(`domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${i} }\npolicies:\n  p: { rules: '${i}/s' }\n`));
    await service.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value: 'u' }] }] });
  }
  assert.equal(tables(), 2, 'one table per live limit or policy');
  // request-supplied limits: each distinct one is a limiter; they are bounded (MAX_OVERRIDES: past it, while every one
  // is in use, a new one is refused) and freed when dropped (an idle one makes room for a new one)
  const config = await configFrom('domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n');
  service.setConfig(config);
  let refused = 0;
  for (let round = 0; round < 2; round++) {
    for (let rpu = 1; rpu <= 1100; rpu++) {
      await service.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value: 'u' }], limit: { requests_per_unit: rpu + round * 1100, unit: 'MINUTE' } }] })
        .catch((e: Error & { field?: string }) => {
          assert.equal(e.field, 'descriptors[0].limit');
          refused++;
        });
    }
    // the live limit, the policy the reload above dropped (kept for its grace period, RETIRED_GRACE_MS), the overrides
    assert.ok(tables() <= 2 + MAX_OVERRIDES, `tables: ${tables()}`);
    // a minute (and the slack) later every one of them is idle: the next round's take their places, their tables freed
    now += 62_000;
  }
  assert.equal(refused, 2 * (1100 - MAX_OVERRIDES));
});

test('--shadow-mode refuses nothing: a requests_per_unit: 0 limit is OK too (counted, not enforced)', async () => {
  const service = new RateLimitService({ store: new MemoryStore(), shadowMode: true, responseHeaders: true });
  service.setConfig(await configFrom('domain: d\ndescriptors:\n  - key: blocked\n    rate_limit: { unit: minute, requests_per_unit: 0 }\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n'));
  const r = await service.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'blocked', value: 'x' }] }, { entries: [{ key: 'user', value: 'u' }] }] });
  assert.equal(r.overall_code, 'OK', JSON.stringify(r));
  assert.deepEqual(r.statuses.map((s) => s.code), ['OK', 'OK']);
  assert.equal(r.response_headers_to_add.some((h) => h.key === 'Retry-After'), false, JSON.stringify(r.response_headers_to_add));
});

test('a hits_addend past the largest cost is a bad request naming the descriptor\'s field, and charges nothing', async () => {
  const service = new RateLimitService({ store: new MemoryStore() });
  service.setConfig(await configFrom('domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n'));
  const u = { entries: [{ key: 'user', value: 'u' }] };
  await assert.rejects(service.shouldRateLimit({ domain: 'd', descriptors: [u, { ...u, hits_addend: { value: 2e15 } }] }),
    (e: Error & { field?: string }) => e.name === 'BadRequest' && e.field === 'descriptors[1].hits_addend');
  // duplicate descriptors are one request of their summed cost: a sum past the largest cost names the first past it
  await assert.rejects(service.shouldRateLimit({ domain: 'd', descriptors: [{ ...u, hits_addend: { value: 6e14 } }, { ...u, hits_addend: { value: 6e14 } }] }),
    (e: Error & { field?: string }) => e.name === 'BadRequest' && e.field === 'descriptors[1].hits_addend');
  const r = await service.shouldRateLimit({ domain: 'd', descriptors: [u] });
  assert.equal(r.statuses[0].limit_remaining, 1, 'nothing was charged');
});

test('RateLimit fields: a shadow_mode limit never binds them (it refuses nothing), an enforced one does', async () => {
  const service = new RateLimitService({ store: new MemoryStore(), responseHeaders: true });
  service.setConfig(await configFrom('domain: d\ndescriptors:\n  - key: shadow\n    shadow_mode: true\n    rate_limit: { name: trial, unit: minute, requests_per_unit: 1 }\n  - key: user\n    rate_limit: { name: per_user, unit: minute, requests_per_unit: 5 }\n'));
  const req = { domain: 'd', descriptors: [{ entries: [{ key: 'shadow', value: 's' }] }, { entries: [{ key: 'user', value: 'u' }] }] };
  await service.shouldRateLimit(req);
  const r = await service.shouldRateLimit(req);
  assert.equal(r.overall_code, 'OK');
  const h = Object.fromEntries(r.response_headers_to_add.map((x) => [x.key, x.value]));
  assert.match(h['RateLimit-Policy'] ?? '', /^"per_user";q=5;/, JSON.stringify(h));
  assert.match(h.RateLimit ?? '', /^"per_user";r=3\b/, JSON.stringify(h));
  // only shadow limits: nothing is enforced, so no RateLimit fields at all
  const only = await service.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'shadow', value: 's' }] }] });
  assert.deepEqual(only.response_headers_to_add, []);
});

test('a requests_per_unit: 0 limit\'s refusals are counted in ratekeeper_decisions_total (shadow_mode when not enforced)', async () => {
  const metrics = new Metrics({ defaultMetrics: false });
  const service = new RateLimitService({ store: new MemoryStore(), metrics });
  service.setConfig(await configFrom('domain: d\ndescriptors:\n  - key: blocked\n    rate_limit: { name: nope, unit: minute, requests_per_unit: 0 }\n  - key: trial\n    shadow_mode: true\n    rate_limit: { unit: hour, requests_per_unit: 0 }\n'));
  const one = (key: string, hits?: number): RlsRequest => ({ domain: 'd', descriptors: [{ entries: [{ key, value: 'x' }] }], hits_addend: hits });
  assert.equal((await service.shouldRateLimit(one('blocked'))).overall_code, 'OVER_LIMIT');
  assert.equal((await service.shouldRateLimit(one('blocked', 3))).overall_code, 'OVER_LIMIT');
  assert.equal((await service.shouldRateLimit(one('trial'))).overall_code, 'OK');
  const text = await metrics.text();
  assert.equal(metric(text, 'ratekeeper_decisions_total', { domain: 'd', limit: 'blocked', rule: 'nope', outcome: 'over_limit' }), 4, text);
  assert.equal(metric(text, 'ratekeeper_decisions_total', { domain: 'd', limit: 'trial', rule: '0/1h', outcome: 'shadow_mode' }), 1, text);
});

test('a request of more than MAX_DESCRIPTORS descriptors is a bad request before any work (100 000 held the event loop for seconds); 1000 are decided', async () => {
  const service = new RateLimitService({ store: new MemoryStore() });
  service.setConfig(await configFrom('domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n'));
  const many = (n: number): RlsRequest => ({ domain: 'd', descriptors: Array.from({ length: n }, (_, i) => ({ entries: [{ key: 'user', value: `u${i}` }] })) });
  await assert.rejects(service.shouldRateLimit(many(MAX_DESCRIPTORS + 1)),
    (e: Error & { field?: string }) => e.name === 'BadRequest' && e.field === 'descriptors' && /1001 descriptors; at most 1000/.test(e.message));
  const r = await service.shouldRateLimit(many(MAX_DESCRIPTORS));
  assert.equal(r.overall_code, 'OK');
  assert.equal(r.statuses[0].limit_remaining, 4, 'the refused request charged nothing');
});
