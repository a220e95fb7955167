/**
 * test/server/body-read — HttpFront's count of requests in flight (`inFlight`, server/httpAnswer.ts BodyRead) returns
 * to 0 however a body read ends, over real sockets: answered, the client gone mid-body, a body past MAX_BODY answered
 * 413 whose client then sends the rest or goes away. Before: a 413 whose client went away before the body's end (the
 * request's `error`, no `end`) stayed counted for good, one per such request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpFront } from '../../src/server/http.js';
import { MAX_BODY } from '../../src/server/httpAnswer.js';
import { RateLimitService } from '../../src/server/service.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { configFrom } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 2 }
policies:
  login:
    rules: '2/h'
`;

/** Step — bytes to write, a pause (ms), or 'destroy' (the client goes away). */
type Step = string | Buffer | number | 'destroy';

/** talk — one connection running `steps`, resolved with what it received once it is closed (or 3 s passed). */
function talk(port: number, steps: Step[]): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    const timer = setTimeout(() => s.destroy(), 3000);
    s.on('data', (d: Buffer) => got.push(d));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got).toString('latin1'));
    });
    s.on('connect', async () => {
      for (const step of steps) {
        if (typeof step === 'number') await sleep(step);
        else if (step === 'destroy') return void s.destroy();
        else s.write(step);
      }
      s.end();
    });
  });
}

const head = (path: string, length: number): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe('HttpFront.inFlight after each way a body read ends', () => {
  let front: HttpFront;
  let port: number;
  before(async () => {
    const service = new RateLimitService({ store: new MemoryStore() });
    service.setConfig(await configFrom(CONFIG));
    front = new HttpFront({ service, healthy: () => true, log: () => undefined });
    port = await front.listen('127.0.0.1', 0);
  });
  after(() => front.close(0));

  /** settled — waits (at most 2 s, 20 ms steps) for inFlight to be 0; returns it. */
  async function settled(): Promise<number> {
    for (let i = 0; i < 100 && front.inFlight !== 0; i++) await sleep(20);
    return front.inFlight;
  }

  const over = Buffer.alloc(MAX_BODY + 100, 32);

  test('answered, and the client gone mid-body: 0', async () => {
    const body = '{"policy":"login","key":"a"}';
    const answer = await talk(port, [head('/v1/check', body.length) + body, 50]);
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.equal(await settled(), 0);
    await talk(port, [head('/v1/check', 100), '{"policy":', 30, 'destroy']);
    assert.equal(await settled(), 0);
  });

  test('a 413 whose client goes away before the rest of its body: 0, each time', async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await talk(port, [head('/json', MAX_BODY + 1024 * 1024), over, 100, 'destroy']);
      assert.match(answer, /^HTTP\/1\.1 413 /, `request ${i}`);
    }
    assert.equal(await settled(), 0);
  });

  test('a 413 whose client sends the rest of its body: 0, and the server keeps serving', async () => {
    const answer = await talk(port, [head('/json', over.length + 1000), over, 50, Buffer.alloc(1000, 32), 100]);
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.equal(await settled(), 0);
    const body = '{"policy":"login","key":"b"}';
    assert.match(await talk(port, [head('/v1/check', body.length) + body, 50]), /^HTTP\/1\.1 200 /);
  });
});
