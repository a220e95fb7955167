/**
 * health — what the Redis store can say of its servers for a health check: which are reachable, which not and since
 * when, without a round trip per question. A probe PINGs every server (each master of a Cluster, the one server of a
 * standalone client) at most once per `every` ms, each PING given up after `timeout` ms; questions in between get the
 * latest answer. A server whose connection the client knows to be down is reported at once, unasked; one whose
 * previous PING is still unanswered (a hung server) is not asked again until it answers.
 */

/** NodeHealth — one server: `up`, and `since` (epoch ms) when it became what it is; `error` — why it is down. */
export interface NodeHealth {
  node: string;
  up: boolean;
  since: number;
  error?: string;
}

/** StoreHealth — the servers of a store as last probed: `cluster` — whether they are a Cluster's masters; `at` — when (epoch ms). */
export interface StoreHealth {
  cluster: boolean;
  nodes: NodeHealth[];
  at: number;
}

/** Pingable — one connection a probe asks: ioredis's Redis (a standalone client, or a Cluster's node). */
interface Pingable {
  ping(): Promise<unknown>;
  readonly status?: string;
  readonly options?: { host?: string; port?: number };
}

/** ProbeTarget — what the probe reads of a client: a Cluster's masters (ioredis `nodes('master')`), else the client itself. */
interface ProbeTarget {
  isCluster?: boolean;
  nodes?: (role: 'master') => Pingable[];
  ping?: () => Promise<unknown>;
  callBuffer?: (command: string) => Promise<unknown>;
  readonly status?: string;
}

/** DOWN_STATES — client states in which a connection cannot answer (ioredis). */
const DOWN_STATES = new Set(['reconnecting', 'close', 'end']);

/**
 * HealthProbe — the probe of one client. `known` — the masters of the slot table (a Cluster): reported down when the
 * client holds no connection to one (a master it never reached).
 */
export class HealthProbe {
  /** state — per server, its latest health (kept across probes, for `since`). */
  private readonly state = new Map<string, NodeHealth>();
  /** conns — per server, the connection the latest probe asked (undefined: none). */
  private readonly conns = new Map<string, Pingable | undefined>();
  /** asking — servers whose PING is unanswered: not asked again until it settles. */
  private readonly asking = new Set<string>();
  /** probing — the latest probe (settled or not), started at `lastAt` (performance.now() ms). */
  private probing: Promise<void> | undefined;
  private lastAt = -Infinity;
  private cluster = false;

  constructor(
    private readonly client: ProbeTarget, private readonly every: number, private readonly timeout: number,
    private readonly known: () => string[] = () => [],
  ) {}

  /**
   * read — the health as of at most `every` ms ago (probing now when the latest probe is older), with what PINGs
   * answered since (a hung server that answers its PING late is up from then on).
   */
  async read(): Promise<StoreHealth> {
    const now = performance.now();
    if (this.probing === undefined || now - this.lastAt >= this.every) {
      this.lastAt = now;
      this.probing = this.probe();
      await this.probing;
    } else {
      await this.probing;
      // a server found down whose connection is back is asked again now, not a probe later (a restarted server);
      // one still down costs nothing (its connection says so) and a hung one is not asked twice
      await Promise.all([...this.state.values()].filter((h) => !h.up).map(async (h) => {
        const conn = this.conns.get(h.node);
        const status = conn?.status;
        if (conn === undefined || this.asking.has(h.node) || (status !== undefined && DOWN_STATES.has(status))) return;
        this.note(h.node, await this.ask(h.node, conn));
      }));
    }
    return { cluster: this.cluster, nodes: [...this.state.values()].map((h) => ({ ...h })), at: Date.now() };
  }

  private async probe(): Promise<void> {
    const c = this.client;
    const targets: [string, Pingable | undefined][] = [];
    const cluster = c.isCluster === true;
    this.cluster = cluster;
    if (cluster && typeof c.nodes === 'function') {
      const seen = new Set<string>();
      for (const n of c.nodes('master')) {
        const name = `${n.options?.host ?? '?'}:${n.options?.port ?? '?'}`;
        seen.add(name);
        targets.push([name, n]);
      }
      for (const name of this.known()) if (!seen.has(name)) targets.push([name, undefined]);
    } else {
      const ping = typeof c.ping === 'function' ? () => c.ping!() : typeof c.callBuffer === 'function' ? () => c.callBuffer!('PING') : undefined;
      targets.push(['redis', ping === undefined ? undefined : { ping, get status() { return c.status; } }]);
    }
    this.conns.clear();
    for (const [name, conn] of targets) this.conns.set(name, conn);
    await Promise.all(targets.map(async ([name, conn]) => this.note(name, await this.ask(name, conn))));
    // servers no longer among the targets (left the Cluster) are forgotten
    const names = new Set(targets.map(([n]) => n));
    for (const n of this.state.keys()) if (!names.has(n)) this.state.delete(n);
  }

  /** ask — undefined when the server answered PING within the timeout, else why not. */
  private async ask(name: string, conn: Pingable | undefined): Promise<string | undefined> {
    if (conn === undefined) return 'no connection to it';
    const status = (conn as { status?: string }).status ?? this.client.status;
    if (status !== undefined && DOWN_STATES.has(status)) return `the connection is ${status}`;
    if (this.asking.has(name)) return `no answer to a PING sent over ${this.timeout} ms ago`;
    this.asking.add(name);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer to PING within ${this.timeout} ms`), this.timeout);
      timer.unref();
    });
    /** gaveUp — the probe stopped waiting (answered or timed out): a later answer updates the state itself. */
    let gaveUp = false;
    const answered = conn.ping().then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    ).then((error) => {
      this.asking.delete(name);
      // answered after the probe gave up on it: what it says now holds until the next probe
      if (gaveUp && this.state.has(name)) this.note(name, error);
      return error;
    });
    try {
      return await Promise.race([answered, late]);
    } finally {
      gaveUp = true;
      clearTimeout(timer);
    }
  }

  /** note — records a server's answer, keeping `since` while its state does not change. */
  private note(node: string, error: string | undefined): void {
    const up = error === undefined;
    const was = this.state.get(node);
    const h: NodeHealth = { node, up, since: was !== undefined && was.up === up ? was.since : Date.now() };
    if (!up) h.error = error;
    this.state.set(node, h);
  }
}
