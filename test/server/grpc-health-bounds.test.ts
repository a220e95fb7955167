/**
 * gRPC health Watch under a hostile client, with real grpc-js clients on loopback: a Watch for a name that is not
 * ours answers SERVICE_UNKNOWN and, once cancelled, leaves nothing behind (grpc-health-check kept a map entry per
 * name ever watched, its key the name: 1 MB names leaked 1 MB each); and the open Watch calls are bounded
 * (RESOURCE_EXHAUSTED past the bound, room again once one closes); a Check of a huge unknown name is NOT_FOUND with the
 * name cut short (the whole name in grpc-message left the client's connection stuck).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GrpcHealth } from '../../src/server/health.js';

const require = createRequire(import.meta.url);
const HEALTH_PROTO = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto/health/v1/health.proto');
const Health = (grpc.loadPackageDefinition(protoLoader.loadSync(HEALTH_PROTO, { keepCase: true, enums: String, defaults: true })) as unknown as {
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
}).grpc.health.v1.Health;

type HealthClient = grpc.Client & { Watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }> };

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function healthServer(maxWatches?: number): Promise<{ port: number; client: HealthClient; close(): void }> {
  const server = new grpc.Server();
  await GrpcHealth.add(server, maxWatches);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  const client = new Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 8 << 20 }) as unknown as HealthClient;
  return { port, client, close: () => { client.close(); server.forceShutdown(); } };
}

/** first — the first status a Watch hears, or `error <code>` when it is refused; the call is left open. */
function first(call: grpc.ClientReadableStream<{ status: string }>): Promise<string> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve('nothing within 5 s'), 5000);
    call.once('data', (m: { status: string }) => { clearTimeout(t); resolve(m.status); });
    call.once('error', (e: grpc.ServiceError) => { clearTimeout(t); resolve(`error ${grpc.status[e.code]}`); });
  });
}

function memory(): number {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

test('Watch of names not ours: SERVICE_UNKNOWN, and 40 cancelled Watches of distinct 1 MB names leave < 15 MB behind (was ~40 MB, one per name)', { timeout: 30_000 }, async () => {
  const s = await healthServer();
  try {
    // warm up grpc-js's buffers on both sides before the baseline
    const w = s.client.Watch({ service: 'warm-up' });
    assert.equal(await first(w), 'SERVICE_UNKNOWN');
    w.cancel();
    const before = memory();
    for (let i = 0; i < 40; i++) {
      const call = s.client.Watch({ service: `${i}:${'x'.repeat(1_000_000)}` });
      call.on('error', () => undefined);
      assert.equal(await first(call), 'SERVICE_UNKNOWN', `watch ${i}`);
      call.cancel();
    }
    await new Promise((r) => setTimeout(r, 200));
    const grown = memory() - before;
    assert.ok(grown < 15e6, `the server kept ${(grown / 1e6).toFixed(1)} MB after 40 cancelled Watches of 1 MB names`);
  } finally {
    s.close();
  }
});

test('Watch calls are bounded: past the bound RESOURCE_EXHAUSTED; a closed one makes room; known names still hear SERVING', { timeout: 30_000 }, async () => {
  const s = await healthServer(5);
  const calls: grpc.ClientReadableStream<{ status: string }>[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      const call = s.client.Watch({ service: i % 2 === 0 ? '' : 'other' });
      call.on('error', () => undefined);
      calls.push(call);
      assert.equal(await first(call), i % 2 === 0 ? 'SERVING' : 'SERVICE_UNKNOWN', `watch ${i}`);
    }
    const over = s.client.Watch({ service: '' });
    calls.push(over);
    assert.equal(await first(over), 'error RESOURCE_EXHAUSTED');
    calls[0].cancel();
    let again = 'not tried';
    for (let i = 0; i < 40; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const call = s.client.Watch({ service: 'envoy.service.ratelimit.v3.RateLimitService' });
      call.on('error', () => undefined);
      calls.push(call);
      again = await first(call);
      if (again === 'SERVING') break;
    }
    assert.equal(again, 'SERVING', 'a Watch once one of the five was cancelled');
  } finally {
    for (const c of calls) c.cancel();
    s.close();
  }
});

test('Check of a 100 KB name: NOT_FOUND at once with the name cut short, and the connection keeps answering (the whole name in grpc-message stuck it)', { timeout: 30_000 }, async () => {
  const s = await healthServer();
  const check = (service: string): Promise<string> => new Promise((resolve) => {
    (s.client as unknown as { Check(r: { service: string }, md: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: { status: string }) => void): void })
      .Check({ service }, new grpc.Metadata(), { deadline: Date.now() + 3000 }, (e, r) => resolve(e ? `${grpc.status[e.code]} ${e.details.length}` : r.status));
  });
  try {
    const big = await check('y'.repeat(100_000));
    assert.match(big, /^NOT_FOUND \d+$/);
    assert.ok(Number(big.split(' ')[1]) < 200, big);
    assert.equal(await check(''), 'SERVING', 'the same connection after it');
  } finally {
    s.close();
  }
});
