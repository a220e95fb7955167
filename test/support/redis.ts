/**
 * test/support/redis — real redis-server processes for tests and benchmarks: a standalone server and a 3-master
 * cluster, on free loopback ports, in temporary directories, without persistence. Every server started here is
 * killed when the process exits, even when a test fails (and when the caller forgets to stop it).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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

/** cli — runs redis-cli synchronously and returns its stdout (throws on failure). */
export function cli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout.trim();
}

/** RedisServer — one redis-server process; `restart()` brings it back on the same port (empty: no persistence). */
export class RedisServer {
  process: ChildProcess | undefined;
  constructor(readonly port: number, readonly dir: string, readonly extra: string[]) {}

  static async start(extra: string[] = [], withBus = false): Promise<RedisServer> {
    hook();
    const port = await freePort(withBus);
    const dir = mkdtempSync(join(tmpdir(), 'rk-redis-'));
    dirs.add(dir);
    const s = new RedisServer(port, dir, extra);
    await s.spawn();
    return s;
  }

  async spawn(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--daemonize', 'no', '--loglevel', 'warning', ...this.extra];
    const p = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
    live.add(p);
    p.once('exit', () => live.delete(p));
    this.process = p;
    for (let i = 0; i < 200; i++) {
      const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), 'PING'], { encoding: 'utf8' });
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
    return cli(this.port, ...args);
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
    dirs.delete(this.dir);
  }
}

/** RedisCluster — three masters (`--cluster-enabled yes`) joined by `redis-cli --cluster create`, no replicas. */
export class RedisCluster {
  constructor(readonly nodes: RedisServer[]) {}

  static async start(): Promise<RedisCluster> {
    const nodes: RedisServer[] = [];
    for (let i = 0; i < 3; i++) {
      nodes.push(await RedisServer.start(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'], true));
    }
    const c = new RedisCluster(nodes);
    const r = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (r.status !== 0) {
      await c.stop();
      throw new Error(`redis-cli --cluster create failed: ${r.stdout}${r.stderr}`);
    }
    for (let i = 0; i < 400; i++) {
      if (nodes.every((n) => n.cli('CLUSTER', 'INFO').includes('cluster_state:ok'))) return c;
      await sleep(25);
    }
    await c.stop();
    throw new Error('the cluster did not reach cluster_state:ok');
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

