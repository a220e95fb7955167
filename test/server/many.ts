/**
 * test/server/many — configurations of many limits, and what a process costs (RSS, CPU time), for the tests and the
 * bench of issue 15 §4 (memory per limit, time to ready, reloads of many limits); the service process itself is
 * procs.ts's serve().
 */
import { readFileSync } from 'node:fs';

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
