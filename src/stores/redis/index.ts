/**
 * ratekeeper/redis — the Redis store's public face: `redisStore` and the names its users may need. The store's
 * files, in the one direction of their imports:
 *
 *   index (this) → store (RedisStore) → bound (RedisBound) → reply, fallback (→ fleet), overrides (+ listing), keys
 *     → call (the one in-flight call mechanism; wait: WAIT) → wire (client strategy; node-redis) → client (the seam)
 *   options — the options and their validation (read by store; names the client seam's types)
 *
 * scripts.ts composes the Lua (lua/), slot.ts hashes keys to Cluster slots, health.ts probes the servers, retime.ts
 * rewrites keys after a rule change, connect.ts makes clients for the service.
 */
import { RedisStore } from './store.js';
import type { RedisStoreOptions } from './options.js';

export type { RedisClient, NodeRedisLike } from './client.js';
export type { StoreHealth, NodeHealth } from './health.js';
export type { OnError, RedisStoreOptions } from './options.js';
export { StoreUnavailableError, type Budget, type Deadline } from './call.js';
export { RedisStore } from './store.js';
export { RedisBound } from './bound.js';
export { encodeKey, decodeKey, slotTag, keySlot } from './keys.js';
export type { IndexRef, Listed } from './overrides.js';
export { UNAVAILABLE_RETRY } from './fallback.js';
export { FLEET_EXPIRY, fleetPolicy, scaleRule, type FleetOptions } from './fleet.js';

/**
 * redisStore — state in Redis or Redis Cluster: one EVALSHA per check for the whole policy.
 * @example limiter({ rules, store: redisStore({ client: new Redis(), onError: 'memory' }) })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
