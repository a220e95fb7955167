/**
 * gRPC health checking and server reflection, called by real grpc-js clients: Check answers SERVING for "", the RLS
 * service and envoyproxy/ratelimit's `ratelimit` once the config is loaded; Watch hears NOT_SERVING the moment SIGTERM
 * starts the drain (a real `ratekeeper serve` process) and then ends, the process exiting 0; NOT_SERVING while Redis is
 * down only with --health-check-store; reflection lists the services and hands out their descriptors (what grpcurl
 * asks, v1 and v1alpha).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { startService } from '../../src/server/serve.js';
import { configFile } from './support.js';
import { serve } from './procs.js';
import { RedisServer } from '../support/redis.js';

const require = createRequire(import.meta.url);
const HEALTH_PROTO = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto/health/v1/health.proto');
const REFLECTION_PROTOS = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build/proto');

const CONFIG = `
domain: health
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 10 }
`;

type Ctor = grpc.ServiceClientConstructor;
function load(file: string, includeDirs: string[] = []): grpc.GrpcObject {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs }));
}
const Health = (load(HEALTH_PROTO) as unknown as { grpc: { health: { v1: { Health: Ctor } } } }).grpc.health.v1.Health;
const ReflectionV1 = (load(join(REFLECTION_PROTOS, 'grpc/reflection/v1/reflection.proto')) as unknown as { grpc: { reflection: { v1: { ServerReflection: Ctor } } } }).grpc.reflection.v1.ServerReflection;
const ReflectionV1Alpha = (load(join(REFLECTION_PROTOS, 'grpc/reflection/v1alpha/reflection.proto')) as unknown as { grpc: { reflection: { v1alpha: { ServerReflection: Ctor } } } }).grpc.reflection.v1alpha.ServerReflection;

type HealthClient = grpc.Client & {
  Check(req: { service: string }, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: { status: string }) => void): void;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

function health(port: number): HealthClient {
  return new Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as HealthClient;
}

function check(c: HealthClient, service: string): Promise<string> {
  return new Promise((resolve, reject) => c.Check({ service }, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (e, r) => (e ? reject(e) : resolve(r.status))));
}

async function until(what: string, ms: number, f: () => Promise<boolean>): Promise<void> {
  const end = performance.now() + ms;
  for (let i = 0; i < 400 && performance.now() < end; i++) {
    if (await f().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not happen within ${ms} ms`);
}

const RLS = 'envoy.service.ratelimit.v3.RateLimitService';

test('Check: SERVING for "", the RLS service and envoyproxy/ratelimit\'s "ratelimit" once the config is loaded; NOT_FOUND for others', { timeout: 30_000 }, async () => {
  const s = await startService({ config: configFile(CONFIG), port: -1, grpcPort: 0, log: () => undefined });
  const c = health(s.grpcPort!);
  try {
    for (const name of ['', RLS, 'ratelimit']) assert.equal(await check(c, name), 'SERVING', `service ${JSON.stringify(name)}`);
    await assert.rejects(check(c, 'no.such.Service'), (e: grpc.ServiceError) => e.code === grpc.status.NOT_FOUND);
  } finally {
    c.close();
    await s.close();
  }
});

test('Watch: SIGTERM makes every watched name NOT_SERVING at once, the streams end, and the process exits 0', { timeout: 30_000 }, async () => {
  const p = await serve(['--config', configFile(CONFIG)]);
  const c = health(p.grpc);
  try {
    const streams = ['', RLS].map((service) => {
      const heard: string[] = [];
      const call = c.Watch({ service });
      call.on('data', (m: { status: string }) => heard.push(m.status));
      const ended = new Promise<string>((resolve) => {
        call.on('error', (e: grpc.ServiceError) => resolve(`error ${e.code}`));
        call.on('end', () => resolve('end'));
      });
      return { heard, ended };
    });
    await until('both watches hearing SERVING', 5000, async () => streams.every((s) => s.heard[0] === 'SERVING'));
    const t0 = performance.now();
    p.proc.kill('SIGTERM');
    for (const s of streams) {
      assert.equal(await s.ended, 'end', 'the Watch stream ends with status OK');
      assert.deepEqual(s.heard, ['SERVING', 'NOT_SERVING']);
    }
    const { code } = await p.exited;
    assert.equal(code, 0, p.log.join('\n'));
    assert.ok(performance.now() - t0 < 5000, `the drain took ${Math.round(performance.now() - t0)} ms: the Watch streams held it`);
  } finally {
    c.close();
    p.kill();
  }
});

test('store down: NOT_SERVING while Redis does not answer only with --health-check-store; SERVING again once it is back', { timeout: 60_000 }, async () => {
  const redis = await RedisServer.start();
  const common = { config: configFile(CONFIG), port: -1, grpcPort: 0, redis: `redis://127.0.0.1:${redis.port}`, storeTimeout: 200, log: () => undefined };
  const strict = await startService({ ...common, healthCheckStore: true, prefix: 'gh1:' });
  const lax = await startService({ ...common, prefix: 'gh2:' });
  const cs = health(strict.grpcPort!);
  const cl = health(lax.grpcPort!);
  try {
    assert.equal(await check(cs, ''), 'SERVING');
    const heard: string[] = [];
    const watch = cs.Watch({ service: RLS });
    watch.on('data', (m: { status: string }) => heard.push(m.status));
    watch.on('error', () => undefined);
    await until('the watch hearing SERVING', 5000, async () => heard[0] === 'SERVING');
    await redis.kill();
    await until('NOT_SERVING with the option', 10_000, async () => (await check(cs, '')) === 'NOT_SERVING');
    assert.equal(await check(cs, 'ratelimit'), 'NOT_SERVING');
    assert.equal(await check(cl, ''), 'SERVING', 'without the option the store does not fail the probe');
    await redis.spawn();
    await until('SERVING again', 10_000, async () => (await check(cs, '')) === 'SERVING');
    await until('the watch hearing both changes', 5000, async () => heard.join() === 'SERVING,NOT_SERVING,SERVING');
    watch.cancel();
  } finally {
    cs.close();
    cl.close();
    await strict.close();
    await lax.close();
    await redis.stop();
  }
});

type ReflectionClient = grpc.Client & { ServerReflectionInfo(): grpc.ClientDuplexStream<Record<string, unknown>, Record<string, unknown>> };

/** ask — one reflection request on a new stream, its one answer. */
function ask(c: ReflectionClient, req: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const call = c.ServerReflectionInfo();
    call.on('data', (r: Record<string, unknown>) => {
      resolve(r);
      call.end();
    });
    call.on('error', reject);
    call.write(req);
  });
}

test('reflection: v1 and v1alpha list the RLS and health services and describe the RLS service (grpcurl list / describe)', { timeout: 30_000 }, async () => {
  const s = await startService({ config: configFile(CONFIG), port: -1, grpcPort: 0, log: () => undefined });
  const off = await startService({ config: configFile(CONFIG), port: -1, grpcPort: 0, grpcReflection: false, log: () => undefined });
  try {
    for (const Ctor of [ReflectionV1, ReflectionV1Alpha]) {
      const c = new Ctor(`127.0.0.1:${s.grpcPort}`, grpc.credentials.createInsecure()) as unknown as ReflectionClient;
      try {
        const listed = await ask(c, { list_services: '' });
        const names = ((listed.list_services_response as { service: { name: string }[] }).service).map((x) => x.name).sort();
        assert.ok(names.includes(RLS), names.join());
        assert.ok(names.includes('grpc.health.v1.Health'), names.join());
        const described = await ask(c, { file_containing_symbol: RLS });
        const files = (described.file_descriptor_response as { file_descriptor_proto: Buffer[] }).file_descriptor_proto;
        assert.ok(files.length >= 1);
        assert.ok(files.some((f) => f.includes('RateLimitService') && f.includes('ShouldRateLimit')), 'the RLS file descriptor');
      } finally {
        c.close();
      }
    }
    // --grpc-reflection off: UNIMPLEMENTED
    const c = new ReflectionV1(`127.0.0.1:${off.grpcPort}`, grpc.credentials.createInsecure()) as unknown as ReflectionClient;
    try {
      await assert.rejects(ask(c, { list_services: '' }), (e: grpc.ServiceError) => e.code === grpc.status.UNIMPLEMENTED);
    } finally {
      c.close();
    }
  } finally {
    await s.close();
    await off.close();
  }
});
