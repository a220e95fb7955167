/**
 * server/tlsFlags — the TLS flags of `ratekeeper serve` (--tls-*, --<listener>-tls-*, envoyproxy/ratelimit's
 * GRPC_SERVER_* variables) and --grpc-reflection, read into ServeOptions' `tls` and `grpcReflection`.
 */
import { show } from '../core/errors.js';
import { goBool, nonEmpty, ServeUsageError, set } from './flagValues.js';
import type { ServeOptions } from './serveOptions.js';
import type { TlsFiles } from './tls.js';

/** TLS_LISTENERS — the listeners that can speak TLS, each with its own --<name>-tls-* flags. */
const TLS_LISTENERS = ['http', 'grpc', 'admin'] as const;
const TLS_PARTS = ['cert', 'key', 'client-ca', 'client-san'] as const;

/** TLS_FLAGS — --tls-cert …, --<listener>-tls-cert … and --grpc-reflection, all strings (this block's flags). */
export const TLS_FLAGS: Record<string, { type: 'string' }> = Object.fromEntries(
  ['', ...TLS_LISTENERS.map((l) => `${l}-`)].flatMap((l) => TLS_PARTS.map((p) => [`${l}tls-${p}`, { type: 'string' as const }])).concat([['grpc-reflection', { type: 'string' }]]),
);

/** OFF — the value that turns a listener's TLS (or its mTLS) off where a default would apply. */
const OFF = /^(off|none)$/i;

/** Found — a value and the flag or environment variable it came from. */
type Found = { value: string; from: string } | undefined;

/**
 * tlsOptions — `tls` and `grpcReflection` of ServeOptions. Per listener, each file is looked for in its own flag,
 * then (gRPC only, with GRPC_SERVER_USE_TLS=true) envoyproxy/ratelimit's variable, then the shared flag, then the
 * shared variable. The certificate and key come from the same place (a listener's own certificate with the shared
 * key would be a mismatch waiting to happen); the client CA and SAN are looked for on their own, `off` ending the search.
 */
export function tlsOptions(f: Record<string, string | undefined>, env: NodeJS.ProcessEnv): Pick<ServeOptions, 'tls' | 'grpcReflection'> {
  const out: Pick<ServeOptions, 'tls' | 'grpcReflection'> = {};
  const reflection = f['grpc-reflection'] ?? set(env.RATEKEEPER_GRPC_REFLECTION);
  if (reflection !== undefined) {
    if (/^(on|true|1|yes)$/i.test(reflection)) out.grpcReflection = true;
    else if (/^(off|false|0|no)$/i.test(reflection)) out.grpcReflection = false;
    else throw new ServeUsageError(`--grpc-reflection must be on or off, got ${show(reflection)}`);
  }
  const envoyTls = goBool(set(env.GRPC_SERVER_USE_TLS), 'GRPC_SERVER_USE_TLS') === true;
  const flag = (name: string): Found => {
    const v = nonEmpty(f[name], `--${name}`);
    return v === undefined ? undefined : { value: v, from: `--${name}` };
  };
  const variable = (name: string, when = true): Found => {
    const v = when ? set(env[name]) : undefined;
    return v === undefined ? undefined : { value: v, from: name };
  };
  const ENVOY = { cert: 'GRPC_SERVER_TLS_CERT', key: 'GRPC_SERVER_TLS_KEY', 'client-ca': 'GRPC_CLIENT_TLS_CACERT', 'client-san': 'GRPC_CLIENT_TLS_SAN' } as const;
  const SHARED = { cert: 'RATEKEEPER_TLS_CERT', key: 'RATEKEEPER_TLS_KEY', 'client-ca': 'RATEKEEPER_TLS_CLIENT_CA', 'client-san': 'RATEKEEPER_TLS_CLIENT_SAN' } as const;
  /** levels — where `part` of listener `l` is looked for, in order. */
  const levels = (l: typeof TLS_LISTENERS[number], part: typeof TLS_PARTS[number]): (() => Found)[] => [
    () => flag(`${l}-tls-${part}`),
    () => (l === 'grpc' ? variable(ENVOY[part], envoyTls) : undefined),
    () => flag(`tls-${part}`),
    () => variable(SHARED[part]),
  ];
  const first = (l: typeof TLS_LISTENERS[number], part: typeof TLS_PARTS[number]): [Found, number] => {
    const ls = levels(l, part);
    for (let i = 0; i < ls.length; i++) {
      const v = ls[i]();
      if (v !== undefined) return [v, i];
    }
    return [undefined, -1];
  };
  const tls: NonNullable<ServeOptions['tls']> = {};
  for (const l of TLS_LISTENERS) {
    const [cert, at] = first(l, 'cert');
    // envoyproxy/ratelimit refuses to start with GRPC_SERVER_USE_TLS and no certificate (its CertProvider panics)
    if (envoyTls && l === 'grpc' && cert === undefined) throw new ServeUsageError('GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (or --grpc-tls-cert and --grpc-tls-key)');
    const [key, keyAt] = first(l, 'key');
    if (key !== undefined && (cert === undefined || keyAt < at)) {
      const wanted = keyAt === 1 ? ENVOY.cert : keyAt === 3 ? SHARED.cert : key.from.replace(/key$/, 'cert');
      throw new ServeUsageError(`${key.from} needs its certificate: ${wanted} FILE`);
    }
    if (cert === undefined || OFF.test(cert.value)) {
      const ownCa = flag(`${l}-tls-client-ca`) ?? flag(`${l}-tls-client-san`);
      if (cert === undefined && ownCa !== undefined && !OFF.test(ownCa.value)) throw new ServeUsageError(`${ownCa.from} needs the listener's certificate: --${l}-tls-cert FILE and --${l}-tls-key FILE`);
      continue;
    }
    const keyHere = levels(l, 'key')[at]();
    if (keyHere === undefined) throw new ServeUsageError(`${cert.from} needs its private key: ${at === 1 ? ENVOY.key : at === 3 ? SHARED.key : cert.from.replace(/cert$/, 'key')} FILE`);
    const files: TlsFiles = { cert: cert.value, key: keyHere.value, flags: { cert: cert.from, key: keyHere.from } };
    const [ca] = first(l, 'client-ca');
    if (ca !== undefined && !OFF.test(ca.value)) {
      files.clientCa = ca.value;
      files.flags!.clientCa = ca.from;
    }
    const [san] = first(l, 'client-san');
    if (san !== undefined && !OFF.test(san.value)) {
      if (files.clientCa === undefined) throw new ServeUsageError(`${san.from} checks client certificates: give the listener a client CA too (--${l}-tls-client-ca FILE or --tls-client-ca FILE)`);
      files.clientSan = san.value;
    }
    tls[l] = files;
  }
  if (Object.keys(tls).length > 0) out.tls = tls;
  else {
    const shared = flag('tls-client-ca') ?? flag('tls-client-san') ?? variable(SHARED['client-ca']) ?? variable(SHARED['client-san']);
    if (shared !== undefined) throw new ServeUsageError(`${shared.from} needs a certificate: --tls-cert FILE and --tls-key FILE`);
  }
  return out;
}
