/**
 * Invalid configurations: each kind of mistake gives an issue naming the file, the line, the descriptor path, the
 * field and the value; a file with several mistakes reports every one of them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig, type ConfigIssue } from '../../src/server/config/index.js';
import { RatekeeperError } from '../../src/index.js';

/** issuesOf — the issues of loading these files (fails the test when the load succeeds). */
function issuesOf(...files: [name: string, text: string][]): readonly ConfigIssue[] {
  try {
    parseConfig(files.map(([name, text]) => ({ name, text })));
  } catch (e) {
    assert.ok(e instanceof ConfigError, `a ConfigError, got ${String(e)}`);
    assert.ok(e instanceof RatekeeperError);
    assert.equal(e.code, 'ERR_CONFIG');
    for (const i of e.issues) assert.ok(e.message.includes(i.message), 'the message lists every issue');
    return e.issues;
  }
  assert.fail('the configuration was accepted');
}

/** one — the single issue of one file named `bad.yaml`, checked against `expected` (message as a regex). */
function one(text: string, expected: Omit<Partial<ConfigIssue>, 'message'> & { message: RegExp }): ConfigIssue {
  const list = issuesOf(['bad.yaml', text]);
  assert.equal(list.length, 1, `one issue, got:\n${list.map((i) => i.message).join('\n')}`);
  const i = list[0];
  assert.equal(i.file, 'bad.yaml');
  for (const k of ['line', 'path', 'field', 'value'] as const) {
    if (k in expected) assert.deepEqual(i[k], expected[k], `${k} of: ${i.message}`);
  }
  assert.match(i.message, expected.message);
  return i;
}

describe('config: errors', () => {
  it('a rule name that cannot be a RateLimit-Policy field (not printable ASCII) is an error, not a crash of the service', () => {
    one(`domain: d
descriptors:
  - key: user
    rate_limit: { name: "per usu\u00e1rio", unit: hour, requests_per_unit: 1 }
`, { line: 4, path: 'domain: d > descriptors[0] (user) > rate_limit', field: 'name', value: 'per usu\u00e1rio', message: /printable ASCII/ });
    one(`domain: d
descriptors:
  - key: user
    rate_limit: { name: "a\\r\\nX-Evil: 1", unit: hour, requests_per_unit: 1 }
`, { line: 4, field: 'name', value: 'a\r\nX-Evil: 1', message: /printable ASCII/ });
    one(`policies:
  login:
    rules: [{ name: "x\\ny", limit: 1, per: 1h }]
`, { line: 3, field: 'name', value: 'x\ny', message: /printable ASCII/ });
  });

  it('an unknown field, with a did-you-mean', () => {
    one(`domain: d
descriptors:
  - key: key1
    value: value1
    ratelimit:
      unit: day
      requests_per_unit: 5
`, { line: 5, path: 'domain: d > descriptors[0] (key1=value1)', field: 'ratelimit', value: { unit: 'day', requests_per_unit: 5 }, message: /ratelimit is not a field of a descriptor \(did you mean `rate_limit`\?\)/ });
    one(`domain: d
descriptors:
  - key: key1
    rate_limit:
      unit: day
      requestsperunit: 5
      requests_per_unit: 5
`, { line: 6, path: 'domain: d > descriptors[0] (key1) > rate_limit', field: 'requestsperunit', value: 5, message: /did you mean `requests_per_unit`/ });
    one(`domian: d\ndescriptors: []\ndomain: d\n`, { line: 1, path: '', field: 'domian', value: 'd', message: /did you mean `domain`/ });
    one(`domain: d
descriptors:
  - key: k
    dry_run: true
    rate_limit: { unit: second, requests_per_unit: 1 }
`, { field: 'dry_run', message: /did you mean `shadow_mode`/ });
    one(`domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, limit: 1, requests_per_unit: 1 }
`, { field: 'limit', message: /did you mean `requests_per_unit`/ });
  });

  it('a duplicate key in a map', () => {
    one(`domain: d
descriptors:
  - key: k
    rate_limit:
      unit: second
      requests_per_unit: 1
      requests_per_unit: 2
`, { line: 7, path: 'domain: d > descriptors[0] (k) > rate_limit', field: 'requests_per_unit', value: 2, message: /given twice \(first at line 6\)/ });
    // in metadata (a map the walk does not read field by field): yaml's own report, with the line
    one(`domain: d
descriptors:
  - key: k
    metadata: { a: 1, a: 2 }
    rate_limit: { unit: second, requests_per_unit: 1 }
`, { line: 4, message: /duplicate key/ });
  });

  it('a descriptor defined twice under one parent (literal, value-less, wildcard), in one file or across merged files', () => {
    one(`domain: test-domain
descriptors:
  - key: key1
    value: value1

  - key: key1
    value: value1
`, { line: 6, path: 'domain: test-domain > descriptors[1] (key1=value1)', field: 'key', value: 'key1=value1', message: /duplicate descriptor composite key 'test-domain.key1_value1'.*bad.yaml:3/ });
    one(`domain: d
descriptors:
  - key: a
    descriptors:
      - key: b
      - key: b
`, { line: 6, path: 'domain: d > descriptors[0] (a) > descriptors[1] (b)', value: 'b', message: /'d.a.b'/ });
    one(`domain: d
descriptors:
  - key: a
    value: x*
  - key: a
    value: x*
`, { line: 5, value: 'a=x*', message: /duplicate/ });
    const merged = (() => {
      try {
        parseConfig([{ name: 'one.yaml', text: 'domain: d\ndescriptors:\n  - key: a\n' }, { name: 'two.yaml', text: 'domain: d\ndescriptors:\n  - key: a\n' }], { mergeDomains: true });
      } catch (e) {
        return (e as ConfigError).issues;
      }
      return [];
    })();
    assert.equal(merged.length, 1);
    assert.equal(merged[0].file, 'two.yaml');
    assert.match(merged[0].message, /already defined at one\.yaml:3/);
  });

  it('unlimited: true with a unit or requests_per_unit', () => {
    one(`domain: d
descriptors:
  - key: foo
    rate_limit:
      unlimited: true
      unit: day
`, { line: 6, path: 'domain: d > descriptors[0] (foo) > rate_limit', field: 'unit', value: 'day', message: /must not be given with unlimited: true/ });
    one(`domain: d
descriptors:
  - key: foo
    rate_limit:
      unlimited: true
      requests_per_unit: 25
`, { line: 6, field: 'requests_per_unit', value: 25, message: /unlimited/ });
  });

  it('replaces naming itself, or an empty name', () => {
    one(`domain: d
descriptors:
  - key: key1
    descriptors:
      - key: subkey1
        rate_limit:
          name: self
          replaces:
            - name: self
          unit: second
          requests_per_unit: 5
`, { line: 8, path: 'domain: d > descriptors[0] (key1) > descriptors[0] (subkey1) > rate_limit', field: 'replaces', value: 'self', message: /replaces names this rate_limit itself \("self"\)/ });
    one(`domain: d
descriptors:
  - key: key1
    rate_limit:
      name: self
      replaces:
        - name:
      unit: second
      requests_per_unit: 5
`, { line: 7, field: 'replaces[0].name', value: '', message: /empty/ });
    const typo = issuesOf(['bad.yaml', `domain: d
descriptors:
  - key: key1
    rate_limit:
      replaces:
        - nmae: other
      unit: second
      requests_per_unit: 5
`]);
    assert.deepEqual(typo.map((i) => [i.line, i.field]), [[6, 'nmae'], [6, 'replaces[0].name']]);
    assert.match(typo[0].message, /did you mean `name`/);
    assert.match(typo[1].message, /empty/);
  });

  it('a unit that is not one', () => {
    one(`domain: test-domain
descriptors:
  - key: key1
    value: value1
    rate_limit:
      unit: foo
      requests_per_unit: 5
`, { line: 6, path: 'domain: test-domain > descriptors[0] (key1=value1) > rate_limit', field: 'unit', value: 'foo', message: /invalid rate limit unit "foo"/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: unknown, requests_per_unit: 5 }\n`, { field: 'unit', value: 'unknown', message: /invalid rate limit unit/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { requests_per_unit: 5 }\n`, { line: 4, field: 'unit', value: undefined, message: /unit is required/ });
  });

  it('requests_per_unit missing, negative, fractional or over uint32', () => {
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second }\n`, { field: 'requests_per_unit', message: /requests_per_unit is required .*refuses every request/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1.5 }\n`, { field: 'requests_per_unit', value: 1.5, message: /whole number/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 4294967296 }\n`, { value: 4294967296, message: /4294967295/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: lots }\n`, { value: 'lots', message: /whole number/ });
  });

  it('a missing or empty domain; an empty file; a file that is not a map', () => {
    one(`descriptors:\n  - key: k\n`, { line: 1, field: 'domain', message: /config file cannot have empty domain/ });
    one(`domain: ''\ndescriptors: []\n`, { line: 1, field: 'domain', value: '', message: /empty domain/ });
    one(``, { line: 1, message: /the file is empty/ });
    one(`- a\n- b\n`, { line: 1, message: /must be a map with domain/ });
  });

  it('a domain in two files', () => {
    const list = issuesOf(['a.yaml', 'domain: test-domain\ndescriptors:\n  - key: k\n'], ['b.yaml', '# again\ndomain: test-domain\ndescriptors:\n']);
    assert.equal(list.length, 1);
    assert.deepEqual({ ...list[0], message: '' }, { file: 'b.yaml', line: 2, path: '', field: 'domain', value: 'test-domain', message: '' });
    assert.match(list[0].message, /duplicate domain 'test-domain' in config file: it is already defined in a\.yaml/);
  });

  it('a key that is not a string', () => {
    one(`0.25: test-domain
domain: d
descriptors: []
`, { line: 1, field: '0.25', value: 0.25, message: /key 0\.25 is not a string/ });
  });

  it('a list of something else than maps; a map where a list is expected and the reverse', () => {
    one(`domain: test-domain
descriptors:
  - a
`, { line: 3, path: 'domain: test-domain', field: 'descriptors[0]', value: 'a', message: /descriptors\[0\] must be a map with a key/ });
    one(`domain: d\ndescriptors:\n  key: k\n`, { line: 3, field: 'descriptors', message: /descriptors must be a list of descriptors.*got a map/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: [1, 2]\n`, { line: 4, field: 'rate_limit', value: [1, 2], message: /rate_limit must be a map/ });
    one(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: [second], requests_per_unit: 1 }\n`, { field: 'unit', message: /unit must be a string, got a list/ });
    one(`domain: d\ndescriptors:\n  - key: [k]\n`, { field: 'key', message: /key must be a string, got a list/ });
  });

  it('a descriptor without a key', () => {
    one(`domain: test-domain
descriptors:
  - value: value1
`, { line: 3, path: 'domain: test-domain > descriptors[0]', field: 'key', message: /key is required/ });
  });

  it('wildcards: share_threshold needs a * in the value; a * in a key is refused', () => {
    one(`domain: d
descriptors:
  - key: files
    value: files/
    share_threshold: true
    rate_limit: { unit: second, requests_per_unit: 1 }
`, { line: 5, path: 'domain: d > descriptors[0] (files=files/)', field: 'share_threshold', value: true, message: /share_threshold can only be used with a wildcard value/ });
    one(`domain: d
descriptors:
  - key: files
    share_threshold: true
    rate_limit: { unit: second, requests_per_unit: 1 }
`, { field: 'share_threshold', message: /wildcard/ });
    one(`domain: d
descriptors:
  - key: foo*
    rate_limit: { unit: second, requests_per_unit: 1 }
`, { line: 3, field: 'key', value: 'foo*', message: /wildcards apply to values only/ });
  });

  it('quota_mode: true is refused as unsupported (false is accepted)', () => {
    one(`domain: d
descriptors:
  - key: k
    quota_mode: true
    rate_limit: { unit: second, requests_per_unit: 1 }
`, { line: 4, field: 'quota_mode', value: true, message: /quota_mode is not supported/ });
    parseConfig([{ name: 'ok.yaml', text: 'domain: d\ndescriptors:\n  - key: k\n    quota_mode: false\n' }]);
  });

  it('a flag that is not a boolean', () => {
    one(`domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n`, { line: 4, field: 'shadow_mode', value: 'maybe', message: /shadow_mode must be true or false, got "maybe"/ });
    // YAML 1.1 booleans, as envoy reads them
    const c = parseConfig([{ name: 'ok.yaml', text: 'domain: d\ndescriptors:\n  - key: k\n    shadow_mode: yes\n    rate_limit: { unit: second, requests_per_unit: 1 }\n' }]);
    assert.equal(c.limits[0].shadowMode, true);
  });

  it('YAML that does not parse, and a second document', () => {
    one(`'''\n`, { line: 2, message: /not valid YAML/ });
    one(`domain: a\n---\ndomain: b\n`, { line: 2, message: /one YAML document/ });
  });

  it('a file with several mistakes reports all of them, in line order; every file is checked', () => {
    const list = issuesOf(['first.yaml', `domain: shop
descriptors:
  - key: route
    value: checkout
    rate_limit:
      unit: fortnight
      requests_per_unit: 10
  - key: route
    value: checkout
  - key: user
    rate_limit:
      unlimited: true
      unit: second
    detailed_metrics: true
  - key: tenant
    rate_limit:
      name: t
      replaces: [{ name: t }]
      unit: minute
      requests_per_unit: 5
`], ['second.yaml', `domain: shop
descriptors:
  - key: x
`], ['third.yaml', `policies:
  api: { rules: '10/fortnight' }
`]);
    assert.deepEqual(list.map((i) => [i.file, i.line, i.field]), [
      ['first.yaml', 6, 'unit'],
      ['first.yaml', 8, 'key'],
      ['first.yaml', 13, 'unit'],
      ['first.yaml', 14, 'detailed_metrics'],
      ['first.yaml', 18, 'replaces'],
      ['second.yaml', 1, 'domain'],
      ['third.yaml', 2, 'rules'],
    ]);
    assert.match(list[3].message, /did you mean `detailed_metric`/);
    assert.match(list[6].message, /fortnight/);
    assert.equal(list[6].path, 'policies > api');
  });
});
