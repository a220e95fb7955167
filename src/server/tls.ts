/**
 * server/tls — TLS on the service's listeners: a listener's PEM files (certificate chain, private key, and for mTLS
 * the client CA) read and checked into the material a secure context is made of, and re-read when the files change
 * (Kubernetes rotates a Secret by swapping the `..data` symlink of its mounted directory). A new certificate serves
 * new connections from the moment it is read; open connections keep the one they were made with. A rotated file
 * that is unreadable or does not make a certificate with its key keeps the previous material, and says why.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { checkServerIdentity, createSecureContext, type TLSSocket } from 'node:tls';
import { RatekeeperError } from '../core/errors.js';
import { signature } from './reload.js';

/** TlsFiles — one listener's TLS, as files: PEM (DER also reads for the certificate). */
export interface TlsFiles {
  /** cert — the server's certificate chain (its certificate first, then intermediates). */
  cert: string;
  /** key — the certificate's private key (unencrypted). */
  key: string;
  /**
   * clientCa — mTLS: clients must present a certificate signed by one of this file's CA certificates; a client
   * without one is refused at the handshake. Only these CAs (not the system's roots) are trusted. Absent: no client
   * certificate is asked for.
   */
  clientCa?: string;
  /**
   * clientSan — mTLS: the client's certificate must also name this DNS name (or IP address) in its subjectAltName,
   * as envoyproxy/ratelimit's GRPC_CLIENT_TLS_SAN; checked right after the handshake, a mismatch closes the
   * connection before any request is read.
   */
  clientSan?: string;
  /** flags — the flags (or environment variables) these files came from, named in errors. @default tls.cert, … */
  flags?: { cert?: string; key?: string; clientCa?: string };
}

/** TlsMaterial — what a secure context is made of, read from TlsFiles, and what identifies the certificate. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  /** ca — the client CAs (mTLS), or undefined. */
  ca: Buffer | undefined;
  /** serial — the leaf certificate's serial number (hex), fingerprint — its SHA-256 fingerprint, validTo — its end. */
  serial: string;
  fingerprint: string;
  subject: string;
  validTo: string;
  /** validFrom — the leaf certificate's start (its text, as validTo's). */
  validFrom: string;
}

/**
 * outOfDate — why a certificate is not valid at `now` (ms since the epoch): expired, or not valid yet; undefined
 * when it is. A client refuses such a certificate at every handshake.
 */
export function outOfDate(m: TlsMaterial, now = Date.now()): string | undefined {
  if (Date.parse(m.validTo) < now) return `it expired on ${m.validTo}`;
  if (Date.parse(m.validFrom) > now) return `it is not valid before ${m.validFrom}`;
  return undefined;
}

/** PEM_CERT — one PEM certificate block. */
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function label(files: TlsFiles, which: 'cert' | 'key' | 'clientCa'): string {
  const flag = files.flags?.[which] ?? `tls.${which}`;
  return `${flag} ${files[which]!}`;
}

async function read(files: TlsFiles, which: 'cert' | 'key' | 'clientCa'): Promise<Buffer> {
  try {
    return await readFile(files[which]!);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new RatekeeperError(`serve: ${label(files, which)}: cannot read it${code === undefined ? '' : ` [${code}]`}: ${(e as Error).message}`);
  }
}

/**
 * readTls — the listener's files read and checked: the certificate parses, the key parses and is the certificate's,
 * every client CA parses, and node makes a secure context of them. Throws a RatekeeperError naming the flag and the
 * file: `serve: --grpc-tls-key /certs/tls.key does not match the certificate of --grpc-tls-cert /certs/tls.crt`.
 */
export async function readTls(files: TlsFiles): Promise<TlsMaterial> {
  const [cert, key, ca] = await Promise.all([read(files, 'cert'), read(files, 'key'), files.clientCa === undefined ? undefined : read(files, 'clientCa')]);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (e) {
    throw new RatekeeperError(`serve: ${label(files, 'cert')}: is not a certificate (PEM or DER): ${(e as Error).message}`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    throw new RatekeeperError(`serve: ${label(files, 'key')}: is not an unencrypted private key (PEM or DER): ${(e as Error).message}`);
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new RatekeeperError(`serve: ${label(files, 'key')} does not match the certificate of ${label(files, 'cert')} (${leaf.subject.replace(/\n/g, ', ')})`);
  }
  if (ca !== undefined) {
    const blocks = ca.toString('latin1').match(PEM_CERT) ?? [];
    if (blocks.length === 0) throw new RatekeeperError(`serve: ${label(files, 'clientCa')}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    for (const [i, b] of blocks.entries()) {
      try {
        new X509Certificate(b); // eslint-disable-line no-new
      } catch (e) {
        throw new RatekeeperError(`serve: ${label(files, 'clientCa')}: certificate ${i + 1} does not parse: ${(e as Error).message}`);
      }
    }
  }
  try {
    createSecureContext({ cert, key, ca });
  } catch (e) {
    throw new RatekeeperError(`serve: ${label(files, 'cert')} with ${label(files, 'key')}: node cannot make a TLS context of them: ${(e as Error).message}`);
  }
  return { cert, key, ca, serial: leaf.serialNumber, fingerprint: leaf.fingerprint256, subject: leaf.subject.replace(/\n/g, ', '), validTo: leaf.validTo, validFrom: leaf.validFrom };
}

/** describeCert — one line naming a certificate for the logs. */
export function describeCert(m: TlsMaterial): string {
  return `${m.subject}, serial ${m.serial}, valid until ${m.validTo}, sha256 ${m.fingerprint.slice(0, 23)}…`;
}

/**
 * secureOptions — the options of a node TLS server (https, http2) for the material: the context, plus the client
 * certificate demanded and verified when there is a client CA (a client without one is refused at the handshake).
 */
export function secureOptions(m: TlsMaterial): { cert: Buffer; key: Buffer; ca?: Buffer; requestCert: boolean; rejectUnauthorized: boolean } {
  const mtls = m.ca !== undefined;
  return { ...contextOptions(m), requestCert: mtls, rejectUnauthorized: mtls };
}

/** contextOptions — the material as secure context options (what `server.setSecureContext` takes). */
export function contextOptions(m: TlsMaterial): { cert: Buffer; key: Buffer; ca?: Buffer } {
  return m.ca === undefined ? { cert: m.cert, key: m.key } : { cert: m.cert, key: m.key, ca: m.ca };
}

/**
 * sanCheck — a 'secureConnection' listener that closes a connection whose client certificate does not name `san`
 * (DNS or IP subjectAltName, wildcards as in server names). Prepend it, so it runs before the server reads the
 * connection.
 */
export function sanCheck(san: string): (socket: TLSSocket) => void {
  return (socket) => {
    const cert = socket.getPeerCertificate();
    if (cert === null || Object.keys(cert).length === 0 || checkServerIdentity(san, cert) !== undefined) socket.destroy();
  };
}

/** TlsWatchOptions — how often the files are looked at and how long a change must settle. */
export interface TlsWatchOptions {
  /** pollMs — how often the files' signatures are read (a stat per file). @default 1000 */
  pollMs?: number;
  /** quietMs — a change is read once the files stayed unchanged this long (a cert and key copied one after the other). @default 300 */
  quietMs?: number;
  log: (line: string) => void;
}

/**
 * TlsSource — one listener's material, kept current: the files are looked at every `pollMs` (their real path, size,
 * mtime, ctime and inode, so a symlink swap shows), a change is read once it has settled, and each good read is
 * handed to the listeners of `onChange`. A bad read is logged and the material in force stays. `close()` stops it;
 * the timer never keeps the process alive.
 */
export class TlsSource {
  /** current — the material in force (the latest good read). */
  current: TlsMaterial;
  /** reloads — good reads since the start; failures — bad ones (each logged). */
  reloads = 0;
  failures = 0;
  private readonly listeners: ((m: TlsMaterial) => void)[] = [];
  /** last — the files' signature as last read (good or bad): a bad read is retried only once the files change again. */
  private last = '';
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private closed = false;

  private constructor(readonly name: string, readonly files: TlsFiles, initial: TlsMaterial, private readonly options: TlsWatchOptions) {
    this.current = initial;
  }

  /** open — reads the files (throws, naming the flag, when they are bad) and starts watching them. */
  static async open(name: string, files: TlsFiles, options: TlsWatchOptions): Promise<TlsSource> {
    const sig = await filesSignature(files).catch(() => '');
    const s = new TlsSource(name, files, await readTls(files), options);
    s.last = sig;
    const stale = outOfDate(s.current);
    if (stale !== undefined) options.log(`ratekeeper: tls: ${name}: warning: the certificate of ${label(files, 'cert')} is out of date (${stale}): clients will refuse it (${describeCert(s.current)})`);
    s.timer = setInterval(() => void s.look(), options.pollMs ?? 1000);
    s.timer.unref();
    return s;
  }

  /** onChange — `fn` is called with each newly read material (after the initial one). */
  onChange(fn: (m: TlsMaterial) => void): void {
    this.listeners.push(fn);
  }

  /** look — reads the files when their signature changed and has settled (one look at a time). */
  async look(): Promise<void> {
    if (this.busy || this.closed) return;
    this.busy = true;
    try {
      let sig = await filesSignature(this.files).catch(() => undefined);
      if (sig === undefined || sig === this.last) return;
      for (;;) {
        await new Promise<void>((resolve) => setTimeout(resolve, this.options.quietMs ?? 300).unref());
        if (this.closed) return;
        const again = await filesSignature(this.files).catch(() => undefined);
        if (again === undefined) return;
        if (again === sig) break;
        sig = again;
      }
      this.last = sig;
      let next: TlsMaterial;
      try {
        next = await readTls(this.files);
      } catch (e) {
        this.failures++;
        this.options.log(`ratekeeper: tls: ${this.name}: the changed files are not usable, the previous certificate keeps serving (${describeCert(this.current)}): ${(e as Error).message.replace(/^serve: /, '')}`);
        return;
      }
      if (next.cert.equals(this.current.cert) && next.key.equals(this.current.key) && sameCa(next.ca, this.current.ca)) return;
      // a certificate clients would refuse replaces one they accept: not put in force (one they refuse already is replaced)
      const stale = outOfDate(next);
      if (stale !== undefined && outOfDate(this.current) === undefined) {
        this.failures++;
        this.options.log(`ratekeeper: tls: ${this.name}: the new certificate of ${label(this.files, 'cert')} is out of date (${stale}), the previous certificate keeps serving (${describeCert(this.current)})`);
        return;
      }
      this.current = next;
      this.reloads++;
      for (const fn of this.listeners) {
        try {
          fn(next);
        } catch (e) {
          this.failures++;
          this.options.log(`ratekeeper: tls: ${this.name}: the new certificate could not be put in force: ${(e as Error).message}`);
          return;
        }
      }
      this.options.log(`ratekeeper: tls: ${this.name}: new connections get the certificate ${describeCert(next)}${next.ca === undefined ? '' : ' (client CA re-read)'}`);
    } finally {
      this.busy = false;
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
  }
}

function sameCa(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

/**
 * filesSignature — the signatures of the files (reload.ts's: real path, size, mtime, ctime, inode, mode); a file that
 * cannot be looked at (deleted, its directory gone) signs as such, so that it is a change like any other: read once,
 * its error logged, the previous certificate kept.
 */
async function filesSignature(files: TlsFiles): Promise<string> {
  const parts = await Promise.all([files.cert, files.key, files.clientCa].map((p) => (p === undefined ? '' : signature(p).catch((e: NodeJS.ErrnoException) => `unreadable ${p} ${e.code ?? e.message}`))));
  return parts.join('\n');
}
