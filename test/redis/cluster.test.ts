/**
 * Redis Cluster: a client key picks its slot only through its whole (encoded) self, so a key with braces cannot
 * land in another client's slot or state; no script ever gets CROSSSLOT; and checks during a slot migration —
 * served by the source, redirected with ASK to the target, then MOVED once the slot has moved — decide exactly as
 * the memory store does.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Policy } from '../../src/core/policy.js';
import { rules } from '../../src/core/rules.js';
import type { Decision } from '../../src/core/types.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore, encodeKey, type RedisBound } from '../../src/stores/redis/index.js';
import { type RedisServer } from '../support/redis.js';
import { useCluster } from '../support/redis-suite.js';
import { same } from '../conformance/run.js';

/** slotOf — Redis Cluster's key slot: CRC16 (XMODEM) of the hash tag, or of the whole key when it has none. */
function slotOf(key: string): number {
  const b = Buffer.from(key);
  let s = b.indexOf(0x7b); // {
  let e = s >= 0 ? b.indexOf(0x7d, s + 1) : -1; // }
  let part = b;
  if (s >= 0 && e > s + 1) part = b.subarray(s + 1, e);
  let crc = 0;
  for (const byte of part) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  s = e = 0;
  return crc % 16384;
}

/** decodeKey — the inverse of encodeKey (to show that it is injective). */
function decodeKey(k: string): string {
  return k.replace(/%(25|7B|7D|u[0-9a-f]{4})/g, (_, c: string) => (c[0] === 'u' ? String.fromCharCode(parseInt(c.slice(1), 16)) : c === '25' ? '%' : c === '7B' ? '{' : '}'));
}

const redis = useCluster();

describe('keys and slots', () => {
  test('encodeKey is injective and leaves no brace, so the hash tag is the whole client key', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom('a', '{', '}', '%', '7', 'D', 'B', 'u', '\ud800', '\udc00', 'é') }), (k) => {
      const e = encodeKey(k);
      assert.ok(!/[{}]/.test(e));
      assert.equal(decodeKey(e), k);
      assert.equal(Buffer.from(e).toString(), e, 'no lone surrogate reaches UTF-8 (it would collide with U+FFFD)');
    }), { numRuns: 2_000 });
  });

  test('a client key with braces cannot choose its slot: the slot is that of the whole encoded key', () => {
    const bound = new RedisStore({ client: redis.client }).attach(new Policy({ rules: [rules.gcra({ limit: 1, per: '1s' })] }));
    const victim = 'victim';
    for (const attacker of ['{victim}', 'x}{victim}', '}{victim', '{victim}x', 'victim}', '%7Bvictim%7D']) {
      const k = bound.redisKey(attacker);
      assert.equal(slotOf(k), slotOf(encodeKey(attacker)));
      assert.notEqual(k, bound.redisKey(victim));
    }
    // slotOf agrees with Redis itself.
    for (const k of [bound.redisKey('a{b}c'), bound.redisKey('}{'), 'plain', '{tag}rest']) {
      assert.equal(Number(redis.server.nodes[0].cli('CLUSTER', 'KEYSLOT', k)), slotOf(k));
    }
  });

  test('many clients with braces across the cluster: no CROSSSLOT, no error, separate state', async () => {
    const store = new RedisStore({ client: redis.client, prefix: `x:${randomBytes(3).toString('hex')}:`, timeout: 5_000 });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 1, per: '1h', name: 'window' }), rules.slidingLog({ limit: 1, per: '1h', name: 'log' })] }));
    const keys = Array.from({ length: 300 }, (_, i) => ['{', '}', '{x}', '%', ''][i % 5] + `c${i}` + ['}', '{', '', '{}'][i % 4]);
    const first = await Promise.all(keys.map((k) => bound.evaluate(k, 1, undefined)));
    const second = await Promise.all(keys.map((k) => bound.evaluate(k, 1, undefined)));
    assert.equal(store.failures, 0, String(store.lastError));
    assert.ok(first.every((d) => d.allowed), 'every client is new: none shares another one\'s state');
    assert.ok(second.every((d) => !d.allowed && d.reason === 'limited'));
    for (const n of redis.server.nodes) assert.doesNotMatch(n.cli('INFO', 'errorstats'), /CROSSSLOT/);
  });
});

describe('a slot migration', () => {
  test('checks served by the source, redirected by ASK, then by MOVED, decide as the memory store does', async () => {
    const policy = new Policy({ rules: [rules.gcra({ limit: 5, per: '1h' }), rules.slidingLog({ limit: 6, per: '1h' })] });
    const bound: RedisBound = new RedisStore({ client: redis.client, prefix: 'mig:', timeout: 5_000 }).attach(policy);
    const memory = new MemoryStore().attach(policy);
    const key = 'migrating-client';
    const slot = slotOf(bound.redisKey(key));
    // A second client of the same slot that has no state yet when the migration starts.
    let other = '';
    for (let i = 0; other === ''; i++) if (slotOf(bound.redisKey(`new-${i}`)) === slot) other = `new-${i}`;

    const source = redis.server.owner(slot);
    const target = redis.server.nodes.find((n) => n !== source) as RedisServer;
    const sourceId = redis.server.nodeId(source);
    const targetId = redis.server.nodeId(target);
    const T = 1_800_000_000_000;
    const got: Decision[] = [];
    const want: Decision[] = [];
    const check = async (k: string, t: number): Promise<void> => {
      got.push(await bound.evaluate(k, 1, T + t));
      want.push(memory.evaluate(k, 1, T + t));
    };
    const errors = (n: RedisServer): string => n.cli('INFO', 'errorstats');

    await check(key, 0);
    await check(key, 1);
    target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
    source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
    await check(key, 2); // the key is still on the source: served there
    await check(other, 3); // not on the source: ASK → the target (importing) serves it
    assert.match(errors(source), /errorstat_ASK:count=[1-9]/);
    source.cli('MIGRATE', '127.0.0.1', String(target.port), '', '0', '5000', 'KEYS', bound.redisKey(key));
    await check(key, 4); // moved to the target: ASK again
    for (const n of redis.server.nodes) n.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
    await check(key, 5); // the slot is the target's: MOVED, and the client refreshes its map
    await check(other, 6);
    await check(key, 7);
    assert.match(errors(source), /errorstat_MOVED:count=[1-9]/);
    assert.equal(await redis.client.exists(bound.redisKey(key)), 1);
    assert.equal(target.cli('EXISTS', bound.redisKey(key)), '1');
    same(got, want, 'decisions during the migration');
    assert.deepEqual(got.map((d) => d.allowed), [true, true, true, true, true, true, true, false]);
  });
});
