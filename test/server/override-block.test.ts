/**
 * test/server/override-block — an operator's block or exemption of a client holds when the request carries its own
 * limit (the RLS descriptor's `limit` field): before, `POST /admin/blocks {"key":"6.6.6.6"}` refused the client's
 * plain descriptor but the same descriptor with `limit: { requests_per_unit: 1000, unit: SECOND }` was answered OK,
 * 999 remaining (the request's own limit is its own limiter, which had no block). Real service, /json and gRPC.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RlsResponse } from '../../src/server/rls.js';
import { adminService } from './adminService.js';

const CONFIG = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 5 }
`;
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('a block or exemption holds whatever limit the request carries', () => {
  const svc = adminService(CONFIG);

  const admin = async (path: string, body: unknown): Promise<number> =>
    (await fetch(`${svc.running.adminUrl}admin/${path}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) })).status;
  const desc = (ip: string, own: boolean): unknown => ({ entries: [{ key: 'remote_address', value: ip }], ...(own ? { limit: { requests_per_unit: 1000, unit: 'SECOND' } } : {}) });
  const viaJson = async (ip: string, own: boolean): Promise<any> =>
    (await fetch(`http://127.0.0.1:${svc.running.httpPort}/json`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ domain: 'edge', descriptors: [desc(ip, own)] }) })).json();
  const viaGrpc = (ip: string, own: boolean): Promise<RlsResponse> => svc.shouldRateLimit({ domain: 'edge', descriptors: [desc(ip, own)] });

  test('a blocked client is refused with its own limit too, through /json and gRPC, and charged nothing', async () => {
    assert.equal(await admin('blocks', { key: '6.6.6.6', reason: 'abuse' }), 201);
    assert.equal((await viaJson('6.6.6.6', false)).overallCode, 'OVER_LIMIT');
    const own = await viaJson('6.6.6.6', true);
    assert.equal(own.overallCode, 'OVER_LIMIT', JSON.stringify(own));
    assert.equal(own.statuses[0].code, 'OVER_LIMIT');
    assert.equal((await viaGrpc('6.6.6.6', true)).overall_code, 'OVER_LIMIT');
    // unblocked: the request's own limit was charged nothing while blocked
    const del = await fetch(`${svc.running.adminUrl}admin/blocks/6.6.6.6`, { method: 'DELETE', headers: JSON_HEADERS });
    assert.equal(del.status, 200);
    const after = await viaJson('6.6.6.6', true);
    assert.equal(after.overallCode, 'OK');
    assert.equal(after.statuses[0].limitRemaining, 999);
  });

  test('an exempt client is admitted past its own limit; another client keeps its own limit', async () => {
    assert.equal(await admin('exemptions', { key: '7.7.7.7', reason: 'monitor' }), 201);
    const tight = (ip: string): unknown => ({ entries: [{ key: 'remote_address', value: ip }], limit: { requests_per_unit: 1, unit: 'MINUTE' } });
    const send = async (ip: string): Promise<any> =>
      (await fetch(`http://127.0.0.1:${svc.running.httpPort}/json`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ domain: 'edge', descriptors: [tight(ip)] }) })).json();
    for (let i = 0; i < 3; i++) assert.equal((await send('7.7.7.7')).overallCode, 'OK', `exempt, call ${i + 1}`);
    assert.equal((await send('8.8.8.8')).overallCode, 'OK');
    assert.equal((await send('8.8.8.8')).overallCode, 'OVER_LIMIT', 'not exempt: 1/min');
  });

  test('a guarded client whose key escapes past the cap is refused naming the descriptor, on /json and gRPC', async () => {
    // 1 500 `&` are 1 520 characters as sent (under the 4 096 cap, so not refused before matching) and 4 515 once
    // escaped (`%26` each): the configured limit's client, looked at for its block, is past the cap. Before, the
    // library's own key check answered it without a field (`key must be a non-empty string …`); the same descriptor
    // without its own limit named `descriptors[0].entries`
    const ip = '&'.repeat(1500);
    const res = await fetch(`http://127.0.0.1:${svc.running.httpPort}/json`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ domain: 'edge', descriptors: [desc(ip, true)] }) });
    const body = await res.json() as { field: string; error: string };
    assert.equal(res.status, 400);
    assert.equal(body.field, 'descriptors[0].entries', JSON.stringify(body));
    const plain = await (await fetch(`http://127.0.0.1:${svc.running.httpPort}/json`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ domain: 'edge', descriptors: [desc(ip, false)] }) })).json() as { field: string };
    assert.equal(plain.field, 'descriptors[0].entries');
    await assert.rejects(viaGrpc(ip, true), (e: { code: number; details: string }) => e.code === 3 && e.details.startsWith('descriptors[0].entries: '));
  });
});
