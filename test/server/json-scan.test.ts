/** jsonScan: `{`, `[` and `,` counted outside strings only, escapes understood, the count stops past its bound. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonValuesOver } from '../../src/server/jsonScan.js';

const over = (s: string, max: number): boolean => jsonValuesOver(Buffer.from(s), max) !== undefined;

test('counts { [ , outside strings; a string\'s braces, commas and escaped quotes are not counted', () => {
  const rows: [string, number][] = [
    ['{}', 1],
    ['{"a":1,"b":[1,2,3]}', 1 + 1 + 1 + 2],
    ['{"a":"{[,,,]}"}', 1],
    ['{"a":"x\\",{[,","b":1}', 2],
    ['{"a":"x\\\\","b":[1]}', 3],
    ['{"a":"\\\\\\"[,{"}', 1],
    ['"unterminated, {', 0],
    // strings past the 32 bytes read one by one (then Buffer.indexOf): the same answers
    [`{"a":"${'x'.repeat(40)}\\",{[,","b":1}`, 2],
    [`{"a":"${'x'.repeat(40)}\\\\","b":[1]}`, 3],
    [`{"a":"${'x'.repeat(31)}\\\\","b":[1]}`, 3],
    [`{"a":"${'x'.repeat(31)}\\","b":[1]}`, 1],
    [`{"a":"${'x'.repeat(31)}\\"${'y'.repeat(40)}[,","b":[1]}`, 3],
    ['[[[[[', 5],
  ];
  for (const [s, n] of rows) {
    assert.equal(over(s, n), false, `${s}: not over ${n}`);
    assert.equal(over(s, n - 1), n > 0, `${s}: over ${n - 1}`);
  }
});

test('the field named is the top-level member the bound was passed in', () => {
  assert.equal(jsonValuesOver(Buffer.from('{"domain":"edge","descriptors":[{},{},{},{}]}'), 3)?.field, 'descriptors');
  assert.equal(jsonValuesOver(Buffer.from('{"domain":"edge","descriptors":[{"entries":[{},{},{}]}]}'), 3)?.field, 'descriptors');
  assert.equal(jsonValuesOver(Buffer.from('{"a":1,"b":2,"c":3,"d":4}'), 2)?.field, 'body');
  assert.equal(jsonValuesOver(Buffer.from('[[[[[[[['), 3)?.field, 'body');
});

test('a body of 500 000 empty objects is judged in a few ms, 4 MB of one string faster still', () => {
  const empty = Buffer.from(JSON.stringify({ descriptors: Array.from({ length: 500_000 }, () => ({})) }));
  const long = Buffer.from(JSON.stringify({ domain: 'x'.repeat(4_000_000) }));
  let t = performance.now();
  assert.equal(jsonValuesOver(empty, 31_016)?.field, 'descriptors');
  const a = performance.now() - t;
  t = performance.now();
  assert.equal(jsonValuesOver(long, 31_016)?.field, undefined);
  const b = performance.now() - t;
  console.log(`# 500 000 {}: ${a.toFixed(2)} ms (stops at the bound); one 4 MB string: ${b.toFixed(2)} ms`);
  assert.ok(a < 100 && b < 100, `${a} ms, ${b} ms`);
});
