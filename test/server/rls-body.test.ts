/**
 * test/server/rls-body — the compact /json body read from its bytes (server/rlsBody.ts) gives what JSON.parse then
 * requestFromJson give, or nothing: for random compact requests and the same with one character inserted or
 * replaced, whenever fastRls answers, the general path gives the same request (and does not refuse it); the same for
 * hostile bytes (hostileBytes.ts: bytes past ASCII or never UTF-8, the body cut anywhere, members repeated, dropped
 * or out of order, random bytes) against the listener's whole general path (the value scan, the UTF-8 check,
 * JSON.parse, requestFromJson); answers read one after another stay as read; the forms it must leave to the general
 * path are rows.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MAX_DESCRIPTORS, MAX_ENTRIES } from '../../src/server/envoy.js';
import { requestFromJson } from '../../src/server/rls.js';
import { fastRls, MAX_FAST } from '../../src/server/rlsBody.js';
import { jsonValuesOver, MAX_JSON_VALUES } from '../../src/server/jsonScan.js';
import { isUtf8 } from 'node:buffer';
import { hostileBytes } from './hostileBytes.js';

describe('fastRls', () => {
  const plain = fc.stringMatching(/^[ -~]{0,8}$/);
  const entry = fc.tuple(plain, plain).map(([key, value]) => ({ key, value }));
  const request = fc.tuple(plain, fc.array(fc.array(entry, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }))
    .map(([domain, ds]) => JSON.stringify({ domain, descriptors: ds.map((entries) => ({ entries })) }));
  const mutated = fc.tuple(request, fc.nat(), fc.constantFrom(' ', '"', '\\', ',', ':', '{', '}', '[', ']', 'é', '\u0000', 'x', '1'), fc.boolean())
    .map(([s, at, c, replace]) => {
      const i = at % (s.length + 1);
      return s.slice(0, i) + c + s.slice(replace ? i + 1 : i);
    });

  test('whenever it answers, JSON.parse and requestFromJson give the same request (random bodies)', () => {
    let answered = 0;
    fc.assert(fc.property(fc.oneof(request, mutated), (s) => {
      const got = fastRls(Buffer.from(s, 'utf8'));
      if (got === undefined) return;
      answered++;
      // the scan before JSON.parse is skipped for what the fast path reads: it would pass it
      assert.equal(jsonValuesOver(Buffer.from(s, 'utf8')), undefined, s);
      assert.deepEqual(got, requestFromJson(JSON.parse(s)), s);
    }), { numRuns: 5000 });
    assert.ok(MAX_FAST < MAX_JSON_VALUES, 'a body the fast path reads has fewer `{`, `[` and `,` than the scan allows');
    assert.ok(answered > 1000, `the random bodies hit the fast path (${answered})`);
  });

  test('whenever it answers, the general path reads the same request (hostile bytes)', () => {
    let answered = 0;
    fc.assert(fc.property(hostileBytes(request), (b) => {
      const got = fastRls(b);
      if (got === undefined) return;
      answered++;
      // what http.ts does with a body the fast path declines: the scan, the UTF-8 check, JSON.parse, requestFromJson
      assert.equal(jsonValuesOver(b), undefined, b.toString('hex'));
      assert.ok(isUtf8(b), b.toString('hex'));
      assert.deepEqual(got, requestFromJson(JSON.parse(b.toString())), b.toString('hex'));
    }), { numRuns: 5000 });
    assert.ok(answered > 40, `edited bodies the fast path still reads (${answered})`);
  });

  test('each answer is its own: read one after another (a declined body between), none changes the ones before', () => {
    // fastRls gathers descriptors and entries in scratch lists and copies them out: no array of an answer is shared
    fc.assert(fc.property(fc.array(fc.oneof(request, mutated), { minLength: 2, maxLength: 8 }), (bodies) => {
      const got = bodies.map((s) => fastRls(Buffer.from(s, 'utf8')));
      for (let i = 0; i < bodies.length; i++) if (got[i] !== undefined) assert.deepEqual(got[i], requestFromJson(JSON.parse(bodies[i])), bodies[i]);
    }), { numRuns: 1000 });
  });

  test('the bench\'s body', () => {
    const s = '{"domain":"bench","descriptors":[{"entries":[{"key":"client","value":"c1"}]},{"entries":[{"key":"path","value":"/p1"}]}]}';
    assert.deepEqual(fastRls(Buffer.from(s)), requestFromJson(JSON.parse(s)));
  });

  test('what it leaves to the general path', () => {
    const many = (n: number, m: number): string => JSON.stringify({ domain: 'd', descriptors: Array.from({ length: n }, () => ({ entries: Array.from({ length: m }, () => ({ key: 'k', value: 'v' })) })) });
    const rows = [
      '{"domain":"d","descriptors":[]}', '{"domain":"d","descriptors":[{"entries":[]}]}', '{"domain":"d"}', '{"descriptors":[{"entries":[{"key":"k","value":"v"}]}],"domain":"d"}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}],"hitsAddend":2}', '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}],"hitsAddend":2}]}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requestsPerUnit":1,"unit":"SECOND"}}]}',
      '{"domain":"d","descriptors":[{"entries":[{"value":"v","key":"k"}]}]}', '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v","x":1}]}]}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"k"}]}]}', '{"domain":"d","descriptors":[{"entries":[{"key":"é","value":"v"}]}]}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v\\""}]}]}', '{"domain": "d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]} ', '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}}',
      '{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]},]}', '{"domain":null,"descriptors":[{"entries":[{"key":"k","value":"v"}]}]}',
      many(MAX_DESCRIPTORS + 1, 1), many(1, MAX_ENTRIES + 1),
      `{"domain":"${'d'.repeat(MAX_FAST)}","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}`,
    ];
    for (const s of rows) assert.equal(fastRls(Buffer.from(s)), undefined, s);
    assert.notEqual(fastRls(Buffer.from(many(1, MAX_ENTRIES))), undefined);
  });
});
