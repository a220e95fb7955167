/**
 * RatekeeperError — thrown for misuse: bad configuration at construction, a bad key or cost at a call.
 * A request over its limit is never an error: it is a {@link Decision} with `allowed: false`.
 */
export class RatekeeperError extends Error {
  /** code — `'ERR_CONFIG'` for construction-time problems, `'ERR_ARGUMENT'` for a bad call argument. */
  readonly code: 'ERR_CONFIG' | 'ERR_ARGUMENT';
  constructor(message: string, code: 'ERR_CONFIG' | 'ERR_ARGUMENT' = 'ERR_CONFIG') {
    super(message.startsWith('ratekeeper: ') ? message : `ratekeeper: ${message}`);
    this.name = 'RatekeeperError';
    this.code = code;
  }
}

/** show — a value as it should appear in an error message (strings quoted, everything else as JS prints it). */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value === undefined || value === null) return String(value);
  if (typeof value === 'function') return 'a function'; // not its source text
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
