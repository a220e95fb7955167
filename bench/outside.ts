/**
 * bench/outside — the outside load generators of `npm run bench server`: Debian's `wrk` (HTTP/1.1) and `h2load`
 * (HTTP/2, gRPC), run as child processes pinned with taskset, their reports parsed; and a server's CPU time read from
 * /proc/<pid>/stat. A load generator in C spends far less per request than the servers it measures, so (unlike
 * autocannon or grpc-js's client in the bench's own process) the servers, not the generator, set the rates.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * haveTool — whether `cmd` runs here. When it does not: as root (and BENCH_INSTALL is not 0) the bench installs its
 * Debian package with apt-get, as .ci/run does; otherwise it says how to install it and the part is skipped (a
 * benchmark does not ask for a password).
 */
export function haveTool(cmd: string, pkg: string): boolean {
  const runs = (): boolean => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).error === undefined;
  if (runs()) return true;
  if (process.getuid?.() === 0 && process.env.BENCH_INSTALL !== '0') {
    console.error(`bench: ${cmd} is missing; installing it: apt-get install -y ${pkg}`);
    spawnSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (runs()) return true;
  }
  console.log(`\n${cmd} is not installed, so its part is skipped: install it with \`apt-get install ${pkg}\` (Debian, Ubuntu) and run again.\n`);
  return false;
}

/** CLK_TCK — the kernel's clock ticks per second, the unit of /proc/<pid>/stat's utime and stime. */
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** cpuMicros — a process's CPU time so far (user + system, every thread), in µs, from /proc/<pid>/stat. */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after the command name (in parentheses, which may hold spaces): state is field 3, utime 14, stime 15
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
}

/** WrkKind — what one wrk run asks: POST /v1/check, POST /json (2 descriptors), GET /v1/auth. */
export type WrkKind = 'check' | 'json' | 'auth';

/** WRK_KEYS — distinct client keys the wrk script cycles through (as the other parts' KEYS). */
const WRK_KEYS = 10_000;

/**
 * WRK_SCRIPT — builds every request once (in `init`, a thread's first act) and hands them out in turn: `request()`
 * costs wrk a table lookup, so it keeps up with a server on its own core. Keys `c0` … `c9999`, paths `/p0` … `/p9`.
 */
const WRK_SCRIPT = `
local reqs = {}
local n = 0
init = function(args)
  local kind = args[1]
  for i = 0, ${WRK_KEYS - 1} do
    if kind == "check" then
      reqs[#reqs + 1] = wrk.format("POST", "/v1/check", { ["Content-Type"] = "application/json" }, string.format('{"policy":"api","key":"c%d"}', i))
    elseif kind == "json" then
      reqs[#reqs + 1] = wrk.format("POST", "/json", { ["Content-Type"] = "application/json" }, string.format('{"domain":"bench","descriptors":[{"entries":[{"key":"client","value":"c%d"}]},{"entries":[{"key":"path","value":"/p%d"}]}]}', i, i % 10))
    else
      reqs[#reqs + 1] = wrk.format("GET", "/v1/auth", { ["X-Ratekeeper-Policy"] = "api", ["X-Ratekeeper-Key"] = string.format("c%d", i) }, nil)
    end
  end
end
request = function()
  n = n % #reqs + 1
  return reqs[n]
end
`;

/** writeWrkScript — the Lua script in `dir`; returns its path. */
export function writeWrkScript(dir: string): string {
  const path = join(dir, 'requests.lua');
  writeFileSync(path, WRK_SCRIPT);
  return path;
}

/** LoadResult — one run of a load generator: answers that succeeded per second, and their count. */
export interface LoadResult {
  rate: number;
  done: number;
}

/** pinned — argv prefixed with taskset to `cpus` when given. */
function pinned(argv: string[], cpus: string | undefined): string[] {
  return cpus === undefined ? argv : ['taskset', '-c', cpus, ...argv];
}

async function run(argv: string[]): Promise<string> {
  const [cmd, ...args] = argv;
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0) throw new Error(`${cmd} exited with ${code}: ${out}`);
  return out;
}

/**
 * wrk — one run of `wrk -t2 -c<connections> -d<seconds>s` against 127.0.0.1:port with the script's requests of
 * `kind` (a request unanswered for 10 s is a socket timeout). Throws when any answer was not 2xx or a socket failed:
 * the run is void (`strict`; a warm-up run only warms).
 */
export async function wrk(port: number, kind: WrkKind, seconds: number, connections: number, script: string, cpus: string | undefined, strict = true): Promise<LoadResult> {
  const out = await run(pinned(['wrk', '-t2', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, `http://127.0.0.1:${port}`, '--', kind], cpus));
  const done = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: (.*)/.exec(out)?.[1];
  if (!Number.isFinite(done)) throw new Error(`wrk: no request count in its report: ${out}`);
  if (!strict) return { rate: done / seconds, done };
  if (non2xx > 0) throw new Error(`wrk ${kind}: ${non2xx} answers were not 2xx: the run is void`);
  if (socket !== undefined && /[1-9]/.test(socket)) throw new Error(`wrk ${kind}: socket errors (${socket}): the run is void`);
  return { rate: done / seconds, done };
}

/** GRPC_PATH — ShouldRateLimit's HTTP/2 path. */
export const GRPC_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

/** writeGrpcFrame — a gRPC message frame (flag 0, 4-byte big-endian length, the protobuf) in `dir`; returns its path. */
export function writeGrpcFrame(dir: string, message: Uint8Array): string {
  const frame = Buffer.alloc(message.length + 5);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const path = join(dir, 'request.grpc');
  writeFileSync(path, frame);
  return path;
}

/**
 * h2load — one run of `h2load -D <seconds>` of `clients` connections with `streams` calls in flight on each,
 * every call the gRPC frame in `frame`. h2load counts an HTTP 200 as a success whatever its grpc-status trailer:
 * the caller checks the statuses with the server's own count. Throws when a call failed or errored (`strict`).
 */
export async function h2load(port: number, seconds: number, clients: number, streams: number, frame: string, cpus: string | undefined, strict = true): Promise<LoadResult> {
  const out = await run(pinned([
    'h2load', '-D', String(seconds), '-t', '1', '-c', String(clients), '-m', String(streams), '-d', frame,
    '-H', 'content-type: application/grpc', '-H', 'te: trailers', `http://127.0.0.1:${port}${GRPC_PATH}`,
  ], cpus));
  const m = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
  if (m === null) throw new Error(`h2load: no request counts in its report: ${out}`);
  const [succeeded, failed, errored, timeout] = [Number(m[4]), Number(m[5]), Number(m[6]), Number(m[7])];
  if (strict && failed + errored + timeout > 0) throw new Error(`h2load: ${failed} failed, ${errored} errored, ${timeout} timed out: the run is void`);
  return { rate: succeeded / seconds, done: succeeded };
}
