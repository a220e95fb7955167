/**
 * descriptors — a domain's `descriptors:` (nested by key/value) → the match tree of {@link DNode}s and the limits.
 * Checks what envoyproxy/ratelimit checks (a key on every descriptor, no descriptor twice under one parent,
 * share_threshold only on a wildcard value, unit/unlimited/replaces) and what it lets pass silently (unknown fields
 * anywhere, `*` in a key, quota_mode, a rate_limit without requests_per_unit).
 */
import type { Node, YAMLMap } from 'yaml';
import { show } from '../../core/errors.js';
import { escDomain, escKey, escPattern } from './key.js';
import { limitOf } from './limits.js';
import { DNode, fingerprintOf, type KeyGroup } from './match.js';
import type { LimitSpec } from './types.js';
import { bool, fields, items, lineOf, text, toJs, unknownFields, isMapNode, type At } from './yaml.js';

/** DESCRIPTOR_FIELDS — the fields of a descriptor: envoy's, then ratekeeper's `rate_limits`. */
export const DESCRIPTOR_FIELDS: ReadonlySet<string> = new Set([
  'key', 'value', 'rate_limit', 'descriptors', 'shadow_mode', 'quota_mode', 'detailed_metric', 'value_to_metric',
  'share_threshold', 'metadata', 'rate_limits',
]);
const HINTS: Readonly<Record<string, string>> = {
  dry_run: 'shadow_mode', dryRun: 'shadow_mode', shadow: 'shadow_mode', limits: 'rate_limits', children: 'descriptors',
  limit: 'rate_limit', rules: 'rate_limits', unit: 'rate_limit: { unit }', requests_per_unit: 'rate_limit: { requests_per_unit }',
};

/** Tree — what the walk of every domain builds. */
export interface Tree {
  roots: Map<string, DNode>;
  limits: LimitSpec[];
  /** depth — the most entries a config path has. */
  depth: number;
}

/** group — the children of `parent` under `key`, created on first use. */
function group(parent: DNode, key: string): KeyGroup {
  let g = parent.children.get(key);
  if (g === undefined) {
    g = { exact: new Map(), wildcards: [], any: undefined };
    parent.children.set(key, g);
  }
  return g;
}

/** existing — the node already defined for (key, value) under `g`, if any. */
function existing(g: KeyGroup, value: string | undefined): DNode | undefined {
  if (value === undefined) return g.any;
  if (value.includes('*')) return g.wildcards.find((w) => w.node.value === value)?.node;
  return g.exact.get(value);
}

/** Level — where the walk is: the parent node, its metric path, its id and its depth. */
interface Level {
  node: DNode;
  domain: string;
  /** stat — envoy's stats path of the parent without the domain (`''` at the root). */
  stat: string;
  /** id — the parent's id (`domain:` at the root). */
  id: string;
  depth: number;
}

/**
 * walkDescriptors — adds the descriptors of `list` under `level`, reporting every problem and going on. `at.path`
 * names the parent (`domain: messaging` or `… > descriptors[0] (message_type=marketing)`).
 */
export function walkDescriptors(at: At, list: Node | null, level: Level, tree: Tree): void {
  if (list === null) return;
  const nodes = items(at, list, 'descriptors', 'a list of descriptors (maps with key, value, rate_limit, descriptors…)');
  if (nodes === undefined) return;
  nodes.forEach((node, i) => {
    const line = lineOf(at.src, node, at.line);
    const here = `descriptors[${i}]`;
    if (!isMapNode(node)) {
      at.src.issues.add(at.src.file, line, at.path, here, toJs(at.src, node),
        `${here} must be a map with a key (and value, rate_limit, descriptors…), got ${show(toJs(at.src, node))}`);
      return;
    }
    const m = node as YAMLMap;
    const peek = (k: string) => {
      const v = m.get(k, true) as { value?: unknown; source?: string } | undefined;
      if (v === undefined || v === null || typeof v !== 'object' || !('value' in v) || v.value === null) return '';
      return typeof v.value === 'string' ? v.value : v.source ?? String(v.value);
    };
    const label = peek('key') === '' ? here : `${here} (${peek('value') !== '' ? `${peek('key')}=${peek('value')}` : peek('key')})`;
    const path = `${at.path} > ${label}`;
    const inner: At = { src: at.src, path, line };
    const f = fields(inner, node, here)!;
    const kf = f.get('key');
    const key = kf === undefined ? '' : text(inner, kf);
    const vf = f.get('value');
    const rawValue = vf === undefined ? '' : text(inner, vf);
    unknownFields(inner, f, DESCRIPTOR_FIELDS, 'a descriptor', HINTS);
    if (key === undefined || rawValue === undefined) return;
    if (key === '') {
      at.src.issues.add(at.src.file, kf?.line ?? line, path, 'key', kf ? toJs(at.src, kf.value) : undefined,
        'key is required: every descriptor has a non-empty key (its value is optional)');
      return;
    }
    if (key.includes('*')) {
      at.src.issues.add(at.src.file, kf!.line, path, 'key', key, `key ${show(key)} has a *: wildcards apply to values only (write the * in value)`);
    }
    const value = rawValue === '' ? undefined : rawValue;
    const shadowMode = bool(inner, f.get('shadow_mode'));
    const quotaMode = bool(inner, f.get('quota_mode'));
    const detailedMetric = bool(inner, f.get('detailed_metric'));
    const valueToMetric = bool(inner, f.get('value_to_metric'));
    const shareThreshold = bool(inner, f.get('share_threshold'));
    if (quotaMode) {
      at.src.issues.add(at.src.file, f.get('quota_mode')!.line, path, 'quota_mode', true,
        'quota_mode is not supported: ratekeeper decides the descriptors of a request all-or-nothing; remove it (or use shadow_mode to observe without enforcing)');
    }
    if (shareThreshold && (value === undefined || !value.includes('*'))) {
      at.src.issues.add(at.src.file, f.get('share_threshold')!.line, path, 'share_threshold', true,
        `share_threshold can only be used with a wildcard value (containing '*'), but the value is ${show(value ?? '')}`);
    }
    let metadata: Record<string, unknown> | undefined;
    const mf = f.get('metadata');
    if (mf !== undefined && mf.value !== null) {
      if (!isMapNode(mf.value)) {
        at.src.issues.add(at.src.file, mf.line, path, 'metadata', toJs(at.src, mf.value), `metadata must be a map, got ${show(toJs(at.src, mf.value))}`);
      } else {
        metadata = toJs(at.src, mf.value) as Record<string, unknown>;
      }
    }
    const g = group(level.node, key);
    const prior = existing(g, value);
    if (prior !== undefined) {
      const stat = `${level.domain}.${level.stat === '' ? '' : `${level.stat}.`}${value === undefined ? key : `${key}_${value}`}`;
      at.src.issues.add(at.src.file, line, path, 'key', value === undefined ? key : `${key}=${value}`,
        `duplicate descriptor composite key '${stat}': ${value === undefined ? `key ${show(key)} without a value` : `${key}=${value}`} is already defined at ${prior.file}:${prior.line}`);
    }
    const parsed = limitOf(inner, f);
    const seg = value === undefined ? key : `${key}_${value}`;
    const stat = level.stat === '' ? seg : `${level.stat}.${seg}`;
    const id = `${level.id}${level.depth === 0 ? '' : '&'}${escKey(key)}${value === undefined ? '' : `=${escPattern(value)}`}`;
    const dnode = new DNode(key, value, valueToMetric === true, shareThreshold === true, at.src.file, line);
    if (parsed !== undefined) {
      const spec: LimitSpec = {
        id,
        domain: level.domain,
        path: stat,
        name: parsed.name,
        unlimited: parsed.unlimited,
        denyAll: parsed.denyAll,
        shadowMode: shadowMode === true,
        replaces: parsed.replaces,
        detailedMetric: detailedMetric === true,
        valueToMetric: valueToMetric === true,
        shareThreshold: shareThreshold === true,
        rules: parsed.rules,
        report: parsed.report,
        fingerprint: fingerprintOf(parsed.rules, parsed.unlimited, parsed.denyAll),
        file: at.src.file,
        line,
      };
      if (parsed.name === undefined) delete spec.name;
      if (parsed.report === undefined) delete spec.report;
      if (metadata !== undefined) spec.metadata = metadata;
      dnode.limit = Object.freeze(spec);
      tree.limits.push(dnode.limit);
    }
    if (prior === undefined) {
      if (value === undefined) g.any = dnode;
      else if (value.includes('*')) {
        const parts = value.split('*');
        g.wildcards.push({ parts, fixed: parts.reduce((s, p) => s + p.length, 0), node: dnode });
      } else g.exact.set(value, dnode);
    }
    tree.depth = Math.max(tree.depth, level.depth + 1);
    const df = f.get('descriptors');
    if (df !== undefined) {
      walkDescriptors({ src: at.src, path, line: df.line }, df.value,
        { node: dnode, domain: level.domain, stat, id, depth: level.depth + 1 }, tree);
    }
  });
}

/** rootLevel — the walk's start for a domain. */
export function rootLevel(root: DNode, domain: string): Level {
  return { node: root, domain, stat: '', id: `${escDomain(domain)}:`, depth: 0 };
}
