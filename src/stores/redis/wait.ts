/**
 * wait — the store's `wait` option: Redis's `WAIT replicas timeout` sent on the writes' connection right behind the
 * script calls of a tick, one WAIT for all of them, and each write answered once its WAIT answered. Imports the
 * call's error (call.ts); the options are checked in options.ts.
 */
import { StoreUnavailableError } from './call.js';
import type { Settings } from './options.js';

/** Waiter — `waitFor` joins a write's promise with the WAIT sent behind it; `shortfalls` — WAITs that answered fewer replicas than asked. */
export interface Waiter {
  waitFor(p: Promise<unknown>): Promise<unknown>;
  readonly shortfalls: number;
}

/**
 * waiter — WAIT blocks its connection until it answers, so at most one is in flight: the writes sent meanwhile wait
 * for the next one, sent as soon as the current one answers (behind them: WAIT covers every earlier write of its
 * connection). A call thus waits at most two WAIT timeouts beyond its own round trip.
 */
export function waiter(w: NonNullable<Settings['wait']>): Waiter {
  const replicas = String(w.replicas);
  const ms = String(w.timeout);
  let next: { promise: Promise<number>; resolve: (n: number) => void } | undefined;
  let inFlight = false;
  const out = { shortfalls: 0, waitFor: undefined as unknown as Waiter['waitFor'] };
  const flush = (): void => {
    const batch = next!;
    next = undefined;
    inFlight = true;
    w.call('WAIT', replicas, ms).then((n) => Number(n), () => -1).then((n) => {
      inFlight = false;
      batch.resolve(n);
      if (next !== undefined) flush();
    });
  };
  out.waitFor = (p) => {
    if (next === undefined) {
      let resolve!: (n: number) => void;
      next = { promise: new Promise<number>((r) => (resolve = r)), resolve };
      if (!inFlight) process.nextTick(flush);
    }
    return Promise.all([p, next.promise]).then(([reply, acked]) => {
      // a WAIT that failed (the connection dropped) leaves the write's replication unknown: not acknowledged
      if (acked < 0) throw new StoreUnavailableError('WAIT did not answer: the write may not be replicated');
      if (acked < w.replicas) out.shortfalls++;
      return reply;
    });
  };
  return out;
}
