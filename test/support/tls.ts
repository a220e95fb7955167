/**
 * test/support/tls — the fixed set of certificates the Redis TLS tests use, as file paths, made with
 * test/support/certs.ts (openssl, a temporary directory, never committed): a CA, a server certificate for 127.0.0.1
 * and localhost, a client certificate, a certificate of the CA for another name only, and a second CA that signed
 * nothing here (a wrong CA, for refusals).
 */
import { makeCerts as makeAuthority } from './certs.js';

/** Certs — paths of PEM files. */
export interface Certs {
  dir: string;
  ca: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** otherCa — a CA that signed none of these. */
  otherCa: string;
  /** elsewhereCert, elsewhereKey — a server certificate signed by the CA for another name (elsewhere.example) only. */
  elsewhereCert: string;
  elsewhereKey: string;
}

/** makeCerts — a fresh set (EC P-256 keys: fast to make). */
export function makeCerts(): Certs {
  const a = makeAuthority();
  const server = a.leaf('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  const client = a.leaf('client', 'extendedKeyUsage=clientAuth\n');
  const elsewhere = a.leaf('elsewhere', 'subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth\n');
  return {
    dir: a.dir, ca: a.ca.cert, caKey: a.ca.key, serverCert: server.cert, serverKey: server.key,
    clientCert: client.cert, clientKey: client.key, otherCa: a.otherCa.cert,
    elsewhereCert: elsewhere.cert, elsewhereKey: elsewhere.key,
  };
}
