/**
 * The repository's Containerfile, built and run with Debian's podman, as issue 16 asks: a stand-in base image
 * `FROM scratch` holding this machine's node (with the shared libraries ldd names), its npm, and busybox-static as
 * /bin/sh with its applets; the real Containerfile built on it (`--format docker`: the OCI format drops HEALTHCHECK),
 * offline (`--network none`, npm's offline mode, this machine's npm cache mounted as an overlay: the build neither
 * needs the network nor changes the cache); then run with the examples/kubernetes ConfigMap mounted as its
 * configuration directory: /healthcheck 200, the HEALTHCHECK healthy, gRPC health SERVING, a non-root user, SIGTERM
 * (`podman stop -t 5`) exits 0 within 5 s.
 *
 * The base image is cached by a tag naming what it holds (node's and busybox's versions), the built image by podman's
 * layer cache. Measured here (2 cores, load average ~15): the first run 4.4 min (npm ci of 361 packages inside the
 * build), a run after a change to src/ 2.2 min (tsc), an unchanged one 51 s (docs/deploy.md). Where podman cannot
 * run, every test is skipped with the reason.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { tempDir } from '../support/tmp.js';
import { freePort } from '../support/redis.js';
import { http, rls } from '../server/procs.js';
import { writeConfigMap } from './kube.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** IMAGE — the image built from the Containerfile (kept between runs: podman's layer cache makes a rebuild quick). */
const IMAGE = 'localhost/ratekeeper-test:latest';
/** RUN_FLAGS — what podman needs on these VMs to start a container (issue 16). */
const RUN_FLAGS = ['--runtime', 'runc', '--ulimit', 'nofile=20000:20000', '--ulimit', 'nproc=1000:1000'];
/** podman — runs podman to completion (10 min at most: a first build). */
function podman(args: string[], timeoutMs = 600_000): SpawnSyncReturns<string> {
  return spawnSync('podman', args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
}

/** podmanAsync — podman without blocking this process (its clients keep answering their servers meanwhile). */
function podmanAsync(args: string[], timeoutMs: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn('podman', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs });
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    p.on('close', (code) => resolve({ code, stderr }));
  });
}

/** unusable — why podman cannot run containers here, or undefined when it can. */
function unusable(): string | undefined {
  const v = spawnSync('podman', ['--version'], { encoding: 'utf8' });
  if (v.error !== undefined || v.status !== 0) return `podman is not installed (apt-get install podman runc; .ci/run installs it): ${v.error?.message ?? v.stderr}`;
  const info = spawnSync('podman', ['info', '--format', '{{.Host.OCIRuntime.Name}}'], { encoding: 'utf8', timeout: 60_000 });
  if (info.status !== 0) return `podman info fails here: ${info.stderr.trim()}`;
  if (spawnSync('runc', ['--version']).status !== 0) return 'runc is not installed (apt-get install runc)';
  if (spawnSync('busybox', ['--help']).status === null) return 'busybox is not installed (apt-get install busybox-static)';
  if (spawnSync('ldd', ['--version']).status !== 0) return 'ldd is not available: the stand-in base image needs node\'s shared libraries';
  return undefined;
}

/** which — a command's absolute path, symlinks resolved. */
function which(name: string): string {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${name} is not on PATH`);
  return realpathSync(r.stdout.trim());
}

/**
 * standInBase — a base image FROM scratch with this machine's node (and the libraries ldd names, at their paths),
 * its npm (the directory it lives in, with the npm/npx links), and busybox-static as /bin/sh plus every applet
 * (/usr/bin/env too, for npm's `#!/usr/bin/env node`). Tagged by what it holds, so it is built once per machine.
 */
function standInBase(): string {
  const node = which('node');
  const busybox = which('busybox');
  const npmCli = which('npm'); // …/node_modules/npm/bin/npm-cli.js
  const npmDir = dirname(dirname(npmCli));
  const npmVersion = (JSON.parse(readFileSync(join(npmDir, 'package.json'), 'utf8')) as { version: string }).version;
  const id = createHash('sha256').update([process.version, statSync(node).size, npmVersion, statSync(busybox).size].join(' ')).digest('hex').slice(0, 12);
  const tag = `localhost/ratekeeper-test-base:${id}`;
  if (podman(['image', 'exists', tag]).status === 0) return tag;
  const dir = tempDir('rk-base-');
  const root = join(dir, 'rootfs');
  const put = (from: string, to = from): void => {
    mkdirSync(join(root, dirname(to)), { recursive: true });
    copyFileSync(from, join(root, to));
  };
  put(node, '/usr/bin/node');
  const ldd = spawnSync('ldd', [node], { encoding: 'utf8' });
  assert.equal(ldd.status, 0, `ldd ${node}: ${ldd.stderr}`);
  for (const m of ldd.stdout.matchAll(/(\/\S+) \(0x/g)) put(realpathSync(m[1]), m[1]);
  cpSync(npmDir, join(root, '/usr/lib/node_modules/npm'), { recursive: true, dereference: true });
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, '/usr/bin/npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(root, '/usr/bin/npx'));
  put(busybox, '/bin/busybox');
  const applets = spawnSync(busybox, ['--list'], { encoding: 'utf8' }).stdout.split('\n').filter((a) => /^[\w.[-]+$/.test(a));
  for (const a of applets) if (a !== 'busybox') symlinkSync('busybox', join(root, 'bin', a));
  symlinkSync('/bin/busybox', join(root, '/usr/bin/env'));
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n');
  writeFileSync(join(root, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  mkdirSync(join(root, 'root'));
  writeFileSync(join(dir, 'Containerfile'), 'FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin:/usr/bin:/bin\nCMD ["/bin/sh"]\n');
  const b = podman(['build', '--format', 'docker', '--network', 'none', '-t', tag, dir]);
  assert.equal(b.status, 0, `building the stand-in base image failed:\n${b.stdout}\n${b.stderr}`);
  return tag;
}

/** npmCache — this machine's npm cache (filled by `npm ci`, as .ci/run runs before the tests). */
function npmCache(): string {
  const r = spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8', cwd: ROOT });
  const dir = r.status === 0 ? r.stdout.trim() : join(process.env.HOME ?? '/root', '.npm');
  assert.ok(existsSync(join(dir, '_cacache')), `npm's cache ${dir} is empty: run npm ci first (.ci/run does)`);
  return dir;
}

/** buildImage — the real Containerfile on the stand-in base, offline; the previous image of the tag is removed. */
function buildImage(base: string): { ms: number } {
  const old = podman(['image', 'inspect', '--format', '{{.Id}}', IMAGE]).stdout.trim();
  const t0 = performance.now();
  const b = podman([
    'build', '--format', 'docker', '--network', 'none', '--build-arg', `BASE=${base}`, '--build-arg', 'NPM_CONFIG_OFFLINE=true',
    '-v', `${npmCache()}:/root/.npm:O`, '-f', join(ROOT, 'Containerfile'), '-t', IMAGE, ROOT,
  ]);
  const ms = performance.now() - t0;
  const out = `${b.stdout}\n${b.stderr}`;
  if (b.status !== 0 && /ENOTCACHED/.test(out)) {
    assert.fail(`the offline build found a package missing from npm's cache (run npm ci once, as .ci/run does, to fill it):\n${out.slice(-3000)}`);
  }
  assert.equal(b.status, 0, `podman build failed:\n${out.slice(-6000)}`);
  const id = podman(['image', 'inspect', '--format', '{{.Id}}', IMAGE]).stdout.trim();
  if (old !== '' && old !== id) podman(['rmi', old]); // a leftover of the last run; ignored when something still uses it
  return { ms };
}

/** grpcHealth — grpc.health.v1.Health/Check of `service` on 127.0.0.1:port: the status name, or the gRPC error. */
async function grpcHealth(port: number, service: string): Promise<{ status?: string; error?: grpc.ServiceError }> {
  const health = (await import('grpc-health-check')) as unknown as { service: grpc.ServiceDefinition };
  const Client = grpc.makeGenericClientConstructor(health.service as unknown as grpc.ServiceDefinition, 'Health');
  const c = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check(req: { service: string }, md: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: { status: string }) => void): void;
  };
  try {
    return await new Promise((resolve) => c.check({ service }, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (e, r) => resolve(e ? { error: e } : { status: r.status })));
  } finally {
    c.close();
  }
}

const why = unusable();

describe('the Containerfile, built and run with podman', { skip: why === undefined ? false : `podman cannot run here: ${why}` }, () => {
  const name = `ratekeeper-test-${process.pid}`;
  let httpPort = 0;
  let grpcPort = 0;
  let buildMs = 0;
  let started = false;

  before(async () => {
    const base = standInBase();
    buildMs = buildImage(base).ms;
    const config = tempDir('rk-image-config-');
    // as the kubelet mounts a ConfigMap: readable by the image's user (a temporary directory is the owner's only)
    chmodSync(config, 0o755);
    for (const f of writeConfigMap(config)) chmodSync(join(config, f), 0o644);
    httpPort = await freePort();
    grpcPort = await freePort();
    podman(['rm', '-f', name]);
    const r = podman([
      'run', '-d', '--name', name, ...RUN_FLAGS, '-p', `127.0.0.1:${httpPort}:8080`, '-p', `127.0.0.1:${grpcPort}:8081`,
      '-v', `${config}:/etc/ratekeeper/config:ro`, IMAGE,
    ], 60_000);
    assert.equal(r.status, 0, `podman run: ${r.stderr}`);
    started = true;
    process.once('exit', () => spawnSync('podman', ['rm', '-f', name]));
    // /healthcheck 200 within 30 s, polled every 200 ms; a container that stopped fails at once, with its log
    const t0 = performance.now();
    for (;;) {
      if ((await http(httpPort, 'GET', '/healthcheck').catch(() => ({ status: 0 }))).status === 200) break;
      const running = podman(['inspect', '--format', '{{.State.Running}}', name]).stdout.trim() === 'true';
      if (!running || performance.now() - t0 > 30_000) {
        assert.fail(`${running ? 'no 200 from the container\'s /healthcheck within 30 s' : 'the container stopped'}:\n${podman(['logs', name]).stderr}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }, { timeout: 660_000 });

  after(() => {
    if (started) podman(['rm', '-f', name], 60_000);
  });

  test('the image: HEALTHCHECK through node (no shell, no curl), a numeric non-root USER, ports exposed, node started in exec form', (t) => {
    t.diagnostic(`podman build took ${(buildMs / 1000).toFixed(1)} s`);
    const r = podman(['image', 'inspect', '--format', '{{json .Config}}', IMAGE]);
    assert.equal(r.status, 0, r.stderr);
    const c = JSON.parse(r.stdout) as { User: string; ExposedPorts: Record<string, unknown>; Entrypoint: string[]; Env: string[] };
    // podman shows the docker format's health check beside the config (an OCI image would have none)
    const hc = JSON.parse(podman(['image', 'inspect', '--format', '{{json .HealthCheck}}', IMAGE]).stdout) as { Test?: string[]; Interval?: number } | null;
    assert.deepEqual(hc?.Test, ['CMD', 'node', '/app/dist/src/cli.js', 'health']);
    assert.ok((hc?.Interval ?? 0) > 0);
    assert.match(c.User, /^[1-9]\d*:[1-9]\d*$/);
    assert.deepEqual(Object.keys(c.ExposedPorts).sort(), ['6070/tcp', '8080/tcp', '8081/tcp']);
    assert.deepEqual(c.Entrypoint, ['node', '/app/dist/src/cli.js', 'serve']);
    assert.ok(c.Env.includes('RATEKEEPER_CONFIG=/etc/ratekeeper/config'), c.Env.join(' '));
  });

  test('running: /healthcheck 200, the HEALTHCHECK healthy, a decision on /v1/check, as a non-root user', async () => {
    const h = await http(httpPort, 'GET', '/healthcheck');
    assert.equal(h.status, 200);
    const check = podman(['healthcheck', 'run', name], 30_000);
    assert.equal(check.status, 0, `podman healthcheck run: ${check.stdout}${check.stderr}`);
    const d = await http(httpPort, 'POST', '/v1/check', { policy: 'api', key: 'k1' });
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json.allowed, true);
    const id = podman(['exec', name, 'id', '-u'], 30_000);
    assert.equal(id.status, 0, id.stderr);
    assert.notEqual(id.stdout.trim(), '0');
    assert.match(id.stdout.trim(), /^[1-9]\d*$/);
    const ps = podman(['top', name, 'user', 'args'], 30_000);
    assert.match(ps.stdout, /node \/app\/dist\/src\/cli\.js serve/, ps.stdout);
  });

  test('gRPC: ShouldRateLimit answers through the container', async () => {
    const c = rls(grpcPort);
    try {
      const r = await c.call({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }] }] });
      assert.equal(r.overall_code, 'OK');
    } finally {
      c.close();
    }
  });

  test('gRPC health: SERVING for the server ("") and the RLS service', async () => {
    for (const service of ['', 'envoy.service.ratelimit.v3.RateLimitService']) {
      const r = await grpcHealth(grpcPort, service);
      assert.equal(r.error, undefined, `Check(${JSON.stringify(service)}): ${r.error?.message}`);
      assert.equal(r.status, 'SERVING', `Check(${JSON.stringify(service)})`);
    }
  });

  test('SIGTERM (podman stop -t 5) with a gRPC client connected, as Envoy stays: drains and exits 0 within 5 s', async () => {
    // the client keeps its connection open through the stop and answers the server's GOAWAY as Envoy does: podman
    // runs asynchronously, so that this process's event loop is free to (a blocked client holds the gRPC drain until
    // its grace, 10 s: docs/deploy.md)
    const c = rls(grpcPort);
    const t0 = performance.now();
    try {
      assert.equal((await c.call({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.2' }] }] })).overall_code, 'OK');
      const stop = await podmanAsync(['stop', '-t', '5', name], 30_000);
      assert.equal(stop.code, 0, stop.stderr);
    } finally {
      c.close();
    }
    const ms = performance.now() - t0;
    const state = JSON.parse(podman(['inspect', '--format', '{{json .State}}', name]).stdout) as { ExitCode: number; Status: string };
    const logs = podman(['logs', name]);
    assert.equal(state.ExitCode, 0, `exit code ${state.ExitCode} (137: SIGKILL after 5 s):\n${logs.stdout}${logs.stderr}`);
    assert.ok(ms < 5000, `podman stop took ${ms.toFixed(0)} ms (5 s is the SIGKILL)`);
    assert.match(logs.stderr + logs.stdout, /SIGTERM: draining[\s\S]*stopped/);
  });
});
