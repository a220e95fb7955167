/**
 * The hand-written JSON of the request path (decisionJson for /v1/check, responseJson for /json) against hostile
 * values, property-tested: strings of any UTF-16 code units (quotes, backslashes, control characters, lone
 * surrogates, U+2028/U+2029, bidi controls) and any double (NaN, ±Infinity, -0, 1e21, subnormals). Every output
 * parses with JSON.parse and is byte for byte JSON.stringify of the same object (which writes a non-finite number as
 * null); the template literals once wrote NaN and -Infinity as words, an answer no client could parse.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Decision, RuleOutcome } from '../../src/core/types.js';
import { decisionJson } from '../../src/server/httpAnswer.js';
import { responseJson, responseToJson, type RlsResponse } from '../../src/server/rls.js';
import type { EnvoyUnit as RlsUnit, RlsCode } from '../../src/server/envoy.js';

const HOSTILE = ['"', '\\', '\n', '\r', '\u0000', '\u001f', '\u007f', '\u2028', '\u2029', '\u202e', '\u2066', '\ud800', '\udfff', '😀', '</script>'];
const text = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...HOSTILE), fc.array(fc.constantFrom(...HOSTILE), { maxLength: 6 }).map((a) => a.join('')));
const num = fc.oneof(fc.double(), fc.constantFrom(NaN, Infinity, -Infinity, -0, 0, 1e21, 1e-7, 2 ** 53 + 2, Number.MAX_VALUE, Number.MIN_VALUE), fc.nat());

const rule: fc.Arbitrary<RuleOutcome> = fc.record({
  name: text,
  algorithm: fc.constantFrom('slidingLog', 'fixedWindow', 'gcra', 'tokenBucket') as fc.Arbitrary<RuleOutcome['algorithm']>,
  allowed: fc.boolean(),
  limit: num,
  remaining: num,
  retryAfter: num,
  resetAfter: num,
  rate: fc.option(num, { nil: undefined }),
  delay: fc.option(num, { nil: undefined }),
}, { requiredKeys: ['name', 'algorithm', 'allowed', 'limit', 'remaining', 'retryAfter', 'resetAfter'] });

const decision: fc.Arbitrary<Decision> = fc.record({
  allowed: fc.boolean(),
  reason: fc.constantFrom('allowed', 'limited', 'blocked', 'exempt', 'dry-run', 'store-unavailable') as fc.Arbitrary<Decision['reason']>,
  limit: num,
  remaining: num,
  retryAfter: num,
  resetAfter: num,
  rate: fc.option(num, { nil: undefined }),
  delay: fc.option(num, { nil: undefined }),
  rules: fc.array(rule, { maxLength: 3 }),
  blockReason: fc.option(text, { nil: undefined }),
}, { requiredKeys: ['allowed', 'reason', 'limit', 'remaining', 'retryAfter', 'resetAfter', 'rules'] }) as unknown as fc.Arbitrary<Decision>;

test('decisionJson: any numbers (NaN, ±Infinity included) and any strings give JSON.stringify\'s bytes, which parse', () => {
  for (const bad of [NaN, -Infinity, Infinity]) {
    const d = { allowed: false, reason: 'limited', limit: 1, remaining: 0, retryAfter: bad, resetAfter: 1, rules: [{ name: 'r', algorithm: 'gcra', allowed: false, limit: 1, remaining: bad, retryAfter: 1, resetAfter: 1 }] } as unknown as Decision;
    const out = decisionJson(d);
    assert.doesNotThrow(() => JSON.parse(out), out);
    assert.equal(out, JSON.stringify(d));
  }
  fc.assert(fc.property(decision, (d) => {
    const out = decisionJson(d);
    assert.equal(out, JSON.stringify(d));
    JSON.parse(out);
  }), { numRuns: 2000 });
});

test('responseJson: any strings in names and headers give JSON.stringify(responseToJson(r)), which parses', () => {
  const code = fc.constantFrom<RlsCode>('UNKNOWN', 'OK', 'OVER_LIMIT');
  const unit = fc.constantFrom<RlsUnit>('UNKNOWN', 'SECOND', 'MINUTE', 'DAY');
  const u32 = fc.integer({ min: 0, max: 0xffffffff });
  const response: fc.Arbitrary<RlsResponse> = fc.record({
    overall_code: code,
    statuses: fc.array(fc.record({
      code,
      current_limit: fc.option(fc.record({ name: fc.option(text, { nil: undefined }), requests_per_unit: u32, unit }, { requiredKeys: ['requests_per_unit', 'unit'] }), { nil: undefined }),
      limit_remaining: u32,
      duration_until_reset: fc.option(fc.record({ seconds: fc.integer({ min: 0, max: 2 ** 40 }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }), { nil: undefined }),
    }, { requiredKeys: ['code', 'limit_remaining'] }), { maxLength: 4 }),
    response_headers_to_add: fc.array(fc.record({ key: text, value: text }), { maxLength: 3 }),
  });
  fc.assert(fc.property(response, (r) => {
    const out = responseJson(r);
    assert.equal(out, JSON.stringify(responseToJson(r)));
    JSON.parse(out);
  }), { numRuns: 2000 });
});
