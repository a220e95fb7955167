/**
 * The gRPC listener under attack (issue 15, §3 and §6), against the service in a process of its own
 * (attack-server.ts: its event-loop delay and RSS are measured there, not the attacking client's):
 * - messages built to be expensive to decode — 2.1 M empty descriptors in 4 114 gzip-compressed bytes, 4 MB of them
 *   uncompressed (8 at once), 100 000 descriptors (1.8 MB), 2 M entries in one descriptor, 2 M fields the proto has
 *   once — are refused INVALID_ARGUMENT naming the field, from a scan of the bytes before any decoding; /json too;
 * - descriptor strings that are not valid UTF-8 (gRPC) or have a lone surrogate (/json, /v1/check) are refused
 *   naming the entry, instead of sharing one counter;
 * - a stream that sends 3 bytes of a message and stops is answered DEADLINE_EXCEEDED and reset after requestTimeout;
 *   a connection may hold at most maxConcurrentStreams calls; the server pings its connections (keepalive);
 * - HTTP/2 rapid reset (requests cancelled as soon as sent, from a raw node:http2 client): a cancelled call charges
 *   nothing, and a well-behaved client keeps being answered.
 * Thresholds are generous (a shared 2-core machine): the goals and the measured numbers are in docs/server.md.
 */
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as http2 from 'node:http2';
import { request } from 'node:http';
import { connect as connectTcp } from 'node:net';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { rlsClient } from '../../src/server/grpc.js';
import type { RlsResponse } from '../../src/server/rls.js';

const SERVER = fileURLToPath(new URL('./attack-server.js', import.meta.url));
const METHOD = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

const CONFIG = `
domain: edge
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1000 }
policies:
  api: { rules: '1000/1m' }
`;

// ---- protobuf bytes by hand (field numbers of proto/rls.proto) ----
function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}
function len(no: number, bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from([...varint((no << 3) | 2), ...varint(bytes.length)]), bytes]);
}
const str = (no: number, s: string | Buffer): Buffer => len(no, typeof s === 'string' ? Buffer.from(s, 'utf8') : s);
const entry = (key: string | Buffer, value: string | Buffer): Buffer => len(1, Buffer.concat([str(1, key), str(2, value)]));
const descriptor = (...entries: Buffer[]): Buffer => len(2, Buffer.concat(entries));
const request_ = (domain: string, ...descriptors: Buffer[]): Buffer => Buffer.concat([str(1, domain), ...descriptors]);
/** repeat — `unit` repeated to fill `bytes` (a whole number of times). */
const repeat = (unit: Buffer, bytes: number): Buffer => Buffer.alloc(Math.floor(bytes / unit.length) * unit.length, unit);

/** EMPTY_4MB — RateLimitRequest { domain: "edge", descriptors: [{} × 2 097 149] }: 4 MB minus a few bytes. */
const EMPTY_4MB = Buffer.concat([str(1, 'edge'), repeat(Buffer.from([0x12, 0x00]), 4 * 1024 * 1024 - 8)]);

interface Stats { maxDelayMs: number; cpuMs: number; rss: number; peakRss: number; inFlight: number; pendingStreams: number; cancelled: number; expired: number }

describe('the gRPC listener under attack', () => {
  let child: ChildProcess;
  let grpcAddress: string;
  let httpPort: number;

  function ask<T>(op: string): Promise<T> {
    const p = once(child, 'message') as Promise<[T]>;
    child.send({ op });
    return p.then(([m]) => m);
  }
  const mark = (): Promise<{ rss: number }> => ask('mark');
  const stats = (): Promise<Stats> => ask('stats');

  /** start — a service process with GrpcFront's `options`; its gRPC address and HTTP port. */
  async function start(options: Record<string, number>): Promise<{ proc: ChildProcess; grpc: string; http: number }> {
    const proc = fork(SERVER, [], {
      execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, RK_CONFIG: CONFIG, RK_GRPC: JSON.stringify(options) },
    });
    const [ports] = (await once(proc, 'message')) as [{ grpc: number; http: number }];
    return { proc, grpc: `127.0.0.1:${ports.grpc}`, http: ports.http };
  }

  before(async () => {
    // the defaults (requestTimeout 10 s: 8 messages of 4 MB take over a second to arrive on a busy machine)
    const s = await start({});
    child = s.proc;
    grpcAddress = s.grpc;
    httpPort = s.http;
  });
  after(() => {
    child?.kill('SIGKILL');
  });

  /** streamsServer — a second service process with a short requestTimeout, few streams and frequent PINGs. */
  async function streamsServer(): Promise<void> {
    child.kill('SIGKILL');
    const s = await start({ requestTimeout: 1000, maxConcurrentStreams: 100, keepaliveTime: 300, keepaliveTimeout: 5000 });
    child = s.proc;
    grpcAddress = s.grpc;
    httpPort = s.http;
  }

  /** raw — ShouldRateLimit with the request as bytes (gzip-compressed by grpc-js when `gzip`). */
  function raw(body: Buffer, gzip = false): Promise<Buffer> {
    const c = new grpc.Client(grpcAddress, grpc.credentials.createInsecure(), gzip ? { 'grpc.default_compression_algorithm': 2 } : {});
    return new Promise<Buffer>((resolve, reject) => c.makeUnaryRequest(METHOD, (b: Buffer) => b, (b: Buffer) => b, body, (e, r) => {
      c.close();
      if (e) reject(e);
      else resolve(r as Buffer);
    }));
  }

  function typed(req: unknown): Promise<RlsResponse> {
    const Client = rlsClient();
    const c = new Client(grpcAddress, grpc.credentials.createInsecure()) as unknown as { ShouldRateLimit: Function; close(): void };
    return new Promise((resolve, reject) => c.ShouldRateLimit(req, (e: Error | null, r: RlsResponse) => {
      c.close();
      if (e) reject(e);
      else resolve(r);
    }));
  }

  function refused(p: Promise<unknown>, details: RegExp): Promise<void> {
    return assert.rejects(p, (e: grpc.ServiceError) => {
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT, `${grpc.status[e.code]}: ${e.details}`);
      assert.match(e.details, details);
      return true;
    });
  }

  /** attack — `calls` refused calls of `body`, `parallel` at a time; the server's delay and RSS growth meanwhile. */
  async function attack(what: string, body: Buffer, details: RegExp, calls: number, parallel: number, gzip = false): Promise<{ maxDelayMs: number; cpuMsPerCall: number; growthMB: number }> {
    await ask('gc');
    const base = await mark();
    for (let i = 0; i < calls; i += parallel) {
      await Promise.all(Array.from({ length: Math.min(parallel, calls - i) }, () => refused(raw(body, gzip), details)));
    }
    const s = await stats();
    const out = { maxDelayMs: Math.round(s.maxDelayMs * 10) / 10, cpuMsPerCall: Math.round((s.cpuMs / calls) * 10) / 10, growthMB: Math.round((s.peakRss - base.rss) / 1e5) / 10 };
    console.log(`# ${what}: ${calls} calls, ${parallel} at a time: server CPU ${out.cpuMsPerCall} ms per call, event loop max delay ${out.maxDelayMs} ms, RSS peak +${out.growthMB} MB (from ${Math.round(base.rss / 1e6)} MB)`);
    // still serving, and correctly
    assert.equal((await typed({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: `after ${what}` }] }] })).statuses[0].limit_remaining, 999);
    return out;
  }

  // goals: < 20 ms of event loop and < 50 MB RSS per message; before the scan: 0.6–2.1 s and 0.8–1.9 GB. The server's
  // CPU time per call (every thread: zlib inflates in the pool) is what the test holds (other processes on the
  // machine do not add to it; a call on a new connection costs ~12 ms of it here); the event loop's
  // longest delay also counts the machine's noise (tens of ms here, see the noise floor), so its bound is looser.
  const MAX_CPU_MS = 300;
  const MAX_DELAY_MS = 500;
  const check = (r: { maxDelayMs: number; cpuMsPerCall: number }, maxDelayMs = MAX_DELAY_MS): void => {
    assert.ok(r.cpuMsPerCall < MAX_CPU_MS, `the server spent ${r.cpuMsPerCall} ms of CPU per call`);
    assert.ok(r.maxDelayMs < maxDelayMs, `event loop blocked ${r.maxDelayMs} ms`);
  };

  test('the noise floor: the same measurement around 8 ordinary calls', async () => {
    await ask('gc');
    const base = await mark();
    for (let i = 0; i < 8; i++) await typed({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: `floor-${i}` }] }] });
    const s = await stats();
    console.log(`# noise floor: 8 ordinary calls: server CPU ${(s.cpuMs / 8).toFixed(1)} ms per call, event loop max delay ${s.maxDelayMs.toFixed(1)} ms, RSS peak +${((s.peakRss - base.rss) / 1e6).toFixed(1)} MB`);
  });

  test('2.1 M empty descriptors in 4 114 gzip-compressed bytes: refused before decoding', async () => {
    const gz = gzipSync(EMPTY_4MB);
    console.log(`# the message: ${EMPTY_4MB.length} bytes, ${(EMPTY_4MB.length - 6) / 2} descriptors, ${gz.length} bytes gzip-compressed`);
    const r = await attack('gzip bomb', EMPTY_4MB, /^descriptors: has more than 1000 descriptors/, 4, 1, true);
    check(r);
    assert.ok(r.growthMB < 50, `RSS grew ${r.growthMB} MB`);
  });

  test('a message that inflates past 4 MiB: grpc-js stops inflating at the receive limit (RESOURCE_EXHAUSTED)', async () => {
    const body = Buffer.concat([EMPTY_4MB, EMPTY_4MB]);
    await assert.rejects(raw(body, true), (e: grpc.ServiceError) => {
      assert.equal(e.code, grpc.status.RESOURCE_EXHAUSTED, `${grpc.status[e.code]}: ${e.details}`);
      assert.match(e.details, /decompresses to a size larger than 4194304/);
      return true;
    });
  });

  test('4 MB of empty descriptors, 8 at once: refused before decoding', async () => {
    const r = await attack('4 MB of empty descriptors', EMPTY_4MB, /^descriptors: has more than 1000 descriptors/, 8, 8);
    // 32 MB arriving at once from this process, on a shared machine: before, 8 at once held it up to 14 s
    check(r, 2000);
    // the goal: < 50 MB. Refused from each message's first DATA frame (firstChunk.ts), the rest never
    // buffered: +0.9–1.4 MB; before, each whole message was buffered (and joined) before the scan: +51–61 MB
    assert.ok(r.growthMB < 50, `RSS grew ${r.growthMB} MB`);
  });

  test('100 000 descriptors (1.8 MB): refused before decoding', async () => {
    const one = descriptor(entry('user', 'x'));
    const body = Buffer.concat([str(1, 'edge'), repeat(one, one.length * 100_000)]);
    assert.ok(body.length > 1_000_000);
    const r = await attack('100 000 descriptors', body, /^descriptors: has more than 1000 descriptors/, 4, 1);
    check(r);
    assert.ok(r.growthMB < 50, `RSS grew ${r.growthMB} MB`);
  });

  test('2 M entries in one descriptor, and 2 M fields the proto has once: refused before decoding', async () => {
    const entries = Buffer.concat([str(1, 'edge'), descriptor(repeat(Buffer.from([0x0a, 0x00]), 4 * 1024 * 1024 - 16))]);
    const r1 = await attack('2 M entries in one descriptor', entries, /^descriptors\[0\]\.entries: has more than 64 entries/, 4, 1);
    // hits_addend (field 3, a varint) 2 M times: protobufjs would read every one
    const fields = Buffer.concat([str(1, 'edge'), repeat(Buffer.from([0x18, 0x01]), 4 * 1024 * 1024 - 16)]);
    const r2 = await attack('2 M hits_addend fields', fields, /^request: has more than \d+ protobuf fields/, 4, 1);
    check(r1);
    check(r2);
  });

  test('1 000 descriptors with 4 096-character values (over 4 MB in all) are not a size problem: the first 1 000 are decided', async () => {
    // under the receive limit: 1 000 descriptors of 4 000 characters; the scan lets them through to the service
    const one = descriptor(entry('user', 'v'.repeat(4000)));
    const body = Buffer.concat([str(1, 'edge'), repeat(one, one.length * 1000)]);
    const reply = await raw(body);
    assert.ok(reply.length > 1000, 'a RateLimitResponse with 1 000 statuses');
  });

  test('descriptor values that are not valid UTF-8: INVALID_ARGUMENT naming the entry, not one shared counter', async () => {
    // 0xff and 0xfe are not UTF-8; protobufjs decodes both to U+FFFD, so they were one client
    await refused(raw(request_('edge', descriptor(entry('user', Buffer.from([0x61, 0xff]))))), /^descriptors\[0\]\.entries\[0\]\.value: is not valid UTF-8/);
    await refused(raw(request_('edge', descriptor(entry('user', 'ok')), descriptor(entry('user', 'ok'), entry(Buffer.from([0xc3, 0x28]), 'x')))), /^descriptors\[1\]\.entries\[1\]\.key: is not valid UTF-8/);
    // an encoded surrogate (CESU-8 / WTF-8 ED A0 80) is not UTF-8 either
    await refused(raw(request_('edge', descriptor(entry('user', Buffer.from([0xed, 0xa0, 0x80]))))), /^descriptors\[0\]\.entries\[0\]\.value: is not valid UTF-8/);
    await refused(raw(request_(Buffer.from([0x65, 0xff]) as unknown as string, descriptor(entry('user', 'x')))), /^domain: is not valid UTF-8/);
    // valid multi-byte UTF-8 is a client of its own
    const cafe = await typed({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: 'café ☕ 𝄞' }] }] });
    assert.equal(cafe.statuses[0].limit_remaining, 999);
    const again = await typed({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: 'café ☕ 𝄞' }] }] });
    assert.equal(again.statuses[0].limit_remaining, 998);
  });

  // ---- /json and /v1/check ----
  function post(path: string, body: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: httpPort, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        let b = '';
        res.setEncoding('utf8').on('data', (s: string) => (b += s)).on('end', () => resolve({ status: res.statusCode!, body: b }));
      });
      req.once('error', reject);
      req.end(body);
    });
  }

  test('/json: bodies built to be expensive to parse are refused before JSON.parse; the caps still bite after it', async () => {
    await ask('gc');
    const base = await mark();
    const many = JSON.stringify({ domain: 'edge', descriptors: Array.from({ length: 100_000 }, () => ({ entries: [{ key: 'user', value: 'x' }] })) });
    const empty = JSON.stringify({ domain: 'edge', descriptors: Array.from({ length: 500_000 }, () => ({})) });
    const zeros = `{"domain":"edge","descriptors":[${'0,'.repeat(1_900_000)}0]}`;
    const deep = JSON.stringify({ domain: 'edge', descriptors: [{ entries: Array.from({ length: 150_000 }, () => ({ key: 'k', value: '' })) }] });
    const bodies = [many, empty, zeros, deep];
    for (const body of bodies) {
      assert.ok(body.length > 1_000_000 && body.length < 4 * 1024 * 1024, String(body.length));
      const r = await post('/json', body);
      assert.equal(r.status, 400, r.body);
      assert.match(r.body, /^\{"error":"descriptors: has more than \d+ JSON values/);
    }
    const s = await stats();
    console.log(`# /json: ${bodies.length} refusals of 1.5-4 MB bodies: server CPU ${(s.cpuMs / bodies.length).toFixed(1)} ms per call, event loop max delay ${s.maxDelayMs.toFixed(1)} ms, RSS peak +${((s.peakRss - base.rss) / 1e6).toFixed(1)} MB`);
    // before the count: JSON.parse alone took 60–260 ms of CPU for each of these
    assert.ok(s.cpuMs / bodies.length < 100, `the server spent ${s.cpuMs / bodies.length} ms of CPU per call`);
    // under the count, the caps are checked right after the parse, before any other work
    const wide = JSON.stringify({ domain: 'edge', descriptors: Array.from({ length: 1001 }, () => ({ entries: [{ key: 'user', value: 'x' }] })) });
    let r = await post('/json', wide);
    assert.match(r.body, /"descriptors: has 1001 descriptors; at most 1000/);
    const long = JSON.stringify({ domain: 'edge', descriptors: [{ entries: Array.from({ length: 65 }, (_, i) => ({ key: `k${i}`, value: 'v' })) }] });
    r = await post('/json', long);
    assert.equal(r.status, 400, r.body);
    assert.match(r.body, /"descriptors\[0\]\.entries: has 65 entries; at most 64/);
    // 1000 descriptors with 4000-character values (4 MB): not a problem of size, decided
    const big = JSON.stringify({ domain: 'edge', descriptors: Array.from({ length: 1000 }, (_, i) => ({ entries: [{ key: 'user', value: `${i}`.padEnd(4000, 'v') }] })) });
    assert.ok(big.length > 4_000_000);
    r = await post('/json', big);
    assert.equal(r.status, 200, r.body.slice(0, 200));
  });

  test('/json and /v1/check: a lone surrogate is refused naming the field (Redis would store it as U+FFFD: one shared counter)', async () => {
    const json = (value: string): string => `{"domain":"edge","descriptors":[{"entries":[{"key":"user","value":"${value}"}]}]}`;
    let r = await post('/json', json('a\\ud800'));
    assert.equal(r.status, 400, r.body);
    assert.match(r.body, /descriptors\[0\]\.entries\[0\]\.value: has a lone surrogate/);
    r = await post('/json', `{"domain":"edge","descriptors":[{"entries":[{"key":"\\udfff","value":"x"}]}]}`);
    assert.match(r.body, /descriptors\[0\]\.entries\[0\]\.key: has a lone surrogate/);
    r = await post('/json', `{"domain":"e\\ud800","descriptors":[{"entries":[{"key":"user","value":"x"}]}]}`);
    assert.match(r.body, /"domain: has a lone surrogate/);
    r = await post('/v1/check', '{"policy":"api","key":"alice\\udc00"}');
    assert.equal(r.status, 400, r.body);
    assert.match(r.body, /"key: has a lone surrogate/);
    // a surrogate pair is one character (U+1D11E), accepted
    r = await post('/json', json('\\ud834\\udd1e'));
    assert.equal(r.status, 200, r.body);
    r = await post('/v1/check', '{"policy":"api","key":"\\ud834\\udd1e"}');
    assert.equal(r.status, 200, r.body);
  });

  // ---- streams ----
  function connect(): Promise<http2.ClientHttp2Session> {
    const s = http2.connect(`http://${grpcAddress}`);
    s.on('error', () => undefined);
    return once(s, 'remoteSettings').then(() => s);
  }
  const frame = (msg: Buffer): Buffer => Buffer.concat([Buffer.from([0, ...[24, 16, 8, 0].map((b) => (msg.length >>> b) & 0xff)]), msg]);
  const HEADERS = { ':method': 'POST', ':path': METHOD, 'content-type': 'application/grpc', te: 'trailers' };

  test('streams that send 3 bytes of a message and stop: answered DEADLINE_EXCEEDED and reset after requestTimeout', async () => {
    await streamsServer();
    const sessions = [await connect(), await connect()];
    const N = 180;
    const t0 = performance.now();
    const ends = Array.from({ length: N }, (_, i) => {
      const st = sessions[i % 2].request(HEADERS);
      st.on('error', () => undefined);
      st.write(frame(request_('edge', descriptor(entry('user', 'slow')))).subarray(0, 3));
      const status = new Promise<string | undefined>((resolve) => {
        st.on('response', (h) => resolve(h['grpc-status'] as string | undefined));
        st.on('close', () => resolve(undefined));
      });
      return Promise.all([status, once(st, 'close').then(() => performance.now() - t0)]);
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await stats()).pendingStreams, N, 'held while under the deadline');
    const deadline = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('streams still open 5 s later')), 5000).unref());
    const closed = await Promise.race([Promise.all(ends), deadline]);
    for (const [status, ms] of closed) {
      assert.equal(status, String(grpc.status.DEADLINE_EXCEEDED));
      assert.ok(ms >= 900 && ms < 3500, `closed after ${ms} ms`);
    }
    const s = await stats();
    assert.equal(s.pendingStreams, 0);
    assert.ok(s.expired >= N);
    for (const session of sessions) session.close();
  });

  test('a connection may have at most maxConcurrentStreams calls open; the server pings its connections', async () => {
    const s = await connect();
    assert.equal(s.remoteSettings.maxConcurrentStreams, 100);
    // keepaliveTime 300 ms here: a PING arrives (and node answers it)
    const ping = once(s, 'ping');
    await Promise.race([ping, new Promise((_, reject) => setTimeout(() => reject(new Error('no PING within 3 s')), 3000).unref())]);
    s.close();
  });

  // ---- HTTP/2 frames by hand (RFC 9113), for a reset that lands exactly between a request's end and its decision ----
  function h2(type: number, flags: number, id: number, payload: Buffer = Buffer.alloc(0)): Buffer {
    const head = Buffer.alloc(9);
    head.writeUIntBE(payload.length, 0, 3);
    head[3] = type;
    head[4] = flags;
    head.writeUInt32BE(id, 5);
    return Buffer.concat([head, payload]);
  }
  /** hpack — header fields as literals without indexing, no Huffman (every name and value under 127 bytes). */
  const hpack = (fields: [string, string][]): Buffer => Buffer.concat(fields.map(([n, v]) => Buffer.concat([Buffer.from([0x00, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)])));
  const DATA = 0x0, HEADERS_FRAME = 0x1, RST_STREAM = 0x3, SETTINGS = 0x4;
  const END_STREAM = 0x1, END_HEADERS = 0x4, ACK = 0x1, CANCEL = 8;

  /**
   * resetAfterEnd — `n` calls on one connection, each reset by its client right behind its end of stream:
   * `together`, HEADERS, DATA (the message, END_STREAM) and RST_STREAM(CANCEL) of every call in one write (the CVE's
   * shape); else the messages first, and once the server waits for the ends, each end and its reset in one write.
   * node:http2 hands JS the DATA and reads what follows it in a later turn of the event loop: the handler runs
   * before the reset is read.
   */
  async function resetAfterEnd(n: number, message: Buffer, together: boolean): Promise<void> {
    const sock = connectTcp(Number(grpcAddress.split(':')[1]));
    await once(sock, 'connect');
    sock.on('error', () => undefined);
    sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), h2(SETTINGS, 0, 0)]));
    await once(sock, 'data'); // the server's SETTINGS
    sock.on('data', () => undefined);
    const headers = hpack([[':method', 'POST'], [':scheme', 'http'], [':path', METHOD], [':authority', grpcAddress], ['content-type', 'application/grpc'], ['te', 'trailers']]);
    const ids = Array.from({ length: n }, (_, i) => 2 * i + 1);
    const cancel = Buffer.alloc(4);
    cancel.writeUInt32BE(CANCEL);
    if (together) {
      sock.write(Buffer.concat([h2(SETTINGS, ACK, 0), ...ids.flatMap((id) => [h2(HEADERS_FRAME, END_HEADERS, id, headers), h2(DATA, END_STREAM, id, frame(message)), h2(RST_STREAM, 0, id, cancel)])]));
    } else {
      sock.write(Buffer.concat([h2(SETTINGS, ACK, 0), ...ids.flatMap((id) => [h2(HEADERS_FRAME, END_HEADERS, id, headers), h2(DATA, 0, id, frame(message))])]));
      await new Promise((r) => setTimeout(r, 200));
      sock.write(Buffer.concat(ids.flatMap((id) => [h2(DATA, END_STREAM, id), h2(RST_STREAM, 0, id, cancel)])));
    }
    await new Promise((r) => setTimeout(r, 200));
    sock.destroy();
  }

  test('HTTP/2 rapid reset: a call whose client reset it before its decision charges nothing', async () => {
    const key = { domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: 'victim' }] }] };
    const before_ = await stats();
    // 4 connections × 50 calls (the server here allows 100 streams per connection), both shapes
    for (let i = 0; i < 4; i++) await resetAfterEnd(50, request_('edge', descriptor(entry('user', 'victim'))), i % 2 === 0);
    const s = await stats();
    console.log(`# reset after the end of stream: 200 calls; ${s.cancelled - before_.cancelled} reached the handler with their stream reset and were not charged`);
    const r = await typed(key);
    assert.equal(r.statuses[0].limit_remaining, 999, `the key was charged ${999 - r.statuses[0].limit_remaining} times by calls its client had cancelled`);
  });

  test('HTTP/2 rapid reset from node:http2 (requests reset as soon as sent, in a loop): a normal client keeps being answered', async () => {
    const body = frame(request_('edge', descriptor(entry('user', 'flood'))));
    const latencies: number[] = [];
    let attacking = true;
    const normal = (async () => {
      for (let i = 0; i < 200 && attacking; i++) {
        const t = performance.now();
        await typed({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: `normal-${i}` }] }] });
        latencies.push(performance.now() - t);
      }
    })();
    await ask('gc');
    await mark();
    let sent = 0;
    const t0 = performance.now();
    // rounds of 50 streams opened with a whole request and reset at once, on fresh connections when the server ends one
    let sess = await connect();
    let connections = 1;
    while (sent < 3000 && performance.now() - t0 < 6000) {
      if (sess.closed || sess.destroyed) {
        sess = await connect();
        connections++;
      }
      for (let i = 0; i < 50; i++) {
        let st: http2.ClientHttp2Stream;
        try {
          st = sess.request(HEADERS);
        } catch {
          break;
        }
        st.on('error', () => undefined);
        st.end(body);
        st.close(http2.constants.NGHTTP2_CANCEL);
        sent++;
      }
      await new Promise((r) => setImmediate(r));
    }
    const attackMs = performance.now() - t0;
    sess.close();
    await new Promise((r) => setTimeout(r, 300));
    attacking = false;
    await normal;
    const st = await stats();
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? NaN;
    const flood = await typed({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: 'flood' }] }] });
    console.log(`# rapid reset flood: ${sent} calls sent and reset in ${attackMs.toFixed(0)} ms; ${st.cancelled} reached the handler reset and were not charged, ${999 - flood.statuses[0].limit_remaining} were decided before their reset arrived; server CPU ${st.cpuMs.toFixed(0)} ms, event loop max delay ${st.maxDelayMs.toFixed(1)} ms; ${connections} connection(s) (${Math.round(sent / connections)} streams each); normal client ${latencies.length} calls, p50 ${latencies[latencies.length >> 1]?.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${latencies[latencies.length - 1]?.toFixed(1)} ms`);
    assert.ok(latencies.length > 0, 'the normal client was answered');
    // the server closes a connection that resets more than MAX_RESETS (100) unanswered streams in a second: nghttp2's
    // own bound (a burst of 1 000, then 33 a second) let 800–1 700 through per connection (here: 817), each a call set up
    assert.ok(sent / connections < 500, `${sent} streams reset on ${connections} connection(s): the connections were not closed`);
  });
});
