/** CSV in and out: the trace reader (header or not, key and cost columns, ISO times, errors with line numbers) and the writer. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCsv, toCsv } from '../../src/sim/csv.js';
import { parseTraceCsv } from '../../src/sim/trace.js';

test('a bare column of timestamps in seconds: one client, cost 1, sorted', () => {
  assert.deepEqual(parseTraceCsv('1.5\n0\n\n2\n'), [
    { t: 0, key: 'client', cost: 1 },
    { t: 1500, key: 'client', cost: 1 },
    { t: 2000, key: 'client', cost: 1 },
  ]);
});

test('headers name the columns in any order; empty cost means 1; ms timestamps', () => {
  const csv = 'cost,key,timestamp\r\n2,alice,1000\r\n,bob,500\r\n0,alice,1000\r\n';
  assert.deepEqual(parseTraceCsv(csv, { timeUnit: 'ms' }), [
    { t: 500, key: 'bob', cost: 1 },
    { t: 1000, key: 'alice', cost: 2 },
    { t: 1000, key: 'alice', cost: 0 }, // ties keep the file's order
  ]);
});

test('headerless t,key,cost; quoted keys; ISO 8601 timestamps', () => {
  const csv = '2026-01-01T00:00:01Z,"a,b",3\n2026-01-01T00:00:00.500Z,"say ""hi"""\n';
  assert.deepEqual(parseTraceCsv(csv), [
    { t: Date.parse('2026-01-01T00:00:00.500Z'), key: 'say "hi"', cost: 1 },
    { t: Date.parse('2026-01-01T00:00:01Z'), key: 'a,b', cost: 3 },
  ]);
});

test('bad traces name the source, the line and the value', () => {
  assert.throws(() => parseTraceCsv('t,key\n1,a\nsoon,b\n', { source: 'x.csv' }), /x\.csv:3: timestamp "soon" is not a number/);
  assert.throws(() => parseTraceCsv('t,key,cost\n1,a,-2\n', { source: 'x.csv' }), /x\.csv:2: cost "-2" must be a finite number >= 0/);
  assert.throws(() => parseTraceCsv('when,who\n1,a\n', { source: 'x.csv' }), /x\.csv:1: .*header with a time column/);
  assert.throws(() => parseTraceCsv('t\n', { source: 'x.csv' }), /x\.csv: no requests/);
  assert.throws(() => parseTraceCsv('1,"open\n', { source: 'x.csv' }), /x\.csv: line 1: a quoted field is not closed/);
});

test('toCsv quotes what needs quoting and parseCsv reads it back', () => {
  const rows = [['plain', 1.5, undefined], ['a,b', 'say "hi"', 'two\nlines'], [true, NaN, -0.25]];
  const text = toCsv(['x', 'y', 'z'], rows);
  assert.equal(text, 'x,y,z\nplain,1.5,\n"a,b","say ""hi""","two\nlines"\ntrue,,-0.25\n');
  assert.deepEqual(parseCsv(text).map((r) => r.fields), [['x', 'y', 'z'], ['plain', '1.5', ''], ['a,b', 'say "hi"', 'two\nlines'], ['true', '', '-0.25']]);
  assert.deepEqual(parseCsv(text).map((r) => r.line), [1, 2, 3, 5]);
});
