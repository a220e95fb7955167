/**
 * test/redis/package — the Lua files are found at run time from the package as published: `npm pack` (without
 * scripts: dist/ is already built by the test command), the tarball unpacked as node_modules/ratekeeper of a
 * scratch project, and a check through `ratekeeper/redis` against a real server from there.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisServer } from '../support/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
let server: RedisServer;
let scratch: string;
before(async () => {
  server = await RedisServer.start();
  scratch = mkdtempSync(join(tmpdir(), 'rk-pack-'));
});
after(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await server.stop();
});

test('the packed package ships the Lua files and finds them from dist/', () => {
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const [info] = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
  const paths = new Set(info.files.map((f) => f.path));
  for (const f of ['common', 'record', 'policy', 'override', 'unoverride', 'reset', 'fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential']) {
    assert.ok(paths.has(`src/stores/redis/lua/${f}.lua`), `${f}.lua is in the package`);
  }
  assert.ok(paths.has('dist/src/stores/redis/index.js'));

  const pkg = join(scratch, 'app', 'node_modules', 'ratekeeper');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', join(scratch, info.filename), '-C', pkg, '--strip-components', '1']);
  const app = join(scratch, 'app', 'check.mjs');
  writeFileSync(app, `
    import { limiter, rules } from 'ratekeeper';
    import { redisStore } from 'ratekeeper/redis';
    import { Redis } from ${JSON.stringify(join(root, 'node_modules/ioredis/built/index.js'))};
    const client = new Redis({ host: '127.0.0.1', port: ${server.port} });
    const lim = limiter({ rules: [rules.exponential({ limit: 1, per: '1h' }), rules.slidingLog({ limit: 5, per: '1m' })], store: redisStore({ client }) });
    const a = await lim.check('k');
    const b = await lim.check('k');
    console.log(a.allowed, a.reason, b.allowed, b.reason);
    client.disconnect();
  `);
  const r = spawnSync(process.execPath, [app], { cwd: join(scratch, 'app'), encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'true allowed false limited');
});
