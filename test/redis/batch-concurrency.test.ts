/**
 * Hot keys coalesced across processes (issue 19 part 1): 4 processes × 500 concurrent checks on one key of a 100/h
 * limit admit exactly 100 for the counting algorithms, and for EARRRL and exponential exactly what the same race
 * admits with batching off (their documented bursts, docs/algorithms.md); standalone and a 3-master Cluster. INFO
 * commandstats: the script calls of the race drop from one per check (2000) to one per batch (4 processes × ⌈500 /
 * MAX_BATCH⌉: 4 × 8 with batches of 64).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { useCluster, useRedis } from '../support/redis-suite.js';
import type { RedisServer } from '../support/redis.js';
import { MAX_BATCH } from '../../src/stores/redis/batch.js';

const WORKER = fileURLToPath(new URL('./batch-worker.js', import.meta.url));

interface Result { admitted: number; unavailable: number; batches: number; checks: number; largest: number; calls: number }

function scriptCalls(nodes: RedisServer[]): number {
  let n = 0;
  for (const s of nodes) {
    const info = s.cli('INFO', 'commandstats');
    n += Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0);
  }
  return n;
}

async function awayFromBoundary(node: RedisServer): Promise<void> {
  const [sec] = node.cli('TIME').split('\n').map(Number);
  const into = (sec * 1000) % 3_600_000;
  if (into > 3_600_000 - 15_000) await new Promise((r) => setTimeout(r, 3_600_000 - into + 1_000));
}

async function race(nodes: RedisServer[], algorithm: string, batch: boolean): Promise<Result> {
  await awayFromBoundary(nodes[0]);
  const prefix = `bconc:${randomBytes(4).toString('hex')}:`;
  const workers: ChildProcess[] = [];
  try {
    const ready: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      const w = fork(WORKER, [nodes.map((s) => s.port).join(','), prefix, algorithm, '100', '500', batch ? '1' : '0'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      workers.push(w);
      ready.push(new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      }));
    }
    await Promise.all(ready);
    for (const s of nodes) s.cli('CONFIG', 'RESETSTAT');
    const results = workers.map((w) => new Promise<Omit<Result, 'calls'>>((resolve) => w.once('message', (m) => resolve(m as Omit<Result, 'calls'>))));
    for (const w of workers) w.send('go');
    const all = await Promise.all(results);
    const sum = (f: (r: Omit<Result, 'calls'>) => number): number => all.reduce((a, r) => a + f(r), 0);
    return {
      admitted: sum((r) => r.admitted), unavailable: sum((r) => r.unavailable), batches: sum((r) => r.batches),
      checks: sum((r) => r.checks), largest: Math.max(...all.map((r) => r.largest)), calls: scriptCalls(nodes),
    };
  } finally {
    for (const w of workers) if (w.exitCode === null) w.kill();
  }
}

function races(nodesOf: () => RedisServer[], where: string): void {
  for (const algorithm of ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential']) {
    test(`${where} ${algorithm}: 4 processes × 500 concurrent checks of one key, coalesced: exact, one script call per ${MAX_BATCH} checks`, async () => {
      const on = await race(nodesOf(), algorithm, true);
      assert.equal(on.unavailable, 0);
      // (each worker's warm-up is one batch of two looks)
      assert.equal(on.checks, 2000 + 8);
      const perProcess = Math.ceil(500 / MAX_BATCH);
      assert.equal(on.batches, 4 * perProcess + 4);
      assert.equal(on.largest, Math.min(500, MAX_BATCH));
      assert.equal(on.calls, 4 * perProcess, `${on.calls} script calls`);
      if (algorithm === 'earrrl' || algorithm === 'exponential') {
        const off = await race(nodesOf(), algorithm, false);
        assert.equal(off.unavailable, 0);
        assert.ok(off.calls >= 2000, `${off.calls} script calls without batching`);
        assert.equal(on.admitted, off.admitted);
      } else {
        assert.equal(on.admitted, 100);
      }
    });
  }
}

describe('standalone', () => {
  const suite = useRedis();
  races(() => [suite.server], 'standalone');
});

describe('cluster', () => {
  const suite = useCluster();
  races(() => suite.server.nodes, 'cluster');
});
