/**
 * policies — the native form: `policies: { name: { rules, algorithm?, dry_run?, half_life?, accounting?, auto_block? } }`, where
 * `rules` is the library's rule string (`'1/s; 20/min; 800/day'`) or a list of rule objects
 * (`{ algorithm, limit, per, burst, half_life, accounting, name }`). For `POST /v1/check { policy, key, cost? }`.
 */
import type { Node } from 'yaml';
import type { RuleConfig } from '../../core/algorithms/common.js';
import type { Algorithm } from '../../core/types.js';
import { parseRules } from '../../core/rules.js';
import { Policy } from '../../core/policy.js';
import { show } from '../../core/errors.js';
import { libraryMessage } from './errors.js';
import { accountingOf, algorithmOf, buildRule, durationOf, halfLifeField } from './limits.js';
import { fingerprintOf } from './match.js';
import type { NativePolicy } from './types.js';
import { bool, fields, items, lineOf, scalar, text, toJs, unknownFields, type At, type Field, type Fields } from './yaml.js';

const POLICY_FIELDS: ReadonlySet<string> = new Set(['rules', 'algorithm', 'dry_run', 'dryRun', 'half_life', 'halfLife', 'accounting', 'auto_block', 'autoBlock']);
const AUTO_BLOCK_FIELDS: ReadonlySet<string> = new Set(['for', 'reason']);
const RULE_FIELDS: ReadonlySet<string> = new Set(['algorithm', 'limit', 'per', 'burst', 'half_life', 'halfLife', 'accounting', 'name']);
const POLICY_HINTS: Readonly<Record<string, string>> = {
  rule: 'rules', limits: 'rules', shadow_mode: 'dry_run', dryrun: 'dryRun', block_duration: 'auto_block', blockDuration: 'autoBlock',
};
const RULE_HINTS: Readonly<Record<string, string>> = {
  requests_per_unit: 'limit', requests: 'limit', unit: 'per', period: 'per', window: 'per', interval: 'per',
};

/** dryRunField — `dry_run` or `dryRun` (one of them). */
function dryRunOf(at: At, f: Fields): boolean | undefined {
  const a = f.get('dry_run');
  const b = f.get('dryRun');
  if (a !== undefined && b !== undefined) {
    at.src.issues.add(at.src.file, b.line, at.path, 'dryRun', toJs(at.src, b.value), 'dry_run and dryRun are one field: give it once');
  }
  return bool(at, a ?? b);
}

/**
 * autoBlockOf — `auto_block` (or `autoBlock`): a duration (`15m`), or `{ for: 15m, reason?: text }` — once the
 * policy's rules refuse a client, it is blocked that long (LimiterOptions.autoBlock). Undefined when absent or wrong
 * (reported); `null` stands for absent.
 */
function autoBlockOf(at: At, f: Fields): { for: number; reason?: string } | undefined {
  const a = f.get('auto_block');
  const b = f.get('autoBlock');
  if (a !== undefined && b !== undefined) {
    at.src.issues.add(at.src.file, b.line, at.path, 'autoBlock', toJs(at.src, b.value), 'auto_block and autoBlock are one field: give it once');
  }
  const field = a ?? b;
  if (field === undefined || field.value === null) return undefined;
  const v = field.value as { items?: unknown };
  if (v.items === undefined) {
    const ms = durationOf(at, field);
    return ms === undefined ? undefined : { for: ms };
  }
  const sub = fields({ ...at, path: `${at.path} > ${field.key}`, line: field.line }, field.value, field.key, 'a duration such as 15m, or a map like { for: 15m, reason: abuse }');
  if (sub === undefined) return undefined;
  const inner = { ...at, path: `${at.path} > ${field.key}`, line: field.line };
  unknownFields(inner, sub, AUTO_BLOCK_FIELDS, field.key, { duration: 'for', blockDuration: 'for' });
  const ff = sub.get('for');
  if (ff === undefined) {
    at.src.issues.add(at.src.file, field.line, inner.path, 'for', undefined, `${field.key}.for is required: how long a refused client stays blocked, such as 15m`);
    return undefined;
  }
  const ms = durationOf(inner, ff);
  const rf = sub.get('reason');
  const reason = rf === undefined ? undefined : text(inner, rf);
  if (ms === undefined || (rf !== undefined && reason === undefined)) return undefined;
  return reason === undefined ? { for: ms } : { for: ms, reason };
}

/** objectRule — one rule object of a policy's rules list. */
function objectRule(at: At, node: Node | null, defaults: { algorithm?: Algorithm; halfLife?: number; accounting?: string }): RuleConfig | undefined {
  const f = fields(at, node, 'rule', "a map like { algorithm: gcra, limit: 20, per: 1m }");
  if (f === undefined) return undefined;
  unknownFields(at, f, RULE_FIELDS, 'a rule', RULE_HINTS);
  const before = at.src.issues.size;
  const af = f.get('algorithm');
  const algorithm = af === undefined ? defaults.algorithm ?? 'slidingLog' : algorithmOf(at, af);
  const lf = f.get('limit');
  const pf = f.get('per');
  const line = lineOf(at.src, node, at.line);
  if (lf === undefined) at.src.issues.add(at.src.file, line, at.path, 'limit', undefined, 'limit is required: the cost admitted per `per`, e.g. limit: 20');
  if (pf === undefined) at.src.issues.add(at.src.file, line, at.path, 'per', undefined, 'per is required: the period, e.g. per: 1m');
  const limit = lf === undefined ? undefined : scalar(at, lf, 'a number');
  const per = pf === undefined ? undefined : durationOf(at, pf);
  const hf = halfLifeField(at, f);
  const halfLife = hf === undefined ? defaults.halfLife : durationOf(at, hf);
  const cf = f.get('accounting');
  const accounting = cf === undefined ? defaults.accounting : accountingOf(at, cf);
  const bf = f.get('burst');
  const burst = bf === undefined ? undefined : scalar(at, bf, 'a number');
  const nf = f.get('name');
  const name = nf === undefined ? undefined : text(at, nf);
  if (at.src.issues.size > before || algorithm === undefined) return undefined;
  const options: Record<string, unknown> = { limit, per };
  if (name !== undefined) options.name = name;
  if (burst !== undefined) options.burst = burst;
  if (halfLife !== undefined && algorithm === 'earrrl') options.halfLife = halfLife;
  if (hf !== undefined && algorithm !== 'earrrl') options.halfLife = halfLife;
  if (accounting !== undefined) options.accounting = accounting;
  return buildRule(at, algorithm, options, { limit: lf, per: pf, burst: bf, halfLife: hf, accounting: cf, name: nf }, line);
}

/** policyOf — one named policy, or undefined after reporting what is wrong with it. */
function policyOf(at: At, name: string, node: Node | null): NativePolicy | undefined {
  const f = fields(at, node, name, 'a map like { rules: "1/s; 20/min" }');
  if (f === undefined) return undefined;
  unknownFields(at, f, POLICY_FIELDS, 'a policy', POLICY_HINTS);
  const before = at.src.issues.size;
  const af = f.get('algorithm');
  const algorithm = af === undefined ? undefined : algorithmOf(at, af);
  const dryRun = dryRunOf(at, f);
  const autoBlock = autoBlockOf(at, f);
  const hf = halfLifeField(at, f);
  const halfLife = hf === undefined ? undefined : durationOf(at, hf);
  const cf = f.get('accounting');
  const accounting = cf === undefined ? undefined : accountingOf(at, cf);
  const rf: Field | undefined = f.get('rules');
  if (rf === undefined) {
    at.src.issues.add(at.src.file, at.line, at.path, 'rules', undefined, "rules is required: a rule string such as '1/s; 20/min; 800/day', or a list of rules");
    return undefined;
  }
  if (at.src.issues.size > before) return undefined;
  let ruleList: RuleConfig[] = [];
  const v = rf.value;
  if (v !== null && (v as { items?: unknown }).items === undefined) {
    const s = scalar(at, rf, "a rule string such as '1/s; 20/min' or a list of rules");
    if (typeof s !== 'string') {
      if (s !== undefined) at.src.issues.add(at.src.file, rf.line, at.path, 'rules', s, `rules must be a rule string such as '1/s; 20/min' or a list of rules, got ${show(s)}`);
      return undefined;
    }
    try {
      ruleList = parseRules(s, { algorithm: algorithm ?? 'slidingLog', ...(halfLife !== undefined ? { halfLife } : {}), ...(accounting ? { accounting } : {}) });
    } catch (e) {
      at.src.issues.add(at.src.file, rf.line, at.path, 'rules', s, libraryMessage(e));
      return undefined;
    }
  } else {
    const list = items({ ...at, line: rf.line }, v, 'rules', "a rule string such as '1/s; 20/min' or a list of rules");
    if (list === undefined) return undefined;
    if (list.length === 0) {
      at.src.issues.add(at.src.file, rf.line, at.path, 'rules', [], 'rules is empty: a policy needs at least one rule');
      return undefined;
    }
    const built = list.map((n, i) => objectRule({ ...at, path: `${at.path} > rules[${i}]`, line: lineOf(at.src, n, rf.line) }, n,
      { algorithm, halfLife, accounting }));
    if (built.some((r) => r === undefined)) return undefined;
    ruleList = built as RuleConfig[];
  }
  try {
    new Policy({ rules: ruleList, dryRun: dryRun ?? false });
  } catch (e) {
    at.src.issues.add(at.src.file, rf.line, at.path, 'rules', ruleList.map((r) => r.name), libraryMessage(e));
    return undefined;
  }
  const out: NativePolicy = { name, rules: ruleList, dryRun: dryRun ?? false, fingerprint: fingerprintOf(ruleList, false, false), file: at.src.file };
  if (autoBlock !== undefined) out.autoBlock = autoBlock;
  return Object.freeze(out);
}

/**
 * walkPolicies — adds the file's `policies:` map to `out`; a name already defined (in this file or another) is
 * reported with where it was first defined.
 */
export function walkPolicies(at: At, node: Node | null, out: Map<string, NativePolicy>, seen: Map<string, string>): void {
  if (node === null) return;
  const f = fields(at, node, 'policies', 'a map of policy names to policies');
  if (f === undefined) return;
  for (const [name, field] of f) {
    const path = `policies > ${name}`;
    if (name === '') {
      at.src.issues.add(at.src.file, field.line, 'policies', '', '', 'a policy name must not be empty');
      continue;
    }
    const prior = seen.get(name);
    if (prior !== undefined) {
      at.src.issues.add(at.src.file, field.line, path, name, name,
        `policy ${show(name)} is already defined at ${prior}: policy names are unique across files`);
      continue;
    }
    seen.set(name, `${at.src.file}:${field.line}`);
    const p = policyOf({ src: at.src, path, line: field.line }, name, field.value);
    if (p !== undefined) out.set(name, p);
  }
}
