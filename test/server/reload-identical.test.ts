/**
 * A rewrite that changes nothing is not a reload (a real service, startService): the same bytes written again, or the
 * same limits written otherwise (comments, layout), build, count and log nothing; a real change is a reload, logged
 * with "1 policy" (not "1 policies"). And `config check` shows a limit's `name` as the limit's name, not as a
 * descriptor entry; and the top-level `ratekeeper --help` lists the commands, not the simulator's options.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/tmp.js';
import { startService } from '../../src/server/serve.js';
import { configCheck } from '../../src/server/config/check.js';
import { http, metric, run } from './procs.js';

const config = (n: number, comment = ''): string => `${comment}
domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: ${n}, algorithm: slidingLog }
policies:
  api: { rules: '5/min' }
`;

describe('reload: an identical rewrite is not a reload', () => {
  test('the same bytes, then the same config written otherwise: nothing counted or logged; a real change: "1 policy"', async () => {
    const dir = tempDir('rk-reload-same-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, config(2));
    const log: string[] = [];
    // the watcher polls rarely: the test drives reload() itself, as the watcher does on a changed signature
    const s = await startService({ config: file, port: 0, grpcPort: -1, reloadPollMs: 60_000, log: (l) => log.push(l) });
    try {
      const loads = async (): Promise<number> => metric((await http(s.httpPort!, 'POST', '/v1/check', { policy: 'api', key: 'k' }).then(() => http(s.httpPort!, 'GET', '/metrics'))).text, 'ratekeeper_config_loads_total', { result: 'success' }) ?? 0;
      const before = await loads();
      const loadedAt = s.service.config!.loadedAt;
      const limiter = [...s.service.limiters()].find(([name]) => name === 'policy:api')?.[1];
      assert.ok(limiter !== undefined);
      writeFileSync(file, config(2)); // the same bytes (a touch, a ConfigMap re-applied)
      await s.reload();
      writeFileSync(file, config(2, '# only a comment changed\n').replace('{ unit: hour,', '{  unit: hour,'));
      await s.reload();
      assert.equal(await loads(), before, 'an identical rewrite is not counted as a load');
      assert.equal(s.service.config!.loadedAt, loadedAt);
      assert.equal([...s.service.limiters()].find(([name]) => name === 'policy:api')?.[1], limiter, 'nothing was rebuilt');
      assert.deepEqual(log.filter((l) => /config reloaded/.test(l)), [], log.join('\n'));
      writeFileSync(file, config(3));
      await s.reload();
      assert.equal(await loads(), before + 1);
      const line = log.find((l) => /config reloaded/.test(l));
      assert.match(line ?? '', /^ratekeeper: config reloaded: 1 limit\(s\), 1 policy; /, log.join('\n'));
    } finally {
      await s.close();
    }
  });
});

describe('config check', () => {
  test('a rate limit\'s name is shown as the limit\'s name, not as a descriptor entry', async () => {
    const dir = tempDir('rk-check-name-');
    const file = join(dir, 'c.yaml');
    writeFileSync(file, `
domain: d
descriptors:
  - key: user
    rate_limits:
      - { unit: second, requests_per_unit: 10, name: per_second }
      - { per: 1h, requests_per_unit: 1000, algorithm: sliding-log, name: hourly }
  - key: ip
    rate_limit: { unit: second, requests_per_unit: 10, algorithm: exponential, name: exp }
`);
    const lines: string[] = [];
    assert.equal(await configCheck(file, (l) => lines.push(l)), 0, lines.join('\n'));
    assert.ok(lines.includes('    user: fixedWindow 10/1s "per_second" + slidingLog 1000/1h "hourly" (limit name "per_second")'), lines.join('\n'));
    assert.ok(lines.includes('    ip: exponential 10/1s "exp" (limit name "exp")'), lines.join('\n'));
  });
});

describe('ratekeeper --help', () => {
  test('the top level lists the commands and the options of every command, not the simulator\'s options', async () => {
    const r = await run(['--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Commands:\n  serve /m);
    assert.match(r.stdout, /^Options of every command:\n  --help, -h /m);
    assert.doesNotMatch(r.stdout, /--time-unit|--half-life DURATION\s{2,}/, r.stdout);
  });
});
