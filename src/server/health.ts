/**
 * server/health — gRPC health checking (`grpc.health.v1.Health`, Check and Watch) on the gRPC listener, by the
 * grpc-health-check package (an optional peer of the service, loaded only when the listener starts). One status for
 * every name it answers: SERVING from the start (the configuration is loaded before the listener opens), NOT_SERVING
 * as soon as the drain starts (SIGTERM), and — only where the operator opted in (`--health-check-store`, as for
 * /healthcheck) — NOT_SERVING while a server of the store does not answer. Watch streams get each change as it
 * happens, and end (status OK) when the drain starts, so they never hold the shutdown.
 */
import type * as grpc from '@grpc/grpc-js';
import { RatekeeperError } from '../core/errors.js';

/**
 * HEALTH_SERVICES — the names Check and Watch answer: "" (the server as a whole: Kubernetes' grpc probe and
 * grpc_health_probe ask it by default), the RLS service by its full name, and `ratelimit`, the name
 * envoyproxy/ratelimit registers its status under (its src/server/health.go), so probes written for it keep working.
 */
export const HEALTH_SERVICES = ['', 'envoy.service.ratelimit.v3.RateLimitService', 'ratelimit'] as const;

/** Status — what a health check says. */
export type Status = 'SERVING' | 'NOT_SERVING';

/**
 * MAX_WATCHES — the most Watch calls open at once on the listener; past it a Watch is refused RESOURCE_EXHAUSTED.
 * A Watch is held open by design and costs the server ~16 KB (grpc-js's stream; 4 000 measured at +63 MB RSS), so
 * without a bound a client holding many connections of --grpc-max-streams Watches each grows memory without end.
 * Probes (Kubernetes, grpc_health_probe, Envoy) use Check; a Watch is one per watching client.
 */
export const MAX_WATCHES = 1000;

/** Watching — a Watch call of grpc-health-check's implementation, as far as the wrapper answers and ends it. */
interface Watching {
  request: { service?: unknown };
  write(message: { status: string }): unknown;
  end(): void;
  emit(event: 'error', e: { code: number; details: string }): unknown;
  on(event: 'cancelled' | 'close' | 'finish', fn: () => void): unknown;
}

/** KNOWN — HEALTH_SERVICES as a set (the names whose status can change). */
const KNOWN: ReadonlySet<string> = new Set(HEALTH_SERVICES);

/** RESOURCE_EXHAUSTED, NOT_FOUND — grpc.status's codes (the type-only import of grpc-js has no values). */
const RESOURCE_EXHAUSTED = 8;
const NOT_FOUND = 5;

/**
 * GrpcHealth — the health service of one gRPC server. `storeDown` — whether the store is found down now (the
 * opted-in probe), `draining` — whether the drain has started; the status is SERVING when neither.
 */
export class GrpcHealth {
  /** status — what every name answers now. */
  status: Status = 'SERVING';
  private draining = false;
  private storeDown = false;
  /** watching — the open Watch calls (ended at the drain). */
  private readonly watching = new Set<Watching>();
  private timer: NodeJS.Timeout | undefined;

  private constructor(private readonly impl: { setStatus(service: string, status: Status): void }) {}

  /**
   * add — the health service on `server` (before it binds), every name SERVING, at most `maxWatches` Watch calls
   * open at once. Throws a RatekeeperError when the grpc-health-check package is missing.
   */
  static async add(server: grpc.Server, maxWatches = MAX_WATCHES): Promise<GrpcHealth> {
    const mod = await import('grpc-health-check').catch(() => {
      throw new RatekeeperError('serve: gRPC health checking needs the grpc-health-check package: npm install grpc-health-check');
    });
    const Impl = (mod.HealthImplementation ?? (mod as unknown as { default: typeof mod }).default.HealthImplementation);
    const initial = Object.fromEntries(HEALTH_SERVICES.map((s) => [s, 'SERVING' as const]));
    const impl = new Impl(initial);
    const health = new GrpcHealth(impl);
    // the package adds its handlers through addService: Watch is wrapped to know its calls, so the drain can end them
    impl.addToServer({
      addService: (service: grpc.ServiceDefinition, handlers: grpc.UntypedServiceImplementation) => {
        const watch = handlers.watch as (call: Watching) => void;
        const check = handlers.check as (call: { request: { service?: unknown } }, callback: (e: { code: number; details: string } | null, r?: unknown) => void) => void;
        server.addService(service, {
          ...handlers,
          // a name not ours is NOT_FOUND with the name cut short: the package echoed it whole in grpc-message, and a
          // trailer of a 100 KB name was more than the client's HTTP/2 header limit, its connection stuck after it
          check: (call: { request: { service?: unknown } }, callback: (e: { code: number; details: string } | null, r?: unknown) => void) => {
            const name = call.request.service;
            if (typeof name === 'string' && KNOWN.has(name)) return check(call, callback);
            const shown = typeof name === 'string' ? JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name) : '(none)';
            callback({ code: NOT_FOUND, details: `Health status unknown for service ${shown} (${typeof name === 'string' ? name.length : 0} characters)` });
          },
          watch: (call: Watching) => {
            if (health.draining) {
              // a Watch that arrives during the drain hears NOT_SERVING (the status) and ends
              watch(call);
              call.end();
              return;
            }
            if (health.watching.size >= maxWatches) {
              call.emit('error', { code: RESOURCE_EXHAUSTED, details: `${maxWatches} health Watch calls are open on this server: use Check, or close a Watch` });
              return;
            }
            health.watching.add(call);
            const gone = (): void => void health.watching.delete(call);
            call.on('cancelled', gone);
            call.on('close', gone);
            call.on('finish', gone);
            // a name that is not one of ours is SERVICE_UNKNOWN for good: answered here, never handed to the package,
            // which keeps a map entry per name it was asked to watch (the name as its key) after the call is gone
            if (typeof call.request.service !== 'string' || !KNOWN.has(call.request.service)) {
              call.write({ status: 'SERVICE_UNKNOWN' });
              return;
            }
            watch(call);
          },
        });
      },
    } as unknown as grpc.Server);
    return health;
  }

  /**
   * watchStore — every `everyMs` ms asks `up()` (the store's probe, the answer /healthcheck gives) and is NOT_SERVING
   * while it answers false; a probe that throws counts as down. The timer never keeps the process alive.
   */
  watchStore(up: () => Promise<boolean>, everyMs = 1000): void {
    let asking = false;
    this.timer = setInterval(() => {
      if (asking) return;
      asking = true;
      up().catch(() => false).then((ok) => {
        asking = false;
        this.storeDown = !ok;
        this.update();
      });
    }, everyMs);
    this.timer.unref();
  }

  /** drain — NOT_SERVING on every name, told to every Watch, whose calls then end; stops the store probe. */
  drain(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.draining = true;
    this.update();
    for (const call of this.watching) call.end();
    this.watching.clear();
  }

  private update(): void {
    const next: Status = this.draining || this.storeDown ? 'NOT_SERVING' : 'SERVING';
    if (next === this.status) return;
    this.status = next;
    for (const s of HEALTH_SERVICES) this.impl.setStatus(s, next);
  }
}
