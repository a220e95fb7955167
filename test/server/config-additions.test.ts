/**
 * ratekeeper's additions to envoy's YAML (algorithm, per, burst, half_life, accounting, rate_limits) and the native
 * `policies:` form: what they build, and the errors of bad values, named with file, path, field and value.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig, type ConfigIssue, type ServiceConfig } from '../../src/server/config/index.js';
import { limiter } from '../../src/index.js';

function cfg(text: string): ServiceConfig {
  return parseConfig([{ name: 'add.yaml', text }]);
}

/** limitOf — the limit of the single descriptor `k` of a config whose rate_limit block is `block` (YAML flow or lines). */
function limitOf(block: string) {
  return cfg(`domain: d\ndescriptors:\n  - key: k\n${block}`).match('d', [{ key: 'k', value: 'v' }])!.limit;
}

function issues(text: string): readonly ConfigIssue[] {
  try {
    parseConfig([{ name: 'add.yaml', text }]);
  } catch (e) {
    if (e instanceof ConfigError) return e.issues;
    throw e;
  }
  assert.fail('accepted');
}

function oneIssue(text: string, field: string, value: unknown, message: RegExp): ConfigIssue {
  const list = issues(text);
  assert.equal(list.length, 1, list.map((i) => i.message).join('\n'));
  assert.equal(list[0].field, field);
  assert.deepEqual(list[0].value, value);
  assert.match(list[0].message, message);
  assert.ok(list[0].line! > 0);
  return list[0];
}

describe('config: algorithm, per, burst, half_life, accounting on a rate_limit', () => {
  it('algorithm in any spelling, with its knobs', () => {
    const gcra = limitOf('    rate_limit: { unit: minute, requests_per_unit: 100, algorithm: gcra, burst: 20 }\n');
    assert.deepEqual({ ...gcra.rules[0] }, { algorithm: 'gcra', name: '100/1m', limit: 100, per: 60_000, burst: 20, halfLife: 0, accounting: 'leaky' });
    assert.deepEqual(gcra.report, { requestsPerUnit: 100, unit: 'MINUTE' });
    const spellings: [string, string][] = [
      ['sliding-window', 'slidingWindow'], ['sliding_log', 'slidingLog'], ['TokenBucket', 'tokenBucket'], ['leaky-bucket', 'leakyBucket'],
      ['GCRA', 'gcra'], ['exponential', 'exponential'], ['fixed-window', 'fixedWindow'],
    ];
    for (const [written, algorithm] of spellings) {
      assert.equal(limitOf(`    rate_limit: { unit: second, requests_per_unit: 5, algorithm: ${written} }\n`).rules[0].algorithm, algorithm, written);
    }
    const e = limitOf('    rate_limit: { per: 1m, requests_per_unit: 30, algorithm: earrrl, half_life: 10s }\n').rules[0];
    assert.deepEqual([e.algorithm, e.halfLife, e.accounting], ['earrrl', 10_000, 'strict'], "earrrl's default accounting is strict");
    assert.equal(limitOf('    rate_limit: { per: 1m, requests_per_unit: 30, algorithm: earrrl, halfLife: 5s }\n').rules[0].halfLife, 5000);
    assert.equal(limitOf('    rate_limit: { unit: second, requests_per_unit: 5, accounting: strict }\n').rules[0].accounting, 'strict');
  });

  it('per: any duration, reported over RLS as the same average rate in the largest unit not longer than per', () => {
    const report = (per: string, n: number) => limitOf(`    rate_limit: { per: ${per}, requests_per_unit: ${n} }\n`).report;
    assert.deepEqual(report('5m', 100), { requestsPerUnit: 20, unit: 'MINUTE' });
    assert.deepEqual(report('90s', 7), { requestsPerUnit: 4, unit: 'MINUTE' }); // 4.67 rounded down
    assert.deepEqual(report('2h', 100), { requestsPerUnit: 50, unit: 'HOUR' });
    assert.deepEqual(report('500ms', 10), { requestsPerUnit: 20, unit: 'SECOND' });
    assert.deepEqual(report('1m', 10), { requestsPerUnit: 10, unit: 'MINUTE' });
    assert.deepEqual(report('7d', 10), { requestsPerUnit: 10, unit: 'WEEK' });
    assert.deepEqual(report('10d', 10), { requestsPerUnit: 7, unit: 'WEEK' });
    const l = limitOf('    rate_limit: { per: 5m, requests_per_unit: 100 }\n');
    assert.deepEqual([l.rules[0].algorithm, l.rules[0].per, l.rules[0].limit], ['fixedWindow', 300_000, 100]);
  });

  it('bad values, named with the field and the value (the library message where it decides)', () => {
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, algorithm: gcar }\n',
      'algorithm', 'gcar', /algorithm "gcar" is not an algorithm \(did you mean `gcra`\?\)/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, burst: 10 }\n',
      'burst', 10, /fixedWindow\.burst is not an option of fixedWindow/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, algorithm: gcra, burst: 0 }\n',
      'burst', 0, /gcra\.burst must be a finite number >= 1, got 0/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, algorithm: earrrl }\n',
      'halfLife', undefined, /earrrl\.halfLife is required/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { per: 60, requests_per_unit: 5 }\n',
      'per', 60, /a bare number is ambiguous/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { per: 5 fortnights, requests_per_unit: 5 }\n',
      'per', '5 fortnights', /per must be a duration/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { per: 5m, unit: minute, requests_per_unit: 5 }\n',
      'per', '5m', /give one of them/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, accounting: lenient }\n',
      'accounting', 'lenient', /leaky or strict/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { per: 1m, requests_per_unit: 5, algorithm: earrrl, half_life: 1s, halfLife: 2s }\n',
      'halfLife', '2s', /one field/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 0, algorithm: gcra }\n',
      'algorithm', 'gcra', /does not apply with requests_per_unit: 0/);
  });
});

describe('config: rate_limits — several limits on one descriptor, decided all-or-nothing', () => {
  it('builds one policy of several rules, known by its first name, replacing what any item replaces', () => {
    const l = limitOf(`    rate_limits:
      - { unit: second, requests_per_unit: 10, name: burst }
      - { per: 1h, requests_per_unit: 1000, algorithm: sliding-log, replaces: [{ name: other }] }
`);
    assert.deepEqual(l.rules.map((r) => [r.algorithm, r.name, r.limit, r.per]), [['fixedWindow', 'burst', 10, 1000], ['slidingLog', '1000/1h', 1000, 3_600_000]]);
    assert.equal(l.name, 'burst');
    assert.deepEqual(l.replaces, ['other']);
    assert.deepEqual(l.report, { requestsPerUnit: 10, unit: 'SECOND' });
    // the rules run as one policy: a refusal by one charges the other nothing
    const lim = limiter({ rules: l.rules });
    for (let i = 0; i < 10; i++) assert.equal(lim.checkSync('x', { now: 0 }).allowed, true);
    const refused = lim.checkSync('x', { now: 0 });
    assert.equal(refused.allowed, false);
    assert.equal(refused.rules[1].remaining, 990, 'the hourly log was not charged by the refused request');
  });

  it('errors: with rate_limit, empty, unlimited inside, a name clash, a replaces of itself, slidingLog accountings', () => {
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n    rate_limits: [{ unit: second, requests_per_unit: 1 }]\n',
      'rate_limits', [{ unit: 'second', requests_per_unit: 1 }], /exclusive/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limits: []\n', 'rate_limits', [], /empty/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limits: [{ unlimited: true }]\n', 'unlimited', true, /no place in rate_limits/);
    const clash = oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limits: [{ unit: second, requests_per_unit: 1 }, { unit: second, requests_per_unit: 1, algorithm: gcra }]\n',
      'rate_limits', ['1/1s', '1/1s'], /rules\[1\]\.name "1\/1s" is used by another rule/);
    assert.equal(clash.path, 'domain: d > descriptors[0] (k)');
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limits: [{ unit: second, requests_per_unit: 1, name: a }, { unit: minute, requests_per_unit: 9, replaces: [{ name: a }] }]\n',
      'rate_limits', 'a', /cannot replace itself/);
    oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limits: [{ unit: second, requests_per_unit: 1, algorithm: sliding-log }, { unit: minute, requests_per_unit: 9, algorithm: sliding-log, accounting: strict }]\n',
      'rate_limits', ['1/1s', '9/1m'], /share one accounting/);
    const inner = oneIssue('domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n      - { unit: second, requests_per_unit: 1 }\n      - { unit: fortnight, requests_per_unit: 1 }\n',
      'unit', 'fortnight', /invalid rate limit unit/);
    assert.equal(inner.path, 'domain: d > descriptors[0] (k) > rate_limits[1]');
    assert.equal(inner.line, 6);
  });
});

describe('config: native policies', () => {
  it('rule strings and rule objects, algorithm, dry run, half-life', () => {
    const c = parseConfig([{ name: 'p.yaml', text: `
policies:
  api:
    rules: '1/s; 20/min; 800/day'
  smooth:
    rules: '10/s'
    algorithm: gcra
    dry_run: true
  recent:
    rules: '30/min'
    algorithm: earrrl
    half_life: 10s
  objects:
    dryRun: false
    algorithm: token-bucket
    rules:
      - { limit: 5, per: 1s, burst: 10 }
      - { algorithm: earrrl, limit: 100, per: 1m, halfLife: 20s, name: recent }
` }]);
    assert.deepEqual([...c.policies.keys()], ['api', 'smooth', 'recent', 'objects']);
    assert.deepEqual(c.domains, []);
    const api = c.policies.get('api')!;
    assert.deepEqual(api.rules.map((r) => [r.algorithm, r.limit, r.per]), [['slidingLog', 1, 1000], ['slidingLog', 20, 60_000], ['slidingLog', 800, 86_400_000]]);
    assert.equal(api.dryRun, false);
    assert.equal(api.file, 'p.yaml');
    assert.equal(c.policies.get('smooth')!.rules[0].algorithm, 'gcra');
    assert.equal(c.policies.get('smooth')!.dryRun, true);
    assert.equal(c.policies.get('recent')!.rules[0].halfLife, 10_000);
    const o = c.policies.get('objects')!;
    assert.deepEqual(o.rules.map((r) => [r.algorithm, r.name, r.burst, r.halfLife]), [['tokenBucket', '5/1s', 10, 0], ['earrrl', 'recent', 100, 20_000]]);
  });

  it('a file may hold a domain and policies together', () => {
    const c = cfg('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\npolicies:\n  p: { rules: 1/s }\n');
    assert.deepEqual(c.domains, ['d']);
    assert.deepEqual([...c.policies.keys()], ['p']);
  });

  it('errors: missing rules, bad strings, bad objects, unknown fields, a name defined twice across files', () => {
    oneIssue('policies:\n  p: { algorithm: gcra }\n', 'rules', undefined, /rules is required/);
    oneIssue("policies:\n  p: { rules: '10 per fortnight' }\n", 'rules', '10 per fortnight', /cannot parse|unknown time unit/);
    oneIssue("policies:\n  p: { rules: '1/s', dryrun: true }\n", 'dryrun', true, /did you mean `dryRun`/);
    oneIssue('policies:\n  p: { rules: [{ limit: 5, per: 1s, requests_per_unit: 5 }] }\n', 'requests_per_unit', 5, /did you mean `limit`/);
    oneIssue('policies:\n  p: { rules: [{ limit: 0, per: 1s }] }\n', 'limit', 0, /limit must be a finite number > 0, got 0/);
    oneIssue('policies:\n  p: { rules: [{ limit: 5 }] }\n', 'per', undefined, /per is required/);
    oneIssue("policies:\n  p: { rules: '30/min', algorithm: earrrl }\n", 'rules', '30/min', /halfLife is required/);
    oneIssue('policies:\n  p: { rules: 5 }\n', 'rules', 5, /rule string/);
    oneIssue('policies: [a, b]\n', 'policies', ['a', 'b'], /policies must be a map/);
    let across: readonly ConfigIssue[] = [];
    try {
      parseConfig([{ name: 'one.yaml', text: 'policies:\n  p: { rules: 1/s }\n' }, { name: 'two.yaml', text: '\npolicies:\n  p: { rules: 2/s }\n' }]);
    } catch (e) {
      across = (e as ConfigError).issues;
    }
    assert.equal(across.length, 1);
    assert.deepEqual([across[0].file, across[0].line, across[0].path], ['two.yaml', 3, 'policies > p']);
    assert.match(across[0].message, /already defined at one\.yaml:2/);
  });
});

describe('config: fingerprints', () => {
  it('equal for the same rules; shadow_mode and metric flags do not change it; a limit, unit or algorithm does', () => {
    const fp = (block: string) => limitOf(block).fingerprint;
    const base = fp('    rate_limit: { unit: second, requests_per_unit: 5 }\n');
    assert.equal(fp('    rate_limit: { unit: second, requests_per_unit: 5 }\n'), base);
    assert.equal(fp('    shadow_mode: true\n    detailed_metric: true\n    rate_limit: { unit: second, requests_per_unit: 5 }\n'), base);
    assert.equal(fp('    rate_limit: { per: 1s, requests_per_unit: 5 }\n'), base, 'unit: second is per: 1s');
    assert.notEqual(fp('    rate_limit: { unit: second, requests_per_unit: 6 }\n'), base);
    assert.notEqual(fp('    rate_limit: { unit: minute, requests_per_unit: 5 }\n'), base);
    assert.notEqual(fp('    rate_limit: { unit: second, requests_per_unit: 5, algorithm: gcra }\n'), base);
    assert.notEqual(fp('    rate_limit: { unit: second, requests_per_unit: 5, accounting: strict }\n'), base);
    assert.notEqual(fp('    rate_limit: { unlimited: true }\n'), fp('    rate_limit: { unit: second, requests_per_unit: 0 }\n'));
    const p = (text: string) => parseConfig([{ name: 'x.yaml', text }]).policies.get('p')!.fingerprint;
    assert.equal(p("policies:\n  p: { rules: '1/s; 5/min' }\n"), p("policies:\n  p: { rules: '1/s; 5/min', dry_run: true }\n"));
    assert.notEqual(p("policies:\n  p: { rules: '1/s; 5/min' }\n"), p("policies:\n  p: { rules: '1/s; 6/min' }\n"));
  });
});
