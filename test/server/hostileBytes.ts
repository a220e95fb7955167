/**
 * test/server/hostileBytes — byte strings grown from good request bodies for the property tests of the fast body
 * readers (check-body, rls-body): one to three byte-level edits of a good body — a byte inserted or replaced (JSON's
 * punctuation, digits, letters, control bytes, bytes past ASCII and ones that are never UTF-8), the body cut at any
 * point, a slice repeated (a member twice), a slice dropped, two slices swapped (members out of order) — and plain
 * random bytes.
 */
import fc from 'fast-check';

/** BYTE — a byte to put in: mostly ones that matter to a JSON reader, else any. */
const BYTE = fc.oneof(
  fc.constantFrom(...[...'{}[]":,\\ \t\n0123456789-+.eEnulltrfasx'].map((c) => c.charCodeAt(0))),
  fc.constantFrom(0x00, 0x1f, 0x7f, 0x80, 0xbf, 0xc0, 0xc3, 0xe2, 0xed, 0xf0, 0xf8, 0xff),
  fc.integer({ min: 0, max: 255 }),
);

type Edit = (b: Buffer) => Buffer;

const at = (b: Buffer, n: number): number => n % (b.length + 1);

const EDIT: fc.Arbitrary<Edit> = fc.oneof(
  fc.tuple(fc.nat(), BYTE).map(([n, x]): Edit => (b) => Buffer.concat([b.subarray(0, at(b, n)), Buffer.from([x]), b.subarray(at(b, n))])),
  fc.tuple(fc.nat(), BYTE).map(([n, x]): Edit => (b) => Buffer.concat([b.subarray(0, at(b, n)), Buffer.from([x]), b.subarray(at(b, n) + 1)])),
  fc.nat().map((n): Edit => (b) => b.subarray(0, at(b, n))),
  fc.tuple(fc.nat(), fc.nat({ max: 24 })).map(([n, k]): Edit => (b) => {
    const i = at(b, n);
    const s = b.subarray(i, i + k);
    return Buffer.concat([b.subarray(0, i + s.length), s, b.subarray(i + s.length)]);
  }),
  fc.tuple(fc.nat(), fc.nat({ max: 24 })).map(([n, k]): Edit => (b) => Buffer.concat([b.subarray(0, at(b, n)), b.subarray(at(b, n) + k)])),
  fc.tuple(fc.nat(), fc.nat(), fc.nat({ max: 24 })).map(([n, m, k]): Edit => (b) => {
    const [i, j] = [at(b, n), at(b, m)].sort((x, y) => x - y);
    if (j - i < 2 * k) return b;
    return Buffer.concat([b.subarray(0, i), b.subarray(j - k, j), b.subarray(i + k, j - k), b.subarray(i, i + k), b.subarray(j)]);
  }),
);

/** hostileBytes — good bodies from `good` edited one to three times, and random bytes. */
export function hostileBytes(good: fc.Arbitrary<string>): fc.Arbitrary<Buffer> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(good, fc.array(EDIT, { minLength: 1, maxLength: 3 })).map(([s, edits]) => edits.reduce<Buffer>((b, e) => e(b), Buffer.from(s, 'utf8'))) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)) },
  );
}
