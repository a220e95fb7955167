/**
 * server/probe — `ratekeeper health`: asks a running service's GET /healthcheck and exits 0 on a 200, 1 otherwise
 * (another status, no answer in time, nothing listening). It is the container image's HEALTHCHECK: the image has no
 * curl, and node is already there. Only node:http and node:https: it loads none of the service's dependencies.
 * An HTTPS listener (RATEKEEPER_TLS_CERT in the environment, or an https:// --url) is asked over TLS without checking
 * its certificate: the probe asks whether this process answers on its own port, not who it is.
 */
import { request } from 'node:http';
import { request as requestTls } from 'node:https';
import { parseArgs } from 'node:util';
import { show } from '../core/errors.js';
import { ServeUsageError } from './flagValues.js';

export const HEALTH_HELP = `ratekeeper health — asks a running service's /healthcheck: exit 0 on a 200, 1 otherwise

Usage:
  ratekeeper health [--url URL] [--timeout MS]

Options:
  --url URL        the health check to ask     default: http://127.0.0.1:$PORT/healthcheck ($PORT, else 8080);
                   https:// when RATEKEEPER_TLS_CERT is set (the HTTP listener serves TLS then); an https://
                   URL is asked without checking the certificate (a liveness probe of this process)
  --timeout MS     ms to wait for the answer   default: 2000
  --help, -h       this text
`;

/** ProbeOptions — where to ask and how long to wait. */
export interface ProbeOptions {
  url: string;
  /** timeout — ms for the whole answer. */
  timeout: number;
}

/** probeOptions — ProbeOptions from the flags and the environment (PORT, as `ratekeeper serve` reads it). */
export function probeOptions(argv: string[], env: NodeJS.ProcessEnv): ProbeOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { url: { type: 'string' }, timeout: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    throw new ServeUsageError(`${(e as Error).message} (see ratekeeper health --help)`);
  }
  const f = parsed.values;
  if (f.help) return 'help';
  const port = env.PORT !== undefined && /^\d{1,5}$/.test(env.PORT) ? env.PORT : '8080';
  // serve's HTTP listener takes RATEKEEPER_TLS_CERT when no flag says otherwise: the image's HEALTHCHECK must follow
  const tls = env.RATEKEEPER_TLS_CERT !== undefined && env.RATEKEEPER_TLS_CERT !== '' && !/^off$/i.test(env.RATEKEEPER_TLS_CERT);
  const url = f.url ?? `${tls ? 'https' : 'http'}://127.0.0.1:${port}/healthcheck`;
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(url);
  } catch {
    throw new ServeUsageError(`--url must be an http:// URL or an https:// one, got ${show(url)}`);
  }
  if (parsedUrl.protocol !== 'http:' && parsedUrl.protocol !== 'https:') throw new ServeUsageError(`--url must be an http:// URL or an https:// one, got ${show(url)}`);
  const timeout = f.timeout === undefined ? 2000 : Number(f.timeout);
  if (!Number.isInteger(timeout) || timeout < 1) throw new ServeUsageError(`--timeout must be an integer >= 1 (ms), got ${show(f.timeout)}`);
  return { url, timeout };
}

/** probe — GET `url`: the status (0 when nothing answered in time) and the body's first line. */
export function probe(o: ProbeOptions): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const https = o.url.startsWith('https:');
    const options = { method: 'GET', timeout: o.timeout, headers: { connection: 'close' }, ...(https ? { rejectUnauthorized: false } : {}) };
    const req = (https ? requestTls : request)(o.url, options, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => {
        if (text.length < 4096) text += s;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', (e) => resolve({ status: 0, text: e.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${o.timeout} ms`)));
    req.on('error', (e) => resolve({ status: 0, text: e.message }));
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
  const r = await probe(o);
  const first = r.text.split('\n', 1)[0];
  if (r.status === 200) {
    process.stdout.write(`${o.url}: 200 ${first}\n`);
    return 0;
  }
  process.stderr.write(`ratekeeper: ${o.url}: ${r.status === 0 ? r.text : `${r.status} ${first}`}\n`);
  return 1;
}
