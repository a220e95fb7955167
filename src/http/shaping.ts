/**
 * http/shaping — the middleware's `shaping: { maxDelay }`: requests a leakyBucket rule admits with a `delay` are held
 * that long (nginx `limit_req` without `nodelay`), and one that would wait longer than the bound is refused uncharged.
 * What a decision's `remaining` and a refusal look like under the bound, and the per-key order of an asynchronous
 * store's look-then-charge; the core (core.ts) asks it, the adapters hold the request.
 */
import type { Decision, RuleOutcome } from '../core/types.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptions } from '../core/options.js';
import { parseDuration, type Duration } from '../core/duration.js';

const SHAPING_OPTIONS: ReadonlySet<string> = new Set(['maxDelay']);

const noop = (): void => undefined;

/** Shaping — the bound (`maxDelay`, ms) on one middleware's policy, and the shaped checks in flight per key. */
export class Shaping {
  /**
   * implied — every leakyBucket rule's burst already keeps its delay within the bound (a delay is at most
   * burst/rate): then no look is needed before the charge, and no race with another process either.
   */
  readonly implied: boolean;
  /** chains — per key, the tail of the shaped checks in flight (asynchronous stores only); removed when idle. */
  private readonly chains = new Map<string, Promise<void>>();

  /**
   * @param maxDelay — the bound, ms.
   * @param leaky — indexes of the policy's leakyBucket rules (the ones that report a delay).
   */
  private constructor(readonly maxDelay: number, private readonly rules: readonly RuleConfig[], private readonly leaky: number[]) {
    this.implied = leaky.every((i) => (rules[i].burst * rules[i].per) / rules[i].limit <= maxDelay);
  }

  /** of — the `shaping` option checked against the policy's `rules` (`where` names the options object); undefined: off. */
  static of(shaping: { maxDelay: Duration } | undefined, rules: readonly RuleConfig[], where: string): Shaping | undefined {
    if (shaping === undefined) return undefined;
    if (typeof shaping === 'object' && shaping !== null) checkOptions(shaping, SHAPING_OPTIONS, `${where}.shaping`);
    if (typeof shaping !== 'object' || shaping === null || shaping.maxDelay === undefined) {
      throw new RatekeeperError(`shaping must be { maxDelay: <duration> }: the bound is explicit, got ${show(shaping)}`);
    }
    const leaky: number[] = [];
    rules.forEach((r, i) => { if (r.algorithm === 'leakyBucket') leaky.push(i); });
    if (leaky.length === 0) throw new RatekeeperError(`shaping needs a leakyBucket rule in the policy: only it reports a delay`);
    return new Shaping(parseDuration(shaping.maxDelay, 'shaping.maxDelay'), rules, leaky);
  }

  /**
   * remaining — an admitted decision's `remaining` as shaping makes it true: a leakyBucket rule whose burst
   * allows more than the bound lets through only the requests whose delay stays within `maxDelay`. After this
   * request the rule's queue holds `level` = delay·rate + cost; the j-th further cost-1 request would wait
   * (level + j − 1)/rate (less, if some drains first), so j <= maxDelay·rate − level + 1 of them pass.
   */
  remaining(d: Decision, cost: number): Decision {
    if (d.reason !== 'allowed') return d;
    const bound = this.maxDelay;
    let remaining = d.remaining;
    let rules: RuleOutcome[] | undefined;
    for (const i of this.leaky) {
      const r = d.rules[i];
      const c = this.rules[i];
      if (r === undefined || c === undefined) continue;
      const rate = c.limit / c.per;
      const level = (r.delay ?? 0) * rate + cost;
      const fits = Math.max(0, Math.floor(bound * rate - level + 1 + 1e-6));
      if (fits >= r.remaining) continue;
      rules ??= d.rules.slice();
      rules[i] = { ...r, remaining: fits };
      if (fits < remaining) remaining = fits;
    }
    return rules === undefined ? d : { ...d, remaining, rules };
  }

  /** over — the refusal of a request whose shaping delay (seen by a cost-0 look) would pass the bound; undefined: within it. */
  over(peek: Decision): Decision | undefined {
    if (!peek.allowed || peek.reason === 'exempt' || !((peek.delay ?? 0) > this.maxDelay)) return undefined;
    return this.refusal(peek);
  }

  /**
   * refusal — an admitted decision whose delay is over the bound, as the refusal it becomes: the leaky rules whose
   * queue is too long are the violated ones, with r=0 until the queue is back under the bound.
   */
  refusal(d: Decision): Decision {
    const bound = this.maxDelay;
    const rules = d.rules.map((r, i) => {
      if (!this.leaky.includes(i) || !((r.delay ?? 0) > bound)) return r;
      return { ...r, allowed: false, remaining: 0, retryAfter: (r.delay as number) - bound };
    });
    return { ...d, allowed: false, reason: 'limited', remaining: 0, retryAfter: (d.delay as number) - bound, rules };
  }

  /**
   * serial — runs `fn` after every earlier shaped check of `key` in this process has finished, so that the look
   * and the charge of one request are not interleaved with another's (an asynchronous store answers in between).
   */
  serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(key);
    const run = prev === undefined ? fn() : prev.then(fn, fn);
    const tail = run.then(noop, noop);
    this.chains.set(key, tail);
    tail.then(() => { if (this.chains.get(key) === tail) this.chains.delete(key); });
    return run;
  }
}
