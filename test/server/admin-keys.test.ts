/**
 * The operators act on the keys clients send (issue 15, section 1): the service's admin listener shows and accepts a
 * native policy's client as its `key` and an Envoy limit's as its descriptor entries (`remote_address=10.0.0.1`, or the
 * bare value where the limit has one entry); block, exempt, reset and inspect by that key take effect in the named
 * limiter or in every one, on a key never seen yet too, through /v1/check, /json and gRPC alike.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RlsResponse } from '../../src/server/rls.js';
import { adminService } from './adminService.js';
import { json } from '../support/fetchJson.js';

const CONFIG = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 1000 }
  - key: tenant
    descriptors:
      - key: user
        rate_limit: { unit: minute, requests_per_unit: 1000 }
policies:
  api: { rules: '10/min' }
  login: { rules: '1000/min' }
`;

const JSON_HEADERS = { 'content-type': 'application/json' };

describe('the service\'s admin listener speaks the clients\' keys', () => {
  const svc = adminService(CONFIG);

  const admin = (path: string, init?: RequestInit): Promise<{ status: number; body: any }> => json(`${svc.running.adminUrl}admin/${path}`, init);
  const post = (path: string, body: unknown): Promise<{ status: number; body: any }> => admin(path, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
  const check = (key: string, policy = 'api'): Promise<{ status: number; body: any }> =>
    json(`http://127.0.0.1:${svc.running.httpPort}/v1/check`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ policy, key }) });
  const rlsJson = (ip: string): Promise<{ status: number; body: any }> =>
    json(`http://127.0.0.1:${svc.running.httpPort}/json`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: ip }] }] }) });
  const rlsGrpc = (ip: string): Promise<RlsResponse> => svc.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: ip }] }] });

  test('top lists the key as sent, by limiter; no store encoding appears', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await check('alice')).status, 200);
    for (let i = 0; i < 5; i++) assert.equal((await rlsJson('10.0.0.66')).status, 200);
    const top = await admin('top?n=50');
    assert.equal(top.status, 200);
    const pairs = top.body.top.map((e: any) => [e.limiter, e.key]);
    assert.deepEqual(pairs.filter(([l]: string[]) => l === 'policy:api'), [['policy:api', 'alice']]);
    assert.deepEqual(pairs.filter(([l]: string[]) => l === 'limit:edge:remote_address'), [['limit:edge:remote_address', 'remote_address=10.0.0.66']]);
    assert.doesNotMatch(JSON.stringify(top.body.top), /3:api:|edge:remote_address=/, 'internal forms never appear');
  });

  test('inspect and reset by the client key see and clear her state (3 of 10 used)', async () => {
    const seen = await admin('keys/alice?limiter=policy:api');
    assert.equal(seen.status, 200);
    assert.equal(seen.body.limiters[0].decision.remaining, 7, JSON.stringify(seen.body));
    const byBare = await admin('keys/10.0.0.66?limiter=limit:edge:remote_address');
    assert.equal(byBare.body.limiters[0].key, 'remote_address=10.0.0.66');
    assert.equal(byBare.body.limiters[0].decision.remaining, 995, 'the bare value names the one-entry limit\'s client');
    const reset = await admin('keys/alice/reset?limiter=policy:api', { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    assert.equal(reset.status, 200);
    assert.equal((await check('alice')).body.remaining, 9);
  });

  test('a block of a never-seen key, in every limiter, is honoured when it arrives: /v1/check, /json and gRPC', async () => {
    const b = await post('blocks', { key: 'bob', reason: 'ahead' });
    assert.equal(b.status, 201, JSON.stringify(b.body));
    const refused = await check('bob');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.reason, 'blocked');
    assert.equal(refused.body.blockReason, 'ahead');
    assert.equal((await check('bob', 'login')).body.reason, 'blocked', 'every limiter when none is named');

    // the bare value of a one-entry limit, blocked before the address has sent anything
    const ip = await post('blocks', { key: '10.9.9.9', for: '1h', reason: 'scanner' });
    assert.equal(ip.status, 201);
    assert.deepEqual(ip.body.keys, { 'limit:edge:remote_address': 'remote_address=10.9.9.9' }, 'the reply (and the log) say how each limiter read it');
    assert.equal((await rlsJson('10.9.9.9')).status, 429);
    assert.equal((await rlsGrpc('10.9.9.9')).overall_code, 'OVER_LIMIT');
    assert.equal((await rlsGrpc('10.9.9.8')).overall_code, 'OK');
    // the entries form works too, and names the same client
    await post('blocks', { key: 'remote_address=10.9.9.7', limiter: 'limit:edge:remote_address' });
    assert.equal((await rlsGrpc('10.9.9.7')).overall_code, 'OVER_LIMIT');

    const list = await admin('blocks');
    const mine = list.body.blocks.filter((x: any) => /bob|10\.9\.9/.test(x.key)).map((x: any) => [x.limiter, x.key]).sort();
    assert.deepEqual(mine, [
      ['limit:edge:remote_address', 'remote_address=10.9.9.7'],
      ['limit:edge:remote_address', 'remote_address=10.9.9.9'],
      ['limit:edge:tenant&user', '10.9.9.9'],
      ['limit:edge:tenant&user', 'bob'],
      ['limit:edge:remote_address', 'remote_address=bob'],
      ['policy:api', '10.9.9.9'],
      ['policy:api', 'bob'],
      ['policy:login', '10.9.9.9'],
      ['policy:login', 'bob'],
    ].sort());

    const lifted = await admin(`blocks/${encodeURIComponent('10.9.9.9')}`, { method: 'DELETE', headers: JSON_HEADERS });
    assert.equal(lifted.status, 200);
    assert.equal((await rlsGrpc('10.9.9.9')).overall_code, 'OK');
    await admin('blocks/bob', { method: 'DELETE', headers: JSON_HEADERS });
    assert.equal((await check('bob')).status, 200);
  });

  test('an exemption by the client key, with its reason, admits her past her limit', async () => {
    for (let i = 0; i < 12; i++) await check('carol');
    assert.equal((await check('carol')).body.reason, 'limited');
    const e = await post('exemptions', { key: 'carol', limiter: 'policy:api', reason: 'partner', for: '10m' });
    assert.equal(e.status, 201);
    assert.equal((await check('carol')).body.reason, 'exempt');
    const list = await admin('exemptions');
    assert.deepEqual(list.body.exemptions.map((x: any) => [x.limiter, x.key, x.reason]), [['policy:api', 'carol', 'partner']]);
  });
});
