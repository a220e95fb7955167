/**
 * test/support/tls — certificates for TLS tests, made by openssl in a temporary directory (never committed): a CA, a
 * server certificate signed by it for 127.0.0.1 and localhost, a client certificate signed by it, and a second CA
 * that signed nothing here (a wrong CA, for refusals). Files only: paths to PEM files.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

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

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** makeCerts — a fresh set (EC P-256 keys: fast to make), valid for a day. */
export function makeCerts(): Certs {
  const dir = tempDir('rk-certs-');
  const p = (f: string): string => join(dir, f);
  const key = (f: string): void => openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', f], dir);
  const ca = (name: string, subject: string): void => {
    key(`${name}.key`);
    openssl(['req', '-x509', '-new', '-key', `${name}.key`, '-subj', subject, '-days', '1', '-out', `${name}.crt`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  };
  ca('ca', '/CN=ratekeeper test CA');
  ca('other-ca', '/CN=another CA');
  const leaf = (name: string, cn: string, ext: string): void => {
    key(`${name}.key`);
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], dir);
    writeFileSync(p(`${name}.ext`), ext);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-out', `${name}.crt`, '-extfile', `${name}.ext`], dir);
  };
  leaf('server', 'localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  leaf('client', 'ratekeeper client', 'extendedKeyUsage=clientAuth\n');
  leaf('elsewhere', 'elsewhere.example', 'subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth\n');
  return {
    dir, ca: p('ca.crt'), caKey: p('ca.key'), serverCert: p('server.crt'), serverKey: p('server.key'),
    clientCert: p('client.crt'), clientKey: p('client.key'), otherCa: p('other-ca.crt'),
    elsewhereCert: p('elsewhere.crt'), elsewhereKey: p('elsewhere.key'),
  };
}
