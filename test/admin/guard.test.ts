/**
 * test/admin/guard — loopback is decided by the address, not by a prefix of the text; serveAdmin off loopback without
 * a token refuses to start (a name that starts with `127.` included); adminHandler's allowedHosts: the default follows
 * the token (any Host with one, the listener's own address without), a configured name passes, a bad option throws.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminHandler, serveAdmin } from '../../src/admin/index.js';
import { isLoopback } from '../../src/admin/guard.js';
import { limiter, rules } from '../../src/index.js';
import { serve } from './support.js';

const TOKEN = 'guard-test-token-0123456789';

describe('the admin guard', () => {
  it('isLoopback checks the address', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST', '0:0:0:0:0:0:0:1']) assert.equal(isLoopback(a), true, a);
    for (const a of ['127.0.0.1.evil.example', '127.evil.example', '127.0.0.1:80', '1270.0.0.1', '10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', '::', '', 'localhost.evil.example', undefined]) {
      assert.equal(isLoopback(a), false, String(a));
    }
  });

  it('serveAdmin on a name that merely starts with 127. needs a token', async () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })] });
    const saved = process.env.RATEKEEPER_ADMIN_TOKEN;
    delete process.env.RATEKEEPER_ADMIN_TOKEN;
    try {
      await assert.rejects(serveAdmin({ limiters: { lim }, host: '127.0.0.1.nip.io', port: 0 }), /not loopback: give it a token/);
    } finally {
      if (saved !== undefined) process.env.RATEKEEPER_ADMIN_TOKEN = saved;
    }
  });

  it('adminHandler: with a token any Host (the app knows its names), without one only the own address or allowedHosts', async () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })] });
    const withToken = await serve({ limiters: { lim }, token: TOKEN });
    const open = await serve({ limiters: { lim } });
    const named = await serve({ limiters: { lim }, allowedHosts: ['ops.example.com'] });
    try {
      // fetch cannot set Host; node's http client can
      const http = await import('node:http');
      const status = (base: string, host: string, token?: string): Promise<number> => new Promise((resolve, reject) => {
        const u = new URL('admin/top', base);
        const headers: Record<string, string> = { host };
        if (token !== undefined) headers.authorization = `Bearer ${token}`;
        http.get({ host: u.hostname, port: u.port, path: u.pathname, headers, agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', reject);
      });
      assert.equal(await status(withToken.url, 'app.example.com', TOKEN), 200);
      assert.equal(await status(open.url, 'app.example.com'), 421);
      assert.equal(await status(open.url, new URL(open.url).host), 200);
      assert.equal(await status(named.url, 'ops.example.com'), 200);
      assert.equal(await status(named.url, 'ops.example.com:8443'), 200);
      assert.equal(await status(named.url, 'evil.example'), 421);
    } finally {
      await withToken.close();
      await open.close();
      await named.close();
    }
    assert.throws(() => adminHandler({ limiters: { lim }, allowedHosts: ['bad host'] as string[] }), /allowedHosts/);
    assert.throws(() => adminHandler({ limiters: { lim }, maxEventClients: -1 }), /maxEventClients/);
  });
});
