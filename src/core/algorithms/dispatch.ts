import type { Rule } from './common.js';
import { FixedWindow } from './fixedWindow.js';
import { SlidingWindow } from './slidingWindow.js';
import { TokenBucket } from './tokenBucket.js';
import { LeakyBucket } from './leakyBucket.js';
import { Gcra } from './gcra.js';
import { Earrrl } from './earrrl.js';
import { Exponential } from './exponential.js';

/**
 * The calls a policy makes on its rules, dispatched by a switch on the rule's class so that every call site sees one
 * class only. A plain `rule.next(…)` in the policy's loop sees every algorithm a process uses and turns megamorphic
 * (no inlining, a slow lookup per call): with four algorithms in play that alone costs about a third of a check.
 */
export const enum Kind { FixedWindow, SlidingWindow, TokenBucket, LeakyBucket, Gcra, Earrrl, Exponential }

export function kindOf(m: Rule): Kind {
  if (m instanceof FixedWindow) return Kind.FixedWindow;
  if (m instanceof SlidingWindow) return Kind.SlidingWindow;
  if (m instanceof LeakyBucket) return Kind.LeakyBucket;
  if (m instanceof TokenBucket) return Kind.TokenBucket;
  if (m instanceof Gcra) return Kind.Gcra;
  if (m instanceof Earrrl) return Kind.Earrrl;
  if (m instanceof Exponential) return Kind.Exponential;
  throw new Error(`ratekeeper: no dispatch for ${m.config.algorithm}`);
}

export function next(k: Kind, m: Rule, s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
  switch (k) {
    case Kind.FixedWindow: return (m as FixedWindow).next(s, o, now, cost, n, no);
    case Kind.SlidingWindow: return (m as SlidingWindow).next(s, o, now, cost, n, no);
    case Kind.TokenBucket: return (m as TokenBucket).next(s, o, now, cost, n, no);
    case Kind.LeakyBucket: return (m as LeakyBucket).next(s, o, now, cost, n, no);
    case Kind.Gcra: return (m as Gcra).next(s, o, now, cost, n, no);
    case Kind.Earrrl: return (m as Earrrl).next(s, o, now, cost, n, no);
    case Kind.Exponential: return (m as Exponential).next(s, o, now, cost, n, no);
  }
}

export function report(k: Kind, m: Rule, s: Float64Array, o: number, now: number): void {
  switch (k) {
    case Kind.FixedWindow: return (m as FixedWindow).report(s, o, now);
    case Kind.SlidingWindow: return (m as SlidingWindow).report(s, o, now);
    case Kind.TokenBucket: return (m as TokenBucket).report(s, o, now);
    case Kind.LeakyBucket: return (m as LeakyBucket).report(s, o, now);
    case Kind.Gcra: return (m as Gcra).report(s, o, now);
    case Kind.Earrrl: return (m as Earrrl).report(s, o, now);
    case Kind.Exponential: return (m as Exponential).report(s, o, now);
  }
}

export function wait(k: Kind, m: Rule, s: Float64Array, o: number, now: number, cost: number): number {
  switch (k) {
    case Kind.FixedWindow: return (m as FixedWindow).wait(s, o, now, cost);
    case Kind.SlidingWindow: return (m as SlidingWindow).wait(s, o, now, cost);
    case Kind.TokenBucket: return (m as TokenBucket).wait(s, o, now, cost);
    case Kind.LeakyBucket: return (m as LeakyBucket).wait(s, o, now, cost);
    case Kind.Gcra: return (m as Gcra).wait(s, o, now, cost);
    case Kind.Earrrl: return (m as Earrrl).wait(s, o, now);
    case Kind.Exponential: return (m as Exponential).wait(s, o, now, cost);
  }
}

export function refund(k: Kind, m: Rule, s: Float64Array, o: number, now: number, cost: number): void {
  switch (k) {
    case Kind.FixedWindow: return (m as FixedWindow).refund(s, o, now, cost);
    case Kind.SlidingWindow: return (m as SlidingWindow).refund(s, o, now, cost);
    case Kind.TokenBucket: return (m as TokenBucket).refund(s, o, now, cost);
    case Kind.LeakyBucket: return (m as LeakyBucket).refund(s, o, now, cost);
    case Kind.Gcra: return (m as Gcra).refund(s, o, now, cost);
    case Kind.Earrrl: return (m as Earrrl).refund(s, o, now, cost);
    case Kind.Exponential: return (m as Exponential).refund(s, o, now, cost);
  }
}
