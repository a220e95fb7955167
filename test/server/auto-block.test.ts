/**
 * A native policy's `auto_block` in the service (startService, real listeners): the first refused /v1/check blocks
 * the client, the admin API lists the block with its reason beside the operator's, and an operator's block past the
 * memory store's budget (maxKeys) is a 400 naming the bound, nothing lifted. Bad `auto_block` values are config errors.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { parseConfig } from '../../src/server/config/load.js';
import { ConfigError } from '../../src/server/config/errors.js';
import { configFile } from './support.js';
import { json } from '../support/fetchJson.js';

const CONFIG = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 1000 }
policies:
  login:
    rules: '3/1h'
    auto_block: 1h
  api:
    rules: '2/1h'
    auto_block: { for: 10m, reason: 'api abuse' }
`;

describe('auto_block of a native policy', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, maxKeys: 10, reloadPollMs: 60_000, log: () => undefined });
  });
  after(async () => running.close());

  const check = (policy: string, key: string): Promise<{ status: number; body: any }> =>
    json(`http://127.0.0.1:${running.httpPort}/v1/check`, { method: 'POST', body: JSON.stringify({ policy, key }) });
  const admin = (path: string, init?: RequestInit): Promise<{ status: number; body: any }> =>
    json(`${running.adminUrl}${path}`, init === undefined ? undefined : { ...init, headers: { 'content-type': 'application/json' } });

  test('the first refusal blocks for auto_block; the admin API lists it with its reason', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await check('login', 'mallory')).status, 200);
    const refused = await check('login', 'mallory');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.reason, 'limited');
    assert.equal(refused.body.retryAfter, 3_600_000, JSON.stringify(refused.body));
    const blocked = await check('login', 'mallory');
    assert.equal(blocked.status, 429);
    assert.equal(blocked.body.reason, 'blocked');
    assert.equal(blocked.body.blockReason, 'automatic: refused at 3/1h');
    for (let i = 0; i < 3; i++) await check('api', 'bot');
    const list = (await admin('admin/blocks')).body.blocks as { limiter: string; key: string; reason: string; until: number; since: number }[];
    const mine = list.map((b) => [b.limiter, b.key, b.reason, b.until - b.since]).sort();
    assert.deepEqual(mine, [['policy:api', 'bot', 'api abuse', 600_000], ['policy:login', 'mallory', 'automatic: refused at 3/1h', 3_600_000]]);
  });

  test('an operator\'s block past the budget (maxKeys 10) is a 400 naming it; automatic ones never count against it', async () => {
    for (let i = 0; i < 20; i++) {
      for (let j = 0; j < 4; j++) await check('login', `bot-${i}`); // 20 automatic blocks (their own budget of 10)
    }
    for (let i = 0; i < 10; i++) {
      const r = await admin('admin/blocks', { method: 'POST', body: JSON.stringify({ key: `op-${i}`, limiter: 'policy:login', reason: 'operator' }) });
      assert.ok(r.status < 300, JSON.stringify(r));
    }
    const full = await admin('admin/blocks', { method: 'POST', body: JSON.stringify({ key: 'op-10', limiter: 'policy:login' }) });
    assert.equal(full.status, 400, JSON.stringify(full));
    assert.match(JSON.stringify(full.body), /holds 10 blocks and exemptions set by an operator for this limiter \(memoryStore maxKeys\)/);
    assert.equal((await check('login', 'op-0')).body.blockReason, 'operator', 'the oldest operator block holds');
  });
});

describe('auto_block in the configuration', () => {
  const issues = (text: string): string[] => {
    try {
      parseConfig([{ name: 'c.yaml', text }]);
      return [];
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      return e.issues.map((i) => i.message);
    }
  };
  test('bad values are errors naming the field; a duration or { for, reason } is taken', () => {
    assert.deepEqual(issues(`policies:\n  p: { rules: '1/s', auto_block: 15m }\n`), []);
    assert.deepEqual(issues(`policies:\n  p: { rules: '1/s', autoBlock: { for: 15m, reason: x } }\n`), []);
    assert.match(issues(`policies:\n  p: { rules: '1/s', auto_block: 15 }\n`).join('\n'), /auto_block must be a duration with its unit/);
    assert.match(issues(`policies:\n  p: { rules: '1/s', auto_block: { reason: x } }\n`).join('\n'), /auto_block\.for is required/);
    assert.match(issues(`policies:\n  p: { rules: '1/s', auto_block: { for: 1m, duration: 2m } }\n`).join('\n'), /duration is not a field of auto_block \(did you mean `for`\?\)/);
    assert.match(issues(`policies:\n  p: { rules: '1/s', block_duration: 1m }\n`).join('\n'), /auto_block/);
  });
});
