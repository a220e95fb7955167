/**
 * server/probeGrpc — `ratekeeper health` against the gRPC listener: one `grpc.health.v1.Health/Check` call (the
 * same call Kubernetes' gRPC probes and grpc_health_probe make), healthy on SERVING. grpc-js is loaded only here
 * (an optional peer of the service); the two one-field messages are written and read by hand rather than loading a
 * .proto for them. TLS: the listener's certificate is not checked (the probe asks whether this process answers on
 * its own port, not who it is); a client certificate is sent where the listener asks for one (mTLS).
 */
import { readFileSync } from 'node:fs';

/** STATUS — grpc.health.v1.HealthCheckResponse.ServingStatus by number. */
const STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** request — HealthCheckRequest { string service = 1 } on the wire (empty for the server's overall status). */
function request(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  if (name.length === 0) return Buffer.alloc(0);
  const len: number[] = [];
  for (let n = name.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([0x0a, ...len]), name]);
}

/** status — HealthCheckResponse's field 1 (a varint); 0 (UNKNOWN) when absent, as proto3 reads it. */
function status(b: Buffer): number {
  let i = 0;
  const varint = (): number => {
    let v = 0;
    for (let shift = 0; i < b.length && shift < 35; shift += 7) {
      const byte = b[i++];
      v += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return v;
    }
    throw new Error('a malformed HealthCheckResponse');
  };
  let found = 0;
  while (i < b.length) {
    const tag = varint();
    if (tag === 0x08) found = varint();
    else if ((tag & 7) === 0) varint();
    else if ((tag & 7) === 2) i += varint();
    else throw new Error('a malformed HealthCheckResponse');
  }
  return found;
}

/**
 * probeGrpc — one Health/Check call to `o.url` (grpc:// or grpcs://, the path naming the service, '' by default)
 * within `o.timeout` ms: healthy on SERVING, and the status's name or the call's error. (The shapes of probe.ts's
 * ProbeOptions and ProbeResult, written here so that this file does not import the one that loads it.)
 */
export async function probeGrpc(o: { url: string; timeout: number; clientCert?: { cert: string; key: string } }): Promise<{ healthy: boolean; detail: string }> {
  let grpc: typeof import('@grpc/grpc-js');
  try {
    grpc = await import('@grpc/grpc-js');
  } catch {
    return { healthy: false, detail: 'asking a gRPC listener needs the @grpc/grpc-js package: npm install @grpc/grpc-js' };
  }
  const url = new URL(o.url);
  const service = decodeURIComponent(url.pathname.replace(/^\//, ''));
  const creds = url.protocol === 'grpcs:'
    ? grpc.credentials.createSsl(null, o.clientCert ? readFileSync(o.clientCert.key) : null, o.clientCert ? readFileSync(o.clientCert.cert) : null, { rejectUnauthorized: false, checkServerIdentity: () => undefined })
    : grpc.credentials.createInsecure();
  const client = new grpc.Client(url.host, creds);
  try {
    return await new Promise<{ healthy: boolean; detail: string }>((resolve) => {
      client.makeUnaryRequest('/grpc.health.v1.Health/Check', (s: string) => request(s), (b: Buffer) => status(b), service, new grpc.Metadata(), { deadline: Date.now() + o.timeout }, (e, n) => {
        if (e) {
          const code = grpc.status[e.code] ?? String(e.code);
          resolve({ healthy: false, detail: e.code === grpc.status.DEADLINE_EXCEEDED ? `no answer within ${o.timeout} ms` : `${code}: ${e.details || e.message}` });
          return;
        }
        const name = STATUS[n ?? 0] ?? String(n);
        resolve({ healthy: n === 1, detail: name });
      });
    });
  } finally {
    client.close();
  }
}
