/** test/http/headers — the IETF fields from real decisions, checked by parsing them back with structured-headers. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { parseList, type Item } from 'structured-headers';
import { limiter, rules } from '../../src/index.js';
import { RateLimitCore, type Verdict } from '../../src/http/core.js';
import { LimitFieldWriter, limitField, policyField, sha256PartitionKey, seconds } from '../../src/http/headers.js';

const partitionKey = sha256PartitionKey()!;

const parse = (v: string) => parseList(v).map((m) => [(m as Item)[0], Object.fromEntries((m as Item)[1])]);

describe('headers', () => {
  it('seconds rounds up, and never is undefined', () => {
    assert.deepEqual([0, 1, 999, 1000, 1001, 59_999.5].map(seconds), [0, 1, 1, 1, 2, 60]);
    assert.equal(seconds(Infinity), undefined);
  });

  it('the partition key is the first 12 bytes of the key\'s SHA-256', () => {
    for (const s of ['198.51.100.1', '', 'user:ünïcødé', 'x'.repeat(1000)]) {
      assert.deepEqual(Buffer.from(partitionKey(s)), createHash('sha256').update(s, 'utf8').digest().subarray(0, 12));
    }
  });

  it('partitionKey: true digests the client key into pk of both fields; a function replaces the digest', () => {
    const facts = { peer: (r: { ip: string }) => r.ip, header: () => undefined };
    const pkOf = (v: Verdict, field: string) => {
      const [, p] = parse(v.headers.find(([n]) => n === field)![1])[0] as [string, Record<string, unknown>];
      return new Uint8Array(p.pk as ArrayBuffer);
    };
    const digest = new RateLimitCore({ rules: '5/s', partitionKey: true }, facts).evaluate({ ip: '198.51.100.1' }) as Verdict;
    assert.deepEqual(pkOf(digest, 'RateLimit'), new Uint8Array(partitionKey('198.51.100.1')));
    assert.deepEqual(pkOf(digest, 'RateLimit-Policy'), new Uint8Array(partitionKey('198.51.100.1')));
    const own = new RateLimitCore({ rules: '5/s', partitionKey: (k) => new TextEncoder().encode(k.slice(0, 3)) }, facts).evaluate({ ip: '198.51.100.1' }) as Verdict;
    assert.deepEqual(pkOf(own, 'RateLimit'), new TextEncoder().encode('198'));
    assert.throws(() => new RateLimitCore({ rules: '5/s', partitionKey: 'yes' as never }, facts), /partitionKey must be a boolean or a function/);
  });

  it('RateLimit-Policy: sf-string names (escaped), integer q, w only for whole seconds, qu and pk', () => {
    const list = [
      rules.fixedWindow({ limit: 2.5, per: '1500ms', name: 'odd "name" \\ here' }),
      rules.slidingLog({ limit: 800, per: '1d' }),
    ];
    assert.deepEqual(parse(policyField(list, undefined)), [['odd "name" \\ here', { q: 2 }], ['800/1d', { q: 800, w: 86400 }]]);
    const pk = partitionKey('198.51.100.1');
    assert.equal(pk.length, 12);
    const [, p] = parse(policyField(list.slice(1), 'content-bytes', pk))[0] as [string, Record<string, unknown>];
    assert.equal(p.qu, 'content-bytes');
    assert.deepEqual(new Uint8Array(p.pk as ArrayBuffer), new Uint8Array(pk));
  });

  it('RateLimit of every decision a real limiter makes parses, with integer r, t >= 0 (property)', () => {
    const policy = [
      rules.tokenBucket({ limit: 5, per: '1s', name: 'tb' }), rules.slidingWindow({ limit: 20, per: '1m', name: 'sw' }),
      rules.earrrl({ limit: 3, per: '1s', halfLife: '2s', name: 'avg "x" \\' }), rules.leakyBucket({ limit: 4, per: '500ms', name: 'lb' }),
    ];
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 7 })), { maxLength: 40 }), (steps) => {
      let t = 1_700_000_000_000;
      const lim = limiter({ rules: policy, clock: { now: () => t } });
      const writer = new LimitFieldWriter(lim.policy.rules);
      for (const [dt, cost] of steps) {
        t += dt;
        const d = lim.checkSync('k', { cost });
        assert.equal(writer.write(d), limitField(d), 'the hot path writes what serializeList writes');
        const got = parse(limitField(d)) as [string, Record<string, number>][];
        assert.deepEqual(got.map(([n]) => n), ['tb', 'sw', 'avg "x" \\', 'lb']);
        got.forEach(([, p], i) => {
          assert.ok(Number.isInteger(p.r) && p.r >= 0);
          assert.equal(p.r, Math.floor(d.rules[i].remaining));
          if (p.t !== undefined) assert.ok(Number.isInteger(p.t) && p.t >= 0);
          const ms = d.rules[i].allowed ? d.rules[i].resetAfter : d.rules[i].retryAfter;
          if (ms < Infinity) assert.equal(p.t, Math.ceil(ms / 1000));
          else assert.equal(p.t, undefined);
        });
      }
    }), { numRuns: 200 });
  });
});
