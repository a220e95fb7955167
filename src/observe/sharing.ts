import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { BoundStore } from '../stores/types.js';
import type { HeavyHitter } from './heavyHitters.js';
import { mergeSummaries, type Observer, type SharedSummary } from './observer.js';

/** SHARED_TOP — the clients of each process's summary written to the shared store (bounded: processes × this). */
export const SHARED_TOP = 200;

/**
 * Sharing — writes this process's observation summary to a shared store (Redis) every `every` ms, so that
 * `top()` on any process merges what every process saw. The timer is unref'd (it never keeps the process alive);
 * `stop()` ends it, `flush()` writes now. A summary is read as stale (and dropped) once it is 3 intervals old.
 * Failures are counted in `failures` and remembered in `lastError`, never thrown from the timer.
 */
export class Sharing {
  /** instance — this process's name in the shared store: host, pid and a random part. */
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  failures = 0;
  lastError: Error | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly observer: Observer, private readonly bound: BoundStore, readonly every: number,
    private readonly now: () => number,
  ) {
    this.timer = setInterval(() => {
      this.flush().catch(() => undefined);
    }, every);
    this.timer.unref();
  }

  /** ttl — ms a written summary counts: 3 intervals. */
  get ttl(): number {
    return 3 * this.every;
  }

  /** running — whether the timer is on. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** flush — writes the summary now. Rejects when the store does; the timer's flushes only count failures. */
  async flush(): Promise<void> {
    const s = this.observer.summary(this.instance, this.now(), SHARED_TOP);
    try {
      await this.bound.shareSummary!(this.instance, JSON.stringify({ ...s, ttl: this.ttl }), this.ttl);
    } catch (e) {
      this.failures++;
      this.lastError = e instanceof Error ? e : new Error(String(e));
      throw e;
    }
  }

  /** stop — ends the timer (what was written expires by itself). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** merged — the top `n` over every process's latest summary, this one's taken live. */
  async merged(n: number, now: number, by: 'rate' | 'refused'): Promise<HeavyHitter[]> {
    const texts = await this.bound.sharedSummaries!();
    const list: SharedSummary[] = [this.observer.summary(this.instance, now, Math.max(n, SHARED_TOP))];
    for (const text of texts) {
      const s = parse(text);
      if (s === undefined || s.instance === this.instance || now - s.at > s.ttl) continue;
      list.push(s);
    }
    return mergeSummaries(list, now, n, by);
  }
}

/** parse — a summary as written, or undefined when unreadable (another version, a stray value). */
function parse(text: string): (SharedSummary & { ttl: number }) | undefined {
  try {
    const s = JSON.parse(text) as SharedSummary & { ttl: number };
    if (typeof s !== 'object' || s === null || !Array.isArray(s.entries) || typeof s.at !== 'number' || typeof s.ttl !== 'number') return undefined;
    if (s.halfLife === null) s.halfLife = Infinity;
    return s;
  } catch {
    return undefined;
  }
}
