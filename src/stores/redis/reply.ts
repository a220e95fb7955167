/**
 * reply — the layout of a policy script's reply (lua/policy.lua), in one place for the composer that writes it
 * (compose/replyShape.ts and compose/rule.ts: which values a rule packs, the struct formats) and the decoder that reads it (ReplyReader, here).
 * A reply is little-endian doubles:
 *
 *   outcome                      1 double: 0 refused, 1 admitted, 2 blocked, 3 exempt (an override in force)
 *   per rule                     admits (1/0), remaining, retryAfter, resetAfter, and its measure if it has one
 *                                (a rate: earrrl, exponential; a delay: leakyBucket) — RULE_DOUBLES + 0 or 1
 *   without an override          the server's clock (ms; −1 when the script did not read it)     — TAIL_DOUBLES
 *   with an override (2, 3)      now, the override's end, the server's clock                    — LIVE_TAIL_DOUBLES
 *                                then, when it has a reason, 'r' and the reason's UTF-8 bytes
 *
 * (Beyond FLAT_RULES rules the composer packs each rule's part on its own: the bytes are the same.)
 */
import type { Algorithm, Decision, Override, RuleOutcome } from '../../core/types.js';
import { Outcome, type Policy } from '../../core/policy.js';

/** Measure — what a rule's part carries beyond the four doubles: NONE, RATE (earrrl, exponential) or DELAY (leakyBucket). */
export const NONE = 0;
export const RATE = 1;
export const DELAY = 2;
export type Measure = typeof NONE | typeof RATE | typeof DELAY;

/** measureOf — the measure a rule of algorithm `a` carries in the reply. */
export function measureOf(a: Algorithm): Measure {
  return a === 'earrrl' || a === 'exponential' ? RATE : a === 'leakyBucket' ? DELAY : NONE;
}

/** HEAD_DOUBLES — before the rules: the outcome. RULE_DOUBLES — a rule's part without its measure. */
export const HEAD_DOUBLES = 1;
export const RULE_DOUBLES = 4;
/** TAIL_DOUBLES — after the rules without an override: the clock; LIVE_TAIL_DOUBLES — with one: now, end, clock. */
export const TAIL_DOUBLES = 1;
export const LIVE_TAIL_DOUBLES = 3;

/** ruleBytes — the bytes of the part of a rule of measure `m`. */
const ruleBytes = (m: Measure): number => 8 * (RULE_DOUBLES + (m === NONE ? 0 : 1));

/**
 * ReplyReader — reads one policy's replies: its rules' measures and where the rules' part ends (`rulesBytes`: an
 * override's now, end and reason, or the server's clock, follow).
 */
export class ReplyReader {
  /** measures — per rule, its Measure. */
  readonly measures: Uint8Array;
  /** rulesBytes — the bytes of the outcome and the rules' parts. */
  readonly rulesBytes: number;
  /** replyBytes — the length of a reply without an override (outcome 0 or 1): the rules' part and the clock. */
  readonly replyBytes: number;

  constructor(readonly policy: Policy) {
    this.measures = new Uint8Array(policy.rules.map((r) => measureOf(r.algorithm)));
    this.rulesBytes = 8 * HEAD_DOUBLES + this.measures.reduce((a, m) => a + ruleBytes(m as Measure), 0);
    this.replyBytes = this.rulesBytes + 8 * TAIL_DOUBLES;
  }

  /** kind — the outcome: 0 refused, 1 admitted, 2 blocked, 3 exempt. */
  kind(reply: Buffer): number {
    return reply.readDoubleLE(0);
  }

  /** wallOf — the server's clock in a reply (ms; −1 when the script did not read it): after the rules' part, and after now and the end for an override. */
  wallOf(reply: Buffer): number {
    return reply.length < this.rulesBytes + 8 ? -1 : reply.readDoubleLE(reply.readDoubleLE(0) < 2 ? this.rulesBytes : this.rulesBytes + 16);
  }

  /** overrideNow, overrideUntil, overrideReason — an override's reply (kind 2 or 3): the check's time, the override's end (ms), its reason. */
  overrideNow(reply: Buffer): number {
    return reply.readDoubleLE(this.rulesBytes);
  }

  overrideUntil(reply: Buffer): number {
    return reply.readDoubleLE(this.rulesBytes + 8);
  }

  overrideReason(reply: Buffer): string | undefined {
    const j = this.rulesBytes;
    return reply.length > j + 24 ? reply.toString('utf8', j + 25) : undefined;
  }

  /** decision — the Decision a reply says, built by the policy's shared code (a batch's replies share one buffer: the reply is reply[at, end)). */
  decision(reply: Buffer, at = 0, end = reply.length): Decision {
    const policy = this.policy;
    const rules = policy.rules;
    const measures = this.measures;
    const count = rules.length;
    const outcomes = new Array<RuleOutcome>(count);
    let j = at + 8 * HEAD_DOUBLES;
    for (let i = 0; i < count; i++) {
      const c = rules[i];
      const m = measures[i];
      const extra = m === NONE ? undefined : reply.readDoubleLE(j + 32);
      outcomes[i] = new Outcome(
        c.name, c.algorithm, reply.readDoubleLE(j) === 1, c.limit, reply.readDoubleLE(j + 8), reply.readDoubleLE(j + 16),
        reply.readDoubleLE(j + 24), m === RATE ? extra : undefined, m === DELAY ? extra : undefined,
      );
      j += m === NONE ? 32 : 40;
    }
    const kind = reply.readDoubleLE(at);
    if (kind < 2) return policy.finish(outcomes, kind === 1);
    const override: Override = { kind: kind === 2 ? 'block' : 'exempt', until: reply.readDoubleLE(j + 8) };
    if (end > j + 24) override.reason = reply.toString('utf8', j + 25, end);
    return policy.overrideDecision(outcomes, override, reply.readDoubleLE(j));
  }
}
