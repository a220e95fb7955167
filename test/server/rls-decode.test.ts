/**
 * test/server/rls-decode — a RateLimitRequest of the usual form read from its protobuf bytes (server/rlsDecode.ts),
 * before the wire scan and protobufjs, gives exactly what they give, or declines: whenever fastRequest answers, the
 * scan (rlsWire.ts) passes the bytes and protobufjs (through proto-loader, as the gRPC listener decodes) gives the same
 * object. Held on random requests encoded by protobufjs (every field of the proto, empty, control and non-ASCII
 * strings), on the same bytes with one byte inserted, replaced or cut, and on hostile messages built field by field
 * (truncated varints, wrong wire types, repeated fields, fields out of order, undeclared fields, groups, field 0,
 * lengths past the end, huge lengths, strings that are not UTF-8, empty). The listener's decoder as a whole gives
 * what the scan and protobufjs alone give, for every one of them. The forms it must read and those it must leave to
 * the scan and protobufjs are rows.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MAX_DESCRIPTORS, MAX_ENTRIES } from '../../src/server/envoy.js';
import { listenerService, rlsService } from '../../src/server/grpc.js';
import { fastRequest } from '../../src/server/rlsDecode.js';
import { MAX_FIELDS, scanRequest } from '../../src/server/rlsWire.js';

const method = rlsService().ShouldRateLimit;
const encode = (r: unknown): Buffer => method.requestSerialize(r);
const listener = listenerService().ShouldRateLimit.requestDeserialize;

/** protobufjs — what protobufjs decodes `bytes` to, or 'throws'. */
function protobufjs(bytes: Buffer): unknown {
  try {
    return method.requestDeserialize(bytes);
  } catch {
    return 'throws';
  }
}

/** slow — what the listener gave before the fast read: the scan's refusal, else protobufjs's object or its error. */
function slow(bytes: Buffer): unknown {
  const refused = scanRequest(bytes);
  if (refused !== undefined) return { refused: refused.message };
  try {
    return method.requestDeserialize(bytes);
  } catch (e) {
    return { malformed: (e as Error).message };
  }
}

/** listened — the listener's decoder on `bytes`, in slow's terms. */
function listened(bytes: Buffer): unknown {
  const got = listener(bytes) as unknown;
  if (got instanceof Error) return { refused: got.message };
  if (got !== null && typeof got === 'object' && got.constructor.name === 'Malformed') return { malformed: (got as { reason: string }).reason };
  return got;
}

// hostile messages, field by field (proto/rls.proto's numbers)
const varint = (n: number): number[] => {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
};
/** Bytes — a piece of a message being built. */
type Bytes = readonly number[];
const bytesOf = (parts: readonly Bytes[]): Bytes => parts.flat();
/** lie — how much a length-delimited field's length says past its bytes: mostly nothing, else a little or hugely. */
const lie = fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, fc.integer({ min: -2, max: 3 }), fc.constantFrom(2 ** 31, 2 ** 32 - 1, 2 ** 34));
const ld = (tag: number | Bytes, body: fc.Arbitrary<Bytes>): fc.Arbitrary<Bytes> => fc.tuple(body, lie)
  .map(([b, l]) => [...(typeof tag === 'number' ? [tag] : tag), ...varint(Math.max(0, b.length + l)), ...b]);
const str: fc.Arbitrary<Bytes> = fc.oneof(
  fc.stringMatching(/^[ -~]{0,6}$/).map((s) => [...Buffer.from(s)]),
  fc.string({ maxLength: 4, unit: 'grapheme' }).map((s) => [...Buffer.from(s, 'utf8')]),
  fc.constantFrom([0xff], [0xc3], [0x61, 0x80], [0xed, 0xa0, 0x80], [0x00], [0x7f], []),
);
const scalar = fc.nat({ max: 300 }).map(varint);
/** odd — fields any message may meet: undeclared, other wire types, a group, field 0, a longer tag, a cut varint. */
const odd: fc.Arbitrary<Bytes> = fc.oneof(
  scalar.map((v) => [0x08, ...v]), // field 1 as a varint
  scalar.map((v) => [0x10, ...v]), // field 2 as a varint
  fc.constant([0x0d, 1, 2, 3, 4]), fc.constant([0x11, 1, 2, 3, 4, 5, 6, 7, 8]), // fixed32 / fixed64
  scalar.map((v) => [0x28, ...v]), ld(0x2a, str), // undeclared field 5
  fc.constant([0x0b]), fc.constant([0x0c]), fc.constant([0x02, 0x00]), // group start / end, field 0
  ld([0x8a, 0x00], str), // field 1 with a two-byte tag
  fc.constant([0x0a, 0xff, 0xff]), fc.constant([0x12, 0x80]), fc.constant([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // cut and long varints
);
const entry = fc.array(fc.oneof({ weight: 4, arbitrary: ld(0x0a, str) }, { weight: 4, arbitrary: ld(0x12, str) }, odd), { maxLength: 4 }).map(bytesOf);
const descriptor = fc.array(fc.oneof(
  { weight: 6, arbitrary: ld(0x0a, entry) },
  ld(0x12, fc.tuple(scalar, scalar).map(([a, b]) => [0x08, ...a, 0x10, ...b])), // limit
  ld(0x1a, scalar.map((v) => [0x08, ...v])), // hits_addend
  odd,
), { maxLength: 4 }).map(bytesOf);
const hostile = fc.tuple(
  fc.array(fc.oneof({ weight: 3, arbitrary: ld(0x0a, str) }, { weight: 6, arbitrary: ld(0x12, descriptor) }, scalar.map((v) => [0x18, ...v]), odd), { maxLength: 5 }).map(bytesOf),
  fc.option(fc.nat(), { freq: 4 }),
).map(([b, cut]) => Buffer.from(cut === null ? b : b.slice(0, cut % (b.length + 1))));

describe('fastRequest', () => {
  const plain = fc.stringMatching(/^[ -~]{0,8}$/);
  const text = fc.oneof(plain, fc.string({ maxLength: 6, unit: 'grapheme' }), fc.constantFrom('', 'client', 'remote_address', 'é', '\u0000x', '\u007f', 'a'.repeat(40)));
  const anyEntry = fc.record({ key: text, value: text }, { requiredKeys: [] });
  const usualEntry = fc.record({ key: plain, value: plain });
  const anyDescriptor = fc.record({
    entries: fc.array(fc.oneof(usualEntry, anyEntry), { maxLength: 3 }),
    limit: fc.record({ requests_per_unit: fc.nat({ max: 100 }), unit: fc.constantFrom('UNKNOWN', 'SECOND', 'MINUTE', 'HOUR') }),
    hits_addend: fc.record({ value: fc.nat({ max: 5 }) }),
  }, { requiredKeys: ['entries'] });
  const usual = fc.record({ domain: plain, descriptors: fc.array(fc.record({ entries: fc.array(usualEntry, { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: 4 }) });
  const any = fc.record({ domain: text, descriptors: fc.array(anyDescriptor, { maxLength: 4 }), hits_addend: fc.nat({ max: 3 }) }, { requiredKeys: [] });
  const request = fc.oneof(any, usual, usual).map(encode);
  const mutated = fc.tuple(request, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('insert', 'replace', 'cut'))
    .map(([b, at, byte, how]) => {
      const i = at % (b.length + 1);
      if (how === 'cut') return b.subarray(0, i);
      return Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(how === 'replace' ? i + 1 : i)]);
    });

  test('whenever it answers, the scan passes the bytes and protobufjs gives the same request (random and mutated messages)', () => {
    let answered = 0;
    let left = 0;
    fc.assert(fc.property(fc.oneof(request, mutated), (b) => {
      const got = fastRequest(b);
      if (got === undefined) {
        left++;
        return;
      }
      answered++;
      assert.equal(scanRequest(b), undefined, b.toString('hex'));
      assert.deepStrictEqual(got, protobufjs(b), b.toString('hex'));
    }), { numRuns: 5000 });
    assert.ok(answered > 1000 && left > 500, `the random messages hit the fast path and the other (${answered}, ${left})`);
  });

  test('whenever it answers, the scan passes the bytes and protobufjs gives the same request (hostile messages)', () => {
    let answered = 0;
    let refused = 0;
    fc.assert(fc.property(fc.oneof(hostile, fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a))), (b) => {
      const got = fastRequest(b);
      if (scanRequest(b) !== undefined) refused++;
      if (got === undefined) return;
      answered++;
      assert.equal(scanRequest(b), undefined, b.toString('hex'));
      assert.deepStrictEqual(got, protobufjs(b), b.toString('hex'));
    }), { numRuns: 5000 });
    assert.ok(answered > 300 && refused > 300, `the hostile messages hit the fast path and the scan's refusals (${answered}, ${refused})`);
  });

  test('the listener\'s decoder gives what the scan and protobufjs alone give, for every message', () => {
    fc.assert(fc.property(fc.oneof(request, mutated, hostile), (b) => {
      assert.deepStrictEqual(listened(b), slow(b), b.toString('hex'));
    }), { numRuns: 3000 });
  });

  test('the usual requests: every one read from its bytes', () => {
    fc.assert(fc.property(usual.map(encode), (b) => {
      assert.deepStrictEqual(fastRequest(b), protobufjs(b));
    }), { numRuns: 1000 });
  });

  test('the bench\'s request, Envoy\'s usual ones, and the other forms of declared fields it reads', () => {
    const e = [{ key: 'k', value: 'v' }];
    for (const r of [
      { domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: 'c1' }] }, { entries: [{ key: 'path', value: '/p1' }] }] },
      { domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }, { key: 'path', value: '/' }] }] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'generic_key', value: '' }] }, {}] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v\n\u0000' }] }] },
      { domain: 'd', descriptors: [{ entries: [] }] }, { domain: 'd', descriptors: [{ entries: [{ key: 'k' }] }] },
      { domain: 'd', descriptors: [{ entries: [{ value: 'v' }] }] }, { descriptors: [{ entries: e }] },
      { domain: 'd' }, {},
    ]) {
      const b = encode(r);
      const got = fastRequest(b);
      assert.notEqual(got, undefined, JSON.stringify(r));
      assert.deepStrictEqual(got, protobufjs(b), JSON.stringify(r));
    }
    // the value before the key: protobufjs gives the same object
    const swapped = Buffer.from([0x0a, 0x01, 0x64, 0x12, 0x08, 0x0a, 0x06, 0x12, 0x01, 0x76, 0x0a, 0x01, 0x6b]);
    assert.deepStrictEqual(fastRequest(swapped), protobufjs(swapped));
    assert.deepStrictEqual(fastRequest(swapped), { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
  });

  test('the bounds: what the scan refuses, it never reads', () => {
    const many = (n: number, m: number): Buffer => encode({ domain: 'd', descriptors: Array.from({ length: n }, () => ({ entries: Array.from({ length: m }, () => ({ key: 'k', value: 'v' })) })) });
    assert.notEqual(fastRequest(many(MAX_DESCRIPTORS, 1)), undefined);
    assert.notEqual(fastRequest(many(1, MAX_ENTRIES)), undefined);
    // past a bound: the scan refuses it, so the fast path must not read it
    for (const b of [many(MAX_DESCRIPTORS + 1, 1), many(1, MAX_ENTRIES + 1), many(Math.ceil(MAX_FIELDS / (1 + 3 * 10)) + 1, 10)]) {
      assert.notEqual(scanRequest(b), undefined);
      assert.equal(fastRequest(b), undefined);
    }
    // exactly MAX_FIELDS tags (within the descriptor and entry bounds) is read; one more is not
    const fields = (n: number): Buffer => {
      // the domain's tag, then k descriptors of 1 + 3 × m tags each: k the fewest that can hold the rest
      const r = n - 1;
      let k = 1;
      while ((r - k) % 3 !== 0 || (r - k) / 3 > MAX_ENTRIES * k) k++;
      assert.ok(k <= MAX_DESCRIPTORS);
      let m = (r - k) / 3;
      const ds = Array.from({ length: k }, (_, i) => {
        const here = Math.min(MAX_ENTRIES, Math.ceil(m / (k - i)));
        m -= here;
        return { entries: Array.from({ length: here }, () => ({ key: 'k', value: 'v' })) };
      });
      assert.equal(m, 0);
      return encode({ domain: 'd', descriptors: ds });
    };
    const full = fields(MAX_FIELDS);
    assert.equal(scanRequest(full), undefined);
    assert.deepStrictEqual(fastRequest(full), protobufjs(full));
    const over = fields(MAX_FIELDS + 1);
    assert.match(String(scanRequest(over)?.message), /protobuf fields/);
    assert.equal(fastRequest(over), undefined);
  });

  test('what it leaves to the scan and protobufjs', () => {
    const e = [{ key: 'k', value: 'v' }];
    const rows: unknown[] = [
      { domain: 'd', descriptors: [{ entries: e }], hits_addend: 2 }, { domain: 'd', descriptors: [{ entries: e, hits_addend: { value: 2 } }] },
      { domain: 'd', descriptors: [{ entries: e, limit: { requests_per_unit: 1, unit: 'SECOND' } }] },
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'é' }] }] }, { domain: 'é', descriptors: [{ entries: e }] },
      { domain: 'd', descriptors: [{ entries: [{ key: '\u{1F600}', value: 'v' }] }] },
    ];
    for (const r of rows) assert.equal(fastRequest(encode(r)), undefined, JSON.stringify(r));
    const b = encode({ domain: 'd', descriptors: [{ entries: e }] });
    // the domain twice (protobufjs keeps the last), an undeclared field, the entry's key twice: protobufjs decodes them
    for (const odd of [
      Buffer.concat([b, Buffer.from([0x0a, 0x01, 0x65])]), Buffer.concat([b, Buffer.from([0x28, 0x01])]),
      Buffer.from([0x0a, 0x01, 0x64, 0x12, 0x08, 0x0a, 0x06, 0x0a, 0x01, 0x6b, 0x0a, 0x01, 0x6c]),
    ]) {
      assert.equal(fastRequest(odd), undefined, odd.toString('hex'));
      assert.notEqual(protobufjs(odd), 'throws');
    }
    // truncated, a length past the end, a huge length, bytes that are not UTF-8, a wrong wire type: the scan refuses
    for (const bad of [
      b.subarray(0, b.length - 1), Buffer.from([0x0a, 0x05, 0x64]), Buffer.from([0x12, 0xff, 0xff, 0xff, 0xff, 0x0f]),
      Buffer.from([0x0a, 0x01, 0xff]), Buffer.from([0x08, 0x01]), Buffer.from([0x0a, 0x80]),
    ]) {
      assert.equal(fastRequest(bad), undefined, bad.toString('hex'));
      assert.notEqual(scanRequest(bad), undefined, bad.toString('hex'));
    }
  });
});
