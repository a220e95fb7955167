/**
 * sim/fleet — the Redis store's local-first mode (docs/fleet.md) on a virtual clock: N instances flooded on one
 * key, each deciding on its own copy with the core's Policy (as the store does), its charges sent after maxUnsynced
 * units or flushEvery, applied by "Redis" in arrival order each at its own time (Policy.force, as the sync script's
 * rules' templates do), the global state replacing the copy and the charges made since replayed; beside the exact mode
 * (one state deciding every arrival at its time). Over-admission is the largest lead, at any moment, of what the fleet
 * admitted over what the exact mode admitted of the same arrivals; the bound is (N − 1) × maxUnsynced. Deterministic
 * (a seeded generator), pure, no I/O: `ratekeeper simulate fleet-local` draws it against flushEvery and N.
 */
import { Policy } from '../core/policy.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import { rules } from '../core/rules.js';
import type { VegaLiteSpec } from './figures.js';

/** FleetOptions — one run: the rule, the fleet, the flood, the network. Times in ms. */
export interface FleetOptions {
  rule: RuleConfig;
  instances: number;
  maxUnsynced: number;
  flushEvery: number;
  /** rate — requests per second arriving at each instance (Poisson); duration — ms of flood. */
  rate: number;
  duration: number;
  /** rtt — a sync's round trip, ms (applied in Redis at half of it). @default 0.5 */
  rtt?: number;
  seed?: number;
}

/** FleetResult — what one run admitted, and the most it ever led the exact mode by. */
export interface FleetResult {
  admitted: number;
  exact: number;
  /** over — max over time of (admitted so far − exact admitted so far), cost units. */
  over: number;
  bound: number;
  syncs: number;
}

/** rng — a small deterministic generator (mulberry32), in [0, 1). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Instance {
  copy: Float64Array;
  unsent: number[];
  unsentUnits: number;
  /** inflight — the flush sent and not answered; snapshot — the global state Redis answered it with. */
  inflight: { charges: number[]; units: number; snapshot?: number[] } | undefined;
  firstUnsent: number;
  /** waiting — arrivals waiting for the answer of the flush in flight (their budget is spent). */
  waiting: number[];
}

/** Event — [time, kind, instance]: 0 arrival, 1 applied in Redis, 2 answer, 3 flushEvery timer. */
type Event = [number, number, number];

/** fleetRun — one run of the local-first fleet against the exact mode. */
export function fleetRun(o: FleetOptions): FleetResult {
  const policy = new Policy({ rules: [o.rule] });
  const size = Math.max(1, policy.stateSize);
  const rtt = o.rtt ?? 0.5;
  const random = rng(o.seed ?? 1);
  const m = o.maxUnsynced;
  const events: Event[] = [];
  for (let i = 0; i < o.instances; i++) {
    for (let t = -Math.log(1 - random()) * (1000 / o.rate); t < o.duration; t += -Math.log(1 - random()) * (1000 / o.rate)) events.push([t, 0, i]);
  }
  // a heap would do; the arrivals are sorted once and the few sync events inserted in order
  events.sort((a, b) => a[0] - b[0]);
  const insert = (e: Event): void => {
    let lo = 0;
    let hi = events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (events[mid][0] <= e[0]) lo = mid + 1;
      else hi = mid;
    }
    events.splice(lo, 0, e);
  };
  const redis = new Float64Array(size);
  const exact = new Float64Array(size);
  const fleet: Instance[] = Array.from({ length: o.instances }, () => ({ copy: new Float64Array(size), unsent: [], unsentUnits: 0, inflight: undefined, firstUnsent: Infinity, waiting: [] }));
  let admitted = 0;
  let exactAdmitted = 0;
  let over = 0;
  let syncs = 0;
  const send = (i: number, t: number): void => {
    const f = fleet[i];
    if (f.inflight !== undefined || f.unsent.length === 0) return;
    f.inflight = { charges: f.unsent, units: f.unsentUnits };
    f.unsent = [];
    f.unsentUnits = 0;
    f.firstUnsent = Infinity;
    syncs++;
    insert([t + rtt / 2, 1, i]);
  };
  const decide = (i: number, t: number): void => {
    const f = fleet[i];
    const d = policy.evaluate(f.copy, 0, undefined, t, 1);
    if (d.reason === 'allowed' || (d.reason === 'limited' && policy.hasStrict)) {
      f.unsent.push(t, 1, d.reason === 'allowed' ? 1 : 0);
      f.unsentUnits += 1;
      if (f.firstUnsent === Infinity) {
        f.firstUnsent = t;
        insert([t + o.flushEvery, 3, i]);
      }
    }
    if (d.allowed) admitted++;
    const unseen = f.unsentUnits + (f.inflight?.units ?? 0);
    if (unseen >= m) send(i, t);
  };
  for (let k = 0; k < events.length; k++) {
    const [t, kind, i] = events[k];
    const f = fleet[i];
    if (kind === 0) {
      if (policy.evaluate(exact, 0, undefined, t, 1).allowed) exactAdmitted++;
      const unseen = f.unsentUnits + (f.inflight?.units ?? 0);
      if (unseen > 0 && unseen + 1 > m) f.waiting.push(t);
      else decide(i, t);
    } else if (kind === 1) {
      const flight = f.inflight as NonNullable<Instance['inflight']>;
      const c = flight.charges;
      for (let j = 0; j < c.length; j += 3) policy.force(redis, 0, c[j], c[j + 1], c[j + 2] === 1);
      flight.snapshot = Array.from(redis);
      insert([t + rtt / 2, 2, i]);
    } else if (kind === 2) {
      const snap = (f.inflight as NonNullable<Instance['inflight']>).snapshot as number[];
      f.inflight = undefined;
      f.copy.set(snap);
      for (let j = 0; j < f.unsent.length; j += 3) policy.force(f.copy, 0, f.unsent[j], f.unsent[j + 1], f.unsent[j + 2] === 1);
      const waiting = f.waiting;
      f.waiting = [];
      for (const w of waiting) {
        // decide() may send a flush: the units in flight count again
        const unseen = f.unsentUnits + ((f as Instance).inflight?.units ?? 0);
        if (unseen > 0 && unseen + 1 > m) f.waiting.push(w);
        else decide(i, t);
      }
      if (f.unsentUnits >= m || (f.unsent.length > 0 && t >= f.firstUnsent + o.flushEvery)) send(i, t);
    } else if (kind === 3) {
      if (f.unsent.length > 0 && t >= f.firstUnsent + o.flushEvery - 1e-9) send(i, t);
    }
    if (admitted - exactAdmitted > over) over = admitted - exactAdmitted;
  }
  return { admitted, exact: exactAdmitted, over, bound: (o.instances - 1) * m, syncs };
}

/** FleetRow — one point of the figure. */
export interface FleetRow extends FleetResult {
  instances: number;
  flushEvery: number;
  maxUnsynced: number;
}

/**
 * fleetScenario — the figure's grid: a flood of 2 000 requests/s per instance for 3 s on one key limited by a token
 * bucket of 100/s (burst 100), maxUnsynced 10, flushEvery from 1 ms to 200 ms, N = 2, 4, 8, 16; a 0.5 ms round trip.
 */
export function fleetScenario(): FleetRow[] {
  const rule = rules.tokenBucket({ limit: 100, per: '1s', name: '100/s' });
  const rows: FleetRow[] = [];
  for (const instances of [2, 4, 8, 16]) {
    for (const flushEvery of [1, 2, 5, 10, 20, 50, 100, 200]) {
      const r = fleetRun({ rule, instances, maxUnsynced: 10, flushEvery, rate: 2000, duration: 3000, seed: instances * 1000 + flushEvery });
      rows.push({ instances, flushEvery, maxUnsynced: 10, ...r });
    }
  }
  return rows;
}

/** fleetCsv — the rows as CSV. */
export function fleetCsv(rows: readonly FleetRow[]): string {
  const head = 'instances,flushEvery_ms,maxUnsynced,admitted,exact,over_admitted_max,bound,syncs';
  return [head, ...rows.map((r) => [r.instances, r.flushEvery, r.maxUnsynced, r.admitted, r.exact, r.over, r.bound, r.syncs].join(','))].join('\n') + '\n';
}

/** fleetSpec — over-admission against flushEvery, one line per N, the bound (N − 1) × maxUnsynced dashed beside it. */
export function fleetSpec(rows: readonly FleetRow[]): VegaLiteSpec {
  const values = rows.flatMap((r) => [
    { flushEvery: r.flushEvery, N: `N = ${r.instances}`, units: r.over, what: 'over-admitted (max lead over the exact mode)' },
    { flushEvery: r.flushEvery, N: `N = ${r.instances}`, units: r.bound, what: 'bound (N − 1) × maxUnsynced' },
  ]);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: 'Local-first mode: a flood on one key (token bucket 100/s, maxUnsynced 10, 2 000/s per instance)',
    width: 560,
    height: 320,
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'flushEvery', type: 'quantitative', scale: { type: 'log' }, title: 'flushEvery (ms)' },
      y: { field: 'units', type: 'quantitative', title: 'cost units beyond the exact mode' },
      color: { field: 'N', type: 'nominal', title: 'instances' },
      strokeDash: { field: 'what', type: 'nominal', title: '' },
    },
  };
}
