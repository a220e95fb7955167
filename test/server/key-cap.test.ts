/**
 * The key cap (MAX_KEY_LENGTH, 4 096 characters) bites before any matching, on a real service (loopback): a 3 MB
 * descriptor value against 1 000 wildcard descriptors is refused naming the descriptor without walking the
 * wildcards (the event loop stays free), while a key at the cap still matches its wildcard and is charged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startService, type Running } from '../../src/server/serve.js';
import { MAX_KEY_LENGTH } from '../../src/limiter.js';
import { http } from './procs.js';
import { configFile } from './support.js';

/** WILDCARDS — the attack's 1 000 wildcard descriptors, each a middle part (`*w17*`): a value is searched for each. */
const WILDCARDS = 1000;
const CONFIG = `domain: wild\ndescriptors:\n${Array.from({ length: WILDCARDS }, (_, i) => `  - key: path\n    value: "*w${i}*"\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n`).join('')}`;

/**
 * blocked — runs `f`; returns the longest the event loop was held meanwhile and the process's CPU time (user +
 * system), in ms. The CPU time is what the assertions use: on a loaded machine wall-clock delays include other
 * processes' turns, CPU time does not.
 */
async function blocked(f: () => Promise<void>): Promise<{ held: number; cpu: number }> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const c0 = process.cpuUsage();
  await f();
  const c = process.cpuUsage(c0);
  h.disable();
  return { held: h.max / 1e6, cpu: (c.user + c.system) / 1000 };
}

describe('the key cap comes before wildcard matching', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, log: () => {} });
  });
  after(() => running?.close());

  test('a 3 MB value against 1 000 wildcards is refused naming the descriptor in < 250 ms of CPU each', async (t) => {
    // a value no wildcard matches, made slow to search (it starts with 64 kB of `w`, the first character of every
    // wildcard's part): before the cap, each of the 1 000 wildcards searched all 3 MB of it (~3 ms each here)
    const value = 'w'.repeat(65_536) + 'x'.repeat(3 * 1024 * 1024 - 65_536);
    const body = Buffer.from(JSON.stringify({ domain: 'wild', descriptors: [{ entries: [{ key: 'path', value }] }] }));
    let status = 0;
    let text = '';
    const { held, cpu } = await blocked(async () => {
      for (let i = 0; i < 3; i++) {
        const r = await http(running.httpPort!, 'POST', '/json', body);
        status = r.status;
        text = r.text;
      }
    });
    t.diagnostic(`3 requests: ${cpu.toFixed(0)} ms of CPU (client and server), the event loop held at most ${held.toFixed(0)} ms`);
    assert.equal(status, 400, text);
    assert.match(text, /descriptors\[0\]\.entries: make a key of \d+ characters; at most 4096/);
    // parsing 3 MB of JSON stays (a few ms each, and sending it); matching it against 1 000 wildcards took ~1 s each
    assert.ok(cpu < 750, `3 requests took ${cpu.toFixed(0)} ms of CPU (the event loop held at most ${held.toFixed(0)} ms)`);
  });

  test('a key at the cap still matches its wildcard and is charged; one character more is refused', async () => {
    const prefix = 'wild:path=';
    const at = 'y'.repeat(MAX_KEY_LENGTH - prefix.length - 'w7'.length) + 'w7';
    assert.equal(prefix.length + at.length, MAX_KEY_LENGTH);
    const ok = await http(running.httpPort!, 'POST', '/json', { domain: 'wild', descriptors: [{ entries: [{ key: 'path', value: at }] }] });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.statuses[0].limitRemaining, 4);
    const over = await http(running.httpPort!, 'POST', '/json', { domain: 'wild', descriptors: [{ entries: [{ key: 'path', value: `z${at}` }] }] });
    assert.equal(over.status, 400);
    assert.equal(over.json.field, 'descriptors[0].entries');
    assert.match(over.text, /make a key of 4097 characters/);
  });

  test('the cap bounds the sum of a descriptor\'s entries: two entries of 2 100 characters are refused', async () => {
    const r = await http(running.httpPort!, 'POST', '/json', { domain: 'wild', descriptors: [{ entries: [{ key: 'path', value: 'a'.repeat(2100) }, { key: 'sub', value: 'b'.repeat(2100) }] }] });
    assert.equal(r.status, 400);
    assert.equal(r.json.field, 'descriptors[0].entries');
  });
});
