/**
 * transfer — a loaded configuration sent from the thread that parsed it (config/worker.ts) to the service's, in
 * pieces small enough that receiving one never holds the event loop long: the descriptor trees flattened into
 * records in walk order (a parent before its children), CHUNK at a time, then the policies, then the end. One
 * structured clone of 10 000 limits took ~300 ms to receive; a chunk of CHUNK records, a few ms. `Assembler` rebuilds
 * the {@link Config} record by record, as `walkDescriptors` built it.
 */
import { ruleOf } from '../../core/rules.js';
import type { RuleConfig } from '../../core/algorithms/common.js';
import { Config, DNode, type KeyGroup } from './match.js';
import type { LimitSpec, NativePolicy, ServiceConfig } from './types.js';

/** CHUNK — records per message. */
export const CHUNK = 500;

/**
 * NodeRecord — one DNode: its parent's record number (−1: a domain's root, whose `key` is the domain), its key and
 * value (null: value-less), valueToMetric, shareThreshold, file, line, its limit (null: none) and that limit's place
 * in the configuration's list of limits.
 */
export type NodeRecord = [parent: number, key: string, value: string | null, valueToMetric: boolean, shareThreshold: boolean, file: string, line: number, limit: LimitSpec | null, limitAt: number];

/** Piece — one message of a transfer. */
export type Piece =
  | { kind: 'nodes'; records: NodeRecord[] }
  | { kind: 'policies'; policies: NativePolicy[] }
  | { kind: 'end'; files: string[]; loadedAt: number; depth: number };

/** pieces — the messages that carry `cfg` (a Config from parseConfig/loadConfig), in order. */
export function* pieces(cfg: ServiceConfig): Generator<Piece> {
  const c = cfg as Config;
  const at = new Map<LimitSpec, number>();
  c.limits.forEach((l, i) => at.set(l, i));
  let records: NodeRecord[] = [];
  let n = 0;
  const emit = (r: NodeRecord): Piece | undefined => {
    records.push(r);
    n++;
    if (records.length < CHUNK) return undefined;
    const out: Piece = { kind: 'nodes', records };
    records = [];
    return out;
  };
  // an explicit stack (depth-first, children in insertion order): a parent's record always comes before its children's
  const stack: [DNode, number][] = [];
  for (const [domain, root] of c.roots) {
    const p = emit([-1, domain, null, false, false, root.file, root.line, null, -1]);
    if (p !== undefined) yield p;
    stack.push([root, n - 1]);
    while (stack.length > 0) {
      const [node, parent] = stack.pop()!;
      const kids: DNode[] = [];
      for (const g of node.children.values()) {
        for (const d of g.exact.values()) kids.push(d);
        for (const w of g.wildcards) kids.push(w.node);
        if (g.any !== undefined) kids.push(g.any);
      }
      for (const d of kids) {
        const q = emit([parent, d.key, d.value ?? null, d.valueToMetric, d.shareThreshold, d.file, d.line, d.limit ?? null, d.limit === undefined ? -1 : at.get(d.limit)!]);
        if (q !== undefined) yield q;
        stack.push([d, n - 1]);
      }
    }
  }
  if (records.length > 0) yield { kind: 'nodes', records };
  const policies = [...c.policies.values()];
  for (let i = 0; i < policies.length; i += CHUNK) yield { kind: 'policies', policies: policies.slice(i, i + CHUNK) };
  yield { kind: 'end', files: c.files, loadedAt: c.loadedAt, depth: c.depth };
}

/**
 * Assembler — rebuilds a configuration from its pieces, in order: `add` each one, and `add` of the `end` piece
 * returns the Config (its limits in the original order, every group's wildcards in config order).
 */
export class Assembler {
  private readonly nodes: DNode[] = [];
  private readonly roots = new Map<string, DNode>();
  private readonly limits: LimitSpec[] = [];
  private readonly policies = new Map<string, NativePolicy>();

  /** add — one piece; the configuration once the `end` piece is added, else undefined. */
  add(piece: Piece): Config | undefined {
    if (piece.kind === 'nodes') {
      for (const r of piece.records) this.node(r);
      return undefined;
    }
    if (piece.kind === 'policies') {
      for (const p of piece.policies) this.policies.set(p.name, Object.freeze({ ...p, rules: remade(p.rules) }));
      return undefined;
    }
    return new Config(piece.files, piece.loadedAt, this.roots, Object.freeze(this.limits), this.policies, piece.depth);
  }

  private node(r: NodeRecord): void {
    const [parent, key, value, valueToMetric, shareThreshold, file, line, limit, limitAt] = r;
    if (parent < 0) {
      const root = new DNode('', undefined, false, false, file, line);
      this.roots.set(key, root);
      this.nodes.push(root);
      return;
    }
    const d = new DNode(key, value ?? undefined, valueToMetric, shareThreshold, file, line);
    if (limit !== null) {
      d.limit = Object.freeze({ ...limit, rules: remade(limit.rules) });
      this.limits[limitAt] = d.limit;
    }
    const up = this.nodes[parent];
    let g: KeyGroup | undefined = up.children.get(key);
    if (g === undefined) {
      g = { exact: new Map(), wildcards: [], any: undefined };
      up.children.set(key, g);
    }
    if (value === null) g.any = d;
    else if (value.includes('*')) {
      const parts = value.split('*');
      g.wildcards.push({ parts, fixed: parts.reduce((s, p) => s + p.length, 0), node: d });
    } else g.exact.set(value, d);
    this.nodes.push(d);
  }
}

/** BURSTY — the algorithms with a `burst` option. */
const BURSTY: ReadonlySet<string> = new Set(['tokenBucket', 'leakyBucket', 'gcra']);

/**
 * remade — rules received from another thread (plain copies) made again by the rule factory, as the limiter accepts
 * only rules made by `rules.*`: the same fields, so the same fingerprint.
 */
function remade(list: readonly RuleConfig[]): RuleConfig[] {
  return list.map((r) => ruleOf(r.algorithm, {
    limit: r.limit, per: r.per, name: r.name, accounting: r.accounting,
    ...(BURSTY.has(r.algorithm) ? { burst: r.burst } : {}),
    ...(r.algorithm === 'earrrl' ? { halfLife: r.halfLife } : {}),
  }));
}
