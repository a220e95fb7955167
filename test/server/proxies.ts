/**
 * test/server/proxies — what the proxy examples' tests share (test/server/caddy.test.ts, haproxy.test.ts): a binary
 * found or a clear failure, an example rewritten to the test's ports, and a TCP relay in front of ratekeeper that
 * counts the connections a proxy opens to it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';

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
