import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Decision } from '../core/types.js';

/** Outcome — what one rule's hit counts as: envoy's within/near/over limit and shadow mode, plus the library's reasons. */
export type Outcome = 'within_limit' | 'near_limit' | 'over_limit' | 'shadow_mode' | 'blocked' | 'exempt' | 'store_unavailable';

/** NEAR — envoy's near-limit ratio: a hit that leaves less than 20 % of the limit is near it. */
const NEAR = 0.8;

/** Api — the front end a call came through, for the latency histogram. */
export type Api = 'grpc' | 'json' | 'check';

/**
 * Metrics — the service's Prometheus metrics (prom-client, own registry). Label values come from the configuration
 * (domain, the limit's metric key, rule name), never from what a client sends — except where a limit's
 * `detailed_metric` or `value_to_metric` asks for descriptor values in its metric key.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly decisions: Counter<'domain' | 'limit' | 'rule' | 'outcome'>;
  private readonly storeErrors: Counter;
  private readonly configLoads: Counter<'result'>;
  private readonly configTime: Gauge;
  private readonly latency: Histogram<'api' | 'code'>;
  private readonly badRequests: Counter<'api'>;
  /**
   * children — counter children by domain, limit, rule position and outcome (prom-client's labels() hashes its labels
   * on every call; these lookups do not build a string).
   */
  private readonly children = new Map<string, Map<string, { rule: string; children: Map<Outcome, { inc(n: number): void }> }[]>>();

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.decisions = new Counter({
      name: 'ratekeeper_decisions_total', help: 'Hits decided, by domain (or "policy"), limit, rule and outcome (hits_addend and cost count)',
      labelNames: ['domain', 'limit', 'rule', 'outcome'] as const, registers,
    });
    this.storeErrors = new Counter({ name: 'ratekeeper_store_errors_total', help: 'Decisions answered by the failure policy because the store failed (refused, admitted, or decided on the local fallback)', registers });
    this.configLoads = new Counter({ name: 'ratekeeper_config_loads_total', help: 'Configuration loads, by result', labelNames: ['result'] as const, registers });
    this.configTime = new Gauge({ name: 'ratekeeper_config_last_load_timestamp_seconds', help: 'When the configuration in force was loaded', registers });
    this.latency = new Histogram({
      name: 'ratekeeper_request_duration_seconds', help: 'Time to answer a call, by front end and status',
      labelNames: ['api', 'code'] as const, buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers,
    });
    this.badRequests = new Counter({ name: 'ratekeeper_bad_requests_total', help: 'Calls refused as malformed (400, INVALID_ARGUMENT)', labelNames: ['api'] as const, registers });
    for (const o of ['success', 'error'] as const) this.configLoads.labels(o);
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * decision — counts one decision's hits per rule. `rule`, when given, is the rule label of every rule instead of
   * its name (a request's own limit: its name holds the client's requests_per_unit).
   */
  decision(domain: string, limit: string, d: Decision, cost: number, rule?: string): void {
    let byDomain = this.children.get(domain);
    if (byDomain === undefined) {
      byDomain = new Map();
      this.children.set(domain, byDomain);
    }
    // per limit: per rule (by position), per outcome, the counter child; rules keep their names for a limit's life
    let byRule = byDomain.get(limit);
    if (byRule === undefined) {
      byRule = [];
      byDomain.set(limit, byRule);
    }
    const n = cost > 0 ? cost : 1;
    if (d.reason === 'store-unavailable' || d.fallback === true) this.storeErrors.inc();
    for (let i = 0; i < d.rules.length; i++) {
      const r = d.rules[i];
      const name = rule ?? r.name;
      const outcome = outcomeOf(d, r.allowed, r.limit, r.remaining);
      let byOutcome = byRule[i];
      if (byOutcome === undefined || byOutcome.rule !== name) byRule[i] = byOutcome = { rule: name, children: new Map() };
      let c = byOutcome.children.get(outcome);
      if (c === undefined) {
        c = this.decisions.labels(domain, limit, name, outcome);
        byOutcome.children.set(outcome, c);
      }
      c.inc(n);
    }
  }

  /**
   * refused — counts the hits of a limit that refuses every hit (`requests_per_unit: 0`: no rule, nothing decided by
   * the store) as `over_limit`, or `shadow_mode` when it is not enforced.
   */
  refused(domain: string, limit: string, rule: string, cost: number, shadow: boolean): void {
    this.decisions.labels(domain, limit, rule, shadow ? 'shadow_mode' : 'over_limit').inc(cost > 0 ? cost : 1);
  }

  /** configLoaded — a load's result (a rejected reload counts as an error; the old configuration keeps serving). */
  configLoaded(ok: boolean, at = Date.now()): void {
    this.configLoads.inc({ result: ok ? 'success' : 'error' });
    if (ok) this.configTime.set(at / 1000);
  }

  /** timers — histogram children by api and code (labels() hashes its labels on every call). */
  private readonly timers = new Map<string, { observe(v: number): void }>();

  /** time — starts timing a call; the returned function records it with its status. */
  time(api: Api): (code: string) => void {
    const start = performance.now();
    return (code) => {
      const k = `${api} ${code}`;
      let h = this.timers.get(k);
      if (h === undefined) {
        h = this.latency.labels(api, code);
        this.timers.set(k, h);
      }
      h.observe((performance.now() - start) / 1000);
    };
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

function outcomeOf(d: Decision, allowed: boolean, limit: number, remaining: number): Outcome {
  switch (d.reason) {
    case 'store-unavailable': return 'store_unavailable';
    case 'blocked': return 'blocked';
    case 'exempt': return 'exempt';
    default:
  }
  if (!allowed) return d.reason === 'dry-run' ? 'shadow_mode' : 'over_limit';
  return limit - remaining > Math.floor(limit * NEAR) ? 'near_limit' : 'within_limit';
}
