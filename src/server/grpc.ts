import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { RatekeeperError } from '../core/errors.js';
import { BadRequest, type RlsRequest, type RlsResponse } from './rls.js';
import type { RateLimitService } from './service.js';
import type { Metrics } from './metrics.js';

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
 * and malformed bytes are the client's mistake, so they decode to a {@link Malformed} the handler refuses.
 */
function tolerant(def: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, m] of Object.entries(def)) {
    const decode = m.requestDeserialize;
    out[name] = {
      ...m,
      requestDeserialize: (bytes: Buffer) => {
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

/** GrpcFront — the gRPC listener: Envoy's RLS v3 ShouldRateLimit on the service. */
export class GrpcFront {
  readonly server: grpc.Server;
  /** inFlight — calls accepted and not yet answered (drained on shutdown). */
  inFlight = 0;
  port = 0;

  constructor(private readonly service: RateLimitService, private readonly metrics: Metrics | undefined, private readonly log: (line: string) => void) {
    // 4 MB messages at most, as grpc-js's default; a larger one is refused by the transport (RESOURCE_EXHAUSTED)
    this.server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
    this.server.addService(tolerant(rlsService()), { ShouldRateLimit: this.shouldRateLimit });
  }

  private readonly shouldRateLimit = (call: grpc.ServerUnaryCall<RlsRequest, RlsResponse>, callback: grpc.sendUnaryData<RlsResponse>): void => {
    this.inFlight++;
    const done = this.metrics?.time('grpc');
    const answered = (r: RlsResponse): void => {
      this.inFlight--;
      done?.(r.overall_code);
      callback(null, r);
    };
    const failed = (e: unknown): void => {
      this.inFlight--;
      const bad = e instanceof BadRequest || (e instanceof RatekeeperError && e.code === 'ERR_ARGUMENT');
      if (bad) this.metrics?.badRequest('grpc');
      else this.log(`grpc: ShouldRateLimit failed: ${(e as Error)?.stack ?? String(e)}`);
      done?.(bad ? 'INVALID_ARGUMENT' : 'INTERNAL');
      callback({ code: bad ? grpc.status.INVALID_ARGUMENT : grpc.status.INTERNAL, details: (e as Error)?.message ?? String(e) });
    };
    let r: RlsResponse | Promise<RlsResponse>;
    try {
      if (call.request instanceof Malformed) throw new BadRequest('request', `is not a RateLimitRequest in protobuf: ${call.request.reason}`);
      r = this.service.decide(call.request);
    } catch (e) {
      failed(e);
      return;
    }
    // the memory store answers in this tick; Redis once its reply is in
    if (r instanceof Promise) r.then(answered, failed);
    else answered(r);
  };

  /** listen — binds host:port (0: any free port) and resolves with the port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      this.server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) => {
        if (err) reject(err);
        else {
          this.port = bound;
          resolve(bound);
        }
      });
    });
  }

  /** close — stops accepting calls and resolves once the accepted ones are answered (forced after `graceMs`). */
  close(graceMs = 10_000): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      timer.unref();
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
