import { limiter, type Limiter } from '../limiter.js';
import { rules } from '../core/rules.js';
import { memoryStore } from '../stores/memory.js';
import { serveAdmin, type AdminServer } from './serve.js';

/** DemoOptions — where the demo's dashboard listens, and for how long it runs. */
export interface DemoOptions {
  /** port — @default 6070 (0: a free one) */
  port?: number;
  /** host — @default '127.0.0.1' */
  host?: string;
  /** seconds — stop by itself after this long; without it, run until `close()`. */
  seconds?: number;
  /** token — the admin token (needed off loopback). */
  token?: string;
  /** print — where the URL and notes go. @default console.log */
  print?: (line: string) => void;
}

/** Demo — a running demo: the dashboard's URL, its limiters, and how to stop it. */
export interface Demo {
  url: string;
  limiters: Map<string, Limiter>;
  admin: AdminServer;
  /** done — settles when the demo stopped (after `seconds`, or `close()`). */
  done: Promise<void>;
  close(): Promise<void>;
}

/** ABUSERS — the demo's misbehaving clients, in the EARRRL document's shapes. */
export const ABUSERS = {
  steady: 'bot:steady 203.0.113.7',
  boundary: 'bot:window-edge 198.51.100.9',
  burst: 'scraper:burst 192.0.2.44',
} as const;

/**
 * driveTraffic — the demo's clients, on the real clock: every 50 ms each sends what its shape says for that slice of
 * time to `send(target, key)`, target 'api' (limit 10/s) or 'login' (10 per 10 s): 40 users (one api request every
 * 2 s, one login a minute), ABUSERS.steady at 16.7/s on api, ABUSERS.boundary with 10 logins on each side of every
 * 10 s boundary, ABUSERS.burst at 30/s on api for 2 s out of every 6 s. Returns the function that stops it.
 */
export function driveTraffic(send: (target: 'api' | 'login', key: string) => void): () => void {
  const TICK = 50;
  let carry = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    for (let u = 0; u < 40; u++) {
      if (Math.random() < (0.5 * TICK) / 1000) send('api', `user:${1000 + u}`);
      if (Math.random() < TICK / 60_000) send('login', `user:${1000 + u}`);
    }
    carry += (16.7 * TICK) / 1000;
    for (; carry >= 1; carry--) send('api', ABUSERS.steady);
    const inWindow = now % 10_000;
    if (inWindow >= 9_900 || inWindow < 100) for (let i = 0; i < 5; i++) send('login', ABUSERS.boundary);
    if (now % 6000 < 2000) for (let i = 0; i < 30 * TICK / 1000 + (Math.random() < 0.5 ? 1 : 0); i++) send('api', ABUSERS.burst);
  }, TICK);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * runDemo — the operators' view with simulated traffic, on the memory store and the real clock: 40 well-behaved
 * users, and three abusers of the EARRRL document's shapes — one steadily at 1.67× the limit of `api` (EARRRL keeps
 * refusing it for as long as it keeps it up), one sending a full window's worth on each side of every boundary of
 * `login`'s fixed window (which the fixed window admits: twice the limit within a second), and one in bursts of 3×
 * the rate. Prints the dashboard's URL.
 */
export async function runDemo(options: DemoOptions = {}): Promise<Demo> {
  const print = options.print ?? ((line: string) => console.log(line));
  const store = memoryStore({ maxKeys: 100_000 });
  const api = limiter({
    rules: [rules.earrrl({ limit: 10, per: '1s', halfLife: '10s', name: 'earrrl 10/s' }), rules.slidingLog({ limit: 1200, per: '1m', name: '1200/1m' })],
    store, observe: true,
  });
  const login = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '10s', name: '10/10s' })], store, observe: true });
  const limiters = new Map<string, Limiter>([['api', api], ['login', login]]);
  const startedAt = Date.now();
  const admin = await serveAdmin({
    limiters, host: options.host, port: options.port ?? 6070, token: options.token,
    config: () => ({
      object: { api: api.policy.rules, login: login.policy.rules, traffic: { users: 40, abusers: Object.values(ABUSERS) } },
      loadedAt: startedAt, files: [],
    }),
  });

  const stopTraffic = driveTraffic((target, key) => {
    (target === 'api' ? api : login).check(key).catch(() => undefined);
  });

  let stopped = false;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let stopTimer: NodeJS.Timeout | undefined;
  const close = async (): Promise<void> => {
    if (stopped) return done;
    stopped = true;
    stopTraffic();
    if (stopTimer !== undefined) clearTimeout(stopTimer);
    await admin.close();
    await Promise.all([api.close(), login.close()]);
    finish();
  };
  if (options.seconds !== undefined) stopTimer = setTimeout(() => void close(), options.seconds * 1000);
  print(`ratekeeper demo: simulated traffic on the limiters "api" (EARRRL 10/s) and "login" (fixed window 10/10s)`);
  print(`abusers: ${Object.values(ABUSERS).join(', ')}`);
  print(`dashboard: ${admin.url}`);
  return { url: admin.url, limiters, admin, done, close };
}
