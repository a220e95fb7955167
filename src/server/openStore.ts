/**
 * server/openStore — the service's store: the memory store, or a Redis store on an ioredis client the service owns,
 * its first connection awaited (a refused password or TLS handshake is a startup error naming its flag), its servers
 * watched (storeWatch.ts) and its health said as /healthcheck's body. ioredis and the Redis store load only here, and
 * only when a Redis flag is given.
 */
import { memoryStore } from '../stores/memory.js';
import type { Store } from '../stores/types.js';
import type { StoreHealth } from '../stores/redis/health.js';
import { RatekeeperError } from '../core/errors.js';
import { redactSecrets } from '../core/redact.js';
import type { Health } from './http.js';
import type { Logger } from './log.js';
import { describeStore } from './redact.js';
import { redisPlan, type RedisFlags } from './redisOptions.js';
import type { ServeOptions } from './serveOptions.js';
import { StoreWatch } from './storeWatch.js';

/** OpenedStore — the service's store, how to close it, its health, and its description without credentials. */
export interface OpenedStore {
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
export async function openStore(options: ServeOptions, logger: Logger): Promise<OpenedStore> {
  const r: RedisFlags = options.redisConnect ?? { from: {} };
  const cluster = options.redisCluster !== undefined && options.redisCluster.length > 0 ? options.redisCluster : undefined;
  const sentinels = options.redisSentinel !== undefined && options.redisSentinel.length > 0 ? options.redisSentinel : undefined;
  if (options.redis === undefined && cluster === undefined && sentinels === undefined && options.redisSocket === undefined) {
    const store = memoryStore(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys });
    return { store, close: async () => store.close(), healthy: () => true, describe: 'memory' };
  }
  const flag = sentinels !== undefined ? (r.from.sentinels ?? 'REDIS_URL') : (r.from.url ?? (cluster !== undefined ? '--redis-cluster' : '--redis'));
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
    const first = plan.connect.path === undefined ? plan.connect.nodes[0] : undefined;
    const tls = plan.connect.tls;
    // mutual TLS without the certificate the server wants reads as a reset: looked at on the first one
    const refusedEarly = first === undefined || tls === undefined || plan.connect.mode === 'sentinel' ? undefined : () => tlsRefusal(first, tls, Math.min(timeout, 1000));
    const ready = waitReady(client as never, timeout, plan.secrets, plan.connect.mode === 'sentinel', refusedEarly);
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
      // (with Sentinel, the first Sentinel: its transport is the one the client was told to speak to it)
      const node = plan.connect.path === undefined ? plan.connect.nodes[0] : undefined;
      const wrong = node === undefined ? undefined : await wrongTransport(node, plan.connect.tls !== undefined, Math.min(timeout, 1000));
      if (wrong !== undefined) {
        client.disconnect();
        throw new RatekeeperError(`serve: ${plan.describe}: ${wrong}`);
      }
      // a TLS server that refuses this client after the handshake (mutual TLS without the certificate it wants)
      const refusal = node === undefined || plan.connect.tls === undefined || plan.connect.mode === 'sentinel' ? undefined : await tlsRefusal(node, plan.connect.tls, Math.min(timeout, 1000));
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
  const localFirst = r.maxUnsynced !== undefined ? { maxUnsynced: r.maxUnsynced, flushEvery: r.flushEvery ?? 20, cold: r.coldFresh === true ? 'fresh' as const : 'fetch' as const } : undefined;
  const store = redisStore({ client, prefix: options.prefix, onError, timeout: options.storeTimeout, fallbackMaxKeys: options.maxKeys, ...(wait ? { wait } : {}), ...(localFirst ? { localFirst } : {}) });
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
