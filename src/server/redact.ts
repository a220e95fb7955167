/**
 * server/redact — the store as the service names it in logs, without its credentials: URLs are masked by the one
 * shared function (src/core/redact.ts); a Sentinel set or a unix socket is named by the connection plan
 * (src/server/redisOptions.ts describeStore).
 */

import { redactAddress } from '../core/redact.js';

/**
 * redactUrl — a Redis URL with its password replaced by `***` (the user name kept: it says which ACL user connects,
 * and is not a secret): `redis://app:s3cret@10.0.0.5:6379/2` → `redis://app:***@10.0.0.5:6379/2`; envoy's
 * `host:port` stays as it is; text that does not parse as a URL is replaced whole when it holds an `@` (it may be a
 * mistyped URL with its password).
 */
export function redactUrl(url: string): string {
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(url);
  if (!hasScheme) return url.includes('@') ? '(a Redis address with credentials, not shown)' : url;
  // the whole value is one address: everything before its last @ is masked, a comma or a space in the password too
  return redactAddress(url);
}

/** StoreDescription — what the startup line says of the store: the words, and the same as fields. */
export interface StoreDescription {
  text: string;
  fields: { store: 'memory' | 'redis' | 'cluster' | 'sentinel'; url?: string; nodes?: string[]; maxKeys?: number; onStoreError?: string };
}

/**
 * describeStore — the store the service runs on, credentials removed, with the failure policy for Redis:
 * `memory (in this process; up to 1000000 clients)`, `redis redis://10.0.0.5:6379 (failure policy: memory)`,
 * `redis cluster redis://10.0.0.5:7000, redis://10.0.0.6:7000 (failure policy: deny)`.
 */
export function describeStore(o: { redis?: string; redisCluster?: string[]; redisSentinel?: string[]; redisSocket?: string; maxKeys?: number; onStoreError?: string }, planned?: string): StoreDescription {
  const policy = o.onStoreError ?? 'memory';
  const what: Record<string, string> = {
    memory: 'memory: decide on a local memory store until Redis answers again',
    deny: 'deny: refuse every request until Redis answers again',
    allow: 'allow: admit every request until Redis answers again',
  };
  const why = what[policy] ?? policy;
  // a Sentinel set or a unix socket: the words of the connection plan (src/server/redisOptions.ts describeStore)
  if ((o.redisSentinel !== undefined && o.redisSentinel.length > 0) || o.redisSocket !== undefined) {
    const text = planned ?? (o.redisSocket !== undefined ? `redis unix:${o.redisSocket}` : `redis sentinel via ${o.redisSentinel!.map(redactUrl).join(',')}`);
    return { text: `${text} (failure policy ${why})`, fields: { store: o.redisSocket !== undefined ? 'redis' : 'sentinel', url: text, onStoreError: policy } };
  }
  if (o.redisCluster !== undefined && o.redisCluster.length > 0) {
    const nodes = o.redisCluster.map(redactUrl);
    return { text: `redis cluster ${nodes.join(', ')} (failure policy ${why})`, fields: { store: 'cluster', nodes, onStoreError: policy } };
  }
  if (o.redis !== undefined) {
    const url = redactUrl(o.redis);
    return { text: `redis ${url} (failure policy ${why})`, fields: { store: 'redis', url, onStoreError: policy } };
  }
  const maxKeys = o.maxKeys ?? 100_000;
  return { text: `memory (in this process; up to ${maxKeys} clients)`, fields: { store: 'memory', maxKeys } };
}
