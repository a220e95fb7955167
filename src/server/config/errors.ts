import { RatekeeperError, show } from '../../core/errors.js';

/**
 * ConfigIssue — one thing wrong with a configuration: where (file, 1-based line when known, the path to the node
 * such as `domain: mongo_cps > descriptors[0] (database=users) > rate_limit`), which field, its value, and why.
 */
export interface ConfigIssue {
  file: string;
  line?: number;
  /** path — the node holding the field; `''` for the file's top level. */
  path: string;
  /** field — the YAML field at fault (`unit`, `requests_per_unit`, `descriptors[2]`…); `''` for the file itself. */
  field: string;
  value: unknown;
  /** message — the reason, naming the field and the value. */
  message: string;
}

/** formatIssue — one issue on one line: `file:line: path > field: message`. */
export function formatIssue(i: ConfigIssue): string {
  const where = i.line !== undefined && i.line > 0 ? `${i.file}:${i.line}` : i.file;
  return i.path === '' ? `${where}: ${i.message}` : `${where}: ${i.path}: ${i.message}`;
}

/**
 * ConfigError — a configuration that cannot be loaded, with every issue found (not only the first): `issues` for
 * programs, the message (one issue per line) for people.
 */
export class ConfigError extends RatekeeperError {
  readonly issues: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[]) {
    const n = issues.length;
    super(`invalid configuration (${n} problem${n === 1 ? '' : 's'}):\n${issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`, 'ERR_CONFIG');
    this.name = 'ConfigError';
    this.issues = Object.freeze([...issues]);
  }
}

/** Issues — the collector a load fills: every check adds to it and goes on, so one run reports everything. */
export class Issues {
  /** list — in the order found (file by file, top to bottom). */
  readonly list: ConfigIssue[] = [];

  add(file: string, line: number | undefined, path: string, field: string, value: unknown, message: string): void {
    this.list.push({ file, line: line !== undefined && line > 0 ? line : undefined, path, field, value, message });
  }

  get size(): number {
    return this.list.length;
  }

  /** throwIfAny — a ConfigError carrying every issue, when there is one: file by file, then by line. */
  throwIfAny(): void {
    if (this.list.length > 0) throw new ConfigError(sortIssues(this.list));
  }
}

/** libraryMessage — a RatekeeperError's message without its `ratekeeper: ` prefix (to be wrapped with a location). */
export function libraryMessage(e: unknown): string {
  if (e instanceof Error) return e.message.replace(/^ratekeeper: /, '');
  return show(e);
}

/** sortIssues — stable: files in order of first appearance, then by line (issues without a line first). */
export function sortIssues(list: readonly ConfigIssue[]): ConfigIssue[] {
  const order = new Map<string, number>();
  for (const i of list) if (!order.has(i.file)) order.set(i.file, order.size);
  return list.map((i, n) => ({ i, n }))
    .sort((a, b) => order.get(a.i.file)! - order.get(b.i.file)! || (a.i.line ?? 0) - (b.i.line ?? 0) || a.n - b.n)
    .map((x) => x.i);
}
