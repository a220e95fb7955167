/**
 * worker — the thread that loads a configuration for {@link loadConfigOffThread}: reads, parses and validates it
 * (`loadConfig`), then sends it in pieces (transfer.ts), one per `next` message from the service's thread, so that the
 * service receives one piece per turn of its event loop. A bad configuration is sent as its issues.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadConfig } from './load.js';
import { ConfigError } from './errors.js';
import { pieces, type Piece } from './transfer.js';
import type { LoadOptions } from './types.js';

const port = parentPort!;
const { path, options } = workerData as { path: string; options: LoadOptions };
let next: Generator<Piece> | undefined;
port.on('message', () => {
  const r = next?.next();
  if (r !== undefined && r.done !== true) port.postMessage(r.value);
});
try {
  next = pieces(await loadConfig(path, options));
  port.postMessage(next.next().value);
} catch (e) {
  port.postMessage({ kind: 'error', issues: e instanceof ConfigError ? e.issues : undefined, message: (e as Error)?.message ?? String(e) });
}
