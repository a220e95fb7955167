/**
 * localFirst/window — the sync calls one store has in flight on each Redis server, bounded: a burst of due clients
 * (a flood of cold keys, a restart, a flushEvery's worth of a busy instance) is sent a few calls at a time, the next
 * as an earlier one settles, instead of all at once. Sent at once, a burst larger than Redis runs within the store's
 * timeout is given up and re-sent while Redis still runs the first copies, and every exact check on the same
 * connection waits behind it until it is LATE: the store stays on its failure policy while the queue feeds itself.
 * Held back, the waiting clients keep adding charges to the flush they will send (fewer, larger calls), and an exact
 * check waits behind at most one window of syncs.
 */

/** WINDOW_CALLS — the most sync calls in flight per server; WINDOW_CLIENTS — the most clients they carry (one call always goes). */
export const WINDOW_CALLS = 32;
export const WINDOW_CLIENTS = 1024;

/** Held — one server's sync calls in flight and the clients they carry. */
interface Held {
  calls: number;
  clients: number;
}

/** SyncWindow — one store's bound on its sync calls in flight, per server (a standalone client's one, a Cluster's masters). */
export class SyncWindow {
  private readonly nodes = new Map<string, Held>();
  /** waiting — the flushes held back, woken (once each) when a call settles. */
  private waiting: (() => void)[] = [];

  /** take — whether a call of `clients` may go to `node` now (counted if so); `force` counts it whatever is in flight. */
  take(node: string, clients: number, force = false): boolean {
    let h = this.nodes.get(node);
    if (h === undefined) this.nodes.set(node, (h = { calls: 0, clients: 0 }));
    if (!force && h.calls > 0 && (h.calls >= WINDOW_CALLS || h.clients + clients > WINDOW_CLIENTS)) return false;
    h.calls++;
    h.clients += clients;
    return true;
  }

  /** release — a call taken for `node` settled (answered, failed or given up): the flushes held back try again. */
  release(node: string, clients: number): void {
    const h = this.nodes.get(node);
    if (h !== undefined) {
      h.calls--;
      h.clients -= clients;
      if (h.calls === 0) this.nodes.delete(node);
    }
    if (this.waiting.length === 0) return;
    const w = this.waiting;
    this.waiting = [];
    for (const wake of w) wake();
  }

  /** wait — `wake` is called at the next release (a flush held back). */
  wait(wake: () => void): void {
    if (!this.waiting.includes(wake)) this.waiting.push(wake);
  }

  /** inFlight — the sync calls in flight, over every server (for the operators' view and tests). */
  get inFlight(): number {
    let n = 0;
    for (const h of this.nodes.values()) n += h.calls;
    return n;
  }
}
