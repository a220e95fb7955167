/**
 * test/server/attack-server — the service's gRPC and HTTP listeners in a process of their own (memory store), for the
 * attack tests: they measure this process's event-loop delay and RSS while a client in the test process attacks it,
 * so the client's own work (building, compressing 4 MB) is not counted. Forked with IPC; the config is the env's
 * RK_CONFIG (YAML), GrpcFront's options its RK_GRPC (JSON). It sends `{ grpc, http }` once listening, then answers:
 * - `{ op: 'mark' }` → `{ rss }` and starts a new measurement (the delay histogram reset, the RSS peak at `rss`);
 * - `{ op: 'stats' }` → `{ maxDelayMs, cpuMs, rss, peakRss, inFlight, pendingStreams, cancelled, expired }` since the
 *   last mark (CPU time of this process; RSS sampled every 10 ms; the counts are GrpcFront's);
 * - `{ op: 'gc' }` → `{ rss }` after a full collection (the process runs with --expose-gc).
 * Run as a test file (node --test finds it in dist/test/), it does nothing.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { MemoryStore } from '../../src/stores/memory.js';
import { RateLimitService } from '../../src/server/service.js';
import { GrpcFront, type GrpcFrontOptions } from '../../src/server/grpc.js';
import { HttpFront } from '../../src/server/http.js';
import { loadConfig } from '../../src/server/config/index.js';
import { configFile } from './support.js';

if (process.send !== undefined) await main();

async function main(): Promise<void> {
  const service = new RateLimitService({ store: new MemoryStore() });
  service.setConfig(await loadConfig(configFile(process.env.RK_CONFIG ?? '')));
  const options = JSON.parse(process.env.RK_GRPC ?? '{}') as GrpcFrontOptions;
  const grpcFront = new GrpcFront(service, undefined, () => undefined, options);
  const httpFront = new HttpFront({ service, healthy: () => true, log: () => undefined });
  const grpc = await grpcFront.listen('127.0.0.1', 0);
  const http = await new Promise<number>((resolve) => httpFront.server.listen(0, '127.0.0.1', () => resolve((httpFront.server.address() as { port: number }).port)));
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  let peak = 0;
  let cpu = process.cpuUsage();
  setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10).unref();
  process.on('message', (m: { op: string }) => {
    const rss = process.memoryUsage.rss();
    if (m.op === 'mark') {
      delay.reset();
      peak = rss;
      cpu = process.cpuUsage();
      process.send!({ rss });
    } else if (m.op === 'stats') {
      process.send!({
        maxDelayMs: delay.max / 1e6, cpuMs: ((u) => (u.user + u.system) / 1000)(process.cpuUsage(cpu)), rss, peakRss: Math.max(peak, rss), inFlight: grpcFront.inFlight,
        pendingStreams: grpcFront.pendingStreams, cancelled: grpcFront.cancelled, expired: grpcFront.expired,
      });
    } else if (m.op === 'gc') {
      (globalThis as { gc?: () => void }).gc?.();
      process.send!({ rss: process.memoryUsage.rss() });
    }
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ grpc, http });
}
