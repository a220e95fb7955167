import { readFileSync } from 'node:fs';
import type { Server as TlsServer } from 'node:tls';
import { memoryStore } from '../stores/memory.js';
import type { AdminServer } from '../admin/serve.js';
import type { Store } from '../stores/types.js';
import { RatekeeperError } from '../core/errors.js';
import { loadConfig } from './config/index.js';
import { loadConfigOffThread } from './config/offThread.js';
import { RateLimitService } from './service.js';
import { sameConfig } from './config/same.js';
import { Metrics } from './metrics.js';
import { HttpFront, type Health } from './http.js';
import type { StoreHealth } from '../stores/redis/health.js';
import { GrpcFront, tlsCredentials } from './grpc.js';
import { ConfigWatcher } from './reload.js';
import { listenFailed } from './listeners.js';
import { createLogger, quoted, type LogFormat, type Logger, type LogLevel } from './log.js';
import { describeStore } from './redact.js';
import { StoreWatch } from './storeWatch.js';
import type { KeyView } from '../admin/keys.js';
import { GrpcHealth } from './health.js';
import { contextOptions, describeCert, sanCheck, secureOptions, TlsSource, type TlsFiles } from './tls.js';
import { redisPlan, type RedisFlags } from './redisOptions.js';
import { redactSecrets } from '../core/redact.js';

/** OnStoreError — the failure policy when Redis does not answer (the Redis store's `onError`). */
export type OnStoreError = 'deny' | 'allow' | 'memory';

/** ServeOptions — one service process. Ports of 0 pick free ones; a port of -1 turns that listener off. */
export interface ServeOptions {
  /** config — a YAML file or a directory of them. */
  config: string;
  host?: string;
  /** port — HTTP (/json, /v1/check, /healthcheck, /metrics). @default 8080 */
  port?: number;
  /** grpcPort — Envoy's RLS v3. @default 8081 */
  grpcPort?: number;
  /**
   * redis — a Redis URL (redis://host:port, rediss://host:port for TLS, or host:port; credentials as user:pass@);
   * redisCluster — the URLs of some cluster nodes; redisSentinel — the Sentinels (host:port each) watching the master
   * named redisSentinelMaster; redisSocket — a unix socket's path. None: memory.
   */
  redis?: string;
  redisCluster?: string[];
  redisSentinel?: string[];
  redisSentinelMaster?: string;
  redisSocket?: string;
  /** redisConnect — TLS files, passwords, the first connection's bound and WAIT (src/server/redisOptions.ts). */
  redisConnect?: RedisFlags;
  /** prefix — the Redis key prefix. @default 'rk:' */
  prefix?: string;
  onStoreError?: OnStoreError;
  /** storeTimeout — ms a Redis call may take before the failure policy answers. @default 1000 */
  storeTimeout?: number;
  /** maxKeys — the memory store's bound (and the fallback's). */
  maxKeys?: number;
  /**
   * requestTimeout — ms a request may take to arrive whole on either listener: HTTP answers 408, gRPC answers
   * DEADLINE_EXCEEDED and resets the stream. @default 10_000
   */
  requestTimeout?: number;
  /** grpcMaxStreams — calls one gRPC connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). @default 1000 */
  grpcMaxStreams?: number;
  responseHeaders?: boolean;
  shadowMode?: boolean;
  denialCache?: boolean;
  /** reloadPollMs — how often the configuration files are looked at. @default 250 */
  reloadPollMs?: number;
  /** reloadQuietMs — how long changed configuration files must stay unchanged before they are loaded (ms). @default 300 */
  reloadQuietMs?: number;
  /**
   * healthCheckStore — /healthcheck answers 500 while a Redis server of the store (a Cluster master) does not answer
   * (envoyproxy/ratelimit's REDIS_HEALTH_CHECK_ACTIVE_CONNECTION). Off, it answers 200 and names the unreachable
   * servers in its body: every instance shares the store, so failing the probe on its outage fails every instance at
   * once (docs/server.md, which probe for what). @default false
   */
  healthCheckStore?: boolean;
  /**
   * adminPort — the operators' view (admin API, live tail, dashboard: ratekeeper/admin) on its own listener; 0 picks a
   * free port; undefined or -1: none. `ratekeeper serve` defaults it to 6070.
   */
  adminPort?: number;
  /** adminHost — where the admin listener binds. Off loopback a token is required. @default '127.0.0.1' */
  adminHost?: string;
  /** adminToken — the admin API's bearer token. @default process.env.RATEKEEPER_ADMIN_TOKEN */
  adminToken?: string;
  /**
   * metricsMaxSeries — the most `limit` label values made of request values (detailed_metric, value_to_metric);
   * past it they are counted under `limit="(overflow)"`. @default 1000
   */
  metricsMaxSeries?: number;
  /**
   * adminAllowedHosts — `Host` names the admin listener answers besides its own address (a name a reverse proxy or
   * the operators use: `ops.example.com`, `ops.example.com:8443`); any other gets 421 (DNS rebinding). @default []
   */
  adminAllowedHosts?: string[];
  /** adminMaxEventClients — live tails (`/admin/events`) open at once; one more gets 503. @default 64 */
  adminMaxEventClients?: number;
  // -- logs (issue 16 item 5) --
  /** logLevel — the lowest level written (LOG_LEVEL). @default 'info' */
  logLevel?: LogLevel;
  /** logFormat — `text`, or `json`: one object per line with envoyproxy/ratelimit's field names (log.ts). @default 'text' */
  logFormat?: LogFormat;
  /**
   * logKeys — how client keys appear in the logs and the admin's live tail: `plain`, `hash` or `redact`
   * (admin/keys.ts); the admin API's answers keep the real keys. @default 'plain'
   */
  logKeys?: KeyView;
  /** logKeysSecret — the HMAC key of logKeys `hash` (RATEKEEPER_LOG_KEYS_SECRET). */
  logKeysSecret?: string;
  /** log — receives every log line (text or JSON, without its newline). @default a write to stderr */
  // --- TLS, gRPC health and reflection (issue 16 items 3 and 4) ---
  /**
   * tls — TLS per listener (`http`, `grpc`, `admin`), each from its files (server/tls.ts: certificate, key, and for
   * mTLS the client CA and name); a listener without an entry speaks plain text. The files are re-read when they
   * change (a Kubernetes Secret's symlink swap included): new connections get the new certificate, open ones keep
   * theirs; a bad rotated file keeps the previous certificate and is logged.
   */
  tls?: { http?: TlsFiles; grpc?: TlsFiles; admin?: TlsFiles };
  /** tlsPollMs — how often the TLS files are looked at (ms); tlsQuietMs — how long a change must settle. @default 1000, 300 */
  tlsPollMs?: number;
  tlsQuietMs?: number;
  /**
   * grpcReflection — gRPC server reflection on the gRPC listener (grpcurl): off hides the service descriptors.
   * gRPC health (grpc.health.v1) is always on. @default true
   */
  grpcReflection?: boolean;
  // --- end TLS, gRPC health and reflection ---
  log?: (line: string) => void;
  // -- end logs --
}

/** Running — a started service. */
export interface Running {
  service: RateLimitService;
  metrics: Metrics;
  httpPort: number | undefined;
  grpcPort: number | undefined;
  /** adminUrl — the dashboard's URL, when the admin listener is on. */
  adminUrl: string | undefined;
  /** health — the gRPC health service's status (undefined without the gRPC listener or grpc-health-check). */
  health: GrpcHealth | undefined;
  /** tls — the TLS sources of the listeners that have one (their material in force, reload counts). */
  tls: { http?: TlsSource; grpc?: TlsSource; admin?: TlsSource };
  /** store — the store in words, never with a credential: `memory`, `redis rediss://10.0.0.1:6380 (auth)`, `redis sentinel master m via …`. */
  store: string;
  /** reload — loads the configuration now (what the watcher does on a change); rejects when it is bad. */
  reload(): Promise<void>;
  /** close — stops accepting calls, answers those in flight, closes the store's connections. */
  close(): Promise<void>;
  /** log — the service's logger (the drain's lines go through it too). */
  log: Logger;
}

/** startService — loads the configuration, connects the store and opens the listeners; logs one line per listener. */
export async function startService(options: ServeOptions): Promise<Running> {
  const logger = await createLogger({ level: options.logLevel, format: options.logFormat, sink: options.log, keys: options.logKeys, keysSecret: options.logKeysSecret });
  const host = options.host ?? '127.0.0.1';
  const metrics = new Metrics({ maxSeries: options.metricsMaxSeries, log: (l) => logger.warn(l, { event: 'metrics_overflow' }) });
  const cfg = await loadConfig(options.config).catch((e: unknown) => {
    metrics.configLoaded(false);
    throw e;
  });
  metrics.configLoaded(true, cfg.loadedAt);
  const withAdmin = options.adminPort !== undefined && options.adminPort >= 0;
  const { store, close: closeStore, healthy: storeHealthy, describe: storeText } = await openStore(options, logger);
  const described = describeStore(options, storeText);
  logger.info(`store: ${described.text}`, { event: 'store', ...described.fields });
  const service = new RateLimitService({
    store, metrics, responseHeaders: options.responseHeaders, shadowMode: options.shadowMode, denialCache: options.denialCache,
    observe: withAdmin,
  });
  service.setConfig(cfg);
  let shown = configText(cfg.files);
  logger.info(`config ${options.config}: ${cfg.files.length} file(s), ${cfg.domains.length} domain(s), ${cfg.limits.length} limit(s), ${cfg.policies.size} polic${cfg.policies.size === 1 ? 'y' : 'ies'}`, {
    event: 'config', path: options.config, files: cfg.files.length, domains: cfg.domains.length, limits: cfg.limits.length, policies: cfg.policies.size,
  });
  if (logger.enabled('debug')) for (const d of cfg.domains) logger.debug(`config: domain ${d}`, { event: 'config_domain', domain: d });

  // a reload reads, parses and validates in a worker thread, builds the new limiters in slices between checks, then
  // swaps the configuration in one step: the one in force serves until then (one reload at a time)
  let reloading: Promise<void> = Promise.resolve();
  const reload = (): Promise<void> => {
    const r = reloading.then(reloadNow);
    reloading = r.catch(() => undefined);
    return r;
  };
  const reloadNow = async (): Promise<void> => {
    try {
      const next = await loadConfigOffThread(options.config);
      const text = configText(next.files);
      // an identical rewrite (the same bytes, or the same limits and policies written otherwise: comments, layout) is
      // not a reload: nothing is rebuilt, counted or logged; the admin view shows the files as they are now
      const current = service.config;
      if (text === shown || (current !== undefined && sameConfig(current, next))) {
        shown = text;
        logger.debug('config rewritten with the same limits and policies: not a reload', { event: 'config_same' });
        return;
      }
      const { kept, carried, fresh } = service.commit(await service.prepare(next));
      shown = text;
      metrics.configLoaded(true, next.loadedAt);
      logger.info(`config reloaded: ${next.limits.length} limit(s), ${next.policies.size} polic${next.policies.size === 1 ? 'y' : 'ies'}; ${kept} kept their state, ${carried} carried it to new rules, ${fresh} start fresh`, {
        event: 'config_reloaded', limits: next.limits.length, policies: next.policies.size, kept, carried, fresh,
      });
    } catch (e) {
      metrics.configLoaded(false);
      throw e;
    }
  };
  /** tlsLog — the TLS sources' lines (rotations applied or refused) through the logger. */
  const tlsLog = (l: string): void => (/not usable|could not/.test(l) ? logger.error(strip(l), { event: 'tls' }) : logger.info(strip(l), { event: 'tls' }));
  // the TLS files are read (and checked) before anything listens: a bad one is a startup error naming its flag
  const tls: Running['tls'] = {};
  const closeTls = (): void => {
    for (const t of Object.values(tls)) t?.close();
  };
  try {
    for (const name of ['http', 'grpc', 'admin'] as const) {
      const files = options.tls?.[name];
      if (files === undefined) continue;
      if (name === 'http' && (options.port ?? 8080) < 0) continue;
      if (name === 'grpc' && (options.grpcPort ?? 8081) < 0) continue;
      if (name === 'admin' && !withAdmin) continue;
      tls[name] = await TlsSource.open(`the ${name} listener`, files, { pollMs: options.tlsPollMs, quietMs: options.tlsQuietMs, log: tlsLog });
    }
  } catch (e) {
    closeTls();
    await closeStore();
    throw e;
  }
  const watcher = new ConfigWatcher({ path: options.config, reload, pollMs: options.reloadPollMs, quietMs: options.reloadQuietMs, log: (l) => logger.warn(l, { event: 'config_rejected' }) });
  await watcher.start();

  let http: HttpFront | undefined;
  let grpcFront: GrpcFront | undefined;
  let health: GrpcHealth | undefined;
  /** draining — close() has started: /healthcheck answers 500 and gRPC health NOT_SERVING from then on. */
  let draining = false;
  const healthy = (): ReturnType<typeof storeHealthy> => (draining ? { ok: false, text: 'NOT OK\ndraining: the service is stopping' } : storeHealthy());
  try {
    if ((options.port ?? 8080) >= 0) {
      const t = tls.http;
      http = new HttpFront({ service, metrics, healthy, log: (l) => logger.error(l), requestTimeout: options.requestTimeout, tls: t === undefined ? undefined : secureOptions(t.current) });
      if (t !== undefined) {
        const server = http.server as unknown as TlsServer;
        t.onChange((m) => server.setSecureContext(contextOptions(m)));
        if (t.files.clientSan !== undefined) server.prependListener('secureConnection', sanCheck(t.files.clientSan));
      }
      const p = await http.listen(host, options.port ?? 8080).catch((e: unknown) => {
        throw listenFailed(e, 'http', hostPort(host, options.port ?? 8080));
      });
      logger.info(`http listening on ${hostPort(host, p)}${tlsWords(tls.http)} (POST /json, POST /v1/check, GET /v1/auth, GET /healthcheck, GET /metrics)`, { event: 'listening', listener: 'http', address: hostPort(host, p), tls: t !== undefined });
    }
    if ((options.grpcPort ?? 8081) >= 0) {
      const t = tls.grpc;
      let credentials;
      if (t !== undefined) {
        const c = tlsCredentials(contextOptions(t.current), t.current.ca !== undefined, options.requestTimeout ?? 10_000);
        if (!c.rotates) logger.warn('tls: this @grpc/grpc-js cannot swap the gRPC listener\'s certificate: restart the service to rotate it', { event: 'tls' });
        t.onChange((m) => c.update(contextOptions(m)));
        credentials = c.credentials;
      }
      grpcFront = new GrpcFront(service, metrics, (l) => logger.error(l), {
        requestTimeout: options.requestTimeout, maxConcurrentStreams: options.grpcMaxStreams, credentials,
        secureConnection: t?.files.clientSan === undefined ? undefined : sanCheck(t.files.clientSan),
      });
      health = await GrpcHealth.add(grpcFront.server).catch((e: unknown) => {
        logger.warn(`${(e as Error).message.replace(/^serve: /, '')}: grpc.health.v1 answers UNIMPLEMENTED`, { event: 'grpc_health' });
        return undefined;
      });
      if (health !== undefined && options.healthCheckStore === true) health.watchStore(async () => {
        const h = await storeHealthy();
        return typeof h === 'boolean' ? h : h.ok;
      });
      let reflection = false;
      if (options.grpcReflection !== false) {
        const { addReflection, healthProtoPath } = await import('./reflection.js');
        reflection = await addReflection(grpcFront.server, health === undefined ? undefined : await healthProtoPath()).then(() => true, (e: unknown) => {
          logger.warn(`${(e as Error).message.replace(/^serve: /, '')}: grpcurl needs the .proto files`, { event: 'grpc_reflection' });
          return false;
        });
      }
      const p = await grpcFront.listen(host, options.grpcPort ?? 8081).catch((e: unknown) => {
        throw listenFailed(e, 'grpc', hostPort(host, options.grpcPort ?? 8081));
      });
      logger.info(`grpc listening on ${hostPort(host, p)}${tlsWords(tls.grpc)} (envoy.service.ratelimit.v3.RateLimitService${health === undefined ? '' : ', grpc.health.v1.Health'}${reflection ? ', grpc.reflection' : ''})`, { event: 'listening', listener: 'grpc', address: hostPort(host, p), tls: t !== undefined });
    }
  } catch (e) {
    closeTls();
    health?.drain();
    watcher.close();
    await http?.close(0);
    await grpcFront?.close(0);
    await closeStore();
    throw e;
  }
  let admin: AdminServer | undefined;
  if (withAdmin) {
    try {
      const { serveAdmin } = await import('../admin/serve.js');
      admin = await serveAdmin({
        limiters: () => service.limiters(), host: options.adminHost ?? '127.0.0.1', port: options.adminPort, token: options.adminToken,
        allowedHosts: options.adminAllowedHosts ?? [], maxEventClients: options.adminMaxEventClients ?? 64,
        // logs: the live tail shows keys as the logs do; each change is one line (its key shown so too, by the handler)
        logKeys: options.logKeys, logKeysSecret: options.logKeysSecret,
        // the key and the operator's reason quoted: neither can start a log line of its own or reorder this one
        log: (e) => logger.info(`admin: ${e.what} ${quoted(e.key)} on ${e.limiters.join(', ') || 'no limiter'} by ${e.who}${e.for === undefined ? '' : ` for ${e.for} ms`}${e.reason === undefined ? '' : ` (reason ${quoted(e.reason)})`}`, { event: 'admin', ...e }),
        config: () => ({ text: shown, loadedAt: service.config?.loadedAt ?? 0, files: service.config?.files ?? [] }),
        ...(tls.admin === undefined ? {} : { tls: { ...secureOptions(tls.admin.current), handshakeTimeout: options.requestTimeout ?? 10_000 } }),
      }).catch((e: unknown) => {
        throw e instanceof RatekeeperError ? e : listenFailed(e, 'admin', hostPort(options.adminHost ?? '127.0.0.1', options.adminPort ?? 6070));
      });
      const t = tls.admin;
      if (t !== undefined) {
        const server = admin.server as unknown as TlsServer;
        t.onChange((m) => server.setSecureContext(contextOptions(m)));
        if (t.files.clientSan !== undefined) server.prependListener('secureConnection', sanCheck(t.files.clientSan));
      }
      logger.info(`admin listening on ${admin.url}${tlsWords(tls.admin)} (the dashboard; GET /admin/top, /admin/keys/:key, /admin/blocks …)`, { event: 'listening', listener: 'admin', address: admin.url, tls: t !== undefined });
    } catch (e) {
      closeTls();
      health?.drain();
      watcher.close();
      await Promise.all([http?.close(0), grpcFront?.close(0)]);
      await closeStore();
      throw e;
    }
  }
  let closing: Promise<void> | undefined;
  return {
    service, metrics, reload, log: logger, store: storeText,
    httpPort: http?.port, grpcPort: grpcFront?.port, adminUrl: admin?.url, health, tls,
    close: () => (closing ??= (async () => {
      // the drain starts: health checks fail at once (gRPC Watch streams hear NOT_SERVING and end), then the
      // listeners stop accepting and answer what is in flight
      draining = true;
      health?.drain();
      closeTls();
      watcher.close();
      await Promise.all([http?.close(), grpcFront?.close(), admin?.close()]);
      // each limiter stops sharing its observations; the store they share is closed once, below (Limiter.close closes
      // the store: once per limiter it cleared every table each time, O(limiters²): 11 000 limiters took minutes)
      for (const [, l] of service.limiters()) l.sharing?.stop();
      service.dropRetired();
      await closeStore();
    })()),
  };
}

/** configText — the configuration's files as text for the admin view (each under a `# file:` line). */
function configText(files: readonly string[]): string {
  return files.map((f) => {
    try {
      return `# file: ${f}\n${readFileSync(f, 'utf8')}`;
    } catch {
      return `# file: ${f} (unreadable now)\n`;
    }
  }).join('\n');
}

/** strip — a line written for the old `log(line)` sinks, without its `ratekeeper: ` prefix (the logger adds it). */
function strip(line: string): string {
  return line.replace(/^ratekeeper: /, '');
}

/** tlsWords — how a listener's log line says it speaks TLS: ` with TLS (certificate …; mTLS: …)`, or nothing. */
function tlsWords(t: TlsSource | undefined): string {
  if (t === undefined) return '';
  const f = t.files;
  const mtls = f.clientCa === undefined ? '' : `; mTLS: client certificates signed by ${f.clientCa}${f.clientSan === undefined ? '' : ` naming ${f.clientSan}`}`;
  return ` with TLS (${describeCert(t.current)}${mtls}; files re-read when they change)`;
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** OpenedStore — the service's store, how to close it, its health, and its description without credentials. */
interface OpenedStore {
  store: Store;
  close: () => Promise<void>;
  healthy: () => boolean | Health | Promise<boolean | Health>;
  describe: string;
}

/**
 * openStore — the memory store, or a Redis store on an ioredis client the service owns (and closes). The first
 * connection is awaited up to the connect timeout: a refused password or TLS handshake is a startup error naming its
 * flag or variable; a server that does not answer in time is logged and the service starts on its failure policy
 * (it connects when the server comes).
 */
async function openStore(options: ServeOptions, logger: Logger): Promise<OpenedStore> {
  const r: RedisFlags = options.redisConnect ?? { from: {} };
  const cluster = options.redisCluster !== undefined && options.redisCluster.length > 0 ? options.redisCluster : undefined;
  const sentinels = options.redisSentinel !== undefined && options.redisSentinel.length > 0 ? options.redisSentinel : undefined;
  if (options.redis === undefined && cluster === undefined && sentinels === undefined && options.redisSocket === undefined) {
    const store = memoryStore(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys });
    return { store, close: async () => store.close(), healthy: () => true, describe: 'memory' };
  }
  const flag = sentinels !== undefined ? (r.from.sentinels ?? 'REDIS_URL') : cluster !== undefined ? '--redis-cluster' : '--redis';
  const plan = redisPlan({ redis: options.redis, cluster, sentinels, master: options.redisSentinelMaster, socketPath: options.redisSocket }, r, flag);
  const ioredis = await import('ioredis').catch(() => {
    throw new RatekeeperError('serve: a Redis store needs the ioredis package: npm install ioredis');
  });
  const { redisStore } = await import('../stores/redis/index.js');
  const { createClient, waitReady, tlsHandshake, tlsRefusal, wrongTransport, RedisConnectError } = await import('../stores/redis/connect.js');
  const common = { maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false };
  const client = createClient(ioredis as never, plan.connect, common) as unknown as InstanceType<typeof ioredis.Redis>;
  const timeout = plan.connect.connectTimeout ?? 10_000;
  try {
    const ready = waitReady(client as never, timeout, plan.secrets, plan.connect.mode === 'sentinel');
    if (plan.connect.mode === 'sentinel' && plan.connect.tls !== undefined) {
      // ioredis hides why a Sentinel refused TLS ("Connection is closed"): a handshake of our own names it
      ready.catch(() => undefined);
      const why = await tlsHandshake(plan.connect.nodes[0], plan.connect.tls, timeout);
      if (why !== undefined) throw new RedisConnectError('tls', `a Sentinel (${plan.connect.nodes[0].host}:${plan.connect.nodes[0].port}): ${why}`);
    }
    await ready;
  } catch (e) {
    if (!(e instanceof RedisConnectError) || e.reason === 'unreachable' || e.reason === 'sentinel') {
      // plain text to a TLS port, or TLS to a plain one, never connects: a startup error, not a server to wait for
      const node = plan.connect.mode !== 'sentinel' && plan.connect.path === undefined ? plan.connect.nodes[0] : undefined;
      const wrong = node === undefined ? undefined : await wrongTransport(node, plan.connect.tls !== undefined, Math.min(timeout, 1000));
      if (wrong !== undefined) {
        client.disconnect();
        throw new RatekeeperError(`serve: ${plan.describe}: ${wrong}`);
      }
      // a TLS server that refuses this client after the handshake (mutual TLS without the certificate it wants)
      const refusal = node === undefined || plan.connect.tls === undefined ? undefined : await tlsRefusal(node, plan.connect.tls, Math.min(timeout, 1000));
      if (refusal !== undefined) {
        client.disconnect();
        throw new RatekeeperError(`serve: ${plan.describe}: the TLS connection to Redis failed (trusting ${plan.tlsFrom}): ${refusal}`);
      }
      const why = e instanceof RedisConnectError ? e.message : `not ready within ${timeout} ms (${redactSecrets(e instanceof Error ? e.message : String(e), plan.secrets)})`;
      logger.warn(`redis: ${plan.describe}: ${why}; serving by the failure policy (${options.onStoreError ?? 'memory'}) until it answers`, { event: 'redis_not_ready' });
    } else {
      client.disconnect();
      const why = e.reason === 'auth' ? `Redis refused the password (${plan.passwordFrom})`
        : e.reason === 'sentinel-auth' ? `the Sentinels refused the password (${plan.sentinelPasswordFrom})`
        : e.reason === 'sentinel-master' ? `the Sentinels know no master named ${JSON.stringify(plan.connect.sentinel?.name)} (${r.from.sentinelMaster ?? 'REDIS_URL'})`
        : `the TLS connection to Redis failed (trusting ${plan.tlsFrom})`;
      throw new RatekeeperError(`serve: ${plan.describe}: ${why}: ${e.message}`);
    }
  }
  // the client's errors are debug lines (at most one per 5 s): the store watch says once that a server is down
  let lastLogged = 0;
  client.on('error', (e: Error) => {
    const now = Date.now();
    if (now - lastLogged > 5000 && logger.enabled('debug')) {
      lastLogged = now;
      logger.debug(`redis: ${redactSecrets(e.message, plan.secrets)}`, { event: 'redis_error', error: redactSecrets(e.message, plan.secrets) });
    }
  });
  const onError = options.onStoreError ?? 'memory';
  const wait = r.waitReplicas !== undefined ? { replicas: r.waitReplicas, timeout: r.waitTimeout ?? 50 } : undefined;
  const store = redisStore({ client, prefix: options.prefix, onError, timeout: options.storeTimeout, fallbackMaxKeys: options.maxKeys, ...(wait ? { wait } : {}) });
  const standalone = plan.connect.mode === 'cluster' ? undefined : (describeStore(options).fields.url ?? plan.describe);
  const watch = new StoreWatch({ read: () => store.health(), log: logger, name: (n) => (n === 'redis' && standalone !== undefined ? standalone : n), onStoreError: onError });
  watch.start();
  // the client's word on its connections: a close dates an outage, a ready connection is looked at now (a Cluster:
  // per master, named as the probe names it, host:port)
  if (standalone !== undefined) {
    client.on('close', () => watch.lost('redis'));
    client.on('ready', () => watch.back('redis'));
  } else {
    client.on('+node', (node: { options?: { host?: string; port?: number }; on(e: string, f: () => void): void }) => {
      const name = `${node.options?.host ?? '?'}:${node.options?.port ?? '?'}`;
      node.on('close', () => watch.lost(name));
      node.on('ready', () => watch.back(name));
      watch.poke();
    });
  }
  return {
    store,
    describe: plan.describe,
    close: async () => {
      watch.close();
      await store.close?.();
      client.disconnect();
    },
    // the store's state from its probe (a PING per server at most once a second); unhealthy only with the option
    healthy: async () => {
      const h = await store.health();
      const ok = options.healthCheckStore !== true || h.nodes.every((n) => n.up);
      return { ok, text: healthText(ok, h) };
    },
  };
}

/**
 * healthText — a /healthcheck body: `OK` alone while every server answers (envoyproxy/ratelimit's body); else `OK` or
 * `NOT OK`, the store (how many servers, how many unreachable), and one line per unreachable server with since when
 * (ISO time, UTC) and why.
 */
export function healthText(ok: boolean, h: StoreHealth): string {
  const what = h.cluster ? 'masters' : 'server';
  const down = h.nodes.filter((n) => !n.up);
  if (down.length === 0 && ok) return 'OK';
  const lines = [ok ? 'OK' : 'NOT OK'];
  lines.push(`store: redis${h.cluster ? ' cluster' : ''}, ${h.cluster ? `${h.nodes.length} ${what}` : 'one server'}, ${down.length === 0 ? 'all reachable' : `${down.length} unreachable`}`);
  for (const n of down) lines.push(`unreachable: ${n.node} since ${new Date(n.since).toISOString()} (${n.error ?? 'down'})`);
  return lines.join('\n') + '\n';
}

export { parseRedisUrl } from './redisOptions.js';
