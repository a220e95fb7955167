/**
 * Deeply nested JSON bodies on a real service (loopback): arrays nested 200 000 deep, at the top of a /json or
 * /v1/check body or in any field of it, are a 400 naming the body, refused before they are parsed — never a 500 with a
 * stack trace in the log; a field of the wrong type is named with its value described, not echoed; and the service
 * answers the next check as usual.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { http } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 3 }
policies:
  login:
    rules: '3/h'
`;

/** DEPTH — the attack's nesting: 200 000 arrays (400 kB of JSON, which JSON.parse reads but JSON.stringify cannot write). */
const DEPTH = 200_000;
const nested = '['.repeat(DEPTH) + ']'.repeat(DEPTH);

describe('deeply nested bodies', () => {
  let running: Running;
  const log: string[] = [];
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, log: (l) => log.push(l) });
  });
  after(() => running?.close());

  const fields: [string, (v: string) => string][] = [
    ['/json', (v) => v],
    ['/json', (v) => `{"domain":${v}}`],
    ['/json', (v) => `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":${v}}]}]}`],
    ['/json', (v) => `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}],"limit":{"requestsPerUnit":${v},"unit":"HOUR"}}]}`],
    ['/json', (v) => `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}],"hitsAddend":${v}}]}`],
    ['/v1/check', (v) => v],
    ['/v1/check', (v) => `{"policy":${v},"key":"a"}`],
    ['/v1/check', (v) => `{"policy":"login","key":"a","cost":${v}}`],
  ];
  for (const [path, body] of fields) {
    const example = body('…');
    test(`${path} ${example} with arrays nested ${DEPTH} deep there is a 400 naming the body, before it is parsed`, async () => {
      const before = log.length;
      const r = await http(running.httpPort!, 'POST', path, body(nested));
      assert.equal(r.status, 400, r.text.slice(0, 300));
      assert.equal(r.json.field, 'body');
      assert.match(r.json.error, /nested deeper than 32/);
      assert.deepEqual(log.slice(before), [], 'nothing logged (no stack trace)');
    });
  }

  test('refusing them costs little CPU: 5 in < 250 ms (parsing one took ~120 ms)', async (t) => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < 5; i++) assert.equal((await http(running.httpPort!, 'POST', '/json', nested)).status, 400);
    const c = process.cpuUsage(c0);
    const ms = (c.user + c.system) / 1000;
    t.diagnostic(`5 bodies nested ${DEPTH} deep: ${ms.toFixed(0)} ms of CPU (client and server)`);
    assert.ok(ms < 250, `${ms.toFixed(0)} ms of CPU`);
  });

  // shallow but wrong: the field is named and its value described (an array by its size, a long string cut), not echoed
  const shallow: [string, string, string, RegExp][] = [
    ['/json', '[1,2,3]', 'body', /got an array of 3 items/],
    ['/json', `{"domain":[${'[],'.repeat(30)}[]]}`, 'domain', /got an array of 31 items/],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":{"a":1}}]}]}`, 'descriptors[0].entries[0].value', /got an object/],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}],"limit":{"requestsPerUnit":1,"unit":"${'H'.repeat(300_000)}"}}]}`, 'descriptors[0].limit.unit', /got "H{80}"… \(300000 characters\)/],
    ['/v1/check', `{"policy":[[1]],"key":"a"}`, 'policy', /got an array of 1 item$/],
    ['/v1/check', `{"policy":"login","key":"a","cost":"${'9'.repeat(300_000)}"}`, 'cost', /got "9{80}"… \(300000 characters\)/],
  ];
  for (const [path, body, field, message] of shallow) {
    test(`${path} with a wrong ${field} is a 400 naming ${field}, its value described in a short message`, async () => {
      const r = await http(running.httpPort!, 'POST', path, body);
      assert.equal(r.status, 400, r.text.slice(0, 300));
      assert.equal(r.json.field, field);
      assert.match(r.json.error, message);
      assert.ok(r.text.length < 400, `answer of ${r.text.length} bytes`);
    });
  }

  test('the service answers checks as before after them', async () => {
    const r = await http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'after' }] }] });
    assert.equal(r.status, 200);
    assert.equal(r.json.statuses[0].limitRemaining, 2);
    const c = await http(running.httpPort!, 'POST', '/v1/check', { policy: 'login', key: 'after' });
    assert.equal(c.status, 200);
    assert.equal(c.json.remaining, 2);
  });
});
