import { createServer, type Server } from 'node:http';
import { createServer as createSecureServer } from 'node:https';
import type { TlsOptions } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { checkOptions } from '../core/options.js';
import { RatekeeperError, show } from '../core/errors.js';
import { ADMIN_OPTIONS, adminHandler, type AdminOptions } from './handler.js';
import { isLoopback } from './guard.js';

/** ServeAdminOptions — the admin listener: where, and the handler's options. */
export interface ServeAdminOptions extends AdminOptions {
  /** host — the address to listen on. Off loopback a token is required. @default '127.0.0.1' */
  host?: string;
  /** port — 0 picks a free one. @default 6070 */
  port?: number;
  /** token — the bearer token. @default process.env.RATEKEEPER_ADMIN_TOKEN */
  token?: string;
  /**
   * tls — serve HTTPS: node's TLS server options (cert, key; ca with requestCert and rejectUnauthorized for mTLS).
   * The certificate can be swapped later with `server.setSecureContext`. Absent: plain HTTP.
   */
  tls?: TlsOptions;
}

/** AdminServer — a running admin listener: its URL (the dashboard's) and how to stop it. */
export interface AdminServer {
  server: Server;
  url: string;
  /** close — stops listening and ends open connections (live tails included). */
  close(): Promise<void>;
}

/**
 * serveAdmin — the operators' view on its own node:http listener: the API, the live tail and the dashboard.
 * Refuses to start off loopback without a token (a listener anyone on the network reaches must not let anyone
 * block or exempt clients).
 */
/** SERVE_ADMIN_OPTIONS — the names serveAdmin's options may have. */
const SERVE_ADMIN_OPTIONS: ReadonlySet<string> = new Set([...ADMIN_OPTIONS, 'host', 'port', 'tls']);

export async function serveAdmin(options: ServeAdminOptions): Promise<AdminServer> {
  if (typeof options !== 'object' || options === null) throw new RatekeeperError(`serveAdmin takes an options object like { limiters }, got ${show(options)}`);
  checkOptions(options, SERVE_ADMIN_OPTIONS, 'serveAdmin');
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 6070;
  if (typeof host !== 'string' || host === '') throw new RatekeeperError(`serveAdmin.host must be an address like '127.0.0.1', got ${show(options.host)}`);
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) throw new RatekeeperError(`serveAdmin.port must be an integer from 0 to 65535, got ${show(options.port)}`);
  const envToken = process.env.RATEKEEPER_ADMIN_TOKEN;
  const token = options.token ?? (envToken === undefined || envToken === '' ? undefined : envToken);
  if (token === undefined && !isLoopback(host)) {
    throw new RatekeeperError(`the admin listener on ${host} is not loopback: give it a token (serveAdmin({ token }) or RATEKEEPER_ADMIN_TOKEN), or listen on 127.0.0.1`);
  }
  if (options.tls !== undefined && (typeof options.tls !== 'object' || options.tls === null)) throw new RatekeeperError(`serveAdmin.tls must be TLS server options like { cert, key }, got ${show(options.tls)}`);
  const { host: _host, port: _port, tls, ...handlerOptions } = options;
  // its own listener: the Host is checked with a token too (the listener's address, or the names configured)
  const handler = adminHandler({ ...handlerOptions, token, allowedHosts: options.allowedHosts ?? [] });
  const server: Server = tls === undefined ? createServer((req, res) => handler(req, res)) : createSecureServer(tls, (req, res) => handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  if (token === undefined && !isLoopback(a.address)) {
    server.close();
    throw new RatekeeperError(`the admin listener on ${host} bound ${a.address}, which is not loopback: give it a token, or listen on 127.0.0.1`);
  }
  const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    server,
    url: `${tls === undefined ? 'http' : 'https'}://${shown}:${a.port}/`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
