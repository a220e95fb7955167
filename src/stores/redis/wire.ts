/**
 * wire — the client strategy: which client the store was given (ioredis, or node-redis through its adapter), how a
 * check's command goes out on it (one ioredis Command through sendCommand when ioredis can be loaded, else the
 * client's evalshaBuffer, else callBuffer), which Cluster master serves a slot, and the corking of the client's
 * sockets for one tick (coalesce). Imports the client seam (client.ts) and the node-redis adapter; nothing of the store.
 */
import { createRequire } from 'node:module';
import { RatekeeperError, show } from '../../core/errors.js';
import type { NodeRedisLike, RedisClient } from './client.js';
import { NodeRedisAdapter, isNodeRedis } from './node-redis.js';

/**
 * CommandClass — ioredis's Command, when ioredis can be loaded (it is the store's peer dependency): checks are then sent
 * as one Command each through the client's sendCommand, past ioredis's per-call argument handling and auto-pipelining
 * (the store coalesces its own writes, below). Without it, the store calls the client's methods. ioredis is CommonJS,
 * so it is loaded with require: no top-level await, so that CommonJS code can `require('ratekeeper/redis')`.
 */
type CommandOptions = { replyEncoding: null; keyPrefix?: string };
/** IoCommand — what the store touches of an ioredis Command: its name and arguments, and how it is written. */
interface IoCommand {
  name: string;
  args: (string | Buffer)[];
  toWritable(socket: unknown): unknown;
}
type CommandCtor = new (name: string, args: string[], options: CommandOptions) => IoCommand;
const CommandClass: CommandCtor | undefined = (() => {
  try {
    return (createRequire(import.meta.url)('ioredis') as { Command?: CommandCtor }).Command;
  } catch {
    return undefined;
  }
})();

/**
 * OnceCommand — the ioredis Command of a check or a batch, run at most once. ioredis writes a command again when its
 * connection closed before the reply (`autoResendUnfulfilledCommands`, on by default; a Cluster's retry of a command
 * whose node connection closed): Redis may have run the first one — its reply was lost with the connection — and a
 * check is not idempotent (a check admitted once was charged twice). So a command written again on another socket
 * while the one it was first written on is closed goes as EVAL of its script's text (`text`) with a deadline already
 * past (`late`): it changes nothing, the store answers it by the failure policy, and the check is charged at most once
 * (by the first, if Redis ran it). EVAL, not EVALSHA: a server that lost its scripts (restarted) answers NOSCRIPT,
 * which the store would re-send by text with the real deadline. A redirection (MOVED, ASK, TRYAGAIN) leaves the first
 * socket open: the command is re-sent as it is (Redis did not run it).
 */
type OnceCtor = new (name: string, args: string[], options: CommandOptions, text: string, batch: boolean) => IoCommand;
const OnceCommand: OnceCtor | undefined = CommandClass === undefined ? undefined : class extends CommandClass {
  /** socket — the socket this command was first written on (undefined: not written yet). */
  private socket: unknown;
  /** rewritten — the command goes as its late form from now on. */
  private rewritten = false;
  /** text — the script's text; batch — a batch's ARGV (the deadline first), else a check's (now, cost, deadline). */
  constructor(name: string, args: string[], options: CommandOptions, private readonly text: string, private readonly batch: boolean) {
    super(name, args, options);
  }

  override toWritable(socket: unknown): unknown {
    const first = this.socket;
    if (first === undefined) this.socket = socket;
    else if (!this.rewritten && first !== socket && closed(first)) {
      this.rewritten = true;
      this.name = 'eval';
      this.args = this.late(this.args);
    }
    return super.toWritable(socket);
  }

  /** late — the arguments as EVAL of the text, the key (as ioredis prefixed it), and a past deadline. */
  private late(a: (string | Buffer)[]): (string | Buffer)[] {
    return this.batch ? [this.text, a[1], a[2], PAST, ...a.slice(4)] : [this.text, a[1], a[2], a[3] ?? '', a[4] ?? '1', PAST];
  }
};

/** closed — whether a socket ioredis wrote to is closed (destroyed, or no longer writable). */
function closed(socket: unknown): boolean {
  const s = socket as { destroyed?: boolean; writable?: boolean } | null;
  return s === null || s.destroyed === true || s.writable === false;
}

/** PAST — a deadline no script starts before (policy.lua, compose/batch.ts: `wall >= deadline` answers LATE). */
const PAST = '0';

/** DOWN — client states in which a command would only wait in the client's offline queue. */
export const DOWN: ReadonlySet<string> = new Set(['reconnecting', 'close', 'end', 'disconnecting']);

/** clientOf — the store's client from the option `given`: node-redis wrapped in its adapter; anything else that is not a client throws. */
export function clientOf(given: RedisClient | NodeRedisLike): RedisClient {
  const obj = typeof given === 'object' && given !== null ? given : undefined;
  const c = (isNodeRedis(obj) ? new NodeRedisAdapter(obj!) : obj) as RedisClient | undefined;
  if (typeof c !== 'object' || c === null || typeof c.evalsha !== 'function' || typeof c.eval !== 'function' || typeof c.callBuffer !== 'function') {
    throw new RatekeeperError(`redisStore.client must be an ioredis Redis or Cluster or a node-redis client or cluster, got ${show(given)}`);
  }
  return c;
}

/** isClusterClient — whether the client is a Redis Cluster (ioredis Cluster, or node-redis's through its adapter). */
export function isClusterClient(c: RedisClient): boolean {
  return (c as { isCluster?: boolean }).isCluster === true;
}

/** masterOf — for a Cluster client, the master serving a slot ('host:port', undefined while unknown); undefined for a standalone client. */
export function masterOf(c: RedisClient): ((slot: number) => string | undefined) | undefined {
  const cluster = c as RedisClient & { isCluster?: boolean; slots?: string[][]; nodeOf?: (slot: number) => string | undefined };
  if (typeof cluster.nodeOf === 'function') return cluster.isCluster === true ? cluster.nodeOf.bind(cluster) : undefined;
  return cluster.isCluster === true ? (slot) => cluster.slots?.[slot]?.[0] : undefined;
}

/** Scripted — a script as sent: its SHA1 and its text (scripts.ts Script). */
export interface Scripted {
  readonly sha: string;
  readonly text: string;
}

/**
 * CheckSend — sends a check's command (EVALSHA of `script`'s SHA, or EVAL of its text when `text`, of one key; now,
 * cost, deadline as ARGV), the reply kept as bytes.
 */
export type CheckSend = (text: boolean, script: Scripted, key: string, now: string | undefined, cost: string, deadline: string | undefined) => Promise<unknown>;

/**
 * BatchSend — sends a batch's command (EVALSHA, or EVAL when `text`, of one key and its ARGV, batch.ts: the
 * deadline first), the reply kept as bytes.
 */
export type BatchSend = (text: boolean, script: Scripted, key: string, args: string[]) => Promise<unknown>;

/**
 * checkSenders — how a check (`checkBuffer`) and a batch (`batchBuffer`, the same road) are sent on `c`: one ioredis
 * Command through sendCommand when ioredis is there (the leanest path, and it leaves batching to the store's
 * coalescing; an OnceCommand, so that a command re-sent after its connection closed changes nothing); else the
 * client's evalshaBuffer (callBuffer loses the command's name under ioredis auto-pipelining); else callBuffer. The
 * common check (server clock, cost 1) sends no ARGV.
 */
export function checkSenders(c: RedisClient): { checkBuffer: CheckSend; batchBuffer: BatchSend } {
  const args = (head: string, key: string, now: string | undefined, cost: string, deadline: string | undefined): string[] =>
    deadline !== undefined ? [head, '1', key, now ?? '', cost, deadline] : now === undefined && cost === '1' ? [head, '1', key] : [head, '1', key, now ?? '', cost];
  const direct = c as RedisClient & { sendCommand?: (command: object) => Promise<unknown>; options?: { keyPrefix?: string } };
  const methods = c as RedisClient & { evalshaBuffer?: (...a: (string | number)[]) => Promise<unknown>; evalBuffer?: (...a: (string | number)[]) => Promise<unknown> };
  const Cmd = OnceCommand;
  if (Cmd !== undefined && typeof direct.sendCommand === 'function') {
    const keyPrefix = direct.options?.keyPrefix;
    const opts: CommandOptions = keyPrefix ? { replyEncoding: null, keyPrefix } : { replyEncoding: null };
    return {
      checkBuffer: (text, script, key, now, cost, dl) => direct.sendCommand!(new Cmd(text ? 'eval' : 'evalsha', args(text ? script.text : script.sha, key, now, cost, dl), opts, script.text, false)),
      batchBuffer: (text, script, key, a) => direct.sendCommand!(new Cmd(text ? 'eval' : 'evalsha', [text ? script.text : script.sha, '1', key, ...a], opts, script.text, true)),
    };
  }
  if (typeof methods.evalshaBuffer === 'function' && typeof methods.evalBuffer === 'function') {
    return {
      checkBuffer: (text, script, key, now, cost, dl) => (text ? methods.evalBuffer!(...args(script.text, key, now, cost, dl)) : methods.evalshaBuffer!(...args(script.sha, key, now, cost, dl))),
      batchBuffer: (text, script, key, a) => (text ? methods.evalBuffer!(script.text, '1', key, ...a) : methods.evalshaBuffer!(script.sha, '1', key, ...a)),
    };
  }
  return {
    checkBuffer: (text, script, key, now, cost, dl) => c.callBuffer(text ? 'EVAL' : 'EVALSHA', ...args(text ? script.text : script.sha, key, now, cost, dl)),
    batchBuffer: (text, script, key, a) => c.callBuffer(text ? 'EVAL' : 'EVALSHA', text ? script.text : script.sha, '1', key, ...a),
  };
}

/** Corkable — a socket the store can cork for a tick (net.Socket, tls.TLSSocket). */
interface Corkable {
  cork(): void;
  uncork(): void;
  readonly writable?: boolean;
}

/**
 * Corker — coalesce: at the first check of a tick, corks the client's sockets (every node's, for a Cluster) until
 * the tick ends (`process.nextTick`), so that the checks of one tick cost one `writev`. Off: cork() does nothing.
 */
export class Corker {
  /** corked — the sockets corked during this tick (all uncorked at its end), or undefined when none is. */
  private corked: Corkable[] | undefined;

  constructor(private readonly client: RedisClient, private readonly on: boolean) {}

  cork(): void {
    if (this.corked !== undefined || !this.on) return;
    const c = this.client as RedisClient & { isCluster?: boolean; stream?: unknown; nodes?: () => { stream?: unknown }[] };
    const streams = c.isCluster === true && typeof c.nodes === 'function' ? c.nodes().map((n) => n.stream) : [c.stream];
    const corked: Corkable[] = [];
    for (const x of streams) {
      const sock = x as Corkable | undefined;
      if (sock !== undefined && sock !== null && typeof sock.cork === 'function' && sock.writable !== false) {
        sock.cork();
        corked.push(sock);
      }
    }
    this.corked = corked;
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    const corked = this.corked;
    this.corked = undefined;
    if (corked !== undefined) for (const sock of corked) sock.uncork();
  };
}
