/**
 * test/server/rls-decode — a RateLimitRequest of the usual form read from its protobuf bytes (server/rlsDecode.ts)
 * gives what protobufjs (through proto-loader, as the gRPC listener decodes) gives, or nothing: for random requests
 * encoded by protobufjs — some with the fields the fast path leaves alone — and the same bytes with one byte inserted,
 * replaced or dropped, whenever decodeRequest answers and the scan passes the bytes, protobufjs decodes them to the
 * same object. The forms it must leave to protobufjs are rows.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { rlsService } from '../../src/server/grpc.js';
import { decodeRequest } from '../../src/server/rlsDecode.js';
import { scanRequest } from '../../src/server/rlsWire.js';

const method = rlsService().ShouldRateLimit;
const encode = (r: unknown): Buffer => method.requestSerialize(r);
const decode = (b: Buffer): unknown => method.requestDeserialize(b);

describe('decodeRequest', () => {
  const text = fc.oneof(fc.stringMatching(/^[ -~]{0,8}$/), fc.constantFrom('', 'client', 'remote_address', 'é', '\u0000x', 'a'.repeat(40)));
  const entry = fc.record({ key: text, value: text }, { requiredKeys: [] });
  const descriptor = fc.record({
    entries: fc.array(entry, { maxLength: 3 }),
    limit: fc.record({ requests_per_unit: fc.nat({ max: 100 }), unit: fc.constantFrom('SECOND', 'MINUTE') }),
    hits_addend: fc.record({ value: fc.nat({ max: 5 }) }),
  }, { requiredKeys: ['entries'] });
  const any = fc.record({ domain: text, descriptors: fc.array(descriptor, { maxLength: 4 }), hits_addend: fc.nat({ max: 3 }) }, { requiredKeys: [] });
  const plain = fc.stringMatching(/^[ -~]{0,8}$/);
  const usual = fc.record({ domain: plain, descriptors: fc.array(fc.record({ entries: fc.array(fc.record({ key: plain, value: plain }), { maxLength: 3 }) }), { maxLength: 4 }) });
  const request = fc.oneof(any, usual, usual).map((r) => encode(r));
  const mutated = fc.tuple(request, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('insert', 'replace', 'drop'))
    .map(([b, at, byte, how]) => {
      const i = at % (b.length + 1);
      const head = b.subarray(0, i);
      const tail = b.subarray(how === 'insert' ? i : Math.min(b.length, i + 1));
      return Buffer.concat([head, ...(how === 'drop' ? [] : [Buffer.from([byte])]), tail]);
    });

  test('whenever it answers, protobufjs gives the same request (random messages)', () => {
    let answered = 0;
    let left = 0;
    fc.assert(fc.property(fc.oneof(request, mutated), (b) => {
      const got = decodeRequest(b);
      if (got === undefined) {
        left++;
        return;
      }
      answered++;
      // called only once the scan passed the bytes; what it reads, the scan passes
      assert.equal(scanRequest(b), undefined, b.toString('hex'));
      assert.deepStrictEqual(got, decode(b), b.toString('hex'));
    }), { numRuns: 5000 });
    assert.ok(answered > 1000 && left > 500, `the random messages hit the fast path and the other (${answered}, ${left})`);
  });

  test('the bench\'s request and Envoy\'s usual ones', () => {
    for (const r of [
      { domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: 'c1' }] }, { entries: [{ key: 'path', value: '/p1' }] }] },
      { domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }, { key: 'path', value: '/' }] }] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'generic_key', value: '' }] }, {}] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v\n\u0000' }] }] },
      { domain: 'd' },
      {},
    ]) {
      const b = encode(r);
      assert.deepStrictEqual(decodeRequest(b), decode(b), JSON.stringify(r));
    }
  });

  test('what it leaves to protobufjs', () => {
    const rows: unknown[] = [
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hits_addend: 2 },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }], hits_addend: { value: 2 } }] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 1, unit: 'SECOND' } }] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'é' }] }] },
      { domain: 'é' },
    ];
    for (const r of rows) assert.equal(decodeRequest(encode(r)), undefined, JSON.stringify(r));
    const b = encode({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    // the domain twice (protobufjs keeps the last), an undeclared field, a truncated message
    assert.equal(decodeRequest(Buffer.concat([b, Buffer.from([0x0a, 0x01, 0x65])])), undefined);
    assert.equal(decodeRequest(Buffer.concat([b, Buffer.from([0x20, 0x01])])), undefined);
    assert.equal(decodeRequest(b.subarray(0, b.length - 1)), undefined);
  });
});
