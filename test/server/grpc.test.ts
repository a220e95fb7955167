/**
 * gRPC: Envoy's RLS v3 on a real grpc-js server, called by real grpc-js clients — one built from ratekeeper's
 * rls.proto, and one that writes and reads the protobuf bytes by hand from the public field numbers of Envoy's
 * rls.proto / ratelimit.proto (so that the wire format is checked independently of ratekeeper's own .proto).
 * Bad requests get INVALID_ARGUMENT with the field named, nothing is charged, and the server keeps serving.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RateLimitService } from '../../src/server/service.js';
import { GrpcFront, rlsClient } from '../../src/server/grpc.js';
import type { RlsRequest, RlsResponse } from '../../src/server/rls.js';
import { configFrom } from './support.js';

// ---- a minimal protobuf writer and reader (varints and length-delimited fields only) ----
function varint(n: number): number[] {
  const out: number[] = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
function field(no: number, value: number | string | Buffer): Buffer {
  if (typeof value === 'number') return Buffer.from([...varint((no << 3) | 0), ...varint(value)]);
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([Buffer.from(varint((no << 3) | 2)), Buffer.from(varint(bytes.length)), bytes]);
}
const msg = (...parts: Buffer[]): Buffer => Buffer.concat(parts);

type Fields = Map<number, (number | Buffer)[]>;
function parse(buf: Buffer): Fields {
  const out: Fields = new Map();
  let i = 0;
  const readVarint = (): number => {
    let shift = 0n;
    let v = 0n;
    for (;;) {
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return Number(v);
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = readVarint();
    const no = tag >> 3;
    const wire = tag & 7;
    let value: number | Buffer;
    if (wire === 0) value = readVarint();
    else if (wire === 2) {
      const len = readVarint();
      value = buf.subarray(i, i + len);
      i += len;
    } else throw new Error(`unexpected wire type ${wire}`);
    out.set(no, [...(out.get(no) ?? []), value]);
  }
  return out;
}

const CONFIG = `
domain: wire
descriptors:
  - key: user
    rate_limit: { name: per_user, unit: minute, requests_per_unit: 2 }
`;

describe('gRPC RLS v3', () => {
  let front: GrpcFront;
  let address: string;
  let service: RateLimitService;
  before(async () => {
    service = new RateLimitService({ store: new MemoryStore(), responseHeaders: true });
    service.setConfig(await configFrom(CONFIG));
    front = new GrpcFront(service, undefined, () => undefined);
    address = `127.0.0.1:${await front.listen('127.0.0.1', 0)}`;
  });
  after(async () => {
    await front.close(1000);
  });

  function typed(req: unknown): Promise<RlsResponse> {
    const Client = rlsClient();
    const c = new Client(address, grpc.credentials.createInsecure()) as unknown as { ShouldRateLimit: Function; close(): void };
    return new Promise((resolve, reject) => c.ShouldRateLimit(req, (e: Error | null, r: RlsResponse) => {
      c.close();
      if (e) reject(e);
      else resolve(r);
    }));
  }

  /** raw — ShouldRateLimit with the request as bytes and the reply as bytes. */
  function raw(body: Buffer): Promise<Buffer> {
    const c = new grpc.Client(address, grpc.credentials.createInsecure());
    return new Promise((resolve, reject) => c.makeUnaryRequest(
      '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', (b: Buffer) => b, (b: Buffer) => b, body,
      (e, r) => {
        c.close();
        if (e) reject(e);
        else resolve(r as Buffer);
      },
    ));
  }

  test('the wire format: field numbers of Envoy\'s rls.proto and ratelimit.proto, both ways', async () => {
    // RateLimitRequest { domain = 1; descriptors = 2 { entries = 1 { key = 1; value = 2 } }; hits_addend = 3 }
    const descriptor = msg(field(1, msg(field(1, 'user'), field(2, 'alice'))));
    const request = msg(field(1, 'wire'), field(2, descriptor), field(3, 1));
    const reply = parse(await raw(request));
    // RateLimitResponse { overall_code = 1 (OK = 1); statuses = 2; response_headers_to_add = 3 }
    assert.deepEqual(reply.get(1), [1]);
    const status = parse(reply.get(2)![0] as Buffer);
    // DescriptorStatus { code = 1; current_limit = 2 { requests_per_unit = 1; unit = 2 (MINUTE = 2); name = 3 };
    //                    limit_remaining = 3; duration_until_reset = 4 { seconds = 1; nanos = 2 } }
    assert.deepEqual(status.get(1), [1]);
    const limit = parse(status.get(2)![0] as Buffer);
    assert.deepEqual(limit.get(1), [2]);
    assert.deepEqual(limit.get(2), [2]);
    assert.equal((limit.get(3)![0] as Buffer).toString(), 'per_user');
    assert.deepEqual(status.get(3), [1]);
    const reset = parse(status.get(4)![0] as Buffer);
    assert.ok((reset.get(1)?.[0] as number) <= 60);
    // HeaderValue { key = 1; value = 2 }
    const headers = (reply.get(3) ?? []).map((h) => parse(h as Buffer)).map((h) => [(h.get(1)![0] as Buffer).toString(), (h.get(2)![0] as Buffer).toString()]);
    assert.deepEqual(headers.map(([k]) => k), ['RateLimit-Policy', 'RateLimit']);
    assert.match(headers[1][1], /^"per_user";r=1;t=\d+$/);

    // the descriptor's own hits_addend (google.protobuf.UInt64Value = 3 { value = 1 }) and its own limit
    // (RateLimitOverride = 2 { requests_per_unit = 1; unit = 2 }) — SECOND = 1
    const withOwn = msg(field(1, msg(field(1, 'user'), field(2, 'bob'))), field(2, msg(field(1, 1), field(2, 1))), field(3, msg(field(1, 1))));
    // a per-second limit's window is aligned to the epoch: both calls go early in one second, so that they share it
    if (Date.now() % 1000 > 500) await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
    const t0 = Date.now();
    const first = parse(await raw(msg(field(1, 'wire'), field(2, withOwn))));
    assert.deepEqual(first.get(1), [1]);
    const second = parse(await raw(msg(field(1, 'wire'), field(2, withOwn))));
    assert.deepEqual(second.get(1), [2], `OVER_LIMIT = 2: one per second from the request's own limit (calls from ${t0 % 1000} ms into a second, ${Date.now() - t0} ms in all)`);
    const over = parse(second.get(2)![0] as Buffer);
    assert.deepEqual(over.get(1), [2]);
    assert.ok(over.get(3) === undefined || over.get(3)![0] === 0, 'limit_remaining 0 (absent or written as 0)');
    // Retry-After with a refusal
    assert.ok((second.get(3) ?? []).some((h) => (parse(h as Buffer).get(1)![0] as Buffer).toString() === 'Retry-After'));
  });

  test('a typed client sees the same answers: OK, then OVER_LIMIT with Retry-After', async () => {
    const req = { domain: 'wire', descriptors: [{ entries: [{ key: 'user', value: 'carol' }] }] };
    const a = await typed(req);
    assert.equal(a.overall_code, 'OK');
    assert.deepEqual(a.statuses[0].current_limit, { name: 'per_user', requests_per_unit: 2, unit: 'MINUTE' });
    assert.equal(a.statuses[0].limit_remaining, 1);
    await typed(req);
    const c = await typed(req);
    assert.equal(c.overall_code, 'OVER_LIMIT');
    assert.equal(c.statuses[0].code, 'OVER_LIMIT');
  });

  const bad: [string, unknown, RegExp][] = [
    ['an empty domain', { domain: '', descriptors: [{ entries: [{ key: 'user', value: 'x' }] }] }, /domain: must not be empty/],
    ['no descriptors', { domain: 'wire', descriptors: [] }, /descriptors: must not be empty/],
    ['a 1 MB descriptor value', { domain: 'wire', descriptors: [{ entries: [{ key: 'user', value: 'v'.repeat(1 << 20) }] }] }, /descriptors\[0\]\.entries: make a key of \d+ characters; at most 4096/],
    ['an unknown unit in the request\'s own limit', { domain: 'wire', descriptors: [{ entries: [{ key: 'user', value: 'x' }], limit: { requests_per_unit: 1, unit: 'UNKNOWN' } }] }, /descriptors\[0\]\.limit\.unit/],
    ['a unit number the proto does not know', { domain: 'wire', descriptors: [{ entries: [{ key: 'user', value: 'x' }], limit: { requests_per_unit: 1, unit: 99 } }] }, /^descriptors\[0\]\.limit\.unit: .*got 99/],
    ['a unit number the proto does not know, in a domain not configured', { domain: 'elsewhere', descriptors: [{ entries: [{ key: 'user', value: 'x' }], limit: { requests_per_unit: 1, unit: 99 } }] }, /^descriptors\[0\]\.limit\.unit: /],
  ];
  for (const [what, req, message] of bad) {
    test(`${what}: INVALID_ARGUMENT naming the field, nothing charged, the server keeps serving`, async () => {
      await assert.rejects(typed(req), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
        assert.match(e.details, message);
        return true;
      });
      const ok = await typed({ domain: 'wire', descriptors: [{ entries: [{ key: 'user', value: `after-${what}` }] }] });
      assert.equal(ok.statuses[0].limit_remaining, 1);
    });
  }

  test('malformed protobuf bytes: INVALID_ARGUMENT (the client\'s mistake, not INTERNAL), and the server keeps serving', async () => {
    // protobufjs reads these (a domain of "\u0001" and no descriptors): the service refuses them
    await assert.rejects(raw(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01])), (e: grpc.ServiceError) => e.code === grpc.status.INVALID_ARGUMENT);
    // these do not decode at all: a truncated descriptor (length 5, 3 bytes follow) and a field with wire type 7
    for (const bytes of [[0x0a, 0x01, 0x64, 0x12, 0x05, 0x0a, 0x01, 0x61], [0x0f]]) {
      await assert.rejects(raw(Buffer.from(bytes)), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.INVALID_ARGUMENT, e.details);
        assert.match(e.details, /^request: is not a RateLimitRequest in protobuf: /);
        return true;
      });
    }
    const ok = await typed({ domain: 'wire', descriptors: [{ entries: [{ key: 'user', value: 'after-garbage' }] }] });
    assert.equal(ok.overall_code, 'OK');
  });
});
