/**
 * prefixRefusal — a RateLimitRequest refused from the first DATA frame of its gRPC stream (firstChunk.ts): rows of
 * (prefix) → (refusal or none). The whole-message scan (rlsWire.ts) keeps deciding everything this one lets by.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prefixRefusal } from '../../src/server/firstChunk.js';
import { MAX_FIELDS } from '../../src/server/rlsWire.js';

/** frame — the 5-byte gRPC header (uncompressed unless `compressed`) announcing `length`, then `body`. */
function frame(body: Buffer, length = body.length, compressed = false): Buffer {
  const h = Buffer.alloc(5);
  h[0] = compressed ? 1 : 0;
  h.writeUInt32BE(length, 1);
  return Buffer.concat([h, body]);
}
const domain = Buffer.from([0x0a, 4, ...Buffer.from('edge')]);
const empties = (n: number): Buffer => Buffer.alloc(2 * n).fill(Buffer.from([0x12, 0x00]));
const entry = Buffer.from([0x12, 12, 0x0a, 10, 0x0a, 4, ...Buffer.from('user'), 0x12, 2, ...Buffer.from('ab')]);

test('prefixRefusal: rows', () => {
  const rows: [string, Buffer, RegExp | undefined][] = [
    ['an ordinary request', frame(Buffer.concat([domain, entry])), undefined],
    ['1 000 empty descriptors (the cap)', frame(Buffer.concat([domain, empties(1000)])), undefined],
    ['1 001 empty descriptors', frame(Buffer.concat([domain, empties(1001)])), /^descriptors: has more than 1000 descriptors/],
    ['the first 16 kB of a 4 MB message of empty descriptors', frame(Buffer.concat([domain, empties(8000)]), 4 * 1024 * 1024), /^descriptors: has more than 1000/],
    ['compressed: nothing to see before inflating', frame(Buffer.concat([domain, empties(8000)]), 4000, true), undefined],
    ['a descriptor longer than the chunk: cannot tell yet', frame(Buffer.concat([domain, Buffer.from([0x12, 0x80, 0x80, 0x04])]), 70_000), undefined],
    ['more varint fields than MAX_FIELDS', frame(Buffer.alloc(2 * (MAX_FIELDS + 1)).fill(Buffer.from([0x18, 0x01]))), /^request: has more than \d+ protobuf fields/],
    ['shorter than a header', Buffer.from([0, 0, 0]), undefined],
  ];
  for (const [what, chunk, expected] of rows) {
    const got = prefixRefusal(chunk);
    if (expected === undefined) assert.equal(got, undefined, what);
    else assert.match(got ?? '', expected, what);
  }
});
