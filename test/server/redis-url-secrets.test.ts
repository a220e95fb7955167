/**
 * test/server/redis-url-secrets — a Redis password written in the address itself never reaches the process's output,
 * however the address is written: envoy's scheme-less `user:password@host:port` in a startup error (a bad port, a
 * sentinel list that is too short, REDIS_SOCKET_TYPE=unix), a password holding a comma or a space (characters the
 * text masking stops at) in the startup line and the store-down lines, text and JSON alike; and an address that came
 * from REDIS_URL is named as REDIS_URL, not as a flag that was never given.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configFile } from './support.js';
import { spawn } from 'node:child_process';
import { CLI, run } from './procs.js';
import { freePort } from '../support/redis.js';

const CONFIG = `
domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 5 }
`;
const SECRET = 'hunter2xyz';

test('a scheme-less address with credentials is not echoed in a startup error; the error names REDIS_URL when the address came from it', { timeout: 30_000 }, async () => {
  const config = configFile(CONFIG);
  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [['--redis', `app:${SECRET}@127.0.0.1:99999`], {}, /--redis must be a Redis URL/],
    [[], { REDIS_URL: `app:${SECRET}@127.0.0.1:99999` }, /REDIS_URL must be a Redis URL/],
    [[], { REDIS_TYPE: 'cluster', REDIS_URL: `app:${SECRET}@127.0.0.1:99999,127.0.0.1:1` }, /REDIS_URL must be a Redis URL/],
    [[], { REDIS_TYPE: 'sentinel', REDIS_URL: `app:${SECRET}@127.0.0.1:1` }, /REDIS_URL with REDIS_TYPE=sentinel must be/],
    [[], { REDIS_TYPE: 'sentinel', REDIS_URL: `m,app:${SECRET}@127.0.0.1:99999` }, /REDIS_URL must be a Redis URL/],
    [[], { REDIS_SOCKET_TYPE: 'unix', REDIS_URL: `app:${SECRET}@127.0.0.1:1` }, /REDIS_SOCKET_TYPE=unix needs REDIS_URL/],
  ];
  for (const [args, env, message] of cases) {
    for (const format of ['text', 'json']) {
      const r = await run(['serve', '--config', config, '--port', '0', '--grpc-port', '0', '--admin-port', 'off', '--log-format', format, ...args], env);
      const out = r.stdout + r.stderr;
      assert.notEqual(r.code, 0, out);
      assert.match(out, message, `${JSON.stringify(env)} ${args.join(' ')}`);
      assert.ok(!out.includes(SECRET), `the password is shown (${format}): ${out}`);
    }
  }
});

/** runFor — the CLI for `ms`, then SIGTERM: everything it wrote. */
function runFor(args: string[], ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    p.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    const t = setTimeout(() => p.kill('SIGTERM'), ms);
    p.once('error', reject);
    p.once('close', () => {
      clearTimeout(t);
      resolve(out);
    });
  });
}

test('a password with a comma or a space in a redis:// URL is masked in the startup line and the store-down lines (text and JSON)', { timeout: 60_000 }, async () => {
  const config = configFile(CONFIG);
  const port = await freePort(); // nobody listens: the store-down lines come too
  for (const password of [`hun,ter2${SECRET}`, `hun ter2${SECRET}`, `a@b,${SECRET}`]) {
    for (const format of ['text', 'json']) {
      const out = await runFor(['serve', '--config', config, '--port', '0', '--grpc-port', '0', '--admin-port', 'off', '--log-format', format, '--log-level', 'debug',
        '--redis-connect-timeout', '200', '--redis', `redis://app:${password}@127.0.0.1:${port}`], 2500);
      assert.match(out, /does not answer/, out);
      assert.ok(!out.includes(SECRET), `the password ${JSON.stringify(password)} is shown (${format}):\n${out}`);
    }
  }
});
