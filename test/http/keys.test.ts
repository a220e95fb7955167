/** test/http/keys — the default client key: trusted proxies only, walking from the right, /64 grouping, mapped IPv4. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { clientKeyDeriver, forwardedFor, parseHop, MAX_FORWARDED_LENGTH } from '../../src/http/keys.js';

const headers = (h: Record<string, string>) => (name: string) => h[name];

describe('clientKeyDeriver', () => {
  it('without trusted proxies the key is the peer, whatever the headers say (property)', () => {
    const derive = clientKeyDeriver();
    const peer = fc.oneof(fc.ipV4(), fc.ipV6().filter((a) => !a.includes('.')));
    fc.assert(fc.property(peer, fc.string(), fc.string(), (p, xff, fwd) => {
      const alone = derive(p, headers({}));
      assert.equal(derive(p, headers({ 'x-forwarded-for': xff, forwarded: fwd, 'x-real-ip': xff })), alone);
    }), { numRuns: 300 });
  });

  it('groups IPv6 by the prefix (/64 default) and treats IPv4-mapped IPv6 as IPv4', () => {
    const none = headers({});
    assert.equal(clientKeyDeriver()('2001:db8:1:2:3:4:5:6', none), '2001:db8:1:2::/64');
    assert.equal(clientKeyDeriver()('2001:0db8:0001:0002:ffff::1', none), '2001:db8:1:2::/64');
    assert.equal(clientKeyDeriver({ ipv6Prefix: 48 })('2001:db8:1:2::1', none), '2001:db8:1::/48');
    assert.equal(clientKeyDeriver({ ipv6Prefix: 56 })('2001:db8:1:2ff::1', none), '2001:db8:1:200::/56');
    assert.equal(clientKeyDeriver({ ipv6Prefix: 128 })('2001:db8::1', none), '2001:db8::1');
    assert.equal(clientKeyDeriver()('::ffff:203.0.113.9', none), '203.0.113.9');
    assert.equal(clientKeyDeriver({ ipv4Prefix: 24 })('::ffff:203.0.113.9', none), '203.0.113.0/24');
    assert.equal(clientKeyDeriver()('::1', none), '::/64');
    assert.equal(clientKeyDeriver()(undefined, none), undefined);
  });

  it('any two addresses of one /64 share a key, and of different /64s do not (property)', () => {
    const derive = clientKeyDeriver();
    const group = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 4, maxLength: 4 });
    const host = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 4, maxLength: 4 });
    const text = (g: number[], h: number[]) => [...g, ...h].map((x) => x.toString(16)).join(':');
    fc.assert(fc.property(group, group, host, host, (g1, g2, h1, h2) => {
      fc.pre(!(g1[0] === 0 && g1[1] === 0 && g1[2] === 0 && g1[3] === 0) && !(g2[0] === 0 && g2[1] === 0 && g2[2] === 0 && g2[3] === 0));
      assert.equal(derive(text(g1, h1), headers({})), derive(text(g1, h2), headers({})));
      assert.equal(derive(text(g1, h1), headers({})) === derive(text(g2, h2), headers({})), g1.join() === g2.join());
    }), { numRuns: 300 });
  });

  it('walks X-Forwarded-For from the right, through trusted hops only', () => {
    const derive = clientKeyDeriver({ trustProxy: ['10.0.0.0/8'] });
    const from = (xff: string) => derive('10.0.0.1', headers({ 'x-forwarded-for': xff }));
    assert.equal(from('198.51.100.1, 10.0.0.5'), '198.51.100.1');
    assert.equal(from('203.0.113.66, 198.51.100.1'), '198.51.100.1', 'a hop the client wrote is beyond the first untrusted one');
    assert.equal(from('10.0.0.9, 10.0.0.5'), '10.0.0.9', 'all trusted: the farthest');
    assert.equal(from('not-an-ip, 10.0.0.5'), '10.0.0.5', 'junk: the last trusted hop stands for it');
    assert.equal(from('198.51.100.1:5555'), '198.51.100.1');
    assert.equal(from('[2001:db8::1]:443'), '2001:db8::/64');
    assert.equal(from(''), '10.0.0.1');
    assert.equal(derive('10.0.0.1', headers({ forwarded: 'for=198.51.100.1' })), '10.0.0.1', 'only the configured header is read');
    assert.equal(derive('192.0.2.1', headers({ 'x-forwarded-for': '198.51.100.1' })), '192.0.2.1', 'an untrusted peer');
  });

  it('reads Forwarded (RFC 7239) when told to', () => {
    const derive = clientKeyDeriver({ trustProxy: ['loopback'], proxyHeader: 'forwarded' });
    const from = (f: string) => derive('127.0.0.1', headers({ forwarded: f, 'x-forwarded-for': '192.0.2.99' }));
    assert.equal(from('for=192.0.2.60;proto=http;by=203.0.113.43'), '192.0.2.60');
    assert.equal(from('for=192.0.2.43, for="[2001:db8:cafe::17]:4711"'), '2001:db8:cafe::/64');
    assert.equal(from('For="198.51.100.17";proto=https'), '198.51.100.17');
    assert.equal(from('for=unknown'), '127.0.0.1');
    assert.equal(from('for=_hidden, for=127.0.0.5'), '127.0.0.5');
    assert.deepEqual(forwardedFor('for=a;by=b, for="x,y";proto=z'), ['a', '"x,y"']);
  });

  it('an unclosed or stray quote from the client cannot hide the element a trusted proxy appends', () => {
    const derive = clientKeyDeriver({ trustProxy: ['loopback'], proxyHeader: 'forwarded' });
    const from = (f: string) => derive('127.0.0.1', headers({ forwarded: f }));
    for (const smuggled of ['for="x', 'for=a"b', 'for="x\\"', 'for="x, for="y', 'for=";']) {
      assert.equal(from(`${smuggled}, for=203.0.113.9`), '203.0.113.9', smuggled);
    }
    assert.deepEqual(forwardedFor('for="x, for=203.0.113.9'), ['"x', '203.0.113.9']);
  });

  it('Forwarded is parsed in linear work: 64 KB of stray quotes and escapes reads each character a bounded number of times', () => {
    const hostile = ['for="\\', 'for="', 'x="a', ' = "', 'for=""', '\\"', ';for="a\\"b'];
    const native = String.prototype.charCodeAt;
    for (const piece of hostile) {
      const value = piece.repeat(Math.ceil(65_536 / piece.length)) + ', for=203.0.113.9';
      let reads = 0;
      String.prototype.charCodeAt = function (this: string, i: number) { reads++; return native.call(this, i); };
      let hops: string[];
      try {
        hops = forwardedFor(value);
      } finally {
        String.prototype.charCodeAt = native;
      }
      assert.ok(reads <= 3 * value.length, `${JSON.stringify(piece)}: ${reads} character reads for ${value.length} characters`);
      assert.equal(hops[hops.length - 1], '203.0.113.9', JSON.stringify(piece));
    }
  });

  it('a Forwarded header over MAX_FORWARDED_LENGTH is junk: the last trusted hop stands for it', () => {
    const derive = clientKeyDeriver({ trustProxy: ['loopback'], proxyHeader: 'forwarded' });
    const tail = ', for=203.0.113.9';
    const fits = 'for=192.0.2.1, '.repeat(Math.floor((MAX_FORWARDED_LENGTH - tail.length) / 15)) + tail.slice(2);
    assert.ok(fits.length <= MAX_FORWARDED_LENGTH);
    assert.equal(derive('127.0.0.1', headers({ forwarded: fits })), '203.0.113.9');
    const big = 'for="'.repeat(13_108) + tail; // 64 KB
    assert.equal(derive('127.0.0.1', headers({ forwarded: big })), '127.0.0.1');
  });

  it('the linear Forwarded parser gives what the element-by-element reading of RFC 7239 gives (property)', () => {
    // reference — the straightforward quadratic reading: a part grows character by character; a quote opens a
    // quoted-string only right after `=` and only if it closes.
    const reference = (value: string): string[] => {
      const out: string[] = [];
      let i = 0;
      while (i < value.length) {
        let j = i;
        let part = '';
        for (; j < value.length; j++) {
          const c = value[j];
          if (c === '"' && part.trimEnd().endsWith('=')) {
            let close = -1;
            for (let k = j + 1; k < value.length; k++) {
              if (value[k] === '\\') k++;
              else if (value[k] === '"') { close = k; break; }
            }
            if (close !== -1) { part += value.slice(j, close + 1); j = close; continue; }
          }
          if (c === ',' || c === ';') break;
          part += c;
        }
        const eq = part.indexOf('=');
        if (eq !== -1 && part.slice(0, eq).trim().toLowerCase() === 'for') out.push(part.slice(eq + 1).trim());
        else if (value[j] === ',' && eq === -1 && part.trim() !== '') out.push('');
        i = j + 1;
      }
      return out;
    };
    const text = fc.array(fc.constantFrom('for', 'FOR', '=', '"', '\\', ',', ';', ' ', '\t', 'a', '1.2.3.4', '[::1]:80', 'by'), { maxLength: 40 }).map((a) => a.join(''));
    fc.assert(fc.property(text, (v) => assert.deepEqual(forwardedFor(v), reference(v), JSON.stringify(v))), { numRuns: 3000 });
  });

  it('names, single addresses and functions as trustProxy', () => {
    const none = headers({ 'x-forwarded-for': '198.51.100.1' });
    assert.equal(clientKeyDeriver({ trustProxy: ['::ffff:10.0.0.0/104'] })('10.1.2.3', none), '198.51.100.1', 'an IPv4-mapped range trusts its IPv4 peers');
    assert.equal(clientKeyDeriver({ trustProxy: ['::ffff:10.0.0.0/104'] })('::ffff:10.1.2.3', none), '198.51.100.1');
    assert.equal(clientKeyDeriver({ trustProxy: ['::ffff:10.0.0.0/104'] })('11.1.2.3', none), '11.1.2.3');
    assert.equal(clientKeyDeriver({ trustProxy: ['private'] })('192.168.1.1', none), '198.51.100.1');
    assert.equal(clientKeyDeriver({ trustProxy: ['private'] })('fd00::1', none), '198.51.100.1');
    assert.equal(clientKeyDeriver({ trustProxy: ['loopback'] })('::ffff:127.0.0.1', none), '198.51.100.1');
    assert.equal(clientKeyDeriver({ trustProxy: ['203.0.113.7'] })('203.0.113.7', none), '198.51.100.1');
    assert.equal(clientKeyDeriver({ trustProxy: ['203.0.113.7'] })('203.0.113.8', none), '203.0.113.8');
    assert.equal(clientKeyDeriver({ trustProxy: (a) => a === '203.0.113.8' })('203.0.113.8', none), '198.51.100.1');
  });

  it('parses hops strictly', () => {
    assert.equal(parseHop('1.2.3')?.toString(), undefined);
    assert.equal(parseHop('010.1.1.1')?.toString(), undefined);
    assert.equal(parseHop(' 1.2.3.4 ')?.toString(), '1.2.3.4');
    assert.equal(parseHop('1.2.3.4:x'), undefined);
    assert.equal(parseHop('[::1]:x'), undefined);
  });

  it('bad options throw at construction, naming the option', () => {
    assert.throws(() => clientKeyDeriver({ ipv6Prefix: 0 }), /ipv6Prefix must be an integer from 1 to 128, got 0/);
    assert.throws(() => clientKeyDeriver({ ipv4Prefix: 33 }), /ipv4Prefix must be an integer from 1 to 32, got 33/);
    assert.throws(() => clientKeyDeriver({ trustProxy: ['nonsense'] }), /trustProxy entry "nonsense"/);
    assert.throws(() => clientKeyDeriver({ proxyHeader: 'x-real-ip' as 'forwarded' }), /proxyHeader must be/);
  });
});
