/**
 * server/listeners — what the service says when one of its listeners cannot bind: the listener by name, the address,
 * the cause in words, and the flag that moves it or turns it off (never a bare `EADDRINUSE`).
 */
import { RatekeeperError } from '../core/errors.js';

/** Listener — the service's three listeners, with the flag that sets each one's port. */
export const LISTENERS = {
  http: { what: 'the HTTP listener (POST /json, POST /v1/check, GET /v1/auth, GET /healthcheck, GET /metrics)', flag: '--port', env: 'PORT' },
  grpc: { what: 'the gRPC listener (Envoy\'s RLS v3)', flag: '--grpc-port', env: 'GRPC_PORT' },
  admin: { what: 'the admin listener (the dashboard and admin API, on by default)', flag: '--admin-port', env: 'RATEKEEPER_ADMIN_PORT' },
} as const;

/** causeOf — `e`'s system error code (EADDRINUSE, EACCES, EADDRNOTAVAIL), also when grpc-js wraps it in a message. */
function causeOf(e: unknown): string | undefined {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  return /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(String((e as Error | undefined)?.message ?? e))?.[1];
}

const WORDS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another process listens there)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s',
};

/**
 * listenFailed — `e` (a failed bind of `listener` on host:port) as a RatekeeperError that names the listener, the
 * address, the cause and the way out: `ratekeeper: cannot start the admin listener (…) on 127.0.0.1:6070: the address
 * is already in use …: choose another port with --admin-port N (0: any free port), or turn it off with --admin-port off`.
 */
export function listenFailed(e: unknown, listener: keyof typeof LISTENERS, address: string): RatekeeperError {
  const { what, flag, env } = LISTENERS[listener];
  const cause = causeOf(e);
  const why = cause === undefined ? String((e as Error | undefined)?.message ?? e) : `${WORDS[cause] ?? cause} [${cause}]`;
  return new RatekeeperError(`cannot start ${what} on ${address}: ${why}: choose another port with ${flag} N or ${env}=N (0: any free port), or turn it off with ${flag} off`);
}
