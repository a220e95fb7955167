/**
 * test/admin/demo — `runDemo` serves the dashboard over simulated traffic in which the abusers rise to the top, and
 * stops by itself after `seconds`; `ratekeeper demo --help` answers.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ABUSERS, runDemo } from '../../src/admin/demo.js';
import { call } from './support.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

it('runDemo: the page and the API on its port; the steady abuser reaches the top of api within seconds; it stops after `seconds`', async () => {
  const lines: string[] = [];
  const demo = await runDemo({ port: 0, seconds: 30, print: (l) => lines.push(l) });
  try {
    assert.ok(lines.some((l) => l === `dashboard: ${demo.url}`), lines.join('\n'));
    assert.equal((await call(demo.url, '')).status, 200);
    let top: string[] = [];
    for (let i = 0; i < 40 && !top.slice(0, 2).includes(ABUSERS.steady); i++) {
      await new Promise((r) => setTimeout(r, 250));
      top = (await call(demo.url, 'admin/top?n=5&limiter=api')).json.top.map((e: { key: string }) => e.key);
    }
    assert.ok(top.slice(0, 2).includes(ABUSERS.steady), `top of api: ${top.join(', ')}`);
    const stats = (await call(demo.url, 'admin/stats?last=10')).json;
    assert.deepEqual(stats.limiters.map((l: { name: string }) => l.name), ['api', 'login']);
    assert.ok(stats.limiters[0].outcomes.allowed > 0);
  } finally {
    await demo.close();
  }
  await demo.done;
  await assert.rejects(fetch(demo.url), 'the listener is closed');
});

it('ratekeeper demo --help', () => {
  const r = spawnSync(process.execPath, [resolve(root, 'dist/src/cli.js'), 'demo', '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /ratekeeper demo \[--port 6070\]/);
  const bad = spawnSync(process.execPath, [resolve(root, 'dist/src/cli.js'), 'demo', '--port', 'x'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--port must be a number/);
});
