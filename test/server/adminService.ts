/**
 * test/server/adminService — a real service (HTTP, gRPC and the admin listener on free loopback ports, logs dropped)
 * on a configuration, with a grpc-js client, started before a describe block's tests and stopped after them: the
 * setup the admin-key and override-block tests share.
 */
import { after, before } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startService, type Running } from '../../src/server/serve.js';
import { rlsClient } from '../../src/server/grpc.js';
import type { RlsResponse } from '../../src/server/rls.js';
import { configFile } from './support.js';

/** AdminService — the started service (set once `before` has run) and one gRPC ShouldRateLimit call to it. */
export interface AdminService {
  running: Running;
  shouldRateLimit(req: unknown): Promise<RlsResponse>;
}

/** adminService — registers the `before` and `after` hooks of the enclosing describe block; call it inside one. */
export function adminService(config: string): AdminService {
  let client: grpc.Client & { ShouldRateLimit: (req: unknown, cb: (e: grpc.ServiceError | null, r: RlsResponse) => void) => void };
  const s: AdminService = {
    running: undefined as unknown as Running,
    shouldRateLimit: (req) => new Promise((resolve, reject) => {
      client.ShouldRateLimit(req, (e, r) => (e ? reject(e) : resolve(r)));
    }),
  };
  before(async () => {
    s.running = await startService({ config: configFile(config), port: 0, grpcPort: 0, host: '127.0.0.1', adminPort: 0, log: () => undefined });
    const Client = rlsClient();
    client = new Client(`127.0.0.1:${s.running.grpcPort}`, grpc.credentials.createInsecure()) as unknown as typeof client;
  });
  after(async () => {
    client.close();
    await s.running.close();
  });
  return s;
}
