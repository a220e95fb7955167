/**
 * test/support/redis — real redis-server processes for tests and benchmarks: a standalone server and a 3-master
 * cluster, on free loopback ports, in temporary directories, without persistence. Every server started here is
 * killed when the process exits, even when a test fails (and when the caller forgets to stop it).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** live — every server process started and not yet stopped, for the exit hook. */
const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let hooked = false;
function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const p of live) p.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => process.exit(130));
  }
}

/** freePort — a loopback port nobody listens on now (and, for cluster nodes, whose +10000 bus port is free too). */
export async function freePort(withBus = false): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await listenOnce(0);
    if (port > 55_000 && withBus) continue;
    if (!withBus || (await listenOnce(port + 10_000).then(() => true, () => false))) return port;
  }
  throw new Error('no free port pair found');
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** cli — runs redis-cli synchronously and returns its stdout (throws on failure). `auth`: a password (REDISCLI_AUTH). */
export function cli(port: number, ...args: string[]): string {
  return cliAs({ port }, ...args);
}

/** CliTarget — how redis-cli reaches a server: its port, a password, TLS arguments. */
export interface CliTarget {
  port: number;
  auth?: string;
  tlsArgs?: string[];
}

/** cliAs — redis-cli against a target (password through REDISCLI_AUTH, never on the command line). */
export function cliAs(t: CliTarget, ...args: string[]): string {
  const env = t.auth === undefined ? process.env : { ...process.env, REDISCLI_AUTH: t.auth };
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(t.port), ...(t.tlsArgs ?? []), ...args], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout.trim();
}

/**
 * ServerTls — TLS for a started server: PEM files of its certificate and key and of the CA its clients' certificates
 * must be signed by; `clients`: whether a client certificate is required (`yes`), accepted (`optional`) or not asked
 * for (`no`); `cluster`: the Cluster bus and the addresses it announces speak TLS too (`--tls-cluster yes`);
 * `replication`: a replica reaches its master over TLS (`--tls-replication yes`).
 */
export interface ServerTls {
  cert: string;
  key: string;
  ca: string;
  clients?: 'yes' | 'optional' | 'no';
  cluster?: boolean;
  replication?: boolean;
}

/** StartOptions — extras of RedisServer.start: TLS (then `port` is the TLS port, and no plain port is open), a password, a config file's text first (a Sentinel's), the program. */
export interface StartOptions {
  tls?: ServerTls;
  requirepass?: string;
  /** conf — a config file's text, written to the server's directory and given first (redis-sentinel rewrites it). */
  conf?: string;
  /** sentinel — run as a Sentinel (`redis-server conf --sentinel`). */
  sentinel?: boolean;
}

/** RedisServer — one redis-server process; `restart()` brings it back on the same port (empty: no persistence). */
export class RedisServer {
  process: ChildProcess | undefined;
  constructor(readonly port: number, readonly dir: string, readonly extra: string[], readonly opts: StartOptions = {}) {}

  static async start(extra: string[] = [], withBus = false, opts: StartOptions = {}): Promise<RedisServer> {
    hook();
    const port = await freePort(withBus);
    const dir = mkdtempSync(join(tmpdir(), 'rk-redis-'));
    dirs.add(dir);
    const s = new RedisServer(port, dir, extra, opts);
    await s.spawn();
    return s;
  }

  /** target — how redis-cli reaches this server. */
  get target(): CliTarget {
    const t = this.opts.tls;
    return {
      port: this.port, auth: this.opts.requirepass,
      tlsArgs: t === undefined ? undefined : ['--tls', '--cacert', t.ca, '--cert', t.cert, '--key', t.key],
    };
  }

  async spawn(): Promise<void> {
    const o = this.opts;
    const head: string[] = [];
    if (o.conf !== undefined) {
      const file = join(this.dir, 'server.conf');
      writeFileSync(file, o.conf);
      head.push(file);
      if (o.sentinel) head.push('--sentinel');
    }
    const ports = o.tls === undefined ? ['--port', String(this.port)] : [
      '--port', '0', '--tls-port', String(this.port), '--tls-cert-file', o.tls.cert, '--tls-key-file', o.tls.key,
      '--tls-ca-cert-file', o.tls.ca, '--tls-auth-clients', o.tls.clients ?? 'no',
      ...(o.tls.cluster ? ['--tls-cluster', 'yes'] : []), ...(o.tls.replication ? ['--tls-replication', 'yes'] : []),
    ];
    const persistence = o.sentinel ? [] : ['--save', '', '--appendonly', 'no'];
    const args = [...head, ...ports, '--bind', '127.0.0.1', ...persistence, '--dir', this.dir, '--daemonize', 'no', '--loglevel', 'warning',
      ...(o.requirepass !== undefined ? ['--requirepass', o.requirepass] : []), ...this.extra];
    const p = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
    live.add(p);
    p.once('exit', () => live.delete(p));
    this.process = p;
    const t = this.target;
    for (let i = 0; i < 200; i++) {
      const env = t.auth === undefined ? process.env : { ...process.env, REDISCLI_AUTH: t.auth };
      const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...(t.tlsArgs ?? []), 'PING'], { encoding: 'utf8', env });
      if (r.stdout.trim() === 'PONG') return;
      if (p.exitCode !== null) throw new Error(`redis-server exited with ${p.exitCode}`);
      await sleep(25);
    }
    throw new Error(`redis-server on ${this.port} did not answer`);
  }

  /** kill — SIGKILL, and wait until it is gone. */
  async kill(): Promise<void> {
    const p = this.process;
    if (p === undefined || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
    this.process = undefined;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  /** pause, resume — SIGSTOP/SIGCONT: a server that hangs without closing its connections. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }
  resume(): void {
    this.process?.kill('SIGCONT');
  }

  cli(...args: string[]): string {
    return cliAs(this.target, ...args);
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
    dirs.delete(this.dir);
  }
}

/**
 * SentinelSet — a master, a replica of it and three Sentinels monitoring it (quorum 2) on loopback, with short
 * timings (`downAfter` ms without an answer before a Sentinel deems the master down; `failoverTimeout` ms), as
 * the Sentinel tests need: SIGKILL the master, and within a few seconds the replica is promoted.
 */
export class SentinelSet {
  constructor(readonly name: string, readonly master: RedisServer, readonly replica: RedisServer, readonly sentinels: RedisServer[]) {}

  /** sentinelAddresses — `127.0.0.1:port` of each Sentinel. */
  get sentinelAddresses(): string[] {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`);
  }

  /** masterPort — the master's port as the first answering Sentinel reports it. */
  masterPort(): number {
    for (const s of this.sentinels) {
      try {
        const out = s.cli('SENTINEL', 'get-master-addr-by-name', this.name).split('\n');
        return Number(out[1]);
      } catch {
        // this Sentinel is not answering: ask the next
      }
    }
    throw new Error('no Sentinel answered');
  }

  /** waitReplicated — until the replica has everything the master wrote (bounded: 5 s). */
  async waitReplicated(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const info = this.replica.cli('INFO', 'replication');
      if (/master_link_status:up/.test(info)) {
        const m = Number(/master_repl_offset:(\d+)/.exec(this.master.cli('INFO', 'replication'))?.[1]);
        const r = Number(/slave_repl_offset:(\d+)/.exec(info)?.[1]);
        if (r >= m) return;
      }
      await sleep(25);
    }
    throw new Error('the replica did not catch up within 5 s');
  }

  /**
   * start — `tls`: every server and Sentinel speaks only TLS (the replica and the Sentinels reach the master over
   * it); `requirepass`: the master's and replica's password; `sentinelPass`: the Sentinels' own.
   */
  static async start(o: { name?: string; downAfter?: number; failoverTimeout?: number; tls?: ServerTls; requirepass?: string; sentinelPass?: string } = {}): Promise<SentinelSet> {
    const name = o.name ?? 'rkmaster';
    const tls = o.tls === undefined ? undefined : { ...o.tls, replication: true };
    const auth = o.requirepass === undefined ? [] : ['--masterauth', o.requirepass];
    const master = await RedisServer.start(auth, false, { tls, requirepass: o.requirepass });
    const replica = await RedisServer.start([...auth, '--replicaof', '127.0.0.1', String(master.port)], false, { tls, requirepass: o.requirepass });
    const sentinels: RedisServer[] = [];
    const conf = [
      `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
      `sentinel down-after-milliseconds ${name} ${o.downAfter ?? 1000}`,
      `sentinel failover-timeout ${name} ${o.failoverTimeout ?? 3000}`,
      `sentinel parallel-syncs ${name} 1`,
      ...(o.requirepass !== undefined ? [`sentinel auth-pass ${name} ${o.requirepass}`] : []),
      ...(o.tls !== undefined ? ['tls-replication yes'] : []),
      '',
    ].join('\n');
    for (let i = 0; i < 3; i++) {
      sentinels.push(await RedisServer.start([], false, { conf, sentinel: true, tls, requirepass: o.sentinelPass }));
    }
    const set = new SentinelSet(name, master, replica, sentinels);
    await set.waitReplicated();
    // every Sentinel has found the replica and the other Sentinels (bounded: 10 s)
    for (let i = 0; i < 400; i++) {
      const ok = sentinels.every((s) => {
        const out = s.cli('SENTINEL', 'master', name);
        const field = (k: string): number => Number(new RegExp(`(?:^|\n)${k}\n(\\d+)`).exec(out)?.[1] ?? -1);
        return field('num-slaves') >= 1 && field('num-other-sentinels') >= 2;
      });
      if (ok) return set;
      await sleep(25);
    }
    await set.stop();
    throw new Error('the Sentinels did not discover each other and the replica within 10 s');
  }

  async stop(): Promise<void> {
    for (const s of [...this.sentinels, this.replica, this.master]) await s.stop();
  }
}

/**
 * RedisCluster — three masters (`--cluster-enabled yes`) joined by `redis-cli --cluster create`; with `replicas: 1`,
 * one replica per master besides (6 nodes: `nodes` holds them all, and a node's role is read from the Cluster, since a
 * failover swaps them).
 */
export class RedisCluster {
  constructor(readonly nodes: RedisServer[]) {}

  /**
   * start — `tls`: the nodes speak only TLS, the Cluster bus too (`--tls-cluster yes`); `replicas`: replicas per master
   * (0 or 1), attached and in sync before it resolves; `nodeTimeout`: `cluster-node-timeout`, ms (default 5000).
   */
  static async start(o: { tls?: ServerTls; requirepass?: string; replicas?: 0 | 1; nodeTimeout?: number } = {}): Promise<RedisCluster> {
    const nodes: RedisServer[] = [];
    const tls = o.tls === undefined ? undefined : { ...o.tls, cluster: true, replication: true };
    const replicas = o.replicas ?? 0;
    const auth = o.requirepass === undefined ? [] : ['--masterauth', o.requirepass];
    for (let i = 0; i < 3 * (1 + replicas); i++) {
      nodes.push(await RedisServer.start(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(o.nodeTimeout ?? 5000), '--repl-diskless-sync-delay', '0', ...auth], true, { tls, requirepass: o.requirepass }));
    }
    const c = new RedisCluster(nodes);
    const env = o.requirepass === undefined ? process.env : { ...process.env, REDISCLI_AUTH: o.requirepass };
    const r = spawnSync('redis-cli', [...(nodes[0].target.tlsArgs ?? []), '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { encoding: 'utf8', env });
    if (r.status !== 0) {
      await c.stop();
      throw new Error(`redis-cli --cluster create failed: ${r.stdout}${r.stderr}`);
    }
    for (let i = 0; i < 400; i++) {
      if (nodes.every((n) => n.cli('CLUSTER', 'INFO').includes('cluster_state:ok'))) {
        if (replicas === 0) return c;
        if (c.masters().every((m) => c.replicaOf(m) !== undefined) && c.agreed()) {
          await c.waitReplicated();
          return c;
        }
      }
      await sleep(25);
    }
    await c.stop();
    throw new Error('the cluster did not reach cluster_state:ok');
  }

  /** masters — the nodes that are masters now (as each says of itself). */
  masters(): RedisServer[] {
    return this.nodes.filter((n) => /^role:master$/m.test(n.cli('INFO', 'replication')));
  }

  /** replicaOf — the replica of `master` (its link up), if any. */
  replicaOf(master: RedisServer): RedisServer | undefined {
    const id = this.nodeId(master);
    return this.nodes.find((n) => {
      if (n === master) return false;
      const mine = n.cli('CLUSTER', 'NODES').split('\n').find((l) => l.includes('myself'));
      return mine !== undefined && mine.split(' ')[3] === id && /master_link_status:up/.test(n.cli('INFO', 'replication'));
    });
  }

  /**
   * agreed — whether every node sees every node in the role it gives itself (a master ignores a manual failover's
   * request from a replica it does not know as its own yet: right after `--cluster create`, for a few seconds).
   */
  agreed(): boolean {
    const views = this.nodes.map((n) => n.cli('CLUSTER', 'NODES').split('\n').map((l) => l.split(' ')));
    const truth = new Map(views.map((v) => {
      const mine = v.find((f) => f[2].includes('myself')) as string[];
      return [mine[0], mine[3]];
    }));
    return views.every((v) => v.length === this.nodes.length && v.every((f) => truth.get(f[0]) === f[3] && !/fail|handshake|noaddr/.test(f[2])));
  }

  /** waitReplicated — until every replica has everything its master wrote (bounded: 5 s). */
  async waitReplicated(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      let behind = false;
      for (const n of this.nodes) {
        const info = n.cli('INFO', 'replication');
        if (!/^role:slave$/m.test(info)) continue;
        const port = Number(/master_port:(\d+)/.exec(info)?.[1]);
        const master = this.nodes.find((m) => m.port === port);
        const m = Number(/master_repl_offset:(\d+)/.exec(master?.cli('INFO', 'replication') ?? '')?.[1]);
        const r = Number(/slave_repl_offset:(\d+)/.exec(info)?.[1]);
        if (!/master_link_status:up/.test(info) || !(r >= m)) behind = true;
      }
      if (!behind) return;
      await sleep(25);
    }
    throw new Error('the replicas did not catch up within 5 s');
  }

  /** startupNodes — what ioredis's Cluster takes. */
  get startupNodes(): { host: string; port: number }[] {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  }

  /** nodeId — a node's cluster id. */
  nodeId(node: RedisServer): string {
    return node.cli('CLUSTER', 'MYID');
  }

  /** owner — the node serving a hash slot. */
  owner(slot: number): RedisServer {
    for (const n of this.nodes) {
      const lines = n.cli('CLUSTER', 'NODES').split('\n');
      const mine = lines.find((l) => l.includes('myself'));
      if (mine === undefined) continue;
      for (const range of mine.split(' ').slice(8)) {
        if (range.startsWith('[')) continue;
        const [a, b] = range.split('-').map(Number);
        if (slot >= a && slot <= (b ?? a)) return n;
      }
    }
    throw new Error(`no node owns slot ${slot}`);
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) await n.stop();
  }
}

