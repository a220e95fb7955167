import { checkOptionsObject } from '../core/options.js';
import type { ReplayResult } from './replay.js';
import type { Figure, Marker } from './scenarios.js';
import { summarize, seconds } from './summary.js';
import type { TrueRate } from './trace.js';

/**
 * figures — the Vega-Lite specifications of the simulator's plots, as plain JSON values. Nothing here needs vega:
 * plot.ts compiles and renders them.
 */

/** VegaLiteSpec — a Vega-Lite specification (JSON). */
export type VegaLiteSpec = Record<string, unknown>;

/** FigureOptions — what to draw. */
export interface FigureOptions {
  title: string;
  /** figures — the panels, top to bottom. */
  figures: readonly Figure[];
  /** truth — the true rate of generated clients, drawn dashed under the estimates. */
  truth?: readonly TrueRate[];
  markers?: readonly Marker[];
  /** showLimit — draw each rate rule's limit (per second) on the estimate panels. @default true */
  showLimit?: boolean;
  /** origin — ms subtracted from every time on the x axis (a trace of epoch timestamps starts at 0). @default 0 */
  origin?: number;
  /** maxKeys — the busiest keys drawn; the CSV has all of them. @default 4 */
  maxKeys?: number;
}

const FIGURE_OPTIONS: ReadonlySet<string> = new Set(['title', 'figures', 'truth', 'markers', 'showLimit', 'origin', 'maxKeys']);

/** COLORS — sent red and admitted blue, as in the EARRRL document; the estimates of several limiters in turn. */
const SENT = '#d62728';
const ADMITTED = '#1f77b4';
const TRUE_RATE = '#555555';
const LIMIT = '#ff7f0e';
const ESTIMATES = ['#1f77b4', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

const WIDTH = 860;
const HEIGHT = 190;

/** figureSpec — the plot of a replay: one vertical section per figure, one row per key, one column per limiter. */
export function figureSpec(result: ReplayResult, options: FigureOptions): VegaLiteSpec {
  checkOptionsObject(options, FIGURE_OPTIONS, 'figureSpec', 'ERR_ARGUMENT');
  const origin = options.origin ?? 0;
  const sec = (ms: number): number => (ms - origin) / 1000;
  const x0 = sec(result.from);
  const x1 = sec(result.until);
  const keys = busiest(result, options.maxKeys ?? 4);
  const xTitle = origin === 0 ? 'time (s)' : `time (s since ${new Date(origin).toISOString()})`;
  const x = { field: 't', type: 'quantitative', title: xTitle, scale: { domain: [x0, x1], nice: false, zero: false, padding: 0 } };

  const markers = (options.markers ?? []).map((m) => ({ t: sec(m.t), label: m.label }));
  const markerLayers = markers.length === 0 ? [] : [
    { data: { values: markers }, mark: { type: 'rule', strokeDash: [2, 3], color: '#888888' }, encoding: { x: { field: 't', type: 'quantitative' } } },
    {
      data: { values: markers },
      mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 4, color: '#666666', fontSize: 10 },
      encoding: { x: { field: 't', type: 'quantitative' }, y: { value: 0 }, text: { field: 'label' } },
    },
  ];

  const datasets: Record<string, unknown[]> = {};
  const sections: VegaLiteSpec[] = [];

  // Estimates alone, and no rule measures a rate: show what was admitted instead of nothing.
  const figures = options.figures.some((f) => f === 'cumulative') || result.estimates.length > 0 ? options.figures : [...options.figures, 'cumulative' as const];
  for (const figure of figures) {
    if (figure === 'cumulative') {
      datasets.cumulative = thin(cumulativeRows(result, keys, sec), (r) => `${r.limiter}\u0000${r.key}\u0000${r.series}`, x0, x1);
      const lockouts = lockoutPoints(result, sec, origin);
      const rows = keys.map((key) => ({
        hconcat: result.limiters.map((l) => ({
          title: { text: keys.length > 1 || result.keys.length > 1 ? `${l.name} — ${key}` : l.name, fontSize: 12 },
          width: Math.floor((WIDTH - 40 * (result.limiters.length - 1)) / result.limiters.length),
          height: HEIGHT + 40,
          layer: [
            {
              data: { name: 'cumulative' },
              transform: [{ filter: { and: [{ field: 'limiter', equal: l.name }, { field: 'key', equal: key }] } }],
              mark: { type: 'line', interpolate: 'step-after', strokeWidth: 1.8 },
              encoding: {
                x,
                y: { field: 'value', type: 'quantitative', title: 'cumulative requests' },
                color: { field: 'series', type: 'nominal', title: null, scale: { domain: ['sent', 'admitted'], range: [SENT, ADMITTED] }, legend: { orient: 'top-left' } },
              },
            },
            ...markerLayers,
            ...lockoutLayers(lockouts.filter((p) => p.limiter === l.name && p.key === key)),
          ],
        })),
      }));
      sections.push({ vconcat: rows });
    } else {
      const series = estimateSeries(result);
      if (series.length === 0) continue; // no rule measures a rate: nothing to draw
      datasets.estimates = thin(estimateRows(result, keys, sec, series), (r) => `${r.key}\u0000${r.series}`, x0, x1);
      const truth = options.truth ?? [];
      const limits = options.showLimit === false ? [] : limitLines(result, series);
      const domain = [...series.map((s) => s.label), ...(truth.length > 0 ? ['true rate'] : []), ...(limits.length > 0 ? ['limit'] : [])];
      const range = [...series.map((_, i) => ESTIMATES[i % ESTIMATES.length]), ...(truth.length > 0 ? [TRUE_RATE] : []), ...(limits.length > 0 ? [LIMIT] : [])];
      const dash = [...series.map(() => [1, 0]), ...(truth.length > 0 ? [[6, 4]] : []), ...(limits.length > 0 ? [[2, 2]] : [])];
      const legend = { orient: 'top', direction: 'horizontal' };
      const color = { field: 'series', type: 'nominal', title: null, scale: { domain, range }, legend };
      const strokeDash = { field: 'series', type: 'nominal', title: null, scale: { domain, range: dash }, legend };
      const rows = keys.map((key) => {
        const layers: unknown[] = [{
          data: { name: 'estimates' },
          transform: [{ filter: { field: 'key', equal: key } }],
          mark: { type: 'line', strokeWidth: 1.4, clip: true },
          encoding: { x, y: { field: 'value', type: 'quantitative', title: 'requests per second' }, color, strokeDash, detail: { field: 'series' }, order: { field: 'seq', type: 'quantitative' } },
        }];
        const steps = truthSteps(truth.filter((r) => r.key === key), x0, x1, sec);
        if (steps.length > 0) {
          layers.push({
            data: { values: steps },
            mark: { type: 'line', interpolate: 'step-after', strokeWidth: 1.4 },
            encoding: { x, y: { field: 'value', type: 'quantitative' }, color, strokeDash },
          });
        }
        if (limits.length > 0) {
          layers.push({
            data: { values: limits.map((l) => ({ ...l, series: 'limit' })) },
            mark: { type: 'rule', strokeWidth: 1.2 },
            encoding: { y: { field: 'value', type: 'quantitative' }, color, strokeDash },
          });
        }
        return {
          title: { text: `${key}: estimated rate`, fontSize: 12 },
          width: WIDTH,
          height: HEIGHT,
          layer: [...layers, ...markerLayers],
        };
      });
      sections.push({ vconcat: rows });
    }
  }

  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: options.title, fontSize: 15, anchor: 'start' },
    background: 'white',
    padding: 12,
    datasets,
    vconcat: sections,
    spacing: 24,
    resolve: { scale: { color: 'independent', strokeDash: 'independent' } },
    config: { font: 'sans-serif', view: { stroke: '#dddddd' }, axis: { grid: true, gridColor: '#eeeeee' }, legend: { labelFontSize: 11, labelLimit: 480, symbolType: 'stroke' } },
  };
}

interface LockoutPoint {
  limiter: string;
  key: string;
  t: number;
  value: number;
  label: string;
  align: 'left' | 'right';
}

/**
 * lockoutPoints — per limiter and key, when it was first locked out and when it was last let back in (the story of
 * the abuser figure), placed on the admitted line.
 */
function lockoutPoints(result: ReplayResult, sec: (ms: number) => number, origin: number): LockoutPoint[] {
  const points: LockoutPoint[] = [];
  for (const s of summarize(result)) {
    if (s.lockouts.length === 0) continue;
    const admittedAt = (t: number): number => {
      let v = 0;
      for (const r of result.requests) if (r.limiter === s.limiter && r.key === s.key && r.t <= t) v = r.cumAdmitted;
      return v;
    };
    const first = s.lockouts[0];
    points.push({ limiter: s.limiter, key: s.key, t: sec(first.from), value: admittedAt(first.from), label: `${s.lockouts.length > 1 ? 'first refused' : 'locked out'} at ${seconds(first.from - origin)}`, align: 'left' });
    const last = s.lockouts[s.lockouts.length - 1];
    if (last.to !== undefined) {
      points.push({ limiter: s.limiter, key: s.key, t: sec(last.to), value: admittedAt(last.to), label: `let back in at ${seconds(last.to - origin)}${s.lockouts.length > 1 ? `\n(the last of ${s.lockouts.length} lockouts)` : ''}`, align: 'right' });
    }
  }
  return points;
}

/** lockoutLayers — a dot and a label for each lockout point of one panel. */
function lockoutLayers(points: readonly LockoutPoint[]): unknown[] {
  if (points.length === 0) return [];
  const enc = { x: { field: 't', type: 'quantitative' }, y: { field: 'value', type: 'quantitative' } };
  return [
    { data: { values: points }, mark: { type: 'point', filled: true, size: 40, color: '#000000' }, encoding: enc },
    ...(['left', 'right'] as const).map((align) => ({
      data: { values: points.filter((p) => p.align === align) },
      // "locked out" above the admitted line, to the right of its point; "let back in" below it, to the left.
      mark: align === 'left'
        ? { type: 'text', align, baseline: 'bottom', dx: 4, dy: -6, fontSize: 10, color: '#000000' }
        : { type: 'text', align, baseline: 'top', dx: -2, dy: 8, fontSize: 10, color: '#000000', lineBreak: '\n' },
      encoding: { ...enc, text: { field: 'label' } },
    })),
  ];
}

/** Row — one point of a line: its series, time (s) and value. */
interface Row {
  limiter?: string;
  key: string;
  series: string;
  t: number;
  value: number;
  seq?: number;
}

/**
 * thin — at most `buckets` slices of [x0, x1] per line, keeping in each slice only the first, last, lowest and
 * highest points (M4 aggregation), in their order: the drawn line is the same to the pixel, and the SVG of a long
 * trace stays small. Lines with fewer points than 4 × buckets are left whole.
 */
function thin(rows: Row[], line: (r: Row) => string, x0: number, x1: number, buckets = 1500): Row[] {
  const groups = new Map<string, number[]>();
  rows.forEach((r, i) => {
    const id = line(r);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = []));
    g.push(i);
  });
  const keep = new Uint8Array(rows.length);
  const width = (x1 - x0) / buckets || 1;
  for (const g of groups.values()) {
    if (g.length <= 4 * buckets) {
      for (const i of g) keep[i] = 1;
      continue;
    }
    let bucket = NaN;
    let first = -1, last = -1, lo = -1, hi = -1;
    const flush = (): void => {
      if (first >= 0) keep[first] = keep[last] = keep[lo] = keep[hi] = 1;
    };
    for (const i of g) {
      const b = Math.floor((rows[i].t - x0) / width);
      if (b !== bucket) {
        flush();
        bucket = b;
        first = last = lo = hi = i;
        continue;
      }
      last = i;
      if (rows[i].value < rows[lo].value) lo = i;
      if (rows[i].value > rows[hi].value) hi = i;
    }
    flush();
  }
  return rows.filter((_, i) => keep[i] === 1);
}

/** busiest — the keys with the most cost sent (under the first limiter), at most `max`, in first-appearance order. */
function busiest(result: ReplayResult, max: number): string[] {
  if (result.keys.length <= max) return result.keys;
  const first = result.limiters[0].name;
  const sent = new Map<string, number>();
  for (const r of result.requests) if (r.limiter === first) sent.set(r.key, (sent.get(r.key) ?? 0) + r.sent);
  const top = new Set([...result.keys].sort((a, b) => (sent.get(b) ?? 0) - (sent.get(a) ?? 0)).slice(0, max));
  return result.keys.filter((k) => top.has(k));
}

/** cumulativeRows — sent and admitted so far, per limiter and key, starting from 0 at `from`. */
function cumulativeRows(result: ReplayResult, keys: readonly string[], sec: (ms: number) => number): Row[] {
  const wanted = new Set(keys);
  const rows: Row[] = [];
  for (const l of result.limiters) {
    for (const key of keys) {
      rows.push({ limiter: l.name, key, t: sec(result.from), series: 'sent', value: 0 }, { limiter: l.name, key, t: sec(result.from), series: 'admitted', value: 0 });
    }
  }
  const last = new Map<string, { limiter: string; key: string; s: number; a: number }>();
  for (const r of result.requests) {
    if (!wanted.has(r.key)) continue;
    const t = sec(r.t);
    rows.push({ limiter: r.limiter, key: r.key, t, series: 'sent', value: r.cumSent }, { limiter: r.limiter, key: r.key, t, series: 'admitted', value: r.cumAdmitted });
    last.set(`${r.limiter}\u0000${r.key}`, { limiter: r.limiter, key: r.key, s: r.cumSent, a: r.cumAdmitted });
  }
  // Carry the last values to the end of the span, so the staircase does not stop at the last request.
  for (const v of last.values()) {
    rows.push({ limiter: v.limiter, key: v.key, t: sec(result.until), series: 'sent', value: v.s }, { limiter: v.limiter, key: v.key, t: sec(result.until), series: 'admitted', value: v.a });
  }
  return rows;
}

interface Series {
  limiter: string;
  rule: string;
  label: string;
}

/** estimateSeries — one line per (limiter, rate rule); named by the limiter alone when that is unambiguous. */
function estimateSeries(result: ReplayResult): Series[] {
  const seen = new Map<string, Series>();
  for (const e of result.estimates) {
    const id = `${e.limiter}\u0000${e.rule}`;
    if (!seen.has(id)) seen.set(id, { limiter: e.limiter, rule: e.rule, label: '' });
  }
  const list = [...seen.values()];
  const perLimiter = new Map<string, number>();
  for (const s of list) perLimiter.set(s.limiter, (perLimiter.get(s.limiter) ?? 0) + 1);
  for (const s of list) s.label = `estimate (${s.limiter}${(perLimiter.get(s.limiter) ?? 0) > 1 ? `, ${s.rule}` : ''})`;
  if (list.length === 1) list[0].label = `estimate (${list[0].limiter})`;
  return list;
}

function estimateRows(result: ReplayResult, keys: readonly string[], sec: (ms: number) => number, series: readonly Series[]): Row[] {
  const wanted = new Set(keys);
  const label = new Map(series.map((s) => [`${s.limiter}\u0000${s.rule}`, s.label]));
  // seq keeps the replay's order: a grid sample at t (before the requests at t), then the peek after a request at t.
  const rows: Row[] = [];
  result.estimates.forEach((e, seq) => {
    if (wanted.has(e.key)) rows.push({ key: e.key, t: sec(e.t), seq, series: label.get(`${e.limiter}\u0000${e.rule}`) as string, value: e.rate });
  });
  return rows;
}

/** limitLines — each rate rule's limit in requests per second (distinct values). */
function limitLines(result: ReplayResult, series: readonly Series[]): { value: number }[] {
  const values = new Set<number>();
  for (const s of series) {
    const rule = result.limiters.find((l) => l.name === s.limiter)?.rules.find((r) => r.name === s.rule);
    if (rule) values.add((rule.limit / rule.per) * 1000);
  }
  return [...values].map((value) => ({ value }));
}

/** truthSteps — a client's true rate as a step function over [x0, x1] (seconds): the sum of the rates in force. */
function truthSteps(rates: readonly TrueRate[], x0: number, x1: number, sec: (ms: number) => number): unknown[] {
  if (rates.length === 0) return [];
  const cuts = [...new Set([x0, x1, ...rates.flatMap((r) => [sec(r.from), sec(r.to)])])].filter((t) => t >= x0 && t <= x1).sort((a, b) => a - b);
  // The rate in force over [t, next cut); the last cut only ends the previous step.
  const value = (t: number): number => rates.reduce((sum, r) => (sec(r.from) <= t && t < sec(r.to) ? sum + r.rate : sum), 0);
  return cuts.map((t, i) => ({ t, value: value(i === cuts.length - 1 && i > 0 ? cuts[i - 1] : t), series: 'true rate' }));
}
