/**
 * server/probe — `ratekeeper health`: asks a running service whether it is healthy and exits 0 if so, 1 otherwise
 * (another status, no answer in time, nothing listening). It is the container image's HEALTHCHECK: the image has no
 * curl, and node is already there. By default it asks the listener `serve` would open from the same environment:
 * GET /healthcheck on the HTTP listener ($PORT, 8080), or — with PORT=off — grpc.health.v1 Check on the gRPC one
 * ($GRPC_PORT, 8081; probeGrpc.ts), over TLS where serve's TLS variables put it there (tlsFlags.ts reads them for
 * both), on $HOST when serve binds one address. A listener that asks for client certificates (mTLS) is sent the
 * probe's own (--tls-cert/--tls-key, RATEKEEPER_HEALTH_TLS_CERT/KEY), else the listener's own certificate and key.
 * The listener's certificate is not checked: the probe asks whether this process answers on its own port, not who
 * it is. Only node:http and node:https for HTTP: it loads none of the service's dependencies there.
 */
import { request } from 'node:http';
import { request as requestTls } from 'node:https';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { show } from '../core/errors.js';
import { port, ServeUsageError, set } from './flagValues.js';
import { tlsOptions } from './tlsFlags.js';

export const HEALTH_HELP = `ratekeeper health — asks a running service's /healthcheck: exit 0 on a 200, 1 otherwise

Usage:
  ratekeeper health [--url URL] [--timeout MS] [--tls-cert FILE --tls-key FILE]

Options:
  --url URL        the health check to ask: http(s)://host:port/path (GET, healthy on 200) or
                   grpc(s)://host:port[/service] (grpc.health.v1 Check, healthy on SERVING)
                   default: the listener serve opens from the same environment — the HTTP one
                   (http://127.0.0.1:$PORT/healthcheck, $PORT else 8080), or with PORT=off the gRPC one
                   (grpc://127.0.0.1:$GRPC_PORT, else 8081); https/grpcs where serve's TLS variables
                   (RATEKEEPER_TLS_CERT/KEY/CLIENT_CA; GRPC_SERVER_USE_TLS with
                   GRPC_SERVER_TLS_CERT/KEY, GRPC_CLIENT_TLS_CACERT) give it TLS;
                   $HOST instead of 127.0.0.1 when serve binds one address. A TLS listener's certificate
                   is not checked (a liveness probe of this process).
  --timeout MS     ms to wait for the answer   default: 2000
  --tls-cert FILE, --tls-key FILE
                   the client certificate sent to a listener that asks for one (mTLS)
                   RATEKEEPER_HEALTH_TLS_CERT, RATEKEEPER_HEALTH_TLS_KEY; default: the listener's own
  --help, -h       this text
`;

/** ProbeOptions — where to ask, how long to wait, and the client certificate for an mTLS listener. */
export interface ProbeOptions {
  url: string;
  /** timeout — ms for the whole answer. */
  timeout: number;
  /** clientCert — files of the certificate and key sent to a listener that asks for one. */
  clientCert?: { cert: string; key: string };
  /** hint — said after a failure: where the client certificate came from, when the probe chose it. */
  hint?: string;
}

/** ProbeResult — healthy or not, and what the listener said (or why it said nothing). */
export interface ProbeResult {
  healthy: boolean;
  detail: string;
}

/** PROTOCOLS — what --url may ask. */
const PROTOCOLS = new Set(['http:', 'https:', 'grpc:', 'grpcs:']);

/** ANY — addresses serve binds every interface on: the probe asks loopback there. */
const ANY = /^(0\.0\.0\.0|::|\[::\])$/;

/** probeOptions — ProbeOptions from the flags and the environment (PORT, as `ratekeeper serve` reads it). */
export function probeOptions(argv: string[], env: NodeJS.ProcessEnv): ProbeOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { url: { type: 'string' }, timeout: { type: 'string' }, 'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    throw new ServeUsageError(`${(e as Error).message} (see ratekeeper health --help)`);
  }
  const f = parsed.values;
  if (f.help) return 'help';
  const timeout = f.timeout === undefined ? 2000 : Number(f.timeout);
  if (!Number.isInteger(timeout) || timeout < 1) throw new ServeUsageError(`--timeout must be an integer >= 1 (ms), got ${show(f.timeout)}`);
  const certFile = f['tls-cert'] ?? set(env.RATEKEEPER_HEALTH_TLS_CERT);
  const keyFile = f['tls-key'] ?? set(env.RATEKEEPER_HEALTH_TLS_KEY);
  if ((certFile === undefined) !== (keyFile === undefined)) throw new ServeUsageError(certFile === undefined ? '--tls-key needs its certificate: --tls-cert FILE (or RATEKEEPER_HEALTH_TLS_CERT)' : '--tls-cert needs its private key: --tls-key FILE (or RATEKEEPER_HEALTH_TLS_KEY)');
  const own = certFile !== undefined && keyFile !== undefined ? { cert: certFile, key: keyFile } : undefined;
  if (f.url !== undefined) {
    let parsedUrl: URL | undefined;
    try {
      parsedUrl = new URL(f.url);
    } catch {
      parsedUrl = undefined;
    }
    if (parsedUrl === undefined || !PROTOCOLS.has(parsedUrl.protocol)) throw new ServeUsageError(`--url must be an http:// URL, an https:// one, or grpc:// or grpcs://host:port, got ${show(f.url)}`);
    return own === undefined ? { url: f.url, timeout } : { url: f.url, timeout, clientCert: own };
  }
  // the listener serve would open from this environment, read by serve's own rules
  const hostVar = set(env.HOST)?.trim();
  const host = hostVar === undefined || ANY.test(hostVar) ? '127.0.0.1' : hostVar.includes(':') && !hostVar.startsWith('[') ? `[${hostVar}]` : hostVar;
  const httpPort = port(set(env.PORT), 'PORT') ?? 8080;
  const grpcPort = port(set(env.GRPC_PORT), 'GRPC_PORT') ?? 8081;
  const tls = tlsOptions({}, env).tls ?? {};
  let url: string;
  let listener;
  if (httpPort !== -1) {
    listener = tls.http;
    url = `${listener ? 'https' : 'http'}://${host}:${httpPort}/healthcheck`;
  } else if (grpcPort !== -1) {
    listener = tls.grpc;
    url = `${listener ? 'grpcs' : 'grpc'}://${host}:${grpcPort}`;
  } else {
    throw new ServeUsageError('PORT and GRPC_PORT are both off: no listener to ask (give --url)');
  }
  if (own !== undefined) return { url, timeout, clientCert: own };
  if (listener?.clientCa === undefined) return { url, timeout };
  // mTLS: the listener's own certificate, which it accepts if its CA signed it for client use too
  const hint = `(the listener asks for a client certificate; the probe sent the listener's own, ${listener.cert}: give it one for client use with --tls-cert/--tls-key or RATEKEEPER_HEALTH_TLS_CERT/KEY)`;
  return { url, timeout, clientCert: { cert: listener.cert, key: listener.key }, hint };
}

/** probeHttp — GET `o.url`: healthy on a 200; the status and the body's first line, or why nothing answered. */
export function probeHttp(o: ProbeOptions): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const https = o.url.startsWith('https:');
    const client = https && o.clientCert ? { cert: readFileSync(o.clientCert.cert), key: readFileSync(o.clientCert.key) } : {};
    const options = { method: 'GET', timeout: o.timeout, headers: { connection: 'close' }, ...(https ? { rejectUnauthorized: false, ...client } : {}) };
    const req = (https ? requestTls : request)(o.url, options, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => {
        if (text.length < 4096) text += s;
      });
      res.on('end', () => resolve({ healthy: res.statusCode === 200, detail: `${res.statusCode} ${text.split('\n', 1)[0]}` }));
      res.on('error', (e) => resolve({ healthy: false, detail: e.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${o.timeout} ms`)));
    req.on('error', (e) => resolve({ healthy: false, detail: e.message }));
    req.end();
  });
}

/** healthCommand — `ratekeeper health`: 0 healthy, 1 not (the reason on stderr). */
export async function healthCommand(argv: string[]): Promise<number> {
  const o = probeOptions(argv, process.env);
  if (o === 'help') {
    process.stdout.write(HEALTH_HELP);
    return 0;
  }
  let r: ProbeResult;
  try {
    r = o.url.startsWith('grpc') ? await (await import('./probeGrpc.js')).probeGrpc(o) : await probeHttp(o);
  } catch (e) {
    r = { healthy: false, detail: (e as Error).message }; // an unreadable client certificate, say
  }
  if (r.healthy) {
    process.stdout.write(`${o.url}: ${r.detail}\n`);
    return 0;
  }
  process.stderr.write(`ratekeeper: ${o.url}: ${r.detail}${o.hint === undefined ? '' : ` ${o.hint}`}\n`);
  return 1;
}
