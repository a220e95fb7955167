/**
 * bench/base — the same-run before/after switch of the benches (`core`, `redis`, `server`, `paths`):
 * `BENCH_BASE=/path/to/another/checkout` (compiled: its dist/ holds the output of `npx tsc -p tsconfig.json`) makes a
 * suite run that build's ratekeeper as one more contender, in the same rounds as this build, alternated with it, and
 * print this build / that build per round: the median and the spread (min–max) of those per-round ratios. The other
 * build is loaded through its public entry points (dist/src/index.js, dist/src/stores/redis/index.js,
 * dist/src/server/serve.js), so a renovated inside does not stop the comparison. Also the statistics every suite's
 * tables share (median, spread).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

if (process.env.BENCH_BASELINE !== undefined) {
  throw new Error('bench: BENCH_BASELINE is now BENCH_BASE=<another checkout> (or its dist/ directory): one switch for every suite');
}

/**
 * BASE — the other build's compiled directory (the one holding src/ and bench/ as JavaScript), from BENCH_BASE: a
 * checkout (its dist/ is taken) or that dist/ itself; undefined without BENCH_BASE.
 */
export const BASE: string | undefined = ((): string | undefined => {
  const given = process.env.BENCH_BASE;
  if (given === undefined || given === '') return undefined;
  const dir = resolve(given);
  for (const dist of [join(dir, 'dist'), dir]) if (existsSync(join(dist, 'src', 'index.js'))) return dist;
  throw new Error(`bench: BENCH_BASE=${given} holds no compiled ratekeeper (no dist/src/index.js nor src/index.js): run npx tsc -p tsconfig.json there first`);
})();

/** BASE_NAME — how the tables name the other build. */
export const BASE_NAME = 'base';

/** baseImport — a module of the other build, by its path under dist/ (`src/index.js`). */
export async function baseImport<T>(path: string): Promise<T> {
  if (BASE === undefined) throw new Error('bench: baseImport without BENCH_BASE');
  return (await import(pathToFileURL(join(BASE, path)).href)) as T;
}

/** median — the middle value (the upper one of an even count). */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[xs.length >> 1];
}

/** spread — `median (min–max)` of `xs`, with `digits` decimals. */
export function spread(xs: readonly number[], digits = 2): string {
  return `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
}

/**
 * afterBefore — this build / the base per round (`after[i] / before[i]`, both measured in round i), as
 * `median× (min–max)`. For a cost (µs, CPU per call) pass them swapped, so that above 1 always means this build is faster.
 */
export function afterBefore(after: readonly number[], before: readonly number[]): string {
  const r = after.map((a, i) => a / before[i]);
  return `${median(r).toFixed(3)}× (${Math.min(...r).toFixed(3)}–${Math.max(...r).toFixed(3)})`;
}

/** baseHeading — the line above a suite's before/after table. */
export function baseHeading(what: string): string {
  return `\n### This build / base (${BASE}): ${what}\n\nPer round, this build's figure over the base's, both measured in that round; median (min–max). Above 1: this build is faster.\n`;
}
