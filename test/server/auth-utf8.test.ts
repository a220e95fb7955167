/**
 * GET /v1/auth reads X-Ratekeeper-Key as UTF-8, as a proxy forwards it (nginx passes the bytes): the client `é`
 * (UTF-8 in the header) is the same client as `é` in POST /v1/check, one counter between them; node read the header as
 * Latin-1 (`Ã©`), a second budget. Bytes that are not UTF-8 are a 400 naming the header. Raw sockets on loopback, so
 * the bytes on the wire are exactly the ones given.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect } from 'node:net';
import { startService, type Running } from '../../src/server/serve.js';
import { http } from './procs.js';
import { configFile } from './support.js';

/** auth — GET /v1/auth with the key (and policy) header's raw bytes; the status. */
function auth(port: number, key: Buffer, policy = Buffer.from('api')): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(Buffer.concat([Buffer.from('GET /v1/auth HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Ratekeeper-Policy: '), policy, Buffer.from('\r\nX-Ratekeeper-Key: '), key, Buffer.from('\r\n\r\n')]));
    });
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (c: string) => (got += c));
    s.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
    s.on('error', reject);
    s.setTimeout(5000, () => s.destroy(new Error('no answer')));
  });
}

describe('GET /v1/auth: the key header as UTF-8', () => {
  let r: Running;
  before(async () => {
    r = await startService({ config: configFile(`policies:\n  api: { rules: '2/min' }\n  café: { rules: '1/min' }\n`), port: 0, grpcPort: -1, adminPort: -1, log: () => undefined });
  });
  after(async () => {
    await r.close();
  });

  test('é through /v1/auth and /v1/check is one client: 2 admitted between them, the third refused', async () => {
    const key = 'café-ü';
    assert.equal(await auth(r.httpPort!, Buffer.from(key, 'utf8')), 200);
    assert.equal((await http(r.httpPort!, 'POST', '/v1/check', { policy: 'api', key })).status, 200);
    assert.equal(await auth(r.httpPort!, Buffer.from(key, 'utf8')), 403);
    assert.equal((await http(r.httpPort!, 'POST', '/v1/check', { policy: 'api', key })).status, 429);
  });

  test('bytes that are not UTF-8: 400 naming the header; ASCII keys as before', async () => {
    assert.equal(await auth(r.httpPort!, Buffer.from([0x61, 0xff, 0x62])), 400);
    assert.equal(await auth(r.httpPort!, Buffer.from('plain-ascii')), 200);
  });

  test('the policy header is UTF-8 too: a policy named café is reachable, one client with /v1/check', async () => {
    // before, the header was read as Latin-1 (`cafÃ©`): 400 "no policy" for a policy /v1/check reaches
    assert.equal(await auth(r.httpPort!, Buffer.from('bob'), Buffer.from('café', 'utf8')), 200);
    assert.equal((await http(r.httpPort!, 'POST', '/v1/check', { policy: 'café', key: 'bob' })).status, 429, 'the same client: 1/min used');
    assert.equal(await auth(r.httpPort!, Buffer.from('bob'), Buffer.from([0x63, 0xe9])), 400, 'not UTF-8');
  });
});
