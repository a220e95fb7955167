/**
 * server/serve — startService: one service process started and stopped. It loads the configuration, opens the store
 * (openStore.ts), reads the TLS files, opens the listeners (fronts.ts), watches the configuration and reloads it off
 * the event loop, and drains on close. The options are ServeOptions (serveOptions.ts).
 */
import { readFileSync } from 'node:fs';
import type { AdminServer } from '../admin/serve.js';
import { loadConfig } from './config/index.js';
import { loadConfigOffThread } from './config/offThread.js';
import { sameConfig } from './config/same.js';
import { openAdmin, openGrpc, openHttp, type Fronts } from './fronts.js';
import type { GrpcFront } from './grpc.js';
import type { GrpcHealth } from './health.js';
import type { HttpFront } from './http.js';
import { createLogger, type Logger } from './log.js';
import { Metrics } from './metrics.js';
import { openStore } from './openStore.js';
import { describeStore } from './redact.js';
import { ConfigWatcher } from './reload.js';
import type { ServeOptions } from './serveOptions.js';
import { RateLimitService } from './service.js';
import { TlsSource } from './tls.js';

export type { OnStoreError, ServeOptions } from './serveOptions.js';

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
  const local = (store as { localFirstStats?: () => import('../stores/redis/localFirst/stats.js').LocalFirstStats | undefined }).localFirstStats;
  if (typeof local === 'function' && local.call(store) !== undefined) metrics.localFirst(() => local.call(store));
  metrics.watchStore(store);
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
  const fronts: Fronts = { options, host, service, metrics, logger, tls, healthy, storeHealthy, configText: () => shown };
  try {
    if ((options.port ?? 8080) >= 0) await openHttp(fronts, (h) => (http = h));
    if ((options.grpcPort ?? 8081) >= 0) {
      await openGrpc(fronts, (g, h) => {
        grpcFront = g;
        health = h;
      });
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
      admin = await openAdmin(fronts);
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
