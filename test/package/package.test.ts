/**
 * test/package — the package as users install it: `npm pack` (dist/ is already built by the test command), the
 * tarball unpacked as node_modules/ratekeeper of scratch projects (its dependencies, typescript and @types/node are
 * this repository's, linked: no network), then
 * - a consumer project typechecked under moduleResolution nodenext (node16's resolution, plus require of ESM), bundler and node10 with the strictest
 *   settings users turn on (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess, skipLibCheck: false …);
 * - @arethetypeswrong/cli on the tarball;
 * - an ES module and a CommonJS module (`require('ratekeeper')`, Node >= 20.19) importing every entry point and
 *   deciding a request;
 * - the route the README gives while the package is not on the registry: `npm install <the tarball>` in a fresh
 *   `npm init -y` project (offline: its two dependencies packed from this repository's node_modules beside it), then
 *   `npx ratekeeper --help` (the bin is linked) and an import that decides a request.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
let scratch: string;
let tarball: string;
/** attw — @arethetypeswrong/cli on the tarball, started as soon as it is packed (it runs beside the typechecks). */
let attw: Promise<{ status: number | null; out: string }>;

/** ENTRY_POINTS — every subpath of package.json "exports" (but package.json). */
const ENTRY_POINTS = ['ratekeeper', 'ratekeeper/redis', 'ratekeeper/node', 'ratekeeper/express', 'ratekeeper/fastify', 'ratekeeper/hono', 'ratekeeper/sim'];

/** CONSUMER — code that uses the types the way a user does, under exactOptionalPropertyTypes and noUncheckedIndexedAccess. */
const CONSUMER = `
import { limiter, rules, memoryStore, parseRules, RatekeeperError, type Decision, type RuleOutcome, type LimiterOptions } from 'ratekeeper';
import { redisStore, type RedisStoreOptions } from 'ratekeeper/redis';
import { rateLimit as nodeLimit } from 'ratekeeper/node';
import { rateLimit as expressLimit } from 'ratekeeper/express';
import { ratekeeperPlugin, type FastifyRateLimitOptions } from 'ratekeeper/fastify';
import { rateLimit as honoLimit } from 'ratekeeper/hono';
import { replay, periodic } from 'ratekeeper/sim';

const options: LimiterOptions = { rules: [rules.earrrl({ limit: 30, per: '1m', halfLife: '10s' }), ...parseRules('800/day')], store: memoryStore() };
const lim = limiter(options);
const d: Decision = lim.checkSync('user:1', { cost: 1 });
const rate: number | undefined = d.rate;
const first: RuleOutcome | undefined = d.rules[0];
const remaining: number = first?.remaining ?? 0;
const own: RuleOutcome = { name: 'n', algorithm: 'gcra', allowed: true, limit: 1, remaining: 0, retryAfter: 0, resetAfter: 0, rate: undefined };
export async function later(): Promise<boolean> {
  const e: Decision = await lim.check('user:1');
  try { limiter({ rules: '1/s' }); } catch (err) { if (err instanceof RatekeeperError) return err.code === 'ERR_CONFIG'; }
  return e.allowed;
}
const redisOptions: Omit<RedisStoreOptions, 'client'> = { prefix: 'rk:', onError: 'memory' };
const plugin: FastifyRateLimitOptions = { rules: '10/s', hook: 'preHandler' };
export const used = [rate, remaining, own, redisOptions, plugin, redisStore, nodeLimit({ rules: '1/s' }), expressLimit({ rules: '1/s' }), ratekeeperPlugin, honoLimit({ rules: '1/s', key: () => 'k' }),
  replay(periodic({ key: 'a', rate: 1, start: 0, end: 1000 }).trace, { limiters: [{ name: 'a', rules: '1/s' }] })];
`;

/** STRICTEST — the compiler options every consumer is checked with. */
const STRICTEST: ts.CompilerOptions = {
  strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false,
  noImplicitOverride: true, noImplicitReturns: true, noFallthroughCasesInSwitch: true, noPropertyAccessFromIndexSignature: true,
  noEmit: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: ['node'],
};

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rk-package-'));
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const [info] = JSON.parse(out) as { filename: string }[];
  assert.ok(info);
  tarball = join(scratch, info.filename);
  const modules = join(scratch, 'node_modules');
  mkdirSync(join(modules, 'ratekeeper'), { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', join(modules, 'ratekeeper'), '--strip-components', '1']);
  // require() of an ES module works from Node 20.19 and TypeScript >= 5.8 types it (module nodenext), but attw
  // reports every `require` that resolves to ESM: that rule is ignored, every other one applies (node10 included).
  // Offline: a tarball is read as it is (no registry, no DefinitelyTyped lookup).
  const child = spawn(process.execPath, [join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'), tarball, '--format', 'ascii', '--no-color', '--ignore-rules', 'cjs-resolves-to-esm'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (c: Buffer) => { text += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { text += c.toString(); });
  attw = new Promise((done) => child.on('close', (status) => done({ status, out: text })));
  // the dependencies, typescript and @types: this repository's installed packages (offline)
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === 'ratekeeper' || name.startsWith('.')) continue;
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  for (const [dir, type] of [['esm', 'module'], ['cjs', 'commonjs']] as const) {
    mkdirSync(join(scratch, dir));
    writeFileSync(join(scratch, dir, 'package.json'), JSON.stringify({ name: `consumer-${dir}`, private: true, type }));
    writeFileSync(join(scratch, dir, 'index.ts'), CONSUMER);
  }
  // nodenext also compiles CommonJS that imports the package (TypeScript >= 5.8 types require() of ESM there)
  writeFileSync(join(scratch, 'esm', 'legacy.cts'), `import { limiter } from 'ratekeeper';\nexport const d = limiter({ rules: '1/s' }).checkSync('k').allowed;\n`);
});
after(async () => {
  await attw;
  rmSync(scratch, { recursive: true, force: true });
});

/** typecheck — the diagnostics of `files` under `options` (file:line message). */
function typecheck(files: string[], options: ts.CompilerOptions): string[] {
  const program = ts.createProgram(files, { ...STRICTEST, ...options, typeRoots: [join(scratch, 'node_modules/@types')] });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${d.file.fileName.slice(scratch.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('the packed package', () => {
  it('typechecks in a consumer under moduleResolution nodenext (ESM and CommonJS), with the strictest flags', () => {
    // one program: a deliberately broken file beside the consumer shows the check can fail (and that
    // noUncheckedIndexedAccess is on): its one error is the only diagnostic expected
    const broken = join(scratch, 'esm', 'broken.ts');
    writeFileSync(broken, `import { limiter } from 'ratekeeper';\nexport const r: number = limiter({ rules: '1/s' }).checkSync('k').rules[0].remaining;\n`);
    const problems = typecheck([join(scratch, 'esm/index.ts'), join(scratch, 'esm/legacy.cts'), broken], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext });
    rmSync(broken);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0] ?? '', /^esm\/broken\.ts:2 Object is possibly 'undefined'/);
  });

  it('typechecks under bundler', () => {
    assert.deepEqual(typecheck([join(scratch, 'esm/index.ts')], { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }), []);
  });

  it('typechecks under node10 (subpaths through typesVersions), as CommonJS', () => {
    assert.deepEqual(typecheck([join(scratch, 'cjs/index.ts')], {
      module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, esModuleInterop: true,
    }), []);
  });

  it('passes @arethetypeswrong/cli; the one rule ignored is cjs-resolves-to-esm (ESM only, by design)', async () => {
    const r = await attw;
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /No problems found/);
  });

  it('installs with npm install <tarball> into a fresh npm init -y project: npx ratekeeper --help, and an import', () => {
    const project = join(scratch, 'fresh');
    mkdirSync(project);
    const npm = (args: string[]): string => execFileSync('npm', args, { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    // what `npm init -y` writes (CommonJS, no dependencies), without spending an npm process on it
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh', version: '1.0.0', main: 'index.js', license: 'ISC' }, null, 2));
    // the dependencies as the registry would serve them, packed from this repository's copies (no network)
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch, ...Object.keys(pkg.dependencies).map((name) => join(root, 'node_modules', name))], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const deps = (JSON.parse(packed) as { filename: string }[]).map((d) => join(scratch, d.filename));
    assert.equal(deps.length, Object.keys(pkg.dependencies).length);
    npm(['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball, ...deps]);
    const help = spawnSync('npx', ['--no-install', 'ratekeeper', '--help'], { cwd: project, encoding: 'utf8', timeout: 30_000 });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^ratekeeper — /);
    for (const c of ['serve', 'config check', 'simulate', 'demo']) assert.match(help.stdout, new RegExp(`^  ${c} `, 'm'), c);
    // the project is CommonJS (npm init -y): an .mjs file imports, as the README says
    writeFileSync(join(project, 'try.mjs'), `import { limiter } from 'ratekeeper';\nconst lim = limiter({ rules: '2/s' });\nconsole.log(lim.checkSync('k').remaining, (await lim.check('k')).remaining);\n`);
    const tried = spawnSync(process.execPath, ['try.mjs'], { cwd: project, encoding: 'utf8', timeout: 20_000 });
    assert.equal(tried.status, 0, tried.stderr);
    assert.equal(tried.stdout, '1 0\n');
  });

  it('runs from an ES module and from CommonJS (require of ESM, Node >= 20.19), every entry point', () => {
    const use = `const lim = m.limiter({ rules: '2/s' }); console.log(lim.checkSync('k').remaining, lim.checkSync('k').remaining, lim.checkSync('k').allowed);`;
    writeFileSync(join(scratch, 'esm', 'run.mjs'), `${ENTRY_POINTS.map((e, i) => `import * as m${i} from '${e}';`).join('\n')}\nconst m = m0;\n${use}\nconsole.log([${ENTRY_POINTS.map((_, i) => `m${i}`).join(', ')}].every((x) => Object.keys(x).length > 0));\n`);
    writeFileSync(join(scratch, 'cjs', 'run.cjs'), `const all = ${JSON.stringify(ENTRY_POINTS)}.map((e) => require(e));\nconst m = require('ratekeeper');\n${use}\nconsole.log(all.every((x) => Object.keys(x).length > 0));\n`);
    const esm = spawnSync(process.execPath, [join(scratch, 'esm', 'run.mjs')], { cwd: join(scratch, 'esm'), encoding: 'utf8', timeout: 20_000 });
    assert.equal(esm.status, 0, esm.stderr);
    assert.equal(esm.stdout, '1 0 false\ntrue\n');
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    const cjs = spawnSync(process.execPath, [join(scratch, 'cjs', 'run.cjs')], { cwd: join(scratch, 'cjs'), encoding: 'utf8', timeout: 20_000 });
    if (major > 20 && !(major === 22 && minor < 12) || (major === 20 && minor >= 19)) {
      assert.equal(cjs.status, 0, cjs.stderr);
      assert.equal(cjs.stdout, '1 0 false\ntrue\n');
    } else {
      assert.match(cjs.stderr, /ERR_REQUIRE_ESM/, 'before Node 20.19, CommonJS needs import() (as the README says)');
    }
  });
});
