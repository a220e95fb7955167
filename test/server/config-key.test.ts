/**
 * descriptorKey is injective: a decoder recovers every (domain, entries) from its key, over random strings full of
 * the separators (`:`, `=`, `&`, `%`, `*`, `_`, `.`); and a share_threshold key (raw `*`) is never a literal key.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { descriptorKey, parseConfig } from '../../src/server/config/index.js';

/** decode — the inverse of descriptorKey (and of a shared key, whose raw `*` stay in the value). */
function decode(key: string): { domain: string; entries: { key: string; value: string }[] } {
  const un = (s: string) => s.replace(/%([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  const colon = key.indexOf(':');
  assert.ok(colon >= 0, `no domain separator in ${key}`);
  const domain = un(key.slice(0, colon));
  const rest = key.slice(colon + 1);
  const entries = rest === '' ? [] : rest.split('&').map((part) => {
    const eq = part.indexOf('=');
    assert.ok(eq >= 0, `no = in ${part}`);
    return { key: un(part.slice(0, eq)), value: un(part.slice(eq + 1)) };
  });
  return { domain, entries };
}

const tricky = fc.string({ unit: fc.constantFrom('a', 'b', '_', '=', ':', '&', '%', '*', '.', '2', 'A', 'é', '🙂', ' '), maxLength: 8 });
const descriptor = fc.tuple(tricky, fc.array(fc.tuple(tricky, tricky), { maxLength: 4 }))
  .map(([domain, kv]) => ({ domain, entries: kv.map(([key, value]) => ({ key, value })) }));

describe('config: the descriptor key', () => {
  it('is readable for ordinary descriptors', () => {
    assert.equal(descriptorKey('mongo_cps', [{ key: 'database', value: 'users' }]), 'mongo_cps:database=users');
    assert.equal(descriptorKey('edge', [{ key: 'remote_address', value: '2001:db8::1' }, { key: 'path', value: '/a=b' }]), 'edge:remote_address=2001:db8::1&path=/a=b');
    assert.equal(descriptorKey('a:b', [{ key: 'k=&', value: '50%*&' }]), 'a%3Ab:k%3D%26=50%25%2A%26');
    assert.equal(descriptorKey('d', []), 'd:');
    assert.equal(descriptorKey('d', [{ key: '', value: '' }]), 'd:=');
  });

  it('is injective: the decoder gives back the domain and entries (fast-check)', () => {
    fc.assert(fc.property(descriptor, ({ domain, entries }) => {
      assert.deepEqual(decode(descriptorKey(domain, entries)), { domain, entries });
    }), { numRuns: 3000 });
  });

  it('two different descriptors never share a key (fast-check, pairs)', () => {
    fc.assert(fc.property(descriptor, descriptor, (a, b) => {
      const same = a.domain === b.domain && JSON.stringify(a.entries) === JSON.stringify(b.entries);
      assert.equal(descriptorKey(a.domain, a.entries) === descriptorKey(b.domain, b.entries), same);
    }), { numRuns: 3000 });
  });

  it('a share_threshold key is never the key of literal values, whatever they are (fast-check)', () => {
    const c = parseConfig([{ name: 's.yaml', text: `domain: 'd:*'\ndescriptors:\n  - key: 'k&='\n    value: 'a%*&*'\n    share_threshold: true\n    rate_limit: { unit: second, requests_per_unit: 1 }\n` }]);
    const shared = c.match('d:*', [{ key: 'k&=', value: 'a%X&Y' }])!.key;
    assert.deepEqual(decode(shared), { domain: 'd:*', entries: [{ key: 'k&=', value: 'a%*&*' }] });
    fc.assert(fc.property(tricky, (value) => {
      const m = c.match('d:*', [{ key: 'k&=', value }]);
      if (m !== undefined) assert.equal(m.key, shared, 'every value the wildcard matches shares the key');
      assert.notEqual(descriptorKey('d:*', [{ key: 'k&=', value }]), shared);
    }), { numRuns: 3000 });
  });
});
