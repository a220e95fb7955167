/**
 * test/server/auth-headers — GET /v1/auth refuses a header it reads that comes twice. Before, node joined the copies
 * (`X-Ratekeeper-Key: a` and `X-Ratekeeper-Key: b` → the key `a, b`): a client behind a proxy that adds the header
 * rather than replacing it could add a copy of its own and get a fresh budget with every new value.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import http from 'node:http';
import { startService, type Running } from '../../src/server/serve.js';
import { configFile } from './support.js';

/** get — GET /v1/auth with node's client; an array value is sent as that many header lines. */
function get(port: number, headers: Record<string, string | string[]>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/v1/auth', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    }).on('error', reject);
  });
}

describe('GET /v1/auth reads each header once', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(`policies:\n  api: { rules: '2/min' }\n`), port: 0, grpcPort: -1, host: '127.0.0.1', log: () => undefined });
  });
  after(async () => {
    await running.close();
  });

  test('a second X-Ratekeeper-Key (or Policy, or Cost) is a 400 naming it, charging nothing; one of each works', async () => {
    const port = running.httpPort!;
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'alice' })).status, 200);
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'alice' })).status, 200);
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'alice' })).status, 403, 'alice used her 2/min');
    for (let i = 0; i < 3; i++) {
      const r = await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': [`spoof${i}`, 'alice'] });
      assert.equal(r.status, 400, r.text);
      assert.equal(JSON.parse(r.text).field, 'X-Ratekeeper-Key');
    }
    const cost = await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'bob', 'X-Ratekeeper-Cost': ['0', '1'] });
    assert.equal(cost.status, 400);
    assert.equal(JSON.parse(cost.text).field, 'X-Ratekeeper-Cost');
    const policy = await get(port, { 'X-RATEKEEPER-POLICY': ['api', 'api'], 'x-ratekeeper-key': 'bob' });
    assert.equal(policy.status, 400);
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'bob' })).status, 200, 'bob was charged nothing');
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'bob' })).status, 200);
  });
});
