/** test/http/headers — the IETF fields from real decisions, checked by parsing them back with structured-headers. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { parseList, type Item } from 'structured-headers';
import { limiter, rules } from '../../src/index.js';
import { sha256 } from '../../src/http/sha256.js';
import { LimitFieldWriter, limitField, policyField, partitionKey, seconds } from '../../src/http/headers.js';

const parse = (v: string) => parseList(v).map((m) => [(m as Item)[0], Object.fromEntries((m as Item)[1])]);

describe('headers', () => {
  it('seconds rounds up, and never is undefined', () => {
    assert.deepEqual([0, 1, 999, 1000, 1001, 59_999.5].map(seconds), [0, 1, 1, 1, 2, 60]);
    assert.equal(seconds(Infinity), undefined);
  });

  it('the partition key digest is SHA-256 (the plain-JS one the edge runtimes use equals node:crypto)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
      assert.deepEqual(Buffer.from(sha256(s)), createHash('sha256').update(s, 'utf8').digest());
    }), { numRuns: 300 });
    for (const n of [0, 55, 56, 63, 64, 65, 119, 120]) assert.deepEqual(Buffer.from(sha256('a'.repeat(n))), createHash('sha256').update('a'.repeat(n)).digest());
    assert.deepEqual(Buffer.from(partitionKey('198.51.100.1')), createHash('sha256').update('198.51.100.1').digest().subarray(0, 12));
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
