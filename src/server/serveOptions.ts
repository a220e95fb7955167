/**
 * server/serveOptions — ServeOptions, what one service process is started with (startService in serve.ts; the
 * command line's flags and environment make one in cli.ts). Types only: nothing here runs.
 */
import type { KeyView } from '../admin/keys.js';
import type { LogFormat, LogLevel } from './log.js';
import type { RedisFlags } from './redisOptions.js';
import type { TlsFiles } from './tls.js';

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
  /** log — receives every log line (text or JSON, without its newline). @default a write to stderr */
  log?: (line: string) => void;
  // -- end logs --
}
