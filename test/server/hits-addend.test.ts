/**
 * A descriptor's own hits_addend of 0 means "check without charging", as envoyproxy/ratelimit's GetHitsAddends: a set
 * descriptor value is used as is; only the request-level 0 means 1. Over gRPC (where a UInt64Value set to 0 travels as
 * an empty message) and POST /json, on a real service (loopback).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpcJs from '@grpc/grpc-js';
import { startService, type Running } from '../../src/server/serve.js';
import type { RlsDescriptor, RlsRequest } from '../../src/server/rls.js';
import { http, rls, type RlsCaller } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: banned
    rate_limit: { unit: hour, requests_per_unit: 0 }
`;

const user = (value: string, extra: Partial<RlsDescriptor> = {}): RlsDescriptor => ({ entries: [{ key: 'user', value }], ...extra });

describe('a descriptor\'s hits_addend of 0 looks without charging', () => {
  let running: Running;
  let grpc: RlsCaller;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: 0, log: () => {} });
    grpc = rls(running.grpcPort!);
  });
  after(async () => {
    grpc?.close();
    await running?.close();
  });

  /** remaining — limit_remaining of the first status after a gRPC call. */
  const call = async (req: RlsRequest): Promise<[string, number]> => {
    const r = await grpc.call(req);
    return [r.statuses[0].code, r.statuses[0].limit_remaining];
  };

  test('gRPC: hits_addend { value: 0 } is reported and not charged; the request-level 0 still means 1', async () => {
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('g'), user('g'), user('g')] }).then((x) => x), ['OK', 2]);
    // 3 of 5 used: a look says 2 remain, and charges nothing
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('g', { hits_addend: { value: 0 } })] }), ['OK', 2]);
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('g', { hits_addend: { value: 0 } })] }), ['OK', 2]);
    // the request's hits_addend 0 (proto3's default) is 1
    assert.deepEqual(await call({ domain: 'api', hits_addend: 0, descriptors: [user('g')] }), ['OK', 1]);
    // one descriptor charged, one only looking at the same client, in one request
    const r = await grpc.call({ domain: 'api', descriptors: [user('g'), user('g', { hits_addend: { value: 0 } })] });
    assert.equal(r.overall_code, 'OK');
    assert.deepEqual(r.statuses.map((s) => s.limit_remaining), [0, 0]);
    // at 5 of 5: a look is still OK (0 + 0 fits), a hit is not
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('g', { hits_addend: { value: 0 } })] }), ['OK', 0]);
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('g')] }), ['OVER_LIMIT', 0]);
  });

  test('gRPC wire: an empty UInt64Value (how Envoy sends a hits_addend set to 0) is set, and 0', async () => {
    /** raw — ShouldRateLimit with the request as bytes; the reply decoded by the typed client's rules is not needed. */
    const raw = (body: Buffer): Promise<void> => {
      const c = new grpcJs.Client(`127.0.0.1:${running.grpcPort}`, grpcJs.credentials.createInsecure());
      return new Promise((resolve, reject) => c.makeUnaryRequest('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', (b: Buffer) => b, (b: Buffer) => b, body, (e) => {
        c.close();
        if (e) reject(e);
        else resolve();
      }));
    };
    // RateLimitRequest { domain = 1 "api"; descriptors = 2 { entries = 1 { key = 1 "user"; value = 2 "w" }; hits_addend = 3 {} } }
    const entry = Buffer.from([0x0a, 4, ...Buffer.from('user'), 0x12, 1, ...Buffer.from('w')]);
    const descriptor = Buffer.from([0x0a, entry.length, ...entry, 0x1a, 0]);
    const request = Buffer.from([0x0a, 3, ...Buffer.from('api'), 0x12, descriptor.length, ...descriptor]);
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('w')] }), ['OK', 4]);
    for (let i = 0; i < 3; i++) await raw(request);
    assert.deepEqual(await call({ domain: 'api', descriptors: [user('w', { hits_addend: { value: 0 } })] }), ['OK', 4], 'the 3 looks charged nothing');
  });

  test('gRPC: a look at a requests_per_unit: 0 limit is OK, a hit is over', async () => {
    const banned = { entries: [{ key: 'banned', value: 'x' }] };
    assert.equal((await grpc.call({ domain: 'api', descriptors: [{ ...banned, hits_addend: { value: 0 } }] })).overall_code, 'OK');
    assert.equal((await grpc.call({ domain: 'api', descriptors: [banned] })).overall_code, 'OVER_LIMIT');
  });

  test('POST /json: hitsAddend 0 (and { value: 0 }) on a descriptor is reported and not charged', async () => {
    const post = (body: unknown) => http(running.httpPort!, 'POST', '/json', body);
    const first = await post({ domain: 'api', descriptors: [user('j'), user('j'), user('j')] });
    assert.equal(first.json.statuses[0].limitRemaining, 2);
    for (const hitsAddend of [0, '0', { value: 0 }]) {
      const r = await post({ domain: 'api', descriptors: [{ ...user('j'), hitsAddend }] });
      assert.equal(r.status, 200);
      assert.equal(r.json.statuses[0].limitRemaining, 2, `hitsAddend ${JSON.stringify(hitsAddend)}`);
    }
    const charged = await post({ domain: 'api', hitsAddend: 0, descriptors: [user('j')] });
    assert.equal(charged.json.statuses[0].limitRemaining, 1);
  });
});
