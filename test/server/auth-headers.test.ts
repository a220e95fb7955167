/**
 * test/server/auth-headers — GET /v1/auth refuses a header it reads that comes twice. Before, node joined the copies
 * (`X-Ratekeeper-Key: a` and `X-Ratekeeper-Key: b` → the key `a, b`): a client behind a proxy that adds the header
 * rather than replacing it could add a copy of its own and get a fresh budget with every new value.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import http from 'node:http';
import net from 'node:net';
import { startService, type Running } from '../../src/server/serve.js';
import { configFile } from './support.js';

/** rawStatus — the status line of the answer to `text` sent as it is on one TCP connection (the server closes it). */
function rawStatus(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (c: string) => (out += c));
    s.on('end', () => resolve(out.split('\r\n')[0]));
    s.on('error', reject);
    s.end(text);
  });
}

/** get — GET /v1/auth with node's client; an array value is sent as that many header lines. */
function get(port: number, headers: Record<string, string | string[]>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/v1/auth', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    }).on('error', reject);
  });
}

describe('GET /v1/auth reads each header once', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(`policies:\n  api: { rules: '2/min' }\n`), port: 0, grpcPort: -1, host: '127.0.0.1', log: () => undefined });
  });
  after(async () => {
    await running.close();
  });

  test('a second X-Ratekeeper-Key (or Policy, or Cost) is a 400 naming it, charging nothing; one of each works', async () => {
    const port = running.httpPort!;
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'alice' })).status, 200);
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'alice' })).status, 200);
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'alice' })).status, 403, 'alice used her 2/min');
    for (let i = 0; i < 3; i++) {
      const r = await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': [`spoof${i}`, 'alice'] });
      assert.equal(r.status, 400, r.text);
      assert.equal(JSON.parse(r.text).field, 'X-Ratekeeper-Key');
    }
    const cost = await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'bob', 'X-Ratekeeper-Cost': ['0', '1'] });
    assert.equal(cost.status, 400);
    assert.equal(JSON.parse(cost.text).field, 'X-Ratekeeper-Cost');
    const policy = await get(port, { 'X-RATEKEEPER-POLICY': ['api', 'api'], 'x-ratekeeper-key': 'bob' });
    assert.equal(policy.status, 400);
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'bob' })).status, 200, 'bob was charged nothing');
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'bob' })).status, 200);
  });

  test('a copy of a header behind 2 000 others is still seen: node drops headers past its maxHeadersCount (2 000)', async () => {
    const port = running.httpPort!;
    // the client's own X-Ratekeeper-Key first, then filler, then the proxy's copy (appended, as a proxy that adds the
    // header does): with node's default maxHeadersCount the proxy's copy, the 2 001st header, was dropped unseen and
    // the client's spoofed key was charged (a fresh budget for every key it picks)
    let head = 'GET /v1/auth HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Ratekeeper-Policy: api\r\nX-Ratekeeper-Key: spoof\r\n';
    for (let i = 0; i < 1996; i++) head += `f${i % 10}:\r\n`;
    for (let i = 0; i < 3; i++) {
      const status = await rawStatus(port, `${head}X-Ratekeeper-Key: carol\r\n\r\n`);
      assert.equal(status, 'HTTP/1.1 400 Bad Request', 'the second X-Ratekeeper-Key is refused, however many headers come before it');
    }
    assert.equal((await get(port, { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': 'spoof' })).status, 200, 'spoof was charged nothing');
    // many headers alone are no fault: 4 000 one-letter headers fit node's 16 KiB of header bytes
    let many = 'GET /v1/auth HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Ratekeeper-Policy: api\r\n';
    for (let i = 0; i < 3000; i++) many += `${String.fromCharCode(97 + (i % 26))}:\r\n`;
    assert.equal(await rawStatus(port, `${many}X-Ratekeeper-Key: dave\r\n\r\n`), 'HTTP/1.1 200 OK', 'the key behind 3 000 headers is read');
  });
});
