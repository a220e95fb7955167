/**
 * test/http/readme — the framework examples of README.md's http section are compiled and run: every ```ts block
 * tagged `// example: <name>` is typechecked, strict, against the package as users import it (`ratekeeper/express`
 * …, resolved through package.json "exports" to the built declarations), then transpiled and run in a child
 * process whose `listen` is redirected to a free loopback port, and called over HTTP: the README cannot drift
 * from the API or from what the middleware does.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** examples — the tagged ts blocks of the http section of README.md, by name. */
export function examples(readme: string): Map<string, string> {
  const start = readme.indexOf('<!-- section: http -->');
  const end = readme.indexOf('<!-- /section: http -->');
  assert.ok(start !== -1 && end > start, 'README.md has the http section markers');
  const section = readme.slice(start, end);
  const out = new Map<string, string>();
  for (const m of section.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const tag = /^\/\/ example: (\w+)/.exec(m[1]);
    if (tag) out.set(tag[1], m[1]);
  }
  return out;
}

describe('README http examples', () => {
  it('has a compiled example for every adapter', () => {
    const found = examples(readFileSync(join(root, 'README.md'), 'utf8'));
    assert.deepEqual([...found.keys()].sort(), ['express', 'fastify', 'hono', 'node']);
    // inside the package, so that `ratekeeper/…` resolves to this package by its own name
    const dir = join(root, 'dist', `.readme-examples-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const files = [...found].map(([name, code]) => {
        const file = join(dir, `${name}.ts`);
        writeFileSync(file, code);
        return file;
      });
      const program = ts.createProgram(files, {
        target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.es2022.d.ts'], types: ['node'], strict: true, noEmit: true, skipLibCheck: true, typeRoots: [join(root, 'node_modules/@types')],
      });
      const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
        const where = d.file ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
        return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
      assert.deepEqual(diagnostics, []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs every example: a server that answers with the rate-limit headers the README promises', async () => {
    const found = examples(readFileSync(join(root, 'README.md'), 'utf8'));
    const dir = join(root, 'dist', `.readme-run-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    // listen(3000) in the examples becomes a free loopback port, announced on stdout
    const preload = join(dir, 'listen.mjs');
    writeFileSync(preload, `import http from 'node:http';
const listen = http.Server.prototype.listen;
let told = false;
http.Server.prototype.listen = function (...args) {
  const cb = args.find((a) => typeof a === 'function');
  this.once('listening', () => { if (!told) { told = true; process.stdout.write('LISTENING ' + this.address().port + '\\n'); } });
  return cb ? listen.call(this, 0, '127.0.0.1', cb) : listen.call(this, 0, '127.0.0.1');
};
`);
    const calls: Record<string, { path: string; init?: RequestInit; check: (res: Response, body: string) => void }> = {
      express: {
        path: '/upload', init: { method: 'POST', body: 'x'.repeat(100), headers: { 'content-type': 'text/plain' } },
        check: (res, body) => {
          assert.equal(res.status, 200);
          assert.match(res.headers.get('ratelimit-policy') ?? '', /"10\/1s";q=10;w=1, "100\/1m";q=100;w=60, "bytes";q=1000000;qu="content-bytes";w=1/);
          // 100 bytes charged to a bucket draining 1e6 per second: a little has drained by the time it answers
          assert.match(res.headers.get('ratelimit') ?? '', /^"10\/1s";r=9;t=1, "100\/1m";r=99;t=60, "bytes";r=999\d\d\d;t=1$/);
          const { remaining } = JSON.parse(body) as { remaining: number };
          assert.ok(remaining >= 999_900 && remaining < 1_000_000, `remaining ${remaining}`);
        },
      },
      fastify: {
        path: '/search',
        check: (res, body) => {
          assert.equal(res.status, 200);
          assert.equal(body, 'results');
          assert.match(res.headers.get('ratelimit') ?? '', /^"10\/1m";r=9;t=\d+$/);
        },
      },
      hono: {
        path: '/api/hello', init: { headers: { 'x-api-key': 'k' } },
        check: (res, body) => {
          assert.equal(res.status, 200);
          assert.deepEqual(JSON.parse(body), { remaining: 99 });
          assert.match(res.headers.get('ratelimit') ?? '', /^"100\/1m";r=99;t=\d+$/);
        },
      },
      node: {
        path: '/',
        check: (res, body) => {
          assert.equal(res.status, 200);
          assert.equal(body, 'reason: allowed');
          assert.equal(res.headers.get('x-ratelimit-limit'), '5');
          assert.match(res.headers.get('ratelimit') ?? '', /^"smooth";r=4;t=1$/);
        },
      },
    };
    try {
      for (const [name, code] of found) {
        const file = join(dir, `${name}.mjs`);
        writeFileSync(file, ts.transpileModule(code, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText);
        const child = spawn(process.execPath, ['--import', preload, file], { stdio: ['ignore', 'pipe', 'inherit'] });
        try {
          let out = '';
          while (!/LISTENING (\d+)/.test(out)) {
            const [chunk] = (await Promise.race([once(child.stdout, 'data'), once(child, 'exit').then(() => { throw new Error(`example ${name} exited`); })])) as [Buffer];
            out += chunk.toString();
          }
          const port = Number(/LISTENING (\d+)/.exec(out)![1]);
          const call = calls[name];
          assert.ok(call, `a call for example ${name}`);
          const res = await fetch(`http://127.0.0.1:${port}${call.path}`, call.init);
          call.check(res, await res.text());
        } finally {
          child.kill('SIGKILL');
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the extraction sees a broken example (the check can fail)', () => {
    const broken = '<!-- section: http -->\n```ts\n// example: express\nconst x: number = "no";\n```\n<!-- /section: http -->';
    const dir = join(root, 'dist', `.readme-broken-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const file = join(dir, 'express.ts');
      writeFileSync(file, examples(broken).get('express') as string);
      const program = ts.createProgram([file], { strict: true, noEmit: true, types: [] });
      assert.ok(ts.getPreEmitDiagnostics(program).length > 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
