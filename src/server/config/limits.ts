/**
 * limits — a descriptor's `rate_limit` (or `rate_limits` list) → rules: envoyproxy/ratelimit's fields (`unit`,
 * `requests_per_unit`, `unlimited`, `name`, `replaces`) and ratekeeper's (`algorithm`, `per`, `burst`, `half_life`,
 * `accounting`). A rate_limit without an algorithm is a fixed window of its unit, aligned to the epoch, as envoy's.
 * Rules are built by `ruleOf`, so a bad value gets the library's message, wrapped with the file and path.
 */
import type { Node } from 'yaml';
import type { Accounting, Algorithm } from '../../core/types.js';
import type { RuleConfig } from '../../core/algorithms/common.js';
import { ALGORITHMS, ruleOf } from '../../core/rules.js';
import { Policy } from '../../core/policy.js';
import { parseDuration } from '../../core/duration.js';
import { show } from '../../core/errors.js';
import { didYouMean } from '../../core/options.js';
import { libraryMessage } from './errors.js';
import { rateReport, UNIT_MS, unitOf, type EnvoyUnit } from '../envoy.js';
import { fields, items, lineOf, scalar, text, toJs, unknownFields, type At, type Field, type Fields } from './yaml.js';

/** RATE_LIMIT_FIELDS — the fields of a rate_limit: envoy's, then ratekeeper's. */
export const RATE_LIMIT_FIELDS: ReadonlySet<string> = new Set([
  'unit', 'requests_per_unit', 'unlimited', 'name', 'replaces',
  'algorithm', 'per', 'burst', 'half_life', 'halfLife', 'accounting',
]);
const HINTS: Readonly<Record<string, string>> = {
  limit: 'requests_per_unit', requests: 'requests_per_unit', requestsPerUnit: 'requests_per_unit', rate: 'requests_per_unit',
  period: 'per', window: 'per', interval: 'per', duration: 'per',
  shadow_mode: 'shadow_mode on the descriptor, beside rate_limit', dry_run: 'shadow_mode on the descriptor, beside rate_limit',
  dryRun: 'shadow_mode on the descriptor, beside rate_limit', algo: 'algorithm', strategy: 'algorithm', type: 'algorithm',
};

/** ALGORITHM_BY_NAME — an algorithm by its name lower-cased without `-`/`_`: `sliding-window`, `token_bucket`, `GCRA`. */
const ALGORITHM_BY_NAME = new Map<string, Algorithm>(ALGORITHMS.map((a) => [a.toLowerCase(), a]));
const KEBAB = ALGORITHMS.map((a) => a.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`));

/** algorithmOf — an algorithm written in camelCase, kebab-case, snake_case or any case; reports anything else. */
export function algorithmOf(at: At, f: Field): Algorithm | undefined {
  const name = text(at, f);
  if (name === undefined) return undefined;
  const a = ALGORITHM_BY_NAME.get(name.toLowerCase().replace(/[-_\s]/g, ''));
  if (a === undefined) {
    at.src.issues.add(at.src.file, f.line, at.path, f.key, name,
      `${f.key} ${show(name)} is not an algorithm${didYouMean(name, [...ALGORITHMS, ...KEBAB])}: use one of ${KEBAB.join(', ')}`);
  }
  return a;
}

/** durationOf — a duration field (`per`, `half_life`) written with its unit: `'5m'`, `'90s'`, `'1.5h'`. */
export function durationOf(at: At, f: Field): number | undefined {
  const v = scalar(at, f, 'a duration such as 5m');
  if (v === undefined) return undefined;
  if (typeof v === 'number') {
    at.src.issues.add(at.src.file, f.line, at.path, f.key, v,
      `${f.key} must be a duration with its unit, such as 500ms, 10s, 5m, 2h or 1d (a bare number is ambiguous), got ${v}`);
    return undefined;
  }
  try {
    return parseDuration(v, f.key);
  } catch (e) {
    at.src.issues.add(at.src.file, f.line, at.path, f.key, v, libraryMessage(e));
    return undefined;
  }
}

/** halfLifeField — `half_life` or `halfLife` (one of them), reporting both together. */
export function halfLifeField(at: At, f: Fields): Field | undefined {
  const a = f.get('half_life');
  const b = f.get('halfLife');
  if (a !== undefined && b !== undefined) {
    at.src.issues.add(at.src.file, b.line, at.path, 'halfLife', toJs(at.src, b.value), 'half_life and halfLife are one field: give it once');
  }
  return a ?? b;
}

/** accountingOf — `leaky` or `strict`. */
export function accountingOf(at: At, f: Field): Accounting | undefined {
  const v = text(at, f);
  if (v === undefined) return undefined;
  if (v !== 'leaky' && v !== 'strict') {
    at.src.issues.add(at.src.file, f.line, at.path, f.key, v, `${f.key} must be leaky or strict, got ${show(v)}`);
    return undefined;
  }
  return v;
}

/** PRINTABLE_ASCII — what a rule's name may hold: an sf-string of the RateLimit-Policy field (RFC 8941 3.3.3). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** buildRule — ruleOf with the library's error re-addressed to the YAML field it came from. */
export function buildRule(
  at: At, algorithm: Algorithm, options: Record<string, unknown>, spelled: Readonly<Record<string, Field | undefined>>, fallbackLine: number,
): RuleConfig | undefined {
  const name = options.name;
  if (typeof name === 'string' && !PRINTABLE_ASCII.test(name)) {
    const f = spelled.name;
    at.src.issues.add(at.src.file, f?.line ?? fallbackLine, at.path, f?.key ?? 'name', name,
      `name ${show(name)} must be printable ASCII (no control characters): it names the rule in the RateLimit-Policy and RateLimit header fields`);
    return undefined;
  }
  try {
    return ruleOf(algorithm, options as never);
  } catch (e) {
    const msg = libraryMessage(e);
    const field = /^\w+\.(\w+)/.exec(msg)?.[1] ?? '';
    const f = spelled[field];
    at.src.issues.add(at.src.file, f?.line ?? fallbackLine, at.path, f?.key ?? field, f ? toJs(at.src, f.value) : options[field], msg);
    return undefined;
  }
}

/** LimitItem — one parsed rate_limit (or item of rate_limits). */
interface LimitItem {
  rule?: RuleConfig;
  unlimited: boolean;
  denyAll: boolean;
  name?: string;
  replaces: string[];
  report?: { requestsPerUnit: number; unit: EnvoyUnit };
}

/** Parsed — what a descriptor's limit fields make, before the node's flags are added. */
export interface Parsed {
  rules: RuleConfig[];
  unlimited: boolean;
  denyAll: boolean;
  name?: string;
  replaces: string[];
  report?: { requestsPerUnit: number; unit: EnvoyUnit };
}

/** requestsOf — `requests_per_unit`: an integer from 0 to 2^32 − 1 (rls.proto's uint32). */
function requestsOf(at: At, f: Field): number | undefined {
  const v = scalar(at, f, 'a whole number');
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffff_ffff) {
    at.src.issues.add(at.src.file, f.line, at.path, f.key, v, `${f.key} must be a whole number from 0 to 4294967295, got ${show(v)}`);
    return undefined;
  }
  return v;
}

/** replacesOf — `replaces: [{ name }]`: names, none empty. */
function replacesOf(at: At, f: Field): string[] {
  const list = f.value === null ? [] : items(at, f.value, f.key, 'a list of { name: … }');
  const out: string[] = [];
  (list ?? []).forEach((node, i) => {
    const where = `${f.key}[${i}]`;
    const r = fields({ ...at, line: lineOf(at.src, node, f.line) }, node, where, 'a map like { name: other_limit }');
    if (r === undefined) return;
    unknownFields(at, r, new Set(['name']), where);
    const n = r.get('name');
    const name = n === undefined ? '' : text(at, n);
    if (name === undefined) return;
    if (name === '') {
      at.src.issues.add(at.src.file, n?.line ?? lineOf(at.src, node, f.line), at.path, `${where}.name`, name,
        `${where}.name is empty: a replaces entry names the rate_limit it replaces`);
      return;
    }
    out.push(name);
  });
  return out;
}

/** item — one rate_limit map; `inList` for an item of rate_limits. */
function item(at: At, node: Node | null, where: string, inList: boolean): LimitItem | undefined {
  const f = fields(at, node, where, 'a map like { unit: second, requests_per_unit: 10 }');
  if (f === undefined) return undefined;
  unknownFields(at, f, RATE_LIMIT_FIELDS, where, HINTS);
  const line = lineOf(at.src, node, at.line);
  const before = at.src.issues.size;
  const uf = f.get('unlimited');
  let unlimited = false;
  if (uf !== undefined) {
    const v = scalar(at, uf, 'true or false');
    if (v !== null && typeof v !== 'boolean' && v !== undefined) {
      at.src.issues.add(at.src.file, uf.line, at.path, 'unlimited', v, `unlimited must be true or false, got ${show(v)}`);
    }
    unlimited = v === true;
  }
  const nf = f.get('name');
  const name = nf === undefined ? undefined : text(at, nf) || undefined;
  const replaces = f.get('replaces') === undefined ? [] : replacesOf(at, f.get('replaces')!);
  for (const r of replaces) {
    if (name !== undefined && r === name) {
      at.src.issues.add(at.src.file, f.get('replaces')!.line, at.path, 'replaces', r,
        `replaces names this rate_limit itself (${show(name)}): a limit cannot replace itself`);
    }
  }
  const limitFields = ['unit', 'per', 'requests_per_unit', 'algorithm', 'burst', 'half_life', 'halfLife', 'accounting'];
  if (unlimited) {
    if (inList) {
      at.src.issues.add(at.src.file, uf!.line, at.path, 'unlimited', true, 'unlimited has no place in rate_limits: write rate_limit: { unlimited: true } instead of the list');
    }
    for (const k of limitFields) {
      const x = f.get(k);
      if (x !== undefined) {
        at.src.issues.add(at.src.file, x.line, at.path, k, toJs(at.src, x.value),
          `${k} must not be given with unlimited: true (an unlimited rate_limit is never charged), got ${show(toJs(at.src, x.value))}`);
      }
    }
    return at.src.issues.size > before ? undefined : { unlimited: true, denyAll: false, name, replaces };
  }
  // The period: envoy's unit, or ratekeeper's per.
  const unitF = f.get('unit');
  const perF = f.get('per');
  let per: number | undefined;
  let unit: EnvoyUnit | undefined;
  if (unitF !== undefined && perF !== undefined) {
    at.src.issues.add(at.src.file, perF.line, at.path, 'per', toJs(at.src, perF.value), 'unit and per are two ways to give the period: give one of them');
  } else if (unitF !== undefined) {
    const u = text(at, unitF);
    if (u !== undefined) {
      unit = unitOf(u);
      if (unit === undefined) {
        at.src.issues.add(at.src.file, unitF.line, at.path, 'unit', u,
          `invalid rate limit unit ${show(u)}: use second, minute, hour, day, week, month or year (or per: with any duration, such as 5m)`);
      } else {
        per = UNIT_MS[unit as keyof typeof UNIT_MS];
      }
    }
  } else if (perF !== undefined) {
    per = durationOf(at, perF);
  } else {
    at.src.issues.add(at.src.file, line, at.path, 'unit', undefined,
      `unit is required: the period of the limit (second, minute, hour, day, week, month or year), or per: with any duration such as 5m; or unlimited: true`);
  }
  const rf = f.get('requests_per_unit');
  let requests: number | undefined;
  if (rf === undefined) {
    at.src.issues.add(at.src.file, line, at.path, 'requests_per_unit', undefined,
      'requests_per_unit is required (envoyproxy/ratelimit reads a missing one as 0, which refuses every request: write 0 if that is meant)');
  } else {
    requests = requestsOf(at, rf);
  }
  const af = f.get('algorithm');
  const algorithm = af === undefined ? undefined : algorithmOf(at, af);
  const bf = f.get('burst');
  const burst = bf === undefined ? undefined : scalar(at, bf, 'a number');
  const hf = halfLifeField(at, f);
  const halfLife = hf === undefined ? undefined : durationOf(at, hf);
  const cf = f.get('accounting');
  const accounting = cf === undefined ? undefined : accountingOf(at, cf);
  if (at.src.issues.size > before || per === undefined || requests === undefined) return undefined;

  if (requests === 0) {
    for (const x of [af, bf, hf, cf]) {
      if (x !== undefined) {
        at.src.issues.add(at.src.file, x.line, at.path, x.key, toJs(at.src, x.value),
          `${x.key} does not apply with requests_per_unit: 0, which refuses every request`);
      }
    }
    if (inList) {
      at.src.issues.add(at.src.file, rf!.line, at.path, 'requests_per_unit', 0,
        'requests_per_unit: 0 refuses every request: write it as a rate_limit of its own, not an item of rate_limits');
    }
    if (at.src.issues.size > before) return undefined;
    return { unlimited: false, denyAll: true, name, replaces, report: unit !== undefined ? { requestsPerUnit: 0, unit } : rateReport(0, per) };
  }
  const options: Record<string, unknown> = { limit: requests, per };
  if (name !== undefined) options.name = name;
  if (burst !== undefined && burst !== null) options.burst = burst;
  if (halfLife !== undefined) options.halfLife = halfLife;
  if (accounting !== undefined) options.accounting = accounting;
  const rule = buildRule(at, algorithm ?? 'fixedWindow', options,
    { limit: rf, per: unitF ?? perF, burst: bf, halfLife: hf, accounting: cf, name: nf }, line);
  if (rule === undefined) return undefined;
  const report = unit !== undefined ? { requestsPerUnit: requests, unit } : rateReport(requests, per);
  return { rule, unlimited: false, denyAll: false, name, replaces, report };
}

/**
 * limitOf — a descriptor's limit: its `rate_limit`, or its `rate_limits` list (several rules decided all-or-nothing,
 * known by the first name given, replacing what any item replaces). Undefined when it has neither or when something
 * was reported.
 */
export function limitOf(at: At, f: Fields): Parsed | undefined {
  const one = f.get('rate_limit');
  const many = f.get('rate_limits');
  if (one !== undefined && many !== undefined) {
    at.src.issues.add(at.src.file, many.line, at.path, 'rate_limits', toJs(at.src, many.value),
      'rate_limit and rate_limits are exclusive: put every limit of the descriptor in rate_limits');
    return undefined;
  }
  if (one !== undefined) {
    const inner: At = { ...at, path: `${at.path} > rate_limit`, line: one.line };
    const it = item(inner, one.value, 'rate_limit', false);
    if (it === undefined) return undefined;
    return { rules: it.rule ? [it.rule] : [], unlimited: it.unlimited, denyAll: it.denyAll, name: it.name, replaces: it.replaces, report: it.report };
  }
  if (many === undefined) return undefined;
  const list = items({ ...at, line: many.line }, many.value, 'rate_limits', 'a list of rate limits');
  if (list === undefined) return undefined;
  if (list.length === 0) {
    at.src.issues.add(at.src.file, many.line, at.path, 'rate_limits', [], 'rate_limits is empty: give at least one limit, or remove it');
    return undefined;
  }
  const before = at.src.issues.size;
  const parsed = list.map((node, i) => item({ ...at, path: `${at.path} > rate_limits[${i}]`, line: lineOf(at.src, node, many.line) }, node, `rate_limits[${i}]`, true));
  if (at.src.issues.size > before || parsed.some((p) => p === undefined)) return undefined;
  const ok = parsed as LimitItem[];
  const ruleList = ok.map((p) => p.rule!);
  const names = ok.map((p) => p.name).filter((n): n is string => n !== undefined);
  const replaces = [...new Set(ok.flatMap((p) => p.replaces))];
  for (const r of replaces) {
    if (names.includes(r)) {
      at.src.issues.add(at.src.file, many.line, at.path, 'rate_limits', r, `replaces names ${show(r)}, a limit of this same descriptor: a limit cannot replace itself`);
    }
  }
  try {
    new Policy({ rules: ruleList });
  } catch (e) {
    at.src.issues.add(at.src.file, many.line, at.path, 'rate_limits', ruleList.map((r) => r.name), libraryMessage(e));
  }
  if (at.src.issues.size > before) return undefined;
  return { rules: ruleList, unlimited: false, denyAll: false, name: names[0], replaces, report: ok[0].report };
}
