/**
 * server/cli — `ratekeeper serve` and `ratekeeper config check`: flags first, then the environment variables of
 * envoyproxy/ratelimit where one exists, then defaults. Loaded only by these commands (their dependencies — grpc-js,
 * proto-loader, prom-client, yaml — are not needed by the library). The help texts are in serveHelp.ts, the value
 * readers in flagValues.ts, the TLS flags in tlsFlags.ts and the Redis ones in redisOptions.ts.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { show } from '../core/errors.js';
import { configCheck } from './config/index.js';
import type { OnStoreError, ServeOptions } from './serveOptions.js';
import { REDIS_FLAGS, redisFlags, redisTarget } from './redisOptions.js';
import { parseLogFormat, parseLogLevel } from './log.js';
import { KEY_VIEWS, type KeyView } from '../admin/keys.js';
import { bool, int, nonEmpty, port, ServeUsageError, set } from './flagValues.js';
import { CONFIG_HELP, SERVE_HELP } from './serveHelp.js';
import { TLS_FLAGS, tlsOptions } from './tlsFlags.js';

export { ServeUsageError } from './flagValues.js';

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
        ...REDIS_FLAGS,
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
  if (redisCluster?.length === 0) throw new ServeUsageError(`--redis-cluster names no node, got ${show(f['redis-cluster'])}: give host:port,host:port,…`);
  const redisConnect = redisFlags(f as Record<string, string | boolean | undefined>, env, ServeUsageError);
  let redisSentinel = redisConnect.sentinels;
  let redisSentinelMaster = redisConnect.sentinelMaster;
  let redisSocket: string | undefined;
  const given = ([['--redis', redis], ['--redis-cluster', redisCluster], ['--redis-sentinel', redisSentinel]] as const).filter(([, v]) => v !== undefined).map(([n]) => n);
  if (given.length > 1) throw new ServeUsageError(`give ${given.join(' or ')}, not ${given.length === 2 ? 'both' : 'several'}: one Redis deployment`);
  if (redis === undefined && redisCluster === undefined && redisSentinel === undefined) {
    const t = redisTarget(env, ServeUsageError);
    // the address came from REDIS_URL: its errors name REDIS_URL, not a flag that was never given
    if (t.redis !== undefined || t.cluster !== undefined) redisConnect.from.url = 'REDIS_URL';
    redis = t.redis;
    redisCluster = t.cluster;
    redisSentinel = t.sentinels;
    redisSentinelMaster = t.master;
    redisSocket = t.socketPath;
  }
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
  if (redisSentinel !== undefined) o.redisSentinel = redisSentinel;
  if (redisSentinelMaster !== undefined) o.redisSentinelMaster = redisSentinelMaster;
  if (redisSocket !== undefined) o.redisSocket = redisSocket;
  o.redisConnect = redisConnect;
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
