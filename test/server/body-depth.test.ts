/**
 * Deeply nested JSON bodies on a real service (loopback): arrays nested 200 000 deep, at the top of a /json or
 * /v1/check body or in any field of it, are a 400 naming the body or the field — never a 500 with a stack trace in
 * the log — and the service answers the next check as usual.
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

  const cases: [string, string, string][] = [
    ['/json', nested, 'body'],
    ['/json', `{"domain":${nested}}`, 'domain'],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":${nested}}]}]}`, 'descriptors[0].entries[0].value'],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}],"limit":{"requestsPerUnit":${nested},"unit":"HOUR"}}]}`, 'descriptors[0].limit.requestsPerUnit'],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}],"limit":{"requestsPerUnit":1,"unit":${nested}}}]}`, 'descriptors[0].limit.unit'],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}],"hitsAddend":${nested}}]}`, 'descriptors[0].hitsAddend'],
    ['/json', `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}]}],"hitsAddend":${nested}}`, 'hitsAddend'],
    ['/v1/check', nested, 'body'],
    ['/v1/check', `{"policy":${nested},"key":"a"}`, 'policy'],
    ['/v1/check', `{"policy":"login","key":${nested}}`, 'key'],
    ['/v1/check', `{"policy":"login","key":"a","cost":${nested}}`, 'cost'],
  ];
  for (const [path, body, field] of cases) {
    test(`${path} with ${field} nested ${DEPTH} deep is a 400 naming ${field}`, async () => {
      const before = log.length;
      const r = await http(running.httpPort!, 'POST', path, body);
      assert.equal(r.status, 400, r.text.slice(0, 300));
      assert.equal(r.json.field, field);
      // the message describes the value, it does not echo it
      assert.ok(r.text.length < 400, `answer of ${r.text.length} bytes`);
      assert.deepEqual(log.slice(before), [], 'nothing logged (no stack trace)');
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
