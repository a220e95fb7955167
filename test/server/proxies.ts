/**
 * test/server/proxies — what the proxy examples' tests share (test/server/nginx.test.ts, caddy.test.ts, haproxy.test.ts):
 * a binary found or a clear failure, an example rewritten to the test's ports, a TCP relay in front of ratekeeper that
 * counts the connections a proxy opens to it, and the assertions on an admitted answer and on a refused burst.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { http, type Reply } from './procs.js';

/** binary — the first of `paths` that runs with `versionArgs`, else `name` on PATH; else throws `missing`. */
export function binary(name: string, paths: string[], versionArgs: string[], missing: string): string {
  for (const p of paths) if (spawnSync(p, versionArgs).status === 0) return p;
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim() !== '') return which.stdout.trim();
  throw new Error(missing);
}

/** rewrite — `text` with each (pattern → replacement) applied; a pattern that no longer matches fails the test. */
export function rewrite(text: string, replacements: [RegExp, string][]): string {
  for (const [from, to] of replacements) {
    assert.match(text, from, `the example no longer has ${from}`);
    text = text.replace(from, to);
  }
  return text;
}

/** Relay — a TCP relay to 127.0.0.1:target that counts the connections made to it. */
export interface Relay {
  port: number;
  /** connections — connections accepted so far. */
  connections: number;
  /** close — stops listening and drops every connection (the service behind it looks down). */
  close(): Promise<void>;
}

/** relay — listens on a free loopback port and pipes each connection to 127.0.0.1:target. */
export async function relay(target: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const r = { port: 0, connections: 0, close: (): Promise<void> => Promise.resolve() };
  const server: Server = createServer((client) => {
    r.connections++;
    const upstream = connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.port = (server.address() as { port: number }).port;
  r.close = () => new Promise((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  });
  return r;
}

/**
 * assertAdmitted — an answer the proxy let through: the app's own body, and ratekeeper's RateLimit and RateLimit-Policy
 * for the examples' policy (10/1s and 300/1m) copied onto it.
 */
export function assertAdmitted(r: Reply, log: string): void {
  assert.equal(r.status, 200, `${r.text}\n${log}`);
  assert.equal(r.text, 'hello from the app\n');
  assert.match(String(r.headers['ratelimit']), /^"10\/1s";r=\d+;t=\d+, "300\/1m";r=\d+;t=\d+$/);
  assert.match(String(r.headers['ratelimit-policy']), /"10\/1s";q=10;w=1/);
  assert.match(String(r.headers['ratelimit-policy']), /"300\/1m";q=300;w=60/);
}

/**
 * refusedBurst — 40 requests at once through the proxy on `front` (in parallel, so that a slow machine cannot spread
 * them over the refill): each answered 200 or 429, some refused (and at least `minAdmitted` admitted), the upstream
 * called exactly for the admitted ones (`appCalls` counts its calls); the first 429 is a problem+json with the
 * RateLimit fields and Retry-After, and is returned.
 */
export async function refusedBurst(front: number, appCalls: () => number, minAdmitted = 0): Promise<Reply> {
  const before = appCalls();
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => http(front, 'GET', `/burst/${i}`)));
  const called = appCalls() - before;
  const ok = answers.filter((r) => r.status === 200);
  const over = answers.filter((r) => r.status === 429);
  assert.equal(ok.length + over.length, 40, answers.map((r) => r.status).join(' '));
  assert.ok(over.length > 0 && ok.length >= minAdmitted, `${ok.length} admitted, ${over.length} refused`);
  assert.equal(called, ok.length, 'the upstream saw exactly the admitted requests');
  const r = over[0];
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  assert.equal(JSON.parse(r.text).status, 429);
  assert.match(String(r.headers['ratelimit']), /^"10\/1s";r=0;t=\d+, "300\/1m";r=\d+;t=\d+$/);
  assert.match(String(r.headers['ratelimit-policy']), /"10\/1s";q=10;w=1/);
  assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
  return r;
}

/**
 * spoofedBurst — 40 requests at once carrying the client's own X-Ratekeeper-Cost 0, a key of its own and another
 * policy, in a fresh second of the 10/s rule: the proxy must replace them, so some are refused, and the upstream is
 * called exactly for the admitted ones.
 */
export async function spoofedBurst(front: number, appCalls: () => number): Promise<void> {
  await new Promise((r) => setTimeout(r, 1100));
  const before = appCalls();
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => http(front, 'GET', `/free/${i}`, undefined, {
    headers: { 'x-ratekeeper-cost': '0', 'x-ratekeeper-key': `spoof-${i}`, 'x-ratekeeper-policy': 'nonexistent' },
  })));
  const over = answers.filter((r) => r.status === 429).length;
  assert.ok(over > 0, `all ${answers.length} admitted: ${answers.map((r) => r.status).join(' ')}`);
  assert.equal(appCalls() - before, answers.length - over);
}
