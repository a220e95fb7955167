/**
 * test/redis/fleet-cluster — the fallback that knows the fleet (issue 19 part 3) on the 3-master Cluster, in 4 real
 * processes (fleet-worker.ts): one key hammered concurrently while only its master is SIGSTOPped. The registry
 * (`<prefix>{fleet}`) lives in one slot, so two cases:
 * - the key's master is not the registry's: the heartbeats keep being answered by the registry's master during the
 *   outage, N stays 4 (counted, not remembered), and the fleet admits limit / N each;
 * - the key's master is the registry's: the heartbeats fail, N stays the last count (4), the same share.
 * Either way the fleet admits the exact mode's total (fixedWindow 100/h → 100, gcra burst 40 → 40, earrrl → 28 for 25)
 * where the old fallback admitted 4 ×, and after SIGCONT Redis decides again, exactly. Each stop lasts well under the
 * Cluster's node timeout (5 s), so no master is marked failed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fleetKey } from '../../src/stores/redis/fleet.js';
import { slotOf } from '../../src/stores/redis/slot.js';
import { encodeKey } from '../../src/stores/redis/keys.js';
import { WORKER_RULES, type Hammered } from './fleet-worker.js';
import { RedisCluster, type RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';

const N = 4;
const WORKER = fileURLToPath(new URL('./fleet-worker.js', import.meta.url));

describe('the fleet in 4 processes on the 3-master Cluster: the key\'s master stopped, one key hammered', () => {
  let cluster: RedisCluster;
  const workers: ChildProcess[] = [];
  before(async () => {
    cluster = await RedisCluster.start();
  });
  after(async () => {
    for (const n of cluster.nodes) n.resume();
    for (const w of workers) if (w.exitCode === null) w.kill();
    await cluster.stop();
  });
  /** ask — sends `m` to every worker and gathers their answers. */
  const ask = <T>(m: unknown): Promise<T[]> => Promise.all(workers.map((w) => {
    const answer = new Promise<T>((resolve) => w.once('message', (r) => resolve(r as T)));
    w.send(m as never);
    return answer;
  }));
  /** total — per rule, the sum over the workers. */
  const total = (hs: Hammered[], field: 'admitted' | 'fallback'): number[] => WORKER_RULES.map((_, i) => hs.reduce((a, h) => a + h[field][i], 0));
  /** keyOn — a client key (with `tag` in it) whose slot `node` serves: every rule's Redis key of it is in that slot (the hash tag is the client key). */
  const keyOn = (node: RedisServer, tag: string): string => {
    for (let i = 0; ; i++) {
      const k = `${tag}-${i}`;
      if (cluster.owner(slotOf(`{${encodeKey(k)}}`)) === node) return k;
    }
  };

  it('N stays 4 (counted while the registry\'s master answers, kept while it is the one stopped); the exact mode\'s total, not 4 ×; SIGCONT: Redis again', async () => {
    const prefix = uniquePrefix('fleetc');
    for (let i = 0; i < N; i++) {
      const w = fork(WORKER, [cluster.nodes.map((n) => n.port).join(','), prefix, String(N)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      workers.push(w);
      await new Promise<void>((resolve, reject) => {
        w.once('message', () => resolve());
        w.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      });
    }
    assert.deepEqual(await ask<number>('size'), [N, N, N, N]);
    const registry = cluster.owner(slotOf(fleetKey(prefix)));
    const other = cluster.nodes.find((n) => n !== registry) as RedisServer;

    for (const [name, stopped] of [['another master than the registry\'s', other], ['the registry\'s master', registry]] as const) {
      const exact = await ask<Hammered>({ hammer: keyOn(stopped, 'exact') });
      assert.deepEqual(total(exact, 'fallback'), [0, 0, 0], name);
      const whole = total(exact, 'admitted');
      assert.deepEqual(whole, [100, 40, 25], `${name}: the exact mode: fixedWindow 100, gcra burst 40, earrrl burst 25`);

      const beatsBefore = exact.map((h) => h.beats);
      const outageKey = keyOn(stopped, 'outage');
      stopped.pause();
      let outage: Hammered[];
      try {
        outage = await ask<Hammered>({ hammer: outageKey });
      } finally {
        stopped.resume();
      }
      assert.deepEqual(total(outage, 'fallback'), [4 * 150, 4 * 150, 4 * 150], `${name}: every check decided by the fallback`);
      assert.deepEqual(outage.map((h) => h.size), [N, N, N, N], `${name}: N during the outage`);
      if (stopped !== registry) {
        // the registry's master kept answering the heartbeats (100 ms apart; the hammer waits 3 × 150 ms at least)
        outage.forEach((h, i) => assert.ok(h.beats >= beatsBefore[i] + 2, `${name}: heartbeats ${beatsBefore[i]} → ${h.beats} during the outage`));
      }
      // fixedWindow and gcra split exactly (25 and 10 per process); earrrl: 7 per process, N − 1 over its exact burst
      assert.deepEqual(total(outage, 'admitted'), [100, 40, 28], `${name}: admitted across 4 processes while the key's master was stopped (the old fallback: ${whole.map((w) => 4 * w).join(', ')})`);

      // back on Redis by itself: fresh keys of the same master are decided by Redis again, exactly
      let back: Hammered[] = [];
      for (let i = 0; i < 100; i++) {
        back = await ask<Hammered>({ hammer: keyOn(stopped, `back-${i}`) });
        if (total(back, 'fallback').every((f) => f === 0)) break;
        await sleep(50);
      }
      assert.deepEqual(total(back, 'fallback'), [0, 0, 0], `${name}: decided by Redis again`);
      assert.deepEqual(total(back, 'admitted'), whole, name);
    }
    await Promise.all(workers.map((w) => {
      const gone = new Promise((resolve) => w.once('exit', resolve));
      w.send('close');
      return gone;
    }));
    assert.equal(cluster.nodes[0].cli('-c', 'EXISTS', fleetKey(prefix)), '0', 'every process unregistered');
  });
});
