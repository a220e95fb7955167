import { RatekeeperError, show } from '../core/errors.js';
import { checkOptionsObject } from '../core/options.js';

const PERIODIC_OPTIONS: ReadonlySet<string> = new Set(['key', 'rate', 'start', 'end', 'cost']);
const ABUSER_OPTIONS: ReadonlySet<string> = new Set(['key', 'limit', 'factor', 'start', 'obeyFrom', 'end']);
const TRACE_CSV_OPTIONS: ReadonlySet<string> = new Set(['timeUnit', 'key', 'source']);
import { parseCsv } from './csv.js';

/** TraceRequest — one request of a trace: when (ms on the virtual clock), whose, and what it costs. */
export interface TraceRequest {
  /** t — the request's time, ms. */
  t: number;
  key: string;
  /** cost — what the request spends (>= 0). @default 1 */
  cost: number;
}

/** Trace — requests in time order (ties keep their order). */
export type Trace = TraceRequest[];

/** TrueRate — what a generator knows about a client: it sends `rate` per second over [from, to). For plots. */
export interface TrueRate {
  key: string;
  /** from, to — ms. */
  from: number;
  to: number;
  /** rate — requests per second. */
  rate: number;
}

/** Generated — a generated trace and the true rates it was made from. */
export interface Generated {
  trace: Trace;
  truth: TrueRate[];
}

/** PeriodicOptions — a client that sends one request every 1/rate seconds over [start, end). */
export interface PeriodicOptions {
  key: string;
  /** rate — requests per second, > 0. */
  rate: number;
  /** start, end — ms; the first request is at `start`, none at or after `end`. */
  start: number;
  end: number;
  /** cost — of each request. @default 1 */
  cost?: number;
}

function finite(value: unknown, what: string, min = -Infinity): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new RatekeeperError(`${what} must be a finite number${min > -Infinity ? ` >= ${min}` : ''}, got ${show(value)}`, 'ERR_ARGUMENT');
  }
  return value;
}

/**
 * periodic — a steady client: requests at start + k·1000/rate ms (computed from k, so there is no drift) for every
 * k with a time before `end`.
 */
export function periodic(options: PeriodicOptions): Generated {
  checkOptionsObject(options, PERIODIC_OPTIONS, 'periodic', 'ERR_ARGUMENT');
  const { key } = options;
  const rate = finite(options.rate, 'periodic.rate');
  if (rate <= 0) throw new RatekeeperError(`periodic.rate must be > 0, got ${show(rate)}`, 'ERR_ARGUMENT');
  const start = finite(options.start, 'periodic.start');
  const end = finite(options.end, 'periodic.end');
  const cost = finite(options.cost ?? 1, 'periodic.cost', 0);
  const trace: Trace = [];
  const period = 1000 / rate;
  for (let k = 0; ; k++) {
    const t = start + k * period;
    if (!(t < end)) break;
    trace.push({ t, key, cost });
  }
  return { trace, truth: end > start ? [{ key, from: start, to: end, rate }] : [] };
}

/** AbuserOptions — a client that sends `factor` times the limit, then obeys it exactly from `obeyFrom`. */
export interface AbuserOptions {
  key: string;
  /** limit — the allowed rate, requests per second. */
  limit: number;
  /** factor — how many times the limit the abuser sends while abusing (1.67: 67 % over). */
  factor: number;
  /** start, obeyFrom, end — ms: abuses over [start, obeyFrom), sends exactly `limit` per second over [obeyFrom, end). */
  start: number;
  obeyFrom: number;
  end: number;
}

/** abuser — the EARRRL document's abuser: `factor`·limit per second, then exactly `limit` per second from `obeyFrom`. */
export function abuser(options: AbuserOptions): Generated {
  checkOptionsObject(options, ABUSER_OPTIONS, 'abuser', 'ERR_ARGUMENT');
  const limit = finite(options.limit, 'abuser.limit');
  const factor = finite(options.factor, 'abuser.factor');
  if (limit <= 0 || factor <= 0) throw new RatekeeperError(`abuser.limit and abuser.factor must be > 0, got ${show(limit)} and ${show(factor)}`, 'ERR_ARGUMENT');
  const abusing = periodic({ key: options.key, rate: limit * factor, start: options.start, end: options.obeyFrom });
  const obeying = periodic({ key: options.key, rate: limit, start: options.obeyFrom, end: options.end });
  return merge(abusing, obeying);
}

/** merge — several generated traces as one, in time order (a stable sort: ties keep the argument order). */
export function merge(...parts: Generated[]): Generated {
  const trace = parts.flatMap((p) => p.trace);
  sortTrace(trace);
  return { trace, truth: parts.flatMap((p) => p.truth) };
}

/** sortTrace — sorts in place by time; stable, so requests at the same time keep their order. */
export function sortTrace(trace: Trace): Trace {
  return trace.sort((a, b) => a.t - b.t);
}

/** TimeUnit — the unit of a CSV trace's numeric timestamps. */
export type TimeUnit = 's' | 'ms';

/** TraceCsvOptions — how to read a CSV trace. */
export interface TraceCsvOptions {
  /** timeUnit — of numeric timestamps. ISO 8601 timestamps are read as they are. @default 's' */
  timeUnit?: TimeUnit;
  /** key — the key of rows without a key column. @default 'client' */
  key?: string;
  /** source — the file name, for error messages. @default 'trace' */
  source?: string;
}

const TIME_COLUMNS = ['t', 'time', 'timestamp', 'ts'];

/**
 * parseTraceCsv — a trace from CSV text. Columns: a timestamp, then optionally a key and a cost. A header row is
 * optional; with one, the columns are found by name (`t`/`time`/`timestamp`/`ts`, `key`, `cost`) in any order.
 * Timestamps are numbers in `timeUnit` or ISO 8601 date-times. Rows are sorted by time (stably).
 * Throws naming the source, the line and the bad value.
 */
export function parseTraceCsv(text: string, options: TraceCsvOptions = {}): Trace {
  checkOptionsObject(options, TRACE_CSV_OPTIONS, 'parseTraceCsv', 'ERR_ARGUMENT');
  const source = options.source ?? 'trace';
  const unit = options.timeUnit === 'ms' ? 1 : 1000;
  const fallbackKey = options.key ?? 'client';
  let rows;
  try {
    rows = parseCsv(text);
  } catch (e) {
    throw new RatekeeperError(`${source}: ${(e as Error).message}`, 'ERR_ARGUMENT');
  }
  let tCol = 0;
  let keyCol = 1;
  let costCol = 2;
  const first = rows[0];
  if (first && timestamp(first.fields[0].trim(), unit) === undefined) {
    const names = first.fields.map((f) => f.trim().toLowerCase());
    tCol = names.findIndex((f) => TIME_COLUMNS.includes(f));
    if (tCol < 0) {
      throw new RatekeeperError(`${source}:${first.line}: the first row is neither a timestamp nor a header with a time column (t, time, timestamp or ts), got ${show(first.fields[0])}`, 'ERR_ARGUMENT');
    }
    keyCol = names.indexOf('key');
    costCol = names.indexOf('cost');
    rows = rows.slice(1);
  }
  const trace: Trace = [];
  for (const { line, fields } of rows) {
    const raw = (fields[tCol] ?? '').trim();
    const t = timestamp(raw, unit);
    if (t === undefined) throw new RatekeeperError(`${source}:${line}: timestamp ${show(raw)} is not a number (${options.timeUnit ?? 's'}) nor an ISO 8601 date-time`, 'ERR_ARGUMENT');
    const key = keyCol >= 0 && fields[keyCol] !== undefined && fields[keyCol].trim() !== '' ? fields[keyCol].trim() : fallbackKey;
    let cost = 1;
    const rawCost = costCol >= 0 ? (fields[costCol] ?? '').trim() : '';
    if (rawCost !== '') {
      cost = Number(rawCost);
      if (!Number.isFinite(cost) || cost < 0) throw new RatekeeperError(`${source}:${line}: cost ${show(rawCost)} must be a finite number >= 0`, 'ERR_ARGUMENT');
    }
    trace.push({ t, key, cost });
  }
  if (trace.length === 0) throw new RatekeeperError(`${source}: no requests in the trace`, 'ERR_ARGUMENT');
  return sortTrace(trace);
}

/** timestamp — ms from a numeric timestamp in `unit` ms, or an ISO 8601 date-time; undefined when it is neither. */
function timestamp(raw: string, unit: number): number | undefined {
  if (raw === '') return undefined;
  const x = Number(raw);
  if (Number.isFinite(x)) return x * unit;
  if (/^\d{4}-\d{2}-\d{2}/.test(raw)) {
    const ms = Date.parse(raw);
    if (Number.isFinite(ms)) return ms;
  }
  return undefined;
}
