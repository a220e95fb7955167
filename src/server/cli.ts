/**
 * server/cli — `ratekeeper serve` and `ratekeeper config check`: flags first, then the environment variables of
 * envoyproxy/ratelimit where one exists, then defaults. Loaded only by these commands (their dependencies — grpc-js,
 * proto-loader, prom-client, yaml — are not needed by the library).
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { show } from '../core/errors.js';
import { configCheck } from './config/index.js';
import type { OnStoreError, ServeOptions } from './serve.js';
import { REDIS_FLAGS, REDIS_HELP, redisFlags, redisTarget } from './redisOptions.js';
import { parseLogFormat, parseLogLevel } from './log.js';
import { KEY_VIEWS, type KeyView } from '../admin/keys.js';
import type { TlsFiles } from './tls.js';

export const SERVE_HELP = `ratekeeper serve — the rate limit service: Envoy's RLS v3 over gRPC, envoyproxy/ratelimit's POST /json,
the native POST /v1/check, GET /v1/auth (nginx auth_request), GET /healthcheck and GET /metrics; state in memory
(one instance) or Redis (a fleet). Three listeners: HTTP (:8080), gRPC (:8081) and the admin API and dashboard
(127.0.0.1:6070, on by default); each one moves with its flag or turns off with the value off.

Usage:
  ratekeeper serve --config PATH [options]

Options (environment variable used when the flag is absent):
  --config PATH            a YAML file or a directory of *.yaml        RATEKEEPER_CONFIG, else
                           (envoyproxy/ratelimit's YAML, plus policies)  $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config
  --host HOST              the address both listeners bind             HOST                    default: 127.0.0.1
  --port N                 HTTP port (off: no HTTP listener)            PORT                    default: 8080
  --grpc-port N            gRPC port (off: no gRPC listener)            GRPC_PORT               default: 8081
  --redis URL              Redis: redis://host:port, rediss://… (TLS) or host:port
                           (user:password@ in the URL)                 REDIS_URL (with REDIS_TYPE=single)
  --redis-cluster URLS     Redis Cluster: some nodes, comma-separated  REDIS_URL (with REDIS_TYPE=cluster)
                           (none of these: the embedded memory store, for one instance)
  -- redis connection (helper C) --
${REDIS_HELP}  -- end redis connection --
  --prefix TEXT            Redis key prefix                            CACHE_KEY_PREFIX        default: rk:
  --on-store-error MODE    when Redis fails: deny, allow, or memory    RATEKEEPER_ON_STORE_ERROR  default: memory
                           (decide on a local memory store until Redis answers again)
  --store-timeout MS       ms a Redis call may take                    RATEKEEPER_STORE_TIMEOUT   default: 1000
  --max-keys N             clients kept by the memory store (and the fallback)                 default: 1000000
  --request-timeout MS     ms a request may take to arrive whole, on both listeners (HTTP: 408;
                           gRPC: DEADLINE_EXCEEDED and the stream reset) RATEKEEPER_REQUEST_TIMEOUT default: 10000
  --grpc-max-streams N     calls one gRPC connection may have open at once
                                                                       RATEKEEPER_GRPC_MAX_STREAMS default: 1000
  --response-headers       add RateLimit-Policy, RateLimit and Retry-After to RLS responses
                                                                       RATE_LIMIT_RESPONSE_HEADERS_ENABLED=true
  --shadow-mode            decide and count, never refuse              SHADOW_MODE=true
  --denial-cache           answer a just-refused client locally until its retryAfter (Redis)
  --health-check-store     /healthcheck answers 500 while a Redis server (a Cluster master) does not answer
                           (off: 200, the body names it)               REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true
  --metrics-max-series N   metric keys made of request values (detailed_metric, value_to_metric) counted
                           apart; past N new ones count as limit="(overflow)"
                                                                       RATEKEEPER_METRICS_MAX_SERIES  default: 1000
  --admin-port N           the operators' view: admin API and dashboard (off: none)
                           (on by default, loopback only: --admin-port off turns it off)
                                                                       RATEKEEPER_ADMIN_PORT   default: 6070
  --admin-host HOST        where the admin listener binds              RATEKEEPER_ADMIN_HOST   default: 127.0.0.1
  --admin-token TOKEN      the admin API's bearer token (required off loopback; >= 16 characters)
                                                                       RATEKEEPER_ADMIN_TOKEN
  --admin-allowed-hosts H  comma-separated Host names the admin listener answers besides its own address
                           (name or name:port; others get 421)          RATEKEEPER_ADMIN_ALLOWED_HOSTS
  --admin-max-event-clients N  live tails open at once (503 past it)   RATEKEEPER_ADMIN_MAX_EVENT_CLIENTS   default: 64
  --grpc-reflection on|off gRPC server reflection (grpcurl list/describe); grpc.health.v1 is always on
                                                                       RATEKEEPER_GRPC_REFLECTION  default: on
  --help, -h               this text

Logs:
  --log-level LEVEL        debug, info, warn or error                  LOG_LEVEL               default: info
  --log-format FORMAT      text, or json: one object per line with @timestamp, level, @message and fields
                                                                       LOG_FORMAT              default: text
  --log-keys MODE          client keys in logs and the admin's live tail: plain, hash (sha256: + 12 hex)
                           or redact (the admin API keeps them)        RATEKEEPER_LOG_KEYS     default: plain
  --log-keys-secret TEXT   makes hash an HMAC (guessable keys: IPs, ids) RATEKEEPER_LOG_KEYS_SECRET


TLS (every listener takes the --tls-* files unless it has its own --http-tls-*, --grpc-tls-* or --admin-tls-*;
--<listener>-tls-cert off keeps that listener plain, --<listener>-tls-client-ca off drops mTLS there; the files
are re-read when they change, a Kubernetes Secret's symlink swap included: new connections get the new certificate,
open ones keep theirs, and a bad new file keeps the previous certificate and is logged):
  --tls-cert FILE          the server's certificate chain (PEM)        RATEKEEPER_TLS_CERT
  --tls-key FILE           its private key (PEM, unencrypted)          RATEKEEPER_TLS_KEY
  --tls-client-ca FILE     mTLS: clients must present a certificate signed by one of these CAs (PEM),
                           else they are refused at the handshake     RATEKEEPER_TLS_CLIENT_CA
  --tls-client-san NAME    mTLS: … whose subjectAltName names NAME (a DNS name or an IP)
                                                                       RATEKEEPER_TLS_CLIENT_SAN
  --http-tls-cert FILE, --http-tls-key FILE, --http-tls-client-ca FILE, --http-tls-client-san NAME
  --admin-tls-cert FILE, --admin-tls-key FILE, --admin-tls-client-ca FILE, --admin-tls-client-san NAME
  --grpc-tls-cert FILE, --grpc-tls-key FILE, --grpc-tls-client-ca FILE, --grpc-tls-client-san NAME
                           envoyproxy/ratelimit's names for the gRPC listener: GRPC_SERVER_USE_TLS=true with
                           GRPC_SERVER_TLS_CERT, GRPC_SERVER_TLS_KEY, GRPC_CLIENT_TLS_CACERT, GRPC_CLIENT_TLS_SAN

The configuration is reloaded within a second of a change (a Kubernetes ConfigMap's symlink swap included); a bad
one is rejected whole, logged and counted, and the previous one keeps serving. SIGTERM and SIGINT stop accepting
calls, answer those in flight, and exit 0.
`;

export const CONFIG_HELP = `ratekeeper config check — validates a configuration without serving it

Usage:
  ratekeeper config check PATH      a YAML file or a directory of *.yaml

Prints a summary and exits 0, or prints every error (file, descriptor path, field and value) and exits 1.
`;

/** UsageError — bad arguments: exit code 2. */
export class ServeUsageError extends Error {}

function int(value: string | undefined, what: string, min: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > 65_535 * 1_000_000) throw new ServeUsageError(`${what} must be an integer >= ${min}, got ${show(value)}`);
  return n;
}

function port(value: string | undefined, what: string): number | undefined {
  // `off` (or -1, written --port=-1 since a leading dash reads as an option) turns the listener off
  if (value !== undefined && /^(off|none)$/i.test(value.trim())) return -1;
  const n = int(value, what, -1);
  if (n !== undefined && n > 65_535) throw new ServeUsageError(`${what} must be a port from 0 to 65535 (or off for none), got ${show(value)}`);
  return n;
}

/** set — an environment variable's value, or undefined when it is unset or empty (an empty variable means unset). */
function set(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** nonEmpty — a flag's value, which must not be empty when given. */
function nonEmpty(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && value.trim() === '') throw new ServeUsageError(`${flag} must not be empty`);
  return value;
}

function bool(value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  return /^(1|true|yes|on)$/i.test(value);
}

/** serveOptions — ServeOptions from the flags and the environment (exported for tests). */
export function serveOptions(argv: string[], env: NodeJS.ProcessEnv): ServeOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv, allowPositionals: false, strict: true,
      options: {
        config: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' }, 'grpc-port': { type: 'string' },
        redis: { type: 'string' }, 'redis-cluster': { type: 'string' }, prefix: { type: 'string' },
        'on-store-error': { type: 'string' }, 'store-timeout': { type: 'string' }, 'max-keys': { type: 'string' },
        'request-timeout': { type: 'string' }, 'grpc-max-streams': { type: 'string' },
        'response-headers': { type: 'boolean' }, 'shadow-mode': { type: 'boolean' }, 'denial-cache': { type: 'boolean' }, 'health-check-store': { type: 'boolean' },
        'admin-port': { type: 'string' }, 'admin-host': { type: 'string' }, 'admin-token': { type: 'string' },
        'metrics-max-series': { type: 'string' },
        'admin-allowed-hosts': { type: 'string' }, 'admin-max-event-clients': { type: 'string' },
        // -- redis connection (helper C) --
        ...REDIS_FLAGS,
        // -- end redis connection --
        // -- logs --
        'log-level': { type: 'string' }, 'log-format': { type: 'string' }, 'log-keys': { type: 'string' }, 'log-keys-secret': { type: 'string' },
        // -- end logs --
        ...TLS_FLAGS,
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    throw new ServeUsageError(`${(e as Error).message} (see ratekeeper serve --help)`);
  }
  const f = parsed.values;
  if (f.help) return 'help';
  let config = nonEmpty(f.config, '--config') ?? set(env.RATEKEEPER_CONFIG);
  const runtimeRoot = set(env.RUNTIME_ROOT);
  if (config === undefined && runtimeRoot !== undefined) config = join(runtimeRoot, env.RUNTIME_SUBDIRECTORY ?? '', 'config');
  if (config === undefined) throw new ServeUsageError('serve needs --config PATH (a YAML file or a directory), or RATEKEEPER_CONFIG, or RUNTIME_ROOT');
  const onStoreError = (f['on-store-error'] ?? set(env.RATEKEEPER_ON_STORE_ERROR)) as OnStoreError | undefined;
  if (onStoreError !== undefined && !['deny', 'allow', 'memory'].includes(onStoreError)) {
    throw new ServeUsageError(`--on-store-error must be deny, allow or memory, got ${show(onStoreError)}`);
  }
  let redis = nonEmpty(f.redis, '--redis');
  let redisCluster = nonEmpty(f['redis-cluster'], '--redis-cluster')?.split(',').map((s) => s.trim()).filter(Boolean);
  // -- redis connection (helper C) --
  const redisConnect = redisFlags(f as Record<string, string | boolean | undefined>, env, ServeUsageError);
  let redisSentinel = redisConnect.sentinels;
  let redisSentinelMaster = redisConnect.sentinelMaster;
  let redisSocket: string | undefined;
  const given = ([['--redis', redis], ['--redis-cluster', redisCluster], ['--redis-sentinel', redisSentinel]] as const).filter(([, v]) => v !== undefined).map(([n]) => n);
  if (given.length > 1) throw new ServeUsageError(`give ${given.join(' or ')}, not ${given.length === 2 ? 'both' : 'several'}: one Redis deployment`);
  if (redis === undefined && redisCluster === undefined && redisSentinel === undefined) {
    const t = redisTarget(env, ServeUsageError);
    redis = t.redis;
    redisCluster = t.cluster;
    redisSentinel = t.sentinels;
    redisSentinelMaster = t.master;
    redisSocket = t.socketPath;
  }
  // -- end redis connection --
  const timeout = int(f['store-timeout'] ?? env.RATEKEEPER_STORE_TIMEOUT, '--store-timeout', 1);
  const maxKeys = int(f['max-keys'], '--max-keys', 1);
  const requestTimeout = int(f['request-timeout'] ?? set(env.RATEKEEPER_REQUEST_TIMEOUT), '--request-timeout', 1);
  const grpcMaxStreams = int(f['grpc-max-streams'] ?? set(env.RATEKEEPER_GRPC_MAX_STREAMS), '--grpc-max-streams', 1);
  const o: ServeOptions = {
    config,
    host: nonEmpty(f.host, '--host') ?? set(env.HOST) ?? '127.0.0.1',
    port: port(f.port ?? env.PORT, '--port') ?? 8080,
    grpcPort: port(f['grpc-port'] ?? env.GRPC_PORT, '--grpc-port') ?? 8081,
    responseHeaders: f['response-headers'] ?? bool(env.RATE_LIMIT_RESPONSE_HEADERS_ENABLED) ?? false,
    shadowMode: f['shadow-mode'] ?? bool(env.SHADOW_MODE) ?? false,
    denialCache: f['denial-cache'] ?? false,
  };
  const healthCheckStore = f['health-check-store'] ?? bool(env.REDIS_HEALTH_CHECK_ACTIVE_CONNECTION);
  if (healthCheckStore !== undefined) o.healthCheckStore = healthCheckStore;
  if (redis !== undefined) o.redis = redis;
  if (redisCluster !== undefined) o.redisCluster = redisCluster;
  // -- redis connection (helper C) --
  if (redisSentinel !== undefined) o.redisSentinel = redisSentinel;
  if (redisSentinelMaster !== undefined) o.redisSentinelMaster = redisSentinelMaster;
  if (redisSocket !== undefined) o.redisSocket = redisSocket;
  o.redisConnect = redisConnect;
  // -- end redis connection --
  const prefix = f.prefix ?? set(env.CACHE_KEY_PREFIX);
  if (prefix !== undefined) o.prefix = prefix;
  if (onStoreError !== undefined) o.onStoreError = onStoreError;
  if (timeout !== undefined) o.storeTimeout = timeout;
  if (maxKeys !== undefined) o.maxKeys = maxKeys;
  if (requestTimeout !== undefined) o.requestTimeout = requestTimeout;
  if (grpcMaxStreams !== undefined) o.grpcMaxStreams = grpcMaxStreams;
  const maxSeries = int(f['metrics-max-series'] ?? set(env.RATEKEEPER_METRICS_MAX_SERIES), '--metrics-max-series', 0);
  if (maxSeries !== undefined) o.metricsMaxSeries = maxSeries;
  o.adminPort = port(f['admin-port'] ?? set(env.RATEKEEPER_ADMIN_PORT), '--admin-port') ?? 6070;
  const adminHost = f['admin-host'] ?? set(env.RATEKEEPER_ADMIN_HOST);
  if (adminHost !== undefined) o.adminHost = adminHost;
  const adminToken = f['admin-token'] ?? set(env.RATEKEEPER_ADMIN_TOKEN);
  if (adminToken !== undefined) o.adminToken = adminToken;
  const allowed = f['admin-allowed-hosts'] ?? set(env.RATEKEEPER_ADMIN_ALLOWED_HOSTS);
  if (allowed !== undefined) o.adminAllowedHosts = allowed.split(',').map((h) => h.trim()).filter(Boolean);
  const maxTails = int(f['admin-max-event-clients'] ?? env.RATEKEEPER_ADMIN_MAX_EVENT_CLIENTS, '--admin-max-event-clients', 0);
  if (maxTails !== undefined) o.adminMaxEventClients = maxTails;
  // -- logs: flags, then envoyproxy/ratelimit's LOG_LEVEL and LOG_FORMAT (settings.go), then ours --
  logOptions(o, f, env);
  // -- end logs --
  Object.assign(o, tlsOptions(f as Record<string, string | undefined>, env));
  return o;
}

/** logOptions — --log-level, --log-format, --log-keys and --log-keys-secret (or their environment) into `o`. */
function logOptions(o: ServeOptions, f: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): void {
  const usage = <T>(read: () => T): T => {
    try {
      return read();
    } catch (e) {
      throw new ServeUsageError((e as Error).message.replace(/^ratekeeper: /, ''));
    }
  };
  const level = f['log-level'] as string | undefined;
  const levelEnv = set(env.LOG_LEVEL);
  if (level !== undefined) o.logLevel = usage(() => parseLogLevel(level, '--log-level'));
  else if (levelEnv !== undefined) o.logLevel = usage(() => parseLogLevel(levelEnv, 'LOG_LEVEL'));
  const format = f['log-format'] as string | undefined;
  const formatEnv = set(env.LOG_FORMAT);
  if (format !== undefined) o.logFormat = usage(() => parseLogFormat(format, '--log-format'));
  else if (formatEnv !== undefined) o.logFormat = usage(() => parseLogFormat(formatEnv, 'LOG_FORMAT'));
  const keys = (f['log-keys'] as string | undefined) ?? set(env.RATEKEEPER_LOG_KEYS);
  if (keys !== undefined) {
    const k = keys.trim().toLowerCase();
    if (!KEY_VIEWS.includes(k as KeyView)) throw new ServeUsageError(`--log-keys must be plain, hash or redact, got ${show(keys)}`);
    o.logKeys = k as KeyView;
  }
  const secret = nonEmpty(f['log-keys-secret'] as string | undefined, '--log-keys-secret') ?? set(env.RATEKEEPER_LOG_KEYS_SECRET);
  if (secret !== undefined) o.logKeysSecret = secret;
}

// --- TLS, gRPC health and reflection (issue 16 items 3 and 4) ---

/** TLS_LISTENERS — the listeners that can speak TLS, each with its own --<name>-tls-* flags. */
const TLS_LISTENERS = ['http', 'grpc', 'admin'] as const;
const TLS_PARTS = ['cert', 'key', 'client-ca', 'client-san'] as const;

/** TLS_FLAGS — --tls-cert …, --<listener>-tls-cert … and --grpc-reflection, all strings (this block's flags). */
const TLS_FLAGS: Record<string, { type: 'string' }> = Object.fromEntries(
  ['', ...TLS_LISTENERS.map((l) => `${l}-`)].flatMap((l) => TLS_PARTS.map((p) => [`${l}tls-${p}`, { type: 'string' as const }])).concat([['grpc-reflection', { type: 'string' }]]),
);

/** OFF — the value that turns a listener's TLS (or its mTLS) off where a default would apply. */
const OFF = /^(off|none)$/i;

/** goBool — a boolean as envoyproxy/ratelimit reads one (Go's strconv.ParseBool); anything else is refused. */
function goBool(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^(1|t|true)$/i.test(value)) return true;
  if (/^(0|f|false)$/i.test(value)) return false;
  throw new ServeUsageError(`${name} must be true or false, got ${show(value)}`);
}

/** Found — a value and the flag or environment variable it came from. */
type Found = { value: string; from: string } | undefined;

/**
 * tlsOptions — `tls` and `grpcReflection` of ServeOptions. Per listener, each file is looked for in its own flag,
 * then (gRPC only, with GRPC_SERVER_USE_TLS=true) envoyproxy/ratelimit's variable, then the shared flag, then the
 * shared variable. The certificate and key come from the same place (a listener's own certificate with the shared
 * key would be a mismatch waiting to happen); the client CA and SAN are looked for on their own, `off` ending the search.
 */
function tlsOptions(f: Record<string, string | undefined>, env: NodeJS.ProcessEnv): Pick<ServeOptions, 'tls' | 'grpcReflection'> {
  const out: Pick<ServeOptions, 'tls' | 'grpcReflection'> = {};
  const reflection = f['grpc-reflection'] ?? set(env.RATEKEEPER_GRPC_REFLECTION);
  if (reflection !== undefined) {
    if (/^(on|true|1|yes)$/i.test(reflection)) out.grpcReflection = true;
    else if (/^(off|false|0|no)$/i.test(reflection)) out.grpcReflection = false;
    else throw new ServeUsageError(`--grpc-reflection must be on or off, got ${show(reflection)}`);
  }
  const envoyTls = goBool(set(env.GRPC_SERVER_USE_TLS), 'GRPC_SERVER_USE_TLS') === true;
  const flag = (name: string): Found => {
    const v = nonEmpty(f[name], `--${name}`);
    return v === undefined ? undefined : { value: v, from: `--${name}` };
  };
  const variable = (name: string, when = true): Found => {
    const v = when ? set(env[name]) : undefined;
    return v === undefined ? undefined : { value: v, from: name };
  };
  const ENVOY = { cert: 'GRPC_SERVER_TLS_CERT', key: 'GRPC_SERVER_TLS_KEY', 'client-ca': 'GRPC_CLIENT_TLS_CACERT', 'client-san': 'GRPC_CLIENT_TLS_SAN' } as const;
  const SHARED = { cert: 'RATEKEEPER_TLS_CERT', key: 'RATEKEEPER_TLS_KEY', 'client-ca': 'RATEKEEPER_TLS_CLIENT_CA', 'client-san': 'RATEKEEPER_TLS_CLIENT_SAN' } as const;
  /** levels — where `part` of listener `l` is looked for, in order. */
  const levels = (l: typeof TLS_LISTENERS[number], part: typeof TLS_PARTS[number]): (() => Found)[] => [
    () => flag(`${l}-tls-${part}`),
    () => (l === 'grpc' ? variable(ENVOY[part], envoyTls) : undefined),
    () => flag(`tls-${part}`),
    () => variable(SHARED[part]),
  ];
  const first = (l: typeof TLS_LISTENERS[number], part: typeof TLS_PARTS[number]): [Found, number] => {
    const ls = levels(l, part);
    for (let i = 0; i < ls.length; i++) {
      const v = ls[i]();
      if (v !== undefined) return [v, i];
    }
    return [undefined, -1];
  };
  const tls: NonNullable<ServeOptions['tls']> = {};
  for (const l of TLS_LISTENERS) {
    const [cert, at] = first(l, 'cert');
    // envoyproxy/ratelimit refuses to start with GRPC_SERVER_USE_TLS and no certificate (its CertProvider panics)
    if (envoyTls && l === 'grpc' && cert === undefined) throw new ServeUsageError('GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (or --grpc-tls-cert and --grpc-tls-key)');
    const [key, keyAt] = first(l, 'key');
    if (key !== undefined && (cert === undefined || keyAt < at)) {
      const wanted = keyAt === 1 ? ENVOY.cert : keyAt === 3 ? SHARED.cert : key.from.replace(/key$/, 'cert');
      throw new ServeUsageError(`${key.from} needs its certificate: ${wanted} FILE`);
    }
    if (cert === undefined || OFF.test(cert.value)) {
      const ownCa = flag(`${l}-tls-client-ca`) ?? flag(`${l}-tls-client-san`);
      if (cert === undefined && ownCa !== undefined && !OFF.test(ownCa.value)) throw new ServeUsageError(`${ownCa.from} needs the listener's certificate: --${l}-tls-cert FILE and --${l}-tls-key FILE`);
      continue;
    }
    const keyHere = levels(l, 'key')[at]();
    if (keyHere === undefined) throw new ServeUsageError(`${cert.from} needs its private key: ${at === 1 ? ENVOY.key : at === 3 ? SHARED.key : cert.from.replace(/cert$/, 'key')} FILE`);
    const files: TlsFiles = { cert: cert.value, key: keyHere.value, flags: { cert: cert.from, key: keyHere.from } };
    const [ca] = first(l, 'client-ca');
    if (ca !== undefined && !OFF.test(ca.value)) {
      files.clientCa = ca.value;
      files.flags!.clientCa = ca.from;
    }
    const [san] = first(l, 'client-san');
    if (san !== undefined && !OFF.test(san.value)) {
      if (files.clientCa === undefined) throw new ServeUsageError(`${san.from} checks client certificates: give the listener a client CA too (--${l}-tls-client-ca FILE or --tls-client-ca FILE)`);
      files.clientSan = san.value;
    }
    tls[l] = files;
  }
  if (Object.keys(tls).length > 0) out.tls = tls;
  else {
    const shared = flag('tls-client-ca') ?? flag('tls-client-san') ?? variable(SHARED['client-ca']) ?? variable(SHARED['client-san']);
    if (shared !== undefined) throw new ServeUsageError(`${shared.from} needs a certificate: --tls-cert FILE and --tls-key FILE`);
  }
  return out;
}
// --- end TLS, gRPC health and reflection ---

/** serveCommand — runs the service until SIGTERM or SIGINT; resolves with the exit code. */
export async function serveCommand(argv: string[]): Promise<number> {
  const o = serveOptions(argv, process.env);
  if (o === 'help') {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  // the service's dependencies (grpc-js, prom-client) load only once the flags are known to be good
  const { startService } = await import('./serve.js');
  let running: Awaited<ReturnType<typeof startService>>;
  try {
    running = await startService(o);
  } catch (e) {
    // a JSON log stays JSON to its last line: the reason the service did not start is one error object
    if (o.logFormat !== 'json') throw e;
    const { createLogger } = await import('./log.js');
    const log = await createLogger({ format: 'json' });
    log.error(e instanceof Error ? e.message.replace(/^ratekeeper: /, '') : String(e), { event: 'start_failed' });
    return 1;
  }
  const log = running.log;
  return new Promise((resolve) => {
    const stop = (signal: string): void => {
      log.info(`${signal}: draining`, { event: 'draining', signal });
      running.close().then(
        () => {
          log.info('stopped', { event: 'stopped' });
          resolve(0);
        },
        (e: unknown) => {
          log.error(`stopping failed: ${String(e)}`, { event: 'stop_failed' });
          resolve(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

/** configCommand — `ratekeeper config check PATH`. */
export async function configCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    throw new ServeUsageError(`${(e as Error).message} (see ratekeeper config --help)`);
  }
  if (parsed.values.help) {
    process.stdout.write(CONFIG_HELP);
    return 0;
  }
  const [sub, path, ...extra] = parsed.positionals;
  if (sub !== 'check') throw new ServeUsageError(`unknown config command ${show(sub)}: use ratekeeper config check PATH`);
  if (path === undefined || extra.length > 0) throw new ServeUsageError('config check takes one PATH (a YAML file or a directory)');
  return configCheck(path, (line) => process.stdout.write(`${line}\n`));
}
