/**
 * test/server/health — /healthcheck names the store's state (issue 15, section 6): on a real 3-master Redis Cluster,
 * a master that hangs (SIGSTOP) or dies (SIGKILL) is named in the body, with since when, while the answer stays 200
 * (the default, as envoyproxy/ratelimit's REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=false) or turns 500 with
 * --health-check-store; once the master is back the body clears. A probe costs at most one PING per master a second.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisCluster } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running } from '../../src/server/serve.js';
import { serveOptions } from '../../src/server/cli.js';
import { http, waitFor } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 3 }
`;

describe('/healthcheck and the store\'s state, on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let plain: Running;
  let strict: Running;
  before(async () => {
    cluster = await RedisCluster.start();
    const common = {
      config: configFile(CONFIG), port: 0, grpcPort: -1, redisCluster: cluster.startupNodes.map((n) => `127.0.0.1:${n.port}`),
      onStoreError: 'deny' as const, storeTimeout: 300, log: () => undefined,
    };
    plain = await startService({ ...common, prefix: uniquePrefix('hp') });
    strict = await startService({ ...common, prefix: uniquePrefix('hs'), healthCheckStore: true });
  });
  after(async () => {
    await plain?.close();
    await strict?.close();
    await cluster?.stop();
  });

  const health = async (r: Running): Promise<{ status: number; text: string }> => {
    const h = await http(r.httpPort!, 'GET', '/healthcheck', undefined, { timeoutMs: 5000 });
    return { status: h.status, text: h.text };
  };

  test('the flag and envoy\'s environment variable turn the option on; it is off by default', () => {
    const base = ['--config', 'x.yaml'];
    assert.equal((serveOptions(base, {}) as { healthCheckStore?: boolean }).healthCheckStore, undefined);
    assert.equal((serveOptions([...base, '--health-check-store'], {}) as { healthCheckStore?: boolean }).healthCheckStore, true);
    assert.equal((serveOptions(base, { REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: 'true' }) as { healthCheckStore?: boolean }).healthCheckStore, true);
  });

  test('every master up: 200 OK, as envoyproxy/ratelimit answers', async () => {
    for (const r of [plain, strict]) {
      const h = await health(r);
      assert.equal(h.status, 200, h.text);
      assert.equal(h.text, 'OK');
    }
  });

  test('a master hangs (SIGSTOP): named in the body with since when; 200 by default, 500 with --health-check-store; back (SIGCONT): cleared', async () => {
    const hung = cluster.nodes[1];
    const name = `127.0.0.1:${hung.port}`;
    const t0 = Date.now();
    hung.pause();
    try {
      const named = await waitFor('the hung master named', async () => (await health(plain)).text.includes(name), 5000);
      process.stdout.write(`a hung master named in ${named.toFixed(0)} ms\n`);
      const p = await health(plain);
      assert.equal(p.status, 200, p.text);
      assert.match(p.text, /^OK\nstore: redis cluster, 3 masters, 1 unreachable\n/);
      const since = Date.parse(/unreachable: 127\.0\.0\.1:\d+ since (\S+) /.exec(p.text)![1]);
      assert.ok(since >= t0 - 1000 && since <= Date.now(), p.text);
      assert.match(p.text, new RegExp(`unreachable: ${name} since \\S+ \\(no answer to (a )?PING`));
      await waitFor('500 with the option', async () => (await health(strict)).status === 500, 5000);
      const s = await health(strict);
      assert.match(s.text, /^NOT OK\n/);
      assert.ok(s.text.includes(name), s.text);
      // the probe is cached: ten questions within a second cost no more than one PING per master
      const t = performance.now();
      for (let i = 0; i < 10; i++) await health(plain);
      assert.ok(performance.now() - t < 3000, 'answered from the latest probe');
    } finally {
      hung.resume();
    }
    const cleared = await waitFor('cleared', async () => (await health(plain)).text === 'OK', 5000);
    process.stdout.write(`cleared ${cleared.toFixed(0)} ms after SIGCONT\n`);
    await waitFor('200 again with the option', async () => (await health(strict)).status === 200, 5000);
  });

  test('a master dies (SIGKILL): named in the body; 200 by default, 500 with --health-check-store', async () => {
    const dead = cluster.nodes[2];
    const name = `127.0.0.1:${dead.port}`;
    await dead.kill();
    const named = await waitFor('the dead master named', async () => (await health(plain)).text.includes(`unreachable: ${name}`), 5000);
    process.stdout.write(`a killed master named in ${named.toFixed(0)} ms: ${JSON.stringify((await health(plain)).text)}\n`);
    assert.equal((await health(plain)).status, 200);
    await waitFor('500 with the option', async () => (await health(strict)).status === 500, 5000);
    assert.ok((await health(strict)).text.includes(name));
    // a third of the keys are refused under deny meanwhile: the service still answers
    const r = await http(plain.httpPort!, 'POST', '/json', { domain: 'd', descriptors: [{ entries: [{ key: 'user', value: 'x' }] }] }, { timeoutMs: 5000 });
    assert.ok(r.status === 200 || r.status === 429, `${r.status}`);
  });
});
