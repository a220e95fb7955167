/**
 * test/server/rls-decode — the usual RateLimitRequest read from its protobuf bytes (server/rlsDecode.ts) gives what
 * protobufjs (proto-loader's deserializer, the service's own options) gives, or nothing: for random requests encoded
 * by protobufjs — every field of the proto, empty and non-ASCII strings — and for the same bytes with one byte
 * inserted, replaced or cut, whenever fastRequest answers, protobufjs decodes the same object and the wire scan
 * (rlsWire.ts) passes the bytes. The forms it must leave to them are rows; the service answers both alike.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MAX_DESCRIPTORS, MAX_ENTRIES } from '../../src/server/envoy.js';
import { rlsService } from '../../src/server/grpc.js';
import { fastRequest } from '../../src/server/rlsDecode.js';
import { MAX_FIELDS, scanRequest } from '../../src/server/rlsWire.js';

const def = rlsService().ShouldRateLimit;
const encode = (r: unknown): Buffer => def.requestSerialize(r);

/** protobufjs — what the service decoded before: the object, or 'throws'. */
function protobufjs(bytes: Buffer): unknown {
  try {
    return def.requestDeserialize(bytes);
  } catch {
    return 'throws';
  }
}

describe('fastRequest', () => {
  const plain = fc.stringMatching(/^[ -~]{0,8}$/);
  const any = fc.oneof(plain, fc.string({ maxLength: 6, unit: 'grapheme' }), fc.constantFrom('', 'é', '\u0000', '\u007f'));
  const entry = fc.record({ key: fc.oneof(plain, any), value: fc.oneof(plain, any) }, { requiredKeys: [] });
  const usualEntry = fc.record({ key: plain, value: plain });
  const descriptor = fc.record({
    entries: fc.array(fc.oneof(usualEntry, entry), { maxLength: 3 }),
    limit: fc.record({ requests_per_unit: fc.nat(), unit: fc.constantFrom('UNKNOWN', 'SECOND', 'MINUTE', 'HOUR') }),
    hits_addend: fc.record({ value: fc.nat() }),
  }, { requiredKeys: ['entries'] });
  const usual = fc.record({ domain: plain, descriptors: fc.array(fc.record({ entries: fc.array(usualEntry, { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: 4 }) });
  const request = fc.oneof(usual, fc.record({ domain: any, descriptors: fc.array(descriptor, { maxLength: 3 }), hits_addend: fc.nat() }, { requiredKeys: [] })).map(encode);
  const mutated = fc.tuple(request, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('insert', 'replace', 'cut'))
    .map(([b, at, byte, how]) => {
      const i = at % (b.length + 1);
      if (how === 'cut') return b.subarray(0, i);
      return Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(how === 'replace' ? i + 1 : i)]);
    });

  test('whenever it answers, protobufjs decodes the same request and the scan passes it (random bytes)', () => {
    let answered = 0;
    fc.assert(fc.property(fc.oneof(request, mutated), (bytes) => {
      const got = fastRequest(bytes);
      if (got === undefined) return;
      answered++;
      assert.equal(scanRequest(bytes), undefined, bytes.toString('hex'));
      assert.deepEqual(got, protobufjs(bytes), bytes.toString('hex'));
    }), { numRuns: 5000 });
    assert.ok(answered > 1000, `the random requests hit the fast path (${answered})`);
  });

  test('the usual requests: every one read from its bytes', () => {
    fc.assert(fc.property(usual.map(encode), (bytes) => {
      assert.deepEqual(fastRequest(bytes), protobufjs(bytes));
    }), { numRuns: 1000 });
  });

  test('the bench\'s request, and the bounds', () => {
    const r = { domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: 'c1' }] }, { entries: [{ key: 'path', value: '/p1' }] }] };
    assert.deepEqual(fastRequest(encode(r)), r);
    const many = (n: number, m: number): Buffer => encode({ domain: 'd', descriptors: Array.from({ length: n }, () => ({ entries: Array.from({ length: m }, () => ({ key: 'k', value: 'v' })) })) });
    assert.notEqual(fastRequest(many(MAX_DESCRIPTORS, 1)), undefined);
    assert.notEqual(fastRequest(many(1, MAX_ENTRIES)), undefined);
    // past a bound: the scan refuses it, so the fast path must not read it
    for (const b of [many(MAX_DESCRIPTORS + 1, 1), many(1, MAX_ENTRIES + 1), many(Math.ceil(MAX_FIELDS / (1 + 3 * 10)) + 1, 10)]) {
      assert.notEqual(scanRequest(b), undefined);
      assert.equal(fastRequest(b), undefined);
    }
  });

  test('what it leaves to the scan and protobufjs', () => {
    const e = [{ key: 'k', value: 'v' }];
    const rows: unknown[] = [
      { domain: 'd' }, { descriptors: [{ entries: e }] }, { domain: 'd', descriptors: [{ entries: [] }] },
      { domain: 'd', descriptors: [{ entries: e }], hits_addend: 2 }, { domain: 'd', descriptors: [{ entries: e, hits_addend: { value: 2 } }] },
      { domain: 'd', descriptors: [{ entries: e, limit: { requests_per_unit: 1, unit: 'SECOND' } }] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k' }] }] }, { domain: 'd', descriptors: [{ entries: [{ value: 'v' }] }] },
      { domain: 'é', descriptors: [{ entries: e }] }, { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v\u0000' }] }] },
    ];
    for (const r of rows) assert.equal(fastRequest(encode(r)), undefined, JSON.stringify(r));
    const usualBytes = encode({ domain: 'd', descriptors: [{ entries: e }] });
    // an unknown field, the domain twice, the value before the key
    const odd = [
      Buffer.concat([usualBytes, Buffer.from([0x28, 0x01])]), Buffer.concat([usualBytes, Buffer.from([0x0a, 0x01, 0x64])]),
      Buffer.from([0x0a, 0x01, 0x64, 0x12, 0x08, 0x0a, 0x06, 0x12, 0x01, 0x76, 0x0a, 0x01, 0x6b]),
    ];
    for (const b of odd) {
      assert.equal(fastRequest(b), undefined, b.toString('hex'));
      assert.notEqual(protobufjs(b), 'throws');
    }
  });
});
