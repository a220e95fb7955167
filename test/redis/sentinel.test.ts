/**
 * Redis Sentinel under `ratekeeper serve`: real Sentinel sets on loopback (a master, a replica, three
 * `redis-server --sentinel` with down-after 1000 ms and failover-timeout 3000 ms; passwords on the servers and on the
 * Sentinels), checks under load through the HTTP front, the master SIGKILLed. The service follows the promoted
 * replica by itself; from the promotion on every count is exact; and the charges acknowledged before the kill but
 * missing on the new master (replication is asynchronous) are counted and reported — then again with WAIT 1, where
 * only a WAIT that timed out can lose one; and a set speaking only TLS. Takes ~25–35 s (three Sentinel sets, started
 * together, ~8 s).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SentinelSet } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running, type ServeOptions } from '../../src/server/serve.js';
import { serveOptions } from '../../src/server/cli.js';
import { http } from '../server/procs.js';
import { makeCerts, type Certs } from '../support/tls.js';
import { configFile } from '../server/support.js';
import type { RedisStore } from '../../src/stores/redis/index.js';

const CONFIG = `
policies:
  count: { rules: [ { algorithm: fixed-window, limit: 1000000000, per: 1d } ] }
  small: { rules: [ { algorithm: fixed-window, limit: 5, per: 1d } ] }
`;
const LIMIT = 1_000_000_000;
const PW = 'master-secret-pw';
const SPW = 'sentinel-secret-pw';
/** WORKERS — concurrent checks in the load; RECOVER_MS — the longest the service may take to follow the new master. */
const WORKERS = 8;
const RECOVER_MS = 15_000;

function options(argv: string[], env: NodeJS.ProcessEnv, log: string[] = []): ServeOptions {
  const o = serveOptions(['--config', configFile(CONFIG), '--port', '0', '--grpc-port', 'off', '--admin-port', 'off', '--redis-connect-timeout', '3000',
    '--on-store-error', 'deny', '--store-timeout', '500', ...argv], env);
  assert.notEqual(o, 'help');
  return { ...(o as ServeOptions), prefix: uniquePrefix('sentinel'), log: (l) => log.push(l) };
}

/** sentinelFlags — the flags reaching a set, with both passwords. */
function sentinelFlags(set: SentinelSet): string[] {
  return ['--redis-sentinel', set.sentinelAddresses.join(','), '--redis-sentinel-master', set.name, '--redis-sentinel-auth', SPW];
}

/** check — one /v1/check: 'ok' (admitted by Redis), 'limited', 'unavailable' (the failure policy: maybe charged, unanswered), 'error'. */
async function check(r: Running, policy: string, key: string, cost = 1): Promise<{ kind: 'ok' | 'limited' | 'unavailable' | 'error'; remaining: number }> {
  try {
    const res = await http(r.httpPort!, 'POST', '/v1/check', { policy, key, cost }, { timeoutMs: 5000 });
    const j = res.json as { reason?: string; remaining?: number };
    if (j.reason === 'store-unavailable') return { kind: 'unavailable', remaining: NaN };
    if (res.status === 200) return { kind: 'ok', remaining: j.remaining ?? NaN };
    if (res.status === 429) return { kind: 'limited', remaining: j.remaining ?? NaN };
    return { kind: 'error', remaining: NaN };
  } catch {
    return { kind: 'error', remaining: NaN };
  }
}

/** Failover — what a SIGKILL of the master under load did. */
interface Failover {
  /** acked — checks admitted by Redis (answered 200, not by the failure policy), before and after the kill. */
  acked: number;
  ackedBeforeKill: number;
  /** unanswered — checks given up by the store (answered by the failure policy): each may or may not have been charged. */
  unanswered: number;
  /** lost — acknowledged charges the new master does not have (each check charged its own key: counted exactly). */
  lost: number;
  /** recoveredMs — from the kill to the first check admitted by the new master. */
  recoveredMs: number;
  newMaster: number;
}

/**
 * failover — WORKERS concurrent checks for 600 ms, each of its own key, SIGKILL the master, keep checking until the
 * new master admits checks for 300 ms (bounded by RECOVER_MS), stop; then every acknowledged key is looked at
 * (cost 0) on the new master: one that shows no charge is a lost charge.
 */
async function failover(set: SentinelSet, r: Running, atKill: () => number = () => 0): Promise<Failover & { atKill: number }> {
  const run = Math.random().toString(36).slice(2);
  const ackedKeys: string[] = [];
  let unanswered = 0;
  let killedAt = 0;
  let ackedBeforeKill = 0;
  let recoveredAt = 0;
  let stop = false;
  let n = 0;
  const worker = async (): Promise<void> => {
    while (!stop) {
      const sentAt = performance.now();
      const key = `${run}-${n++}`;
      const c = await check(r, 'count', key);
      if (c.kind === 'ok') {
        ackedKeys.push(key);
        if (killedAt > 0 && sentAt > killedAt && recoveredAt === 0) recoveredAt = performance.now();
      } else if (c.kind === 'unavailable' || c.kind === 'error') {
        unanswered++;
        await sleep(5);
      }
    }
  };
  const workers = Array.from({ length: WORKERS }, worker);
  await sleep(600);
  ackedBeforeKill = ackedKeys.length;
  const noted = atKill();
  const oldMaster = set.masterPort();
  killedAt = performance.now();
  await (set.master.port === oldMaster ? set.master : set.replica).kill();
  const deadline = killedAt + RECOVER_MS;
  while (recoveredAt === 0 && performance.now() < deadline) await sleep(20);
  if (recoveredAt !== 0) await sleep(300);
  stop = true;
  await Promise.all(workers);
  assert.ok(recoveredAt !== 0, `the service did not follow the new master within ${RECOVER_MS} ms (acked ${ackedKeys.length}, unanswered ${unanswered}; killed ${oldMaster}, the Sentinels report ${set.masterPort()})`);
  let lost = 0;
  let next = 0;
  const look = async (): Promise<void> => {
    while (next < ackedKeys.length) {
      const peek = await check(r, 'count', ackedKeys[next++], 0);
      assert.equal(peek.kind, 'ok');
      if (peek.remaining === LIMIT) lost++;
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, look));
  return { acked: ackedKeys.length, ackedBeforeKill, unanswered, lost, recoveredMs: Math.round(recoveredAt - killedAt), newMaster: set.masterPort(), atKill: noted };
}

/** exactAfter — from the promotion on, counts are exact: 5 admitted then refused on a fresh key; `more` charges add exactly that many. */
async function exactAfter(r: Running, more = 40): Promise<void> {
  const key = `s-${Math.random()}`;
  const kinds: string[] = [];
  for (let i = 0; i < 7; i++) kinds.push((await check(r, 'small', key)).kind);
  assert.deepEqual(kinds, ['ok', 'ok', 'ok', 'ok', 'ok', 'limited', 'limited']);
  const k2 = `c-${Math.random()}`;
  for (let i = 0; i < more; i++) assert.equal((await check(r, 'count', k2)).kind, 'ok');
  assert.equal(LIMIT - (await check(r, 'count', k2, 0)).remaining, more);
}

describe('Redis Sentinel: follow a failover, exact from the promotion on, lost charges counted', () => {
  let plain: SentinelSet;
  let waited: SentinelSet;
  let secure: SentinelSet;
  let certs: Certs;
  before(async () => {
    certs = makeCerts();
    [plain, waited, secure] = await Promise.all([
      SentinelSet.start({ requirepass: PW, sentinelPass: SPW }),
      SentinelSet.start({ requirepass: PW, sentinelPass: SPW }),
      SentinelSet.start({ requirepass: PW, sentinelPass: SPW, tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, clients: 'no' } }),
    ]);
  });
  after(async () => {
    await plain?.stop();
    await waited?.stop();
    await secure?.stop();
  });

  test('over TLS (the Sentinels and the servers speak only TLS): rediss:// Sentinels and the CA serve; a wrong CA is a startup error', async () => {
    const sentinels = secure.sentinelAddresses.map((a) => `rediss://${a}`).join(',');
    const r = await startService(options(['--redis-sentinel', sentinels, '--redis-sentinel-master', secure.name, '--redis-sentinel-auth', SPW, '--redis-tls-ca', certs.ca], { REDIS_AUTH: PW }));
    try {
      assert.match(r.store, /^redis sentinel master rkmaster via rediss:\/\/127\.0\.0\.1:\d+,/);
      await exactAfter(r, 5);
    } finally {
      await r.close();
    }
    const e = await startService(options(['--redis-sentinel', sentinels, '--redis-sentinel-master', secure.name, '--redis-sentinel-auth', SPW, '--redis-tls-ca', certs.otherCa], { REDIS_AUTH: PW }))
      .then((x) => x.close().then(() => assert.fail('started')), (err: Error) => err);
    assert.match((e as Error).message, /TLS connection to Redis failed \(trusting --redis-tls-ca/);
  });

  test("startup: envoy's REDIS_TYPE=sentinel form serves; a wrong Sentinel password or master name is a startup error naming it", async () => {
    const env = { REDIS_TYPE: 'sentinel', REDIS_URL: `${plain.name},${plain.sentinelAddresses.join(',')}`, REDIS_SENTINEL_AUTH: SPW, REDIS_AUTH: PW };
    const log: string[] = [];
    const r = await startService(options([], env, log));
    try {
      assert.equal(r.store, `redis sentinel master ${plain.name} via ${plain.sentinelAddresses.map((a) => `redis://${a}`).join(',')} (auth; sentinel auth)`);
      assert.ok(!log.join('\n').includes(PW) && !log.join('\n').includes(SPW), log.join('\n'));
      await exactAfter(r);
      const h = await http(r.httpPort!, 'GET', '/healthcheck', undefined, { timeoutMs: 5000 });
      assert.equal(h.text, 'OK');
    } finally {
      await r.close();
    }
    const refused = async (o: ServeOptions): Promise<string> => {
      const t0 = performance.now();
      const e = await startService(o).then((x) => x.close().then(() => assert.fail('started')), (err: Error) => err);
      assert.ok(performance.now() - t0 < 2500, `took ${Math.round(performance.now() - t0)} ms`);
      const msg = (e as Error).message;
      assert.ok(!msg.includes(PW) && !msg.includes(SPW), msg);
      return msg;
    };
    assert.match(await refused(options(['--redis-sentinel', plain.sentinelAddresses.join(','), '--redis-sentinel-master', plain.name, '--redis-sentinel-auth', 'wrong-sentinel-pw'], { REDIS_AUTH: PW })),
      /the Sentinels refused the password \(--redis-sentinel-auth\)/);
    assert.match(await refused(options(['--redis-sentinel', plain.sentinelAddresses.join(','), '--redis-sentinel-master', 'nosuch', '--redis-sentinel-auth', SPW], { REDIS_AUTH: PW })),
      /know no master named "nosuch" \(--redis-sentinel-master\)/);
    assert.match(await refused(options(sentinelFlags(plain), { REDIS_AUTH: 'wrong-master-pw' })), /Redis refused the password \(REDIS_AUTH\)/);
  });

  test('SIGKILL of the master under load: the service follows the promoted replica; lost charges counted', async (t) => {
    const r = await startService(options(sentinelFlags(plain), { REDIS_AUTH: PW }));
    try {
      const f = await failover(plain, r);
      t.diagnostic(`no WAIT: ${JSON.stringify(f)}`);
      process.stderr.write(`sentinel failover, no WAIT: ${JSON.stringify(f)}\n`);
      assert.notEqual(f.newMaster, plain.master.port);
      // replication is asynchronous: what the master acknowledged in its last moments may not have reached the
      // replica; the number is measured (docs/redis.md), and it is at most the writes of the last instants
      assert.ok(f.lost <= f.acked, JSON.stringify(f));
      await exactAfter(r);
    } finally {
      await r.close();
    }
  });

  test('with --redis-wait-replicas 1: a charge is acknowledged once the replica has it; none lost unless a WAIT timed out', async (t) => {
    const r = await startService(options([...sentinelFlags(waited), '--redis-wait-replicas', '1', '--redis-wait-timeout', '100'], { REDIS_AUTH: PW }));
    try {
      const store = r.service.store as RedisStore;
      const f = await failover(waited, r, () => store.waitShortfalls);
      const shortfalls = store.waitShortfalls;
      t.diagnostic(`WAIT 1: ${JSON.stringify({ ...f, shortfalls })}`);
      process.stderr.write(`sentinel failover, WAIT 1 100 ms: ${JSON.stringify({ ...f, shortfalls })}\n`);
      // a charge can be lost only if the old master acknowledged it without its replica: a WAIT that timed out
      // before the kill (those after it are the new master's, which has no replica and cannot lose them to this kill)
      assert.ok(f.lost <= f.atKill, `lost ${f.lost} charges with only ${f.atKill} WAIT timeouts before the kill: ${JSON.stringify(f)}`);
      // the promoted master has no replica left: WAIT times out (100 ms) on every charge, and says so
      const before = store.waitShortfalls;
      await exactAfter(r, 10);
      assert.ok(store.waitShortfalls > before);
    } finally {
      await r.close();
    }
  });
});
