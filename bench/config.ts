/**
 * bench/config — the cost of `ServiceConfig.match` (envoy's GetLimit, plus the store key and the metric key) on
 * 2-entry descriptors: a literal hit, a value-less hit, a wildcard hit (third pattern of three), a miss. Beside it,
 * the floor any lookup pays: join the entries into one string and do one Map.get (no nesting, no fallback, no
 * wildcard). Contenders alternate in rounds; the table gives the median ns per match and the spread over rounds.
 * `npm run bench config`.
 */
import { parseConfig } from '../src/server/config/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const N = Number(process.env.BENCH_N ?? 1_000_000);
const VALUES = 1000;

const tenants = Array.from({ length: 100 }, (_, i) => `  - key: tenant
    value: t${i}
    descriptors:
      - key: route
        value: checkout
        rate_limit: { unit: second, requests_per_unit: 100 }
      - key: route
        rate_limit: { unit: second, requests_per_unit: 10 }
`).join('');
const config = parseConfig([{ name: 'bench.yaml', text: `domain: bench
descriptors:
${tenants}  - key: user
    descriptors:
      - key: action
        value: read
        rate_limit: { unit: minute, requests_per_unit: 600 }
  - key: path
    value: /static/*
    descriptors:
      - key: method
        rate_limit: { unit: second, requests_per_unit: 1000 }
  - key: path
    value: /api/*/orders
    descriptors:
      - key: method
        rate_limit: { unit: second, requests_per_unit: 50 }
  - key: path
    value: /api/v1/*
    descriptors:
      - key: method
        rate_limit: { unit: second, requests_per_unit: 20 }
` }]);

type Entries = { key: string; value: string }[];
const make = (f: (i: number) => Entries): Entries[] => Array.from({ length: VALUES }, (_, i) => f(i));
const cases: [string, Entries[]][] = [
  ['literal hit', make((i) => [{ key: 'tenant', value: `t${i % 100}` }, { key: 'route', value: 'checkout' }])],
  ['value-less hit', make((i) => [{ key: 'user', value: `user-${i}` }, { key: 'action', value: 'read' }])],
  ['wildcard hit', make((i) => [{ key: 'path', value: `/api/v1/users/${i}` }, { key: 'method', value: 'GET' }])],
  ['miss', make((i) => [{ key: 'unknown', value: `${i}` }, { key: 'method', value: 'GET' }])],
];
for (const [name, list] of cases.slice(0, 3)) {
  if (list.some((e) => config.match('bench', e) === undefined)) throw new Error(`bench: ${name} does not match`);
}

/** floor — one Map of every descriptor as one joined string: the least a lookup can do. */
const floor = new Map<string, number>();
for (const [, list] of cases) for (const e of list) floor.set(`bench\u0000${e[0].key}\u0000${e[0].value}\u0000${e[1].key}\u0000${e[1].value}`, 1);

let sink = 0;
function runMatch(list: Entries[]): void {
  for (let i = 0; i < N; i++) {
    const m = config.match('bench', list[i % VALUES]);
    if (m !== undefined) sink += m.key.charCodeAt(m.key.length - 1); // read the key, as a store lookup would (flattens it)
  }
}
function runFloor(list: Entries[]): void {
  for (let i = 0; i < N; i++) {
    const e = list[i % VALUES];
    const k = `bench\u0000${e[0].key}\u0000${e[0].value}\u0000${e[1].key}\u0000${e[1].value}`;
    sink += floor.get(k) ?? 0; // hashes (and flattens) the joined key
  }
}

const contenders: [string, (l: Entries[]) => void][] = [];
for (const [name, list] of cases) {
  contenders.push([`match: ${name}`, () => runMatch(list)]);
  contenders.push([`floor (join + Map.get): ${name}`, () => runFloor(list)]);
}
const samples = contenders.map((): number[] => []);
for (const [, run] of contenders) run([]); // warm-up: JIT both paths
for (let r = 0; r < ROUNDS; r++) {
  contenders.forEach(([, run], c) => {
    const t0 = process.hrtime.bigint();
    run([]);
    samples[c].push(Number(process.hrtime.bigint() - t0) / N);
  });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`ServiceConfig.match, 2-entry descriptors, ${VALUES} distinct values, ${N} calls per round, ${ROUNDS} rounds (median; min–max)\n`);
console.log('| contender | ns/match | spread |');
console.log('|---|---:|---:|');
contenders.forEach(([name], c) => {
  const s = samples[c];
  console.log(`| ${name} | ${median(s).toFixed(0)} | ${Math.min(...s).toFixed(0)}–${Math.max(...s).toFixed(0)} |`);
});
if (sink === -1) console.log(sink);
