import { HEAD_DOUBLES, LIVE_TAIL_DOUBLES, TAIL_DOUBLES } from '../reply.js';
import type { RuleCode } from './rule.js';

/**
 * replyShape — the one place that decides the reply's shape (the layout policy.lua documents and the store decodes):
 * which values each rule packs and how the three returns (live override, admitted, refused) are packed. Up to
 * FLAT_RULES rules the reply is one struct.pack of locals; beyond, each rule packs its own part into p… inside its
 * report block (Lua's 200 locals), and the reply concatenates the parts. The counts of doubles around the rules'
 * part come from the layout the decoder reads (../reply.ts), so the two cannot drift apart.
 */

/** FLAT_RULES — up to this many rules the reply is one struct.pack of locals; beyond, each rule packs its own part. */
export const FLAT_RULES = 8;

/**
 * ReplyShape — per rule, the locals its reply values live in (declared with the policy's) and the lines that open
 * and close its report block; the three returns as Lua expressions: `live` (outcome okind, the rules' values, now,
 * the override's end, the server's clock), `admit` and `refuse` (outcome 1 or 0, the rules' values, the clock).
 */
export interface ReplyShape {
  readonly locals: readonly (readonly string[])[];
  readonly open: readonly (readonly string[])[];
  readonly close: readonly (readonly string[])[];
  readonly live: string;
  readonly admit: string;
  readonly refuse: string;
}

/** replyShape — the reply's shape for the policy's rules (RuleCode.values, in order). */
export function replyShape(rules: readonly RuleCode[]): ReplyShape {
  if (rules.length <= FLAT_RULES) {
    const values = rules.flatMap((r) => r.values).join(', ');
    const fmt = (k: number): string => `<${'d'.repeat(k + rules.reduce((n, r) => n + r.values.length, 0))}`;
    return {
      locals: rules.map((r) => [`rem${r.i}`, `wait${r.i}`, `reset${r.i}`]),
      open: rules.map(() => []),
      close: rules.map(() => []),
      live: `pack('${fmt(HEAD_DOUBLES + LIVE_TAIL_DOUBLES)}', okind, ${values}, now, ountil, wall)`,
      admit: `pack('${fmt(HEAD_DOUBLES + TAIL_DOUBLES)}', 1, ${values}, wall)`,
      refuse: `pack('${fmt(HEAD_DOUBLES + TAIL_DOUBLES)}', 0, ${values}, wall)`,
    };
  }
  const parts = rules.map((r) => `p${r.i}`).join(' .. ');
  const head = `<${'d'.repeat(HEAD_DOUBLES)}`;
  const tail = `<${'d'.repeat(TAIL_DOUBLES)}`;
  const liveTail = `<${'d'.repeat(LIVE_TAIL_DOUBLES)}`;
  return {
    locals: rules.map((r) => [`p${r.i}`]),
    open: rules.map((r) => [`  local rem${r.i}, wait${r.i}, reset${r.i}`]),
    close: rules.map((r) => [`  p${r.i} = pack('<${'d'.repeat(r.values.length)}', ${r.values.join(', ')})`]),
    live: `pack('${head}', okind) .. ${parts} .. pack('${liveTail}', now, ountil, wall)`,
    admit: `pack('${head}', 1) .. ${parts} .. pack('${tail}', wall)`,
    refuse: `pack('${head}', 0) .. ${parts} .. pack('${tail}', wall)`,
  };
}
