/**
 * match — envoyproxy/ratelimit's GetLimit over a precomputed tree: per level a map from key to its group (literal
 * values in a map, wildcard values in config order, the value-less node), so a lookup is a few map reads and, for
 * wildcards, prefix/suffix/indexOf tests on split-at-load patterns. No regex, no allocation but the strings it returns.
 */
import { RatekeeperError, show } from '../../core/errors.js';
import { rules } from '../../core/rules.js';
import { domainSpace, entriesKey, escDomain, sharedEntriesKey } from './key.js';
import { OVERRIDE_SPECS, UNIT_MS, unitOfRequest } from '../envoy.js';
import type { LimitSpec, Match, NativePolicy, RequestOverride, ServiceConfig } from './types.js';

/** Wildcard — a value with `*`, split at load: matches a value that starts with parts[0], ends with the last part and holds the middle parts in order, without overlap. */
export interface Wildcard {
  parts: string[];
  /** fixed — the length of all parts together: a shorter value cannot match. */
  fixed: number;
  node: DNode;
}

/** KeyGroup — the children of a node that share one key. */
export interface KeyGroup {
  /** exact — literal values (never a value with `*`). */
  exact: Map<string, DNode>;
  /** wildcards — values with `*`, in config order: the first that matches wins. */
  wildcards: Wildcard[];
  /** any — the value-less child: matches any value, after every literal and wildcard. */
  any: DNode | undefined;
}

/** DNode — one descriptor of the config (a domain's root has key '' and no limit). */
export class DNode {
  readonly children = new Map<string, KeyGroup>();
  limit: LimitSpec | undefined = undefined;
  constructor(
    /** key, value — as configured; value undefined for a value-less key. */
    readonly key: string,
    readonly value: string | undefined,
    readonly valueToMetric: boolean,
    readonly shareThreshold: boolean,
    /** file, line — where it was defined (for duplicate reports). */
    readonly file: string,
    readonly line: number,
  ) {}
  /** pattern — the wildcard value, when the value has a `*`. */
  get pattern(): string | undefined {
    return this.value !== undefined && this.value.includes('*') ? this.value : undefined;
  }
}

/** wildcardMatch — whether `value` matches the split pattern (each `*` matches zero or more characters). */
export function wildcardMatch(w: Wildcard, value: string): boolean {
  const parts = w.parts;
  const n = value.length;
  if (n < w.fixed) return false;
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (!value.startsWith(first) || !value.endsWith(last)) return false;
  let pos = first.length;
  const end = n - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const p = parts[i];
    const at = value.indexOf(p, pos);
    if (at < 0 || at + p.length > end) return false;
    pos = at + p.length;
  }
  return true;
}

/**
 * Found — a Match whose `key` is built only when read: the service checks its length (`keyLength`) and decides on
 * `client`, so a request builds one key string per descriptor, not two.
 */
class Found implements Match {
  constructor(readonly limit: LimitSpec, private readonly space: string, readonly client: string, readonly metricKey: string) {}

  get key(): string {
    return this.space + this.client;
  }

  get keyLength(): number {
    return this.space.length + this.client.length;
  }
}

/** EXACT, WILD, ANY — how an entry matched its level. */
const EXACT = 0;
const WILD = 1;
const ANY = 2;

/**
 * Config — the loaded configuration. `match` reuses two scratch arrays (JavaScript runs one match at a time) sized to
 * the deepest descriptor, so a request longer than any config path is refused before it is walked.
 */
export class Config implements ServiceConfig {
  readonly domains: string[];
  /** overrides — request overrides seen, by domain, requests per unit and unit (bounded by OVERRIDE_SPECS). */
  private readonly overrides = new Map<string, LimitSpec>();
  /** nodes, kinds — scratch of match: the node each entry matched, and how. */
  private readonly nodes: DNode[];
  private readonly kinds: Uint8Array;
  /** spaces — each configured domain's namespace (domainSpace), escaped once. */
  private readonly spaces = new Map<string, string>();

  constructor(
    readonly files: string[],
    readonly loadedAt: number,
    /** roots — each domain's tree (read by transfer.ts to send a configuration between threads). */
    readonly roots: ReadonlyMap<string, DNode>,
    readonly limits: readonly LimitSpec[],
    readonly policies: ReadonlyMap<string, NativePolicy>,
    /** depth — the most entries any config path has. */
    readonly depth: number,
  ) {
    this.domains = [...roots.keys()];
    for (const d of this.domains) this.spaces.set(d, domainSpace(d));
    this.nodes = new Array<DNode>(depth);
    this.kinds = new Uint8Array(depth);
  }

  hasDomain(domain: string): boolean {
    return this.roots.has(domain);
  }

  match(domain: string, entries: readonly { key: string; value: string }[]): Match | undefined {
    const n = entries.length;
    if (n === 0 || n > this.depth) return undefined;
    let node: DNode | undefined = this.roots.get(domain);
    if (node === undefined) return undefined;
    const nodes = this.nodes;
    const kinds = this.kinds;
    for (let i = 0; i < n; i++) {
      const e = entries[i];
      const g: KeyGroup | undefined = node.children.get(e.key);
      if (g === undefined) return undefined;
      let next: DNode | undefined = g.exact.size > 0 ? g.exact.get(e.value) : undefined;
      let kind = EXACT;
      if (next === undefined) {
        const ws: Wildcard[] = g.wildcards;
        for (let w = 0; w < ws.length; w++) {
          if (wildcardMatch(ws[w], e.value)) {
            next = ws[w].node;
            kind = WILD;
            break;
          }
        }
        if (next === undefined) {
          next = g.any;
          kind = ANY;
          if (next === undefined) return undefined;
        }
      }
      nodes[i] = next;
      kinds[i] = kind;
      if (i === n - 1) {
        const limit = next.limit;
        return limit === undefined ? undefined : this.found(domain, entries, limit);
      }
      if (next.children.size === 0) return undefined;
      node = next;
    }
    return undefined;
  }

  /** found — the key and metric key of a match (the matched nodes are in the scratch arrays). */
  private found(domain: string, entries: readonly { key: string; value: string }[], limit: LimitSpec): Match {
    const n = entries.length;
    let shared = false;
    let v2m = false;
    for (let i = 0; i < n; i++) {
      if (this.kinds[i] === WILD && this.nodes[i].shareThreshold) shared = true;
      if (this.nodes[i].valueToMetric) v2m = true;
    }
    let client: string;
    if (shared) {
      const patterns = new Array<string | undefined>(n);
      for (let i = 0; i < n; i++) patterns[i] = this.kinds[i] === WILD && this.nodes[i].shareThreshold ? this.nodes[i].pattern : undefined;
      client = sharedEntriesKey(entries, patterns);
    } else {
      client = entriesKey(entries);
    }
    let metricKey = limit.path;
    if (limit.detailedMetric) metricKey = this.detailedMetric(entries, shared);
    else if (v2m) metricKey = this.valueMetric(entries);
    return new Found(limit, this.spaces.get(domain) ?? domainSpace(domain), client, metricKey);
  }

  /**
   * detailedMetric — envoy's detailed stats key: every entry as `key_value` (even an empty value: `key_`); when a
   * share_threshold wildcard matched, that entry as `key_pattern` and the others as `key_value` (`key` when empty).
   */
  private detailedMetric(entries: readonly { key: string; value: string }[], shared: boolean): string {
    let out = '';
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (i > 0) out += '.';
      if (shared) {
        const node = this.nodes[i];
        if (this.kinds[i] === WILD && node.shareThreshold) out += `${e.key}_${node.pattern}`;
        else out += e.value === '' ? e.key : `${e.key}_${e.value}`;
      } else {
        out += `${e.key}_${e.value}`;
      }
    }
    return out;
  }

  /**
   * valueMetric — envoy's value_to_metric stats key: per entry, a literal match `key_value`; a wildcard match
   * `key_pattern` (the request's value when the node has value_to_metric and no share_threshold); a value-less match
   * `key`, or `key_value` when the node has value_to_metric.
   */
  private valueMetric(entries: readonly { key: string; value: string }[]): string {
    let out = '';
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      const node = this.nodes[i];
      if (i > 0) out += '.';
      out += e.key;
      let v = '';
      if (this.kinds[i] === EXACT) v = e.value;
      else if (this.kinds[i] === WILD) v = !node.shareThreshold && node.valueToMetric ? e.value : node.pattern ?? '';
      else if (node.valueToMetric) v = e.value;
      if (v !== '') out += `_${v}`;
    }
    return out;
  }

  override(domain: string, entries: readonly { key: string; value: string }[], limit: RequestOverride): Match | undefined {
    if (!this.roots.has(domain)) return undefined;
    const unit = unitOfRequest(limit?.unit);
    if (unit === undefined) {
      throw new RatekeeperError(`descriptor limit.unit must be SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR, got ${show(limit?.unit)}`, 'ERR_ARGUMENT');
    }
    const rpu = limit.requestsPerUnit;
    if (typeof rpu !== 'number' || !Number.isInteger(rpu) || rpu < 0 || rpu > 0xffff_ffff) {
      throw new RatekeeperError(`descriptor limit.requests_per_unit must be an integer from 0 to 4294967295, got ${show(rpu)}`, 'ERR_ARGUMENT');
    }
    const cacheKey = `${domain}\u0000${rpu}\u0000${unit}`;
    let spec = this.overrides.get(cacheKey);
    if (spec === undefined) {
      if (this.overrides.size >= OVERRIDE_SPECS) this.overrides.clear();
      const ruleList = rpu === 0 ? [] : [rules.fixedWindow({ limit: rpu, per: UNIT_MS[unit] })];
      spec = Object.freeze({
        id: `${escDomain(domain)}:!override=${rpu}/${unit}`,
        domain,
        path: 'override',
        unlimited: false,
        denyAll: rpu === 0,
        shadowMode: false,
        replaces: [],
        detailedMetric: false,
        valueToMetric: false,
        shareThreshold: false,
        rules: ruleList,
        report: { requestsPerUnit: rpu, unit },
        fingerprint: fingerprintOf(ruleList, false, rpu === 0),
        file: '',
        line: 0,
      });
      this.overrides.set(cacheKey, spec);
    }
    // the metric key is the spec's path (`override`), never the request's keys or values: 100 000 distinct entry
    // keys made 100 000 series (/metrics 30.9 MB, a scrape of 3.7 s that stalled checks)
    return new Found(spec, this.spaces.get(domain) ?? domainSpace(domain), entriesKey(entries), spec.path);
  }
}

/** fingerprintOf — the canonical text of what a limit's state means (see {@link LimitSpec.fingerprint}). */
export function fingerprintOf(ruleList: readonly { algorithm: string; name: string; limit: number; per: number; burst: number; halfLife: number; accounting: string }[], unlimited: boolean, denyAll: boolean): string {
  if (unlimited) return 'unlimited';
  if (denyAll) return 'deny';
  return JSON.stringify(ruleList.map((r) => [r.algorithm, r.name, r.limit, r.per, r.burst, r.halfLife, r.accounting]));
}
