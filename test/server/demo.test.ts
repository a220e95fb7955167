/**
 * `ratekeeper demo`: the service with simulated traffic; its dashboard is up, the abusers rise to the top of the
 * policy "api" within seconds, the Envoy domain is observed too, and it stops by itself after `seconds`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ABUSERS } from '../../src/admin/demo.js';
import { runServiceDemo } from '../../src/server/demo.js';

test('the service demo: the dashboard over simulated traffic, abusers on top', async () => {
  const lines: string[] = [];
  const demo = await runServiceDemo({ port: 0, seconds: 30, print: (l) => lines.push(l) });
  try {
    assert.ok(lines.some((l) => l.includes(`dashboard: ${demo.url}`)), lines.join('\n'));
    assert.equal((await fetch(demo.url)).status, 200);
    let keys: string[] = [];
    const deadline = Date.now() + 8000;
    while (Date.now() < deadline) {
      const r = await fetch(`${demo.url}admin/top?n=3&limiter=policy:api`);
      keys = ((await r.json()) as { top: { key: string }[] }).top.map((e) => e.key);
      if (keys.some((k) => k.endsWith(ABUSERS.steady))) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(keys.some((k) => k.endsWith(ABUSERS.steady)), `the steady abuser is among the top 3 of api: ${keys.join(', ')}`);
    const edge = await (await fetch(`${demo.url}admin/top?n=3&limiter=limit:edge:remote_address`)).json() as { top: unknown[] };
    assert.ok(edge.top.length > 0, 'the edge domain\'s clients are observed too');
  } finally {
    await demo.close();
  }
  await demo.done;
});
