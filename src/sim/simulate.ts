import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkOptionsObject } from '../core/options.js';
import { figureSpec, type VegaLiteSpec } from './figures.js';
import { resultCsv } from './output.js';
import { renderSvg } from './plot.js';
import { replay, type LimiterSpec, type ReplayResult } from './replay.js';
import type { Figure, Marker, Scenario } from './scenarios.js';
import { describe, summarize, type KeySummary } from './summary.js';
import type { Trace, TrueRate } from './trace.js';

/** SimulationInput — a trace, what to replay it through, and how to plot it (a scenario, or a custom trace). */
export interface SimulationInput {
  /** name — the output files' base name. */
  name: string;
  title: string;
  trace: Trace;
  truth?: readonly TrueRate[];
  limiters: readonly LimiterSpec[];
  /** sampleEvery, from, until — ms, see ReplayOptions. */
  sampleEvery: number;
  from?: number;
  until?: number;
  figures: readonly Figure[];
  markers?: readonly Marker[];
  /** showLimit — draw the limit on the estimate panels. @default true */
  showLimit?: boolean;
  /** origin — ms subtracted from the plot's times. @default 0 */
  origin?: number;
}

const SIMULATION_INPUT: ReadonlySet<string> = new Set([
  'name', 'title', 'trace', 'truth', 'limiters', 'sampleEvery', 'from', 'until', 'figures', 'markers', 'showLimit', 'origin',
]);
const WRITE_OPTIONS: ReadonlySet<string> = new Set(['plot']);

/** Simulation — a replay, its summary and the specification of its plot. */
export interface Simulation {
  name: string;
  result: ReplayResult;
  summaries: KeySummary[];
  /** lines — the summary for people. */
  lines: string[];
  spec: VegaLiteSpec;
}

/** fromScenario — the input of a built-in scenario. */
export function fromScenario(s: Scenario): SimulationInput {
  return {
    name: s.name, title: s.title, trace: s.generated.trace, truth: s.generated.truth, limiters: s.limiters,
    sampleEvery: s.sampleEvery, from: s.from, until: s.until, figures: s.figures, markers: s.markers,
    showLimit: s.name === 'abuser',
  };
}

/** simulate — replays the input and builds its summary and plot specification (no I/O). */
export function simulate(input: SimulationInput): Simulation {
  checkOptionsObject(input, SIMULATION_INPUT, 'simulate', 'ERR_ARGUMENT');
  const result = replay(input.trace, { limiters: input.limiters, sampleEvery: input.sampleEvery, from: input.from, until: input.until });
  const summaries = summarize(result);
  const spec = figureSpec(result, {
    title: input.title, figures: input.figures, truth: input.truth, markers: input.markers, showLimit: input.showLimit, origin: input.origin,
  });
  return { name: input.name, result, summaries, lines: describe(summaries, { origin: input.origin }), spec };
}

/**
 * writeSimulation — writes `<name>.csv` and, unless `plot` is false, `<name>.svg` into `dir` (created if missing);
 * returns their paths. The plot is rendered first, so nothing is written when vega is missing.
 */
export async function writeSimulation(sim: Simulation, dir: string, options: { plot?: boolean } = {}): Promise<{ csv: string; svg?: string }> {
  checkOptionsObject(options, WRITE_OPTIONS, 'writeSimulation', 'ERR_ARGUMENT');
  const svg = options.plot === false ? undefined : await renderSvg(sim.spec);
  await mkdir(dir, { recursive: true });
  const csv = join(dir, `${sim.name}.csv`);
  await writeFile(csv, resultCsv(sim.result));
  if (svg === undefined) return { csv };
  const path = join(dir, `${sim.name}.svg`);
  await writeFile(path, svg);
  return { csv, svg: path };
}
