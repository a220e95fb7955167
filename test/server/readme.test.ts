/** The README's service section: its configuration loads, and the service serves it (a check and an RLS call). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { RateLimitService } from '../../src/server/service.js';
import { configFrom } from './support.js';

test('the README\'s service configuration loads and decides', async () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('<!-- section: server -->');
  assert.ok(start >= 0, 'README has a server section');
  const yaml = /```yaml\n([\s\S]*?)```/.exec(readme.slice(start))?.[1];
  assert.ok(yaml, 'the server section has a yaml block');
  const service = new RateLimitService({ store: new MemoryStore() });
  service.setConfig(await configFrom(yaml));
  const d = await service.check('login', 'user:123', 1);
  assert.equal(d.allowed, true);
  assert.equal(d.remaining, 4);
  const r = await service.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }] }, { entries: [{ key: 'api_key', value: 'k' }] }] });
  assert.equal(r.overall_code, 'OK');
  assert.equal(r.statuses[0].limit_remaining, 99);
  assert.equal(r.statuses[0].current_limit?.unit, 'MINUTE');
});
