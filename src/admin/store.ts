/**
 * store — GET /admin/store: what the limiters' stores are doing, for the operators' view. For a Redis store: hot keys
 * coalesced (batch.ts's counters), the local-first mode (its settings and LocalFirstStats: unsynced units, debt,
 * syncs, their latency), the fleet (N, how it is counted) and the 'memory' fallback (active, since when). Every number
 * is read from the store objects as they are now: nothing is asked of Redis (the view answers while Redis hangs), and
 * no client key is in it. The same figures as the service's `ratekeeper_redis_*` metrics (server/metrics.ts).
 */
import type { Limiter } from '../limiter.js';
import { MemoryStore } from '../stores/memory.js';
import type { RedisStore } from '../stores/redis/store.js';
import { LATENCY_BOUNDS } from '../stores/redis/localFirst/stats.js';
import type { Named } from './api.js';

/** RedisView — what the view reads of a Redis store (RedisStore's public fields; nothing that calls Redis). */
type RedisView = Pick<RedisStore, 'onError' | 'batcher' | 'localFirst' | 'localFirstStats' | 'fleet' | 'fleetSize' | 'fallbackActive' | 'failingSince' | 'failures' | 'timeout'>;

/** isRedis — a Redis store, known by its shape (admin does not load the Redis store's code for a memory one). */
function isRedis(s: object): s is RedisView {
  const r = s as Partial<RedisView>;
  return typeof r.localFirstStats === 'function' && typeof r.fleetSize === 'number' && typeof r.onError === 'string';
}

/** storeView — GET /admin/store: each distinct store of the limiters picked, with how many of them use it. */
export function storeView(limiters: Named): unknown {
  const used = new Map<object, number>();
  for (const [, l] of limiters) {
    const s = (l as Limiter).store as object;
    used.set(s, (used.get(s) ?? 0) + 1);
  }
  return { now: Date.now(), stores: [...used].map(([s, n]) => describe(s, n)) };
}

/** describe — one store's figures; `limiters` — how many of the limiters picked use it. */
function describe(s: object, limiters: number): Record<string, unknown> {
  if (s instanceof MemoryStore) return { kind: 'memory', limiters, maxKeys: s.maxKeys };
  if (!isRedis(s)) return { kind: 'other', limiters };
  const n = s.fleetSize;
  const fleet = s.fleet;
  return {
    kind: 'redis', limiters, onError: s.onError, timeout: s.timeout,
    coalescing: coalescing(s),
    localFirst: localFirst(s, fleet === undefined ? undefined : n),
    fleet: fleet === undefined
      ? { counted: 'none', instances: 1 }
      : 'instances' in fleet.settings
        ? { counted: 'fixed', instances: n }
        : { counted: 'registry', instances: n, expiry: fleet.settings.expiry, interval: fleet.settings.interval, beats: fleet.beats },
    fallback: {
      memory: s.onError === 'memory',
      active: s.fallbackActive,
      since: s.fallbackActive ? s.failingSince : null,
      failures: s.failures,
    },
  };
}

/** coalescing — the hot keys' batches: script calls of 2 or more checks of one key, their checks, the largest, the mean. */
function coalescing(s: RedisView): Record<string, unknown> {
  const b = s.batcher?.stats;
  if (b === undefined) return { on: false };
  return { on: true, batches: b.batches, checks: b.checks, largest: b.largest, mean: b.batches > 0 ? b.checks / b.batches : null };
}

/**
 * localFirst — the mode's settings and counters; `bound` — the most cost units per client admitted beyond the exact
 * mode, (N − 1) × maxUnsynced (N × maxUnsynced with cold 'fresh'), null when N is not counted (no fleet).
 */
function localFirst(s: RedisView, n: number | undefined): Record<string, unknown> {
  const lf = s.localFirst;
  const st = s.localFirstStats();
  if (lf === undefined || st === undefined) return { on: false };
  const l = st.latency;
  return {
    on: true, maxUnsynced: lf.maxUnsynced, flushEvery: lf.flushEvery, cold: lf.cold, maxKeys: lf.maxKeys,
    bound: n === undefined ? null : (lf.cold === 'fresh' ? n : n - 1) * lf.maxUnsynced,
    unsynced: st.unsynced, debt: st.debt, copies: st.copies,
    syncs: st.flushes, fetches: st.fetches, calls: st.calls, flushedUnits: st.flushedUnits,
    failures: st.failures, duplicates: st.duplicates, lost: st.lost, exact: st.exact,
    latency: {
      count: l.count, sum: l.sum, max: l.max, mean: l.count > 0 ? l.sum / l.count : null,
      buckets: LATENCY_BOUNDS.map((le, i) => ({ le, count: l.buckets[i] ?? 0 })),
    },
  };
}
