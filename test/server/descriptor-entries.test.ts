/**
 * test/server/descriptor-entries — a descriptor's entries as clients really send them.
 * 1. proto3 leaves an empty string off the wire, so Envoy sends a descriptor entry whose
 * value (or key) is '' as an entry without that field (a header present but empty, a `generic_key` without value);
 * protobufjs (LOADER_OPTIONS' defaults: false) then decodes it with the field absent. Such a request is valid and is
 * decided as /json decides the same entry with '' (envoyproxy/ratelimit's Go structs read ''), on a real GrpcFront with
 * a real grpc-js client sending the bytes as Envoy writes them. Before: the normaliser read `.length` of the absent
 * field and grpc-js answered INTERNAL "Cannot read properties of undefined (reading 'length')".
 * 2. A descriptor with a limit of its own and no entries has no client key: refused naming
 * `descriptors[i].entries`, on /json (400) and gRPC (INVALID_ARGUMENT). Before: the limiter's own error, on /json
 * as `field: "body"`, on gRPC without a field.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RateLimitService } from '../../src/server/service.js';
import { GrpcFront, rlsClient } from '../../src/server/grpc.js';
import { HttpFront } from '../../src/server/http.js';
import type { RlsResponse } from '../../src/server/rls.js';
import { configFrom } from './support.js';

const METHOD = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
`;

/** len, str — a length-delimited protobuf field (field numbers of proto/rls.proto); lengths here are < 128. */
const len = (no: number, bytes: Buffer): Buffer => Buffer.concat([Buffer.from([(no << 3) | 2, bytes.length]), bytes]);
const str = (no: number, s: string): Buffer => len(no, Buffer.from(s, 'utf8'));
/** request — RateLimitRequest { domain = 1; descriptors = 2 } of one descriptor { entries = 1 } of `entries` (Entry bytes). */
const request = (...entries: Buffer[]): Buffer => Buffer.concat([str(1, 'api'), len(2, Buffer.concat(entries.map((e) => len(1, e))))]);

describe('gRPC: entries whose key or value is empty, left off the wire as proto3 does', () => {
  let front: GrpcFront;
  let client: grpc.Client;
  let json: RateLimitService;
  const decode = rlsClient().service.ShouldRateLimit.responseDeserialize as (b: Buffer) => RlsResponse;

  before(async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom(CONFIG));
    front = new GrpcFront(service, undefined, () => undefined, {});
    const port = await front.listen('127.0.0.1', 0);
    client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    // the same config on a second service, asked in /json's form (entries with '') for the answers to compare with
    json = new RateLimitService({ store: new MemoryStore() });
    json.setConfig(await configFrom(CONFIG));
  });
  after(async () => {
    client.close();
    await front.close(0);
  });

  const call = (bytes: Buffer): Promise<RlsResponse> => new Promise((resolve, reject) => {
    client.makeUnaryRequest(METHOD, (b: Buffer) => b, (b: Buffer) => b, bytes, (err, v) => (err ? reject(err) : resolve(decode(v as Buffer))));
  });
  const shape = (r: RlsResponse): unknown => ({
    overall: r.overall_code,
    statuses: r.statuses.map((s) => ({ code: s.code, limit: s.current_limit?.requests_per_unit, remaining: s.limit_remaining ?? 0 })),
  });

  test('an entry without its value is decided as the entry with value \'\' (the key\'s own limit)', async () => {
    const expected = [
      { overall: 'OK', statuses: [{ code: 'OK', limit: 2, remaining: 1 }] },
      { overall: 'OK', statuses: [{ code: 'OK', limit: 2, remaining: 0 }] },
      { overall: 'OVER_LIMIT', statuses: [{ code: 'OVER_LIMIT', limit: 2, remaining: 0 }] },
    ];
    for (const want of expected) {
      const got = await call(request(str(1, 'user')));
      assert.deepEqual(shape(got), want);
      assert.deepEqual(shape(await json.decide({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: '' }] }] })), want, '/json\'s form agrees');
    }
  });

  test('an entry without its key, and one with neither, are decided as the entry with key \'\' (no limit has that key: OK)', async () => {
    const want = { overall: 'OK', statuses: [{ code: 'OK', limit: undefined, remaining: 0 }] };
    assert.deepEqual(shape(await json.decide({ domain: 'api', descriptors: [{ entries: [{ key: '', value: 'v' }] }] })), want, '/json\'s form');
    assert.deepEqual(shape(await call(request(str(2, 'v')))), want);
    assert.deepEqual(shape(await call(request(Buffer.alloc(0)))), want);
    // the server keeps serving, and the key's limit is untouched by them
    assert.deepEqual(shape(await call(request(Buffer.concat([str(1, 'user'), str(2, 'x')])))), { overall: 'OK', statuses: [{ code: 'OK', limit: 2, remaining: 1 }] });
  });
});

describe('a descriptor with a limit of its own and no entries', () => {
  let grpcFront: GrpcFront;
  let httpFront: HttpFront;
  let client: grpc.Client;
  let httpPort: number;

  before(async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom(CONFIG));
    grpcFront = new GrpcFront(service, undefined, () => undefined, {});
    client = new grpc.Client(`127.0.0.1:${await grpcFront.listen('127.0.0.1', 0)}`, grpc.credentials.createInsecure());
    httpFront = new HttpFront({ service, healthy: () => true, log: () => undefined });
    httpPort = await httpFront.listen('127.0.0.1', 0);
  });
  after(async () => {
    client.close();
    await grpcFront.close(0);
    await httpFront.close(0);
  });

  const MESSAGE = /^descriptors\[1\]\.entries: must not be empty when the descriptor carries its own limit/;

  test('/json: 400 naming descriptors[1].entries, and the connection keeps serving', async () => {
    for (const d of [{ entries: [], limit: { requests_per_unit: 5, unit: 'MINUTE' } }, { limit: { requests_per_unit: 5, unit: 'MINUTE' } }]) {
      const r = await fetch(`http://127.0.0.1:${httpPort}/json`, {
        method: 'POST', body: JSON.stringify({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'j' }] }, d] }),
      });
      const body = await r.json() as { error: string; field: string };
      assert.equal(r.status, 400);
      assert.equal(body.field, 'descriptors[1].entries');
      assert.match(body.error, MESSAGE);
    }
    // nothing was charged by the refused requests
    const ok = await fetch(`http://127.0.0.1:${httpPort}/json`, { method: 'POST', body: JSON.stringify({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'j' }] }] }) });
    assert.equal(ok.status, 200);
    assert.equal((await ok.json() as { statuses: { limitRemaining: number }[] }).statuses[0].limitRemaining, 1);
  });

  test('gRPC: INVALID_ARGUMENT naming descriptors[1].entries', async () => {
    // descriptor 1: { limit = 2 { requests_per_unit = 1: 5, unit = 2: MINUTE (2) } }, no entries
    const own = len(2, Buffer.from([0x08, 5, 0x10, 2]));
    const bytes = Buffer.concat([str(1, 'api'), len(2, len(1, Buffer.concat([str(1, 'user'), str(2, 'g')]))), len(2, own)]);
    const err = await new Promise<grpc.ServiceError | null>((resolve) => {
      client.makeUnaryRequest(METHOD, (b: Buffer) => b, (b: Buffer) => b, bytes, (e) => resolve(e));
    });
    assert.ok(err !== null, 'refused');
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
    assert.match(err.details, MESSAGE);
  });
});
