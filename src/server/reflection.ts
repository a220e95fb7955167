/**
 * server/reflection — gRPC server reflection (`grpc.reflection.v1.ServerReflection` and v1alpha, which grpcurl
 * still asks first) by the @grpc/reflection package (an optional peer of the service, loaded only when the gRPC
 * listener starts): lists the RLS service and the health service, and hands out their file descriptors, so
 * `grpcurl -plaintext host:8081 list` and `grpcurl … describe envoy.service.ratelimit.v3.RateLimitService` work
 * without the .proto files.
 */
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { RatekeeperError } from '../core/errors.js';
import { LOADER_OPTIONS, PROTO } from './grpc.js';

/**
 * addReflection — the reflection service on `server` (before it binds), describing rls.proto and, when
 * `healthProto` (grpc-health-check's health.proto path) is given, the health service. Throws a RatekeeperError when
 * @grpc/reflection is missing.
 */
export async function addReflection(server: grpc.Server, healthProto?: string): Promise<void> {
  const mod = await import('@grpc/reflection').catch(() => {
    throw new RatekeeperError('serve: gRPC server reflection needs the @grpc/reflection package: npm install @grpc/reflection');
  });
  const Reflection = mod.ReflectionService ?? (mod as unknown as { default: typeof mod }).default.ReflectionService;
  if (PROTO === undefined) throw new RatekeeperError('serve: cannot find src/server/proto/rls.proto in the package');
  const files = healthProto === undefined ? [PROTO] : [PROTO, healthProto];
  const definition = protoLoader.loadSync(files, LOADER_OPTIONS);
  new Reflection(definition).addToServer(server);
}

/** healthProtoPath — grpc-health-check's health.proto, or undefined when the package is missing. */
export async function healthProtoPath(): Promise<string | undefined> {
  const mod = await import('grpc-health-check').catch(() => undefined);
  if (mod === undefined) return undefined;
  return mod.protoPath ?? (mod as unknown as { default: typeof mod }).default.protoPath;
}
