/**
 * bench/serverOutside — the outside parts of `npm run bench server` (BENCH_PARTS wrk and h2load): Debian's wrk
 * against the service's HTTP endpoints and a bare node:http server sending the service's own bytes, and h2load
 * against gRPC ShouldRateLimit and a bare grpc-js server; servers alternated over BENCH_OUT_ROUNDS rounds, the median
 * and range of per-round ratios, each server's CPU per request from /proc/<pid>/stat. The tools' drivers are
 * bench/outside.ts, the server processes bench/servers.ts; with BENCH_BASE the base build's service runs in the same
 * rounds (bench/base.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterBefore, BASE, baseHeading, median, spread } from './base.js';
import { rlsRequest } from './fixture.js';
import { cpuMicros, h2load, haveTool, wrk, writeGrpcFrame, writeWrkScript, type WrkKind } from './outside.js';
import { LOAD_CPUS, PIN, SERVER_CPU, scratchDir, start, stop, type Answer } from './servers.js';

/** CONNECTIONS — wrk's connections (BENCH_CONNECTIONS, as the in-process HTTP load). */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);

/** OUT_SECONDS, OUT_ROUNDS — each measured run of wrk and h2load (after a warm-up of OUT_WARMUP s), and the rounds. */
const OUT_SECONDS = Number(process.env.BENCH_OUT_SECONDS ?? 10);
const OUT_ROUNDS = Number(process.env.BENCH_OUT_ROUNDS ?? 5);
const OUT_WARMUP = Number(process.env.BENCH_OUT_WARMUP ?? 2);
/** H2_CLIENTS, H2_STREAMS — h2load's connections and the calls in flight on each. */
const H2_CLIENTS = Number(process.env.BENCH_H2_CLIENTS ?? 8);
const H2_STREAMS = Number(process.env.BENCH_H2_STREAMS ?? 8);
/** LOAD_PIN — the CPUs the outside load generators run on (with the servers pinned), else undefined. */
const LOAD_PIN = PIN ? LOAD_CPUS : undefined;

/**
 * capture — the service's answers to the first request of each wrk script's kind (its headers in order, less the
 * ones node writes itself, and its body): what the bare HTTP server then answers, byte for byte, so that the load
 * generator reads and parses the same bytes from both.
 */
async function capture(port: number): Promise<Record<WrkKind, Answer>> {
  const { request } = await import('node:http');
  const one = (kind: WrkKind): Promise<Answer> => new Promise((resolve, reject) => {
    const body = kind === 'check' ? '{"policy":"api","key":"c0"}'
      : kind === 'json' ? '{"domain":"bench","descriptors":[{"entries":[{"key":"client","value":"c0"}]},{"entries":[{"key":"path","value":"/p0"}]}]}'
        : undefined;
    const headers: Record<string, string> = body === undefined
      ? { 'X-Ratekeeper-Policy': 'api', 'X-Ratekeeper-Key': 'c0' }
      : { 'Content-Type': 'application/json' };
    const path = kind === 'check' ? '/v1/check' : kind === 'json' ? '/json' : '/v1/auth';
    const req = request({ host: '127.0.0.1', port, path, method: body === undefined ? 'GET' : 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        if (res.statusCode !== 200) {
          reject(new Error(`capture ${path}: ${res.statusCode} ${text}`));
          return;
        }
        const own: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i];
          if (!/^(date|connection|keep-alive|content-length|transfer-encoding)$/i.test(name)) own.push([name, res.rawHeaders[i + 1]]);
        }
        resolve({ headers: own, body: text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  return { check: await one('check'), json: await one('json'), auth: await one('auth') };
}

/**
 * outsideHttp — wrk against the service (memory store) and a bare node:http server sending the service's own bytes,
 * for POST /v1/check, POST /json (2 descriptors) and GET /v1/auth: each server alone on its core (taskset), wrk on
 * the other, OUT_ROUNDS rounds with the servers alternated, the median (and range) of the per-round ratios, and each
 * server's CPU per request from /proc/<pid>/stat over the measured run.
 */
export async function outsideHttp(): Promise<void> {
  if (!haveTool('wrk', 'wrk')) return;
  const script = writeWrkScript(scratchDir());
  const probe = await start('service');
  let answers: Record<WrkKind, Answer>;
  try {
    answers = await capture(probe.http);
  } finally {
    await stop(probe.child);
  }
  const kinds: WrkKind[] = ['check', 'json', 'auth'];
  /** Side — this build's service, the bare server, or (BENCH_BASE) the base build's service. */
  type Side = 'service' | 'bare' | 'base';
  const rate = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, k: string, v: number): void => {
    m.set(k, [...(m.get(k) ?? []), v]);
  };
  for (let round = 0; round < OUT_ROUNDS; round++) {
    for (const kind of kinds) {
      // alternate which server goes first in each round
      const all: Side[] = BASE === undefined ? ['service', 'bare'] : ['service', 'bare', 'base'];
      const sides: Side[] = round % 2 === 0 ? all : [...all].reverse();
      for (const side of sides) {
        const s = side === 'bare' ? await start('bare-http', undefined, { BENCH_ANSWERS: JSON.stringify(answers) }) : await start('service', undefined, {}, side === 'base');
        try {
          await wrk(s.http, kind, OUT_WARMUP, CONNECTIONS, script, LOAD_PIN, false);
          const before = cpuMicros(s.child.pid!);
          const r = await wrk(s.http, kind, OUT_SECONDS, CONNECTIONS, script, LOAD_PIN);
          const used = cpuMicros(s.child.pid!) - before;
          push(rate, `${side} ${kind}`, r.rate);
          push(cpu, `${side} ${kind}`, used / r.done);
        } finally {
          await stop(s.child);
        }
      }
    }
    console.error(`wrk round ${round + 1}/${OUT_ROUNDS}: ${kinds.map((k) => `${k} ${fmt(rate.get(`service ${k}`)![round])} vs ${fmt(rate.get(`bare ${k}`)![round])}`).join('; ')}`);
  }
  console.log(`\n### wrk: HTTP against a bare node:http server sending the same bytes (wrk -t2 -c${CONNECTIONS}, ${OUT_SECONDS} s per run after ${OUT_WARMUP} s, ${OUT_ROUNDS} rounds, servers alternated)\n`);
  console.log(PIN ? `Each server alone on CPU ${SERVER_CPU}, wrk on CPU ${LOAD_CPUS}. Ratios: per round, ratekeeper / bare; median (min–max).\n` : 'No CPU pinning. Ratios: per round, ratekeeper / bare; median (min–max).\n');
  console.log('| endpoint | ratekeeper req/s | bare req/s | throughput ratio | ratekeeper CPU µs/req | bare CPU µs/req | CPU ratio (ratekeeper / bare) | target |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---|');
  const names: Record<WrkKind, string> = { check: 'POST /v1/check', json: 'POST /json (2 descriptors)', auth: 'GET /v1/auth' };
  for (const kind of kinds) {
    const ours = rate.get(`service ${kind}`)!;
    const bare = rate.get(`bare ${kind}`)!;
    const oc = cpu.get(`service ${kind}`)!;
    const bc = cpu.get(`bare ${kind}`)!;
    console.log(`| ${names[kind]} | ${fmt(median(ours))} | ${fmt(median(bare))} | ${spread(ours.map((x, i) => x / bare[i]))} | ${spread(oc, 1)} | ${spread(bc, 1)} | ${spread(oc.map((x, i) => x / bc[i]))} | >= 0.8× |`);
  }
  if (BASE !== undefined) {
    console.log(baseHeading('wrk, req/s and CPU per request as a speed (the base\'s µs / this build\'s)'));
    console.log('| endpoint | req/s | CPU per request |\n|---|---:|---:|');
    for (const kind of kinds) console.log(`| ${names[kind]} | ${afterBefore(rate.get(`service ${kind}`)!, rate.get(`base ${kind}`)!)} | ${afterBefore(cpu.get(`base ${kind}`)!, cpu.get(`service ${kind}`)!)} |`);
  }
}

/**
 * outsideGrpc — h2load against the service's ShouldRateLimit (2 descriptors, memory store) and a bare grpc-js server
 * answering a constant RateLimitResponse: OUT_ROUNDS alternating rounds, median of per-round ratios, CPU per call
 * from /proc/<pid>/stat. h2load counts an HTTP 200 as a success whatever the grpc-status trailer says, so each
 * server counts its answers by status: any status but OK, or fewer OK answers than h2load's successes, voids the run.
 */
export async function outsideGrpc(): Promise<void> {
  if (!haveTool('h2load', 'nghttp2-client')) return;
  const { rlsService } = await import('../src/server/grpc.js');
  const message = rlsService().ShouldRateLimit.requestSerialize(rlsRequest(1));
  const frame = writeGrpcFrame(scratchDir(), message);
  const answers = async (child: ChildProcess): Promise<{ ok: number; other: number }> => {
    const got = once(child, 'message');
    child.send('grpc-answers');
    return ((await got) as [{ ok: number; other: number }])[0];
  };
  /** sides — this build's service, the bare server and (BENCH_BASE) the base build's service ('base'). */
  const sides: ('service' | 'bare-grpc' | 'base')[] = BASE === undefined ? ['service', 'bare-grpc'] : ['service', 'bare-grpc', 'base'];
  const rate: Record<string, number[]> = { service: [], 'bare-grpc': [], base: [] };
  const cpu: Record<string, number[]> = { service: [], 'bare-grpc': [], base: [] };
  for (let round = 0; round < OUT_ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const s = side === 'base' ? await start('service', undefined, {}, true) : await start(side);
      try {
        await h2load(s.grpc, OUT_WARMUP, H2_CLIENTS, H2_STREAMS, frame, LOAD_PIN, false);
        const before = cpuMicros(s.child.pid!);
        const counted = await answers(s.child);
        const r = await h2load(s.grpc, OUT_SECONDS, H2_CLIENTS, H2_STREAMS, frame, LOAD_PIN);
        const used = cpuMicros(s.child.pid!) - before;
        const after = await answers(s.child);
        const ok = after.ok - counted.ok;
        if (after.other > 0) throw new Error(`h2load ${side}: ${after.other} calls answered with a grpc-status other than OK: the run is void`);
        // calls in flight when h2load stopped may be answered without being counted by it, never the other way round
        if (ok < r.done) throw new Error(`h2load ${side}: ${r.done} successes counted by h2load, ${ok} OK answers by the server: the run is void`);
        rate[side].push(r.rate);
        cpu[side].push(used / ok);
      } finally {
        await stop(s.child);
      }
    }
    console.error(`h2load round ${round + 1}/${OUT_ROUNDS}: ratekeeper ${fmt(rate.service[round])}, bare ${fmt(rate['bare-grpc'][round])} calls/s`);
  }
  const ratios = rate.service.map((x, i) => x / rate['bare-grpc'][i]);
  const cpuRatios = cpu.service.map((x, i) => x / cpu['bare-grpc'][i]);
  console.log(`\n### h2load: gRPC ShouldRateLimit against a bare grpc-js server (h2load -c${H2_CLIENTS} -m${H2_STREAMS}, ${OUT_SECONDS} s per run after ${OUT_WARMUP} s, ${OUT_ROUNDS} rounds, servers alternated)\n`);
  console.log('Every answer\'s grpc-status checked by the servers\' own counts (h2load counts any HTTP 200 as a success).\n');
  console.log('| | ratekeeper | bare grpc-js | ratio: median (min–max) | target |');
  console.log('|---|---:|---:|---:|---|');
  console.log(`| calls/s | ${fmt(median(rate.service))} | ${fmt(median(rate['bare-grpc']))} | ${spread(ratios)} | >= 0.9× |`);
  console.log(`| server CPU µs per call | ${spread(cpu.service, 1)} | ${spread(cpu['bare-grpc'], 1)} | ${spread(cpuRatios)} | <= 1.15× |`);
  if (BASE !== undefined) {
    console.log(baseHeading('h2load, calls/s and CPU per call as a speed (the base\'s µs / this build\'s)'));
    console.log('| | this build / base |\n|---|---:|');
    console.log(`| calls/s | ${afterBefore(rate.service, rate.base)} |`);
    console.log(`| server CPU per call | ${afterBefore(cpu.base, cpu.service)} |`);
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
