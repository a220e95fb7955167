/**
 * Matching as envoyproxy/ratelimit's GetLimit does it: its README examples and its config tests' cases as tables of
 * (config, descriptor) → matched limit (requests per unit, unit, path) or no limit, plus store keys and metric keys.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig, type ServiceConfig } from '../../src/server/config/index.js';

/** cfg — a configuration from YAML text (one file). */
export function cfg(text: string, name = 'test.yaml'): ServiceConfig {
  return parseConfig([{ name, text }]);
}

/** entries — `'k=v'` strings as descriptor entries (the first `=` splits). */
export function entries(...kv: string[]): { key: string; value: string }[] {
  return kv.map((s) => {
    const i = s.indexOf('=');
    return { key: s.slice(0, i), value: s.slice(i + 1) };
  });
}

/** Row — a descriptor, and what it should match: `'5/SECOND @ path'`, `'unlimited @ path'`, `'deny @ path'` or null. */
type Row = [descriptor: string[], expected: string | null];

/** summary — a match as a row's expected text. */
function summary(c: ServiceConfig, domain: string, d: string[]): string | null {
  const m = c.match(domain, entries(...d));
  if (m === undefined) return null;
  const l = m.limit;
  const what = l.unlimited ? 'unlimited' : l.denyAll ? 'deny' : `${l.report!.requestsPerUnit}/${l.report!.unit}`;
  return `${what} @ ${l.path}`;
}

function table(c: ServiceConfig, domain: string, rows: Row[]): void {
  for (const [d, expected] of rows) assert.equal(summary(c, domain, d), expected, `${domain} [${d.join(', ')}]`);
}

describe('config: matching (envoyproxy/ratelimit README examples)', () => {
  it('example 1: key/value pairs at the top level', () => {
    const c = cfg(`
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`);
    table(c, 'mongo_cps', [
      [['database=users'], '500/SECOND @ database_users'],
      [['database=default'], '500/SECOND @ database_default'],
      [['database=other'], null],
      [['Database=users'], null], // keys are case-sensitive
      [['database=Users'], null], // and so are values
      [['database=users', 'x=y'], null], // longer than the config path
      [[], null],
    ]);
    assert.equal(c.match('other_domain', entries('database=users')), undefined);
    assert.equal(c.hasDomain('mongo_cps'), true);
    assert.equal(c.hasDomain('other_domain'), false);
    assert.equal(c.match('mongo_cps', entries('database=users'))!.limit.id, 'mongo_cps:database=users');
  });

  it('example 2: nested descriptors and value-less keys; several descriptors of one request match separately', () => {
    const c = cfg(`
domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`);
    table(c, 'messaging', [
      [['message_type=marketing', 'to_number=2061111111'], '5/DAY @ message_type_marketing.to_number'],
      [['message_type=marketing', 'to_number=2062222222'], '5/DAY @ message_type_marketing.to_number'],
      [['to_number=2061111111'], '100/DAY @ to_number'],
      [['message_type=marketing'], null], // a placeholder: no limit of its own, and shorter than the path
      [['message_type=transactional', 'to_number=2061111111'], null],
      [['to_number=2061111111', 'message_type=marketing'], null], // order matters
    ]);
    const a = c.match('messaging', entries('message_type=marketing', 'to_number=2061111111'))!;
    const b = c.match('messaging', entries('message_type=marketing', 'to_number=2062222222'))!;
    assert.equal(a.limit, b.limit, 'one limit');
    assert.notEqual(a.key, b.key, 'each number its own counter');
    assert.equal(a.key, 'messaging:message_type=marketing&to_number=2061111111');
    assert.equal(a.limit.id, 'messaging:message_type=marketing&to_number');
  });

  it('example 3: key/value is tried before the value-less key; requests_per_unit 0 refuses every request', () => {
    const c = cfg(`
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`);
    table(c, 'edge_proxy_per_ip', [
      [['remote_address=50.0.0.1'], '10/SECOND @ remote_address'],
      [['remote_address=50.0.0.5'], 'deny @ remote_address_50.0.0.5'],
      [['remote_address='], '10/SECOND @ remote_address'],
    ]);
    const deny = c.match('edge_proxy_per_ip', entries('remote_address=50.0.0.5'))!.limit;
    assert.deepEqual(deny.rules, []);
    assert.deepEqual(deny.report, { requestsPerUnit: 0, unit: 'SECOND' });
  });

  it('example 4: a request matches only a config path of its own length', () => {
    const flat = cfg(`
domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
`);
    const nested = cfg(`
domain: example4
descriptors:
  - key: key
    value: value
    descriptors:
      - key: subkey
        rate_limit:
          requests_per_unit: 300
          unit: second
`);
    table(flat, 'example4', [
      [['key=value', 'subkey=subvalue'], null],
      [['key=value'], '300/SECOND @ key_value'],
    ]);
    table(nested, 'example4', [
      [['key=value', 'subkey=subvalue'], '300/SECOND @ key_value.subkey'],
      [['key=value'], null],
    ]);
  });

  it('example 5: unlimited descriptors', () => {
    const c = cfg(`
domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true
  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`);
    table(c, 'internal', [
      [['ldap=anything'], 'unlimited @ ldap'],
      [['azure=anything'], '100/MINUTE @ azure'],
      [['aws=anything'], null],
    ]);
    const l = c.match('internal', entries('ldap=x'))!.limit;
    assert.deepEqual(l.rules, []);
    assert.equal(l.report, undefined);
  });

  it('example 6: shadow_mode is per descriptor', () => {
    const c = cfg(`
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`);
    const a = c.match('example6', entries('service=auth-service', 'user=user-a'))!;
    const b = c.match('example6', entries('service=auth-service', 'user=user-b'))!;
    assert.equal(a.limit.shadowMode, true);
    assert.equal(a.limit.report!.requestsPerUnit, 10);
    assert.equal(b.limit.shadowMode, false);
    assert.equal(b.limit.report!.requestsPerUnit, 20);
    assert.equal(c.match('example6', entries('service=auth-service', 'user=user-c')), undefined);
  });

  it('example 7: replaces and name', () => {
    const c = cfg(`
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`);
    const one = c.match('example7', entries('key_1=value_1', 'user=bkthomps'))!.limit;
    const two = c.match('example7', entries('key_2=value_2', 'user=bkthomps'))!.limit;
    assert.equal(one.name, 'specific_limit');
    assert.deepEqual(one.replaces, []);
    assert.equal(one.rules[0].name, 'specific_limit', 'the rule carries the rate_limit name');
    assert.equal(two.name, undefined);
    assert.deepEqual(two.replaces, ['specific_limit']);
    assert.equal(two.report!.requestsPerUnit, 10);
  });

  it('example 8: detailed_metric puts the request value in the metric key', () => {
    const c = cfg(`
domain: example8
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 20
`);
    const metric = (v: string) => c.match('example8', entries(`key1=${v}`))!.metricKey;
    assert.equal(metric('unspecified_value'), 'key1_unspecified_value');
    assert.equal(metric('unspecified_value2'), 'key1_unspecified_value2');
    assert.equal(metric('value1'), 'key1_value1');
    assert.equal(metric(''), 'key1_', 'envoy writes key_value even for an empty value');
    assert.equal(c.match('example8', entries('key1=value1'))!.limit.report!.requestsPerUnit, 20);
  });

  it('example 9: wildcards at the end, in the middle, several', () => {
    const c = cfg(`
domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: path
    value: /api/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 21
  - key: route
    value: /api/*/resource/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 22
  - key: overlap
    value: ab*ba
    rate_limit:
      unit: minute
      requests_per_unit: 23
  - key: multi
    value: foo*bar*baz
    rate_limit:
      unit: minute
      requests_per_unit: 24
  - key: all
    value: '*'
    rate_limit:
      unit: minute
      requests_per_unit: 25
`);
    table(c, 'example9', [
      [['key1=value1'], '20/MINUTE @ key1_value*'],
      [['key1=valueXYZ'], '20/MINUTE @ key1_value*'],
      [['key1=value'], '20/MINUTE @ key1_value*'], // * matches nothing too
      [['key1=valu'], null],
      [['key1=xvalue1'], null],
      [['path=/api/123/action'], '21/MINUTE @ path_/api/*/action'],
      [['path=/api/user-id/action'], '21/MINUTE @ path_/api/*/action'],
      [['path=/api//action'], '21/MINUTE @ path_/api/*/action'],
      [['path=/api/123/other'], null],
      [['path=/api/action'], null],
      [['route=/api/v1/resource/123/action'], '22/MINUTE @ route_/api/*/resource/*/action'],
      [['route=/api/v2/resource/456/action'], '22/MINUTE @ route_/api/*/resource/*/action'],
      [['route=/api/v1/resource/action'], null],
      [['route=/api/v1/other/123/action'], null],
      [['overlap=aba'], null], // prefix and suffix may not share characters
      [['overlap=abba'], '23/MINUTE @ overlap_ab*ba'],
      [['overlap=ab-ba'], '23/MINUTE @ overlap_ab*ba'],
      [['multi=foo123bar456baz'], '24/MINUTE @ multi_foo*bar*baz'],
      [['multi=foobarbaz'], '24/MINUTE @ multi_foo*bar*baz'],
      [['multi=foo123baz'], null],
      [['multi=bar456baz'], null],
      [['multi=foobazbar'], null], // in order
      [['all='], '25/MINUTE @ all_*'],
      [['all=anything'], '25/MINUTE @ all_*'],
    ]);
    const a = c.match('example9', entries('key1=value1'))!;
    const b = c.match('example9', entries('key1=value2'))!;
    assert.notEqual(a.key, b.key, 'without share_threshold each value has its own counter');
    assert.equal(a.metricKey, 'key1_value*', 'the metric is the pattern');
  });

  it('matching order: literal value, then wildcards in config order, then the value-less key; no backtracking', () => {
    const c = cfg(`
domain: order
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: k
    value: ab*
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: k
    value: a*
    rate_limit: { unit: second, requests_per_unit: 3 }
  - key: k
    value: abc
    rate_limit: { unit: second, requests_per_unit: 4 }
  - key: k
    value: placeholder
    descriptors:
      - key: sub
        rate_limit: { unit: second, requests_per_unit: 5 }
`);
    table(c, 'order', [
      [['k=abc'], '4/SECOND @ k_abc'],
      [['k=abd'], '2/SECOND @ k_ab*'],
      [['k=axe'], '3/SECOND @ k_a*'],
      [['k=zzz'], '1/SECOND @ k'],
      // the literal node matches and has no limit of its own: the value-less key is not tried instead
      [['k=placeholder'], null],
      [['k=placeholder', 'sub=1'], '5/SECOND @ k_placeholder.sub'],
    ]);
  });

  it('keys with "_" do not run into values (envoy joins key_value; ratekeeper matches key and value apart)', () => {
    const c = cfg(`
domain: d
descriptors:
  - key: a_b
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: a
    value: b_c
    rate_limit: { unit: second, requests_per_unit: 2 }
`);
    table(c, 'd', [
      [['a_b=c'], '1/SECOND @ a_b'],
      [['a=b_c'], '2/SECOND @ a_b_c'],
      [['a=b'], null], // envoy would find its "a_b" here
    ]);
    assert.notEqual(c.match('d', entries('a_b=c'))!.key, c.match('d', entries('a=b_c'))!.key);
  });

  it('example 10: value_to_metric puts request values in the metric key where asked', () => {
    const c = cfg(`
domain: example10
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit:
              unit: minute
              requests_per_unit: 60
  - key: k1
    descriptors:
      - key: k2
        value_to_metric: true
        descriptors:
          - key: k3
            rate_limit: { unit: second, requests_per_unit: 1 }
  - key: plain
    descriptors:
      - key: k2
        rate_limit: { unit: second, requests_per_unit: 1 }
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit:
              unit: minute
              requests_per_unit: 100
  - key: detailed
    value_to_metric: true
    descriptors:
      - key: leaf
        detailed_metric: true
        rate_limit: { unit: second, requests_per_unit: 1 }
`);
    const metric = (...d: string[]) => c.match('example10', entries(...d))!.metricKey;
    assert.equal(metric('route=api', 'http_method=GET', 'subject_id=123'), 'route_api.http_method_GET.subject_id');
    assert.equal(metric('route=web', 'http_method=POST', 'subject_id=456'), 'route_web.http_method_POST.subject_id');
    assert.equal(metric('k1=X', 'k2=Y', 'k3=Z'), 'k1.k2_Y.k3');
    assert.equal(metric('plain=X', 'k2=Y'), 'plain.k2');
    assert.equal(metric('user=alice', 'action=readfile', 'resource=documents'), 'user_alice.action_readfile.resource');
    assert.equal(metric('route=', 'http_method=GET', 'subject_id=1'), 'route.http_method_GET.subject_id', 'an empty value adds nothing');
    // detailed_metric wins over value_to_metric
    assert.equal(metric('detailed=a', 'leaf=b'), 'detailed_a.leaf_b');
    assert.equal(c.match('example10', entries('route=api', 'http_method=GET', 'subject_id=123'))!.limit.path, 'route.http_method.subject_id');
  });

  it('detailed_metric on nested value-less keys (envoy TestDetailedMetric)', () => {
    const c = cfg(`
domain: nested
descriptors:
  - key: key-1
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 100 }
    descriptors:
      - key: key-2
        detailed_metric: true
        rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: key-3
    rate_limit: { unit: minute, requests_per_unit: 100 }
    descriptors:
      - key: key-4
        rate_limit: { unit: minute, requests_per_unit: 5 }
`);
    const metric = (...d: string[]) => c.match('nested', entries(...d))!.metricKey;
    assert.equal(metric('key-1=value-1'), 'key-1_value-1');
    assert.equal(metric('key-1=value-1', 'key-2=value-2'), 'key-1_value-1.key-2_value-2');
    assert.equal(metric('key-3=value-1'), 'key-3');
    assert.equal(metric('key-3=value-1', 'key-4=value-2'), 'key-3.key-4');
  });

  it('example 11: share_threshold — every value a wildcard matches shares one counter', () => {
    const c = cfg(`
domain: example11
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: files_no_share
    value: files_no_share/*
    share_threshold: false
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: route
    value: api/*
    share_threshold: true
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit:
          unit: minute
          requests_per_unit: 60
  - key: service
    value: svc/*
    share_threshold: true
    descriptors:
      - key: endpoint
        detailed_metric: true
        rate_limit: { unit: minute, requests_per_unit: 80 }
  - key: top
    value: top/*
    share_threshold: true
    descriptors:
      - key: top
        value: nested/*
        share_threshold: true
        rate_limit: { unit: minute, requests_per_unit: 300 }
  - key: path
    value: path/*
    share_threshold: true
    descriptors:
      - key: file
        value: file/*
        descriptors:
          - key: type
            rate_limit: { unit: minute, requests_per_unit: 120 }
  - key: file
    value: test1
    rate_limit: { unit: minute, requests_per_unit: 50 }
  - key: file
    value: test*
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: midpath
    value: /api*v1
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 100 }
`);
    const m = (...d: string[]) => c.match('example11', entries(...d))!;
    const key = (...d: string[]) => m(...d).key;
    // shared
    assert.equal(key('files=files/a.pdf'), 'example11:files=files/*');
    assert.equal(key('files=files/b.csv'), key('files=files/a.pdf'));
    assert.equal(key('files=files/*'), key('files=files/a.pdf'), 'a literal "files/*" is one more value the wildcard matches');
    assert.equal(m('files=files/a.pdf').metricKey, 'files_files/*');
    // isolated
    assert.notEqual(key('files_no_share=files_no_share/a.pdf'), key('files_no_share=files_no_share/b.csv'));
    assert.equal(key('files_no_share=files_no_share/*'), 'example11:files_no_share=files_no_share/%2A',
      'a literal * in a value never reads as a shared wildcard');
    // nested: the ancestor's pattern goes into the key and the metric
    assert.equal(key('route=api/v1', 'method=GET'), 'example11:route=api/*&method=GET');
    assert.equal(key('route=api/v2', 'method=GET'), key('route=api/v1', 'method=GET'));
    assert.notEqual(key('route=api/v1', 'method=POST'), key('route=api/v1', 'method=GET'));
    assert.equal(m('route=api/v1', 'method=GET').metricKey, 'route_api/*.method', 'share_threshold wins over value_to_metric');
    assert.equal(m('service=svc/a', 'endpoint=get').metricKey, 'service_svc/*.endpoint_get', 'and over detailed_metric');
    assert.equal(m('top=top/x', 'top=nested/y').key, 'example11:top=top/*&top=nested/*');
    assert.equal(m('top=top/x', 'top=nested/y').metricKey, 'top_top/*.top_nested/*');
    assert.equal(m('path=path/a', 'file=file/b', 'type=pdf').metricKey, 'path_path/*.file_file/*.type');
    assert.equal(m('path=path/a', 'file=file/b', 'type=pdf').key, 'example11:path=path/*&file=file/b&type=pdf');
    // a literal value is matched before the shared wildcard, with a counter of its own
    assert.equal(m('file=test1').limit.report!.requestsPerUnit, 50);
    assert.equal(key('file=test1'), 'example11:file=test1');
    assert.equal(key('file=test2'), 'example11:file=test*');
    assert.equal(key('midpath=/api/x/v1'), 'example11:midpath=/api*v1');
    assert.equal(m('midpath=/api/x/v1').metricKey, 'midpath_/api*v1');
  });

  it('a request override: its own fixed window of its unit, in a known domain, whatever the config says', () => {
    const c = cfg(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 5 }
`);
    const o = c.override('d', entries('k=v', 'sub=x'), { requestsPerUnit: 42, unit: 'HOUR' })!;
    assert.equal(o.limit.rules[0].algorithm, 'fixedWindow');
    assert.equal(o.limit.rules[0].limit, 42);
    assert.equal(o.limit.rules[0].per, 3_600_000);
    assert.equal(o.limit.rules[0].accounting, 'leaky');
    assert.deepEqual(o.limit.report, { requestsPerUnit: 42, unit: 'HOUR' });
    assert.equal(o.limit.shadowMode, false);
    assert.equal(o.key, 'd:k=v&sub=x');
    assert.equal(o.metricKey, 'override', 'nothing of the request: its keys and values come from clients (issue 15)');
    assert.equal(c.override('d', entries('k=w'), { requestsPerUnit: 42, unit: 3 })!.limit, o.limit, 'one LimitSpec per override');
    assert.equal(c.override('d', entries('k=w'), { requestsPerUnit: 0, unit: 'SECOND' })!.limit.denyAll, true);
    assert.equal(c.override('nope', entries('k=v'), { requestsPerUnit: 1, unit: 'SECOND' }), undefined);
    assert.throws(() => c.override('d', entries('k=v'), { requestsPerUnit: 1, unit: 'UNKNOWN' }), /limit\.unit .*got "UNKNOWN"/);
    assert.throws(() => c.override('d', entries('k=v'), { requestsPerUnit: 1, unit: 0 }), /limit\.unit .*got 0/);
    assert.throws(() => c.override('d', entries('k=v'), { requestsPerUnit: -1, unit: 1 }), /requests_per_unit .*got -1/);
  });

  it('every unit, in any case, is a fixed window of its length with leaky accounting (week 7 d, month 30 d, year 365 d)', () => {
    const units: [string, number, string][] = [
      ['second', 1000, 'SECOND'], ['MINUTE', 60_000, 'MINUTE'], ['Hour', 3_600_000, 'HOUR'], ['day', 86_400_000, 'DAY'],
      ['week', 7 * 86_400_000, 'WEEK'], ['month', 30 * 86_400_000, 'MONTH'], ['YeAr', 365 * 86_400_000, 'YEAR'],
    ];
    for (const [u, ms, name] of units) {
      const c = cfg(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: ${u}, requests_per_unit: 7 }\n`);
      const l = c.match('d', entries('k=v'))!.limit;
      assert.deepEqual({ ...l.rules[0] }, { algorithm: 'fixedWindow', name: `7/${ms % 86_400_000 === 0 ? `${ms / 86_400_000}d` : ms === 3_600_000 ? '1h' : ms === 60_000 ? '1m' : '1s'}`, limit: 7, per: ms, burst: 7, halfLife: 0, accounting: 'leaky' });
      assert.deepEqual(l.report, { requestsPerUnit: 7, unit: name });
    }
  });

  it('value: numbers and booleans are read as written, as envoy reads them into strings', () => {
    const c = cfg(`
domain: d
descriptors:
  - key: status
    value: 500
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: ratio
    value: 0.50
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: 404
    rate_limit: { unit: second, requests_per_unit: 3 }
`);
    table(c, 'd', [
      [['status=500'], '1/SECOND @ status_500'],
      [['ratio=0.50'], '2/SECOND @ ratio_0.50'],
      [['ratio=0.5'], null],
      [['404=x'], '3/SECOND @ 404'],
    ]);
  });

  it('YAML anchors, aliases and merge keys work as in envoy (yaml.v2)', () => {
    const c = cfg(`
domain: d
descriptors:
  - key: a
    rate_limit: &per_second { unit: second, requests_per_unit: 5 }
  - key: b
    rate_limit: *per_second
  - key: c
    rate_limit:
      <<: *per_second
      requests_per_unit: 7
`);
    table(c, 'd', [
      [['a=x'], '5/SECOND @ a'],
      [['b=x'], '5/SECOND @ b'],
      [['c=x'], '7/SECOND @ c'],
    ]);
  });
});
