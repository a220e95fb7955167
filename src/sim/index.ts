/** sim — the simulator: trace generators, the replay engine, summaries, plots (vega is loaded only by plot.ts). */
export { periodic, abuser, merge, sortTrace, parseTraceCsv, type Trace, type TraceRequest, type TrueRate, type Generated, type PeriodicOptions, type AbuserOptions, type TraceCsvOptions, type TimeUnit } from './trace.js';
export { replay, type LimiterSpec, type ReplayOptions, type ReplayResult, type RequestRecord, type EstimateSample } from './replay.js';
export { summarize, describe, type KeySummary, type Lockout } from './summary.js';
export { scenario, SCENARIOS, type Scenario, type ScenarioOptions, type Figure, type Marker } from './scenarios.js';
export { figureSpec, type VegaLiteSpec, type FigureOptions } from './figures.js';
export { resultCsv, CSV_HEADER } from './output.js';
export { toCsv, parseCsv, csvField, type Cell, type CsvRow } from './csv.js';
export { simulate, fromScenario, writeSimulation, type SimulationInput, type Simulation } from './simulate.js';
export { renderSvg, loadVega } from './plot.js';
