import { RatekeeperError, show } from '../core/errors.js';
import { checkOptionsObject } from '../core/options.js';
import { formatDuration } from '../core/duration.js';
import { rules } from '../core/rules.js';
import type { LimiterSpec } from './replay.js';
import { abuser, merge, periodic, type Generated } from './trace.js';

/** Marker — a moment worth a vertical line on the plot, ms. */
export interface Marker {
  t: number;
  label: string;
}

/** Figure — which story the plot tells: estimates vs true rates per client, or cumulative sent vs admitted per limiter. */
export type Figure = 'estimates' | 'cumulative';

/** Scenario — a trace, the limiters it is replayed through, and how to plot it. */
export interface Scenario {
  name: string;
  title: string;
  /** description — one sentence for the summary and `ratekeeper help`. */
  description: string;
  generated: Generated;
  limiters: LimiterSpec[];
  /** sampleEvery, from, until — ms: the estimate sampling (see ReplayOptions). */
  sampleEvery: number;
  from: number;
  until: number;
  /** figures — the plot's panels, top to bottom. */
  figures: Figure[];
  markers: Marker[];
}

/** ScenarioOptions — changes to a built-in scenario from the command line. */
export interface ScenarioOptions {
  /** limiters — replace the scenario's limiters. */
  limiters?: LimiterSpec[];
  /** halfLife — ms: the half-life of the scenario's own EARRRL limiter (ignored with `limiters`). */
  halfLife?: number;
}

const SCENARIO_OPTIONS: ReadonlySet<string> = new Set(['limiters', 'halfLife']);

const S = 1000;

/**
 * threeClients — the EARRRL document's first figures: clients sending 10/s, 1/s and 0.1/s from t = 50 s to
 * t = 200 s, measured by EARRRL. With a 10 s half-life the estimates reach half the true rate 10 s after the start,
 * converge within ~7 half-lives, and halve 10 s after the stop; with a 1 s half-life they react ten times faster
 * but swing around the true rate (the half-life / error trade-off). The limit (20/s) is above every client, and
 * accounting is strict, so the estimates do not depend on it.
 */
function threeClients(name: string, halfLife: number): Scenario {
  const start = 50 * S;
  const end = 200 * S;
  const generated = merge(
    periodic({ key: '10/s', rate: 10, start, end }),
    periodic({ key: '1/s', rate: 1, start, end }),
    periodic({ key: '0.1/s', rate: 0.1, start, end }),
  );
  const hl = formatDuration(halfLife);
  return {
    name,
    title: `EARRRL's estimate vs the true rate, half-life ${hl}`,
    description: `three clients at 10/s, 1/s and 0.1/s from t=50 s to t=200 s; EARRRL (half-life ${hl}) estimates vs true rates`,
    generated,
    limiters: [{ name: `EARRRL, half-life ${hl}`, rules: [rules.earrrl({ limit: 20, per: '1s', halfLife, name: 'earrrl' })] }],
    sampleEvery: 100,
    from: 0,
    until: 250 * S,
    figures: ['estimates'],
    markers: [
      { t: start, label: 'start' },
      { t: end, label: 'stop' },
      // One half-life after the start and the stop: the estimates are half-way there (labelled when there is room).
      ...(halfLife >= 5 * S ? [{ t: start + halfLife, label: '+1 half-life' }, { t: end + halfLife, label: '+1 half-life' }] : []),
    ],
  };
}

/**
 * abuserScenario — the EARRRL document's comparison: an abuser sends 1.67× a limit of 1 request/second from
 * t = 0, then obeys (exactly 1/s) from t = 150 s to t = 300 s.
 *
 * The windowed limiter is a fixed window of 30 requests per 30 s: 1/s on average, and windows long enough to see
 * the staircase (the quota is spent 18 s into each window, then everything is refused until the next one).
 * EARRRL is 1/s with a 20 s half-life: a fresh client may then send 1 + 1/λ = 1 + 20/ln 2 ≈ 29.9 requests at once,
 * the same burst as the window's 30, so both limiters start from the same allowance and differ only in memory.
 */
function abuserScenario(halfLife: number): Scenario {
  const obeyFrom = 150 * S;
  const generated = abuser({ key: 'abuser', limit: 1, factor: 1.67, start: 0, obeyFrom, end: 300 * S });
  const hl = formatDuration(halfLife);
  return {
    name: 'abuser',
    title: 'An abuser at 1.67× the limit (1/s) who obeys from t=150 s',
    description: `an abuser at 1.67× a limit of 1/s who obeys from t=150 s; a fixed window of 30/30s vs EARRRL (1/s, half-life ${hl}): cumulative sent vs admitted`,
    generated,
    limiters: [
      { name: 'windowed: fixed window 30/30s', rules: [rules.fixedWindow({ limit: 30, per: '30s', name: 'window' })] },
      { name: `EARRRL: 1/s, half-life ${hl}`, rules: [rules.earrrl({ limit: 1, per: '1s', halfLife, name: 'earrrl' })] },
    ],
    sampleEvery: 250,
    from: 0,
    until: 300 * S,
    figures: ['cumulative', 'estimates'],
    markers: [{ t: obeyFrom, label: 'obeys from here' }],
  };
}

/** SCENARIOS — the built-in scenarios, by name, with a one-line description. */
export const SCENARIOS: Readonly<Record<string, string>> = {
  'three-clients': 'three clients at 10/s, 1/s and 0.1/s from t=50 s to t=200 s; EARRRL estimate (half-life 10s) vs true rate',
  'three-clients-1s': 'the same with a 1 s half-life: faster, but noisier estimates',
  abuser: 'an abuser at 1.67x a limit of 1/s who obeys from t=150 s; fixed window 30/30s vs EARRRL (half-life 20s): cumulative sent vs admitted',
};

/** scenario — a built-in scenario by name, with the command line's changes. Throws naming the bad name. */
export function scenario(name: string, options: ScenarioOptions = {}): Scenario {
  checkOptionsObject(options, SCENARIO_OPTIONS, 'scenario', 'ERR_ARGUMENT');
  let s: Scenario;
  switch (name) {
    case 'three-clients': s = threeClients(name, options.halfLife ?? 10 * S); break;
    case 'three-clients-1s': s = threeClients(name, options.halfLife ?? 1 * S); break;
    case 'abuser': s = abuserScenario(options.halfLife ?? 20 * S); break;
    default:
      throw new RatekeeperError(`unknown scenario ${show(name)}: choose one of ${Object.keys(SCENARIOS).join(', ')}, or replay your own with --trace file.csv`, 'ERR_ARGUMENT');
  }
  if (options.limiters) {
    // Other limiters: the title names the trace, and the plot shows what they admitted, then any estimates.
    s.limiters = options.limiters;
    if (s.figures[0] === 'estimates') {
      s.title = 'Three clients at 10/s, 1/s and 0.1/s from t=50 s to t=200 s';
      s.figures = ['cumulative', 'estimates'];
      s.markers = s.markers.filter((m) => m.label !== '+1 half-life'); // of the scenario's own EARRRL
    }
  }
  return s;
}
