/** `ratekeeper serve` flags: a listener is turned off with `off` (or `--port=-1`), the admin listener is on by default. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serveOptions } from '../../src/server/cli.js';

test('ports: off or --flag=-1 turn a listener off; the admin listener defaults to 6070', () => {
  const o = serveOptions(['--config', 'c.yaml', '--grpc-port', 'off', '--admin-port', 'OFF', '--port=-1'], {});
  assert.ok(o !== 'help');
  assert.equal(o.grpcPort, -1);
  assert.equal(o.adminPort, -1);
  assert.equal(o.port, -1);
  const d = serveOptions(['--config', 'c.yaml'], { RATEKEEPER_ADMIN_TOKEN: 'x'.repeat(16) });
  assert.ok(d !== 'help');
  assert.equal(d.adminPort, 6070);
  assert.equal(d.adminToken, 'x'.repeat(16));
  assert.throws(() => serveOptions(['--config', 'c.yaml', '--admin-port', 'of'], {}), /--admin-port must be an integer/);
});
