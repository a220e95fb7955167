import type { Decision } from '../core/types.js';
import { checkOptions } from '../core/options.js';
import { RatekeeperError, show } from '../core/errors.js';
import { HeavyHitters, type HeavyHitter, type HeavyHittersOptions } from './heavyHitters.js';
import { DecisionSeries, OUTCOMES, type OutcomeName, type Series } from './series.js';

/** ObserveOptions — what a limiter remembers of its decisions (`limiter({ observe: { … } })`). */
/** OBSERVE_OPTIONS — the names an observe options object may have. */
const OBSERVE_OPTIONS: ReadonlySet<string> = new Set(['capacity', 'halfLife', 'samples', 'resolution', 'tailAllowed', 'tailRefused', 'share']);

export interface ObserveOptions extends HeavyHittersOptions {
  /**
   * samples — the most requests per second fed into the heavy-hitters summary. Below it every request is; above it
   * each one is, at random, with probability samples / (the previous 100 ms' rate, or this one's once it is over
   * twice the budget), weighted by the inverse, so that
   * rates and counts stay unbiased and observation costs a bounded amount of work however busy the limiter is
   * (the decision counters are always exact). Infinity: every request. @default 10_000
   */
  samples?: number;
  /** resolution — ms per bucket of the decision series over the last hour, 1000 to 10_000. @default 1000 */
  resolution?: number;
  /**
   * tailAllowed — admitted decisions per second sampled into the live tail (refusals are all kept, up to
   * `tailRefused` per second; past it they are counted as skipped). The tail is only filled while watched. @default 10
   */
  tailAllowed?: number;
  /** tailRefused — refusals per second kept in the live tail. @default 500 */
  tailRefused?: number;
  /**
   * share — on a store shared by several processes (Redis), how often (ms) this process writes its summary there so
   * that `top()` merges what every process saw; false: never. A timer (unref'd) stopped by `limiter.close()` or
   * `limiter.sharing.stop()`. Ignored on the memory store. @default 5000
   */
  share?: number | false;
}

/** TailEvent — one decision of the live tail (or, with `skipped`, how many refusals were left out of it). */
export interface TailEvent {
  /** seq — increasing per observer. */
  seq: number;
  /** t — ms. */
  t: number;
  key: string;
  cost: number;
  reason: Decision['reason'];
  allowed: boolean;
  retryAfter: number;
  rate?: number;
  /** rule — the name of the binding rule of a refusal. */
  rule?: string;
  /** skipped — refusals left out since the previous event (over `tailRefused` per second). */
  skipped?: number;
}

/** Stats — the decision counters: totals since the start and the series over the last hour. */
export interface Stats {
  /** step — ms per bucket. */
  step: number;
  /** outcomes — decisions by reason since the limiter was made. */
  outcomes: Record<OutcomeName, number>;
  /** rules — refusals by rule (every rule that said no to a refused or dry-run decision) since the start. */
  rules: Record<string, number>;
  /** series — per outcome and per rule (`refused:<name>`), counts per bucket. */
  series: Record<string, Series>;
}

/** SharedSummary — one process's summary as written to a shared store, decoded. */
export interface SharedSummary {
  /** instance — who wrote it; at — ms, when; halfLife — ms, of its rates. */
  instance: string;
  at: number;
  halfLife: number;
  entries: HeavyHitter[];
}

/** TAIL_SIZE — events kept for watchers to read (a watcher polling 4 times a second reads up to this many at a time). */
const TAIL_SIZE = 2048;

/**
 * Observer — what a limiter remembers of its decisions, beside the hot path: a heavy-hitters summary of its
 * clients (by recent rate), decision counters by outcome and by refusing rule with their series over the last
 * hour, and, while someone watches, a sampled tail of decisions (refusals always). Memory is bounded by the options,
 * whatever the number of clients, and allocated as decisions come (an observer that has seen nothing holds a few
 * hundred bytes): many limits cost memory in proportion to the traffic they see. Pure: the limiter passes every
 * decision and its time.
 */
export class Observer {
  readonly hitters: HeavyHitters;
  readonly series: DecisionSeries;
  readonly ruleNames: readonly string[];
  readonly share: number | false;
  private readonly tailAllowed: number;
  /** budget — requests fed into the summary per 100 ms window at most (samples / 10). */
  private readonly budget: number;
  /** window, seen, keep — the current 100 ms window, requests seen in it, and the probability of feeding one (from the previous window). */
  private window = Number.NaN;
  /** lastT — the latest time recorded (ms): the series' bucket and the window only move when it changes. */
  private lastT = Number.NaN;
  private seen = 0;
  /** recheck — the count of this window at which the probability is checked again (doubling). */
  private recheck = Infinity;
  keep = 1;
  private readonly tailRefused: number;
  /** tail — a ring of the latest events (seq % TAIL_SIZE), growing to TAIL_SIZE as it is filled; filled only while `watchers` > 0. */
  private readonly tail: TailEvent[] = [];
  private seq = 0;
  /** watchers — open watches; the tail costs nothing when 0. */
  watchers = 0;
  /** second, allowedIn, refusedIn, skipped — the tail's sampling budget in the current second. */
  private second = Number.NaN;
  private allowedIn = 0;
  private refusedIn = 0;
  private skipped = 0;

  constructor(ruleNames: readonly string[], options: ObserveOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`observe must be true or an options object, got ${show(options)}`);
    checkOptions(options, OBSERVE_OPTIONS, 'observe');
    this.hitters = new HeavyHitters(options);
    this.ruleNames = ruleNames;
    this.series = new DecisionSeries(OUTCOMES.length + ruleNames.length, options.resolution ?? 1000);
    const samples = options.samples ?? 10_000;
    if (typeof samples !== 'number' || !(samples >= 10)) throw new RatekeeperError(`observe.samples must be a number >= 10 (per second) or Infinity, got ${show(options.samples)}`);
    this.budget = samples / 10;
    this.tailAllowed = count(options.tailAllowed, 10, 'observe.tailAllowed');
    this.tailRefused = count(options.tailRefused, 500, 'observe.tailRefused');
    const share = options.share ?? 5000;
    if (share !== false && (typeof share !== 'number' || !(share >= 100) || share > 2 ** 31 - 1)) {
      throw new RatekeeperError(`observe.share must be a number of ms >= 100 or false, got ${show(options.share)}`);
    }
    this.share = share;
  }

  /** bytes — the fixed memory of the summary and the series (keys aside: at most `capacity` of them are held). */
  get bytes(): number {
    return this.hitters.bytes + this.series.bytes;
  }

  /** record — one decision of `key` for `cost` at `t` (ms). Cost 0 (a look) is not traffic: ignored. */
  record(key: string, cost: number, d: Decision, t: number): void {
    if (!(cost > 0)) return;
    if (t !== this.lastT) this.moveTo(t);
    if (++this.seen === this.recheck) this.burst();
    const keep = this.keep;
    const reason = d.reason;
    if (reason === 'allowed') {
      this.series.bump(0);
      if (keep === 1 || Math.random() < keep) {
        const rate = d.rate;
        this.hitters.add(key, keep === 1 ? cost : cost / keep, t, false, rate === undefined ? Number.NaN : rate);
      }
      if (this.watchers > 0) this.sample(key, cost, d, t, false);
      return;
    }
    const refused = reason !== 'exempt' && !(reason === 'store-unavailable' && d.allowed);
    const series = this.series;
    series.bump(OUTCOMES.indexOf(reason));
    if (reason === 'limited' || reason === 'dry-run') {
      const rules = d.rules;
      for (let i = 0; i < rules.length; i++) if (!rules[i].allowed) series.bump(OUTCOMES.length + i);
    }
    if (keep === 1 || Math.random() < keep) {
      const rate = d.rate;
      this.hitters.add(key, keep === 1 ? cost : cost / keep, t, refused, rate === undefined ? Number.NaN : rate);
    }
    if (this.watchers > 0) this.sample(key, cost, d, t, refused);
  }

  /** moveTo — a new time (ms): the series' bucket and, in a new 100 ms window, the sampling probability. */
  private moveTo(t: number): void {
    this.lastT = t;
    this.series.moveTo(t);
    const w = Math.floor(t / 100);
    if (w !== this.window) this.sampling(w);
  }


  /** top — the `n` heaviest clients at `now`, by recent rate or refused rate. */
  top(n: number, now: number, by: 'rate' | 'refused' = 'rate'): HeavyHitter[] {
    return this.hitters.top(n, now, by);
  }

  /** stats — the counters, and the series from `from` (ms) to `now`. */
  stats(now: number, from?: number): Stats {
    const totals = this.series.totals;
    const columns = this.series.read(now, from);
    const outcomes = {} as Record<OutcomeName, number>;
    const series: Record<string, Series> = {};
    OUTCOMES.forEach((o, i) => {
      outcomes[o] = totals[i];
      series[o] = columns[i];
    });
    const rules: Record<string, number> = {};
    this.ruleNames.forEach((name, i) => {
      rules[name] = totals[OUTCOMES.length + i];
      series[`refused:${name}`] = columns[OUTCOMES.length + i];
    });
    return { step: this.series.step, outcomes, rules, series };
  }

  /**
   * watch — starts filling the tail; `read()` returns the events since the previous read (oldest first; when more
   * than the ring holds arrived meanwhile, the oldest are lost and counted in a `skipped` event), `close()` stops.
   */
  watch(): { read(): TailEvent[]; close(): void } {
    this.watchers++;
    let next = this.seq;
    let open = true;
    return {
      read: () => {
        const out: TailEvent[] = [];
        if (this.seq - next > TAIL_SIZE) {
          out.push({ seq: next, t: 0, key: '', cost: 0, reason: 'limited', allowed: false, retryAfter: 0, skipped: this.seq - next - TAIL_SIZE });
          next = this.seq - TAIL_SIZE;
        }
        for (; next < this.seq; next++) out.push(this.tail[next % TAIL_SIZE] as TailEvent);
        return out;
      },
      close: () => {
        if (open) this.watchers--;
        open = false;
      },
    };
  }

  /** summary — this process's top `n` at `now`, for a shared store. */
  summary(instance: string, now: number, n: number): SharedSummary {
    return { instance, at: now, halfLife: this.hitters.halfLife, entries: this.hitters.top(n, now) };
  }

  /** sampling — a new 100 ms window: the probability of feeding a request is the budget over the previous window's count. */
  private sampling(w: number): void {
    this.keep = w === this.window + 1 && this.seen > this.budget ? this.budget / this.seen : 1;
    this.window = w;
    this.seen = 0;
    this.recheck = 2 * this.budget;
  }

  /** burst — this window has seen twice the budget again: the probability drops at once (a burst after a quiet window). */
  private burst(): void {
    const k = this.budget / this.seen;
    if (k < this.keep) this.keep = k;
    this.recheck *= 2;
  }

  private sample(key: string, cost: number, d: Decision, t: number, refused: boolean): void {
    const s = Math.floor(t / 1000);
    if (s !== this.second) {
      this.second = s;
      this.allowedIn = this.refusedIn = 0;
    }
    if (refused) {
      if (this.refusedIn >= this.tailRefused) {
        this.skipped++;
        return;
      }
      this.refusedIn++;
    } else {
      if (this.allowedIn >= this.tailAllowed) return;
      this.allowedIn++;
    }
    const e: TailEvent = { seq: this.seq, t, key, cost, reason: d.reason, allowed: d.allowed, retryAfter: d.retryAfter };
    if (d.rate !== undefined) e.rate = d.rate;
    if (d.reason === 'limited' || d.reason === 'dry-run') {
      // the binding rule: the refusing one with the longest wait
      let wait = -1;
      for (const r of d.rules) if (!r.allowed && r.retryAfter > wait) {
        wait = r.retryAfter;
        e.rule = r.name;
      }
    }
    if (this.skipped > 0) {
      e.skipped = this.skipped;
      this.skipped = 0;
    }
    this.tail[this.seq % TAIL_SIZE] = e;
    this.seq++;
  }
}

function count(x: unknown, dflt: number, where: string): number {
  if (x === undefined) return dflt;
  if (!Number.isSafeInteger(x) || (x as number) < 0) throw new RatekeeperError(`${where} must be an integer >= 0, got ${show(x)}`);
  return x as number;
}

/**
 * mergeSummaries — the top `n` of several processes' summaries (each decayed from its `at` to `now`): a client's
 * rates and counts add up (each process saw part of its traffic), firstSeen is the earliest, lastSeen the latest.
 */
export function mergeSummaries(summaries: readonly SharedSummary[], now: number, n: number, by: 'rate' | 'refused' = 'rate'): HeavyHitter[] {
  const merged = new Map<string, HeavyHitter>();
  for (const s of summaries) {
    const f = s.halfLife === Infinity || !(now > s.at) ? 1 : Math.exp((-Math.LN2 * (now - s.at)) / s.halfLife);
    for (const e of s.entries) {
      const m = merged.get(e.key);
      if (m === undefined) {
        const c: HeavyHitter = { ...e, rate: e.rate * f, error: e.error * f, refusedRate: e.refusedRate * f };
        merged.set(e.key, c);
        continue;
      }
      m.rate += e.rate * f;
      m.error += e.error * f;
      m.refusedRate += e.refusedRate * f;
      m.requests += e.requests;
      m.refused += e.refused;
      m.firstSeen = Math.min(m.firstSeen, e.firstSeen);
      if (e.lastSeen > m.lastSeen) {
        m.lastSeen = e.lastSeen;
        if (e.measured !== undefined) m.measured = e.measured;
      }
    }
  }
  const list = [...merged.values()];
  if (by === 'refused') {
    list.sort((a, b) => b.refusedRate - a.refusedRate);
    return list.filter((e) => e.refusedRate > 0).slice(0, n);
  }
  list.sort((a, b) => b.rate - a.rate);
  return list.slice(0, n);
}
