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

test('--request-timeout (both listeners) and --grpc-max-streams, or their environment variables', () => {
  const o = serveOptions(['--config', 'c.yaml', '--request-timeout', '5000', '--grpc-max-streams', '200'], {});
  assert.ok(o !== 'help');
  assert.equal(o.requestTimeout, 5000);
  assert.equal(o.grpcMaxStreams, 200);
  const e = serveOptions(['--config', 'c.yaml'], { RATEKEEPER_REQUEST_TIMEOUT: '2000', RATEKEEPER_GRPC_MAX_STREAMS: '50' });
  assert.ok(e !== 'help');
  assert.equal(e.requestTimeout, 2000);
  assert.equal(e.grpcMaxStreams, 50);
  const d = serveOptions(['--config', 'c.yaml'], {});
  assert.ok(d !== 'help');
  assert.equal(d.requestTimeout, undefined, 'the listeners\' default (10 s) applies');
  assert.throws(() => serveOptions(['--config', 'c.yaml', '--grpc-max-streams', '0'], {}), /--grpc-max-streams must be an integer >= 1/);
});
