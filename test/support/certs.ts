/**
 * test/support/certs — certificates for the TLS tests, made by Debian's openssl in a temporary directory (never
 * committed): a CA, server certificates for 127.0.0.1 / localhost with chosen serial numbers, client certificates,
 * and a second CA whose client certificates the service must refuse. EC P-256 keys: each one takes milliseconds.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

/** Pem — a certificate and its key, as files and as bytes. */
export interface Pem {
  cert: string;
  key: string;
  certPem: Buffer;
  keyPem: Buffer;
}

/** Certs — a directory of certificates and the functions that make more. */
export interface Certs {
  dir: string;
  /** ca — the CA that signs the servers' and the accepted clients' certificates. */
  ca: Pem;
  /** otherCa — a CA the service does not trust. */
  otherCa: Pem;
  /** server — a server certificate for 127.0.0.1 and localhost with serial `serial` (hex digits), valid `days` from now (-1: expired yesterday). */
  server(name: string, serial: string, days?: number): Pem;
  /** client — a client certificate signed by `by` (default: ca) naming `san` (a DNS subjectAltName). */
  client(name: string, san: string, by?: Pem): Pem;
  /** leaf — any certificate signed by the CA, with its extensions as openssl's -extfile text. */
  leaf(name: string, ext: string): Pem;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function pem(dir: string, name: string): Pem {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  return { cert, key, certPem: readFileSync(cert), keyPem: readFileSync(key) };
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string): Pem {
  openssl(['req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`], dir);
  return pem(dir, name);
}

function signed(dir: string, name: string, by: Pem, serial: string, ext: string, days = 2): Pem {
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', by.cert, '-CAkey', by.key, '-set_serial', `0x${serial}`, '-days', String(days), '-out', `${name}.crt`, '-extfile', `${name}.ext`], dir);
  return pem(dir, name);
}

let serials = 0x5000;

/** makeCerts — a new directory with a CA and an untrusted CA. */
export function makeCerts(): Certs {
  const dir = tempDir('rk-certs-');
  const ca = makeCa(dir, 'rk-test-ca');
  const otherCa = makeCa(dir, 'rk-other-ca');
  return {
    dir, ca, otherCa,
    server: (name, serial, days) => signed(dir, name, ca, serial, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n', days),
    client: (name, san, by = ca) => signed(dir, name, by, (serials++).toString(16), `subjectAltName=DNS:${san}\nextendedKeyUsage=clientAuth\n`),
    leaf: (name, ext) => signed(dir, name, ca, (serials++).toString(16), ext),
  };
}
