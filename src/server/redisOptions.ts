/**
 * redisOptions — the service's Redis connection from its flags and from envoyproxy/ratelimit's environment variables
 * (src/settings/settings.go, src/redis/driver_impl.go, src/utils/tls.go): where Redis is (one server, a Cluster, a
 * Sentinel set), TLS (CA, client certificate and key, hostname verification), passwords, the first connection's time
 * bound and WAIT. Every problem is an error naming the flag or variable it came from; no password is ever shown.
 */
import { readFileSync } from 'node:fs';
import { rootCertificates, createSecureContext, type ConnectionOptions } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { RatekeeperError, show } from '../core/errors.js';
import { redactAddress, redactUrl } from '../core/redact.js';
import type { RedisConnectOptions, RedisNode } from '../stores/redis/connect.js';
import { localFirstFlags } from './localFirstFlags.js';

/**
 * RedisFlags — the Redis options of `ratekeeper serve` besides `--redis` / `--redis-cluster` (ServeOptions.redisConnect).
 * `from` names, per field, the flag or environment variable it came from (for error messages).
 */
export interface RedisFlags {
  /** sentinels — the Sentinels, `host:port` each (`--redis-sentinel`; REDIS_URL's tail with REDIS_TYPE=sentinel). */
  sentinels?: string[];
  /** sentinelMaster — the master's name the Sentinels monitor (`--redis-sentinel-master`; REDIS_URL's head). */
  sentinelMaster?: string;
  /** sentinelAuth — the Sentinels' password, or `user:password` (`--redis-sentinel-auth`, REDIS_SENTINEL_AUTH). */
  sentinelAuth?: string;
  /** auth — the Redis servers' password, or `user:password` (`--redis-auth`, REDIS_AUTH); a URL's own userinfo wins. */
  auth?: string;
  /** tls — TLS to Redis even for `redis://` and `host:port` URLs (`--redis-tls`, REDIS_TLS=true). */
  tls?: boolean;
  /** tlsCa, tlsCert, tlsKey — PEM files: CAs trusted besides the system's, the client certificate and its key. */
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  /** tlsSkipHostnameVerification — the certificate's chain is verified, not the name in it (REDIS_TLS_SKIP_HOSTNAME_VERIFICATION). */
  tlsSkipHostnameVerification?: boolean;
  /** socketPath — a unix socket (REDIS_SOCKET_TYPE=unix with a path in REDIS_URL). */
  socketPath?: string;
  /** connectTimeout — ms the first connection may take at startup, and each connection attempt (`--redis-connect-timeout`, REDIS_TIMEOUT). @default 10_000 */
  connectTimeout?: number;
  /** waitReplicas, waitTimeout — WAIT after each charging call: replicas to wait for, and for how long (ms). */
  waitReplicas?: number;
  waitTimeout?: number;
  /**
   * maxUnsynced, flushEvery, coldFresh — the store's local-first mode (`--redis-max-unsynced`, `--redis-flush-every`,
   * `--redis-cold-fresh`; docs/fleet.md): cost units per client decided here before Redis sees them, the longest
   * a charge waits (ms), cold clients decided as fresh. maxUnsynced undefined or 0: the exact mode.
   */
  maxUnsynced?: number;
  flushEvery?: number;
  coldFresh?: boolean;
  from: Record<string, string>;
}

/** REDIS_FLAGS — the parseArgs declarations of these flags (spread into `ratekeeper serve`'s). */
export const REDIS_FLAGS = {
  'redis-sentinel': { type: 'string' }, 'redis-sentinel-master': { type: 'string' }, 'redis-sentinel-auth': { type: 'string' },
  'redis-auth': { type: 'string' }, 'redis-tls': { type: 'boolean' }, 'redis-tls-ca': { type: 'string' },
  'redis-tls-cert': { type: 'string' }, 'redis-tls-key': { type: 'string' }, 'redis-tls-skip-hostname-verification': { type: 'boolean' },
  'redis-connect-timeout': { type: 'string' }, 'redis-wait-replicas': { type: 'string' }, 'redis-wait-timeout': { type: 'string' },
  'redis-max-unsynced': { type: 'string' }, 'redis-flush-every': { type: 'string' }, 'redis-cold-fresh': { type: 'boolean' },
} as const;

/** REDIS_HELP — the help text of these flags (a section of `ratekeeper serve --help`). */
export const REDIS_HELP = `  --redis-sentinel HOSTS   Redis Sentinel: the Sentinels, host:port,…   REDIS_URL=master,host:port,… (REDIS_TYPE=sentinel)
  --redis-sentinel-master NAME  the master's name the Sentinels monitor
  --redis-sentinel-auth P  the Sentinels' password (or user:password)  REDIS_SENTINEL_AUTH
  --redis-auth P           the Redis password (or user:password); a URL's own user:password@ wins
                           (prefer the variable: a flag shows in ps)    REDIS_AUTH
  --redis-tls              TLS to Redis (also: a rediss:// URL)        REDIS_TLS=true
  --redis-tls-ca FILE      PEM CAs trusted besides the system's        REDIS_TLS_CACERT
  --redis-tls-cert FILE    PEM client certificate (with --redis-tls-key) REDIS_TLS_CLIENT_CERT
  --redis-tls-key FILE     its PEM private key                         REDIS_TLS_CLIENT_KEY
  --redis-tls-skip-hostname-verification  verify the chain, not the name in the certificate
                                                                       REDIS_TLS_SKIP_HOSTNAME_VERIFICATION=true
  --redis-connect-timeout MS  the first connection's bound at startup (a refused password or certificate
                           fails at once)                              REDIS_TIMEOUT (a Go duration)  default: 10000
  --redis-wait-replicas N  WAIT for N replicas after each charging call, in the same round trip
  --redis-wait-timeout MS  WAIT's timeout                                                      default: 50
  --redis-max-unsynced N   local-first: cost units per client decided here before Redis sees them
                           (0: exact; with K instances at most (K − 1) × N units beyond: docs/fleet.md)
  --redis-flush-every MS   local-first: the longest a charge waits to be sent, and the oldest copy
                           decided on (ms, or a duration: 20ms, 1s; at most 60 s)                default: 20
  --redis-cold-fresh       local-first: decide a client with no fresh copy as fresh (no round trip;
                           bound K × max-unsynced, blocks learned at the first flush)
`;

/** UsageError — thrown for a bad flag; the CLI maps it to exit code 2 (it takes the CLI's own class). */
type UsageCtor = new (message: string) => Error;

/** GO_DURATION — a Go duration as envoyproxy/ratelimit reads REDIS_TIMEOUT: `10s`, `500ms`, `1m30s`, `1.5s`. */
const GO_PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
const GO_UNIT: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** goDuration — ms of a Go duration string, or undefined when it is not one. */
export function goDuration(text: string): number | undefined {
  const t = text.trim();
  if (!/^((\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(GO_PART)) ms += Number(m[1]) * GO_UNIT[m[2]];
  return ms;
}

function bool(value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  return /^(1|true|yes|on|t)$/i.test(value);
}

function set(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * redisFlags — the flags' values (parseArgs) and the environment → RedisFlags, or undefined when none is given.
 * Also returns how REDIS_TYPE and REDIS_URL name the deployment, for the caller's `--redis`/`--redis-cluster`.
 */
export function redisFlags(f: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv, Usage: UsageCtor): RedisFlags {
  const from: Record<string, string> = {};
  const pick = <T>(key: string, flag: string, flagValue: T | undefined, envName: string | undefined, envValue: T | undefined): T | undefined => {
    if (flagValue !== undefined) {
      from[key] = flag;
      return flagValue;
    }
    if (envValue !== undefined && envName !== undefined) {
      from[key] = envName;
      return envValue;
    }
    return undefined;
  };
  const str = (name: string): string | undefined => {
    const v = f[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.trim() === '') throw new Usage(`--${name} must not be empty`);
    return v;
  };
  const r: RedisFlags = { from };
  const sentinels = str('redis-sentinel');
  if (sentinels !== undefined) {
    r.sentinels = sentinels.split(',').map((s) => s.trim()).filter(Boolean);
    if (r.sentinels.length === 0) throw new Usage(`--redis-sentinel names no Sentinel, got ${show(redactAddress(sentinels))}: give host:port,host:port,…`);
    from.sentinels = '--redis-sentinel';
  }
  const master = str('redis-sentinel-master');
  if (master !== undefined) {
    r.sentinelMaster = master;
    from.sentinelMaster = '--redis-sentinel-master';
  }
  if ((r.sentinels === undefined) !== (r.sentinelMaster === undefined)) {
    throw new Usage('--redis-sentinel and --redis-sentinel-master go together: the Sentinels (host:port,…) and the name of the master they monitor');
  }
  r.sentinelAuth = pick('sentinelAuth', '--redis-sentinel-auth', str('redis-sentinel-auth'), 'REDIS_SENTINEL_AUTH', set(env.REDIS_SENTINEL_AUTH));
  r.auth = pick('auth', '--redis-auth', str('redis-auth'), 'REDIS_AUTH', set(env.REDIS_AUTH));
  r.tls = pick('tls', '--redis-tls', f['redis-tls'] as boolean | undefined, 'REDIS_TLS', bool(env.REDIS_TLS));
  r.tlsSkipHostnameVerification = pick('tlsSkipHostnameVerification', '--redis-tls-skip-hostname-verification',
    f['redis-tls-skip-hostname-verification'] as boolean | undefined, 'REDIS_TLS_SKIP_HOSTNAME_VERIFICATION', bool(env.REDIS_TLS_SKIP_HOSTNAME_VERIFICATION));
  r.tlsCa = pick('tlsCa', '--redis-tls-ca', str('redis-tls-ca'), 'REDIS_TLS_CACERT', set(env.REDIS_TLS_CACERT));
  r.tlsCert = pick('tlsCert', '--redis-tls-cert', str('redis-tls-cert'), 'REDIS_TLS_CLIENT_CERT', set(env.REDIS_TLS_CLIENT_CERT));
  r.tlsKey = pick('tlsKey', '--redis-tls-key', str('redis-tls-key'), 'REDIS_TLS_CLIENT_KEY', set(env.REDIS_TLS_CLIENT_KEY));
  const ct = str('redis-connect-timeout');
  if (ct !== undefined) {
    const n = Number(ct);
    if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new Usage(`--redis-connect-timeout must be an integer number of ms >= 1, got ${show(ct)}`);
    r.connectTimeout = n;
    from.connectTimeout = '--redis-connect-timeout';
  } else if (set(env.REDIS_TIMEOUT) !== undefined) {
    const ms = goDuration(env.REDIS_TIMEOUT!);
    if (ms === undefined || ms < 1 || ms > 2 ** 31 - 1) throw new Usage(`REDIS_TIMEOUT must be a duration like 10s or 500ms, got ${show(env.REDIS_TIMEOUT)}`);
    r.connectTimeout = Math.round(ms);
    from.connectTimeout = 'REDIS_TIMEOUT';
  }
  const wr = str('redis-wait-replicas');
  if (wr !== undefined) {
    const n = Number(wr);
    if (!Number.isInteger(n) || n < 0 || n > 1000) throw new Usage(`--redis-wait-replicas must be an integer from 0 to 1000, got ${show(wr)}`);
    if (n > 0) r.waitReplicas = n;
  }
  const wt = str('redis-wait-timeout');
  if (wt !== undefined) {
    const n = Number(wt);
    if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new Usage(`--redis-wait-timeout must be an integer number of ms >= 1 (WAIT 0 would wait forever), got ${show(wt)}`);
    if (wr === undefined) throw new Usage('--redis-wait-timeout needs --redis-wait-replicas');
    r.waitTimeout = n;
  }
  localFirstFlags(r, str, f['redis-cold-fresh'] === true, Usage);
  // REDIS_SOCKET_TYPE (envoyproxy/ratelimit's default: unix): unix makes REDIS_URL a socket's path
  const socketType = set(env.REDIS_SOCKET_TYPE)?.toLowerCase();
  if (socketType !== undefined && socketType !== 'tcp' && socketType !== 'unix') throw new Usage(`REDIS_SOCKET_TYPE must be tcp or unix, got ${show(env.REDIS_SOCKET_TYPE)}`);
  if (socketType === 'unix') from.socketType = 'REDIS_SOCKET_TYPE';
  return r;
}

/**
 * redisTarget — what REDIS_TYPE and REDIS_URL (envoyproxy/ratelimit) name when no flag does: `single` (REDIS_URL:
 * host:port, a redis:// or rediss:// URL, or with REDIS_SOCKET_TYPE=unix a socket path), `cluster` (comma-separated
 * nodes) or `sentinel` (`<master name>,<sentinel>,<sentinel>…`). REDIS_TYPE is read without regard to case, as envoy
 * does (its default is SINGLE).
 */
export function redisTarget(env: NodeJS.ProcessEnv, Usage: UsageCtor): { redis?: string; cluster?: string[]; sentinels?: string[]; master?: string; socketPath?: string } {
  const url = set(env.REDIS_URL);
  if (url === undefined) return {};
  const type = (set(env.REDIS_TYPE) ?? 'single').toLowerCase();
  const list = url.split(',').map((s) => s.trim()).filter(Boolean);
  if (type === 'cluster') {
    if (list.length === 0) throw new Usage(`REDIS_URL with REDIS_TYPE=cluster names no node, got ${show(url)}: give host:port,host:port,…`);
    return { cluster: list };
  }
  if (type === 'sentinel') {
    if (list.length < 2) throw new Usage(`REDIS_URL with REDIS_TYPE=sentinel must be <master name>,<sentinel host:port>,…, got ${show(redactAddress(url))}`);
    return { master: list[0], sentinels: list.slice(1) };
  }
  if (type !== 'single') throw new Usage(`REDIS_TYPE must be single, cluster or sentinel, got ${show(env.REDIS_TYPE)}`);
  const socketType = set(env.REDIS_SOCKET_TYPE)?.toLowerCase();
  if (socketType === 'unix' || (socketType === undefined && url.startsWith('/'))) {
    if (!url.startsWith('/')) throw new Usage(`REDIS_SOCKET_TYPE=unix needs REDIS_URL to be a socket's path (/…), got ${show(redactAddress(url))}; set REDIS_SOCKET_TYPE=tcp for host:port`);
    return { socketPath: url };
  }
  return { redis: url };
}

/** ParsedUrl — one Redis address as written: host, port, credentials, database, and whether it asked for TLS. */
export interface ParsedUrl extends RedisNode {
  username?: string;
  password?: string;
  db?: number;
  tls: boolean;
}

/** parseRedisUrl — `redis://[user:pass@]host:port[/db]`, `rediss://…` (TLS) or envoy's `host:port`; errors name `flag` and never show a password. */
export function parseRedisUrl(url: string, flag: string): ParsedUrl {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `redis://${url}`;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new RatekeeperError(`serve: ${flag} must be a Redis URL like redis://127.0.0.1:6379, rediss://host:6380 or 127.0.0.1:6379, got ${show(redactAddress(url))}`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new RatekeeperError(`serve: ${flag} must use redis:// or rediss:// (TLS), got ${show(redactAddress(url))}`);
  }
  if (u.hostname === '') throw new RatekeeperError(`serve: ${flag} must name a host, got ${show(redactAddress(url))}`);
  const port = u.port === '' ? 6379 : Number(u.port);
  const out: ParsedUrl = { host: u.hostname.replace(/^\[|\]$/g, ''), port, tls: u.protocol === 'rediss:' };
  if (u.username) out.username = decodeURIComponent(u.username);
  if (u.password) out.password = decodeURIComponent(u.password);
  if (u.pathname.length > 1) {
    const db = Number(u.pathname.slice(1));
    if (!Number.isInteger(db) || db < 0) throw new RatekeeperError(`serve: ${flag} database must be an integer, got ${show(u.pathname.slice(1))}`);
    out.db = db;
  }
  return out;
}

/** splitAuth — envoy's REDIS_AUTH form: `user:password` (split at the first colon) or a password alone. */
export function splitAuth(auth: string): { username?: string; password: string } {
  const i = auth.indexOf(':');
  return i < 0 ? { password: auth } : { username: auth.slice(0, i), password: auth.slice(i + 1) };
}

/** readPem — a PEM file's text; an unreadable file is an error naming the flag. */
function readPem(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new RatekeeperError(`serve: ${what} ${show(path)} cannot be read: ${(e as Error).message}`);
  }
}

/**
 * tlsOptions — node:tls options from the files, each checked now so that a bad one is a startup error naming its
 * flag (a CA file must hold at least one certificate; a certificate and key must make a pair). The CA file adds to
 * the system's CAs, as envoyproxy/ratelimit's REDIS_TLS_CACERT does (x509.SystemCertPool + AppendCertsFromPEM).
 * Skipping hostname verification still verifies the chain (envoy's VerifyPeerCertificate without DNSName).
 */
export function tlsOptions(r: RedisFlags): ConnectionOptions {
  const o: ConnectionOptions = {};
  const name = (k: string, flag: string, env: string): string => r.from[k] ?? `${flag} (${env})`;
  if (r.tlsCa !== undefined) {
    const what = name('tlsCa', '--redis-tls-ca', 'REDIS_TLS_CACERT');
    const pem = readPem(r.tlsCa, what);
    const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) throw new RatekeeperError(`serve: ${what} ${show(r.tlsCa)} holds no PEM certificate`);
    for (const b of blocks) {
      try {
        new X509Certificate(b);
      } catch (e) {
        throw new RatekeeperError(`serve: ${what} ${show(r.tlsCa)} holds a certificate that cannot be read: ${(e as Error).message}`);
      }
    }
    o.ca = [...rootCertificates, ...blocks];
  }
  if ((r.tlsCert === undefined) !== (r.tlsKey === undefined)) {
    throw new RatekeeperError(`serve: a client certificate needs both ${name('tlsCert', '--redis-tls-cert', 'REDIS_TLS_CLIENT_CERT')} and ${name('tlsKey', '--redis-tls-key', 'REDIS_TLS_CLIENT_KEY')}`);
  }
  if (r.tlsCert !== undefined && r.tlsKey !== undefined) {
    const certWhat = name('tlsCert', '--redis-tls-cert', 'REDIS_TLS_CLIENT_CERT');
    const keyWhat = name('tlsKey', '--redis-tls-key', 'REDIS_TLS_CLIENT_KEY');
    o.cert = readPem(r.tlsCert, certWhat);
    o.key = readPem(r.tlsKey, keyWhat);
    try {
      createSecureContext({ cert: o.cert, key: o.key });
    } catch (e) {
      throw new RatekeeperError(`serve: ${certWhat} ${show(r.tlsCert)} and ${keyWhat} ${show(r.tlsKey)} do not make a certificate and key pair: ${(e as Error).message}`);
    }
  }
  if (r.tlsSkipHostnameVerification === true) o.checkServerIdentity = () => undefined;
  return o;
}

/** RedisPlan — the client to build, how to describe it, and the names of the flags for each kind of error. */
export interface RedisPlan {
  connect: RedisConnectOptions;
  /** describe — the deployment without credentials: `redis rediss://10.0.0.1:6380 (tls, auth)`. */
  describe: string;
  /** secrets — the passwords, to mask out of any message. */
  secrets: string[];
  /** passwordFrom, sentinelPasswordFrom, tlsFrom — which flags or variables to name when a password or TLS is refused. */
  passwordFrom: string;
  sentinelPasswordFrom: string;
  tlsFrom: string;
}

/**
 * redisPlan — the connection for `--redis` (or a socket path), `--redis-cluster` or `--redis-sentinel`, with the
 * RedisFlags around them: TLS when any URL is rediss:// or `tls` is set (all or none of a list: a mix is an error),
 * the password from the URL's userinfo, else `auth`. `flag` names where the address came from.
 */
export function redisPlan(where: { redis?: string; cluster?: string[]; sentinels?: string[]; master?: string; socketPath?: string }, r: RedisFlags, flag: string): RedisPlan {
  let mode: RedisConnectOptions['mode'];
  let parsed: ParsedUrl[];
  if (where.sentinels !== undefined) {
    mode = 'sentinel';
    parsed = where.sentinels.map((u) => parseRedisUrl(u, flag));
  } else if (where.cluster !== undefined) {
    mode = 'cluster';
    parsed = where.cluster.map((u) => parseRedisUrl(u, flag));
  } else if (where.socketPath !== undefined) {
    mode = 'single';
    parsed = [];
  } else {
    mode = 'single';
    parsed = [parseRedisUrl(where.redis!, flag)];
  }
  if (mode !== 'single' && parsed.length === 0) throw new RatekeeperError(`serve: ${flag} names no node`);
  const tlsUrls = parsed.filter((p) => p.tls).length;
  if (tlsUrls > 0 && tlsUrls < parsed.length) throw new RatekeeperError(`serve: ${flag} mixes rediss:// and redis:// addresses: TLS is all or none`);
  const tls = tlsUrls > 0 || r.tls === true;
  if (!tls) {
    // files given by flag while TLS is off are a mistake; envoy's variables are ignored then, as envoy ignores them
    for (const [k, f] of [['tlsCa', '--redis-tls-ca'], ['tlsCert', '--redis-tls-cert'], ['tlsKey', '--redis-tls-key'], ['tlsSkipHostnameVerification', '--redis-tls-skip-hostname-verification']] as const) {
      if (r.from[k] === f && r[k] !== undefined && r[k] !== false) throw new RatekeeperError(`serve: ${f} is given but TLS is off: use rediss:// URLs or --redis-tls`);
    }
  }
  const connect: RedisConnectOptions = { mode, nodes: parsed.map((p) => ({ host: p.host, port: p.port })) };
  if (where.socketPath !== undefined) connect.path = where.socketPath;
  if (r.connectTimeout !== undefined) connect.connectTimeout = r.connectTimeout;
  if (tls) connect.tls = tlsOptions(r);
  // the servers' credentials: a URL's own (the first that has some; with Sentinel, the Sentinels' URLs carry the
  // Sentinels' own), else --redis-auth / REDIS_AUTH
  const withCreds = mode === 'sentinel' ? undefined : parsed.find((p) => p.password !== undefined || p.username !== undefined);
  let passwordFrom = r.from.auth ?? 'REDIS_AUTH';
  const secrets: string[] = [];
  if (withCreds !== undefined) {
    if (withCreds.username !== undefined) connect.username = withCreds.username;
    if (withCreds.password !== undefined) connect.password = withCreds.password;
    passwordFrom = `the password in ${flag}`;
  } else if (r.auth !== undefined) {
    const a = splitAuth(r.auth);
    if (a.username !== undefined) connect.username = a.username;
    connect.password = a.password;
  }
  if (connect.password !== undefined) secrets.push(connect.password);
  const db = parsed.find((p) => p.db !== undefined)?.db;
  if (db !== undefined) {
    if (mode === 'cluster') throw new RatekeeperError(`serve: ${flag}: a Redis Cluster has only database 0, got /${db}`);
    connect.db = db;
  }
  let sentinelPasswordFrom = r.from.sentinelAuth ?? 'REDIS_SENTINEL_AUTH';
  if (mode === 'sentinel') {
    if (where.master === undefined || where.master === '') throw new RatekeeperError(`serve: ${flag} needs the master's name (--redis-sentinel-master, or REDIS_URL's first item)`);
    const s: NonNullable<RedisConnectOptions['sentinel']> = { name: where.master };
    connect.sentinel = s;
    const sCreds = parsed.find((p) => p.password !== undefined || p.username !== undefined);
    if (sCreds !== undefined) {
      if (sCreds.username !== undefined) s.username = sCreds.username;
      if (sCreds.password !== undefined) s.password = sCreds.password;
      sentinelPasswordFrom = `the password in ${flag}`;
    } else if (r.sentinelAuth !== undefined) {
      const a = splitAuth(r.sentinelAuth);
      if (a.username !== undefined) s.username = a.username;
      s.password = a.password;
    }
    if (s.password !== undefined) secrets.push(s.password);
  }
  const tlsFrom = tls
    ? [r.from.tlsCa ?? 'the system CAs', ...(r.tlsCert !== undefined ? [r.from.tlsCert, r.from.tlsKey] : []), ...(r.tlsSkipHostnameVerification ? [] : ['the server certificate\'s name'])].join(', ')
    : '';
  const plan: RedisPlan = { connect, describe: '', secrets, passwordFrom, sentinelPasswordFrom, tlsFrom };
  plan.describe = describeStore(connect);
  return plan;
}

/**
 * describeStore — the Redis deployment in words for the startup line and /healthcheck, never with a credential:
 * `redis rediss://10.0.0.1:6380 (auth)`, `redis cluster of redis://a:7000,redis://b:7001`, `redis sentinel master
 * mymaster via rediss://s1:26379,… (auth; sentinel auth)`, `redis unix:/var/run/redis.sock`.
 */
export function describeStore(c: RedisConnectOptions): string {
  const scheme = c.tls !== undefined ? 'rediss' : 'redis';
  const list = c.nodes.map((n) => `${scheme}://${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`).join(',');
  const notes: string[] = [];
  if (c.password !== undefined) notes.push(c.username !== undefined ? `auth as ${c.username}` : 'auth');
  if (c.sentinel?.password !== undefined) notes.push('sentinel auth');
  if (c.db !== undefined && c.db !== 0) notes.push(`db ${c.db}`);
  const tail = notes.length > 0 ? ` (${notes.join('; ')})` : '';
  if (c.mode === 'cluster') return redactUrl(`redis cluster of ${list}${tail}`);
  if (c.mode === 'sentinel') return redactUrl(`redis sentinel master ${c.sentinel!.name} via ${list}${tail}`);
  if (c.path !== undefined) return redactUrl(`redis unix:${c.path}${tail}`);
  return redactUrl(`redis ${list}${tail}`);
}
