import type { RedisClient } from './client.js';

/**
 * node-redis — the `redis` package's clients (`createClient`, `createCluster`, v4 and later) seen through the store's
 * client seam ({@link RedisClient}): every command goes through the client's `sendCommand`, replies kept as bytes
 * (RESP blob strings mapped to Buffer), and a Cluster routes each one by its key (the first key of the script). No
 * import of node-redis: the client is recognised by its shape.
 */

/** NodeRedisClient, NodeRedisCluster — what the adapter uses of node-redis's client and cluster. */
interface NodeRedisClient {
  sendCommand(args: readonly string[], options?: object): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
}
interface NodeRedisCluster {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: readonly string[], options?: object): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly slots: readonly ({ master?: { address?: string } } | undefined)[];
  readonly masters: unknown;
}

/** AS_BUFFER — node-redis's typeMapping for a reply whose blob strings stay bytes (36: RESP's `$`, a blob string). */
const AS_BUFFER = { typeMapping: { 36: Buffer } };

/** isNodeRedis — a node-redis client or cluster (and not ioredis, which has callBuffer). */
export function isNodeRedis(c: unknown): boolean {
  const x = c as Partial<NodeRedisClient> & { callBuffer?: unknown };
  return typeof c === 'object' && c !== null && typeof x.sendCommand === 'function' && typeof x.isReady === 'boolean' && x.callBuffer === undefined;
}

/**
 * NodeRedisAdapter — a node-redis client or cluster as a RedisClient: `status` from isReady/isOpen ('ready',
 * 'reconnecting' while open but not ready, 'end' when closed: the store answers at once instead of queueing), the
 * script calls, and for a cluster `nodeOf(slot)` — the master serving a slot, for the store's per-node budgets.
 */
export class NodeRedisAdapter implements RedisClient {
  readonly isCluster: boolean;
  private readonly send: (args: string[], key: string | undefined, options?: object) => Promise<unknown>;

  constructor(readonly inner: object) {
    this.isCluster = 'masters' in inner && 'slots' in inner;
    if (this.isCluster) {
      const cluster = inner as NodeRedisCluster;
      this.send = (args, key, options) => cluster.sendCommand(key, false, args, options);
    } else {
      const client = inner as NodeRedisClient;
      this.send = (args, _key, options) => client.sendCommand(args, options);
    }
  }

  get status(): string {
    const c = this.inner as NodeRedisClient;
    return c.isReady ? 'ready' : c.isOpen ? 'reconnecting' : 'end';
  }

  /** nodeOf — the address of the master serving `slot`, as the cluster last learned it (a cluster only). */
  nodeOf(slot: number): string | undefined {
    return this.isCluster ? (this.inner as NodeRedisCluster).slots[slot]?.master?.address : undefined;
  }

  evalsha(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown> {
    return this.send(['EVALSHA', sha, String(numkeys), ...args.map(String)], numkeys > 0 ? String(args[0]) : undefined);
  }

  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown> {
    return this.send(['EVAL', script, String(numkeys), ...args.map(String)], numkeys > 0 ? String(args[0]) : undefined);
  }

  callBuffer(command: string, ...args: (string | number)[]): Promise<unknown> {
    const list = [command, ...args.map(String)];
    const scripted = /^eval(sha)?$/i.test(command) && Number(list[2]) > 0;
    return this.send(list, scripted ? list[3] : undefined, AS_BUFFER);
  }

  /** evalshaBuffer, evalBuffer — a check: EVALSHA/EVAL of one key, the reply as bytes (the store's fast path). */
  evalshaBuffer(...args: (string | number)[]): Promise<unknown> {
    return this.send(['EVALSHA', ...args.map(String)], String(args[2]), AS_BUFFER);
  }

  evalBuffer(...args: (string | number)[]): Promise<unknown> {
    return this.send(['EVAL', ...args.map(String)], String(args[2]), AS_BUFFER);
  }
}
