/**
 * The request paths' shortcuts give what the general code gave (issue 16, Speed): the hand-written JSON of a Decision
 * and of an RLS response are JSON.stringify's bytes, the hand-written protobuf of a RateLimitResponse is protobufjs's
 * bytes (for every response the service can make, and random ones), the latency histogram's exposition is
 * prom-client's Histogram's, and a decision or an answer costs no prom-client call (counted at scrape time instead),
 * while /metrics still counts every call exactly.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { limiter, memoryStore, rules } from '../../src/index.js';
import type { Decision } from '../../src/core/types.js';
import { decisionJson } from '../../src/server/httpAnswer.js';
import { asciiText } from '../../src/server/asciiText.js';
import { durationJson, rememberLimit, responseJson, responseToJson, type RlsResponse } from '../../src/server/rls.js';
import type { EnvoyUnit as RlsUnit, RlsCode } from '../../src/server/envoy.js';
import { canEncode, encodeResponse } from '../../src/server/rlsEncode.js';
import { rlsService } from '../../src/server/grpc.js';
import { Metrics } from '../../src/server/metrics.js';
import { FastHistogram } from '../../src/server/histogram.js';

/** decisions — one decision of every kind the library makes (reasons, rate, delay, several rules, dry run, strict). */
function decisions(): Decision[] {
  const out: Decision[] = [];
  const now = 1_700_000_000_000;
  const lims = [
    limiter({ rules: [rules.slidingLog({ limit: 2, per: '1m' })] }),
    limiter({ rules: [rules.earrrl({ limit: 2, per: '1s', halfLife: '1s' })] }),
    limiter({ rules: [rules.leakyBucket({ limit: 2, per: '1s', burst: 3 })] }),
    limiter({ rules: [rules.gcra({ limit: 3, per: '1s' }), rules.exponential({ limit: 5, per: '10s' }), rules.fixedWindow({ limit: 4, per: '1m', name: 'w "quoted" ü' })] }),
    limiter({ rules: [rules.tokenBucket({ limit: 1, per: '1s' })], dryRun: true }),
    limiter({ rules: [rules.slidingWindow({ limit: 1, per: '1s', accounting: 'strict' })], store: memoryStore() }),
  ];
  for (const l of lims) {
    for (let i = 0; i < 4; i++) out.push(l.checkSync('k', { now: now + i * 10, cost: i === 3 ? 0.5 : 1 }));
  }
  const b = lims[0];
  void b.exempt('exempt', { for: 60_000 });
  out.push(b.checkSync('exempt', { now }));
  return out;
}

describe('speed: the hand-written answers are the general code\'s bytes', () => {
  test('decisionJson writes JSON.stringify(decision) for every kind of decision', () => {
    const ds = decisions();
    assert.ok(ds.some((d) => !d.allowed) && ds.some((d) => d.rate !== undefined) && ds.some((d) => d.delay !== undefined) && ds.some((d) => d.reason === 'dry-run'));
    for (const d of ds) assert.equal(decisionJson(d), JSON.stringify(d), JSON.stringify(d));
  });

  const code = fc.constantFrom<RlsCode>('UNKNOWN', 'OK', 'OVER_LIMIT');
  const unit = fc.constantFrom<RlsUnit>('UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK');
  const u32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 16_383, 16_384, 999_999_999, 0xffffffff), fc.integer({ min: 0, max: 0xffffffff }));
  const response: fc.Arbitrary<RlsResponse> = fc.record({
    overall_code: code,
    statuses: fc.array(fc.record({
      code,
      current_limit: fc.option(fc.record({ name: fc.option(fc.string({ unit: 'grapheme' }), { nil: undefined }), requests_per_unit: u32, unit }, { requiredKeys: ['requests_per_unit', 'unit'] }), { nil: undefined }),
      limit_remaining: u32,
      duration_until_reset: fc.option(fc.record({ seconds: fc.oneof(fc.constantFrom(0, 1, 31_536_000), fc.integer({ min: 0, max: 2 ** 40 })), nanos: fc.integer({ min: 0, max: 999_999_999 }) }), { nil: undefined }),
    }, { requiredKeys: ['code', 'limit_remaining'] }), { maxLength: 5 }),
    response_headers_to_add: fc.array(fc.record({ key: fc.string({ unit: 'grapheme' }), value: fc.string({ unit: 'grapheme' }) }), { maxLength: 3 }),
  });

  test('responseJson writes JSON.stringify(responseToJson(r))', () => {
    fc.assert(fc.property(response, (r) => {
      assert.equal(responseJson(r), JSON.stringify(responseToJson(r)));
    }), { numRuns: 500 });
  });

  test('responseJson writes JSON.stringify(responseToJson(r)) for statuses of the service\'s remembered limits too (their text written once)', () => {
    fc.assert(fc.property(response, (r) => {
      const remembered: RlsResponse = { ...r, statuses: r.statuses.map((x) => (x.current_limit === undefined ? x : { ...x, current_limit: rememberLimit({ ...x.current_limit }) })) };
      assert.equal(responseJson(remembered), JSON.stringify(responseToJson(remembered)));
    }), { numRuns: 500 });
  });

  test('asciiText gives the string latin1 decoding gives, at every length (String.fromCharCode up to 8 bytes)', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 20 }).map((a) => a.map((x) => x & 0x7f)), fc.nat(3), (bytes, pad) => {
      const b = Buffer.concat([Buffer.alloc(pad, 0x41), Buffer.from(bytes), Buffer.alloc(pad, 0x42)]);
      assert.equal(asciiText(b, pad, pad + bytes.length), Buffer.from(bytes).toString('latin1'));
    }), { numRuns: 1000 });
  });

  test('durationJson writes the fraction as the padStart and trailing-zero regex form did', () => {
    const regexForm = (d: { seconds: number; nanos: number }): string => (d.nanos === 0 ? `${d.seconds}s` : `${d.seconds}.${String(d.nanos).padStart(9, '0').replace(/0+$/, '')}s`);
    for (const nanos of [0, 1, 10, 100, 5, 50_000, 1_000_000, 100_000_000, 120_000_000, 351_000_000, 999_999_999, 7.5, -1, 1e9, NaN]) {
      assert.equal(durationJson({ seconds: 3, nanos }), regexForm({ seconds: 3, nanos }), String(nanos));
    }
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.oneof(fc.integer({ min: 0, max: 999_999_999 }), fc.integer({ min: 0, max: 999 }).map((ms) => ms * 1_000_000)), (seconds, nanos) => {
      assert.equal(durationJson({ seconds, nanos }), regexForm({ seconds, nanos }));
    }), { numRuns: 2000 });
  });

  test('encodeResponse writes the bytes of protobufjs (proto-loader\'s serializer)', () => {
    const serialize = rlsService().ShouldRateLimit.responseSerialize;
    fc.assert(fc.property(response, (r) => {
      assert.ok(canEncode(r));
      assert.deepEqual(encodeResponse(r), serialize(r));
    }), { numRuns: 500 });
    // what the encoder does not know is left to protobufjs
    assert.equal(canEncode({ overall_code: 'OK', statuses: [], response_headers_to_add: [], request_headers_to_add: [] } as RlsResponse), false);
    assert.equal(canEncode({ overall_code: 'OK', statuses: [{ code: 'OK', limit_remaining: -1 }], response_headers_to_add: [] }), false);
  });

  test('FastHistogram writes the exposition of prom-client\'s Histogram', async () => {
    const buckets = [0.0001, 0.001, 0.01, 0.1];
    const theirs = new Registry();
    const ours = new Registry();
    const h = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['api', 'code'] as const, buckets, registers: [theirs] });
    const f = new FastHistogram('x_seconds', 'h', buckets, [ours]);
    const a = f.series({ api: 'grpc', code: 'OK' });
    const b = f.series({ api: 'check', code: '400' });
    for (const v of [0, 0.00005, 0.0001, 0.0002, 0.001, 0.5, 2, 0.05]) {
      h.observe({ api: 'grpc', code: 'OK' }, v);
      a.observe(v);
    }
    h.observe({ api: 'check', code: '400' }, 0.003);
    b.observe(0.003);
    assert.equal(await ours.metrics(), await theirs.metrics());
    const view = (vs: { labels: object; value: number; metricName?: string }[]): unknown => vs.map((v) => ({ labels: v.labels, value: v.value, metricName: v.metricName }));
    assert.deepEqual(view((await ours.getMetricsAsJSON())[0].values), view((await theirs.getMetricsAsJSON())[0].values));
  });
});

describe('speed: metrics on the request path', () => {
  test('decisions make no prom-client call; a scrape counts every decision and answer', async () => {
    // prom-client's counters (and their labels() children) increment through incWithoutExemplar: counted here. (A
    // histogram child's observe calls a function inside prom-client's module: what replaces it is held to the same
    // exposition above, and its counts below.)
    const calls = { inc: 0 };
    const proto = Counter.prototype as unknown as { incWithoutExemplar: (...a: unknown[]) => void };
    const inc = proto.incWithoutExemplar;
    proto.incWithoutExemplar = function (this: Counter, ...args: unknown[]) {
      calls.inc++;
      return inc.apply(this, args);
    };
    try {
      const m = new Metrics({ defaultMetrics: false });
      const l = limiter({ rules: [rules.fixedWindow({ limit: 1000, per: '1m' }), rules.gcra({ limit: 10, per: '1s' })] });
      const d = l.checkSync('a');
      const denied = l.checkSync('b', { cost: 11 });
      // the first of each series is made (prom-client's labels(), once); from then on nothing reaches prom-client
      m.decision('api', 'path', d, 1);
      m.decision('api', 'path', denied, 11);
      m.time('grpc')('OK');
      const before = { ...calls };
      const N = 1000;
      for (let i = 0; i < N; i++) {
        m.decision('api', 'path', d, 1);
        m.time('grpc')('OK');
        m.answered('check', '200', performance.now());
      }
      assert.deepEqual(calls, before, `no prom-client call per decision: ${calls.inc - before.inc} calls for ${N} decisions`);
      const text = await m.text();
      // the refused call of cost 11 was within the first rule: its 11 hits count there
      assert.match(text, new RegExp(`ratekeeper_decisions_total\\{domain="api",limit="path",rule="1000/1m",outcome="within_limit"\\} ${N + 12}\\n`));
      assert.match(text, new RegExp(`ratekeeper_decisions_total\\{domain="api",limit="path",rule="10/1s",outcome="within_limit"\\} ${N + 1}\\n`));
      assert.match(text, /ratekeeper_decisions_total\{domain="api",limit="path",rule="10\/1s",outcome="over_limit"\} 11\n/);
      assert.match(text, new RegExp(`ratekeeper_request_duration_seconds_count\\{api="grpc",code="OK"\\} ${N + 1}\\n`));
      assert.match(text, new RegExp(`ratekeeper_request_duration_seconds_count\\{api="check",code="200"\\} ${N}\\n`));
      // a second scrape adds nothing twice
      m.decision('api', 'path', d, 2);
      const again = await m.text();
      assert.match(again, new RegExp(`rule="1000/1m",outcome="within_limit"\\} ${N + 14}\\n`));
    } finally {
      proto.incWithoutExemplar = inc;
    }
  });
});
