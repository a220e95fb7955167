/**
 * test/server/measured — what an Envoy user reads for a measured-rate limit (EARRRL) over RLS, as docs/server.md
 * states it: `limit_remaining` is the burst still allowed (288 for 20/second with a 10 s half-life: more than
 * requests_per_unit), `duration_until_reset` the time until the estimate is a millionth of the limit (117.59 s after one
 * request); and `config check` shows the rate and half-life (`earrrl 20/1s half-life 10s`), not just a rule's name.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, type Running } from '../../src/server/serve.js';
import { configCheck } from '../../src/server/config/check.js';
import { rls, type RlsCaller } from './procs.js';

const CONFIG = `domain: edge
descriptors:
  - key: api_key
    rate_limits:
      - { algorithm: earrrl, requests_per_unit: 20, unit: second, halfLife: 10s, name: recent }
      - { algorithm: slidingLog, requests_per_unit: 5000, unit: hour }
  - key: user
    rate_limits:
      - { algorithm: exponential, requests_per_unit: 20, unit: second }
      - { algorithm: gcra, requests_per_unit: 10, unit: second, burst: 30, accounting: strict }
`;

describe('an EARRRL limit over RLS, and its summary', () => {
  let dir: string;
  let running: Running;
  let client: RlsCaller;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rk-measured-'));
    writeFileSync(join(dir, 'rl.yaml'), CONFIG);
    running = await startService({ config: join(dir, 'rl.yaml'), port: -1, grpcPort: 0, log: () => undefined });
    client = rls(running.grpcPort!);
  });
  after(async () => {
    client?.close();
    await running?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('limit_remaining 288 for 20/second (more than requests_per_unit); duration_until_reset 117.59 s', async () => {
    const r = await client.call({ domain: 'edge', descriptors: [{ entries: [{ key: 'api_key', value: 'k1' }] }] });
    assert.equal(r.overall_code, 'OK');
    const s = r.statuses![0]!;
    assert.equal(s.current_limit?.requests_per_unit, 20);
    assert.equal(s.limit_remaining, 288);
    const reset = Number(s.duration_until_reset?.seconds ?? 0) + (s.duration_until_reset?.nanos ?? 0) / 1e9;
    assert.ok(Math.abs(reset - 117.59) < 0.01, `duration_until_reset ${reset} s`);
  });

  test('config check: the rate, the half-life, the burst and the accounting are shown; a name does not hide them', async () => {
    const lines: string[] = [];
    assert.equal(await configCheck(join(dir, 'rl.yaml'), (l) => lines.push(l)), 0);
    const text = lines.join('\n');
    assert.match(text, /api_key: earrrl 20\/1s half-life 10s "recent" \+ slidingLog 5000\/1h/);
    assert.match(text, /user: exponential 20\/1s \+ gcra 10\/1s burst 30 strict/);
  });
});
