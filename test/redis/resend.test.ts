/**
 * A connection lost between Redis running a check and its reply reaching the store: ioredis re-sends the commands
 * that were unanswered when the connection closed (its default `autoResendUnfulfilledCommands`, and a Cluster's retry
 * of a command whose node connection closed). A check script is not idempotent, so the re-sent one charged a second
 * time: 10 checks admitted, 20 charged in Redis. The store now writes such a re-sent check or batch with a deadline
 * already past (LATE: it changes nothing) and answers it by the failure policy: a check is charged at most once.
 * The loss is made exact: the server is SIGSTOPped, the checks are written to it, then `CLIENT KILL` of the store's
 * connection from another connection, then SIGCONT: Redis reads both in one turn of its event loop.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis } from 'ioredis';
import { rules } from '../../src/core/rules.js';
import { Policy } from '../../src/core/policy.js';
import type { Decision } from '../../src/core/types.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
import type { RedisServer } from '../support/redis.js';
import { uniquePrefix, useCluster, useRedis } from '../support/redis-suite.js';
import { slotOf } from '../../src/stores/redis/slot.js';

const LIMIT = 1_000;

/** killer — a raw connection to `server`, to send CLIENT KILL while the server is stopped. */
async function killer(server: RedisServer): Promise<Socket> {
  const s = connect(server.port, '127.0.0.1');
  await new Promise((r) => s.once('connect', r));
  return s;
}

/**
 * lostReplies — `n` checks of one key sent to a stopped `server`, whose connection `id` is killed before it wakes;
 * resolves to the decisions and what Redis charged for them (read after the client reconnected).
 */
async function lostReplies(store: RedisStore, server: RedisServer, connId: () => Promise<number>, n: number, flush: boolean): Promise<{ ds: Decision[]; charged: number }> {
  const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: LIMIT, per: '1h' })] })) as RedisBound;
  await Promise.all([bound.evaluate('k', 0, undefined), bound.evaluate('k', 0, undefined)]); // scripts loaded, clock learnt
  const id = await connId();
  const k = await killer(server);
  server.pause();
  let ds: Decision[];
  try {
    const p = Promise.all(Array.from({ length: n }, () => bound.evaluate('k', 1, undefined)));
    await sleep(30); // written to the stopped server
    // flush: the server also forgets its scripts (as a restarted one has): the re-sent command must not meet NOSCRIPT,
    // which the store answers by sending the script's text with the check's real deadline
    k.write(`CLIENT KILL ID ${id}\r\n${flush ? 'SCRIPT FLUSH\r\n' : ''}`);
    await sleep(30);
    server.resume();
    ds = await p;
  } finally {
    server.resume();
    k.destroy();
  }
  // what Redis holds once the client is back (a re-sent command runs right after the reconnection)
  let look: Decision | undefined;
  for (let i = 0; i < 100; i++) {
    await sleep(20);
    look = await bound.evaluate('k', 0, undefined);
    if (look.reason !== 'store-unavailable' && store.pending === 0) break;
  }
  assert.ok(look !== undefined && look.reason !== 'store-unavailable', 'Redis answers again');
  return { ds, charged: LIMIT - look.remaining };
}

/** Where — the store's client, the server holding a Redis key, and the id of the client's connection to that server. */
interface Where {
  client: () => Redis | Cluster;
  serverOf: (redisKey: string) => RedisServer;
  connId: (server: RedisServer) => Promise<number>;
}

function lostReply(where: string, w: Where): void {
  for (const [batch, flush] of [[true, false], [false, false], [true, true], [false, true]]) {
    test(`${where}, batch ${batch}${flush ? ', scripts flushed' : ''}: a check whose reply was lost with its connection is charged at most once`, async () => {
      for (let trial = 0; trial < 3; trial++) {
        const store = new RedisStore({ client: w.client(), prefix: uniquePrefix('resend'), timeout: 3_000, onError: 'deny', batch });
        try {
          const redisKey = (store.attach(new Policy({ rules: [rules.fixedWindow({ limit: LIMIT, per: '1h' })] })) as RedisBound).redisKey('k');
          const server = w.serverOf(redisKey);
          const n = batch ? 10 : 1;
          const { ds, charged } = await lostReplies(store, server, () => w.connId(server), n, flush);
          const admitted = ds.filter((d) => d.allowed).length;
          assert.ok(charged <= n, `trial ${trial}: ${n} checks, ${admitted} admitted, ${charged} charged in Redis`);
          assert.ok(charged >= admitted, `trial ${trial}: ${admitted} admitted, ${charged} charged`);
          assert.ok(ds.every((d) => d.allowed || d.reason === 'store-unavailable'));
        } finally {
          store.close();
        }
      }
    });
  }
}

describe('standalone', () => {
  const suite = useRedis();
  lostReply('standalone', {
    client: () => suite.client,
    serverOf: () => suite.server,
    connId: async () => Number(await suite.client.client('ID')),
  });
});

describe('cluster', () => {
  const suite = useCluster();
  lostReply('cluster', {
    client: () => suite.client,
    serverOf: (redisKey) => suite.server.owner(slotOf(redisKey)),
    // the client's own connection to that master
    connId: async (server) => Number(await suite.client.nodes('master').find((n) => n.options.port === server.port)!.client('ID')),
  });
});
