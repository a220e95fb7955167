/**
 * bench/paths — what each of the service's request paths costs in process, without sockets: the parse, the
 * decision (memory store, the bench server's configuration), the answer's bytes and its metrics, for /v1/check,
 * /json (2 descriptors) and gRPC ShouldRateLimit (its decoded request; the response encoded). CPU µs per call over
 * BENCH_CALLS (200 000) calls cycling 10 000 keys. `BENCH_BASELINE=<another build's dist directory>` runs that build
 * too, alternated with this one over BENCH_ROUNDS (3) rounds (what docs/server.md's before/after table comes from).
 * `npm run bench paths`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS = 10_000;

const CONFIG = `
domain: bench
descriptors:
  - key: client
    rate_limit: { unit: second, requests_per_unit: 1000000000 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 1000000000 }
policies:
  api:
    rules: '1000000000/min'
`;

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
  const m = new Metrics({ defaultMetrics: false });
  const svc = new RateLimitService({ store: new MemoryStore(), metrics: m });
  svc.setConfig(await loadConfig(config));
  const serialize = rlsService().ShouldRateLimit.responseSerialize;
  // a build without `answered` times with the closure of `time`; without responseJson, rlsEncode: the general code
  const timed = (api: string, code: string): void => (m.answered !== undefined ? m.answered(api, code, performance.now()) : m.time(api)(code));
  const jsonOut = (r: unknown): string => (rls.responseJson !== undefined ? rls.responseJson(r) : JSON.stringify(rls.responseToJson(r)));
  const encode = (r: unknown): Buffer => (enc !== undefined && enc.canEncode(r) ? enc.encodeResponse(r) : serialize(r));
  const checks = Array.from({ length: KEYS }, (_, i) => Buffer.from(`{"policy":"api","key":"c${i}"}`));
  const bodies = Array.from({ length: KEYS }, (_, i) => Buffer.from(`{"domain":"bench","descriptors":[{"entries":[{"key":"client","value":"c${i}"}]},{"entries":[{"key":"path","value":"/p${i % 10}"}]}]}`));
  const requests = Array.from({ length: KEYS }, (_, i) => ({ domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: `c${i}` }] }, { entries: [{ key: 'path', value: `/p${i % 10}` }] }] }));
  return {
    check: (i) => {
      const b = JSON.parse(checks[i % KEYS].toString('utf8')) as { policy: string; key: string };
      const d = svc.checkNow(b.policy, b.key, 1);
      svc.fields('api', d);
      const s = http.decisionJson(d);
      timed('check', '200');
      return s;
    },
    json: (i) => {
      const s = jsonOut(svc.decide(rls.requestFromJson(JSON.parse(bodies[i % KEYS].toString('utf8')))));
      timed('json', '200');
      return s;
    },
    grpc: (i) => {
      const b = encode(svc.decide(requests[i % KEYS]));
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
    const config = join(dir, 'bench.yaml');
    writeFileSync(config, CONFIG);
    const here = resolve(fileURLToPath(import.meta.url), '../..');
    const builds: [string, Paths][] = [['this build', await load(here, config)]];
    if (process.env.BENCH_BASELINE !== undefined) builds.push([`baseline (${process.env.BENCH_BASELINE})`, await load(process.env.BENCH_BASELINE, config)]);
    console.log(`The service's request paths in process (CPU µs per call, ${CALLS} calls over ${KEYS} keys, ${ROUNDS} rounds alternated)\n`);
    console.log('| build | round | /v1/check | /json | gRPC |');
    console.log('|---|---:|---:|---:|---:|');
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, paths] of r % 2 === 0 ? builds : [...builds].reverse()) {
        const x = measure(paths);
        console.log(`| ${name} | ${r + 1} | ${x.check.toFixed(2)} | ${x.json.toFixed(2)} | ${x.grpc.toFixed(2)} |`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
