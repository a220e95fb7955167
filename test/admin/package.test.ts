/**
 * test/admin/package — `ratekeeper/admin` resolves through package.json "exports" (the package importing itself by
 * name), and the package ships the dashboard's files (src/admin/page) beside dist/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

test('ratekeeper/admin resolves to the built handler', async () => {
  const url = import.meta.resolve('ratekeeper/admin');
  assert.equal(fileURLToPath(url), resolve(root, 'dist/src/admin/index.js'));
  const m = (await import('ratekeeper/admin' as string)) as typeof import('../../src/admin/index.js');
  assert.equal(typeof m.adminHandler, 'function');
  assert.equal(typeof m.serveAdmin, 'function');
});

test('the package ships the page and the admin module', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const [info] = JSON.parse(out) as { files: { path: string }[] }[];
  const paths = new Set(info.files.map((f) => f.path));
  for (const f of ['src/admin/page/index.html', 'src/admin/page/app.js', 'src/admin/page/app.css', 'src/admin/page/icon.svg', 'dist/src/admin/index.js', 'dist/src/admin/index.d.ts', 'src/stores/redis/lua/index.lua', 'src/stores/redis/lua/prune.lua', 'src/stores/redis/lua/share.lua']) {
    assert.ok(paths.has(f), `${f} is in the package`);
  }
});
