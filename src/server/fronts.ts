/**
 * server/fronts — the service's three listeners opened on a loaded service: HTTP (/json, /v1/check, /v1/auth,
 * /healthcheck, /metrics), gRPC (Envoy's RLS v3, with grpc.health.v1 and reflection) and the admin listener (loaded
 * lazily: the server knows admin, never the reverse). Each binds, logs its one `listening` line (with its TLS in
 * words) and turns a failed bind into listeners.ts's error naming its flag. Closing them is the caller's (serve.ts).
 */
import type { Server as TlsServer } from 'node:tls';
import type { AdminServer } from '../admin/serve.js';
import { RatekeeperError } from '../core/errors.js';
import { GrpcFront, tlsCredentials } from './grpc.js';
import { GrpcHealth } from './health.js';
import { HttpFront, type Health } from './http.js';
import { listenFailed } from './listeners.js';
import { quoted, type Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { ServeOptions } from './serveOptions.js';
import type { RateLimitService } from './service.js';
import { contextOptions, describeCert, sanCheck, secureOptions, type TlsSource } from './tls.js';

/** Fronts — what every listener is opened with. */
export interface Fronts {
  options: ServeOptions;
  /** host — where the HTTP and gRPC listeners bind. */
  host: string;
  service: RateLimitService;
  metrics: Metrics;
  logger: Logger;
  /** tls — each listener's TLS source, when it speaks TLS. */
  tls: { http?: TlsSource; grpc?: TlsSource; admin?: TlsSource };
  /** healthy — /healthcheck's answer (the store's health, or NOT OK while draining). */
  healthy: () => boolean | Health | Promise<boolean | Health>;
  /** storeHealthy — the store's own health, which gRPC health follows with healthCheckStore. */
  storeHealthy: () => boolean | Health | Promise<boolean | Health>;
  /** configText — the configuration's files as the admin view shows them. */
  configText: () => string;
}

/**
 * openHttp — the HTTP listener on `options.port` (8080). `opened` receives the front before it binds, so that the
 * caller closes it when the bind fails.
 */
export async function openHttp(f: Fronts, opened: (front: HttpFront) => void): Promise<void> {
  const { options, host, logger } = f;
  const t = f.tls.http;
  const http = new HttpFront({ service: f.service, metrics: f.metrics, healthy: f.healthy, log: (l) => logger.error(l), requestTimeout: options.requestTimeout, tls: t === undefined ? undefined : secureOptions(t.current) });
  opened(http);
  if (t !== undefined) rotate(http.server as unknown as TlsServer, t);
  const p = await http.listen(host, options.port ?? 8080).catch((e: unknown) => {
    throw listenFailed(e, 'http', hostPort(host, options.port ?? 8080));
  });
  logger.info(`http listening on ${hostPort(host, p)}${tlsWords(t)} (POST /json, POST /v1/check, GET /v1/auth, GET /healthcheck, GET /metrics)`, { event: 'listening', listener: 'http', address: hostPort(host, p), tls: t !== undefined });
}

/**
 * openGrpc — the gRPC listener on `options.grpcPort` (8081), with gRPC health (undefined without grpc-health-check)
 * and, unless grpcReflection is false, reflection. `opened` receives the front before it binds, so that the caller
 * closes it when the bind fails.
 */
export async function openGrpc(f: Fronts, opened: (front: GrpcFront, health: GrpcHealth | undefined) => void): Promise<void> {
  const { options, host, logger } = f;
  const t = f.tls.grpc;
  let credentials;
  if (t !== undefined) {
    const c = tlsCredentials(contextOptions(t.current), t.current.ca !== undefined, options.requestTimeout ?? 10_000);
    if (!c.rotates) logger.warn('tls: this @grpc/grpc-js cannot swap the gRPC listener\'s certificate: restart the service to rotate it', { event: 'tls' });
    t.onChange((m) => c.update(contextOptions(m)));
    credentials = c.credentials;
  }
  const front = new GrpcFront(f.service, f.metrics, (l) => logger.error(l), {
    requestTimeout: options.requestTimeout, maxConcurrentStreams: options.grpcMaxStreams, credentials,
    secureConnection: t?.files.clientSan === undefined ? undefined : sanCheck(t.files.clientSan),
  });
  opened(front, undefined);
  const health = await GrpcHealth.add(front.server).catch((e: unknown) => {
    logger.warn(`${(e as Error).message.replace(/^serve: /, '')}: grpc.health.v1 answers UNIMPLEMENTED`, { event: 'grpc_health' });
    return undefined;
  });
  opened(front, health);
  if (health !== undefined && options.healthCheckStore === true) health.watchStore(async () => {
    const h = await f.storeHealthy();
    return typeof h === 'boolean' ? h : h.ok;
  });
  let reflection = false;
  if (options.grpcReflection !== false) {
    const { addReflection, healthProtoPath } = await import('./reflection.js');
    reflection = await addReflection(front.server, health === undefined ? undefined : await healthProtoPath()).then(() => true, (e: unknown) => {
      logger.warn(`${(e as Error).message.replace(/^serve: /, '')}: grpcurl needs the .proto files`, { event: 'grpc_reflection' });
      return false;
    });
  }
  const p = await front.listen(host, options.grpcPort ?? 8081).catch((e: unknown) => {
    throw listenFailed(e, 'grpc', hostPort(host, options.grpcPort ?? 8081));
  });
  logger.info(`grpc listening on ${hostPort(host, p)}${tlsWords(t)} (envoy.service.ratelimit.v3.RateLimitService${health === undefined ? '' : ', grpc.health.v1.Health'}${reflection ? ', grpc.reflection' : ''})`, { event: 'listening', listener: 'grpc', address: hostPort(host, p), tls: t !== undefined });
}

/** openAdmin — the admin listener (API, live tail, dashboard) on `options.adminPort`, at `options.adminHost`. */
export async function openAdmin(f: Fronts): Promise<AdminServer> {
  const { options, logger, service } = f;
  const { serveAdmin } = await import('../admin/serve.js');
  const admin = await serveAdmin({
    limiters: () => service.limiters(), host: options.adminHost ?? '127.0.0.1', port: options.adminPort, token: options.adminToken,
    allowedHosts: options.adminAllowedHosts ?? [], maxEventClients: options.adminMaxEventClients ?? 64,
    // logs: the live tail shows keys as the logs do; each change is one line (its key shown so too, by the handler)
    logKeys: options.logKeys, logKeysSecret: options.logKeysSecret,
    // the key and the operator's reason quoted: neither can start a log line of its own or reorder this one
    log: (e) => logger.info(`admin: ${e.what} ${quoted(e.key)} on ${e.limiters.join(', ') || 'no limiter'} by ${e.who}${e.for === undefined ? '' : ` for ${e.for} ms`}${e.reason === undefined ? '' : ` (reason ${quoted(e.reason)})`}`, { event: 'admin', ...e }),
    config: () => ({ text: f.configText(), loadedAt: service.config?.loadedAt ?? 0, files: service.config?.files ?? [] }),
    ...(f.tls.admin === undefined ? {} : { tls: { ...secureOptions(f.tls.admin.current), handshakeTimeout: options.requestTimeout ?? 10_000 } }),
  }).catch((e: unknown) => {
    throw e instanceof RatekeeperError ? e : listenFailed(e, 'admin', hostPort(options.adminHost ?? '127.0.0.1', options.adminPort ?? 6070));
  });
  const t = f.tls.admin;
  if (t !== undefined) rotate(admin.server as unknown as TlsServer, t);
  logger.info(`admin listening on ${admin.url}${tlsWords(t)} (the dashboard; GET /admin/top, /admin/keys/:key, /admin/blocks, /admin/store …)`, { event: 'listening', listener: 'admin', address: admin.url, tls: t !== undefined });
  return admin;
}

/** rotate — a node TLS server takes each new certificate of `t` for new connections, and checks the client's SAN. */
function rotate(server: TlsServer, t: TlsSource): void {
  t.onChange((m) => server.setSecureContext(contextOptions(m)));
  if (t.files.clientSan !== undefined) server.prependListener('secureConnection', sanCheck(t.files.clientSan));
}

/** tlsWords — how a listener's log line says it speaks TLS: ` with TLS (certificate …; mTLS: …)`, or nothing. */
function tlsWords(t: TlsSource | undefined): string {
  if (t === undefined) return '';
  const f = t.files;
  const mtls = f.clientCa === undefined ? '' : `; mTLS: client certificates signed by ${f.clientCa}${f.clientSan === undefined ? '' : ` naming ${f.clientSan}`}`;
  return ` with TLS (${describeCert(t.current)}${mtls}; files re-read when they change)`;
}

/** hostPort — `host:port`, the host in brackets when it is an IPv6 address. */
function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
