/**
 * Many limits and reloads without stalls (issue 15 §4), on `ratekeeper serve` as a real process and a real service:
 * 10 000 limits ready fast and small with the admin listener on; a reload of 10 000 changed limits while checks run
 * (no check waits long, the answers are the old configuration's until the swap and the new one's after); a file
 * rewritten in place in two halves never puts its prefix in force, and a limit dropped and brought back within the
 * grace period keeps its clients' state; a config made unreadable keeps the old one serving, and is reloaded once
 * readable again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chmodSync, mkdtempSync, openSync, renameSync, writeFileSync, writeSync, closeSync, ftruncateSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startService } from '../../src/server/serve.js';
import { RateLimitService } from '../../src/server/service.js';
import { parseConfig } from '../../src/server/config/load.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { CLI, LISTENING, http, serve, waitFor } from './procs.js';
import { cpuMs, manyLimits, rssMb } from './many.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'rk-many-'));

/** limitOfT1 — requests_per_unit of tenant=t1 as answered now, and how long the call took (ms). */
async function limitOfT1(port: number): Promise<{ rpu: number; ms: number }> {
  const t0 = performance.now();
  const r = await http(port, 'POST', '/json', { domain: 'many', descriptors: [{ entries: [{ key: 'tenant', value: 't1' }] }] });
  const ms = performance.now() - t0;
  assert.ok(r.status === 200 || r.status === 429, r.text);
  return { rpu: r.json.statuses[0].currentLimit.requestsPerUnit, ms };
}

describe('many limits', () => {
  test('10 000 limits (and 1 000 policies), admin listener on: ready in < 20 s of CPU and < 800 MB (was 88 s, 3.0 GB)', async () => {
    const file = join(tmp(), 'many.yaml');
    writeFileSync(file, manyLimits(10_000));
    const s = await serve(['--config', file], {}, { admin: true, timeoutMs: 120_000 });
    try {
      // CPU time, not wall time: on a machine shared with other jobs the wall time says more about them than about us
      const cpu = cpuMs(s.proc.pid!);
      await sleep(300);
      const rss = rssMb(s.proc.pid!);
      console.log(`# 10 000 limits, admin on: ready in ${s.startMs.toFixed(0)} ms (${cpu} ms of CPU), RSS ${rss.toFixed(0)} MB`);
      assert.ok(cpu < 20_000, `ready after ${cpu} ms of CPU`);
      assert.ok(rss < 800, `RSS ${rss.toFixed(0)} MB`);
      assert.equal((await limitOfT1(s.http)).rpu, 101);
    } finally {
      s.kill();
    }
  });

  test('a reload of 10 000 changed limits: checks keep being answered (none waits 1 s on this shared machine; was the whole reload: tens of seconds), old answers until the swap, new after', async () => {
    const file = join(tmp(), 'many.yaml');
    writeFileSync(file, manyLimits(10_000));
    const log: string[] = [];
    const running = await startService({ config: file, port: 0, grpcPort: -1, reloadPollMs: 50, log: (l) => log.push(l) });
    try {
      const port = running.httpPort!;
      assert.equal((await limitOfT1(port)).rpu, 101);
      const tmpFile = `${file}.tmp`;
      writeFileSync(tmpFile, manyLimits(10_000, 200));
      renameSync(tmpFile, file);
      const seen: number[] = [];
      let maxMs = 0;
      const deadline = performance.now() + 60_000;
      while (performance.now() < deadline) {
        const { rpu, ms } = await limitOfT1(port);
        seen.push(rpu);
        maxMs = Math.max(maxMs, ms);
        if (rpu === 201 && log.some((l) => l.startsWith('ratekeeper: config reloaded'))) break;
      }
      console.log(`# ${seen.length} checks during the reload, the longest ${maxMs.toFixed(0)} ms`);
      const swap = seen.indexOf(201);
      assert.ok(swap > 0, `the new configuration came into force (${seen.slice(-3).join(',')})`);
      assert.ok(seen.slice(0, swap).every((x) => x === 101) && seen.slice(swap).every((x) => x === 201), `answers: ${[...new Set(seen)].join(',')}`);
      assert.ok(seen.length >= 10, `only ${seen.length} checks were answered during the reload`);
      assert.ok(maxMs < 1000, `a check waited ${maxMs.toFixed(0)} ms`);
      assert.ok(log.some((l) => /config reloaded: 10000 limit\(s\), 1000 policies; 0 kept their state, 11000 carried it to new rules, 0 start fresh/.test(l)), log.join('\n'));
    } finally {
      await running.close();
    }
  });
});

/** T0 — the start of a minute (windows are aligned to the epoch), ms: the service's clock in the in-process tests. */
const T0 = 1_700_000_040_000;

/** tenant — limit_remaining of tenant=t<i> after one request (cost `cost`) at the service's time. */
async function tenant(svc: RateLimitService, i: number, cost = 1): Promise<number> {
  const r = await svc.shouldRateLimit({ domain: 'many', descriptors: [{ entries: [{ key: 'tenant', value: `t${i}` }] }], hits_addend: cost });
  return r.statuses[0].limit_remaining;
}

describe('a compatible change of 10 000 limits (in process, memory store, observed as with the admin on)', () => {
  test('the swap holds the event loop < 50 ms of CPU (was 70–118 ms: a takeover per limiter in it), the takeovers done after it in slices; every client carried, none charged twice or forgiven, the old limiters never revived', async () => {
    const now = { t: T0 };
    const svc = new RateLimitService({ store: new MemoryStore(), observe: true, clock: { now: () => now.t } });
    svc.setConfig(parseConfig([{ name: 'many.yaml', text: manyLimits(10_000) }]));
    // 3 requests at T0 from the one client of each of t0…t59 (each algorithm 10 times) and alice in p0…p9
    const N = 60;
    for (let i = 0; i < N; i++) for (let k = 0; k < 3; k++) await tenant(svc, i);
    for (let p = 0; p < 10; p++) for (let k = 0; k < 3; k++) await svc.check(`p${p}`, 'alice', 1);
    // every limit 100 + i % 50 → 120 + i % 50 a minute, every policy 20 → 40 a minute: compatible (same algorithm, period)
    const prepared = await svc.prepare(parseConfig([{ name: 'many.yaml', text: manyLimits(10_000, 120) }]));
    let gap = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const t = performance.now();
      gap = Math.max(gap, t - last);
      last = t;
    }, 1);
    try {
      await sleep(20);
      gap = 0;
      last = performance.now();
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      const result = svc.commit(prepared);
      const wall = performance.now() - w0;
      const used = process.cpuUsage(cpu0);
      const cpu = (used.user + used.system) / 1000;
      assert.deepEqual(result, { kept: 0, carried: 11_000, fresh: 0 });
      // t1 at once, while the sweep has not reached it: its limiter takes the client over at this first check
      assert.equal(await tenant(svc, 1), 121 - 4, 'slidingWindow t1: 3 used of 121/min, and this one');
      await svc.settled();
      const sweepGap = gap;
      console.log(`# commit of 10 000 changed limits + 1 000 policies: ${cpu.toFixed(1)} ms of CPU, ${wall.toFixed(1)} ms wall; the longest gap of a 1 ms timer from the swap to the last takeover ${sweepGap.toFixed(1)} ms`);
      assert.ok(cpu < 50, `the swap took ${cpu.toFixed(1)} ms of CPU (${wall.toFixed(1)} ms wall)`);
      // generous: the machine is shared; a gap this long would mean the takeovers ran in one turn
      assert.ok(sweepGap < 1000, `the event loop was held ${sweepGap.toFixed(0)} ms`);
    } finally {
      clearInterval(probe);
    }
    const ALGOS = ['fixedWindow', 'slidingWindow', 'tokenBucket', 'gcra', 'slidingLog', 'earrrl'];
    for (let i = 0; i < N; i++) {
      if (i === 1) continue;
      const left = await tenant(svc, i);
      if (ALGOS[i % 6] === 'earrrl') assert.ok(left < 120 + (i % 50) - 1, `earrrl t${i}: the estimate carried (${left} left)`);
      else assert.equal(left, 120 + (i % 50) - 4, `${ALGOS[i % 6]} t${i}: 3 used before the change + this one`);
    }
    for (let p = 0; p < 10; p++) assert.equal((await svc.check(`p${p}`, 'alice', 1)).remaining, 40 - 4, `p${p}`);
    // a reload back to the first rules: the limiters in force (not the old ones, whose clients moved) carry on
    const back = await svc.prepare(parseConfig([{ name: 'many.yaml', text: manyLimits(10_000) }]));
    assert.deepEqual(svc.commit(back), { kept: 0, carried: 11_000, fresh: 0 }, 'none revived from the retired');
    assert.equal(await tenant(svc, 0), 100 - 5, 'fixedWindow t0: 4 used + this one (not the 3 the old limiter saw)');
    assert.equal((await svc.check('p0', 'alice', 1)).remaining, 20 - 5);
    svc.dropRetired();
  });

  test('a second reload while the takeovers of the first are pending: every client carried through both', async () => {
    const now = { t: T0 };
    const svc = new RateLimitService({ store: new MemoryStore(), clock: { now: () => now.t } });
    svc.setConfig(parseConfig([{ name: 'many.yaml', text: manyLimits(600) }]));
    for (let i = 0; i < 12; i++) for (let k = 0; k < 3; k++) await tenant(svc, i);
    svc.commit(await svc.prepare(parseConfig([{ name: 'many.yaml', text: manyLimits(600, 120) }])));
    // no await of settled(): setConfig (and prepare) finish the pending takeovers first
    svc.setConfig(parseConfig([{ name: 'many.yaml', text: manyLimits(600, 140) }]));
    for (let i = 0; i < 12; i++) {
      const left = await tenant(svc, i);
      if (i % 6 !== 5) assert.equal(left, 140 + (i % 50) - 4, `t${i}`);
    }
    svc.dropRetired();
  });
});

/** POLICY — a native policy `api` at 5 a minute (a slidingLog: no window boundary in the test), and a domain. */
const POLICY = `domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 7, algorithm: slidingLog }
policies:
  api: { rules: '5/min', algorithm: slidingLog }
`;

async function check(port: number, cost = 1): Promise<{ status: number; remaining: number | undefined; limit: number | undefined }> {
  const r = await http(port, 'POST', '/v1/check', { policy: 'api', key: 'alice', cost });
  return { status: r.status, remaining: r.json?.remaining, limit: r.json?.limit };
}

describe('a config rewritten in place', () => {
  test('truncated and written in two halves with a pause: the prefix is never in force, a client at 3 of 5 stays at 3 of 5', async () => {
    const dir = tmp();
    const file = join(dir, 'config.yaml');
    writeFileSync(file, POLICY);
    const log: string[] = [];
    const running = await startService({ config: file, port: 0, grpcPort: -1, reloadPollMs: 50, log: (l) => log.push(l) });
    try {
      const port = running.httpPort!;
      for (let i = 0; i < 3; i++) assert.equal((await check(port)).status, 200);
      assert.equal((await check(port, 0)).remaining, 2);
      // the writer: truncate, the first half (a valid YAML prefix: the domain, no policy), a pause, the rest
      const half = POLICY.indexOf('policies:');
      const fd = openSync(file, 'r+');
      ftruncateSync(fd, 0);
      writeSync(fd, POLICY.slice(0, half), 0);
      let answers = 0;
      const pauseEnd = performance.now() + 200;
      while (performance.now() < pauseEnd) {
        const r = await check(port, 0);
        assert.equal(r.status, 200, 'the policy stayed in force while the file was half-written');
        answers++;
        await sleep(10);
      }
      writeSync(fd, POLICY.slice(half), half);
      closeSync(fd);
      // the file settles; the watcher may load it (same rules: everything kept)
      const end = performance.now() + 1500;
      while (performance.now() < end) {
        const r = await check(port, 0);
        assert.equal(r.status, 200, 'the policy stayed in force after the rewrite');
        assert.equal(r.remaining, 2);
        answers++;
        await sleep(20);
      }
      assert.ok(answers > 10);
      assert.ok(!log.some((l) => /config reloaded: 1 limit\(s\), 0 policies/.test(l)), log.join('\n'));
    } finally {
      await running.close();
    }
  });

  test('a limit dropped by one reload and brought back with the same rules by the next keeps its clients\' state (grace period)', async () => {
    const dir = tmp();
    const file = join(dir, 'config.yaml');
    writeFileSync(file, POLICY);
    const log: string[] = [];
    const running = await startService({ config: file, port: 0, grpcPort: -1, reloadPollMs: 50, log: (l) => log.push(l) });
    try {
      const port = running.httpPort!;
      for (let i = 0; i < 3; i++) assert.equal((await check(port)).status, 200);
      writeFileSync(`${file}.tmp`, POLICY.slice(0, POLICY.indexOf('policies:')));
      renameSync(`${file}.tmp`, file);
      await waitFor('the policy dropped', async () => (await check(port, 0)).status === 400, 5000);
      writeFileSync(`${file}.tmp`, POLICY);
      renameSync(`${file}.tmp`, file);
      await waitFor('the policy back', async () => (await check(port, 0)).status === 200, 5000);
      assert.equal((await check(port, 0)).remaining, 2, 'alice is still at 3 of 5');
      // the limit never changed and the policy came back from its grace period: both kept, nothing fresh
      assert.ok(log.some((l) => /1 polic(y|ies); 2 kept their state, 0 carried it to new rules, 0 start fresh$/.test(l)), log.join('\n'));
    } finally {
      await running.close();
    }
  });

  test('chmod 000: the old configuration keeps serving, the failure logged; chmod 644: the new one is loaded', async () => {
    const dir = tmp();
    chmodSync(dir, 0o755);
    const file = join(dir, 'config.yaml');
    writeFileSync(file, POLICY);
    chmodSync(file, 0o644);
    // as root a file's mode does not stop reading it: the service then runs as nobody
    const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const proc = spawn(process.execPath, [CLI, 'serve', '--config', file, '--port', '0', '--grpc-port', 'off', '--admin-port', 'off'], { ...asNobody, stdio: ['ignore', 'ignore', 'pipe'] });
    const log: string[] = [];
    process.once('exit', () => proc.kill('SIGKILL'));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not listening:\n${log.join('\n')}`)), 15_000);
        let rest = '';
        proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
          rest += s;
          const lines = rest.split('\n');
          rest = lines.pop()!;
          for (const l of lines) {
            log.push(l);
            const m = LISTENING.exec(l);
            if (m !== null) {
              clearTimeout(timer);
              resolve(Number(m[2]));
            }
          }
        });
      });
      for (let i = 0; i < 3; i++) assert.equal((await check(port)).status, 200);
      const changed = POLICY.replace("'5/min'", "'9/min'");
      chmodSync(file, 0o000);
      await sleep(100);
      writeFileSync(file, changed); // root (the test) may still write it
      chmodSync(file, 0o000);
      await waitFor('the rejection in the log', async () => log.some((l) => /config reload rejected/.test(l)) && log.some((l) => /EACCES|permission denied/i.test(l)), 5000);
      assert.equal((await check(port, 0)).remaining, 2, 'the old configuration serves on, with its state');
      chmodSync(file, 0o644);
      await waitFor('the reload once readable', async () => (await check(port, 0)).limit === 9, 5000);
    } finally {
      proc.kill('SIGKILL');
    }
  });
});
