import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Decision } from '../core/types.js';
import { FastHistogram, type Series } from './histogram.js';
import { NEAR_LIMIT_RATIO as NEAR } from './envoy.js';
import type { LocalFirstStats } from '../stores/redis/localFirst/stats.js';

/** Outcome — what one rule's hit counts as: envoy's within/near/over limit and shadow mode, plus the library's reasons. */
export type Outcome = 'within_limit' | 'near_limit' | 'over_limit' | 'shadow_mode' | 'blocked' | 'exempt' | 'store_unavailable';

/** Api — the front end a call came through, for the latency histogram: `check` POST /v1/check, `auth` GET /v1/auth. */
export type Api = 'grpc' | 'json' | 'check' | 'auth';

/** MetricsOptions — what the registry holds. */
export interface MetricsOptions {
  /** defaultMetrics — Node's process metrics (`process_*`, `nodejs_*`). @default true */
  defaultMetrics?: boolean;
  /**
   * maxSeries — the most distinct `limit` label values made of a request's descriptor values (the metric keys of
   * `detailed_metric` and `value_to_metric` limits). Past it, every new one is counted under `limit="(overflow)"`,
   * once logged and counted in `ratekeeper_metric_series_overflow_total`. Label values from the configuration
   * (config paths, policy names, rule names) do not count: the configuration bounds them. @default 1000
   */
  maxSeries?: number;
  /** log — where the first overflow is said. @default nothing */
  log?: (line: string) => void;
}

/** OVERFLOW — the `limit` label of request-made metric keys past MetricsOptions.maxSeries. */
export const OVERFLOW = '(overflow)';

/** OUTCOMES — every Outcome, by the index {@link outcomeOf} returns. */
const OUTCOMES: readonly Outcome[] = ['within_limit', 'near_limit', 'over_limit', 'shadow_mode', 'blocked', 'exempt', 'store_unavailable'];

/**
 * Tally — one series of ratekeeper_decisions_total: `pending` — hits counted since the last scrape, added to its
 * prom-client child (`child`) only when the registry is read. A decision then costs one addition; prom-client's
 * `inc` checks and hashes the label set on every call, even through a child of labels().
 */
interface Tally {
  pending: number;
  readonly child: { inc(n: number): void };
}

/** RuleChildren — one rule's tallies by outcome index (OUTCOMES), for one (domain, limit). */
type RuleChildren = { rule: string; tallies: (Tally | undefined)[] };

/**
 * Metrics — the service's Prometheus metrics (prom-client, own registry). Label values come from the configuration
 * (domain, the limit's metric key, rule name), never from what a client sends — except where a limit's
 * `detailed_metric` or `value_to_metric` asks for descriptor values in its metric key, and those under a cap
 * (`maxSeries`).
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly decisions: Counter<'domain' | 'limit' | 'rule' | 'outcome'>;
  private readonly storeErrors: Counter;
  private readonly configLoads: Counter<'result'>;
  private readonly configTime: Gauge;
  private readonly latency: FastHistogram;
  private readonly badRequests: Counter<'api'>;
  /**
   * children — decision tallies by domain, limit, rule position and outcome (these lookups do not build a string);
   * tallies — every one of them, added to prom-client at each scrape (flush).
   */
  private readonly children = new Map<string, Map<string, RuleChildren[]>>();
  private readonly tallies: Tally[] = [];
  /** maxSeries — see MetricsOptions; requestSeries — request-made limit label values in `children` (<= maxSeries). */
  readonly maxSeries: number;
  private requestSeries = 0;
  /** overflowed — the first overflow was logged. */
  private overflowed = false;
  private readonly overflows: Counter;
  private readonly log: ((line: string) => void) | undefined;

  constructor(options: MetricsOptions = {}) {
    const max = options.maxSeries ?? 1000;
    if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`metrics maxSeries must be an integer >= 0, got ${max}`);
    this.maxSeries = max;
    this.log = options.log;
    const registers = [this.registry];
    this.decisions = new Counter({
      name: 'ratekeeper_decisions_total', help: 'Hits decided, by domain (or "policy"), limit, rule and outcome (hits_addend and cost count)',
      labelNames: ['domain', 'limit', 'rule', 'outcome'] as const, registers,
      // the hits tallied since the last scrape are added when the registry is read (see Tally)
      collect: () => this.flush(),
    });
    this.storeErrors = new Counter({ name: 'ratekeeper_store_errors_total', help: 'Decisions answered by the failure policy because the store failed (refused, admitted, or decided on the local fallback)', registers });
    this.configLoads = new Counter({ name: 'ratekeeper_config_loads_total', help: 'Configuration loads, by result', labelNames: ['result'] as const, registers });
    this.configTime = new Gauge({ name: 'ratekeeper_config_last_load_timestamp_seconds', help: 'When the configuration in force was loaded', registers });
    this.latency = new FastHistogram(
      'ratekeeper_request_duration_seconds', 'Time to answer a call, by front end and status',
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers,
    );
    this.badRequests = new Counter({ name: 'ratekeeper_bad_requests_total', help: 'Calls refused as malformed (400, INVALID_ARGUMENT)', labelNames: ['api'] as const, registers });
    this.overflows = new Counter({
      name: 'ratekeeper_metric_series_overflow_total',
      help: `Decisions counted under limit="${OVERFLOW}": their metric key, made of request values (detailed_metric, value_to_metric), would have been a new series past the cap (--metrics-max-series)`,
      registers,
    });
    for (const o of ['success', 'error'] as const) this.configLoads.labels(o);
    if (options.defaultMetrics !== false) {
      collectDefaultMetrics({ register: this.registry });
      dropMisnamedDefaults(this.registry);
    }
  }

  /**
   * localFirst — the Redis store's local-first mode (docs/fleet.md) as `ratekeeper_redis_local_*`, read from
   * `read` (RedisStore.localFirstStats) at each scrape: unsynced units, clients in debt, copies held, syncs, units
   * flushed, failures, duplicates, units lost, checks decided exactly, and the syncs' round trips (sum, count, max).
   */
  localFirst(read: () => LocalFirstStats | undefined): void {
    const registers = [this.registry];
    let last: LocalFirstStats | undefined;
    // one read per scrape: the first metric collected reads, the others reuse it
    const stats = (first: boolean): LocalFirstStats | undefined => (first || last === undefined ? (last = read()) : last);
    const gauge = (name: string, help: string, pick: (s: LocalFirstStats) => number, first = false): void => {
      new Gauge({ name, help, registers, collect() { const s = stats(first); if (s !== undefined) this.set(pick(s)); } });
    };
    const counter = (name: string, help: string, pick: (s: LocalFirstStats) => number): void => {
      new Counter({ name, help, registers, collect() { const s = stats(false); if (s !== undefined) { this.reset(); this.inc(pick(s)); } } });
    };
    gauge('ratekeeper_redis_local_unsynced_units', 'Local-first: cost units charged here that Redis has not acknowledged', (s) => s.unsynced, true);
    gauge('ratekeeper_redis_local_debt_clients', 'Local-first: clients whose global state, as last synced, is over its limit (owing)', (s) => s.debt);
    gauge('ratekeeper_redis_local_copies', 'Local-first: clients this instance holds a copy of', (s) => s.copies);
    gauge('ratekeeper_redis_local_log_entries', 'Local-first: sliding-log entries the copies have room for (16 bytes each)', (s) => s.logEntries);
    gauge('ratekeeper_redis_local_sync_seconds_max', 'Local-first: the longest sync round trip so far', (s) => s.latency.max / 1000);
    counter('ratekeeper_redis_local_syncs_total', 'Local-first: clients synced (flushes and fetches answered)', (s) => s.flushes);
    counter('ratekeeper_redis_local_fetches_total', 'Local-first: syncs sent only to read a cold or stale copy', (s) => s.fetches);
    counter('ratekeeper_redis_local_sync_calls_total', 'Local-first: script calls that carried syncs (many clients per call)', (s) => s.calls);
    counter('ratekeeper_redis_local_flushed_units_total', 'Local-first: cost units Redis acknowledged', (s) => s.flushedUnits);
    counter('ratekeeper_redis_local_sync_failures_total', 'Local-first: sync calls that failed or timed out (retried with the same sequence)', (s) => s.failures);
    counter('ratekeeper_redis_local_duplicates_total', 'Local-first: flushes Redis had applied already (applied once)', (s) => s.duplicates);
    counter('ratekeeper_redis_local_lost_units_total', 'Local-first: cost units given up after retrying for a minute', (s) => s.lost);
    counter('ratekeeper_redis_local_exact_total', 'Local-first: checks decided by the exact mode (a cost above maxUnsynced, no room for a copy, a sliding log too long to copy)', (s) => s.exact);
    counter('ratekeeper_redis_local_sync_seconds_total', 'Local-first: the syncs\' round trips, summed (divided by sync_calls_total: the mean)', (s) => s.latency.sum / 1000);
  }

  /**
   * decision — counts one decision's hits per rule. `rule`, when given, is the rule label of every rule instead of
   * its name (a request's own limit: its name holds the client's requests_per_unit). `fromRequest` — `limit` holds
   * request values (detailed_metric, value_to_metric): it counts against maxSeries.
   */
  decision(domain: string, limit: string, d: Decision, cost: number, rule?: string, fromRequest = false): void {
    let byDomain = this.children.get(domain);
    if (byDomain === undefined) {
      byDomain = new Map();
      this.children.set(domain, byDomain);
    }
    // per limit: per rule (by position), per outcome, the counter child; rules keep their names for a limit's life
    let byRule = byDomain.get(limit);
    if (byRule === undefined) {
      if (fromRequest && !this.admit()) {
        limit = OVERFLOW;
        this.overflows.inc();
        byRule = byDomain.get(OVERFLOW);
      }
      if (byRule === undefined) {
        byRule = [];
        byDomain.set(limit, byRule);
      }
    }
    const n = cost > 0 ? cost : 1;
    if (d.reason === 'store-unavailable' || d.fallback === true) this.storeErrors.inc();
    for (let i = 0; i < d.rules.length; i++) {
      const r = d.rules[i];
      const name = rule ?? r.name;
      const outcome = outcomeOf(d, r.allowed, r.limit, r.remaining);
      let byOutcome = byRule[i];
      if (byOutcome === undefined || byOutcome.rule !== name) byRule[i] = byOutcome = { rule: name, tallies: [] };
      let t = byOutcome.tallies[outcome];
      if (t === undefined) {
        t = { pending: 0, child: this.decisions.labels(domain, limit, name, OUTCOMES[outcome]) };
        byOutcome.tallies[outcome] = t;
        this.tallies.push(t);
      }
      t.pending += n;
    }
  }

  /** flush — adds every tally's pending hits to its prom-client child (at a scrape). */
  private flush(): void {
    for (const t of this.tallies) {
      if (t.pending === 0) continue;
      t.child.inc(t.pending);
      t.pending = 0;
    }
  }

  /**
   * watchStore — the Redis store's fleet as gauges read at each scrape: `ratekeeper_redis_fleet_instances` (N, the
   * live instances it last counted) and `ratekeeper_redis_fallback_active` (1 while checks are decided on the local
   * 'memory' fallback), and the hot keys coalesced (`ratekeeper_redis_coalesced_*`: batches, their checks, the largest).
   * Nothing for a store without them (the memory store).
   */
  watchStore(of: object): void {
    const store = of as { readonly fleetSize?: number; readonly fallbackActive?: boolean };
    if (store.fleetSize === undefined) return;
    const registers = [this.registry];
    new Gauge({ name: 'ratekeeper_redis_fleet_instances', help: 'Instances sharing the Redis store, as this one last counted them (its fallback admits limit / this)', registers, collect() { this.set(store.fleetSize ?? 1); } });
    new Gauge({ name: 'ratekeeper_redis_fallback_active', help: '1 while checks are decided on the local memory fallback (Redis did not answer the latest)', registers, collect() { this.set(store.fallbackActive === true ? 1 : 0); } });
    // hot keys coalesced (docs/fleet.md): the batches of one key's checks sent as one script call, and their checks
    const batches = (of as { readonly batcher?: { readonly stats: { batches: number; checks: number; largest: number } } }).batcher?.stats;
    if (batches === undefined) return;
    new Counter({ name: 'ratekeeper_redis_coalesced_batches_total', help: 'Script calls that carried several checks of one key (hot keys coalesced)', registers, collect() { this.reset(); this.inc(batches.batches); } });
    new Counter({ name: 'ratekeeper_redis_coalesced_checks_total', help: 'Checks sent in coalesced script calls (divided by batches_total: the mean batch size)', registers, collect() { this.reset(); this.inc(batches.checks); } });
    new Gauge({ name: 'ratekeeper_redis_coalesced_largest', help: 'The most checks one coalesced script call has carried', registers, collect() { this.set(batches.largest); } });
  }

  /**
   * refused — counts the hits of a limit that refuses every hit (`requests_per_unit: 0`: no rule, nothing decided by
   * the store) as `over_limit`, or `shadow_mode` when it is not enforced.
   */
  refused(domain: string, limit: string, rule: string, cost: number, shadow: boolean, fromRequest = false): void {
    if (fromRequest && this.children.get(domain)?.has(limit) !== true) {
      if (this.admit()) {
        let byDomain = this.children.get(domain);
        if (byDomain === undefined) this.children.set(domain, (byDomain = new Map()));
        byDomain.set(limit, []);
      } else {
        limit = OVERFLOW;
        this.overflows.inc();
      }
    }
    this.decisions.labels(domain, limit, rule, shadow ? 'shadow_mode' : 'over_limit').inc(cost > 0 ? cost : 1);
  }

  /** admit — whether one more request-made limit label value fits under maxSeries (counted if so); logs the first refusal. */
  private admit(): boolean {
    if (this.requestSeries < this.maxSeries) {
      this.requestSeries++;
      return true;
    }
    if (!this.overflowed) {
      this.overflowed = true;
      this.log?.(`metrics: ${this.maxSeries} metric keys made of request values (detailed_metric, value_to_metric) are counted; new ones are counted under limit="${OVERFLOW}" (--metrics-max-series; ratekeeper_metric_series_overflow_total counts them)`);
    }
    return false;
  }

  /** configLoaded — a load's result (a rejected reload counts as an error; the old configuration keeps serving). */
  configLoaded(ok: boolean, at = Date.now()): void {
    this.configLoads.inc({ result: ok ? 'success' : 'error' });
    if (ok) this.configTime.set(at / 1000);
  }

  /** timers — latency series by api, then by code. */
  private readonly timers = new Map<Api, Map<string, Series>>();

  /** time — starts timing a call; the returned function records it with its status. */
  time(api: Api): (code: string) => void {
    const start = performance.now();
    return (code) => this.answered(api, code, start);
  }

  /**
   * answered — records a call of `api` answered with `code`, started at `start` (performance.now(), ms): `time`
   * without a closure per call, for the request paths.
   */
  answered(api: Api, code: string, start: number): void {
    let byCode = this.timers.get(api);
    if (byCode === undefined) this.timers.set(api, (byCode = new Map()));
    let s = byCode.get(code);
    if (s === undefined) byCode.set(code, (s = this.latency.series({ api, code })));
    s.observe((performance.now() - start) / 1000);
  }

  badRequest(api: Api): void {
    this.badRequests.inc({ api });
  }

  /** text — the exposition in Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** outcomeOf — what one rule's hit counts as, by its index in OUTCOMES. */
function outcomeOf(d: Decision, allowed: boolean, limit: number, remaining: number): number {
  switch (d.reason) {
    case 'store-unavailable': return 6;
    case 'blocked': return 4;
    case 'exempt': return 5;
    default:
  }
  if (!allowed) return d.reason === 'dry-run' ? 3 : 2;
  return limit - remaining > Math.floor(limit * NEAR) ? 1 : 0;
}

/**
 * dropMisnamedDefaults — removes prom-client's default metrics that `promtool check metrics` rejects: gauges named
 * `*_total` (`nodejs_active_handles_total`, `nodejs_active_requests_total`, `nodejs_active_resources_total`: "non-counter
 * metrics should not have _total suffix"). Nothing is lost: each is the sum over `type` of its unsuffixed twin
 * (`sum(nodejs_active_handles)`). prom-client has no option to rename or skip single default metrics.
 */
function dropMisnamedDefaults(registry: Registry): void {
  for (const m of registry.getMetricsAsArray()) {
    const { name, type } = m as unknown as { name: string; type: string };
    if (name.endsWith('_total') && type !== 'counter') registry.removeSingleMetric(name);
  }
}
