/**
 * server/storeWatch — logs a Redis server (a Cluster master) going away and coming back: one warning when it stops
 * answering, one line when it answers again with how long it was away (ms); nothing per request in between. It reads
 * the store's health probe (stores/redis/health.ts: one PING per server at most once a second, shared with
 * /healthcheck) every `everyMs`, and at once when the client says a connection is ready again, so a return is seen
 * within milliseconds and a loss (a closed connection, or a PING unanswered within the probe's timeout: a hung
 * server) within about a second. The client's own word that a connection closed (`lost`) dates the outage: the time
 * away is then measured from the close, not from the probe that confirmed it; a connection that closes and is ready
 * again before a probe sees it down (`back`) is no outage and is not logged.
 */
import type { StoreHealth } from '../stores/redis/health.js';
import type { Logger } from './log.js';

/** StoreWatchOptions — what to read, where to say it, and the words for a server. */
export interface StoreWatchOptions {
  /** read — the store's health now (RedisStore.health). */
  read: () => Promise<StoreHealth>;
  log: Logger;
  /** name — a server as the lines name it (the probe calls a standalone server `redis`). */
  name: (node: string) => string;
  /** onStoreError — the failure policy, said in the warning (what answers meanwhile). */
  onStoreError: string;
  /** everyMs — ms between two reads. @default 1000 */
  everyMs?: number;
}

/**
 * StoreWatch — per server, whether it was last logged down, and since when (the probe's `since`, epoch ms). A server
 * is logged down once when the probe first finds it down, up once when it first finds it answering again; `close()`
 * stops the timer (which never keeps the process alive).
 */
export class StoreWatch {
  /** away — servers logged down, with since when (epoch ms) and why; a server is here exactly between its two lines. */
  private readonly away = new Map<string, { since: number; error: string }>();
  /** closedAt — per server not (yet) logged down, when the client last said its connection closed (epoch ms). */
  private readonly closedAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private again = false;
  private closed = false;

  constructor(private readonly options: StoreWatchOptions) {}

  start(): void {
    this.timer = setInterval(() => this.poke(), this.options.everyMs ?? 1000);
    this.timer.unref();
    this.poke();
  }

  /** lost — the client says `node`'s connection closed now (the probe's name for it: `redis`, or a master's host:port). */
  lost(node: string): void {
    if (!this.away.has(node) && !this.closedAt.has(node)) this.closedAt.set(node, Date.now());
  }

  /** back — the client says `node`'s connection is ready again: looked at now. */
  back(node: string): void {
    this.closedAt.delete(node);
    this.poke();
  }

  /** poke — reads the health now (or right after the read under way). */
  poke(): void {
    if (this.closed) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        let h: StoreHealth;
        try {
          h = await this.options.read();
        } catch {
          continue; // the probe itself failed (closing): the next tick reads again
        }
        if (!this.closed) this.apply(h);
      } while (this.again && !this.closed);
    } finally {
      this.reading = false;
    }
  }

  /**
   * apply — one line per server whose state changed since its last line. A server whose connection is down (closed,
   * reconnecting, none) is down at once; one that only let a PING go unanswered is down once it has stayed so for
   * `everyMs` (the next probe agrees): a busy event loop at startup can make one PING late, and that is no outage.
   */
  private apply(h: StoreHealth): void {
    const { log, name, onStoreError } = this.options;
    const every = this.options.everyMs ?? 1000;
    const now = Date.now();
    for (const n of h.nodes) {
      const was = this.away.get(n.node);
      if (!n.up && was === undefined) {
        const error = n.error ?? 'no answer';
        if (!/^(the connection is|no connection)/.test(error) && now - n.since < every) continue;
        const since = Math.min(n.since, this.closedAt.get(n.node) ?? Infinity);
        this.closedAt.delete(n.node);
        this.away.set(n.node, { since, error });
        log.warn(`store: redis ${name(n.node)} does not answer (${error}); the failure policy answers until it does (${onStoreError})`, {
          event: 'store_down', node: name(n.node), error, since: new Date(since).toISOString(), onStoreError,
        });
      } else if (n.up && was !== undefined) {
        this.away.delete(n.node);
        const downMs = Math.max(0, n.since - was.since);
        log.info(`store: redis ${name(n.node)} answers again after ${downMs} ms away`, {
          event: 'store_up', node: name(n.node), downMs, error: was.error,
        });
      }
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
  }
}
