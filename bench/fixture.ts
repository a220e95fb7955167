/**
 * bench/fixture — what the service benches run against: the bench configuration (a domain `bench` whose limits are
 * never reached in a run, and a policy `api`) and the requests made of it, shared by bench/server.ts (the service
 * over sockets) and bench/paths.ts (its request paths in process).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** KEYS — distinct clients the requests cycle through. */
export const KEYS = 10_000;

/** CONFIG — the service's configuration: 2 descriptors (client per second, path per minute) and policy `api`, 1e9 each. */
export const CONFIG = `
domain: bench
descriptors:
  - key: client
    rate_limit: { unit: second, requests_per_unit: 1000000000 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 1000000000 }
policies:
  api:
    rules: '1000000000/min'
`;

/** writeConfig — CONFIG written as `dir`/bench.yaml; returns its path. */
export function writeConfig(dir: string): string {
  const file = join(dir, 'bench.yaml');
  writeFileSync(file, CONFIG);
  return file;
}

/** RlsRequest — an RLS request of two descriptors, as grpc-js and the service take it. */
export interface RlsRequest {
  domain: string;
  descriptors: { entries: { key: string; value: string }[] }[];
}

/** rlsRequest — the i-th request: client `c<i mod KEYS>`, path `/p<i mod 10>`. */
export function rlsRequest(i: number): RlsRequest {
  return { domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: `c${i % KEYS}` }] }, { entries: [{ key: 'path', value: `/p${i % 10}` }] }] };
}

/** checkBody — the i-th POST /v1/check body (policy `api`, key `c<i mod KEYS>`). */
export function checkBody(i: number): string {
  return `{"policy":"api","key":"c${i % KEYS}"}`;
}
