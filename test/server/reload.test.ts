/**
 * Hot reload on a real service (startService, real listeners): a changed file, a directory of files, a Kubernetes
 * ConfigMap's `..data` symlink swap, a bad new configuration rejected whole (logged, counted, the old one serving
 * on), client state kept for limits whose rules did not change (memory store and Redis) and fresh for those that
 * did, and a reload under load that loses no call and no count.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tempDir } from '../support/tmp.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running, type ServeOptions } from '../../src/server/serve.js';
import { http, metric, rls, waitFor } from './procs.js';

/** limits — a domain `d` with `user` at `n` an hour and `other` at `m` (slidingLog: no window boundary in a test). */
const limits = (n: number, m = 10, extra = ''): string => `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: ${n}, algorithm: slidingLog }
  - key: other
    rate_limit: { unit: hour, requests_per_unit: ${m}, algorithm: slidingLog }
${extra}`;

const tmp = (): string => tempDir('rk-reload-'); // removed when the test process exits

/** Svc — a started service and what it logged. */
interface Svc { running: Running; port: number; log: string[] }

async function start(config: string, extra: Partial<ServeOptions> = {}): Promise<Svc> {
  const log: string[] = [];
  const running = await startService({ config, port: 0, grpcPort: 0, reloadPollMs: 50, log: (l) => log.push(l), ...extra });
  return { running, port: running.httpPort!, log };
}

/** decide — one /json call for descriptor key=value in domain d: [requestsPerUnit of the limit, remaining]. */
async function decide(port: number, key: string, value: string, domain = 'd'): Promise<[number | undefined, number]> {
  const r = await http(port, 'POST', '/json', { domain, descriptors: [{ entries: [{ key, value }] }] });
  assert.ok(r.status === 200 || r.status === 429, r.text);
  const s = r.json.statuses[0];
  return [s.currentLimit?.requestsPerUnit, s.limitRemaining ?? 0];
}

/** limitOf — the configured requests_per_unit for key in domain d, seen by a look (cost 0 is not available: a new value each time). */
let probes = 0;
async function limitOf(port: number, key: string, domain = 'd'): Promise<number | undefined> {
  return (await decide(port, key, `probe-${probes++}`, domain))[0];
}

async function loads(port: number, result: 'success' | 'error'): Promise<number> {
  return metric((await http(port, 'GET', '/metrics')).text, 'ratekeeper_config_loads_total', { result }) ?? 0;
}

describe('hot reload', () => {
  test('a file changed in place takes effect within a second (the default poll), and an atomic rename too', async () => {
    const dir = tmp();
    const file = join(dir, 'config.yaml');
    writeFileSync(file, limits(2));
    const s = await start(file, { reloadPollMs: undefined });
    try {
      assert.equal(await limitOf(s.port, 'user'), 2);
      writeFileSync(file, limits(5));
      const ms = await waitFor('the new limit', async () => (await limitOf(s.port, 'user')) === 5, 1000);
      console.log(`# in-place write seen after ${ms.toFixed(0)} ms`);
      // an editor's save: a new file renamed over the old one
      writeFileSync(join(dir, 'config.yaml.tmp'), limits(7));
      renameSync(join(dir, 'config.yaml.tmp'), file);
      const ms2 = await waitFor('the renamed file', async () => (await limitOf(s.port, 'user')) === 7, 1000);
      console.log(`# rename seen after ${ms2.toFixed(0)} ms`);
      assert.ok(s.log.some((l) => /^ratekeeper: config reloaded: 2 limit\(s\)/.test(l)), s.log.join('\n'));
      assert.ok((await loads(s.port, 'success')) >= 3);
    } finally {
      await s.running.close();
    }
  });

  test('a directory of several files: a changed file, an added one, a removed one', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'a.yaml'), limits(2));
    writeFileSync(join(dir, 'p.yaml'), 'policies:\n  login:\n    rules: "3/h"\n');
    const s = await start(dir);
    try {
      assert.equal(await limitOf(s.port, 'user'), 2);
      assert.equal((await http(s.port, 'POST', '/v1/check', { policy: 'login', key: 'x' })).json.limit, 3);
      writeFileSync(join(dir, 'p.yaml'), 'policies:\n  login:\n    rules: "4/h"\n');
      await waitFor('the changed policy', async () => (await http(s.port, 'POST', '/v1/check', { policy: 'login', key: `p${probes++}` })).json.limit === 4, 1000);
      writeFileSync(join(dir, 'b.yaml'), 'domain: e\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 9 }\n');
      await waitFor('the added file', async () => (await limitOf(s.port, 'user', 'e')) === 9, 1000);
      unlinkSync(join(dir, 'b.yaml'));
      await waitFor('the removed file', async () => (await limitOf(s.port, 'user', 'e')) === undefined, 1000);
      assert.equal(await limitOf(s.port, 'user'), 2);
    } finally {
      await s.running.close();
    }
  });

  test('a directory with subdirectories (read recursively): a change in a subdirectory is seen too', async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'team-a'));
    writeFileSync(join(dir, 'team-a', 'a.yaml'), limits(2));
    const s = await start(dir);
    try {
      assert.equal(await limitOf(s.port, 'user'), 2);
      writeFileSync(join(dir, 'team-a', 'a.yaml'), limits(4));
      await waitFor('the changed file in the subdirectory', async () => (await limitOf(s.port, 'user')) === 4, 1000);
      mkdirSync(join(dir, 'team-b'));
      writeFileSync(join(dir, 'team-b', 'b.yaml'), 'policies:\n  login:\n    rules: "3/h"\n');
      await waitFor('the file in a new subdirectory', async () => (await http(s.port, 'POST', '/v1/check', { policy: 'login', key: `p${probes++}` })).status === 200, 1000);
    } finally {
      await s.running.close();
    }
  });

  for (const form of ['the directory', 'the file through its symlink'] as const) {
    test(`a Kubernetes ConfigMap's ..data symlink swap, --config naming ${form}`, async () => {
      // the kubelet's layout: ..<timestamp>/config.yaml, ..data -> ..<timestamp>, config.yaml -> ..data/config.yaml
      const dir = tmp();
      const version = (name: string, text: string): void => {
        mkdirSync(join(dir, name));
        writeFileSync(join(dir, name, 'config.yaml'), text);
      };
      version('..2026_01_01_00_00_00.000000001', limits(2));
      symlinkSync('..2026_01_01_00_00_00.000000001', join(dir, '..data'));
      symlinkSync('..data/config.yaml', join(dir, 'config.yaml'));
      const s = await start(form === 'the directory' ? dir : join(dir, 'config.yaml'));
      try {
        assert.equal(await limitOf(s.port, 'user'), 2);
        const spent = await decide(s.port, 'other', 'kept');
        assert.deepEqual(spent, [10, 9]);
        // the swap: a new timestamped dir, a new symlink renamed over ..data (atomic), the old dir removed
        version('..2026_01_01_00_01_00.000000002', limits(6));
        symlinkSync('..2026_01_01_00_01_00.000000002', join(dir, '..data_tmp'));
        renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
        rmSync(join(dir, '..2026_01_01_00_00_00.000000001'), { recursive: true });
        await waitFor('the swapped config', async () => (await limitOf(s.port, 'user')) === 6, 1000);
        // `other` did not change: its client kept its state through the swap
        assert.deepEqual(await decide(s.port, 'other', 'kept'), [10, 8]);
        // and a second swap
        version('..2026_01_01_00_02_00.000000003', limits(8));
        symlinkSync('..2026_01_01_00_02_00.000000003', join(dir, '..data_tmp'));
        renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
        await waitFor('the second swap', async () => (await limitOf(s.port, 'user')) === 8, 1000);
      } finally {
        await s.running.close();
      }
    });
  }

  test('a bad new configuration is rejected whole: logged, counted as an error, the old one serving on', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'a.yaml'), limits(3));
    writeFileSync(join(dir, 'b.yaml'), 'policies:\n  login:\n    rules: "3/h"\n');
    const s = await start(dir);
    try {
      assert.deepEqual(await decide(s.port, 'user', 'alice'), [3, 2]);
      const errorsBefore = await loads(s.port, 'error');
      // a.yaml changes well, b.yaml badly, at once: neither is applied
      writeFileSync(join(dir, 'a.yaml'), limits(50));
      writeFileSync(join(dir, 'b.yaml'), 'policies:\n  login:\n    rules: "3/fortnight"\n');
      await waitFor('the rejection in the log', () => s.log.some((l) => l.startsWith('ratekeeper: config reload rejected, the previous configuration keeps serving:') && l.includes('fortnight')), 1000);
      assert.ok((await loads(s.port, 'error')) > errorsBefore, 'ratekeeper_config_loads_total{result="error"} went up');
      const line = s.log.find((l) => l.includes('fortnight'))!;
      assert.ok(line.includes(join(dir, 'b.yaml')), line);
      // the old configuration, and alice's state in it
      assert.deepEqual(await decide(s.port, 'user', 'alice'), [3, 1]);
      assert.equal((await http(s.port, 'POST', '/v1/check', { policy: 'login', key: 'x' })).json.limit, 3);
      assert.equal((await http(s.port, 'GET', '/healthcheck')).status, 200);
      // fixed: the new one loads
      writeFileSync(join(dir, 'b.yaml'), 'policies:\n  login:\n    rules: "3/h"\n');
      await waitFor('the fixed config', async () => (await limitOf(s.port, 'user')) === 50, 1000);
    } finally {
      await s.running.close();
    }
  });

  describe('client state across a reload', () => {
    let redis: RedisServer;
    before(async () => {
      redis = await RedisServer.start();
    });
    after(async () => {
      await redis.stop();
    });
    for (const store of ['memory', 'redis'] as const) {
      test(`${store}: unchanged rules keep every client's state; compatibly changed rules carry it, judged by the new limit`, async () => {
        const dir = tmp();
        const file = join(dir, 'config.yaml');
        const policies = (n: number): string => `policies:\n  keep:\n    rules: "5/h"\n  change:\n    rules: "${n}/h"\n`;
        writeFileSync(file, limits(5, 5) + policies(5));
        const s = await start(file, store === 'redis' ? { redis: `redis://127.0.0.1:${redis.port}`, prefix: uniquePrefix('reload') } : {});
        try {
          for (let i = 0; i < 2; i++) {
            await decide(s.port, 'user', 'alice');
            await decide(s.port, 'other', 'alice');
            await http(s.port, 'POST', '/v1/check', { policy: 'keep', key: 'alice' });
            await http(s.port, 'POST', '/v1/check', { policy: 'change', key: 'alice' });
          }
          // `user` and the policy `keep` stay; `other` and the policy `change` get new rules
          writeFileSync(file, limits(5, 6) + policies(6));
          await waitFor('the reload', async () => (await limitOf(s.port, 'other')) === 6, 1000);
          assert.ok(s.log.some((l) => /2 kept their state, 2 carried it to new rules, 0 start fresh$/.test(l)), s.log.join('\n'));
          assert.deepEqual(await decide(s.port, 'user', 'alice'), [5, 2], 'kept: the third of five');
          assert.deepEqual(await decide(s.port, 'other', 'alice'), [6, 3], 'carried: the third of six (issue 15: a rule change does not forgive)');
          assert.equal((await http(s.port, 'POST', '/v1/check', { policy: 'keep', key: 'alice' })).json.remaining, 2);
          assert.equal((await http(s.port, 'POST', '/v1/check', { policy: 'change', key: 'alice' })).json.remaining, 3);
        } finally {
          await s.running.close();
        }
      });
    }
  });

  test('a reload under load: every call answered, every count kept', async () => {
    const dir = tmp();
    const file = join(dir, 'config.yaml');
    writeFileSync(file, limits(100_000, 10));
    const s = await start(file);
    const g = rls(s.running.grpcPort!);
    try {
      let stop = false;
      let sent = 0;
      const failures: string[] = [];
      const worker = async (grpc: boolean): Promise<void> => {
        while (!stop) {
          sent++;
          try {
            if (grpc) {
              const r = await g.call({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value: 'load' }] }] });
              if (r.overall_code !== 'OK') failures.push(`grpc ${r.overall_code}`);
            } else {
              const r = await http(s.port, 'POST', '/json', { domain: 'd', descriptors: [{ entries: [{ key: 'user', value: 'load' }] }] });
              if (r.status !== 200) failures.push(`http ${r.status} ${r.text}`);
            }
          } catch (e) {
            failures.push(String(e));
          }
        }
      };
      const workers = [...Array.from({ length: 16 }, () => worker(true)), ...Array.from({ length: 16 }, () => worker(false))];
      // five reloads, each changing `other` (fresh) and keeping `user`, while the calls go on
      for (let i = 1; i <= 5; i++) {
        writeFileSync(file, limits(100_000, 10 + i));
        await waitFor(`reload ${i}`, async () => (await limitOf(s.port, 'other')) === 10 + i, 2000);
      }
      stop = true;
      await Promise.all(workers);
      assert.deepEqual(failures, []);
      assert.ok(sent >= 200, `under load: ${sent} calls`);
      // every call was charged once to the same counter through all the reloads
      assert.deepEqual(await decide(s.port, 'user', 'load'), [100_000, 100_000 - sent - 1]);
      console.log(`# ${sent} calls during 5 reloads, none lost`);
    } finally {
      g.close();
      await s.running.close();
    }
  });
});
