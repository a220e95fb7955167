/**
 * Exactness under concurrency: 4 processes × 500 concurrent checks on one key with limit 100 admit exactly 100,
 * for every algorithm whose limit is a hard count. Each check is one atomic script, so no interleaving can
 * admit more (or fewer) than the limit.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { RedisServer } from '../support/redis.js';

const WORKER = fileURLToPath(new URL('./concurrency-worker.js', import.meta.url));
let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

/** awayFromBoundary — waits while Redis's clock is within 15 s of an epoch hour, where windows of 1h legitimately restart. */
async function awayFromBoundary(): Promise<void> {
  const [sec] = server.cli('TIME').split('\n').map(Number);
  const into = (sec * 1000) % 3_600_000;
  if (into > 3_600_000 - 15_000) await new Promise((r) => setTimeout(r, 3_600_000 - into + 1_000));
}

async function race(algorithm: string): Promise<{ admitted: number; unavailable: number }> {
  await awayFromBoundary();
  const prefix = `conc:${randomBytes(4).toString('hex')}:`;
  const workers: ChildProcess[] = [];
  try {
    const ready: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      const w = fork(WORKER, [String(server.port), prefix, algorithm, '100', '500'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      workers.push(w);
      ready.push(new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      }));
    }
    await Promise.all(ready);
    const results = workers.map((w) => new Promise<{ admitted: number; unavailable: number }>((resolve) => w.once('message', (m) => resolve(m as { admitted: number; unavailable: number }))));
    for (const w of workers) w.send('go');
    const all = await Promise.all(results);
    return { admitted: all.reduce((a, r) => a + r.admitted, 0), unavailable: all.reduce((a, r) => a + r.unavailable, 0) };
  } finally {
    for (const w of workers) if (w.exitCode === null) w.kill();
  }
}

for (const algorithm of ['fixedWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'slidingWindow']) {
  test(`${algorithm}: 4 processes × 500 concurrent checks, limit 100, admit exactly 100`, async () => {
    const r = await race(algorithm);
    assert.equal(r.unavailable, 0);
    assert.equal(r.admitted, 100);
  });
}
