/**
 * Loading from disk: a file, a directory of files and domains, a Kubernetes ConfigMap-style directory whose `..data`
 * symlink is swapped, and `config check`'s output and exit code. Fixtures are in test/server/fixtures/.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, symlink, rename, writeFile, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, configCheck, loadConfig } from '../../src/server/config/index.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/server/fixtures');

async function loadIssues(path: string): Promise<ConfigError> {
  try {
    await loadConfig(path);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e;
  }
  assert.fail('accepted');
}

describe('config: loading files and directories', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'rk-config-'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('a single file', async () => {
    const c = await loadConfig(join(FIXTURES, 'multi/messaging.yaml'));
    assert.deepEqual(c.files, [join(FIXTURES, 'multi/messaging.yaml')]);
    assert.deepEqual(c.domains, ['messaging']);
    assert.ok(c.loadedAt > 0);
  });

  it('a directory: every *.yaml and *.yml, subdirectories too, dot-files and other files skipped, in name order', async () => {
    const c = await loadConfig(join(FIXTURES, 'multi'));
    assert.deepEqual(c.files.map((f) => f.slice(FIXTURES.length + 1)), ['multi/edge.yml', 'multi/messaging.yaml', 'multi/teams/policies.yaml']);
    assert.deepEqual(c.domains, ['edge_proxy_per_ip', 'messaging']);
    assert.deepEqual([...c.policies.keys()], ['api', 'login']);
    assert.equal(c.match('messaging', [{ key: 'to_number', value: '1' }])!.limit.report!.requestsPerUnit, 100);
    assert.equal(c.match('edge_proxy_per_ip', [{ key: 'remote_address', value: '10.0.0.1' }])!.limit.report!.requestsPerUnit, 10);
  });

  it('a directory whose files have problems: every issue of every file, with absolute file names', async () => {
    const e = await loadIssues(join(FIXTURES, 'broken'));
    const rel = e.issues.map((i) => [i.file.slice(FIXTURES.length + 1), i.line, i.field]);
    assert.deepEqual(rel, [
      ['broken/a.yaml', 7, 'unit'],
      ['broken/a.yaml', 10, 'requests_per_unit'],
      ['broken/a.yaml', 12, 'rate_limt'],
      ['broken/b.yaml', 1, 'domain'],
    ]);
    assert.match(e.message, /broken\/a\.yaml:12: domain: shop > descriptors\[2\] \(user\): rate_limt is not a field of a descriptor \(did you mean `rate_limit`\?\)/);
  });

  it('a missing path, an empty directory', async () => {
    const missing = await loadIssues(join(tmp, 'nope'));
    assert.match(missing.issues[0].message, /no such file or directory/);
    await mkdir(join(tmp, 'empty'));
    await writeFile(join(tmp, 'empty', 'README.md'), '# not config\n');
    const empty = await loadIssues(join(tmp, 'empty'));
    assert.match(empty.issues[0].message, /no \*\.yaml or \*\.yml file/);
  });

  it('a ConfigMap mount: files are symlinks through ..data, which is swapped to a new timestamped directory', async () => {
    const mount = join(tmp, 'configmap');
    await mkdir(mount);
    const v1 = join(mount, '..2024_01_01_00_00_00.000000001');
    await mkdir(v1);
    await writeFile(join(v1, 'limits.yaml'), 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5 }\n');
    await symlink('..2024_01_01_00_00_00.000000001', join(mount, '..data'));
    await symlink('..data/limits.yaml', join(mount, 'limits.yaml'));
    const first = await loadConfig(mount);
    assert.deepEqual(first.files, [join(mount, 'limits.yaml')], 'shown by the mounted name, dot-dirs not read twice');
    assert.equal(first.match('d', [{ key: 'k', value: 'v' }])!.limit.report!.requestsPerUnit, 5);

    // the kubelet's swap: a new timestamped dir, a new ..data symlink renamed over the old one, the old dir removed
    const v2 = join(mount, '..2024_01_02_00_00_00.000000002');
    await mkdir(v2);
    await writeFile(join(v2, 'limits.yaml'), 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 7 }\n');
    await symlink('..2024_01_02_00_00_00.000000002', join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
    await rm(v1, { recursive: true });
    const second = await loadConfig(mount);
    assert.equal(second.match('d', [{ key: 'k', value: 'v' }])!.limit.report!.requestsPerUnit, 7);
  });

  it('a directory given through a symlink', async () => {
    await cp(join(FIXTURES, 'multi'), join(tmp, 'real'), { recursive: true });
    await symlink(join(tmp, 'real'), join(tmp, 'link'));
    const c = await loadConfig(join(tmp, 'link'));
    assert.deepEqual(c.domains, ['edge_proxy_per_ip', 'messaging']);
    assert.ok(c.files.every((f) => f.startsWith(join(tmp, 'link'))));
  });

  it('mergeDomains: one domain over several files (envoy MERGE_DOMAIN_CONFIG)', async () => {
    await mkdir(join(tmp, 'merge'));
    await writeFile(join(tmp, 'merge', 'a.yaml'), 'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1 }\n');
    await writeFile(join(tmp, 'merge', 'b.yaml'), 'domain: d\ndescriptors:\n  - key: b\n    rate_limit: { unit: second, requests_per_unit: 2 }\n');
    const e = await loadIssues(join(tmp, 'merge'));
    assert.match(e.issues[0].message, /duplicate domain 'd'/);
    const c = await loadConfig(join(tmp, 'merge'), { mergeDomains: true });
    assert.equal(c.match('d', [{ key: 'b', value: 'x' }])!.limit.report!.requestsPerUnit, 2);
    assert.equal(c.match('d', [{ key: 'a', value: 'x' }])!.limit.report!.requestsPerUnit, 1);
  });
});

describe('config check', () => {
  it('prints a summary and returns 0 for a good configuration', async () => {
    const lines: string[] = [];
    assert.equal(await configCheck(join(FIXTURES, 'multi'), (l) => lines.push(l)), 0);
    assert.equal(lines[0], 'ok: 3 files, 2 domains, 5 limits, 2 policies');
    assert.ok(lines.some((l) => l.includes('domain messaging: 2 limits')), lines.join('\n'));
    assert.ok(lines.some((l) => l.includes('remote_address_50.0.0.5: refuses every request')), lines.join('\n'));
    assert.ok(lines.some((l) => /policy login: earrrl 5\/1m/.test(l)), lines.join('\n'));
  });

  it('prints every issue, one per line, and returns 1', async () => {
    const lines: string[] = [];
    assert.equal(await configCheck(join(FIXTURES, 'broken'), (l) => lines.push(l)), 1);
    assert.equal(lines.length, 5);
    assert.match(lines[0], /broken\/a\.yaml:7: domain: shop > descriptors\[0\] \(route=checkout\) > rate_limit: invalid rate limit unit "fortnight"/);
    assert.match(lines[4], /^4 problems/);
  });
});
