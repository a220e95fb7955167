/**
 * test/server/http-answer — how the HTTP listener writes its answers (server/httpAnswer.ts), on a real HttpFront over
 * real sockets: each answer of /v1/check, /json and /v1/auth leaves in one write of its socket (head and body
 * together, no writev: a bare node:http server's `res.end(body)` writes two chunks through writev), counted on the
 * server's own sockets; and where one write cannot hold — pipelined requests (an answer queued behind another has no
 * socket yet), HEAD — the answers are still whole, in order and byte-exact.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect, type Socket } from 'node:net';
import { HttpFront } from '../../src/server/http.js';
import { RateLimitService } from '../../src/server/service.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { configFrom } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 2, algorithm: slidingLog }
policies:
  login:
    rules: '2/h'
`;

/** Writes — the server sockets' write calls: `_write` (one chunk) and `_writev` (several), counted as they happen. */
interface Writes {
  write: number;
  writev: number;
}

/** request — an HTTP/1.1 request's bytes; `body` JSON with its Content-Length. */
function request(method: string, path: string, headers: Record<string, string> = {}, body?: unknown): string {
  const text = body === undefined ? '' : JSON.stringify(body);
  let head = `${method} ${path} HTTP/1.1\r\nHost: x\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  if (body !== undefined) head += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n`;
  return `${head}\r\n${text}`;
}

/** Answer — one parsed HTTP answer: status, headers (lower-case names) and body. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * exchange — sends `bytes` on a new connection and reads `count` answers (Content-Length framed; a HEAD answer has
 * none), within 5 s; then closes the connection.
 */
function exchange(port: number, bytes: string, count: number, head = false): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let buffer = Buffer.alloc(0);
    const answers: Answer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${answers.length} of ${count} answers in 5 s: ${buffer.toString('latin1')}`));
    }, 5000);
    socket.on('error', reject);
    socket.on('data', (d: Buffer) => {
      buffer = Buffer.concat([buffer, d]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) break;
        const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
        const length = head ? 0 : Number(headers['content-length'] ?? 0);
        if (buffer.length < end + 4 + length) break;
        answers.push({ status: Number(lines[0].split(' ')[1]), headers, body: buffer.subarray(end + 4, end + 4 + length).toString('utf8') });
        buffer = buffer.subarray(end + 4 + length);
      }
      if (answers.length >= count) {
        clearTimeout(timer);
        socket.end();
        resolve(answers);
      }
    });
    socket.write(bytes);
  });
}

describe('HTTP answers: one write each', () => {
  let front: HttpFront;
  let port: number;
  const writes: Writes = { write: 0, writev: 0 };
  before(async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom(CONFIG));
    front = new HttpFront({ service, healthy: () => true, log: () => undefined });
    // the server's own sockets, their write calls counted (node's net.Socket: `_writev` when it writes several chunks)
    front.server.on('connection', (s: Socket) => {
      const socket = s as Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
      const write = socket._write;
      const writev = socket._writev;
      socket._write = function (this: Socket, ...a: unknown[]) {
        writes.write++;
        return write.apply(this, a);
      };
      socket._writev = function (this: Socket, ...a: unknown[]) {
        writes.writev++;
        return writev.apply(this, a);
      };
    });
    port = await front.listen('127.0.0.1', 0);
  });
  after(() => front.close(0));

  const reset = (): void => {
    writes.write = 0;
    writes.writev = 0;
  };

  test('POST /v1/check, POST /json and GET /v1/auth, admitted and refused: one write per answer, no writev', async () => {
    const cases: [string, number, string][] = [
      [request('POST', '/v1/check', {}, { policy: 'login', key: 'one-write' }), 200, '/v1/check'],
      [request('POST', '/v1/check', {}, { policy: 'login', key: 'one-write' }), 200, '/v1/check'],
      [request('POST', '/v1/check', {}, { policy: 'login', key: 'one-write' }), 429, '/v1/check'],
      [request('POST', '/json', {}, { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'one-write' }] }] }), 200, '/json'],
      [request('GET', '/v1/auth', { 'X-Ratekeeper-Policy': 'login', 'X-Ratekeeper-Key': 'auth-write' }), 200, '/v1/auth'],
      [request('POST', '/v1/check', {}, { policy: 'login' }), 400, 'a bad /v1/check'],
    ];
    for (const [bytes, status, what] of cases) {
      reset();
      const [a] = await exchange(port, bytes, 1);
      assert.equal(a.status, status, `${what}: ${a.body}`);
      assert.deepEqual(writes, { write: 1, writev: 0 }, `${what} (${status}): the answer's socket writes`);
    }
  });

  test('the answers keep their headers and bodies: RateLimit fields, Retry-After, Content-Type, Content-Length', async () => {
    const bytes = request('POST', '/v1/check', {}, { policy: 'login', key: 'fields' });
    const [first, second, third] = await exchange(port, bytes + bytes + bytes, 3);
    assert.deepEqual([first.status, second.status, third.status], [200, 200, 429]);
    for (const a of [first, second, third]) {
      assert.equal(a.headers['content-type'], 'application/json');
      assert.equal(Number(a.headers['content-length']), Buffer.byteLength(a.body));
      assert.match(a.headers['ratelimit-policy'], /^"2\/1h";q=2;w=3600$/);
      assert.match(a.headers.ratelimit, /^"2\/1h";r=\d;t=\d+$/);
      assert.equal(a.headers.connection, 'keep-alive');
      assert.ok(a.headers.date !== undefined);
      assert.equal(JSON.parse(a.body).allowed, a.status === 200);
    }
    assert.equal(third.headers['retry-after'], String(Math.ceil(JSON.parse(third.body).retryAfter / 1000)));
    assert.equal(first.headers['retry-after'], undefined);
  });

  test('pipelined requests (answers queued behind one another) are answered whole and in order', async () => {
    let bytes = '';
    for (let i = 0; i < 20; i++) {
      bytes += i % 2 === 0
        ? request('POST', '/v1/check', {}, { policy: 'login', key: `pipe-${i}` })
        : request('POST', '/json', {}, { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: `pipe-${i}` }] }] });
    }
    const answers = await exchange(port, bytes, 20);
    assert.equal(answers.length, 20);
    answers.forEach((a, i) => {
      assert.equal(a.status, 200);
      const body = JSON.parse(a.body) as Record<string, unknown>;
      if (i % 2 === 0) assert.equal(body.allowed, true, `answer ${i}`);
      else assert.equal(body.overallCode, 'OK', `answer ${i}`);
    });
  });

  test('HEAD /healthcheck: the head only, with the body\'s Content-Length; the connection serves on', async () => {
    const [a] = await exchange(port, request('HEAD', '/healthcheck'), 1, true);
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-length'], '2');
    const [b, c] = await exchange(port, request('HEAD', '/healthcheck') + request('HEAD', '/healthcheck'), 2, true);
    assert.equal(b.status, 200);
    assert.equal(c.status, 200);
  });
});
