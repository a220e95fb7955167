/**
 * offThread — `loadConfig` in a worker thread: the YAML parse and the validation of a large configuration (~5 s for
 * 10 000 limits on a busy 2-core machine, in one synchronous run of the `yaml` package) happen beside the event
 * loop, which keeps answering checks; the result arrives in pieces, one per turn of the loop (transfer.ts).
 */
import { Worker } from 'node:worker_threads';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, type ConfigIssue } from './errors.js';
import { loadConfig } from './load.js';
import { Assembler, type Piece } from './transfer.js';
import type { LoadOptions, ServiceConfig } from './types.js';

/**
 * OFF_THREAD_BYTES — configurations smaller than this are loaded on the event loop (a few ms of parsing: less than a
 * thread takes to start, ~0.3-1 s with the `yaml` package loaded in it); larger ones in a worker thread.
 */
export const OFF_THREAD_BYTES = 32 * 1024;

/**
 * loadConfigOffThread — what `loadConfig(path, options)` gives (or throws): computed in a worker thread when the
 * files hold OFF_THREAD_BYTES or more, else on this one.
 */
export async function loadConfigOffThread(path: string, options: LoadOptions = {}): Promise<ServiceConfig> {
  if ((await bytesOf(path, OFF_THREAD_BYTES, 0).catch(() => 0)) < OFF_THREAD_BYTES) return loadConfig(path, options);
  return inWorker(path, options);
}

/** bytesOf — the size of a file, or of the files under a directory (dot-entries skipped), counted up to `enough`. */
async function bytesOf(path: string, enough: number, depth: number): Promise<number> {
  const st = await stat(path);
  if (!st.isDirectory()) return st.size;
  if (depth > 8) return 0;
  let sum = 0;
  for (const n of await readdir(path)) {
    if (n.startsWith('.')) continue;
    sum += await bytesOf(join(path, n), enough - sum, depth + 1).catch(() => 0);
    if (sum >= enough) break;
  }
  return sum;
}

/** inWorker — `loadConfig` in a worker thread, the result received one piece per turn of the event loop. */
function inWorker(path: string, options: LoadOptions): Promise<ServiceConfig> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: { path, options } });
    const assembler = new Assembler();
    let done = false;
    const finish = (f: () => void): void => {
      if (done) return;
      done = true;
      void worker.terminate();
      f();
    };
    worker.on('message', (m: Piece | { kind: 'error'; issues?: ConfigIssue[]; message: string }) => {
      if (m.kind === 'error') {
        finish(() => reject(m.issues !== undefined ? new ConfigError(m.issues) : new Error(m.message)));
        return;
      }
      let cfg: ServiceConfig | undefined;
      try {
        cfg = assembler.add(m);
      } catch (e) {
        finish(() => reject(e));
        return;
      }
      if (cfg !== undefined) finish(() => resolve(cfg));
      // the next piece once this turn of the event loop is over: checks waiting meanwhile go first
      else setImmediate(() => worker.postMessage('next'));
    });
    worker.on('error', (e) => finish(() => reject(e)));
    worker.on('exit', (code) => finish(() => reject(new Error(`the configuration loader's thread exited (${code}) before it answered`))));
  });
}
