import type { Socket } from 'node:net';
import { existsSync } from 'node:fs';
import * as http2 from 'node:http2';
import type { SecureContextOptions, TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { RatekeeperError } from '../core/errors.js';
import { BadRequest, type RlsRequest, type RlsResponse } from './rls.js';
import { scanRequest } from './rlsWire.js';
import { fastRequest } from './rlsDecode.js';
import { canEncode, encodeResponse } from './rlsEncode.js';
import type { RateLimitService } from './service.js';
import type { Metrics } from './metrics.js';
import { ResetGuard } from './resetGuard.js';
import { FirstChunk } from './firstChunk.js';
import { Arrivals } from './arrivals.js';

/**
 * PROTO — rls.proto at run time: beside this module when it runs from source, else in src/ of the package
 * (dist/src/server/ → src/server/proto/; the repository and a published package both ship src/).
 */
export const PROTO = [new URL('./proto/rls.proto', import.meta.url), new URL('../../../src/server/proto/rls.proto', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((p) => existsSync(p));

/** LOADER_OPTIONS — messages as plain objects in the proto's field names; enums by name; unset fields absent. */
export const LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false };

/** rlsService — the RateLimitService definition (for the server, and for clients such as the tests' and the bench's). */
export function rlsService(): grpc.ServiceDefinition {
  if (PROTO === undefined) throw new Error('ratekeeper: cannot find src/server/proto/rls.proto in the package');
  const def = protoLoader.loadSync(PROTO, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def) as unknown as { envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } } };
  return pkg.envoy.service.ratelimit.v3.RateLimitService.service;
}

/** rlsClient — a client constructor for RateLimitService (tests, bench, examples). */
export function rlsClient(): grpc.ServiceClientConstructor {
  const def = protoLoader.loadSync(PROTO!, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(def) as unknown as { envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } } };
  return pkg.envoy.service.ratelimit.v3.RateLimitService;
}

/** Malformed — what a request's bytes decode to when they are not a RateLimitRequest (answered INVALID_ARGUMENT). */
class Malformed {
  constructor(readonly reason: string) {}
}

/**
 * tolerant — the service definition with decoders that never throw: grpc-js answers a decoder's throw with INTERNAL,
 * and malformed bytes are the client's mistake, so they decode to a {@link Malformed} the handler refuses. The
 * bytes are scanned first ({@link scanRequest}): a message past the descriptor, entry or field bounds, or with a
 * string that is not UTF-8, decodes to the BadRequest the handler answers, without protobufjs ever seeing it. The
 * usual request (a domain, descriptors of key/value entries, ASCII strings: what Envoy sends) is read from its bytes
 * before either ({@link fastRequest}: what protobufjs would give, bytes the scan would pass). A response is encoded
 * by {@link encodeResponse}.
 */
function tolerant(def: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, m] of Object.entries(def)) {
    const decode = m.requestDeserialize;
    const encode = m.responseSerialize;
    out[name] = {
      ...m,
      // the service's responses are written by rlsEncode (protobufjs's bytes, without its objects)
      responseSerialize: (r: unknown) => (canEncode(r as RlsResponse) ? encodeResponse(r as RlsResponse) : encode(r)),
      requestDeserialize: (bytes: Buffer) => {
        // the usual request is read from its bytes (rlsDecode.ts): what protobufjs would give, and the scan would pass
        const fast = fastRequest(bytes);
        if (fast !== undefined) return fast;
        const refused = scanRequest(bytes);
        if (refused !== undefined) return refused;
        try {
          return decode(bytes);
        } catch (e) {
          return new Malformed((e as Error)?.message ?? String(e));
        }
      },
    };
  }
  return out as grpc.ServiceDefinition;
}

/**
 * listenerService — the RateLimitService definition as the gRPC listener serves it ({@link tolerant}): its request
 * decoder is the listener's (the bench's in-process gRPC path and the tests call it too).
 */
export function listenerService(): grpc.ServiceDefinition {
  return tolerant(rlsService());
}

/** GrpcFrontOptions — how the gRPC listener bounds what one client can hold. */
export interface GrpcFrontOptions {
  /**
   * requestTimeout — ms a call's request may take to arrive whole (its message and the client's end of stream), as
   * the HTTP listener's: past it the call is answered DEADLINE_EXCEEDED and its stream reset, so a client that sends
   * 3 bytes of a message and stops holds a stream this long, not forever. Checked every second (±1 s). 0: off.
   * @default 10_000
   */
  requestTimeout?: number;
  /**
   * maxConcurrentStreams — calls one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS; a
   * stream past it is refused with REFUSED_STREAM, and Envoy opens another connection). @default 1000
   */
  maxConcurrentStreams?: number;
  /**
   * keepaliveTime — ms between the server's HTTP/2 PINGs on a connection; a connection that does not answer one
   * within `keepaliveTimeout` ms is closed (a peer that vanished without a FIN stops holding its streams).
   * @default 60_000 and 20_000
   */
  keepaliveTime?: number;
  keepaliveTimeout?: number;
  /** maxConnectionIdle — ms a connection with no call open is kept before it is closed (GOAWAY). @default 300_000 */
  maxConnectionIdle?: number;
  /** credentials — TLS ({@link tlsCredentials}); absent: plain text. */
  credentials?: grpc.ServerCredentials;
  /** secureConnection — called first on each TLS connection once its handshake is done (a client SAN check). */
  secureConnection?: (socket: TLSSocket) => void;
}

/** TlsCredentials — gRPC server credentials whose certificate can be swapped (new connections get the new one). */
export interface TlsCredentials {
  credentials: grpc.ServerCredentials;
  /** update — the certificate, key and client CAs new connections get from now on. */
  update(context: SecureContextOptions): void;
  /** rotates — whether `update` takes effect (false: this grpc-js cannot swap a server's certificate; restart to rotate). */
  rotates: boolean;
}

/**
 * tlsCredentials — TLS for the gRPC listener: `context` (cert, key, and ca for mTLS), the client certificate demanded
 * and verified when `mtls`. grpc-js's ServerCredentials hand their context to watchers that call the HTTP/2 server's
 * setSecureContext (grpc-js >= 1.12 or so: what its FileWatcherCertificateProvider uses); a subclass of it gets
 * `update`. Its own file watcher would drop every new connection while a rotated file is bad, so files are read here
 * ({@link TlsSource}) and only good ones handed on. Where ServerCredentials cannot be watched, createSsl (no rotation).
 */
export function tlsCredentials(context: SecureContextOptions, mtls: boolean, handshakeTimeout = 10_000): TlsCredentials {
  const Base = grpc.ServerCredentials as unknown as abstract new (ctor: object | null, ctx?: SecureContextOptions) => grpc.ServerCredentials & { updateSecureContextOptions(o: SecureContextOptions | null): void };
  if (typeof (grpc.ServerCredentials.prototype as unknown as { _addWatcher?: unknown })._addWatcher !== 'function') {
    const pair = { cert_chain: context.cert as Buffer, private_key: context.key as Buffer };
    return { credentials: grpc.ServerCredentials.createSsl((context.ca as Buffer | undefined) ?? null, [pair], mtls), update: () => undefined, rotates: false };
  }
  /** Rotating — one listener's credentials: equal only to themselves, so a rebind never mistakes them for others. */
  class Rotating extends Base {
    _equals(other: grpc.ServerCredentials): boolean {
      return other === this;
    }
  }
  // the constructor options go to http2.createSecureServer: a client that opens a connection and never finishes its
  // handshake holds it handshakeTimeout ms (node's default: 120 s)
  const c = new Rotating({ requestCert: mtls, rejectUnauthorized: mtls, handshakeTimeout }, context);
  return { credentials: c, update: (ctx) => c.updateSecureContextOptions(ctx), rotates: true };
}

/** IDLE_CHECK_MS — how often a drain looks whether anything is still in flight (ms). */
const IDLE_CHECK_MS = 50;

/** MAX_MESSAGE — the largest request message, in bytes, inflated size included: grpc-js's default (4 MB). */
export const MAX_MESSAGE = 4 * 1024 * 1024;

/**
 * http2ServersOf — the node:http2 servers grpc-js listens with (its `http2Servers` map: not part of its API, present
 * from 1.10 to 1.14 at least). undefined when a version keeps them elsewhere; a test fails then.
 */
function http2ServersOf(server: grpc.Server): http2.Http2Server[] | undefined {
  const m = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(m instanceof Map)) return undefined;
  return [...m.keys()].filter((s): s is http2.Http2Server => typeof (s as http2.Http2Server)?.on === 'function');
}

/** GrpcFront — the gRPC listener: Envoy's RLS v3 ShouldRateLimit on the service. */
export class GrpcFront {
  readonly server: grpc.Server;
  /** inFlight — calls accepted and not yet answered (drained on shutdown). */
  inFlight = 0;
  port = 0;
  /** cancelled — calls whose client had gone (RST_STREAM, closed connection) before they were decided: not charged. */
  cancelled = 0;
  /** expired — streams answered DEADLINE_EXCEEDED and reset because their request did not arrive in time. */
  expired = 0;
  /** resets — HTTP/2 rapid reset: a connection whose client resets too many unanswered streams is closed (resetGuard.ts). */
  readonly resets = new ResetGuard();
  /** firstChunks — a request refused from its first DATA frame when that shows it past the bounds (firstChunk.ts). */
  readonly firstChunks = new FirstChunk();
  /** arrivals — the streams still waiting for their request (undefined when requestTimeout is 0). */
  private readonly arrivals: Arrivals | undefined;
  private readonly requestTimeout: number;
  private readonly credentials: grpc.ServerCredentials | undefined;
  private readonly secureConnection: ((socket: TLSSocket) => void) | undefined;

  constructor(private readonly service: RateLimitService, private readonly metrics: Metrics | undefined, private readonly log: (line: string) => void, options: GrpcFrontOptions = {}) {
    this.requestTimeout = options.requestTimeout ?? 10_000;
    this.credentials = options.credentials;
    this.secureConnection = options.secureConnection;
    this.server = new grpc.Server({
      // 4 MB messages at most, as grpc-js's default, also once inflated: grpc-js stops a gzip/deflate message's
      // inflation past it (RESOURCE_EXHAUSTED); what is under it is scanned before it is decoded (rlsWire.ts)
      'grpc.max_receive_message_length': MAX_MESSAGE,
      'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 1000,
      'grpc.keepalive_time_ms': options.keepaliveTime ?? 60_000,
      'grpc.keepalive_timeout_ms': options.keepaliveTimeout ?? 20_000,
      'grpc.max_connection_idle_ms': options.maxConnectionIdle ?? 300_000,
    });
    this.server.addService(listenerService(), { ShouldRateLimit: this.shouldRateLimit });
    this.arrivals = this.requestTimeout > 0 ? new Arrivals(this.requestTimeout, this.expire) : undefined;
  }

  /** pendingStreams — streams whose request has not arrived whole yet (tests, the operators' numbers). */
  get pendingStreams(): number {
    return this.arrivals?.size ?? 0;
  }

  /**
   * expire — a stream whose request did not arrive within requestTimeout: answered DEADLINE_EXCEEDED (trailers only,
   * when nothing was answered yet) and reset with NO_ERROR, as gRPC servers end a call whose client has not finished
   * sending. grpc-js sees the stream close and drops the call.
   */
  private readonly expire = (stream: http2.ServerHttp2Stream): void => {
    if (stream.destroyed || stream.closed) return;
    this.expired++;
    try {
      if (!stream.headersSent) {
        stream.respond({
          ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': String(grpc.status.DEADLINE_EXCEEDED),
          'grpc-message': encodeURIComponent(`request: did not arrive whole within ${this.requestTimeout} ms`),
        }, { endStream: true });
      }
    } catch {
      // the session is going away: the reset below is all there is to do
    }
    stream.close(http2.constants.NGHTTP2_NO_ERROR);
  };

  /** queue — calls whose request is in and not yet decided: [call, callback, start (performance.now(), ms)] triples, in arrival order. */
  private queue: unknown[] = [];
  /** spare — the other queue array, swapped in while one is being decided (no array allocated per turn). */
  private spare: unknown[] = [];
  /** scheduled — a setImmediate will decide the queue. */
  private scheduled = false;

  /**
   * shouldRateLimit — a call whose request is in: decided in the next turn of the event loop, with every other call
   * received in this one (one setImmediate for all of them). node:http2 hands JS a DATA frame and reads the rest of
   * the socket's bytes only in a later turn, so a RST_STREAM sent right behind a request is read after the request;
   * decided at once, the call would be charged although its client had already cancelled it (HTTP/2 rapid reset:
   * thousands of cancelled calls charged to one key). A turn costs microseconds.
   */
  private readonly shouldRateLimit = (call: grpc.ServerUnaryCall<RlsRequest, RlsResponse>, callback: grpc.sendUnaryData<RlsResponse>): void => {
    this.inFlight++;
    this.queue.push(call, callback, this.metrics === undefined ? 0 : performance.now());
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  };

  private readonly drain = (): void => {
    const q = this.queue;
    this.queue = this.spare;
    this.spare = q;
    this.scheduled = false;
    try {
      for (let i = 0; i < q.length; i += 3) {
        this.decideCall(q[i] as grpc.ServerUnaryCall<RlsRequest, RlsResponse>, q[i + 1] as grpc.sendUnaryData<RlsResponse>, q[i + 2] as number);
      }
    } finally {
      q.length = 0;
    }
  };

  /**
   * decideCall — one call: not decided when its client is gone, refused when its request is bad, else decided;
   * `start` — when it arrived (performance.now(), ms; for the latency histogram). No closure per call when the
   * store answers in this tick (the memory store).
   */
  private decideCall(call: grpc.ServerUnaryCall<RlsRequest, RlsResponse>, callback: grpc.sendUnaryData<RlsResponse>, start: number): void {
    // a call whose client is gone (RST_STREAM, connection closed) is not decided, so nothing is charged
    if (call.cancelled) {
      this.inFlight--;
      this.cancelled++;
      this.metrics?.answered('grpc', 'CANCELLED', start);
      return;
    }
    let r: RlsResponse | Promise<RlsResponse>;
    try {
      if (call.request instanceof BadRequest) throw call.request;
      if (call.request instanceof Malformed) throw new BadRequest('request', `is not a RateLimitRequest in protobuf: ${call.request.reason}`);
      r = this.service.decide(call.request);
    } catch (e) {
      this.failed(callback, e, start);
      return;
    }
    // the memory store answers in this tick; Redis once its reply is in
    if (r instanceof Promise) r.then((x) => this.answered(callback, x, start), (e: unknown) => this.failed(callback, e, start));
    else this.answered(callback, r, start);
  }

  private answered(callback: grpc.sendUnaryData<RlsResponse>, r: RlsResponse, start: number): void {
    this.inFlight--;
    this.metrics?.answered('grpc', r.overall_code, start);
    callback(null, r);
  }

  /** failed — a call that threw: INVALID_ARGUMENT naming the field for bad input, else INTERNAL (logged). */
  private failed(callback: grpc.sendUnaryData<RlsResponse>, e: unknown, start: number): void {
    this.inFlight--;
    const bad = e instanceof BadRequest || (e instanceof RatekeeperError && e.code === 'ERR_ARGUMENT');
    if (bad) this.metrics?.badRequest('grpc');
    else this.log(`grpc: ShouldRateLimit failed: ${(e as Error)?.stack ?? String(e)}`);
    this.metrics?.answered('grpc', bad ? 'INVALID_ARGUMENT' : 'INTERNAL', start);
    callback({ code: bad ? grpc.status.INVALID_ARGUMENT : grpc.status.INTERNAL, details: (e as Error)?.message ?? String(e) });
  }

  /** sockets — the connections open now (TCP sockets under TLS too). */
  private readonly sockets = new Set<Socket>();

  /** connected — a new connection: no Nagle delay, and tracked until it closes. */
  private readonly connected = (socket: Socket): void => {
    socket.setNoDelay(true);
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  };

  /** listen — binds host:port (0: any free port) and resolves with the port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      this.server.bindAsync(address, this.credentials ?? grpc.ServerCredentials.createInsecure(), (err, bound) => {
        if (err) {
          reject(err);
          return;
        }
        this.port = bound;
        const check = this.secureConnection;
        if (check !== undefined) {
          const servers = http2ServersOf(this.server);
          if (servers === undefined || servers.length === 0) {
            reject(new RatekeeperError('grpc: cannot reach grpc-js\'s HTTP/2 server to check client certificates\' names (tls client SAN)'));
            return;
          }
          for (const s of servers) if (!s.listeners('secureConnection').includes(check)) s.prependListener('secureConnection', check);
        }
        const servers = http2ServersOf(this.server);
        if (servers === undefined || servers.length === 0) this.log('grpc: cannot reach grpc-js\'s HTTP/2 server: requests are not held to requestTimeout, rapid reset is not bounded');
        else {
          // every connection: TCP_NODELAY (grpc-js leaves Nagle on: one call at a time waited ~28 ms for the delayed
          // ACK, ~4 ms without), and kept in `sockets`, so a drain can end the idle ones whose client never answers GOAWAY
          for (const s of servers) if (!s.listeners('connection').includes(this.connected)) s.on('connection', this.connected);
          for (const s of servers) if (!s.listeners('stream').includes(this.resets.add)) s.on('stream', this.resets.add);
          for (const s of servers) if (!s.listeners('stream').includes(this.firstChunks.add)) s.on('stream', this.firstChunks.add);
          if (this.arrivals !== undefined) for (const s of servers) if (!s.listeners('stream').includes(this.arrivals.add)) s.on('stream', this.arrivals.add);
        }
        resolve(bound);
      });
    });
  }

  /**
   * close — stops accepting calls and resolves once the accepted ones are answered (forced after `graceMs`).
   * grpc-js's tryShutdown also waits for every connection to close, and a client that took its answers and stopped
   * reading (a paused process, a dead network path) never answers the GOAWAY: once nothing is in flight and no
   * request is arriving, seen twice IDLE_CHECK_MS apart, the remaining connections are idle and are closed at once.
   */
  close(graceMs = 10_000): Promise<void> {
    this.arrivals?.stop();
    return new Promise((resolve) => {
      let idleSeen = false;
      const finish = (): void => {
        clearTimeout(timer);
        clearInterval(idle);
        resolve();
      };
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        for (const socket of this.sockets) socket.destroy();
        finish();
      }, graceMs);
      timer.unref();
      const idle = setInterval(() => {
        const quiet = this.inFlight === 0 && this.pendingStreams === 0;
        if (quiet && idleSeen) {
          this.server.forceShutdown();
          // grpc-js destroys its sessions, but a socket whose peer stopped reading stays open under a destroyed one
          for (const socket of this.sockets) socket.destroy();
          finish();
        }
        idleSeen = quiet;
      }, IDLE_CHECK_MS);
      idle.unref();
      this.server.tryShutdown(finish);
    });
  }
}
