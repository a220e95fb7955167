/**
 * bench/paths — what each of the service's request paths costs in process, without sockets: the request's bytes read
 * as the listener reads them, the decision (memory store, the bench server's configuration), the answer's bytes and
 * its metrics, for /v1/check, /json (2 descriptors) and gRPC ShouldRateLimit. The bytes are read by the build's own
 * readers: a body by fastCheck / fastRls (JSON.parse when they decline), a gRPC message by the listener's decoder
 * (listenerService; a build without it: its scan, its fast read if any, protobufjs). CPU µs per call over
 * BENCH_CALLS (200 000) calls cycling 10 000 keys. `BENCH_BASE=<another checkout>` (bench/base.ts) runs that build
 * too, alternated with this one over BENCH_ROUNDS (3) rounds, and prints this build / base per path (what
 * docs/server.md's before/after table comes from). `npm run bench paths`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterBefore, BASE, BASE_NAME, baseHeading } from './base.js';
import { checkBody, KEYS, rlsRequest, writeConfig } from './fixture.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

type Paths = Record<'check' | 'json' | 'grpc', (i: number) => unknown>;

/** load — the three paths of the build whose compiled sources are in `dist` (its src/ directory's parent). */
async function load(dist: string, config: string): Promise<Paths> {
  const at = (m: string): string => new URL(`file://${resolve(dist, 'src/server', m)}`).href;
  const { Metrics } = await import(at('metrics.js'));
  // decisionJson: in httpAnswer.js since the HTTP answers moved there (an older build: http.js)
  const http = await import(at('httpAnswer.js')).catch(() => import(at('http.js')));
  const rls = await import(at('rls.js'));
  const { RateLimitService } = await import(at('service.js'));
  const { loadConfig } = await import(at('config/index.js'));
  const { MemoryStore } = await import(new URL(`file://${resolve(dist, 'src/stores/memory.js')}`).href);
  const { rlsService } = await import(at('grpc.js'));
  const enc = await import(at('rlsEncode.js')).catch(() => undefined);
  const checkBodies = await import(at('checkBody.js')).catch(() => undefined);
  const rlsBodies = await import(at('rlsBody.js')).catch(() => undefined);
  const grpc = await import(at('grpc.js'));
  const wire = await import(at('rlsWire.js')).catch(() => undefined);
  const dec = await import(at('rlsDecode.js')).catch(() => undefined);
  const m = new Metrics({ defaultMetrics: false });
  const svc = new RateLimitService({ store: new MemoryStore(), metrics: m });
  svc.setConfig(await loadConfig(config));
  const def = rlsService().ShouldRateLimit;
  const serialize = def.responseSerialize;
  // the listener's request decoder; a build before listenerService: the same steps in its order (scan, fast read)
  const fastGrpc: ((b: Buffer) => unknown) | undefined = dec?.fastRequest ?? dec?.decodeRequest;
  const readGrpc: (b: Buffer) => unknown = grpc.listenerService !== undefined
    ? grpc.listenerService().ShouldRateLimit.requestDeserialize
    : (b) => wire?.scanRequest(b) ?? fastGrpc?.(b) ?? def.requestDeserialize(b);
  const readCheck = (b: Buffer): { policy: string; key: string; cost?: number } => checkBodies?.fastCheck(b) ?? JSON.parse(b.toString('utf8'));
  const readJson = (b: Buffer): unknown => rlsBodies?.fastRls(b) ?? rls.requestFromJson(JSON.parse(b.toString('utf8')));
  // a build without `answered` times with the closure of `time`; without responseJson, rlsEncode: the general code
  const timed = (api: string, code: string): void => (m.answered !== undefined ? m.answered(api, code, performance.now()) : m.time(api)(code));
  const jsonOut = (r: unknown): string => (rls.responseJson !== undefined ? rls.responseJson(r) : JSON.stringify(rls.responseToJson(r)));
  const encode = (r: unknown): Buffer => (enc !== undefined && enc.canEncode(r) ? enc.encodeResponse(r) : serialize(r));
  const checks = Array.from({ length: KEYS }, (_, i) => Buffer.from(checkBody(i)));
  const bodies = Array.from({ length: KEYS }, (_, i) => Buffer.from(JSON.stringify(rlsRequest(i))));
  const messages = Array.from({ length: KEYS }, (_, i) => def.requestSerialize(rlsRequest(i)) as Buffer);
  return {
    check: (i) => {
      const b = readCheck(checks[i % KEYS]);
      const d = svc.checkNow(b.policy, b.key, b.cost ?? 1);
      svc.fields('api', d);
      const s = http.decisionJson(d);
      timed('check', '200');
      return s;
    },
    json: (i) => {
      const s = jsonOut(svc.decide(readJson(bodies[i % KEYS])));
      timed('json', '200');
      return s;
    },
    grpc: (i) => {
      const b = encode(svc.decide(readGrpc(messages[i % KEYS])));
      timed('grpc', 'OK');
      return b;
    },
  };
}

/** measure — CPU µs per call of each path (after a tenth of the calls to warm up). */
function measure(paths: Paths): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, f] of Object.entries(paths)) {
    for (let i = 0; i < CALLS / 10; i++) f(i);
    const t = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) f(i);
    const u = process.cpuUsage(t);
    out[name] = (u.user + u.system) / CALLS;
  }
  return out;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rk-bench-paths-'));
  try {
    const config = writeConfig(dir);
    const here = resolve(fileURLToPath(import.meta.url), '../..');
    const builds: [string, Paths][] = [['this build', await load(here, config)]];
    if (BASE !== undefined) builds.push([BASE_NAME, await load(BASE, config)]);
    /** us — per build, per path, the CPU µs per call of each round. */
    const us = builds.map(() => ({ check: [] as number[], json: [] as number[], grpc: [] as number[] }));
    console.log(`The service's request paths in process (CPU µs per call, ${CALLS} calls over ${KEYS} keys, ${ROUNDS} rounds alternated)\n`);
    console.log('| build | round | /v1/check | /json | gRPC |');
    console.log('|---|---:|---:|---:|---:|');
    for (let r = 0; r < ROUNDS; r++) {
      for (const b of r % 2 === 0 ? [0, 1] : [1, 0]) {
        if (b >= builds.length) continue;
        const [name, paths] = builds[b];
        const x = measure(paths);
        for (const k of ['check', 'json', 'grpc'] as const) us[b][k].push(x[k]);
        console.log(`| ${name} | ${r + 1} | ${x.check.toFixed(2)} | ${x.json.toFixed(2)} | ${x.grpc.toFixed(2)} |`);
      }
    }
    if (builds.length > 1) {
      console.log(baseHeading('CPU per call, as a speed (the base\'s µs / this build\'s)'));
      console.log('| path | this build / base |\n|---|---:|');
      for (const [k, name] of [['check', '/v1/check'], ['json', '/json'], ['grpc', 'gRPC']] as const) console.log(`| ${name} | ${afterBefore(us[1][k], us[0][k])} |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
