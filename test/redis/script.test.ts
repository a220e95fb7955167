/**
 * The composed script: straight-line Lua per policy (no function, table or closure built per call), the same decisions
 * as the memory store for a policy too large for one flat reply (each rule packs its part), and through a client with
 * ioredis auto-pipelining or with coalescing off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Policy } from '../../src/core/policy.js';
import { rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import type { Algorithm } from '../../src/core/types.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { compoundScript, policyScript, refundScript } from '../../src/stores/redis/scripts.js';
import { syncScript } from '../../src/stores/redis/localFirst/script.js';
import { RatekeeperError } from '../../src/core/errors.js';
import { RedisServer } from '../support/redis.js';
import { checkExpectations, compare, run } from '../conformance/run.js';
import type { Scenario, Step } from '../conformance/scenarios.js';

const c = (t: number, cost = 1, key = 'k'): Step => ({ op: 'check', key, t, cost });

/** ten — every algorithm, two sliding logs, strict and leaky: more rules than one flat reply takes. */
const ten: RuleConfig[] = [
  rules.fixedWindow({ limit: 6, per: 10_000, name: 'fw' }), rules.slidingWindow({ limit: 5, per: 10_000, name: 'sw', accounting: 'strict' }),
  rules.slidingLog({ limit: 4, per: 5_000, name: 'log5s' }), rules.tokenBucket({ limit: 5, per: 10_000, burst: 6, name: 'tb' }),
  rules.leakyBucket({ limit: 4, per: 10_000, name: 'lb' }), rules.gcra({ limit: 5, per: 10_000, name: 'gcra', accounting: 'strict' }),
  rules.earrrl({ limit: 5, per: 10_000, halfLife: 4_000, name: 'earrrl' }), rules.exponential({ limit: 6, per: 10_000, name: 'exp' }),
  rules.slidingLog({ limit: 8, per: 30_000, name: 'log30s' }), rules.gcra({ limit: 100, per: 60_000, burst: 7, name: 'gcra2' }),
];
const steps: Step[] = [];
for (let i = 0; i < 30; i++) steps.push(c(i * 700 + (i % 4) * 0.25, i % 6 === 5 ? 2 : 1));
steps.push(c(60_000, 0), c(61_000), { op: 'block', key: 'k', t: 61_001, for: 1_000, reason: 'r' }, c(61_002), c(62_001));
const big: Scenario = { name: 'ten rules', rules: ten, steps };
const four: Scenario = {
  name: 'four rules',
  rules: [rules.gcra({ limit: 10, per: 1_000, burst: 3 }), rules.slidingLog({ limit: 20, per: 60_000 }), rules.earrrl({ limit: 30, per: 60_000, halfLife: 10_000 }), rules.leakyBucket({ limit: 5, per: 1_000, burst: 4 })],
  steps: Array.from({ length: 40 }, (_, i) => c(i * 150 + (i % 3) * 0.5)),
};

test('the script of a policy is straight-line: no function, closure or table is built per call', () => {
  for (const list of [four.rules, ten, [rules.exponential({ limit: 3, per: 1_000 })], [rules.slidingWindow({ limit: 3, per: 1_000 })]]) {
    const text = policyScript(new Policy({ rules: list })).text.replace(/--[^\n]*/g, ''); // the code, without its comments
    assert.doesNotMatch(text, /\bfunction\b/);
    assert.doesNotMatch(text, /[{}]/);
    assert.doesNotMatch(text, /\bfor\b[^\n]*\bin\b/);
  }
});

test('rule names cannot reach the code: line breaks and placeholders in a name are neutralized in the comments', () => {
  const text = policyScript(new Policy({ rules: [rules.gcra({ limit: 2, per: 1_000, name: 'x\nreturn 1 $LOCALS $S1 ]]' })] })).text;
  assert.doesNotMatch(text, /^return 1/m);
  assert.doesNotMatch(text, /\$/);
});

describe('on a standalone Redis', () => {
  let server: RedisServer;
  let plain: Redis;
  let auto: Redis;
  before(async () => {
    server = await RedisServer.start();
    plain = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
    auto = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1, enableAutoPipelining: true });
  });
  after(async () => {
    plain.disconnect();
    auto.disconnect();
    await server.stop();
  });
  const prefix = (): string => `sc:${randomBytes(4).toString('hex')}:`;

  test('ten rules (each rule packs its own part of the reply) decide as the memory store', async () => {
    const ref = await run(new MemoryStore(), big);
    compare(big, ref, await run(new RedisStore({ client: plain, prefix: prefix() }), big));
    checkExpectations(big, ref);
  });

  test("the client's keyPrefix applies to the checks' keys as to any command", async () => {
    const prefixed = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1, keyPrefix: 'kp:' });
    try {
      const store = new RedisStore({ client: prefixed, prefix: prefix() });
      const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 1, per: 60_000 })] }));
      assert.equal((await bound.evaluate('u', 1, undefined)).allowed, true);
      assert.equal((await bound.evaluate('u', 1, undefined)).allowed, false);
      assert.equal(await plain.exists(`kp:${bound.redisKey('u')}`), 1);
      assert.equal(await plain.exists(bound.redisKey('u')), 0);
    } finally {
      prefixed.disconnect();
    }
  });

  // The composer refuses a policy too large for one Lua function (Lua 5.1: 200 locals, 250 registers) when it is
  // attached: every policy it accepts must compile, or every check of it would answer by the failure policy (under
  // 'allow', every request admitted). The largest accepted policy of each mix of algorithms, its four scripts loaded.
  test('the largest policy the composer accepts compiles: its check, refund, compound and local-first sync scripts', async () => {
    const make: Record<Algorithm, (i: number) => RuleConfig> = {
      gcra: (i) => rules.gcra({ limit: 10 + i, per: 1_000, name: `g${i}` }),
      slidingWindow: (i) => rules.slidingWindow({ limit: 10 + i, per: 1_000, name: `sw${i}` }),
      exponential: (i) => rules.exponential({ limit: 10 + i, per: 1_000, name: `ex${i}` }),
      earrrl: (i) => rules.earrrl({ limit: 10 + i, per: 1_000, halfLife: 500, name: `ea${i}` }),
      leakyBucket: (i) => rules.leakyBucket({ limit: 10 + i, per: 1_000, name: `lb${i}` }),
      tokenBucket: (i) => rules.tokenBucket({ limit: 10 + i, per: 1_000, name: `tb${i}` }),
      fixedWindow: (i) => rules.fixedWindow({ limit: 10 + i, per: 1_000, name: `fw${i}` }),
      slidingLog: (i) => rules.slidingLog({ limit: 10 + i, per: 1_000 + i, name: `sl${i}` }),
    };
    const mixes: Algorithm[][] = [
      ['gcra'], ['slidingWindow'], ['exponential'], ['earrrl'], ['leakyBucket'], ['tokenBucket'], ['fixedWindow'], ['slidingLog'],
      ['slidingLog', 'gcra'], ['slidingLog', 'slidingWindow'], ['slidingLog', 'earrrl'], ['slidingLog', 'exponential'],
      ['gcra', 'earrrl'], ['gcra', 'fixedWindow'], ['slidingWindow', 'tokenBucket'], ['slidingWindow', 'leakyBucket'],
      ['exponential', 'leakyBucket'], ['slidingWindow', 'exponential', 'earrrl'], ['gcra', 'slidingWindow', 'tokenBucket'],
    ];
    const failures: string[] = [];
    for (const mix of mixes) {
      const policyOf = (n: number): Policy => new Policy({ rules: Array.from({ length: n }, (_, i) => make[mix[i % mix.length]](i)) });
      let n = 1;
      for (;;) {
        try {
          policyScript(policyOf(n + 1));
        } catch (e) {
          assert.ok(e instanceof RatekeeperError && /keeps too many numbers/.test(e.message), String(e));
          break;
        }
        n++;
      }
      assert.ok(n >= 16, `${mix.join('+')}: only ${n} rules accepted`);
      const p = policyOf(n);
      for (const [what, script] of [['check', policyScript(p)], ['refund', refundScript(p)], ['compound', compoundScript([p, p])], ['local-first sync', syncScript(p).script]] as const) {
        await plain.call('SCRIPT', 'LOAD', script.text).catch((e: Error) => failures.push(`${mix.join('+')} × ${n}, ${what}: ${e.message.slice(0, 120)}`));
      }
    }
    assert.deepEqual(failures, []);
  });

  for (const [name, options] of [['ioredis auto-pipelining', { auto: true, coalesce: true }], ['coalesce: false', { auto: false, coalesce: false }]] as const) {
    test(`${name}: the same decisions, also with many checks in flight`, async () => {
      const client = options.auto ? auto : plain;
      const ref = await run(new MemoryStore(), four);
      compare(four, ref, await run(new RedisStore({ client, prefix: prefix(), coalesce: options.coalesce }), four));
      // 200 keys in flight at once, each the scenario's steps in order: every key decides as alone
      const store = new RedisStore({ client, prefix: prefix(), coalesce: options.coalesce });
      const bound = store.attach(new Policy({ rules: four.rules }));
      const memory = new MemoryStore().attach(new Policy({ rules: four.rules }));
      const T = 1_800_000_000_000;
      for (const st of four.steps) {
        const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
        const got = await Promise.all(keys.map((k) => bound.evaluate(k, st.cost ?? 1, T + st.t)));
        const want = keys.map((k) => memory.evaluate(k, st.cost ?? 1, T + st.t));
        got.forEach((d, i) => compare(four, [want[i]], [d]));
      }
      assert.equal(store.failures, 0);
    });
  }
});
