/**
 * test/server/check-body — the compact /v1/check body read from its bytes (server/checkBody.ts) gives what JSON.parse
 * gives, or nothing: for random bodies (compact ones, and the same with whitespace, escapes, non-ASCII, repeated or
 * other members, odd numbers), whenever fastCheck answers, JSON.parse of the same bytes has exactly those members and
 * values, the same for hostile bytes (hostileBytes.ts: bytes past ASCII or never UTF-8, the body cut anywhere,
 * members repeated, dropped or out of order, random bytes) against the listener's whole general path (the value
 * scan, the UTF-8 check, JSON.parse, the members); the forms it must leave to JSON.parse are rows; and the service answers a compact body and its spaced twin
 * the same, over a socket, bad ones with the same 400. A body that is not UTF-8 (the fast paths read ASCII only) is
 * refused 400 on /v1/check and /json, as gRPC and /v1/auth refuse such keys (found attacking this change: it was
 * decoded to U+FFFD and admitted, two keys one counter).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { fastCheck, MAX_FAST } from '../../src/server/checkBody.js';
import { jsonValuesOver, MAX_JSON_VALUES } from '../../src/server/jsonScan.js';
import { isUtf8 } from 'node:buffer';
import { hostileBytes } from './hostileBytes.js';
import { HttpFront } from '../../src/server/http.js';
import { RateLimitService } from '../../src/server/service.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { configFrom } from './support.js';

/** parsed — what JSON.parse makes of `text` as check members, or undefined when it is not an object of policy/key/cost only. */
function parsed(text: string): { policy: unknown; key: unknown; cost: unknown } | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'policy' && k !== 'key' && k !== 'cost') return undefined;
  return { policy: o.policy, key: o.key, cost: o.cost };
}

describe('fastCheck', () => {
  const member = fc.oneof(
    fc.constant('policy'), fc.constant('key'), fc.constant('cost'), fc.constant('other'), fc.constant('Key'), fc.constant('pol\\u0069cy'),
  );
  const text = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.stringMatching(/^[ -~]{0,12}$/),
    fc.constantFrom('', 'a"b', 'a\\b', 'é', '\u{1F600}', '\ud800', '\t', 'api'),
  );
  const value = fc.oneof(
    text.map((s) => JSON.stringify(s)),
    fc.constantFrom('0', '1', '01', '-1', '1.5', '1e3', '10.0', '999999999999999', '9999999999999999', 'null', 'true', '"1"', '{}', '[]'),
    fc.nat().map(String),
    text.map((s) => `"${s}"`),
  );
  const body = fc.tuple(fc.array(fc.tuple(member, value), { maxLength: 4 }), fc.constantFrom('', ' ', '\n'), fc.boolean()).map(([ms, ws, broken]) => {
    const s = `{${ms.map(([m, v]) => `"${m}"${ws === ' ' ? ': ' : ':'}${v}`).join(`,${ws}`)}}`;
    return broken ? s.slice(0, Math.max(1, s.length - 1)) : s;
  });

  // compact check bodies (members in any order, cost or not), and the same with one character inserted or replaced
  const plain = fc.stringMatching(/^[ -~]{0,10}$/);
  const compact = fc.tuple(plain, plain, fc.option(fc.nat({ max: 1e6 }), { nil: undefined }), fc.boolean()).map(([p, k, c, swap]) => {
    const ms = swap ? [`"key":${JSON.stringify(k)}`, `"policy":${JSON.stringify(p)}`] : [`"policy":${JSON.stringify(p)}`, `"key":${JSON.stringify(k)}`];
    if (c !== undefined) ms.push(`"cost":${c}`);
    return `{${ms.join(',')}}`;
  });
  const mutated = fc.tuple(compact, fc.nat(), fc.constantFrom(' ', '"', '\\', ',', ':', '{', '}', '0', '.', 'e', '-', 'é', '\u0000', 'x'), fc.boolean())
    .map(([s, at, c, replace]) => {
      const i = at % (s.length + 1);
      return s.slice(0, i) + c + s.slice(replace ? i + 1 : i);
    });

  test('whenever it answers, JSON.parse gives the same members and values (random bodies)', () => {
    let answered = 0;
    fc.assert(fc.property(fc.oneof(body, compact, mutated), (s) => {
      const got = fastCheck(Buffer.from(s, 'utf8'));
      if (got === undefined) return;
      answered++;
      // the scan before JSON.parse is skipped for what the fast path reads: it would pass it
      assert.equal(jsonValuesOver(Buffer.from(s, 'utf8')), undefined, s);
      const want = parsed(s);
      assert.ok(want !== undefined, `${s}: JSON.parse does not give a check's members`);
      assert.deepEqual({ policy: got.policy, key: got.key, cost: got.cost }, want, s);
    }), { numRuns: 5000 });
    assert.ok(MAX_FAST < MAX_JSON_VALUES, 'a body the fast path reads has fewer `{`, `[` and `,` than the scan allows');
    assert.ok(answered > 500, `the random bodies hit the fast path (${answered})`);
  });

  test('whenever it answers, the general path reads the same members (hostile bytes)', () => {
    let answered = 0;
    fc.assert(fc.property(hostileBytes(fc.oneof(compact, body)), (b) => {
      const got = fastCheck(b);
      if (got === undefined) return;
      answered++;
      // what http.ts does with a body the fast path declines: the scan, the UTF-8 check, JSON.parse, the members
      assert.equal(jsonValuesOver(b), undefined, b.toString('hex'));
      assert.ok(isUtf8(b), b.toString('hex'));
      const want = parsed(b.toString());
      assert.ok(want !== undefined, `${b.toString('hex')}: JSON.parse does not give a check's members`);
      assert.deepEqual({ policy: got.policy, key: got.key, cost: got.cost }, want, b.toString('hex'));
    }), { numRuns: 5000 });
    assert.ok(answered > 40, `edited bodies the fast path still reads (${answered})`);
  });

  test('the compact forms it reads', () => {
    const rows: [string, { policy: string; key: string; cost: number | undefined }][] = [
      ['{"policy":"api","key":"c0"}', { policy: 'api', key: 'c0', cost: undefined }],
      ['{"key":"c0","policy":"api"}', { policy: 'api', key: 'c0', cost: undefined }],
      ['{"policy":"api","key":"user:1 x","cost":0}', { policy: 'api', key: 'user:1 x', cost: 0 }],
      ['{"cost":25,"key":"k","policy":"p"}', { policy: 'p', key: 'k', cost: 25 }],
      ['{"policy":"","key":""}', { policy: '', key: '', cost: undefined }],
    ];
    for (const [s, want] of rows) assert.deepEqual(fastCheck(Buffer.from(s)), want, s);
  });

  test('what it leaves to JSON.parse', () => {
    const rows = [
      '{ "policy":"api","key":"c0"}', '{"policy":"api", "key":"c0"}', '{"policy":"api","key":"c0"} ', '{"policy":"a\\u0070i","key":"c0"}',
      '{"policy":"api","key":"é"}', '{"policy":"api","key":"c\\"0"}', '{"policy":"api","key":"c0","cost":1.5}', '{"policy":"api","key":"c0","cost":-1}',
      '{"policy":"api","key":"c0","cost":01}', '{"policy":"api","key":"c0","cost":1e2}', '{"policy":"api","key":"c0","cost":1234567890123456}',
      '{"policy":"api","key":"c0","cost":null}', '{"policy":"api","key":"c0","policy":"x"}', '{"policy":"api","key":"c0","other":1}',
      '{"policy":"api"}', '{"key":"c0"}', '{}', '{"policy":"api","key":"c0",}', '{"policy":"api","key":"c0"', '"policy"', '',
      '{"policy":"api","key":"c\t0"}', '{"policy":"api","key":"c0"}}', '{"policy":1,"key":"c0"}',
      `{"policy":"api","key":"${'k'.repeat(MAX_FAST)}"}`,
    ];
    for (const s of rows) assert.equal(fastCheck(Buffer.from(s)), undefined, s);
  });
});

describe('POST /v1/check: a compact body and its spaced twin get the same answer', () => {
  let front: HttpFront;
  let port: number;
  before(async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom("domain: api\ndescriptors: []\npolicies:\n  login:\n    rules: '3/h'\n"));
    front = new HttpFront({ service, healthy: () => true, log: () => undefined });
    port = await front.listen('127.0.0.1', 0);
  });
  after(() => front.close(0));

  const post = async (body: string): Promise<[number, string]> => {
    const r = await fetch(`http://127.0.0.1:${port}/v1/check`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    return [r.status, await r.text()];
  };

  test('admitted, refused and refused as malformed alike', async () => {
    const pairs: [string, string][] = [
      ['{"policy":"login","key":"a","cost":2}', '{ "policy": "login", "key": "b", "cost": 2 }'],
      ['{"policy":"login","key":"a"}', '{ "policy": "login", "key": "b" }'],
      ['{"policy":"login","key":"a"}', '{ "policy": "login", "key": "b" }'],
      ['{"policy":"","key":"a"}', '{ "policy": "", "key": "a" }'],
      ['{"policy":"login","key":""}', '{ "policy": "login", "key": "" }'],
      ['{"policy":"nope","key":"a"}', '{ "policy": "nope", "key": "a" }'],
      ['{"policy":"login","key":"a","cost":1000000000000000}', '{ "policy": "login", "key": "a", "cost": 1000000000000000 }'],
    ];
    for (const [compact, spaced] of pairs) {
      const [s1, t1] = await post(compact);
      const [s2, t2] = await post(spaced);
      assert.equal(s1, s2, `${compact}: ${t1} / ${t2}`);
      // the same decision for two keys with the same history: the bodies differ only in the key's time stamps
      assert.equal(t1.replace(/"(retryAfter|resetAfter)":\d+(\.\d+)?/g, ''), t2.replace(/"(retryAfter|resetAfter)":\d+(\.\d+)?/g, ''), compact);
    }
  });
});

describe('POST /v1/check and /json: a body that is not UTF-8', () => {
  let front: HttpFront;
  let port: number;
  before(async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom("domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1 }\npolicies:\n  login:\n    rules: '1/h'\n"));
    front = new HttpFront({ service, healthy: () => true, log: () => undefined });
    port = await front.listen('127.0.0.1', 0);
  });
  after(() => front.close(0));

  const post = async (path: string, body: Buffer): Promise<[number, string]> => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    return [r.status, await r.text()];
  };
  const bytes = (before: string, b: number[], after: string): Buffer => Buffer.concat([Buffer.from(before), Buffer.from(b), Buffer.from(after)]);

  test('is refused 400 naming the body: decoded, two keys would have been one counter (U+FFFD); the service keeps serving', async () => {
    // before: both were admitted as the key "\uFFFD", so the second was refused by the first one's budget
    for (const b of [[0xff], [0xfe]]) {
      const [status, text] = await post('/v1/check', bytes('{"policy":"login","key":"', b, '"}'));
      assert.equal(status, 400, text);
      assert.deepEqual(JSON.parse(text), { error: 'body: is not valid UTF-8 (decoded, distinct keys would become one counter)', field: 'body' });
      const [s2, t2] = await post('/json', bytes('{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"', b, '"}]}]}'));
      assert.equal(s2, 400, t2);
      assert.equal(JSON.parse(t2).field, 'body');
    }
    assert.equal((await post('/v1/check', Buffer.from('{"policy":"login","key":"é"}')))[0], 200);
    assert.equal((await post('/json', Buffer.from('{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"é"}]}]}')))[0], 200);
  });
});
