/**
 * server/log — the service's one logger: every line the service writes (startup, store, listeners, reloads, admin
 * changes, errors, drain) goes through it, filtered by level and written as text or JSON.
 *
 * - `text` (the default): `ratekeeper: <message>`, the lines as they always were (people and scripts read them); the
 *   message says everything in words, the level and the fields are left out.
 * - `json`: one object per line, written by pino (an optional peer of the service, loaded only for this format),
 *   with envoyproxy/ratelimit's field names (its logrus JSONFormatter's FieldMap, src/service_cmd/runner/runner.go):
 *   `@timestamp` (ISO 8601, UTC, ms), `@message`, `level` (logrus's names: `debug`, `info`, `warning`, `error`),
 *   then the line's fields (`event`, `store`, `node`, `downMs`, `key`, …; an error under `err`).
 */
import { RatekeeperError, show } from '../core/errors.js';
import { keyViewer, type KeyView } from '../admin/keys.js';

/** LogLevel — the lowest level written. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** LogFormat — text for people, json for a log pipeline. */
export type LogFormat = 'text' | 'json';

/** LogFields — a line's structured facts (JSON only). */
export type LogFields = Record<string, unknown>;

/** Logger — what the service logs through. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** enabled — whether a line of `level` would be written (skip building costly debug lines). */
  enabled(level: LogLevel): boolean;
  /** key — a client key as logs show it (LoggerOptions.keys). */
  key(key: string): string;
  readonly level: LogLevel;
  readonly format: LogFormat;
}

/** LoggerOptions — level, format, where lines go, and how client keys appear. */
export interface LoggerOptions {
  /** level — @default 'info' */
  level?: LogLevel;
  /** format — @default 'text' */
  format?: LogFormat;
  /** sink — receives each line without its newline. @default a write of the line to stderr */
  sink?: (line: string) => void;
  /** keys — how client keys appear (admin/keys.ts). @default 'plain' */
  keys?: KeyView;
  /** keysSecret — the HMAC key of `keys: 'hash'`. */
  keysSecret?: string;
}

/** LEVELS — the levels, lowest first. */
export const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/**
 * parseLogLevel — a level from a flag or LOG_LEVEL, as envoyproxy/ratelimit's logrus.ParseLevel reads it: any case;
 * `warning` for `warn`; logrus's `trace` is `debug` here and its `fatal` and `panic` are `error` (this service has no
 * levels beyond). Anything else is an error naming `what`.
 */
export function parseLogLevel(value: string, what: string): LogLevel {
  const v = value.trim().toLowerCase();
  switch (v) {
    case 'trace': case 'debug': return 'debug';
    case 'info': return 'info';
    case 'warn': case 'warning': return 'warn';
    case 'error': case 'fatal': case 'panic': return 'error';
    default: throw new RatekeeperError(`${what} must be debug, info, warn or error, got ${show(value)}`);
  }
}

/**
 * parseLogFormat — `text` or `json` in any case. envoyproxy/ratelimit takes anything but `json` for text; here
 * another value is an error naming `what`, so a typo does not silently give an unparseable log.
 */
export function parseLogFormat(value: string, what: string): LogFormat {
  const v = value.trim().toLowerCase();
  if (v === 'text' || v === 'json') return v;
  throw new RatekeeperError(`${what} must be text or json, got ${show(value)}`);
}

/**
 * UNSAFE_IN_TEXT — what JSON.stringify leaves as it is but a text log must not show raw: U+2028/U+2029 (line breaks
 * to some viewers and to JavaScript before ES2019) and the bidi controls (U+061C, U+200E/F, U+202A–U+202E,
 * U+2066–U+2069), which reorder what a terminal shows after them (CVE-2021-42574's trick, in a log line).
 */
const UNSAFE_IN_TEXT = /[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * quoted — a client's or an operator's string for a text log line: JSON.stringify's quotes and escapes (newlines,
 * control characters, quotes, lone surrogates as \udxxx), and the characters of UNSAFE_IN_TEXT as \uXXXX, so the
 * string can neither start a line of its own nor reorder the line it is in.
 */
export function quoted(s: string): string {
  return JSON.stringify(s).replace(UNSAFE_IN_TEXT, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** stderrSink — one line on stderr (synchronous for files and pipes on Linux, so nothing is lost at exit). */
const stderrSink = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** createLogger — the logger for `options`; `json` loads pino (a clear error when it is not installed). */
export async function createLogger(options: LoggerOptions = {}): Promise<Logger> {
  const level = options.level ?? 'info';
  const format = options.format ?? 'text';
  if (!LEVELS.includes(level)) throw new RatekeeperError(`serve: logLevel must be debug, info, warn or error, got ${show(level)}`);
  if (format !== 'text' && format !== 'json') throw new RatekeeperError(`serve: logFormat must be text or json, got ${show(format)}`);
  const sink = options.sink ?? stderrSink;
  const shown = keyViewer(options.keys ?? 'plain', options.keysSecret);
  const key = shown ?? ((k: string) => k);
  const floor = LEVELS.indexOf(level);
  const enabled = (l: LogLevel): boolean => LEVELS.indexOf(l) >= floor;
  if (format === 'text') {
    const line = (l: LogLevel) => (message: string): void => {
      if (LEVELS.indexOf(l) >= floor) sink(`ratekeeper: ${message}`);
    };
    return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), enabled, key, level, format };
  }
  const { pino } = await import('pino').catch(() => {
    throw new RatekeeperError('serve: --log-format json needs the pino package: npm install pino');
  });
  const p = pino({
    level,
    base: undefined,
    messageKey: '@message',
    timestamp: () => `,"@timestamp":"${new Date().toISOString()}"`,
    formatters: { level: (label: string) => ({ level: label === 'warn' ? 'warning' : label }) },
  }, { write: (s: string) => sink(s.endsWith('\n') ? s.slice(0, -1) : s) });
  const line = (l: LogLevel) => (message: string, fields?: LogFields): void => {
    if (fields === undefined) p[l](message);
    else p[l](fields, message);
  };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), enabled, key, level, format };
}

/** silentLogger — writes nothing (tests, embedding). */
export const silentLogger: Logger = {
  debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined,
  enabled: () => false, key: (k) => k, level: 'error', format: 'text',
};
