/**
 * test/support/reporter — the `npm test` reporter: one line per test file (its tests, failures and time), then every
 * failure in full (the test's path, the error with its stack, and what the file wrote to stdout/stderr), then the
 * summary, last, where a person looks. `node --test --test-reporter=./dist/test/support/reporter.js dist/test/`.
 */
import { relative } from 'node:path';
import { inspect } from 'node:util';

/** Event — the part of node:test's reporter events this reporter reads. */
interface Event {
  type: string;
  data: {
    name?: string;
    nesting?: number;
    file?: string;
    message?: string;
    skip?: unknown;
    todo?: unknown;
    details?: { duration_ms?: number; type?: string; error?: unknown };
  };
}

/** FileResult — one test file's counts and output. */
interface FileResult {
  tests: number;
  failed: number;
  skipped: number;
  /** ms — the file's time: the sum of its top-level tests'. */
  ms: number;
  crashed: boolean;
  output: string;
}

/**
 * TRACKED — the events read: a test file is taken up (`test:dequeue` of the file itself), a test starts or ends, a
 * file writes to stdout or stderr.
 */
const TRACKED = new Set(['test:dequeue', 'test:start', 'test:pass', 'test:fail', 'test:stdout', 'test:stderr']);

const GREEN = '\x1b[32m';
const RED = '\x1b[31m';
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

export default async function* reporter(source: AsyncIterable<Event>): AsyncGenerator<string> {
  const color = process.stdout.isTTY === true && process.env.NO_COLOR === undefined;
  const paint = (c: string, s: string): string => (color ? `${c}${s}${RESET}` : s);
  const failures: string[] = [];
  /** stack — the names of the tests open at each nesting level (for a failure's path). */
  const stack: string[] = [];
  let files = 0;
  let tests = 0;
  let failed = 0;
  let skipped = 0;
  const started = Date.now();
  /** current — the file whose events are arriving (files run one after the other: --test-concurrency=1). */
  let current: string | undefined;
  let f: FileResult = fresh();
  const show = (file: string | undefined): string => (file === undefined ? '(no file)' : relative(process.cwd(), file));
  /** line — the finished file's line; its failures get what it wrote to stdout and stderr. */
  const line = (): string => {
    files++; // files with tests
    const bad = f.failed > 0 || f.crashed;
    if (bad && f.output.length > 0) failures[failures.length - 1] += `  output of the file:\n${indent(f.output.trimEnd())}\n`;
    const counts = `${f.tests} test${f.tests === 1 ? '' : 's'}${f.failed > 0 ? `, ${f.failed} failed` : ''}${f.skipped > 0 ? `, ${f.skipped} skipped` : ''}`;
    return `${bad ? paint(RED, '✖') : paint(GREEN, '✔')} ${show(current)}  ${counts}  ${paint(DIM, seconds(f.ms))}\n`;
  };

  for await (const { type, data } of source) {
    if (!TRACKED.has(type)) continue; // enqueue, complete, plan, diagnostic, coverage…
    // A test's `file` is where it was declared: a helper module (test/http/scenarios) that declares the tests of a
    // test file is not a file of its own. The run takes up one test file after the other (--test-concurrency=1), and
    // says so with the dequeue of the file itself: that, and only that, starts a new file.
    const taken = type === 'test:dequeue' && (data.nesting ?? 0) === 0 && data.name !== undefined && data.name === data.file;
    if (taken || (current === undefined && data.file !== undefined)) {
      if (current !== undefined && (f.tests > 0 || f.crashed)) yield line();
      current = data.file;
      f = fresh();
    }
    if (type === 'test:dequeue') continue;
    if (type === 'test:start') {
      stack[data.nesting ?? 0] = data.name ?? '';
      continue;
    }
    if (type === 'test:stdout' || type === 'test:stderr') {
      f.output += data.message ?? '';
      continue;
    }
    if (type !== 'test:pass' && type !== 'test:fail') continue;
    const nesting = data.nesting ?? 0;
    if (nesting === 0) f.ms += data.details?.duration_ms ?? 0;
    if (nesting === 0 && data.name === data.file) {
      // the file itself failed (it crashed, or failed outside any test)
      if (type === 'test:fail' && f.failed === 0) {
        f.crashed = true;
        failed++;
        failures.push(`${paint(RED, '✖')} ${show(data.file)}\n${indent(inspect(cause(data.details?.error), { depth: 4 }))}\n`);
      }
      continue;
    }
    if (data.details?.type === 'suite') continue;
    f.tests++;
    tests++;
    if (data.skip !== undefined || data.todo !== undefined) {
      // a skipped or todo test: its failure (todo) is expected and does not fail the run, so it is not listed
      f.skipped++;
      skipped++;
      continue;
    }
    if (type === 'test:fail') {
      f.failed++;
      failed++;
      const path = [...stack.slice(0, nesting), data.name].join(' › ');
      failures.push(`${paint(RED, '✖')} ${show(data.file)} › ${path}\n${indent(inspect(cause(data.details?.error), { depth: 4 }))}\n`);
    }
  }
  if (current !== undefined && (f.tests > 0 || f.crashed)) yield line();

  if (failures.length > 0) {
    yield `\n${paint(RED, `── ${failures.length} failure${failures.length === 1 ? '' : 's'} ──`)}\n\n`;
    for (const text of failures) yield `${text}\n`;
  }
  const summary = `${tests} tests in ${files} files: ${tests - failed - skipped} passed, ${failed} failed, ${skipped} skipped (${seconds(Date.now() - started)})`;
  yield `\n${failed > 0 ? paint(RED, `✖ ${summary}`) : paint(GREEN, `✔ ${summary}`)}\n`;
}

function fresh(): FileResult {
  return { tests: 0, failed: 0, skipped: 0, ms: 0, crashed: false, output: '' };
}

/** cause — the assertion behind node:test's wrapper error (ERR_TEST_FAILURE carries it as `cause`). */
function cause(error: unknown): unknown {
  const e = error as { code?: string; cause?: unknown } | undefined;
  return e?.code === 'ERR_TEST_FAILURE' && e.cause !== undefined ? e.cause : error;
}

function indent(text: string): string {
  return text.split('\n').map((l) => `    ${l}`).join('\n');
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}
