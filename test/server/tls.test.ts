/**
 * TLS and mTLS on the service's three listeners, with real clients on loopback and certificates made by openssl:
 * HTTPS, gRPC over TLS and the admin over HTTPS; mTLS refusing a client without a certificate or with one of another
 * CA at the handshake, and one whose certificate does not name the required SAN; the certificate re-read after a
 * Kubernetes-style symlink swap (new connections see the new serial, the open ones keep working on the old), a bad
 * rotated file keeping the previous certificate; a bad file at startup naming its flag; the flags and
 * envoyproxy/ratelimit's variables.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import * as https from 'node:https';
import * as tls from 'node:tls';
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { startService, type ServeOptions } from '../../src/server/serve.js';
import { serveOptions, ServeUsageError } from '../../src/server/cli.js';
import { rlsClient } from '../../src/server/grpc.js';
import type { RlsRequest, RlsResponse } from '../../src/server/rls.js';
import { configFile } from './support.js';
import { run } from './procs.js';
import { makeCerts, type Certs, type Pem } from '../support/certs.js';
import { tempDir } from '../support/tmp.js';

const CONFIG = `
domain: tls
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1000 }
`;
const REQ: RlsRequest = { domain: 'tls', descriptors: [{ entries: [{ key: 'user', value: 'u1' }] }] } as RlsRequest;

let certs: Certs;
let serverA: Pem;
let serverB: Pem;
let goodClient: Pem;
let otherClient: Pem;
let wrongSanClient: Pem;

before(() => {
  certs = makeCerts();
  serverA = certs.server('server-a', 'a1a1');
  serverB = certs.server('server-b', 'b2b2');
  goodClient = certs.client('client-good', 'envoy.internal');
  otherClient = certs.client('client-other', 'envoy.internal', certs.otherCa);
  wrongSanClient = certs.client('client-wrong-san', 'someone.else');
});

/** serial — a certificate's serial as node reports it (upper-case hex, even length). */
function serial(hex: string): string {
  const s = hex.toUpperCase();
  return s.length % 2 === 1 ? `0${s}` : s;
}

/** Answer — an HTTPS answer and the serial of the certificate of the connection it came on. */
interface Answer {
  status: number;
  body: string;
  serial: string;
  reused: boolean;
}

/** get — one HTTPS request to 127.0.0.1:port trusting the test CA; `client` presents a client certificate. */
function get(port: number, path: string, options: { agent?: https.Agent | false; client?: Pem; method?: string; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port, path, method: options.method ?? 'GET', agent: options.agent ?? false, ca: certs.ca.certPem,
      cert: options.client?.certPem, key: options.client?.keyPem, servername: 'localhost',
      headers: options.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(options.body) },
    }, (res) => {
      // read now: a kept-alive socket goes back to its agent (res.socket null) once the answer has ended
      const got = (res.socket as tls.TLSSocket).getPeerCertificate().serialNumber;
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => (body += s));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial: got, reused: req.reusedSocket }));
      res.on('error', reject);
    });
    req.setTimeout(5000, () => req.destroy(new Error('client timeout')));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Rls — a gRPC client over TLS that records the serial of every server certificate it verifies (one per handshake). */
interface Rls {
  call(): Promise<RlsResponse>;
  serials: string[];
  close(): void;
}

function rlsTls(port: number, client?: Pem): Rls {
  const serials: string[] = [];
  const creds = grpc.credentials.createSsl(certs.ca.certPem, client?.keyPem ?? null, client?.certPem ?? null, {
    checkServerIdentity: (host, cert) => {
      serials.push(cert.serialNumber);
      return tls.checkServerIdentity(host, cert);
    },
  });
  const Client = rlsClient();
  const c = new Client(`127.0.0.1:${port}`, creds, { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' }) as unknown as grpc.Client & {
    ShouldRateLimit(req: RlsRequest, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: RlsResponse) => void): void;
  };
  return {
    serials,
    call: () => new Promise((resolve, reject) => c.ShouldRateLimit(REQ, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (e, r) => (e ? reject(e) : resolve(r)))),
    close: () => c.close(),
  };
}

/** handshake — a bare TLS connection: resolves with the server certificate's serial once the server has accepted us. */
function handshake(port: number, client?: Pem): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, ca: certs.ca.certPem, servername: 'localhost', cert: client?.certPem, key: client?.keyPem, ALPNProtocols: ['http/1.1'] }, () => {
      const got = s.getPeerCertificate().serialNumber;
      // TLS 1.3: the server verifies the client's certificate after the client's handshake ends; its refusal arrives as an alert
      s.write('GET /healthcheck HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      let text = '';
      s.setEncoding('utf8').on('data', (d: string) => (text += d));
      s.on('end', () => (text.startsWith('HTTP/1.1 ') ? resolve(got) : reject(new Error(`refused: ${text.slice(0, 40) || 'closed without an answer'}`))));
    });
    s.setTimeout(5000, () => s.destroy(new Error('client timeout')));
    s.on('error', reject);
  });
}

/** k8sSecret — a directory laid out as Kubernetes mounts a Secret: tls.crt → ..data/tls.crt, ..data → ..<version>. */
function k8sSecret(pem: Pem, ca: Pem): { dir: string; rotate(next: { certPem: Buffer; keyPem: Buffer }): void } {
  const dir = tempDir('rk-secret-');
  let version = 0;
  const write = (p: { certPem: Buffer; keyPem: Buffer }): string => {
    const name = `..2026_11_25_00_00_0${version++}`;
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'tls.crt'), p.certPem);
    writeFileSync(join(dir, name, 'tls.key'), p.keyPem);
    writeFileSync(join(dir, name, 'ca.crt'), ca.certPem);
    return name;
  };
  let current = write(pem);
  symlinkSync(current, join(dir, '..data'));
  for (const f of ['tls.crt', 'tls.key', 'ca.crt']) symlinkSync(join('..data', f), join(dir, f));
  return {
    dir,
    // what the kubelet does: the new version beside the old, a new ..data link renamed over the old one, the old removed
    rotate: (next) => {
      const old = current;
      current = write(next);
      symlinkSync(current, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, old), { recursive: true, force: true });
    },
  };
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const end = performance.now() + ms;
  let last: unknown;
  for (let i = 0; i < 200 && performance.now() < end; i++) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not happen within ${ms} ms${last === undefined ? '' : `: ${String(last)}`}`);
}

const base = { port: 0, grpcPort: 0, adminPort: 0, tlsPollMs: 100, tlsQuietMs: 100 } as const;

test('TLS on all three listeners: HTTPS, gRPC over TLS and the admin over HTTPS serve with the certificate; plain text is refused', { timeout: 30_000 }, async () => {
  const logs: string[] = [];
  const files = { cert: serverA.cert, key: serverA.key };
  const s = await startService({ ...base, config: configFile(CONFIG), tls: { http: files, grpc: files, admin: files }, log: (l) => logs.push(l) });
  try {
    assert.ok(s.adminUrl?.startsWith('https://'), s.adminUrl);
    const check = await get(s.httpPort!, '/json', { method: 'POST', body: JSON.stringify(REQ) });
    assert.equal(check.status, 200, check.body);
    assert.equal(check.serial, serial('a1a1'));
    const health = await get(s.httpPort!, '/healthcheck');
    assert.equal(health.status, 200);
    const admin = await get(Number(new URL(s.adminUrl!).port), '/admin/top');
    assert.equal(admin.status, 200, admin.body);
    assert.equal(admin.serial, serial('a1a1'));
    const rls = rlsTls(s.grpcPort!);
    try {
      assert.equal((await rls.call()).overall_code, 'OK');
      assert.deepEqual(rls.serials, [serial('a1a1')]);
    } finally {
      rls.close();
    }
    // a plain-text client gets no answer from a TLS listener
    const plain = await fetch(`http://127.0.0.1:${s.httpPort}/healthcheck`).then((r) => r.status, (e: Error) => e.message);
    assert.equal(typeof plain, 'string', `a plain HTTP request was answered ${plain}`);
    assert.ok(logs.some((l) => /http listening on 127\.0\.0\.1:\d+ with TLS \(CN=server-a, serial A1A1/.test(l)), logs.join('\n'));
    assert.ok(logs.some((l) => /grpc listening on 127\.0\.0\.1:\d+ with TLS/.test(l)), logs.join('\n'));
  } finally {
    await s.close();
  }
});

test('mTLS: a client without a certificate, or with one of another CA, is refused at the handshake; one of the CA passes; --tls-client-san refuses other names', { timeout: 30_000 }, async () => {
  const files = { cert: serverA.cert, key: serverA.key, clientCa: certs.ca.cert };
  const named = { ...files, clientSan: 'envoy.internal' };
  const s = await startService({ ...base, config: configFile(CONFIG), tls: { http: files, grpc: named, admin: named } });
  try {
    // HTTP: the CA's client passes; no certificate or another CA's is refused by the TLS layer (no HTTP answer)
    assert.equal(await handshake(s.httpPort!, goodClient), serial('a1a1'));
    await assert.rejects(handshake(s.httpPort!), /certificate required|refused|ECONNRESET|alert/i);
    await assert.rejects(handshake(s.httpPort!, otherClient), /unknown ca|refused|ECONNRESET|alert/i);
    // the admin listener with a SAN: the CA's certificate naming envoy.internal passes, the one naming someone else not
    const adminPort = Number(new URL(s.adminUrl!).port);
    assert.equal(await handshake(adminPort, goodClient), serial('a1a1'));
    await assert.rejects(handshake(adminPort, wrongSanClient), /refused|ECONNRESET/i);
    assert.equal(await handshake(s.httpPort!, wrongSanClient), serial('a1a1'), 'no SAN asked on HTTP');
    // gRPC: the same, plus the SAN: a certificate of the CA that names someone else is refused too
    const calls: [Pem | undefined, boolean][] = [[goodClient, true], [undefined, false], [otherClient, false], [wrongSanClient, false]];
    for (const [client, ok] of calls) {
      const rls = rlsTls(s.grpcPort!, client);
      try {
        if (ok) assert.equal((await rls.call()).overall_code, 'OK');
        else await assert.rejects(rls.call(), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE, `client ${client?.cert ?? 'without a certificate'}`);
      } finally {
        rls.close();
      }
    }
  } finally {
    await s.close();
  }
});

test('rotation: after a Kubernetes symlink swap new connections get the new certificate, open ones keep working; a bad new file keeps it', { timeout: 30_000 }, async () => {
  const secret = k8sSecret(serverA, certs.ca);
  const files = { cert: join(secret.dir, 'tls.crt'), key: join(secret.dir, 'tls.key') };
  const logs: string[] = [];
  const s = await startService({ ...base, config: configFile(CONFIG), tls: { http: files, grpc: files, admin: files }, log: (l) => logs.push(l) });
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  const old = rlsTls(s.grpcPort!);
  const adminPort = Number(new URL(s.adminUrl!).port);
  try {
    // one kept-alive HTTPS connection and one gRPC channel, made with certificate A
    assert.equal((await get(s.httpPort!, '/healthcheck', { agent })).serial, serial('a1a1'));
    await old.call();
    assert.deepEqual(old.serials, [serial('a1a1')]);

    secret.rotate(serverB);
    // new connections on every listener get B within the poll and the quiet time (100 + 100 ms here)
    await until('the HTTP listener serving B', 5000, async () => ((await get(s.httpPort!, '/healthcheck')).serial === serial('b2b2') ? true : undefined));
    await until('the admin listener serving B', 5000, async () => ((await get(adminPort, '/admin/top')).serial === serial('b2b2') ? true : undefined));
    const fresh = rlsTls(s.grpcPort!);
    try {
      await until('the gRPC listener serving B', 5000, async () => {
        const c = rlsTls(s.grpcPort!);
        try {
          await c.call();
          return c.serials[0] === serial('b2b2') ? true : undefined;
        } finally {
          c.close();
        }
      });
      await fresh.call();
      assert.deepEqual(fresh.serials, [serial('b2b2')]);
    } finally {
      fresh.close();
    }
    // the connections opened before the swap still answer, on their old handshake
    const again = await get(s.httpPort!, '/healthcheck', { agent });
    assert.equal(again.status, 200);
    assert.equal(again.reused, true, 'the kept-alive connection was closed by the rotation');
    assert.equal(again.serial, serial('a1a1'));
    assert.equal((await old.call()).overall_code, 'OK');
    assert.deepEqual(old.serials, [serial('a1a1')], 'the old gRPC channel had to reconnect');
    assert.ok(logs.some((l) => /tls: the http listener: new connections get the certificate CN=server-b, serial B2B2/.test(l)), logs.join('\n'));

    // a rotation to a key that is not the certificate's: logged, and B keeps serving
    const before = s.tls.http!.failures;
    secret.rotate({ certPem: serverA.certPem, keyPem: serverB.keyPem });
    await until('the bad rotation logged', 5000, async () => (s.tls.http!.failures > before ? true : undefined));
    assert.ok(logs.some((l) => /tls: the http listener: the changed files are not usable, the previous certificate keeps serving \(CN=server-b.*does not match the certificate/.test(l)), logs.join('\n'));
    assert.equal((await get(s.httpPort!, '/healthcheck')).serial, serial('b2b2'));
    const after = rlsTls(s.grpcPort!);
    try {
      await after.call();
      assert.deepEqual(after.serials, [serial('b2b2')]);
    } finally {
      after.close();
    }
  } finally {
    agent.destroy();
    old.close();
    await s.close();
  }
});

test('mTLS: an expired client certificate of the trusted CA is refused on every listener, the admin too', { timeout: 30_000 }, async () => {
  const dir = tempDir('rk-expired-');
  writeFileSync(join(dir, 'ext'), 'extendedKeyUsage=clientAuth\nsubjectAltName=DNS:envoy.internal\n');
  execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'c.key', '-out', 'c.csr', '-subj', '/CN=expired'], { cwd: dir, stdio: 'ignore' });
  execFileSync('openssl', ['x509', '-req', '-in', 'c.csr', '-CA', certs.ca.cert, '-CAkey', certs.ca.key, '-set_serial', '0x7e7e', '-days', '-1', '-out', 'c.crt', '-extfile', 'ext'], { cwd: dir, stdio: 'ignore' });
  const expired: Pem = { cert: join(dir, 'c.crt'), key: join(dir, 'c.key'), certPem: readFileSync(join(dir, 'c.crt')), keyPem: readFileSync(join(dir, 'c.key')) };
  const files = { cert: serverA.cert, key: serverA.key, clientCa: certs.ca.cert };
  const s = await startService({ ...base, config: configFile(CONFIG), tls: { http: files, grpc: files, admin: files } });
  try {
    const adminPort = Number(new URL(s.adminUrl!).port);
    for (const port of [s.httpPort!, adminPort]) {
      assert.equal(await handshake(port, goodClient), serial('a1a1'));
      await assert.rejects(handshake(port, expired), /expired|refused|ECONNRESET|alert/i, `port ${port}`);
    }
    const rls = rlsTls(s.grpcPort!, expired);
    try {
      await assert.rejects(rls.call(), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
    } finally {
      rls.close();
    }
  } finally {
    await s.close();
  }
});

/** serveFromFiles — the service with its HTTP listener on certificate A, from plain files in a new directory (flags named), its log kept. */
async function serveFromFiles(prefix: string) {
  const dir = tempDir(prefix);
  const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key'), flags: { cert: '--tls-cert', key: '--tls-key' } };
  writeFileSync(files.cert, serverA.certPem);
  writeFileSync(files.key, serverA.keyPem);
  const logs: string[] = [];
  const s = await startService({ ...base, config: configFile(CONFIG), tls: { http: files }, log: (l) => logs.push(l) });
  return { files, logs, s };
}

test('rotation: files deleted keep the certificate in force and say so once, naming the file; files put back are read', { timeout: 30_000 }, async () => {
  const { files, logs, s } = await serveFromFiles('rk-deleted-');
  try {
    rmSync(files.cert);
    rmSync(files.key);
    await until('the deletion logged', 5000, async () => (logs.some((l) => /tls: the http listener: the changed files are not usable, the previous certificate keeps serving \(CN=server-a.*--tls-(cert|key) .*tls\.(crt|key): cannot read it \[ENOENT\]/.test(l)) ? true : undefined));
    assert.equal((await get(s.httpPort!, '/healthcheck')).serial, serial('a1a1'));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(logs.filter((l) => /cannot read it \[ENOENT\]/.test(l)).length, 1, `said once:\n${logs.join('\n')}`);
    // a half-written certificate first: refused and logged, A keeps serving; then the whole one is read
    writeFileSync(files.key, serverB.keyPem);
    writeFileSync(files.cert, serverB.certPem.subarray(0, 100));
    await until('the half-written file logged', 5000, async () => (logs.some((l) => /--tls-cert .*tls\.crt: is not a certificate/.test(l)) ? true : undefined));
    assert.equal((await get(s.httpPort!, '/healthcheck')).serial, serial('a1a1'));
    writeFileSync(files.cert, serverB.certPem);
    await until('B in force', 5000, async () => ((await get(s.httpPort!, '/healthcheck')).serial === serial('b2b2') ? true : undefined));
  } finally {
    await s.close();
  }
});

test('rotation: an expired certificate is not put in force over a valid one (logged, naming the file and the date); started with one, a warning', { timeout: 30_000 }, async () => {
  const expired = certs.server('server-expired', 'e0e0', -1);
  const { files, logs, s } = await serveFromFiles('rk-expired-rotation-');
  try {
    writeFileSync(files.key, expired.keyPem);
    writeFileSync(files.cert, expired.certPem);
    await until('the expired rotation logged', 5000, async () => (logs.some((l) => /tls: the http listener: the new certificate of --tls-cert .*tls\.crt is out of date \(it expired on .*\), the previous certificate keeps serving \(CN=server-a/.test(l)) ? true : undefined));
    assert.equal((await get(s.httpPort!, '/healthcheck')).serial, serial('a1a1'), 'A kept');
    writeFileSync(files.key, serverB.keyPem);
    writeFileSync(files.cert, serverB.certPem);
    await until('B in force', 5000, async () => ((await get(s.httpPort!, '/healthcheck')).serial === serial('b2b2') ? true : undefined));
  } finally {
    await s.close();
  }
  const started: string[] = [];
  const t = await startService({ ...base, config: configFile(CONFIG), tls: { http: { cert: expired.cert, key: expired.key } }, log: (l) => started.push(l) });
  try {
    assert.ok(started.some((l) => /tls: the http listener: warning: the certificate of .*server-expired\.crt is out of date \(it expired on .*\): clients will refuse it/.test(l)), started.join('\n'));
  } finally {
    await t.close();
  }
});

test('a connection that never finishes its TLS handshake is closed after the request timeout, on every listener', { timeout: 30_000 }, async () => {
  const files = { cert: serverA.cert, key: serverA.key };
  const s = await startService({ ...base, requestTimeout: 400, config: configFile(CONFIG), tls: { http: files, grpc: files, admin: files }, log: () => undefined });
  try {
    const ports = [s.httpPort!, s.grpcPort!, Number(new URL(s.adminUrl!).port)];
    const held = await Promise.all(ports.map((port) => new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const c = connect({ host: '127.0.0.1', port }, () => c.write('\x16\x03\x01')); // the start of a ClientHello, then silence
      c.on('close', () => resolve(performance.now() - t0));
      c.on('error', () => undefined);
      setTimeout(() => {
        c.destroy();
        reject(new Error(`port ${port}: the silent handshake was still open after 5 s (node's default handshake timeout is 120 s)`));
      }, 5000).unref();
    })));
    for (const ms of held) assert.ok(ms >= 300 && ms < 3000, `held ${Math.round(ms)} ms`);
  } finally {
    await s.close();
  }
});

test('a bad certificate or key at startup is an error naming the flag and the file; the process exits 1', { timeout: 30_000 }, async () => {
  const dir = tempDir('rk-badtls-');
  const garbage = join(dir, 'garbage.pem');
  writeFileSync(garbage, 'not a certificate\n');
  const config = configFile(CONFIG);
  const common = ['serve', '--config', config, '--port', '0', '--grpc-port', '0', '--admin-port', 'off'];
  const bad = await run([...common, '--tls-cert', garbage, '--tls-key', serverA.key]);
  assert.equal(bad.code, 1, bad.stderr);
  assert.match(bad.stderr, /--tls-cert .*garbage\.pem: is not a certificate/);
  // the others in-process: the same options, the same startService
  const start = (argv: string[], env: NodeJS.ProcessEnv = {}) => startService({ ...(serveOptions(['--config', config, '--port', '0', '--grpc-port', '0', '--admin-port', 'off', ...argv], env) as ServeOptions), log: () => undefined });
  await assert.rejects(start(['--grpc-tls-cert', serverA.cert, '--grpc-tls-key', serverB.key]), /--grpc-tls-key .*server-b\.key does not match the certificate of --grpc-tls-cert .*server-a\.crt/);
  await assert.rejects(start(['--tls-cert', serverA.cert, '--tls-key', serverA.key, '--http-tls-client-ca', join(dir, 'nope.crt')]), /--http-tls-client-ca .*nope\.crt: cannot read it \[ENOENT\]/);
  await assert.rejects(start(['--tls-cert', serverA.cert, '--tls-key', garbage]), /--tls-key .*garbage\.pem: is not an unencrypted private key/);
  await assert.rejects(start(['--tls-cert', serverA.cert, '--tls-key', serverA.key, '--tls-client-ca', garbage]), /--tls-client-ca .*garbage\.pem: holds no PEM certificate/);
  await assert.rejects(start([], { GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: garbage, GRPC_SERVER_TLS_KEY: serverA.key }), /GRPC_SERVER_TLS_CERT .*garbage\.pem: is not a certificate/);
});

test('flags: --tls-* apply to every listener unless its own flags say otherwise; envoyproxy/ratelimit\'s variables set the gRPC listener', () => {
  const opts = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
    const o = serveOptions(['--config', 'c.yaml', ...argv], env);
    assert.notEqual(o, 'help');
    return (o as Exclude<typeof o, 'help'>).tls;
  };
  const all = opts(['--tls-cert', 'a.crt', '--tls-key', 'a.key', '--tls-client-ca', 'ca.crt', '--admin-tls-cert', 'off', '--grpc-tls-cert', 'g.crt', '--grpc-tls-key', 'g.key', '--http-tls-client-ca', 'off']);
  assert.deepEqual(all, {
    http: { cert: 'a.crt', key: 'a.key', flags: { cert: '--tls-cert', key: '--tls-key' } },
    grpc: { cert: 'g.crt', key: 'g.key', clientCa: 'ca.crt', flags: { cert: '--grpc-tls-cert', key: '--grpc-tls-key', clientCa: '--tls-client-ca' } },
  });
  const envoy = { GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: '/e/tls.crt', GRPC_SERVER_TLS_KEY: '/e/tls.key', GRPC_CLIENT_TLS_CACERT: '/e/ca.crt', GRPC_CLIENT_TLS_SAN: 'envoy.internal' };
  assert.deepEqual(opts([], envoy), {
    grpc: { cert: '/e/tls.crt', key: '/e/tls.key', clientCa: '/e/ca.crt', clientSan: 'envoy.internal', flags: { cert: 'GRPC_SERVER_TLS_CERT', key: 'GRPC_SERVER_TLS_KEY', clientCa: 'GRPC_CLIENT_TLS_CACERT' } },
  });
  // as in envoyproxy/ratelimit, the files are ignored without GRPC_SERVER_USE_TLS=true
  assert.equal(opts([], { ...envoy, GRPC_SERVER_USE_TLS: 'false' }), undefined);
  assert.equal(opts([], { ...envoy, GRPC_SERVER_USE_TLS: '' }), undefined);
  const refused: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [[], { GRPC_SERVER_USE_TLS: 'true' }, /GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY/],
    [[], { GRPC_SERVER_USE_TLS: 'yes please' }, /GRPC_SERVER_USE_TLS must be true or false, got "yes please"/],
    [['--tls-cert', 'a.crt'], {}, /--tls-cert needs its private key: --tls-key FILE/],
    [['--tls-cert', 'a.crt', '--tls-key', 'a.key', '--http-tls-key', 'h.key'], {}, /--http-tls-key needs its certificate: --http-tls-cert FILE/],
    [['--tls-client-ca', 'ca.crt'], {}, /--tls-client-ca needs a certificate: --tls-cert FILE and --tls-key FILE/],
    [['--tls-cert', 'a.crt', '--tls-key', 'a.key', '--tls-client-san', 'x'], {}, /--tls-client-san checks client certificates: give the listener a client CA too/],
    [['--grpc-tls-cert', ''], {}, /--grpc-tls-cert must not be empty/],
  ];
  for (const [argv, env, message] of refused) assert.throws(() => opts(argv, env), (e: Error) => e instanceof ServeUsageError && message.test(e.message), `${argv.join(' ')} ${JSON.stringify(env)}`);
});
