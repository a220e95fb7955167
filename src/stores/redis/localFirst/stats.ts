/**
 * localFirst/stats — what a store in local-first mode shares between its policies: the operators' counters
 * (LocalFirstStats), the clock its copies decide by (the server's, learned from the syncs' replies) and the instance's
 * id in the sequence hashes.
 */
import { randomBytes } from 'node:crypto';
import { localClock } from '../../../core/clock.js';
import { SyncWindow } from './window.js';

/** LocalFirstStats — the local-first mode's view for operators (RedisStore.localFirstStats()); counts since the store was made. */
export interface LocalFirstStats {
  /** copies — clients this instance holds a copy of (every policy). */
  copies: number;
  /** unsynced — cost units charged here that Redis has not acknowledged (unsent, in flight, or to be retried). */
  unsynced: number;
  /** debt — clients whose global state, as the latest sync returned it, refuses a cost-1 request (over their limit: owing). */
  debt: number;
  /** flushes — clients synced (one per client per sync answered, fetches included); calls — script calls that carried them. */
  flushes: number;
  calls: number;
  /** fetches — syncs sent only to read a client's state (a cold or stale copy with nothing to send). */
  fetches: number;
  /** flushedUnits — cost units Redis acknowledged. */
  flushedUnits: number;
  /** failures — sync calls that failed or timed out (their charges are retried with the same sequence number). */
  failures: number;
  /** duplicates — flushes Redis had applied already (a retry of a flush whose answer was lost): applied once. */
  duplicates: number;
  /** lost — cost units given up after retrying for `keep / 2` ms (Redis unreachable that long). */
  lost: number;
  /** latency — the syncs' round trips, ms: count, sum, max, and a histogram of upper bounds LATENCY_BOUNDS (cumulative counts). */
  latency: { count: number; sum: number; max: number; buckets: number[] };
  /** exact — checks decided by the exact mode's script (a cost above maxUnsynced, no room for a copy, a sliding log too long to copy). */
  exact: number;
  /** logEntries — the entries the copies' sliding logs have room for (16 bytes each; policies with slidingLog rules). */
  logEntries: number;
}

/** LATENCY_BOUNDS — the upper bounds (ms) of the latency histogram's buckets. */
export const LATENCY_BOUNDS = [0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000];

/** KEEP — ms a sequence hash lives after its last flush; a failed flush is retried for KEEP / 2 at most. */
export const KEEP = 120_000;

/**
 * LocalHub — one store's shared part of the local-first mode. `id` — this instance in the sequence hashes (random:
 * a restarted process starts new sequences). The clock: the server's TIME as a lower bound learned from replies
 * (wall − performance.now(), the largest sample, renewed every 5 s), the process's own anchored clock until the first
 * reply; never stepping back.
 */
export class LocalHub {
  readonly id = randomBytes(9).toString('base64url');
  readonly stats: LocalFirstStats = {
    copies: 0, unsynced: 0, debt: 0, flushes: 0, calls: 0, fetches: 0, flushedUnits: 0, failures: 0, duplicates: 0, lost: 0,
    latency: { count: 0, sum: 0, max: 0, buckets: LATENCY_BOUNDS.map(() => 0) }, exact: 0, logEntries: 0,
  };
  /** window — the sync calls in flight per server, bounded (window.ts): every policy's flushes share it. */
  readonly window = new SyncWindow();
  /** offset — server clock minus performance.now(), ms (NaN: unknown); offsetAt — performance.now() of that sample. */
  private offset = Number.NaN;
  private offsetAt = 0;
  /**
   * seq — the latest flush's sequence number: one counter for every client of this instance, so that a client whose
   * copy was dropped (maxKeys) and made again never reuses a number Redis has stored for it (it would be taken for a
   * duplicate and dropped).
   */
  private seq = 0;

  /** nextSeq — the next flush's sequence number (> every earlier one of this instance). */
  nextSeq(): number {
    return ++this.seq;
  }

  /** last — the latest time given: the clock never steps back. */
  private last = -Infinity;

  /** now — the server's time as this process knows it, ms since the epoch. */
  now(): number {
    const p = performance.now();
    const o = this.offset;
    const t = o === o ? p + o : localClock();
    if (t > this.last) this.last = t;
    return this.last;
  }

  /** learn — one sample of the server's clock (`wall`, ms) read before a reply that arrived at performance.now() `at`. */
  learn(wall: number, at: number): void {
    if (!(wall > 0)) return;
    const sample = wall - at;
    if (!(sample <= this.offset) || at - this.offsetAt > 5_000) {
      this.offset = sample;
      this.offsetAt = at;
    }
  }

  /** latency — one sync's round trip, ms. */
  latency(ms: number): void {
    const l = this.stats.latency;
    l.count++;
    l.sum += ms;
    if (ms > l.max) l.max = ms;
    for (let i = 0; i < LATENCY_BOUNDS.length; i++) if (ms <= LATENCY_BOUNDS[i]) l.buckets[i]++;
  }
}
