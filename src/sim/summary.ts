import type { ReplayResult, RequestRecord } from './replay.js';

/**
 * Lockout — a stretch during which a client got nothing through: from a refused request that followed an admitted
 * one (or started the trace) to the next admitted request.
 */
export interface Lockout {
  /** from — ms: the first refused request of the stretch ("locked out at"). */
  from: number;
  /** to — ms: the next admitted request ("let back in at"); undefined when none came before the trace ended. */
  to?: number;
  /** refused — requests refused in the stretch. */
  refused: number;
}

/** KeySummary — what one limiter did to one key. */
export interface KeySummary {
  limiter: string;
  key: string;
  /** sent, admitted — cost units. */
  sent: number;
  admitted: number;
  requests: number;
  refused: number;
  lockouts: Lockout[];
}

/** summarize — per limiter and key (in the replay's order): counts and lockouts. */
export function summarize(result: ReplayResult): KeySummary[] {
  const out: KeySummary[] = [];
  const byKey = new Map<string, KeySummary>();
  for (const l of result.limiters) {
    for (const key of result.keys) {
      const s: KeySummary = { limiter: l.name, key, sent: 0, admitted: 0, requests: 0, refused: 0, lockouts: [] };
      byKey.set(`${l.name}\u0000${key}`, s);
      out.push(s);
    }
  }
  for (const r of result.requests) add(byKey.get(`${r.limiter}\u0000${r.key}`) as KeySummary, r);
  return out;
}

function add(s: KeySummary, r: RequestRecord): void {
  s.requests++;
  s.sent += r.sent;
  s.admitted += r.admitted;
  const open = s.lockouts.length > 0 && s.lockouts[s.lockouts.length - 1].to === undefined ? s.lockouts[s.lockouts.length - 1] : undefined;
  if (r.allowed) {
    if (open) open.to = r.t;
    return;
  }
  s.refused++;
  if (open) open.refused++;
  else s.lockouts.push({ from: r.t, refused: 1 });
}

/** seconds — ms as seconds for people: `12.5 s`. */
export function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(2)} s`;
}

/**
 * describe — one line per limiter and key, e.g. `abuser: sent 401, admitted 89 (22.2 %); locked out at 26.95 s,
 * let back in at 256 s (312 refused)`. Times are printed as seconds since `origin` (ms).
 */
export function describe(summaries: readonly KeySummary[], options: { maxKeys?: number; origin?: number } = {}): string[] {
  const maxKeys = options.maxKeys ?? 10;
  const origin = options.origin ?? 0;
  const lockout = (l: Lockout): string => l.to === undefined
    ? `locked out at ${seconds(l.from - origin)} and never let back in (${l.refused} refused)`
    : `locked out at ${seconds(l.from - origin)}, let back in at ${seconds(l.to - origin)} (${l.refused} refused)`;
  const stretch = (l: Lockout): string => `${seconds(l.from - origin)} → ${l.to === undefined ? 'end' : seconds(l.to - origin)}`;
  const lines: string[] = [];
  const limiters = [...new Set(summaries.map((s) => s.limiter))];
  for (const name of limiters) {
    const mine = summaries.filter((s) => s.limiter === name);
    lines.push(`${name}:`);
    const shown = [...mine].sort((a, b) => b.sent - a.sent).slice(0, maxKeys);
    for (const s of mine) {
      if (!shown.includes(s)) continue;
      const pct = s.sent > 0 ? ` (${((100 * s.admitted) / s.sent).toFixed(1)} %)` : '';
      let story: string;
      if (s.lockouts.length === 0) story = 'never refused';
      else if (s.lockouts.length === 1) story = lockout(s.lockouts[0]);
      else {
        const longest = s.lockouts.reduce((a, b) => (span(b) > span(a) ? b : a));
        const last = s.lockouts[s.lockouts.length - 1];
        story = `locked out ${s.lockouts.length} times; ${longest === last ? '' : `longest: ${stretch(longest)}; `}last: ${stretch(last)}`;
      }
      lines.push(`  ${s.key}: sent ${round(s.sent)}, admitted ${round(s.admitted)}${pct}; ${story}`);
    }
    if (shown.length < mine.length) lines.push(`  … and ${mine.length - shown.length} more keys (see the CSV)`);
  }
  return lines;
}



function span(l: Lockout): number {
  return (l.to ?? Infinity) - l.from;
}

function round(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2);
}
