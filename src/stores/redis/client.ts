/**
 * client — the seam between the store and a Redis client: what the store needs of one (ioredis's `Redis` and
 * `Cluster` fit as they are; node-redis through node-redis.ts). Types only, so that every file of the store, and the
 * node-redis adapter, can name a client without importing the store.
 */

/**
 * RedisClient — what the store needs of a client: ioredis's `Redis` and `Cluster` both fit. `status` is read to
 * answer at once, without queueing a command, while the client is reconnecting.
 */
export interface RedisClient {
  evalsha(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** callBuffer — a command whose reply is kept as bytes (the policy script replies with packed doubles). */
  callBuffer(command: string, ...args: (string | number)[]): Promise<unknown>;
  readonly status?: string;
}

/**
 * NodeRedisLike — a node-redis (`redis` package) client from `createClient()` or cluster from `createCluster()`,
 * connected by the caller (`await client.connect()`).
 */
export interface NodeRedisLike {
  sendCommand(...args: never[]): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
}
