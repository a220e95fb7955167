/**
 * bench/multi — a compound request of 2 items (checkAll) side by side with two plain checks, in one run
 * (`npm run bench multi`): on the memory store (checkAllSync and checkAll vs two checkSync / two check), and on a
 * standalone redis-server it starts itself (one compound call, one round trip, vs two checks sent together and vs
 * two checks one after the other), one request at a time and with 64 in flight. Alternating rounds, best and
 * spread of each. The machine is shared: the numbers are noisy.
 */
import { Redis } from 'ioredis';
import { limiter, rules, memoryStore, checkAll, checkAllSync } from '../src/index.js';
import { RedisStore } from '../src/stores/redis/index.js';
import { RedisServer } from '../test/support/redis.js';

const KEYS = 10_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RUN_MS = Number(process.env.BENCH_MS ?? 1000);
const huge = { limit: 1e12, per: '1s' as const };

type Contender = [name: string, batch: (n: number) => unknown | Promise<unknown>, n: number];

/** race — rounds in which each contender runs for RUN_MS in turn; per contender the median and the spread (min–max) of its rates, requests/s. */
async function race(contenders: Contender[]): Promise<{ name: string; median: number; min: number; max: number }[]> {
  for (const [, batch, n] of contenders) await batch(n);
  const rates = contenders.map((): number[] => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (let c = 0; c < contenders.length; c++) {
      const [, batch, n] = contenders[c];
      let ops = 0;
      const start = performance.now();
      while (performance.now() - start < RUN_MS) {
        await batch(n);
        ops += n;
      }
      rates[c].push(ops / ((performance.now() - start) / 1000));
    }
  }
  return contenders.map(([name], c) => {
    const s = [...rates[c]].sort((a, b) => a - b);
    return { name, median: s[s.length >> 1], min: s[0], max: s[s.length - 1] };
  });
}

const fmt = (x: number): string => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} M/s` : `${(x / 1e3).toFixed(1)} k/s`);
function table(title: string, rows: Awaited<ReturnType<typeof race>>, ratios: [string, string, string][]): void {
  console.log(`| ${title} | requests/s (median) | spread (min–max) |`);
  console.log('|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${fmt(r.median)} | ${fmt(r.min)}–${fmt(r.max)} |`);
  console.log();
  const get = (n: string) => rows.find((r) => r.name === n)!.median;
  console.log('| ratio (medians) | value |');
  console.log('|---|---|');
  for (const [label, a, b] of ratios) console.log(`| ${label} | ${(get(a) / get(b)).toFixed(2)}× |`);
  console.log();
}

async function memory(): Promise<void> {
  const store = memoryStore({ maxKeys: 2 * KEYS });
  const a = limiter({ rules: [rules.gcra(huge)], store });
  const b = limiter({ rules: [rules.fixedWindow(huge), rules.tokenBucket({ ...huge, name: 'tb' })], store });
  const one = limiter({ rules: [rules.gcra(huge)], store: memoryStore({ maxKeys: 2 * KEYS }) });
  const N = {
    sync2: 'two checkSync() (2 items, no all-or-nothing)',
    allSync: 'checkAllSync(), 2 items',
    check2: 'two check(), awaited together (Promise.all)',
    all: 'checkAll(), 2 items (await)',
    anchor: 'checkSync(), 1 item (the anchor: unchanged)',
  };
  const rows = await race([
    [N.sync2, (n) => { for (let i = 0; i < n; i++) { a.checkSync(keys[i]); b.checkSync(keys[i]); } }, KEYS],
    [N.allSync, (n) => { for (let i = 0; i < n; i++) checkAllSync([{ limiter: a, key: keys[i] }, { limiter: b, key: keys[i] }]); }, KEYS],
    [N.check2, async (n) => { for (let i = 0; i < n; i++) await Promise.all([a.check(keys[i]), b.check(keys[i])]); }, KEYS],
    [N.all, async (n) => { for (let i = 0; i < n; i++) await checkAll([{ limiter: a, key: keys[i] }, { limiter: b, key: keys[i] }]); }, KEYS],
    [N.anchor, (n) => { for (let i = 0; i < n; i++) one.checkSync(keys[i]); }, KEYS],
  ]);
  table('memory store, 10k keys round-robin, nothing refused', rows, [
    ['checkAllSync / two checkSync', N.allSync, N.sync2],
    ['checkAll / two check (Promise.all)', N.all, N.check2],
  ]);
}

async function redis(): Promise<void> {
  const server = await RedisServer.start();
  const client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
  try {
    const store = new RedisStore({ client, prefix: 'bm:' });
    const a = limiter({ rules: [rules.gcra(huge)], store });
    const b = limiter({ rules: [rules.fixedWindow(huge), rules.tokenBucket({ ...huge, name: 'tb' })], store });
    const N = {
      seq: 'two check(), one after the other (2 round trips)',
      par: 'two check(), sent together (Promise.all)',
      all: 'checkAll(), 2 items (1 round trip)',
      seq64: '64 in flight: two check() sent together',
      all64: '64 in flight: checkAll(), 2 items',
    };
    let k = 0;
    const next = () => keys[k++ % KEYS];
    const inflight = (fn: () => Promise<unknown>) => async (n: number) => {
      await Promise.all(Array.from({ length: 64 }, async () => { for (let i = 0; i < n / 64; i++) await fn(); }));
    };
    const rows = await race([
      [N.seq, async (n) => { for (let i = 0; i < n; i++) { const key = next(); await a.check(key); await b.check(key); } }, 200],
      [N.par, async (n) => { for (let i = 0; i < n; i++) { const key = next(); await Promise.all([a.check(key), b.check(key)]); } }, 200],
      [N.all, async (n) => { for (let i = 0; i < n; i++) { const key = next(); await checkAll([{ limiter: a, key }, { limiter: b, key }]); } }, 200],
      [N.seq64, inflight(() => { const key = next(); return Promise.all([a.check(key), b.check(key)]); }), 6_400],
      [N.all64, inflight(() => { const key = next(); return checkAll([{ limiter: a, key }, { limiter: b, key }]); }), 6_400],
    ]);
    table('standalone Redis (loopback), requests of 2 items', rows, [
      ['one at a time: checkAll / two checks sent together', N.all, N.par],
      ['one at a time: checkAll / two checks one after the other', N.all, N.seq],
      ['64 in flight: checkAll / two checks sent together', N.all64, N.seq64],
    ]);
  } finally {
    client.disconnect();
    await server.stop();
  }
}

console.log(`node ${process.version}, ${RUN_MS} ms × ${ROUNDS} alternating rounds per row; a shared, noisy machine\n`);
await memory();
await redis();
