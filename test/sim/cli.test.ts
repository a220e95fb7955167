/** The `ratekeeper` command end to end, as a child process: exit codes, files, well-formed SVG with the expected series, CSV. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CSV_HEADER } from '../../src/sim/output.js';
import { parseCsv } from '../../src/sim/csv.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], cwd?: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'ratekeeper-cli-'));
}

/**
 * assertWellFormedXml — a strict little check: every `<` starts a tag, comment, declaration or processing
 * instruction; tags nest and close; attributes are quoted; `&` starts an entity. Enough for machine-written SVG.
 */
function assertWellFormedXml(xml: string): void {
  const token = /<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>]*>|<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[A-Za-z_][\w:.-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
  const entity = /&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);/y;
  const stack: string[] = [];
  let roots = 0;
  let i = 0;
  while (i < xml.length) {
    const c = xml[i];
    if (c === '<') {
      token.lastIndex = i;
      const m = token.exec(xml);
      assert.ok(m, `malformed markup at ${i}: ${xml.slice(i, i + 60)}`);
      if (m[2] !== undefined) {
        if (m[1] === '/') assert.equal(stack.pop(), m[2], `</${m[2]}> at ${i} closes the wrong element`);
        else {
          if (stack.length === 0) roots++;
          if (m[4] !== '/') stack.push(m[2]);
        }
        for (const a of m[3].matchAll(/"([^"]*)"/g)) {
          for (let j = a[1].indexOf('&'); j >= 0; j = a[1].indexOf('&', j + 1)) {
            entity.lastIndex = j;
            assert.ok(entity.test(a[1]), `bad entity in an attribute near ${i}`);
          }
        }
      }
      i = token.lastIndex;
    } else {
      if (c === '&') {
        entity.lastIndex = i;
        assert.ok(entity.test(xml), `bad entity at ${i}: ${xml.slice(i, i + 20)}`);
      }
      i++;
    }
  }
  assert.deepEqual(stack, [], 'unclosed elements');
  assert.equal(roots, 1, 'one root element');
}

/** texts — the text content of the SVG's <text> elements (titles, labels, legends). */
function texts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1].replaceAll('&amp;', '&').replaceAll('&#39;', "'").replaceAll('&quot;', '"'));
}

test('simulate abuser: exit 0, the summary, a well-formed SVG with both limiters, sent/admitted and the lockout, and the CSV', async () => {
  const dir = await tempDir();
  try {
    const r = await run(['simulate', 'abuser', '--out', join(dir, 'out')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /windowed: fixed window 30\/30s:\n {2}abuser: sent 401, admitted 300 \(74\.8 %\); locked out 5 times/);
    assert.match(r.stdout, /EARRRL: 1\/s, half-life 20s:\n {2}abuser: sent 401, admitted 89 \(22\.2 %\); locked out at 26\.95 s, let back in at 256 s/);
    assert.deepEqual((await readdir(join(dir, 'out'))).sort(), ['abuser.csv', 'abuser.svg']);

    const svg = await readFile(join(dir, 'out', 'abuser.svg'), 'utf8');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assertWellFormedXml(svg);
    const t = texts(svg);
    for (const want of ['windowed: fixed window 30/30s', 'EARRRL: 1/s, half-life 20s', 'sent', 'admitted', 'cumulative requests', 'time (s)',
      'locked out at 26.95 s', 'let back in at 256 s', 'obeys from here', 'estimate (EARRRL: 1/s, half-life 20s)', 'true rate', 'limit']) {
      assert.ok(t.includes(want), `the SVG has no text ${JSON.stringify(want)}`);
    }
    assert.ok((svg.match(/<path[^>]*role-line|class="mark-line/g) ?? []).length >= 3, 'line marks');

    const rows = parseCsv(await readFile(join(dir, 'out', 'abuser.csv'), 'utf8')).map((x) => x.fields);
    assert.deepEqual(rows[0], [...CSV_HEADER]);
    const requests = rows.filter((x) => x[1] === 'request');
    assert.equal(requests.length, 2 * 401);
    assert.deepEqual(requests[0], ['windowed: fixed window 30/30s', 'request', '0', 'abuser', '', '1', '1', 'allowed', '', '0', '1', '1']);
    const lastEarrrl = requests[requests.length - 1];
    assert.deepEqual([lastEarrrl[0], lastEarrrl[2], lastEarrrl[10], lastEarrrl[11]], ['EARRRL: 1/s, half-life 20s', '299', '401', '89']);
    const estimates = rows.filter((x) => x[1] === 'estimate');
    assert.equal(estimates.length, 1201); // EARRRL only, every 250 ms over [0, 300] s
    assert.ok(estimates.every((x) => x[0] === 'EARRRL: 1/s, half-life 20s' && x[4] === 'earrrl' && Number(x[8]) >= 0));
    assert.equal(rows.filter((x) => x[1] === 'estimate-after').length, 401); // the top of each request's jump
    assert.equal(rows.length, 1 + 2 * 401 + 1201 + 401);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('simulate three-clients: one panel per client with the estimate and the true rate', async () => {
  const dir = await tempDir();
  try {
    const r = await run(['simulate', 'three-clients', '-o', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /10\/s: sent 1500, admitted 1500 \(100\.0 %\); never refused/);
    const svg = await readFile(join(dir, 'three-clients.svg'), 'utf8');
    assertWellFormedXml(svg);
    const t = texts(svg);
    for (const want of ['10/s: estimated rate', '1/s: estimated rate', '0.1/s: estimated rate', 'estimate (EARRRL, half-life 10s)', 'true rate', 'requests per second']) {
      assert.ok(t.includes(want), `the SVG has no text ${JSON.stringify(want)}`);
    }
    const rows = parseCsv(await readFile(join(dir, 'three-clients.csv'), 'utf8')).map((x) => x.fields);
    assert.equal(rows.filter((x) => x[1] === 'request').length, 1500 + 150 + 15);
    assert.equal(rows.filter((x) => x[1] === 'estimate').length, 3 * 2501);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('simulate --trace: a custom CSV through two limiters, files named after the trace', async () => {
  const dir = await tempDir();
  try {
    const lines = ['t,key,cost'];
    for (let i = 0; i < 40; i++) lines.push(`${i * 0.5},alice,1`);
    for (let i = 0; i < 5; i++) lines.push(`${i * 4},bob,2`);
    await writeFile(join(dir, 'my-trace.csv'), lines.join('\n'));
    const r = await run(['simulate', '--trace', 'my-trace.csv', '--rules', '10/10s', '--algorithm', 'fixed-window', '--rules', '1/s', '--algorithm', 'earrrl', '--half-life', '5s', '--out', 'o'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^my-trace: my-trace\.csv: 45 requests from 2 keys/);
    assert.match(r.stdout, /fixedWindow 10\/10s:\n {2}alice: sent 40, admitted 20 \(50\.0 %\)/);
    assert.match(r.stdout, /earrrl 1\/s, half-life 5s:/);
    assert.deepEqual((await readdir(join(dir, 'o'))).sort(), ['my-trace.csv', 'my-trace.svg']);
    const svg = await readFile(join(dir, 'o', 'my-trace.svg'), 'utf8');
    assertWellFormedXml(svg);
    const t = texts(svg);
    assert.ok(t.includes('fixedWindow 10/10s — alice') && t.includes('earrrl 1/s, half-life 5s — bob'), 'one panel per limiter and key');
    const rows = parseCsv(await readFile(join(dir, 'o', 'my-trace.csv'), 'utf8')).map((x) => x.fields);
    assert.equal(rows.filter((x) => x[1] === 'request').length, 2 * 45);
    assert.ok(rows.some((x) => x[1] === 'estimate' && x[3] === 'bob'));
    // Writing next to the trace would overwrite it: refused, and the trace is untouched.
    const clash = await run(['simulate', '--trace', 'my-trace.csv', '--rules', '1/s'], dir);
    assert.equal(clash.code, 2);
    assert.match(clash.stderr, /would overwrite the trace "my-trace\.csv": choose another --out or --name/);
    assert.equal(await readFile(join(dir, 'my-trace.csv'), 'utf8'), lines.join('\n'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('help: exit 0 with the usage; no arguments: the usage on stderr and exit 2', async () => {
  const h = await run(['help']);
  assert.equal(h.code, 0);
  assert.match(h.stdout, /Usage:\n(?: {2}ratekeeper .*\n)* {2}ratekeeper simulate <scenario>/);
  assert.match(h.stdout, /Usage:\n {2}ratekeeper serve --config PATH/);
  assert.match(h.stdout, /three-clients-1s/);
  const none = await run([]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /Usage:/);
});

const BAD: [string[], RegExp][] = [
  [['simulate', 'nope'], /unknown scenario "nope": choose one of three-clients, three-clients-1s, abuser/],
  [['simulate'], /simulate needs a scenario/],
  [['frobnicate'], /unknown command "frobnicate"/],
  [['simulate', 'abuser', '--bogus'], /Unknown option '--bogus'/],
  [['simulate', 'abuser', '--rules', '3x'], /bad --rules "3x": cannot parse limit "3x"/],
  [['simulate', 'abuser', '--rules', '1/s', '--algorithm', 'quantum'], /unknown --algorithm "quantum"/],
  [['simulate', 'abuser', '--rules', '1/s', '--algorithm', 'earrrl'], /--algorithm earrrl needs --half-life/],
  [['simulate', 'abuser', '--half-life', 'soon'], /--half-life must be a duration like 500ms, 10s or 1m, got "soon"/],
  [['simulate', 'abuser', '--rules', '1/s', '--half-life', '10s'], /--half-life 10s applies to --algorithm earrrl only/],
  [['simulate', 'abuser', '--algorithm', 'gcra'], /--algorithm needs --rules/],
  [['simulate', 'abuser', '--rules', '1/s', '--accounting', 'lenient'], /--accounting must be strict or leaky, got "lenient"/],
  [['simulate', 'abuser', '--rules', '1/s', '--rules', '1/s'], /two limiters are named "slidingLog 1\/s"/],
  [['simulate', '--trace', 'missing.csv', '--rules', '1/s'], /cannot read --trace "missing.csv": ENOENT/],
  [['simulate', '--trace', 'bad.csv', '--rules', '1/s'], /bad\.csv:3: timestamp "later" is not a number/],
  [['simulate', '--trace', 'bad.csv'], /--trace needs --rules/],
  [['simulate', 'abuser', '--trace', 'bad.csv', '--rules', '1/s'], /give a scenario or --trace, not both/],
  [['simulate', '--trace', 'bad.csv', '--rules', '1/s', '--time-unit', 'h'], /--time-unit must be s or ms, got "h"/],
];

test('bad arguments: exit 2, a message naming the bad value, nothing written', async () => {
  const dir = await tempDir();
  try {
    await writeFile(join(dir, 'bad.csv'), 't\n1\nlater\n');
    const results = await Promise.all(BAD.map(([args]) => run([...args, '--out', 'o'], dir)));
    results.forEach((r, i) => {
      const [args, message] = BAD[i];
      assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}, ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /^ratekeeper: /);
      assert.equal(r.stdout, '');
    });
    assert.equal(existsSync(join(dir, 'o')), false);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the XML check itself rejects malformed markup (so the SVG checks above can fail)', () => {
  assertWellFormedXml('<svg a="1"><g><text>x &amp; y</text></g><path d="M0,0"/></svg>');
  for (const bad of ['<svg><g></svg>', '<svg><g></g>', '<svg a=1></svg>', '<svg>a & b</svg>', '<svg></svg><svg></svg>', '<svg><text>1 < 2</text></svg>']) {
    assert.throws(() => assertWellFormedXml(bad), assert.AssertionError, bad);
  }
});

test('without vega and vega-lite installed: a clear message, exit 1, nothing written', async () => {
  // A resolve hook that makes both packages unresolvable, as on an install without the optional peers.
  const hooks = `export async function resolve(s, c, next) {
    if (s === 'vega' || s === 'vega-lite') throw Object.assign(new Error("Cannot find package '" + s + "'"), { code: 'ERR_MODULE_NOT_FOUND' });
    return next(s, c);
  }`;
  const register = `import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));`;
  const dir = await tempDir();
  try {
    const r = await new Promise<Run>((resolve) => {
      execFile(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, CLI, 'simulate', 'abuser', '--out', join(dir, 'o')], { timeout: 30_000 }, (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      });
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^ratekeeper: the simulator's plots need the optional peer dependencies vega and vega-lite: npm install vega vega-lite/);
    assert.equal(existsSync(join(dir, 'o')), false);
    // --no-plot does without them: the CSV only.
    const csvOnly = await new Promise<Run>((resolve) => {
      execFile(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, CLI, 'simulate', 'abuser', '--no-plot', '--out', join(dir, 'o')], { timeout: 30_000 }, (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      });
    });
    assert.equal(csvOnly.code, 0, csvOnly.stderr);
    assert.match(csvOnly.stdout, /wrote \S*abuser\.csv\n$/);
    assert.deepEqual(await readdir(join(dir, 'o')), ['abuser.csv']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the examples of docs/simulator.md run: its trace and every ratekeeper command in it (CSV only, for speed)', async () => {
  const doc = await readFile(fileURLToPath(new URL('../../../docs/simulator.md', import.meta.url)), 'utf8');
  const csv = /```csv\n([\s\S]*?)```/.exec(doc);
  assert.ok(csv, 'the doc has an example trace');
  // Commands, with their backslash continuations joined; `npx ratekeeper` and `ratekeeper` alike.
  const commands = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)]
    .flatMap((m) => m[1].replace(/\\\n\s*/g, '').split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => /^(npx )?ratekeeper /.test(line))
    .map((line) => line.replace(/^(npx )?ratekeeper /, ''));
  assert.ok(commands.length >= 5, `found ${commands.length} commands`);
  // Each command in its own directory with the example trace, all at once.
  const dirs = await Promise.all(commands.map(() => tempDir()));
  try {
    await Promise.all(dirs.map((dir) => writeFile(join(dir, 'requests.csv'), csv[1])));
    const argv = (command: string): string[] => [...command.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]);
    const results = await Promise.all(commands.map((command, i) => run([...argv(command), ...(command === 'help' ? [] : ['--no-plot'])], dirs[i])));
    results.forEach((r, i) => assert.equal(r.code, 0, `ratekeeper ${commands[i]}: ${r.stderr}`));
  } finally {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
});
