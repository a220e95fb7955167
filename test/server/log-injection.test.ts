/**
 * Log injection through the admin API, in a real service with its admin listener: an operator's block whose key and
 * reason carry a newline, a forged `ratekeeper:` line, U+2028 and bidi controls gives exactly one text log line, in
 * which none of them is raw (the reason was written as it came: its newline began a forged line of its own); the JSON
 * log's line parses and keeps the strings (hashed key) as they were given.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService } from '../../src/server/serve.js';
import { quoted } from '../../src/server/log.js';
import { http } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
policies:
  login: { rules: '1/min' }
`;

const KEY = 'user\n\u202eevil\u2028x';
const REASON = 'abuse)\nratekeeper: admin: exempt "ceo" on policy:login by loopback\u2066';
const RAW = /[\n\r\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

test('text log: an admin change with a hostile key and reason is one line, none of their characters raw', { timeout: 30_000 }, async () => {
  const lines: string[] = [];
  const r = await startService({ config: configFile(CONFIG), port: -1, grpcPort: -1, adminPort: 0, logFormat: 'text', log: (l) => lines.push(l) });
  try {
    const admin = Number(new URL(r.adminUrl!).port);
    const b = await http(admin, 'POST', '/admin/blocks', { key: KEY, for: '1m', reason: REASON });
    assert.equal(b.status, 201, b.text);
    const changes = lines.filter((l) => l.includes('admin: '));
    assert.equal(changes.length, 1, lines.join('\n---\n'));
    const [line] = changes;
    assert.ok(!RAW.test(line), `a raw line break or bidi control in ${JSON.stringify(line)}`);
    assert.ok(!line.includes('\nratekeeper:'), line);
    assert.ok(line.includes(quoted(KEY)) && line.includes(`(reason ${quoted(REASON)})`), line);
    // the quoted forms read back as the strings given
    assert.equal(JSON.parse(quoted(KEY)), KEY);
    assert.equal(JSON.parse(quoted(REASON)), REASON);
  } finally {
    await r.close();
  }
});

test('json log: the same change is one object that parses, the reason as given, the key hashed', { timeout: 30_000 }, async () => {
  const lines: string[] = [];
  const r = await startService({ config: configFile(CONFIG), port: -1, grpcPort: -1, adminPort: 0, logFormat: 'json', logKeys: 'hash', log: (l) => lines.push(l) });
  try {
    const admin = Number(new URL(r.adminUrl!).port);
    assert.equal((await http(admin, 'POST', '/admin/blocks', { key: KEY, for: '1m', reason: REASON })).status, 201);
    for (const l of lines) assert.ok(!/[\n\r]/.test(l), l);
    const o = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((x) => x.event === 'admin');
    assert.ok(o, lines.join('\n'));
    assert.equal(o.reason, REASON);
    assert.match(String(o.key), /^sha256:[0-9a-f]{12}$/);
    assert.ok(!lines.some((l) => l.includes('evil')), 'the key is in no line');
  } finally {
    await r.close();
  }
});
