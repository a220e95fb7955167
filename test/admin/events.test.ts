/**
 * test/admin/events — the live tail (SSE) is bounded and costs the same whatever the number of listeners: at most
 * `maxEventClients` tails (the next gets 503 with a reason, and a slot freed by a client that left is reused); every
 * tail receives the same text for the same decisions (serialized once); a key with bidirectional or control
 * characters is escaped in the raw stream, so a terminal reading it cannot show it as another key.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { serveAdmin, type AdminServer } from '../../src/admin/index.js';
import { safeJson } from '../../src/admin/http.js';

/** Tail — an open /admin/events stream: its status, everything read so far, and how to close it. */
interface Tail {
  status: number;
  body: () => string;
  close(): void;
}

function openTail(port: number): Promise<Tail> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/admin/events', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      resolve({ status: res.statusCode ?? 0, body: () => text, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the live tail is bounded and serialized once', () => {
  let api: Limiter;
  let admin: AdminServer;
  let port: number;
  const open: Tail[] = [];
  before(async () => {
    api = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1h' })], observe: true });
    admin = await serveAdmin({ limiters: new Map([['api', api]]), port: 0, maxEventClients: 3, log: () => undefined });
    port = Number(new URL(admin.url).port);
  });
  after(async () => {
    for (const t of open) t.close();
    await admin.close();
  });

  it('the tail past maxEventClients gets 503 with a reason; a freed slot is reused', async () => {
    for (let i = 0; i < 3; i++) {
      const t = await openTail(port);
      open.push(t);
      assert.equal(t.status, 200);
    }
    const over = await openTail(port);
    assert.equal(over.status, 503);
    await until('the 503 body', () => over.body().includes('}'));
    assert.match(JSON.parse(over.body()).error, /too many live tails open \(3/);
    open.pop()!.close();
    await new Promise((r) => setTimeout(r, 100));
    const again = await openTail(port);
    open.push(again);
    assert.equal(again.status, 200, 'the slot of a tail that left is free again');
  });

  it('every tail gets the same text; a key with an override or control character is escaped in it', async () => {
    const key = 'user\u202E1nimda\u0007';
    await api.check(key);
    await api.check(key); // refused: a refusal is always in the tail
    const line = (t: Tail): string | undefined => t.body().split('\n').find((l) => l.startsWith('data: ') && l.includes('user'));
    await until('the refusal in every tail', () => open.every((t) => line(t) !== undefined && /limited/.test(t.body())));
    const texts = open.map((t) => t.body().slice(t.body().indexOf('event: decision')));
    for (const t of texts) assert.equal(t, texts[0], 'one serialization written to all');
    const data = line(open[0])!;
    assert.ok(!data.includes('\u202E') && !data.includes('\u0007'), 'no raw override or control character in the stream');
    assert.match(data, /user\\u202e1nimda\\u0007/);
    assert.equal(JSON.parse(data.slice(6)).key, key, 'the JSON still carries the key itself');
  });

  it('safeJson escapes what could disguise a key and keeps the value', () => {
    const tricky = ['a\u202Eb', '\u2066x\u2069', 'zero\u200Bwidth', 'c1\u0085', 'bom\uFEFF', 'lone\uD800', 'rlm\u200F', 'plain ключ 😀'];
    for (const k of tricky) {
      const text = safeJson({ k });
      assert.equal(JSON.parse(text).k, k);
      if (k !== 'plain ключ 😀') assert.match(text, /\\u[0-9a-f]{4}/, k);
      else assert.equal(text, JSON.stringify({ k }));
    }
  });
});
