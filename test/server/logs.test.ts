/**
 * test/server/logs — the service's logs (issue 16, item 5): `--log-format json` writes one object per line with
 * envoyproxy/ratelimit's field names (`@timestamp`, `level`, `@message`) plus fields; `--log-level` filters; the
 * startup names the store without its password and the failure policy; `--log-keys hash` hides client keys in the
 * log and in the admin's live tail while the admin API still answers with the real key; a real redis-server stopped
 * and restarted is logged down once and up once, with how long it was away.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisCluster, RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running } from '../../src/server/serve.js';
import { serveOptions, ServeUsageError } from '../../src/server/cli.js';
import { parseLogLevel } from '../../src/server/log.js';
import { describeStore, redactUrl } from '../../src/server/redact.js';
import { keyViewer } from '../../src/admin/keys.js';
import { http, waitFor } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
policies:
  login: { rules: '1/min' }
`;

/** Line — a JSON log line as parsed. */
type Line = Record<string, unknown> & { '@timestamp': string; level: string; '@message': string };

/** parse — every captured line as JSON (each must parse, and carry time, level and message). */
function parse(lines: string[]): Line[] {
  return lines.map((l) => {
    assert.ok(!l.includes('\n'), `one object per line: ${l}`);
    const o = JSON.parse(l) as Line;
    assert.match(o['@timestamp'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, l);
    assert.ok(['debug', 'info', 'warning', 'error'].includes(o.level), l);
    assert.equal(typeof o['@message'], 'string', l);
    return o;
  });
}

/** sse — the first `decision` events of GET /admin/events (at most `ms`), as parsed data, and the raw text seen. */
/**
 * awayAndBack — a Redis server (or Cluster node) killed while requests flow to `port` (POST /v1/check of policy
 * `login`, one every 10 ms, keys `k0`…`k<keys - 1>`, at most `most`), kept away about 1.5 s after the down line and
 * restarted; resolves 1.5 s after the up line (more probes and requests, to show no further line) with every log
 * line parsed, the down and up lines, when it was killed and restarted (epoch ms) and how many requests were answered.
 */
async function awayAndBack(o: { port: number; lines: string[]; server: { kill(): Promise<unknown>; spawn(): Promise<unknown> }; keys: number; most: number; leadMs: number; upWithinMs: number }): Promise<{ all: Line[]; down: Line[]; up: Line[]; killedAt: number; backAt: number; sent: number }> {
  let stop = false;
  let sent = 0;
  const load = (async () => {
    for (let i = 0; i < o.most && !stop; i++) {
      await http(o.port, 'POST', '/v1/check', { policy: 'login', key: `k${i % o.keys}` }, { timeoutMs: 5000 });
      sent++;
      await sleep(10);
    }
  })();
  await sleep(o.leadMs);
  await o.server.kill();
  const killedAt = Date.now();
  await waitFor('the down line', () => parse(o.lines).some((l) => l.event === 'store_down'), 8000);
  const AWAY = 1500;
  await sleep(Math.max(0, AWAY - (Date.now() - killedAt)));
  await o.server.spawn();
  const backAt = Date.now();
  await waitFor('the up line', () => parse(o.lines).some((l) => l.event === 'store_up'), o.upWithinMs);
  await sleep(1500); // more probes and requests: no further line
  stop = true;
  await load;
  const all = parse(o.lines);
  return { all, down: all.filter((l) => l.event === 'store_down'), up: all.filter((l) => l.event === 'store_up'), killedAt, backAt, sent };
}

function sse(url: string, want: number, ms: number): Promise<{ events: Record<string, unknown>[]; raw: string }> {
  return new Promise((resolve, reject) => {
    let raw = '';
    const events: Record<string, unknown>[] = [];
    const req = request(new URL('admin/events', url), (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        raw += c;
        events.length = 0;
        for (const m of raw.matchAll(/^event: decision\ndata: (.*)$/gm)) events.push(JSON.parse(m[1]) as Record<string, unknown>);
        if (events.length >= want) req.destroy();
      });
      res.on('close', () => resolve({ events: [...events], raw }));
    });
    req.on('error', (e) => (events.length >= want ? resolve({ events: [...events], raw }) : reject(e)));
    req.setTimeout(ms, () => req.destroy());
    req.end();
  });
}

describe('logs', () => {
  const running: Running[] = [];
  after(async () => {
    for (const r of running) await r.close();
  });

  test('json: one object per line with @timestamp, level and @message; the startup names the store; --log-level filters', async () => {
    const lines: string[] = [];
    const config = configFile(CONFIG);
    const r = await startService({ config, port: 0, grpcPort: 0, adminPort: -1, logFormat: 'json', logLevel: 'debug', log: (l) => lines.push(l) });
    running.push(r);
    const all = parse(lines);
    const store = all.find((o) => o.event === 'store');
    assert.ok(store, lines.join('\n'));
    assert.equal(store.store, 'memory');
    assert.equal(store.level, 'info');
    assert.match(store['@message'], /^store: memory/);
    assert.ok(all.some((o) => o.event === 'config_domain' && o.level === 'debug'), 'debug lines at debug');
    const listening = all.filter((o) => o.event === 'listening').map((o) => o.listener);
    assert.deepEqual(listening, ['http', 'grpc']);
    // a rejected reload is a warning, with the reason
    writeFileSync(config, 'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: fortnight, requests_per_unit: 2 }\n');
    await assert.rejects(r.reload());
    lines.length = 0;
    await r.close();

    // warn: the info and debug lines are gone; the same reload's rejection (via the watcher's path) stays
    const quiet: string[] = [];
    const q = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, logFormat: 'json', logLevel: 'warn', reloadPollMs: 50, reloadQuietMs: 50, log: (l) => quiet.push(l) });
    running.push(q);
    assert.deepEqual(quiet, [], 'nothing under warn at startup');
    const path = (q.service.config?.files ?? [])[0];
    writeFileSync(path, 'domain: api\ndescriptors: [ { key: user, rate_limit: { unit: fortnight, requests_per_unit: 2 } } ]\n');
    await waitFor('the rejection', () => quiet.length > 0, 5000);
    const [w] = parse(quiet);
    assert.equal(w.level, 'warning', quiet.join('\n'));
    assert.match(w['@message'], /^config reload rejected, the previous configuration keeps serving: .*fortnight/s);
    assert.ok(parse(quiet).every((o) => o.level === 'warning' || o.level === 'error'));
  });

  test('text: the lines as before (ratekeeper: <message>); the store line without the password', async () => {
    assert.equal(redactUrl('redis://app:s3cret@10.0.0.5:6379/2'), 'redis://app:***@10.0.0.5:6379/2');
    assert.equal(redactUrl('redis://:s3cret@10.0.0.5:6379'), 'redis://:***@10.0.0.5:6379');
    assert.equal(redactUrl('10.0.0.5:6379'), '10.0.0.5:6379');
    assert.doesNotMatch(redactUrl('redis://app:s3cret@[bad'), /s3cret/);
    const d = describeStore({ redisCluster: ['redis://:pw1@10.0.0.5:7000', 'redis://10.0.0.6:7000'], onStoreError: 'deny' });
    assert.equal(d.text, 'redis cluster redis://:***@10.0.0.5:7000, redis://10.0.0.6:7000 (failure policy deny: refuse every request until Redis answers again)');
    const lines: string[] = [];
    const r = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, log: (l) => lines.push(l) });
    running.push(r);
    assert.match(lines[0], /^ratekeeper: store: memory \(in this process; up to 100000 clients\)$/);
    assert.ok(lines.every((l) => l.startsWith('ratekeeper: ')), lines.join('\n'));
  });

  test('flags and envoyproxy/ratelimit\'s LOG_LEVEL / LOG_FORMAT (logrus: any case, warning)', () => {
    const base = ['--config', '/x'];
    const o = serveOptions(base, { LOG_LEVEL: 'WARNING', LOG_FORMAT: 'JSON' });
    assert.ok(o !== 'help');
    assert.equal(o.logLevel, 'warn');
    assert.equal(o.logFormat, 'json');
    const f = serveOptions([...base, '--log-level', 'debug', '--log-format', 'text', '--log-keys', 'hash', '--log-keys-secret', 'k'], { LOG_LEVEL: 'error', RATEKEEPER_LOG_KEYS: 'redact' });
    assert.ok(f !== 'help');
    assert.deepEqual([f.logLevel, f.logFormat, f.logKeys, f.logKeysSecret], ['debug', 'text', 'hash', 'k']);
    assert.equal(parseLogLevel('trace', 'x'), 'debug');
    assert.equal(parseLogLevel('Fatal', 'x'), 'error');
    assert.throws(() => serveOptions(base, { LOG_LEVEL: 'loud' }), (e: Error) => e instanceof ServeUsageError && /LOG_LEVEL must be debug, info, warn or error, got "loud"/.test(e.message));
    assert.throws(() => serveOptions([...base, '--log-format', 'xml'], {}), (e: Error) => e instanceof ServeUsageError && /--log-format must be text or json, got "xml"/.test(e.message));
    assert.throws(() => serveOptions([...base, '--log-keys', 'md5'], {}), /--log-keys must be plain, hash or redact, got "md5"/);
  });

  test('--log-keys hash: keys hashed in the log and the live tail; the admin API answers with the real key', async () => {
    const SECRET_KEY = 'sk_live_5f3a9c0d2e';
    const shown = `sha256:${createHash('sha256').update(SECRET_KEY).digest('hex').slice(0, 12)}`;
    const lines: string[] = [];
    const r = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, logFormat: 'json', logKeys: 'hash', log: (l) => lines.push(l) });
    running.push(r);
    const tail = sse(r.adminUrl!, 2, 5000);
    await sleep(100); // the tail is open
    assert.equal((await http(r.httpPort!, 'POST', '/v1/check', { policy: 'login', key: SECRET_KEY })).status, 200);
    assert.equal((await http(r.httpPort!, 'POST', '/v1/check', { policy: 'login', key: SECRET_KEY })).status, 429);
    const { events, raw } = await tail;
    assert.ok(events.length >= 1, raw);
    for (const e of events) assert.equal(e.key, shown, raw);
    assert.ok(!raw.includes(SECRET_KEY), 'the key is not in the tail');
    // an operator's block: the change is logged with the hashed key; the API itself takes and shows the real key
    const admin = Number(new URL(r.adminUrl!).port);
    const b = await http(admin, 'POST', '/admin/blocks', { key: SECRET_KEY, for: '1m', reason: 'leaked' });
    assert.equal(b.status, 201, b.text);
    assert.equal(b.json.key, SECRET_KEY);
    const inspect = await http(admin, 'GET', `/admin/keys/${encodeURIComponent(SECRET_KEY)}`);
    assert.equal(inspect.status, 200);
    assert.ok(inspect.text.includes(SECRET_KEY));
    const top = await http(admin, 'GET', '/admin/top');
    assert.ok(top.text.includes(SECRET_KEY), 'top keeps the real key');
    const change = parse(lines).find((o) => o.event === 'admin');
    assert.ok(change, lines.join('\n'));
    assert.equal(change.key, shown);
    assert.equal(change.what, 'block');
    assert.ok(!lines.join('\n').includes(SECRET_KEY), 'the key is in no log line');
  });
});

describe('logs: how keys are shown (admin/keys.ts)', () => {
  test('hash is stable and short, hmac with a secret, redact hides; empty stays empty', () => {
    const hash = keyViewer('hash')!;
    assert.equal(hash('alice'), `sha256:${createHash('sha256').update('alice').digest('hex').slice(0, 12)}`);
    assert.equal(hash('alice'), hash('alice'));
    assert.notEqual(hash('alice'), hash('alicf'));
    const hmac = keyViewer('hash', 'pepper')!;
    assert.equal(hmac('alice'), `hmac:${createHmac('sha256', 'pepper').update('alice').digest('hex').slice(0, 12)}`);
    assert.equal(keyViewer('redact')!('alice'), '(redacted)');
    assert.equal(keyViewer('redact')!(''), '');
    assert.equal(keyViewer('plain'), undefined);
    assert.throws(() => keyViewer('md5' as 'hash'), /logKeys must be plain, hash or redact, got "md5"/);
  });
});

describe('logs: a Redis server going away and coming back', () => {
  let redis: RedisServer | undefined;
  let r: Running | undefined;
  after(async () => {
    await r?.close();
    await redis?.stop();
  });

  const lines: string[] = [];
  test('stopped, then restarted: exactly one down line and one up line, with how long it was away', async () => {
    redis = await RedisServer.start();
    const url = `redis://default:hunter2hunter2@127.0.0.1:${redis.port}`;
    // the server has no password: ioredis sends AUTH default … and Redis 7 accepts it for the default user (nopass)
    r = await startService({
      config: configFile(CONFIG), port: 0, grpcPort: -1, redis: url, prefix: uniquePrefix('logs'), storeTimeout: 300, onStoreError: 'memory',
      logFormat: 'json', log: (l) => lines.push(l),
    });
    const startup = parse(lines).find((o) => o.event === 'store')!;
    assert.equal(startup.url, `redis://default:***@127.0.0.1:${redis.port}`);
    assert.equal(startup.onStoreError, 'memory');
    assert.ok(!lines.join('\n').includes('hunter2'), 'no password in the log');
    // requests keep coming during the outage: still one line each way
    const { all, down, up, killedAt, backAt, sent } = await awayAndBack({ port: r.httpPort!, lines, server: redis, keys: 20, most: 2000, leadMs: 300, upWithinMs: 10_000 });
    assert.equal(down.length, 1, lines.join('\n'));
    assert.equal(up.length, 1, lines.join('\n'));
    assert.equal(down[0].level, 'warning');
    assert.equal(down[0].node, `redis://default:***@127.0.0.1:${redis.port}`);
    assert.equal(down[0].onStoreError, 'memory');
    const downMs = up[0].downMs as number;
    // away from the kill (seen within a probe, about a second) to the restart (seen at once): plausible, not exact
    const actual = backAt - killedAt;
    assert.ok(downMs >= actual - 1500 && downMs <= actual + 2500, `downMs ${downMs}, killed for ${actual} ms`);
    assert.match(up[0]['@message'], new RegExp(`answers again after ${downMs} ms away$`));
    assert.ok(sent > 20, `requests during the test: ${sent}`);
    console.log(`store away: killed for ${actual} ms, logged ${downMs} ms; ${sent} requests during the test`);
    assert.ok(!all.some((o) => o.level === 'error'), lines.join('\n'));
  });

  test('hung (SIGSTOP), then resumed: one down line (no answer to PING), one up line', async () => {
    assert.ok(r !== undefined && redis !== undefined);
    const before = lines.length;
    const fresh = (): Line[] => parse(lines.slice(before));
    redis.pause();
    const pausedAt = Date.now();
    try {
      await waitFor('the down line', () => fresh().some((o) => o.event === 'store_down'), 8000);
      await sleep(Math.max(0, 2500 - (Date.now() - pausedAt)));
    } finally {
      redis.resume();
    }
    const resumedAt = Date.now();
    await waitFor('the up line', () => fresh().some((o) => o.event === 'store_up'), 8000);
    await sleep(1200);
    const down = fresh().filter((o) => o.event === 'store_down');
    const up = fresh().filter((o) => o.event === 'store_up');
    assert.equal(down.length, 1, lines.join('\n'));
    assert.equal(up.length, 1, lines.join('\n'));
    assert.match(down[0].error as string, /PING/);
    const downMs = up[0].downMs as number;
    console.log(`store hung: paused for ${resumedAt - pausedAt} ms, logged ${downMs} ms away`);
    assert.ok(downMs > 0 && downMs <= resumedAt - pausedAt + 1000, `downMs ${downMs}`);
  });
});

describe('logs: a Cluster master going away and coming back', () => {
  let cluster: RedisCluster | undefined;
  let r: Running | undefined;
  after(async () => {
    await r?.close();
    await cluster?.stop();
  });

  test('one master killed, then restarted: one down and one up line naming it, the others quiet', async () => {
    cluster = await RedisCluster.start();
    const lines: string[] = [];
    r = await startService({
      config: configFile(CONFIG), port: 0, grpcPort: -1, redisCluster: cluster.nodes.map((n) => `redis://127.0.0.1:${n.port}`), prefix: uniquePrefix('logs'),
      storeTimeout: 300, onStoreError: 'memory', logFormat: 'json', log: (l) => lines.push(l),
    });
    const startup = parse(lines).find((o) => o.event === 'store')!;
    assert.equal(startup.store, 'cluster');
    // every master known to the probe, then one goes away
    await waitFor('the masters probed', async () => (await http(r!.httpPort!, 'GET', '/healthcheck')).status === 200, 5000);
    await sleep(1200);
    // requests on many keys (every master's slots): the client finds the restarted master again through them
    const victim = cluster.nodes[1];
    const { down, up, killedAt, backAt } = await awayAndBack({ port: r.httpPort!, lines, server: victim, keys: 50, most: 3000, leadMs: 0, upWithinMs: 15_000 });
    assert.equal(down.length, 1, lines.join('\n'));
    assert.equal(up.length, 1, lines.join('\n'));
    assert.equal(down[0].node, `127.0.0.1:${victim.port}`);
    assert.equal(up[0].node, `127.0.0.1:${victim.port}`);
    const downMs = up[0].downMs as number;
    const actual = backAt - killedAt;
    console.log(`cluster master away: killed for ${actual} ms, logged ${downMs} ms`);
    assert.ok(downMs >= actual - 1500 && downMs <= actual + 5000, `downMs ${downMs}, killed for ${actual} ms`);
  });
});
