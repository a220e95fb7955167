#!/usr/bin/env node
/**
 * cli — the `ratekeeper` command. `ratekeeper simulate <scenario>` replays a built-in scenario, and
 * `ratekeeper simulate --trace file.csv --rules …` a trace of your own, through rules on a virtual clock, and writes
 * `<name>.svg` (a Vega-Lite plot) and `<name>.csv` (every decision and estimate sample). Exit codes: 0 done,
 * 1 failed (e.g. the plot libraries are missing, a file cannot be written), 2 bad arguments.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Algorithm } from './core/types.js';
import type { RuleConfig } from './core/algorithms/common.js';
import { RatekeeperError, show } from './core/errors.js';
import { formatDuration, parseDuration } from './core/duration.js';
import { ALGORITHMS, parseRules } from './core/rules.js';
import type { LimiterSpec } from './sim/replay.js';
import { SCENARIOS, scenario } from './sim/scenarios.js';
import { fromScenario, simulate, writeSimulation, type SimulationInput } from './sim/simulate.js';
import { parseTraceCsv, type TimeUnit } from './sim/trace.js';
import { renderSvg } from './sim/plot.js';


/** HELP — `ratekeeper help`: the commands, each with its own --help. */
const HELP = `ratekeeper — rate limiting that does not forgive a persistent abuser at every window boundary

Usage:
  ratekeeper serve --config PATH [options]       the rate limit service (see ratekeeper serve --help)
  ratekeeper config check PATH                   validate a service configuration
  ratekeeper health [--url URL]                  ask a running service's /healthcheck (exit 0 on a 200, else 1)
  ratekeeper simulate <scenario> [--out DIR] [--rules LIMITS [--algorithm NAME]]... [--half-life DURATION]
  ratekeeper simulate --trace FILE.csv --rules LIMITS [--algorithm NAME] [--half-life DURATION] [--out DIR]
  ratekeeper demo [--port 6070] [--http-port N] [--grpc-port N] [--seconds N]
  ratekeeper help

Commands:
  serve          the limiter service: Envoy's RLS v3 (gRPC), POST /json, POST /v1/check, GET /v1/auth, the admin
                 API and dashboard; memory or Redis                             (ratekeeper serve --help)
  config check   validate a service configuration and summarize its limits   (ratekeeper config --help)
  health         ask a running service's /healthcheck: the image's HEALTHCHECK (ratekeeper health --help)
  simulate       replay requests through rules on a virtual clock → a plot (SVG) and a CSV of every decision
                                                                              (ratekeeper simulate --help)
  demo           the service with simulated traffic and the operators' dashboard (ratekeeper demo --help)
  help           this text

Scenarios of simulate (the EARRRL document's figures):
${Object.entries(SCENARIOS).map(([name, what]) => `  ${name.padEnd(18)}${what}`).join('\n')}

Options of every command:
  --help, -h             the command's usage and options
  --version              the version
`;

/** SIMULATE_HELP — `ratekeeper simulate --help`: the simulator's options. */
const SIMULATE_HELP = `ratekeeper simulate — replays requests through rules on a virtual clock (the memory store) and writes
<name>.svg, a plot, and <name>.csv, every decision and rate estimate; it prints what was admitted and when clients
were locked out.

Usage:
  ratekeeper simulate <scenario> [--out DIR] [--rules LIMITS [--algorithm NAME]]... [--half-life DURATION]
  ratekeeper simulate --trace FILE.csv --rules LIMITS [--algorithm NAME] [--half-life DURATION] [--out DIR]

Scenarios (the EARRRL document's figures):
${Object.entries(SCENARIOS).map(([name, what]) => `  ${name.padEnd(18)}${what}`).join('\n')}
  fleet-local       the Redis store's local-first mode: over-admission of a flood on one key against flushEvery
                    and N instances, beside the bound (N − 1) × maxUnsynced (docs/fleet.md)

Options:
  --out DIR, -o DIR      where to write the files (created if missing)                     default: .
  --rules LIMITS         the limits of one limiter, e.g. '30/1m' or '1/s; 20/min'; repeat it to compare limiters
                         (replaces a scenario's own limiters)
  --algorithm NAME       the algorithm of the matching --rules, or of all of them when given once: fixedWindow,
                         slidingWindow, slidingLog, tokenBucket, leakyBucket, gcra, earrrl, exponential
                         (or kebab-case: fixed-window …)                                   default: slidingLog
  --half-life DURATION   earrrl's half-life, e.g. 10s; on a scenario without --rules, its EARRRL's half-life
  --accounting MODE      strict (refused attempts count) or leaky      default: strict for earrrl, else leaky
  --sample DURATION      how often to sample the rate estimates         default: the scenario's, or halfLife/20
  --trace FILE           a CSV of requests: a timestamp column, optionally key and cost columns, with or without
                         a header (t|time|timestamp|ts, key, cost); timestamps in seconds or ISO 8601
  --time-unit s|ms       the unit of the trace's numeric timestamps                        default: s
  --key KEY              the key of trace rows without one                                 default: client
  --name NAME            the output files' base name for a trace            default: the trace file's name
  --no-plot              write the CSV only (no need for vega and vega-lite)
  --help, -h             this text

Examples:
  ratekeeper simulate abuser --out out
  ratekeeper simulate three-clients --half-life 1s --out out
  ratekeeper simulate abuser --rules 30/30s --algorithm fixed-window --rules 1/s --algorithm earrrl --half-life 10s
  ratekeeper simulate --trace requests.csv --rules '30/1m' --algorithm earrrl --half-life 10s --out out
`;

/** UsageError — bad arguments: the message is for the user, and the exit code is 2. */
class UsageError extends Error {}

function usage(message: string): never {
  throw new UsageError(message);
}

/** algorithmOf — a command-line algorithm name (`fixedWindow` or `fixed-window`) as core spells it. */
function algorithmOf(name: string): Algorithm {
  const camel = name.trim().replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const found = ALGORITHMS.find((a) => a.toLowerCase() === camel.toLowerCase());
  if (!found) usage(`unknown --algorithm ${show(name)}: choose one of ${ALGORITHMS.join(', ')}`);
  return found;
}

function duration(value: string, flag: string): number {
  try {
    return parseDuration(value, flag);
  } catch {
    return usage(`${flag} must be a duration like 500ms, 10s or 1m, got ${show(value)}`);
  }
}

interface Flags {
  out?: string;
  rules?: string[];
  algorithm?: string[];
  'half-life'?: string;
  accounting?: string;
  sample?: string;
  trace?: string;
  'time-unit'?: string;
  key?: string;
  name?: string;
  'no-plot'?: boolean;
  help?: boolean;
  version?: boolean;
}

/** limiterSpecs — one limiter per --rules, with its --algorithm (or the only one), or undefined without --rules. */
function limiterSpecs(flags: Flags): LimiterSpec[] | undefined {
  const texts = flags.rules ?? [];
  const algorithms = (flags.algorithm ?? []).map(algorithmOf);
  if (texts.length === 0) {
    if (algorithms.length > 0) usage(`--algorithm needs --rules, e.g. --rules '30/1m' --algorithm ${algorithms[0]}`);
    if (flags.accounting !== undefined) usage(`--accounting needs --rules, e.g. --rules '30/1m' --accounting ${flags.accounting}`);
    return undefined;
  }
  if (algorithms.length > 1 && algorithms.length !== texts.length) {
    usage(`give one --algorithm for all --rules or one per --rules: got ${texts.length} --rules and ${algorithms.length} --algorithm`);
  }
  const accounting = flags.accounting;
  if (accounting !== undefined && accounting !== 'strict' && accounting !== 'leaky') usage(`--accounting must be strict or leaky, got ${show(accounting)}`);
  const halfLife = flags['half-life'] === undefined ? undefined : duration(flags['half-life'], '--half-life');
  if (halfLife !== undefined && !algorithms.includes('earrrl')) usage(`--half-life ${flags['half-life']} applies to --algorithm earrrl only`);
  return texts.map((text, i) => {
    const algorithm = algorithms[i] ?? algorithms[0] ?? 'slidingLog';
    if (algorithm === 'earrrl' && halfLife === undefined) usage(`--algorithm earrrl needs --half-life, e.g. --half-life 10s`);
    let list: RuleConfig[];
    try {
      list = parseRules(text, { algorithm, halfLife, accounting: accounting as 'strict' | 'leaky' | undefined });
    } catch (e) {
      return usage(`bad --rules ${show(text)}: ${(e as Error).message.replace(/^ratekeeper: /, '')}`);
    }
    const name = `${algorithm} ${text.trim()}${algorithm === 'earrrl' ? `, half-life ${formatDuration(halfLife as number)}` : ''}${accounting ? `, ${accounting}` : ''}`;
    return { name, rules: list };
  });
}

/** sampleStep — the default estimate sampling for a trace: a twentieth of the shortest averaging time, 10 ms … 1 s. */
function sampleStep(limiters: readonly LimiterSpec[], span: number, keys: number): number {
  let shortest = Infinity;
  for (const l of limiters) {
    for (const r of l.rules as readonly RuleConfig[]) {
      if (r.algorithm === 'earrrl') shortest = Math.min(shortest, r.halfLife);
      if (r.algorithm === 'exponential') shortest = Math.min(shortest, r.per);
    }
  }
  if (shortest === Infinity) return 0;
  const step = Math.min(1000, Math.max(10, shortest / 20));
  return Math.max(step, (span * keys) / 200_000); // at most ~200 000 samples per limiter
}

async function traceInput(flags: Flags, limiters: LimiterSpec[] | undefined): Promise<SimulationInput> {
  const file = flags.trace as string;
  if (!limiters) usage(`--trace needs --rules, e.g. --trace ${file} --rules '30/1m' --algorithm earrrl --half-life 10s`);
  const unit = flags['time-unit'] ?? 's';
  if (unit !== 's' && unit !== 'ms') usage(`--time-unit must be s or ms, got ${show(unit)}`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    return usage(`cannot read --trace ${show(file)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let trace;
  try {
    trace = parseTraceCsv(text, { timeUnit: unit as TimeUnit, key: flags.key, source: file });
  } catch (e) {
    return usage((e as Error).message.replace(/^ratekeeper: /, ''));
  }
  const first = trace[0].t;
  const last = trace[trace.length - 1].t;
  let tail = 0;
  for (const l of limiters) for (const r of l.rules as readonly RuleConfig[]) if (r.algorithm === 'earrrl') tail = Math.max(tail, 3 * r.halfLife);
  const keys = new Set(trace.map((r) => r.key)).size;
  const name = flags.name ?? basename(file, extname(file));
  if (!/^[\w.-]+$/.test(name)) usage(`--name must be a file name of letters, digits, '.', '_' or '-', got ${show(name)}`);
  return {
    name,
    title: `${basename(file)}: ${trace.length} requests from ${keys} key${keys === 1 ? '' : 's'}`,
    trace,
    limiters,
    sampleEvery: flags.sample !== undefined ? duration(flags.sample, '--sample') : sampleStep(limiters, last + tail - first, keys),
    from: first,
    until: last + tail,
    figures: ['cumulative', 'estimates'],
    showLimit: true,
    // Epoch timestamps are plotted from the first request; small ones as they are.
    origin: first > 1e9 ? Math.floor(first / 1000) * 1000 : 0,
  };
}

async function simulateCommand(positionals: string[], flags: Flags): Promise<number> {
  if (positionals.length > 1) usage(`simulate takes one scenario, got ${positionals.map((p) => show(p)).join(' ')}`);
  const limiters = limiterSpecs(flags);
  let input: SimulationInput;
  if (flags.trace !== undefined) {
    if (positionals.length > 0) usage(`give a scenario or --trace, not both: got ${show(positionals[0])} and --trace ${show(flags.trace)}`);
    input = await traceInput(flags, limiters);
  } else {
    if (positionals.length === 0) usage(`simulate needs a scenario (${Object.keys(SCENARIOS).join(', ')}) or --trace file.csv`);
    for (const f of ['time-unit', 'key', 'name'] as const) if (flags[f] !== undefined) usage(`--${f} applies to --trace only`);
    const name = positionals[0];
    if (name === 'fleet-local') return fleetLocalCommand(flags);
    if (!Object.hasOwn(SCENARIOS, name)) usage(`unknown scenario ${show(name)}: choose one of ${Object.keys(SCENARIOS).join(', ')}, or replay your own with --trace file.csv`);
    const halfLife = flags['half-life'] === undefined || limiters ? undefined : duration(flags['half-life'], '--half-life');
    input = fromScenario(scenario(name, { limiters, halfLife }));
    if (flags.sample !== undefined) input.sampleEvery = duration(flags.sample, '--sample');
  }
  const outDir = flags.out ?? '.';
  if (flags.trace !== undefined && resolve(outDir, `${input.name}.csv`) === resolve(flags.trace)) {
    usage(`the output ${join(outDir, `${input.name}.csv`)} would overwrite the trace ${show(flags.trace)}: choose another --out or --name`);
  }
  let sim;
  try {
    sim = simulate(input);
  } catch (e) {
    if (e instanceof RatekeeperError) usage(e.message.replace(/^ratekeeper: /, ''));
    throw e;
  }
  const paths = await writeSimulation(sim, outDir, { plot: !flags['no-plot'] });
  const origin = input.origin ?? 0;
  const when = origin === 0 ? [] : [`(times in seconds since ${new Date(origin).toISOString()})`];
  const out = [`${input.name}: ${input.title}`, ...when, ...sim.lines, paths.svg ? `wrote ${paths.svg} and ${paths.csv}` : `wrote ${paths.csv}`];
  process.stdout.write(out.join('\n') + '\n');
  return 0;
}

/**
 * fleetLocalCommand — `ratekeeper simulate fleet-local`: the Redis store's local-first mode on a virtual clock
 * (sim/fleet.ts), over-admission of a flood on one key against flushEvery and N beside the bound (N − 1) × maxUnsynced.
 */
async function fleetLocalCommand(flags: Flags): Promise<number> {
  for (const f of ['rules', 'algorithm', 'half-life', 'accounting', 'sample', 'trace', 'time-unit', 'key', 'name'] as const) {
    if (flags[f] !== undefined) usage(`--${f} does not apply to simulate fleet-local`);
  }
  const { fleetScenario, fleetCsv, fleetSpec } = await import('./sim/fleet.js');
  const rows = fleetScenario();
  const outDir = flags.out ?? '.';
  const svg = flags['no-plot'] ? undefined : await renderSvg(fleetSpec(rows));
  await mkdir(outDir, { recursive: true });
  const csv = join(outDir, 'fleet-local.csv');
  await writeFile(csv, fleetCsv(rows));
  if (svg !== undefined) await writeFile(join(outDir, 'fleet-local.svg'), svg);
  const worst = rows.reduce((a, r) => Math.max(a, r.over - r.bound), -Infinity);
  const lines = [
    'fleet-local: a flood of 2 000/s per instance on one key (token bucket 100/s), maxUnsynced 10, flushEvery 1–200 ms, N = 2, 4, 8, 16',
    ...[2, 4, 8, 16].map((n) => `  N = ${String(n).padEnd(2)}  over-admitted at most ${Math.max(...rows.filter((r) => r.instances === n).map((r) => r.over))} (bound ${(n - 1) * 10})`),
    worst <= 0 ? '  never beyond the bound' : `  BEYOND the bound by ${worst}`,
    svg !== undefined ? `wrote ${join(outDir, 'fleet-local.svg')} and ${csv}` : `wrote ${csv}`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

async function main(argv: string[]): Promise<number> {
  // the service's commands parse their own flags, and load the service's dependencies only when run
  if (argv[0] === 'serve' || argv[0] === 'config' || argv[0] === 'health') {
    const server = await import('./server/cli.js');
    try {
      if (argv[0] === 'health') return await (await import('./server/probe.js')).healthCommand(argv.slice(1));
      return await (argv[0] === 'serve' ? server.serveCommand(argv.slice(1)) : server.configCommand(argv.slice(1)));
    } catch (e) {
      if (e instanceof server.ServeUsageError) usage(e.message);
      throw e;
    }
  }
  if (argv[0] === 'demo') {
    // a bad flag is a usage error (2); a listener that cannot bind is a failure (1), named by startService
    return (await import('./server/demo.js')).serviceDemoCommand(argv.slice(1)).catch((e: unknown) => {
      if (e instanceof RatekeeperError) throw e;
      return usage((e as Error).message);
    });
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        out: { type: 'string', short: 'o' },
        rules: { type: 'string', multiple: true },
        algorithm: { type: 'string', multiple: true },
        'half-life': { type: 'string' },
        accounting: { type: 'string' },
        sample: { type: 'string' },
        trace: { type: 'string' },
        'time-unit': { type: 'string' },
        key: { type: 'string' },
        name: { type: 'string' },
        'no-plot': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (e) {
    return usage(`${(e as Error).message} (see ratekeeper help)`);
  }
  const flags = parsed.values as Flags;
  const [command, ...rest] = parsed.positionals;
  if (flags.version) {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (flags.help && command === 'simulate') {
    process.stdout.write(SIMULATE_HELP);
    return 0;
  }
  if (flags.help || command === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (command === undefined) {
    process.stderr.write(HELP);
    return 2;
  }
  if (command !== 'simulate') usage(`unknown command ${show(command)}: use serve, config, health, simulate, demo or help`);
  return simulateCommand(rest, flags);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`ratekeeper: ${e.message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`ratekeeper: ${e instanceof Error ? e.message.replace(/^ratekeeper: /, '') : String(e)}\n`);
      process.exitCode = 1;
    }
  },
);
