import type { Limiter, TopEntry } from '../limiter.js';
import type { OverrideEntry } from '../stores/types.js';
import { parseDuration } from '../core/duration.js';
import { RatekeeperError } from '../core/errors.js';
import { BadInput } from './http.js';

/** LISTING_AGE — ms a limiter may reuse its listing of a shared store's blocks and exemptions for the API (a dashboard polls). */
const LISTING_AGE = 1000;

/**
 * KeyOf — how a key typed by an operator is read for one limiter (`10.0.0.1` → `remote_address=10.0.0.1`); without
 * one, the key is taken as it is.
 */
export type KeyOf = (key: string) => string;

/** Named — the limiters the API works on: name → limiter (and its KeyOf), as the options' `limiters` gives them now. */
export type Named = (readonly [name: string, limiter: Limiter] | readonly [name: string, limiter: Limiter, keyOf: KeyOf | undefined])[];

/** keyIn — `key` as limiter `n` reads it. */
function keyIn(n: Named[number], key: string): string {
  const f = n[2];
  return f === undefined ? key : f(key);
}

/** pick — the limiters named by `?limiter=` (or the body's `limiter`), or all of them; an unknown name is bad input. */
export function pick(all: Named, name: unknown): Named {
  if (name === undefined || name === null || name === '') return all;
  if (typeof name !== 'string') throw new BadInput('limiter', 'limiter must be the name of a limiter');
  const found = all.filter(([n]) => n === name);
  if (found.length === 0) throw new BadInput('limiter', `no limiter is named ${JSON.stringify(name)}; the limiters are ${all.map(([n]) => JSON.stringify(n)).join(', ') || 'none'}`);
  return found;
}

/** integer — a query parameter as an integer in [min, max], or its default. */
export function integer(params: URLSearchParams, field: string, dflt: number, min: number, max: number): number {
  const raw = params.get(field);
  if (raw === null) return dflt;
  const x = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(x) || x < min || x > max) throw new BadInput(field, `${field} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return x;
}

/** argument — runs a limiter call, turning its misuse error (a bad key, duration …) into a 400 naming `field`. */
export async function argument<T>(field: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof RatekeeperError) throw new BadInput(field, e.message.replace(/^ratekeeper: /, ''));
    throw e;
  }
}

/** top — GET /admin/top: the heaviest clients of every observing limiter picked, merged, heaviest first. */
export async function top(limiters: Named, params: URLSearchParams): Promise<unknown> {
  const n = integer(params, 'n', 10, 1, 1000);
  const by = params.get('by') ?? 'rate';
  if (by !== 'rate' && by !== 'refused') throw new BadInput('by', `by must be "rate" or "refused", got ${JSON.stringify(by)}`);
  const lists = await Promise.all(limiters.filter(([, l]) => l.observer !== undefined).map(async ([name, l]) => (await l.top({ n, by, maxAge: LISTING_AGE })).map((e) => ({ limiter: name, ...e }))));
  const all: (TopEntry & { limiter: string })[] = lists.flat();
  all.sort(by === 'rate' ? (a, b) => b.rate - a.rate : (a, b) => b.refusedRate - a.refusedRate);
  return { now: Date.now(), by, observed: limiters.filter(([, l]) => l.observer !== undefined).map(([n]) => n), top: all.slice(0, n) };
}

/** inspect — GET /admin/keys/:key: the key in every limiter picked. */
export async function inspect(limiters: Named, key: string): Promise<unknown> {
  const list = await Promise.all(limiters.map(async (n) => {
    const [name, l] = n;
    const k = keyIn(n, key);
    const i = await argument('key', () => l.inspect(k));
    return { limiter: name, key: k, decision: i.decision, override: i.override ?? null, observed: i.observed ?? null };
  }));
  return { key, limiters: list };
}

/** overrides — GET /admin/blocks or /admin/exemptions: every one in force, with its limiter. */
export async function overrides(limiters: Named, kind: 'block' | 'exempt'): Promise<unknown> {
  const lists = await Promise.all(limiters.map(async ([name, l]) => (await (kind === 'block' ? l.blocks({ maxAge: LISTING_AGE }) : l.exemptions({ maxAge: LISTING_AGE }))).map((o: OverrideEntry) => ({ limiter: name, ...o }))));
  const all = lists.flat().sort((a, b) => (b.since ?? 0) - (a.since ?? 0));
  return kind === 'block' ? { blocks: all } : { exemptions: all };
}

/** Change — what a POST or DELETE did, for the reply and the log. */
export interface Change {
  what: 'block' | 'unblock' | 'exempt' | 'unexempt' | 'reset';
  key: string;
  limiters: string[];
  /** keys — by limiter, the key as it read `key` (`remote_address=10.0.0.1` for `10.0.0.1`), when one read it otherwise. */
  keys?: Record<string, string>;
  for?: number;
  reason?: string;
}

/** change — the Change of `what` on `key` in `limiters`, with the keys they read where one differs. */
function change(what: Change['what'], key: string, limiters: Named): Change {
  const c: Change = { what, key, limiters: limiters.map(([n]) => n) };
  let keys: Record<string, string> | undefined;
  for (const n of limiters) {
    const k = keyIn(n, key);
    if (k !== key) (keys ??= {})[n[0]] = k;
  }
  if (keys !== undefined) c.keys = keys;
  return c;
}

/** FIELDS — what each POST body may hold (anything else is named in a 400). */
const FIELDS = { block: new Set(['key', 'for', 'reason', 'limiter']), exempt: new Set(['key', 'for', 'reason', 'limiter']) };

/** add — POST /admin/blocks or /admin/exemptions: `{ key, for?, reason?, limiter? }`. */
export async function add(all: Named, kind: 'block' | 'exempt', b: Record<string, unknown>): Promise<Change> {
  for (const f of Object.keys(b)) {
    if (!FIELDS[kind].has(f)) throw new BadInput(f, `${f} is not a field of ${kind === 'block' ? 'a block' : 'an exemption'}: send ${[...FIELDS[kind]].join(', ')}`);
  }
  const limiters = pick(all, b.limiter);
  const key = b.key;
  if (typeof key !== 'string' || key.length === 0) throw new BadInput('key', 'key must be a non-empty string');
  let ms: number | undefined;
  if (b.for !== undefined && b.for !== null && b.for !== '') {
    ms = await argument('for', async () => parseDuration(b.for as string, 'for'));
    if (!(ms > 0)) throw new BadInput('for', `for must be a duration > 0 like "10m", got ${JSON.stringify(b.for)}`);
  }
  const reason = b.reason;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > 500)) throw new BadInput('reason', 'reason must be a string of at most 500 characters');
  const why = reason === '' ? undefined : reason;
  await Promise.all(limiters.map((n) => {
    const l = n[1];
    const k = keyIn(n, key);
    return argument('key', () => (kind === 'block' ? l.block(k, { for: ms, reason: why }) : l.exempt(k, { for: ms, reason: why })));
  }));
  const c = change(kind, key, limiters);
  if (ms !== undefined) c.for = ms;
  if (typeof reason === 'string' && reason !== '') c.reason = reason;
  return c;
}

/** remove — DELETE /admin/blocks/:key or /admin/exemptions/:key. */
export async function remove(limiters: Named, kind: 'block' | 'exempt', key: string): Promise<Change> {
  await Promise.all(limiters.map((n) => {
    const l = n[1];
    const k = keyIn(n, key);
    return argument('key', () => (kind === 'block' ? l.unblock(k) : l.unexempt(k)));
  }));
  return change(kind === 'block' ? 'unblock' : 'unexempt', key, limiters);
}

/** reset — POST /admin/keys/:key/reset: forgets the key's rule state (not its block or exemption). */
export async function reset(limiters: Named, key: string): Promise<Change> {
  await Promise.all(limiters.map((n) => {
    const k = keyIn(n, key);
    return argument('key', () => n[1].reset(k));
  }));
  return change('reset', key, limiters);
}

/** stats — GET /admin/stats: per limiter, its rules, counters, and series over the last `last` seconds. */
export function stats(limiters: Named, params: URLSearchParams): unknown {
  const last = integer(params, 'last', 3600, 1, 3600);
  const now = Date.now();
  return {
    now,
    limiters: limiters.map(([name, l]) => {
      const rules = l.policy.rules.map((r) => ({ name: r.name, algorithm: r.algorithm, limit: r.limit, per: r.per }));
      if (l.observer === undefined) return { name, rules, observed: false };
      const st = l.stats({ from: now - last * 1000, now });
      return { name, rules, observed: true, step: st.step, outcomes: st.outcomes, refusedByRule: st.rules, series: st.series };
    }),
  };
}
