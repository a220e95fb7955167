/**
 * The operators' view mounted in the service: the admin listener of `startService` sees every configured limit and
 * policy (re-read after a reload), lists the heaviest clients of both front ends, blocks and unblocks a client, and
 * shows the configuration; off loopback it refuses to start without a token.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { configFile } from './support.js';
import { json } from '../support/fetchJson.js';

const CONFIG = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 1000 }
policies:
  api: { rules: '1000/min' }
`;

describe('the admin listener of the service', () => {
  let running: Running;
  let path: string;
  before(async () => {
    path = configFile(CONFIG);
    running = await startService({ config: path, port: 0, grpcPort: -1, adminPort: 0, reloadPollMs: 50, log: () => undefined });
  });
  after(async () => {
    await running.close();
  });

  const check = (key: string): Promise<{ status: number; body: any }> =>
    json(`http://127.0.0.1:${running.httpPort}/v1/check`, { method: 'POST', body: JSON.stringify({ policy: 'api', key }) });
  const rls = (ip: string): Promise<{ status: number; body: any }> =>
    json(`http://127.0.0.1:${running.httpPort}/json`, { method: 'POST', body: JSON.stringify({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: ip }] }] }) });

  test('the heaviest clients of /v1/check and of descriptors are listed, by limiter', async () => {
    for (let i = 0; i < 30; i++) await check('abuser');
    for (let i = 0; i < 3; i++) await check(`user-${i}`);
    for (let i = 0; i < 20; i++) await rls('10.0.0.66');
    const top = await json(`${running.adminUrl}admin/top?n=5`);
    assert.equal(top.status, 200);
    const text = JSON.stringify(top.body);
    assert.match(text, /abuser/);
    assert.match(text, /10\.0\.0\.66/);
    assert.match(text, /policy:api/);
    assert.match(text, /limit:edge/);
  });

  test('a block from the admin API refuses the client\'s next check; unblock lets it in again', async () => {
    const limiterName = 'policy:api';
    // the top list shows the key as the client sent it, and a block by that key refuses the client
    const top = await json(`${running.adminUrl}admin/top?n=20&limiter=${encodeURIComponent(limiterName)}`);
    const entry = JSON.stringify(top.body).match(/"key":"([^"]*abuser)"/);
    assert.ok(entry, JSON.stringify(top.body));
    const key = entry[1];
    const blocked = await json(`${running.adminUrl}admin/blocks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key, for: '1h', reason: 'test' }) });
    assert.ok(blocked.status === 200 || blocked.status === 201, JSON.stringify(blocked));
    const refused = await check('abuser');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.reason, 'blocked');
    assert.equal(refused.body.blockReason, 'test');
    const lifted = await fetch(`${running.adminUrl}admin/blocks/${encodeURIComponent(key)}`, { method: 'DELETE', headers: { 'content-type': 'application/json' } });
    assert.ok(lifted.status < 300, String(lifted.status));
    const again = await check('abuser');
    assert.equal(again.status, 200);
  });

  test('GET /admin/config shows the configuration in force, and follows a reload', async () => {
    const c = await json(`${running.adminUrl}admin/config`);
    assert.equal(c.status, 200);
    assert.match(JSON.stringify(c.body), /requests_per_unit: 1000/);
    writeFileSync(path, CONFIG.replace("'1000/min'", "'999/min'"));
    const deadline = Date.now() + 3000;
    for (;;) {
      const d = await json(`${running.adminUrl}admin/config`);
      if (JSON.stringify(d.body).includes('999/min')) break;
      assert.ok(Date.now() < deadline, 'the admin view shows the reloaded configuration');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});

test('the admin listener off loopback needs a token: the service refuses to start without one', async () => {
  const saved = process.env.RATEKEEPER_ADMIN_TOKEN;
  delete process.env.RATEKEEPER_ADMIN_TOKEN;
  try {
    await assert.rejects(
      startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, adminHost: '0.0.0.0', log: () => undefined }),
      /not loopback: give it a token/,
    );
  } finally {
    if (saved !== undefined) process.env.RATEKEEPER_ADMIN_TOKEN = saved;
  }
});
