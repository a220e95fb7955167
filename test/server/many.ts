/**
 * test/server/many — configurations of many limits, and `ratekeeper serve` run on them as a real process, for the
 * tests and the bench of issue 15 §4 (memory per limit, time to ready, reloads of many limits).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CLI, LISTENING } from './procs.js';

/** ALGORITHMS — what the generated limits cycle through, so that every state shape is represented. */
const ALGORITHMS = ['fixedWindow', 'slidingWindow', 'tokenBucket', 'gcra', 'slidingLog', 'earrrl'] as const;

/**
 * manyLimits — one domain `many` with `n` limits: `tenant=t<i>` each with its own rate (`base + i % 50` per minute;
 * a reload that changes the rules passes another base), the algorithms cycled; and `n / 10` native policies
 * `p<i>` (`10 + base % 90` per minute), so both kinds are in it.
 */
export function manyLimits(n: number, base = 100): string {
  const lines: string[] = ['domain: many', 'descriptors:'];
  for (let i = 0; i < n; i++) {
    const algorithm = ALGORITHMS[i % ALGORITHMS.length];
    const extra = algorithm === 'earrrl' ? ', half_life: 10s' : '';
    lines.push(`  - key: tenant`, `    value: t${i}`, `    rate_limit: { unit: minute, requests_per_unit: ${base + (i % 50)}, algorithm: ${algorithm}${extra} }`);
  }
  lines.push('policies:');
  for (let i = 0; i < Math.ceil(n / 10); i++) lines.push(`  p${i}: { rules: '${10 + (base % 90)}/min' }`);
  return `${lines.join('\n')}\n`;
}

/** Started — a `ratekeeper serve` process with every listener up. */
export interface Started {
  proc: ChildProcess;
  http: number;
  grpc: number;
  /** readyMs — ms from spawn to the last listener's log line. */
  readyMs: number;
  log: string[];
  kill(): void;
}

/**
 * serveMany — spawns `ratekeeper serve` on `config` with the admin listener on (port 0) or off, and waits (at most
 * `timeoutMs`) until every listener has logged.
 */
export function serveMany(config: string, admin: boolean, timeoutMs = 60_000, extraArgs: string[] = []): Promise<Started> {
  const t0 = performance.now();
  const args = [CLI, 'serve', '--config', config, '--port', '0', '--grpc-port', '0', '--admin-port', admin ? '0' : 'off', ...extraArgs];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const kill = (): void => void proc.kill('SIGKILL');
  process.once('exit', kill);
  const log: string[] = [];
  return new Promise((resolve, reject) => {
    const ports: Record<string, number> = {};
    let adminUp = !admin;
    let rest = '';
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`ratekeeper serve was not ready within ${timeoutMs} ms:\n${log.join('\n')}`));
    }, timeoutMs);
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
      rest += s;
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        log.push(line);
        const m = LISTENING.exec(line);
        if (m !== null) ports[m[1]] = Number(m[2]);
        if (line.startsWith('ratekeeper: admin listening on ')) adminUp = true;
      }
      if (ports.http !== undefined && ports.grpc !== undefined && adminUp) {
        clearTimeout(timer);
        resolve({ proc, http: ports.http, grpc: ports.grpc, readyMs: performance.now() - t0, log, kill });
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`ratekeeper serve exited (${code ?? signal}) before it was ready:\n${log.join('\n')}${rest}`));
    });
  });
}

/** rssMb — a process's resident set now, in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? Number.NaN : Number(m[1]) / 1024;
}

/** cpuMs — the CPU time a process has used so far (user + system), in ms (Linux /proc; clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
