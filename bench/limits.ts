/**
 * bench/limits — what many limits cost `ratekeeper serve` (a real process, memory store): for 1 000, 5 000 and
 * 10 000 limits (plus a tenth as many native policies; test/server/many's configuration), with the admin listener on
 * (every limiter observed) and off: ms from spawn to every listener up, and RSS once ready and after a check on
 * every limit; then, with the admin on, a reload that changes every limit while checks run one after another: the
 * longest a check waited. `npm run bench limits`. Environment: BENCH_LIMITS (1000,5000,10000).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { http, serve } from '../test/server/procs.js';
import { manyLimits, rssMb } from '../test/server/many.js';

const SIZES = (process.env.BENCH_LIMITS ?? '1000,5000,10000').split(',').map(Number);
const dir = mkdtempSync(join(tmpdir(), 'rk-bench-limits-'));

/** touchAll — one /json check on every limit and every policy, in batches of 1000 descriptors. */
async function touchAll(port: number, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const descriptors = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) descriptors.push({ entries: [{ key: 'tenant', value: `t${j}` }] });
    const r = await http(port, 'POST', '/json', { domain: 'many', descriptors });
    if (r.status !== 200) throw new Error(`bench: /json answered ${r.status}: ${r.text}`);
  }
  for (let i = 0; i < Math.ceil(n / 10); i++) {
    const r = await http(port, 'POST', '/v1/check', { policy: `p${i}`, key: 'alice' });
    if (r.status !== 200) throw new Error(`bench: /v1/check answered ${r.status}: ${r.text}`);
  }
}

/** reloadStall — rewrites the config (every limit's rule changed) and checks one at a time until the reload is logged: the longest check, ms. */
async function reloadStall(file: string, n: number, port: number, log: string[]): Promise<{ maxMs: number; checks: number; reloadMs: number }> {
  const before = log.length;
  const t0 = performance.now();
  writeFileSync(file, manyLimits(n, 200));
  let maxMs = 0;
  let checks = 0;
  const deadline = t0 + 60_000;
  while (performance.now() < deadline) {
    const s = performance.now();
    const r = await http(port, 'POST', '/json', { domain: 'many', descriptors: [{ entries: [{ key: 'tenant', value: 't1' }] }] });
    if (r.status !== 200 && r.status !== 429) throw new Error(`bench: ${r.status} ${r.text}`);
    maxMs = Math.max(maxMs, performance.now() - s);
    checks++;
    if (log.slice(before).some((l) => l.includes('config reloaded'))) break;
  }
  return { maxMs, checks, reloadMs: performance.now() - t0 };
}

console.log('| limits | admin | ready ms | RSS ready MB | RSS after a check on each MB |');
console.log('|---:|---|---:|---:|---:|');
const reloads: string[] = [];
for (const n of SIZES) {
  const file = join(dir, `limits-${n}.yaml`);
  for (const admin of [false, true]) {
    writeFileSync(file, manyLimits(n));
    const s = await serve(['--config', file], {}, { admin, timeoutMs: 120_000 });
    try {
      await sleep(500);
      const ready = rssMb(s.proc.pid!);
      await touchAll(s.http, n);
      await sleep(500);
      const touched = rssMb(s.proc.pid!);
      console.log(`| ${n} | ${admin ? 'on' : 'off'} | ${s.startMs.toFixed(0)} | ${ready.toFixed(0)} | ${touched.toFixed(0)} |`);
      if (admin) {
        const r = await reloadStall(file, n, s.http, s.log);
        reloads.push(`| ${n} | ${r.reloadMs.toFixed(0)} | ${r.checks} | ${r.maxMs.toFixed(0)} | ${rssMb(s.proc.pid!).toFixed(0)} |`);
      }
    } finally {
      s.kill();
    }
  }
}
console.log('\nA reload changing every limit (admin on), checks one at a time meanwhile:\n');
console.log('| limits | write → reloaded ms | checks | longest check ms | RSS after MB |');
console.log('|---:|---:|---:|---:|---:|');
for (const r of reloads) console.log(r);
