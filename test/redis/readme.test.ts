/**
 * test/redis/readme — the example of README.md's redis section is typechecked (strict, against the package as users
 * import it: `ratekeeper`, `ratekeeper/redis` through package.json "exports") and run against a real server and a
 * real 3-master cluster (its addresses, 127.0.0.1:6379 and port 7000, replaced by the harness's).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { RedisCluster, RedisServer } from '../support/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** example — the ts block of the redis section. */
function example(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('<!-- section: redis -->');
  const end = readme.indexOf('<!-- /section: redis -->');
  assert.ok(start !== -1 && end > start, 'README.md has the redis section markers');
  const m = /```ts\n([\s\S]*?)```/.exec(readme.slice(start, end));
  assert.ok(m, 'the redis section has a ts example');
  return m[1];
}

let server: RedisServer;
let cluster: RedisCluster;
const dir = join(root, 'dist', `.readme-redis-${process.pid}`); // inside the package: `ratekeeper/…` resolves to it
before(async () => {
  server = await RedisServer.start();
  cluster = await RedisCluster.start();
  mkdirSync(dir, { recursive: true });
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await server.stop();
  await cluster.stop();
});

test('the README redis example typechecks', () => {
  const file = join(dir, 'example.ts');
  writeFileSync(file, example());
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts'], types: ['node'], strict: true, noEmit: true, skipLibCheck: true, typeRoots: [join(root, 'node_modules/@types')],
  });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.deepEqual(diagnostics, []);
});

test('the README redis example runs against a real server and cluster', () => {
  const code = example();
  assert.ok(code.includes("'redis://127.0.0.1:6379'") && code.includes('port: 7000'), 'the example uses the documented addresses');
  const js = ts.transpileModule(code, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022 } }).outputText
    .replace("'redis://127.0.0.1:6379'", `'redis://127.0.0.1:${server.port}'`)
    .replace('port: 7000', `port: ${cluster.nodes[0].port}`);
  const file = join(dir, 'example.mjs');
  writeFileSync(file, js);
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'blocked', 'the first user is admitted (nothing printed), the blocked IP is blocked');
  assert.equal(r.stderr, '');
  assert.ok(server.cli('DBSIZE') !== '0', 'the example wrote its state to Redis');
});
