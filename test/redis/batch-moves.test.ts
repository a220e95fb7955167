/**
 * Batches of a hot key while its slot moves to another master of a 3-master Cluster (SETSLOT IMPORTING/MIGRATING, the
 * key MIGRATEd, SETSLOT NODE): the batches are served by the source, then redirected by ASK, then MOVED, and ioredis
 * re-sends them on the target. A redirected batch was not run where it was refused, so it must run once where it
 * lands — not be answered by the failure policy (a re-sent command is sent LATE only when the connection it was first
 * written on has closed: wire.ts OnceCommand) — and every admitted check is charged exactly once.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rules } from '../../src/core/rules.js';
import { Policy } from '../../src/core/policy.js';
import type { Decision } from '../../src/core/types.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
import { slotOf } from '../../src/stores/redis/slot.js';
import type { RedisServer } from '../support/redis.js';
import { uniquePrefix, useCluster } from '../support/redis-suite.js';

describe('cluster', () => {
  const suite = useCluster();

  test('a hot key\'s batches during a slot migration (ASK, then MOVED): each run once, none by the failure policy', async (t) => {
    const cluster = suite.server;
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('moves'), timeout: 5_000, onError: 'deny' });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 1e9, per: '1h' })] })) as RedisBound;
    const rk = bound.redisKey('hot');
    const slot = slotOf(rk);
    await bound.evaluate('hot', 0, undefined);
    const source = cluster.owner(slot);
    const target = cluster.masters().find((n) => n !== source) as RedisServer;
    const [sourceId, targetId] = [cluster.nodeId(source), cluster.nodeId(target)];
    for (const n of [source, target]) n.cli('CONFIG', 'RESETSTAT');
    let stop = false;
    const ds: Decision[] = [];
    // 200 checks of the key per turn (parts of 64 leaving as they fill), turn after turn until the slot has moved
    const hammer = (async () => {
      while (!stop) ds.push(...(await Promise.all(Array.from({ length: 200 }, () => bound.evaluate('hot', 1, undefined)))));
    })();
    await sleep(100);
    target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
    source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
    await sleep(100); // the key on the source: served there
    assert.equal(source.cli('MIGRATE', '127.0.0.1', String(target.port), '', '0', '5000', 'KEYS', rk), 'OK');
    await sleep(150); // the key on the target, the slot still the source's: ASK
    for (const n of cluster.masters()) n.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
    await sleep(150); // the slot the target's: MOVED, then the client's new slot map
    stop = true;
    await hammer;
    const unavailable = ds.filter((d) => d.reason === 'store-unavailable').length;
    const admitted = ds.filter((d) => d.allowed).length;
    const errs = (n: RedisServer): string => n.cli('INFO', 'errorstats').replace(/\r?\n/g, ' ');
    t.diagnostic(`${ds.length} checks, ${store.batcher!.stats.batches} batches; source: ${errs(source)}`);
    assert.equal(cluster.owner(slot), target);
    assert.match(errs(source), /errorstat_ASK:count=[1-9]/, 'batches were redirected by ASK');
    assert.match(errs(source), /errorstat_MOVED:count=[1-9]/, 'batches were redirected by MOVED');
    assert.equal(unavailable, 0, `${unavailable} of ${ds.length} answered by the failure policy (${store.lastError?.message})`);
    const look = await bound.evaluate('hot', 0, undefined);
    assert.equal(1e9 - look.remaining, admitted, 'every admitted check charged once');
    store.close();
  });
});
