/** test/admin/support — a real node:http server around the admin handler, and a small client for its API. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminHandler, type AdminLogEntry, type AdminOptions } from '../../src/admin/index.js';

export interface Reply {
  status: number;
  headers: Record<string, string | undefined>;
  json: any;
  text: string;
}

/** call — one request; `body` is sent as JSON (a string as is). */
export async function call(base: string, path: string, options: { method?: string; body?: unknown; token?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.body !== undefined) body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  // a change is declared as JSON, as the listener requires (a form or a no-cors fetch of a web page cannot)
  if (options.body !== undefined || (options.method !== undefined && options.method !== 'GET' && options.method !== 'HEAD')) headers['content-type'] ??= 'application/json';
  const res = await fetch(new URL(path, base), { method: options.method ?? 'GET', headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: Object.fromEntries(res.headers.entries()), json, text };
}

/** serve — the handler on its own server at `host` (port 0); `logs` collects the changes logged. */
export async function serve(options: AdminOptions, host = '127.0.0.1'): Promise<{ url: string; logs: AdminLogEntry[]; close(): Promise<void> }> {
  const logs: AdminLogEntry[] = [];
  const handler = adminHandler({ log: (e) => logs.push(e), ...options });
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const a = server.address() as AddressInfo;
  return {
    url: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/`,
    logs,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** externalAddress — an address of this machine that is not loopback (to reach a listener "off loopback"). */
export async function externalAddress(): Promise<string> {
  const { networkInterfaces } = await import('node:os');
  const a = Object.values(networkInterfaces()).flat().find((x) => x !== undefined && !x.internal && x.family === 'IPv4');
  if (a === undefined) throw new Error('this machine has no non-loopback IPv4 address: the off-loopback tests need one');
  return a!.address;
}
