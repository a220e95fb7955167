/**
 * test/redis/listing — the operators' view on a 3-master Redis Cluster costs the checks nothing noticeable (issue 15,
 * section 5): a listing of blocks and exemptions for 50 limiters costs a bounded number of commands per master
 * (counted with INFO commandstats on each master), it stays correct (an override set through any instance shows up,
 * a lifted or ended one does not), and checks keep >= 90 % of their throughput while a poller lists top, blocks and
 * exemptions of 50 limiters every 2 s as the dashboard does.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { RedisStore, encodeKey } from '../../src/stores/redis/index.js';
import { tagSlot } from '../../src/stores/redis/slot.js';
import { useCluster, useNodeRedisCluster, uniquePrefix } from '../support/redis-suite.js';
import type { RedisServer } from '../support/redis.js';

/** LIMITS — the limiters of the dashboard scenario (issue 15: 50 limits). */
const LIMITS = 50;
/** LISTING_AGE — what the admin API passes as maxAge (src/admin/api.ts). */
const LISTING_AGE = 1000;

/** fleet — LIMITS limiters of distinct rules (so distinct policies) on one store, observing as the service does. */
function fleet(store: RedisStore): Limiter[] {
  return Array.from({ length: LIMITS }, (_, i) => limiter({ rules: [rules.gcra({ limit: 1_000_000 + i, per: '1s' })], store, observe: { share: 60_000 } }));
}

/** poll — what the dashboard asks every 2 s: top, blocks and exemptions of every limiter (as src/admin/api.ts asks them). */
async function poll(limiters: Limiter[]): Promise<void> {
  await Promise.all(limiters.map((l) => l.top({ n: 10, maxAge: LISTING_AGE })));
  await Promise.all(limiters.map((l) => l.blocks({ maxAge: LISTING_AGE })));
  await Promise.all(limiters.map((l) => l.exemptions({ maxAge: LISTING_AGE })));
}

/** commandStats — INFO commandstats of one master: calls per command, but the test's own INFO and CONFIG. */
function commandStats(node: RedisServer): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of node.cli('INFO', 'commandstats').split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m !== null && m[1] !== 'info' && !m[1].startsWith('config')) calls.set(m[1], Number(m[2]));
  }
  return calls;
}

/** commandCalls — the calls of every command on one master (commandStats), in all. */
function commandCalls(node: RedisServer): number {
  let n = 0;
  for (const c of commandStats(node).values()) n += c;
  return n;
}

/** show — the commands per master, for a message: `hgetall=2 evalsha=2 | …`. */
function show(nodes: RedisServer[]): string {
  return nodes.map((n) => [...commandStats(n)].map(([c, k]) => `${c}=${k}`).join(' ')).join(' | ');
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('the operators\' view on a Redis Cluster', () => {
  const suite = useCluster();

  it('a listing of blocks and exemptions of 50 limiters costs a bounded number of commands per master, not one per slot', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('lst') });
    const limiters = fleet(store);
    try {
      for (let i = 0; i < 10; i++) await limiters[i % LIMITS].block(`user:${i}`, { for: '1h', reason: 'abuse' });
      await limiters[7].exempt('partner', { for: '1h' });
      for (let i = 0; i < 30; i++) await limiters[i % 5].check(`seen:${i}`);
      await poll(limiters); // scripts loaded on every master; entries filed before the slot table was known moved home
      await sleep(LISTING_AGE + 50); // no listing cached
      for (const n of suite.server.nodes) n.cli('CONFIG', 'RESETSTAT');
      const t0 = performance.now();
      await poll(limiters);
      const ms = performance.now() - t0;
      const perMaster = suite.server.nodes.map(commandCalls);
      process.stdout.write(`one dashboard poll of ${LIMITS} limiters: ${ms.toFixed(1)} ms, commands per master ${perMaster.join(' / ')} (${show(suite.server.nodes)})\n`);
      // top's shared summaries: at most one read per limiter in all; the listing of blocks and exemptions: a few per master
      const total = perMaster.reduce((a, b) => a + b, 0);
      for (const c of perMaster) assert.ok(c <= 8 + LIMITS, `a poll sent ${c} commands to one master (${perMaster.join(' / ')})`);
      assert.ok(total <= 3 * 8 + LIMITS, `a poll sent ${total} commands in all (${perMaster.join(' / ')})`);

      // the listing alone (blocks and exemptions), without top's summaries: a few commands per master
      await sleep(LISTING_AGE + 50);
      for (const n of suite.server.nodes) n.cli('CONFIG', 'RESETSTAT');
      await Promise.all(limiters.map((l) => l.blocks({ maxAge: LISTING_AGE })));
      await Promise.all(limiters.map((l) => l.exemptions({ maxAge: LISTING_AGE })));
      const listing = suite.server.nodes.map(commandCalls);
      process.stdout.write(`one listing of blocks and exemptions of ${LIMITS} limiters: commands per master ${listing.join(' / ')} (${show(suite.server.nodes)})\n`);
      for (const c of listing) assert.ok(c <= 6, `a listing sent ${c} commands to one master (${listing.join(' / ')})`);
      const blocks = (await Promise.all(limiters.map((l) => l.blocks()))).flat();
      assert.deepEqual(blocks.map((b) => b.key).sort(), Array.from({ length: 10 }, (_, i) => `user:${i}`).sort());
      assert.deepEqual((await limiters[7].exemptions()).map((e) => e.key), ['partner']);
    } finally {
      for (const l of limiters) await l.close();
    }
  });

  it('an override set through any instance is listed by every other; a lifted or ended one is not', async () => {
    const prefix = uniquePrefix('any');
    const other = new Cluster(suite.server.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
    const make = (client: Cluster): Limiter => limiter({ rules: [rules.gcra({ limit: 5, per: '1s' })], store: new RedisStore({ client, prefix }) });
    const one = make(suite.client);
    const two = make(other);
    try {
      const keys = Array.from({ length: 40 }, (_, i) => `client-${i}`); // spread over the three masters
      for (const [i, k] of keys.entries()) if (i > 0) await (i % 2 === 0 ? one : two).block(k, { for: '1h', reason: `r${i}` });
      await one.block(keys[0], { for: 400, reason: 'r0' });
      await two.exempt('vip');
      assert.deepEqual((await one.blocks()).map((b) => b.key).sort(), [...keys].sort());
      assert.deepEqual((await two.blocks()).map((b) => b.key).sort(), [...keys].sort());
      assert.deepEqual((await one.exemptions()).map((b) => b.key), ['vip']);
      assert.equal((await two.blocks()).find((b) => b.key === 'client-3')?.reason, 'r3');
      await one.unblock('client-3'); // set by two, lifted by one
      await two.unblock('client-4'); // set by one, lifted by two
      await one.exempt('client-5'); // the later wins: no longer a block
      await one.unexempt('vip');
      await sleep(450); // client-0's block (400 ms) has ended
      const left = keys.filter((k) => !['client-0', 'client-3', 'client-4', 'client-5'].includes(k)).sort();
      assert.deepEqual((await two.blocks()).map((b) => b.key).sort(), left);
      assert.deepEqual((await one.blocks()).map((b) => b.key).sort(), left);
      assert.deepEqual((await two.exemptions()).map((b) => b.key), ['client-5']);
      assert.equal((await two.check('client-0')).allowed, true);
      assert.equal((await two.check('client-6')).reason, 'blocked');
      // a listing reused within maxAge is dropped by a change through the same limiter
      assert.equal((await one.blocks({ maxAge: 60_000 })).length, left.length);
      await one.block('late');
      assert.ok((await one.blocks({ maxAge: 60_000 })).some((b) => b.key === 'late'));
    } finally {
      other.disconnect();
    }
  });

  it('after a resharding moves a blocked client\'s slot to another master, the block is still listed, and once lifted it is not', async () => {
    const prefix = uniquePrefix('move');
    const lim = limiter({ rules: [rules.gcra({ limit: 5, per: '1s' })], store: new RedisStore({ client: suite.client, prefix }) });
    const key = 'moving-client';
    const slot = tagSlot(encodeKey(key));
    const source = suite.server.owner(slot);
    const target = suite.server.nodes.find((n) => n !== source)!;
    await lim.block(key, { for: '1h', reason: 'before the move' });
    await lim.block('staying-client', { for: '1h' });
    assert.deepEqual((await lim.blocks()).map((b) => b.key).sort(), [key, 'staying-client']);
    target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', suite.server.nodeId(source));
    source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', suite.server.nodeId(target));
    source.cli('MIGRATE', '127.0.0.1', String(target.port), '', '0', '5000', 'KEYS', (lim as any).bound.redisKey(key));
    for (const n of suite.server.nodes) n.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', suite.server.nodeId(target));
    assert.equal((await lim.check(key)).reason, 'blocked'); // MOVED: the client learns the new owner
    for (let i = 0; i < 100 && suite.client.slots[slot]?.[0] !== `127.0.0.1:${target.port}`; i++) await sleep(20);
    const listed = await lim.blocks();
    assert.deepEqual(listed.map((b) => b.key).sort(), [key, 'staying-client'], 'listed from the bucket it was filed in, checked against the client\'s value');
    assert.equal(listed.find((b) => b.key === key)?.reason, 'before the move');
    await lim.unblock(key); // on the new master
    assert.deepEqual((await lim.blocks()).map((b) => b.key), ['staying-client'], 'the lifted block is not listed from the old master\'s bucket');
    assert.equal((await lim.inspect(key)).override, undefined);
    await lim.block(key, { reason: 'after the move' });
    const again = (await lim.blocks()).filter((b) => b.key === key);
    assert.deepEqual(again.map((b) => b.reason), ['after the move']);
    assert.equal(again[0].until, Infinity);
  });

  it('checks keep >= 90 % of their throughput while a dashboard polls top, blocks and exemptions of 50 limiters every 2 s', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('load') });
    const limiters = fleet(store);
    try {
      for (let i = 0; i < 5; i++) await limiters[i].block(`blocked:${i}`, { for: '1h' });
      /** run — `ms` of checks at `rate` per second (open loop, one batch every 10 ms) over the 50 limiters: answered per second and p99 latency. */
      const run = async (ms: number, rate: number, polling: boolean): Promise<{ perSecond: number; p99: number; polls: number }> => {
        const latencies: number[] = [];
        let answered = 0;
        let polls = 0;
        let stop = false;
        const poller = (async () => {
          while (polling && !stop) {
            const t = performance.now();
            await Promise.race([poll(limiters).catch(() => undefined), sleep(6000)]); // bounded, should a poll never end
            polls++;
            const wait = 2000 - (performance.now() - t);
            for (let slept = 0; slept < wait && !stop; slept += 50) await sleep(Math.min(50, wait - slept));
          }
        })();
        const start = performance.now();
        const pending: Promise<void>[] = [];
        let sent = 0;
        let n = 0;
        while (performance.now() - start < ms) {
          const due = Math.floor(((performance.now() - start) / 1000) * rate);
          for (; sent < due; sent++) {
            const t = performance.now();
            const l = limiters[n++ % LIMITS];
            pending.push(l.check(`c${n % 2000}`).then(() => {
              if (performance.now() - start <= ms) answered++;
              latencies.push(performance.now() - t);
            }));
          }
          await sleep(10);
        }
        stop = true;
        await Promise.all(pending);
        await poller;
        latencies.sort((a, b) => a - b);
        return { perSecond: (answered * 1000) / ms, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, polls };
      };
      await run(500, 500, false); // warm up: scripts loaded, connections open
      const rate = 1200;
      const without = await run(3000, rate, false);
      const withPoller = await run(3000, rate, true);
      const ratio = withPoller.perSecond / without.perSecond;
      process.stdout.write(`checks at ${rate}/s offered over ${LIMITS} limiters: without the dashboard ${without.perSecond.toFixed(0)}/s (p99 ${without.p99.toFixed(1)} ms), ` +
        `with it ${withPoller.perSecond.toFixed(0)}/s (p99 ${withPoller.p99.toFixed(1)} ms, ${withPoller.polls} polls): ratio ${ratio.toFixed(3)}\n`);
      assert.ok(withPoller.polls >= 2, `the poller ran ${withPoller.polls} times`);
      assert.ok(ratio >= 0.9, `with the dashboard open checks ran at ${(ratio * 100).toFixed(1)} % of their throughput`);
    } finally {
      for (const l of limiters) await l.close();
    }
  });
});

describe('the operators\' view on a Redis Cluster through node-redis (createCluster)', () => {
  const suite = useNodeRedisCluster();
  it('blocks and exemptions are listed (they rejected before: the listing needed ioredis\'s slot table and pipelines)', async () => {
    const lim = limiter({ rules: [rules.gcra({ limit: 5, per: '1s' })], store: new RedisStore({ client: suite.client, prefix: uniquePrefix('nr') }) });
    const keys = Array.from({ length: 12 }, (_, i) => `nr-${i}`);
    for (const k of keys) await lim.block(k, { for: '1h' });
    await lim.exempt('nr-vip');
    assert.deepEqual((await lim.blocks()).map((b) => b.key).sort(), [...keys].sort());
    await lim.unblock('nr-3');
    assert.deepEqual((await lim.blocks()).map((b) => b.key).sort(), keys.filter((k) => k !== 'nr-3').sort());
    assert.deepEqual((await lim.exemptions()).map((b) => b.key), ['nr-vip']);
    assert.equal((await lim.inspect('nr-4')).override?.kind, 'block');
  });
});
