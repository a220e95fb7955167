/**
 * local-first-fleet — N processes of local-first-worker.ts started, released at once on one key, their results: the
 * fleet of local-first.test.ts and local-first-faults.test.ts. No tests of its own.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { WorkerConfig } from './local-first-worker.js';

const WORKER = fileURLToPath(new URL('./local-first-worker.js', import.meta.url));

export interface Result { admitted: number; unavailable: number; elapsed: number; stats: { flushes: number; duplicates: number; unsynced: number } }

/** fleet — N workers of `config` started, released at once; their results (the workers are killed at the end). */
export async function fleet(config: Omit<WorkerConfig, 'prefix'> & { prefix?: string }, n = 4, during?: (workers: ChildProcess[]) => Promise<void>, each?: (i: number) => Partial<WorkerConfig>): Promise<Result[]> {
  const prefix = config.prefix ?? `lf:${randomBytes(4).toString('hex')}:`;
  const workers: ChildProcess[] = [];
  try {
    const ready: Promise<unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const w = fork(WORKER, [JSON.stringify({ ...config, prefix, ...each?.(i) })], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      workers.push(w);
      ready.push(new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      }));
    }
    await Promise.all(ready);
    const results = workers.map((w) => new Promise<Result>((resolve) => w.once('message', (m) => resolve(m as Result))));
    for (const w of workers) w.send('go');
    if (during !== undefined) await during(workers);
    return await Promise.all(results);
  } finally {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
  }
}

