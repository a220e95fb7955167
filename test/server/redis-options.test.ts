/**
 * `ratekeeper serve`'s Redis flags and envoyproxy/ratelimit's variables (settings.go): REDIS_TYPE (any case) and
 * REDIS_URL for single, cluster and sentinel (`master,host:port,…`), REDIS_SOCKET_TYPE, REDIS_AUTH (password or
 * user:password), REDIS_SENTINEL_AUTH, REDIS_TLS*, REDIS_TIMEOUT (a Go duration); what the service builds of them
 * (redisPlan); and usage errors that name the flag and never show a password.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serveOptions } from '../../src/server/cli.js';
import { SERVE_HELP } from '../../src/server/serveHelp.js';
import { describeStore, goDuration, parseRedisUrl, redisPlan, splitAuth } from '../../src/server/redisOptions.js';
import type { ServeOptions } from '../../src/server/serve.js';
import { redisStore } from '../../src/stores/redis/index.js';
import { run } from './procs.js';
import { configFile } from './support.js';

const base = ['--config', 'c.yaml'];
function opts(argv: string[], env: NodeJS.ProcessEnv = {}): ServeOptions {
  const o = serveOptions([...base, ...argv], env);
  assert.ok(o !== 'help');
  return o;
}
function plan(o: ServeOptions) {
  const flag = o.redisSentinel !== undefined ? (o.redisConnect?.from.sentinels ?? 'REDIS_URL') : o.redisCluster !== undefined ? '--redis-cluster' : '--redis';
  return redisPlan({ redis: o.redis, cluster: o.redisCluster, sentinels: o.redisSentinel, master: o.redisSentinelMaster, socketPath: o.redisSocket }, o.redisConnect!, flag);
}

test("REDIS_TYPE=sentinel with REDIS_URL=master,host:port,… and REDIS_SENTINEL_AUTH, as envoyproxy/ratelimit reads them", () => {
  const o = opts([], { REDIS_TYPE: 'SENTINEL', REDIS_URL: 'mymaster,10.0.0.1:26379, 10.0.0.2:26379', REDIS_SENTINEL_AUTH: 'sp', REDIS_AUTH: 'app:mp' });
  assert.deepEqual(o.redisSentinel, ['10.0.0.1:26379', '10.0.0.2:26379']);
  assert.equal(o.redisSentinelMaster, 'mymaster');
  const p = plan(o);
  assert.equal(p.connect.mode, 'sentinel');
  assert.deepEqual(p.connect.sentinel, { name: 'mymaster', password: 'sp' });
  assert.equal(p.connect.username, 'app');
  assert.equal(p.connect.password, 'mp');
  assert.equal(p.describe, 'redis sentinel master mymaster via redis://10.0.0.1:26379,redis://10.0.0.2:26379 (auth as app; sentinel auth)');
  assert.throws(() => opts([], { REDIS_TYPE: 'sentinel', REDIS_URL: 'mymaster' }), /REDIS_URL with REDIS_TYPE=sentinel must be <master name>,<sentinel host:port>/);
  assert.throws(() => opts([], { REDIS_TYPE: 'ring', REDIS_URL: 'h:1' }), /REDIS_TYPE must be single, cluster or sentinel/);
});

test('--redis-sentinel goes with --redis-sentinel-master; one of --redis, --redis-cluster, --redis-sentinel', () => {
  const o = opts(['--redis-sentinel', 'a:26379,b:26379', '--redis-sentinel-master', 'm', '--redis-sentinel-auth', 'u:sp']);
  assert.deepEqual(plan(o).connect.sentinel, { name: 'm', username: 'u', password: 'sp' });
  assert.throws(() => opts(['--redis-sentinel', 'a:26379']), /go together/);
  assert.throws(() => opts(['--redis', 'h:1', '--redis-sentinel', 'a:1', '--redis-sentinel-master', 'm']), /give --redis or --redis-sentinel, not both/);
});

test('REDIS_AUTH is a password or user:password (split at the first colon); a URL\'s own credentials win', () => {
  assert.deepEqual(splitAuth('pw'), { password: 'pw' });
  assert.deepEqual(splitAuth('u:p:w'), { username: 'u', password: 'p:w' });
  const o = opts(['--redis', 'redis://x:urlpw@h:1'], { REDIS_AUTH: 'envpw' });
  assert.equal(plan(o).connect.password, 'urlpw');
  assert.equal(plan(o).passwordFrom, 'the password in --redis');
  const e = opts(['--redis', 'h:1'], { REDIS_AUTH: 'envpw' });
  assert.equal(plan(e).connect.password, 'envpw');
  assert.equal(plan(e).passwordFrom, 'REDIS_AUTH');
  assert.equal(plan(opts(['--redis', 'h:1', '--redis-auth', 'flagpw'], { REDIS_AUTH: 'envpw' })).passwordFrom, '--redis-auth');
});

test('TLS: rediss:// or REDIS_TLS=true or --redis-tls; a list is all TLS or none; --redis-tls-* without TLS is an error, the variables are ignored as envoy ignores them', () => {
  assert.notEqual(plan(opts(['--redis', 'rediss://h:1'])).connect.tls, undefined);
  assert.notEqual(plan(opts([], { REDIS_URL: 'h:1', REDIS_TLS: 'true' })).connect.tls, undefined);
  assert.equal(plan(opts([], { REDIS_URL: 'h:1', REDIS_TLS: 'false', REDIS_TLS_CACERT: '/nonexistent' })).connect.tls, undefined);
  assert.throws(() => plan(opts(['--redis-cluster', 'rediss://a:1,redis://b:2'])), /mixes rediss:\/\/ and redis:\/\//);
  assert.throws(() => plan(opts(['--redis', 'h:1', '--redis-tls-key', 'k.pem'])), /--redis-tls-key is given but TLS is off/);
  assert.throws(() => plan(opts(['--redis', 'rediss://h:1', '--redis-tls-ca', '/nonexistent/ca.pem'])), /--redis-tls-ca "\/nonexistent\/ca\.pem" cannot be read/);
  assert.throws(() => plan(opts(['--redis', 'rediss://h:1'], { REDIS_TLS_CLIENT_CERT: '/x.pem' })), /needs both REDIS_TLS_CLIENT_CERT and --redis-tls-key \(REDIS_TLS_CLIENT_KEY\)/);
  const skip = plan(opts(['--redis', 'rediss://h:1'], { REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true' }));
  assert.equal(typeof skip.connect.tls?.checkServerIdentity, 'function');
});

test('REDIS_SOCKET_TYPE: unix takes REDIS_URL as a path (envoy\'s default socket type); a path alone is one too', () => {
  assert.equal(opts([], { REDIS_SOCKET_TYPE: 'unix', REDIS_URL: '/var/run/redis.sock' }).redisSocket, '/var/run/redis.sock');
  assert.equal(opts([], { REDIS_URL: '/var/run/redis.sock' }).redisSocket, '/var/run/redis.sock');
  assert.equal(plan(opts([], { REDIS_URL: '/var/run/redis.sock' })).describe, 'redis unix:/var/run/redis.sock');
  assert.equal(opts([], { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: 'h:6379' }).redis, 'h:6379');
  assert.throws(() => opts([], { REDIS_SOCKET_TYPE: 'unix', REDIS_URL: 'h:6379' }), /REDIS_SOCKET_TYPE=unix needs REDIS_URL to be a socket's path/);
  assert.throws(() => opts([], { REDIS_SOCKET_TYPE: 'udp', REDIS_URL: 'h:6379' }), /REDIS_SOCKET_TYPE must be tcp or unix/);
});

test('REDIS_TIMEOUT is a Go duration (envoy\'s default 10s); --redis-connect-timeout is ms', () => {
  assert.equal(goDuration('10s'), 10_000);
  assert.equal(goDuration('1m30s'), 90_000);
  assert.equal(goDuration('250ms'), 250);
  assert.equal(goDuration('10'), undefined);
  assert.equal(opts([], { REDIS_TIMEOUT: '2s' }).redisConnect?.connectTimeout, 2000);
  assert.equal(opts(['--redis-connect-timeout', '700'], { REDIS_TIMEOUT: '2s' }).redisConnect?.connectTimeout, 700);
  assert.throws(() => opts([], { REDIS_TIMEOUT: 'soon' }), /REDIS_TIMEOUT must be a duration/);
});

test('--redis-wait-replicas and --redis-wait-timeout; the store checks WAIT against its own timeout and refuses a Cluster', () => {
  const o = opts(['--redis', 'h:1', '--redis-wait-replicas', '1', '--redis-wait-timeout', '20']);
  assert.equal(o.redisConnect?.waitReplicas, 1);
  assert.equal(o.redisConnect?.waitTimeout, 20);
  assert.throws(() => opts(['--redis-wait-timeout', '20']), /needs --redis-wait-replicas/);
  assert.throws(() => opts(['--redis-wait-replicas', 'x']), /--redis-wait-replicas must be an integer/);
  const fake = { evalsha: async () => null, eval: async () => null, callBuffer: async () => null, call: async () => 1 };
  assert.throws(() => redisStore({ client: fake, timeout: 100, wait: { replicas: 1, timeout: 50 } }), /under half the store's timeout/);
  assert.throws(() => redisStore({ client: { ...fake, isCluster: true } as never, wait: { replicas: 1, timeout: 50 } }), /standalone or Sentinel/);
  assert.throws(() => redisStore({ client: fake, wait: { replicas: 0, timeout: 50 } }), /redisStore.wait must be/);
});

test('--redis-max-unsynced, --redis-flush-every, --redis-cold-fresh: the store\'s local-first mode', () => {
  const o = opts(['--redis', 'h:1', '--redis-max-unsynced', '5', '--redis-flush-every', '20ms', '--redis-cold-fresh']);
  assert.equal(o.redisConnect?.maxUnsynced, 5);
  assert.equal(o.redisConnect?.flushEvery, 20);
  assert.equal(o.redisConnect?.coldFresh, true);
  assert.equal(opts(['--redis', 'h:1', '--redis-max-unsynced', '5', '--redis-flush-every', '35']).redisConnect?.flushEvery, 35);
  assert.equal(opts(['--redis', 'h:1', '--redis-max-unsynced', '0']).redisConnect?.maxUnsynced, undefined);
  assert.throws(() => opts(['--redis-flush-every', '20']), /--redis-flush-every needs --redis-max-unsynced/);
  assert.throws(() => opts(['--redis-cold-fresh']), /--redis-cold-fresh needs --redis-max-unsynced/);
  assert.throws(() => opts(['--redis-max-unsynced=-1']), /--redis-max-unsynced must be a number of cost units >= 0/);
  assert.throws(() => opts(['--redis-max-unsynced', 'lots']), /--redis-max-unsynced must be/);
  assert.throws(() => opts(['--redis-max-unsynced', '5', '--redis-flush-every', '0']), /--redis-flush-every must be ms > 0/);
  assert.throws(() => opts(['--redis-max-unsynced', '5', '--redis-flush-every', '2m']), /at most 60000/);
});

test('no usage error, URL error or description shows a password', () => {
  const secret = 'hunter2-secret';
  for (const argv of [['--redis', `ftp://u:${secret}@h:1`], ['--redis', `rediss://u:${secret}@h:notaport`], ['--redis-cluster', `rediss://u:${secret}@h:1,redis://h:2`]]) {
    const o = opts(argv);
    assert.throws(() => plan(o), (e: Error) => !e.message.includes(secret) && /--redis/.test(e.message));
  }
  assert.throws(() => parseRedisUrl(`rediss://:${secret}@[::1`, '--redis'), (e: Error) => !e.message.includes(secret));
  assert.throws(() => opts([], { REDIS_TYPE: 'sentinel', REDIS_URL: `redis://u:${secret}@h:1` }), (e: Error) => !e.message.includes(secret));
  const p = plan(opts(['--redis', `rediss://u:${secret}@h:1/2`]));
  assert.equal(p.describe, 'redis rediss://h:1 (auth as u; db 2)');
  assert.equal(describeStore(p.connect).includes(secret), false);
});

test('the help names every Redis flag and variable', () => {
  for (const name of ['--redis-sentinel', '--redis-sentinel-master', '--redis-sentinel-auth', '--redis-auth', '--redis-tls', '--redis-tls-ca', '--redis-tls-cert', '--redis-tls-key',
    '--redis-tls-skip-hostname-verification', '--redis-connect-timeout', '--redis-wait-replicas', '--redis-wait-timeout', '--redis-max-unsynced', '--redis-flush-every', '--redis-cold-fresh', 'REDIS_SENTINEL_AUTH', 'REDIS_AUTH', 'REDIS_TLS_CACERT',
    'REDIS_TLS_CLIENT_CERT', 'REDIS_TLS_CLIENT_KEY', 'REDIS_TLS_SKIP_HOSTNAME_VERIFICATION', 'REDIS_TIMEOUT', 'rediss://']) {
    assert.ok(SERVE_HELP.includes(name), name);
  }
});

test('a node list that names no node (--redis-cluster ",", --redis-sentinel " , ", REDIS_URL="," with REDIS_TYPE=cluster) is a usage error naming it, not the memory store', async () => {
  assert.throws(() => opts(['--redis-cluster', ',']), /--redis-cluster names no node/);
  assert.throws(() => opts(['--redis-sentinel', ' , ', '--redis-sentinel-master', 'm']), /--redis-sentinel names no Sentinel/);
  assert.throws(() => opts([], { REDIS_TYPE: 'cluster', REDIS_URL: ' , ' }), /REDIS_URL with REDIS_TYPE=cluster names no node/);
  const r = await run(['serve', '--config', configFile('domain: d\n'), '--port', '0', '--grpc-port', '0', '--admin-port', 'off', '--redis-cluster', ',']);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--redis-cluster names no node/);
  assert.doesNotMatch(r.stderr, /store: memory/);
});
