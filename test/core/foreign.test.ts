/**
 * test/core/foreign — the options of express-rate-limit, rate-limiter-flexible and @upstash/ratelimit, given to the
 * limiter or to the middleware, are refused with a pointer to where the same idea lives in ratekeeper (not a bare
 * "not an option"); elsewhere (block, stores) they are plain unknown options. Real Express and Fastify apps for the
 * plugin's and a route's options.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import Fastify from 'fastify';
import { limiter } from '../../src/index.js';
import { rateLimit as nodeLimit } from '../../src/http/node.js';
import { rateLimit as expressLimit } from '../../src/http/express.js';
import { rateLimit as honoLimit } from '../../src/http/hono.js';
import { ratekeeperPlugin } from '../../src/http/fastify.js';

/** refused — `fn` throws a message that names `option` and matches `pointer`. */
function refused(fn: () => unknown, where: string, option: string, pointer: RegExp): void {
  assert.throws(fn, (e: Error) => {
    assert.ok(e.message.startsWith(`ratekeeper: ${where}.${option} is not an option of ${where} (`), e.message);
    assert.match(e.message, pointer);
    return true;
  });
}

const ROWS: [string, unknown, RegExp][] = [
  ['windowMs', 900_000, /express-rate-limit's window goes in `rules` with its limit, e\.g\. rules: '100\/15m'; see docs\/migrating\/express-rate-limit\.md/],
  ['max', 100, /express-rate-limit's max goes in `rules`/],
  ['limit', 100, /a limit goes in `rules` with its period/],
  ['keyGenerator', () => 'k', /the client's key is `key`/],
  ['handler', () => undefined, /answered by `onLimited`/],
  ['message', 'Too many requests', /`onLimited`'s to write/],
  ['statusCode', 429, /`onLimited`'s to choose/],
  ['points', 10, /rate-limiter-flexible's points per duration go in `rules`, e\.g\. rules: '10\/1s'/],
  ['duration', 1, /points per duration go in `rules`/],
  ['blockDuration', 60, /rate-limiter-flexible's blockDuration \(seconds\) is the limiter's autoBlock, e\.g\. limiter\(\{ rules, autoBlock: \{ for: '15m' \} \}\)/],
  ['storeClient', {}, /store: redisStore\(\{ client \}\)/],
  ['redis', {}, /docs\/migrating\/upstash-ratelimit\.md/],
  ['ephemeralCache', new Map(), /denialCache: true/],
];

describe('other libraries\' option names get a pointer', () => {
  it('limiter()', () => {
    for (const [name, value, pointer] of ROWS) refused(() => limiter({ rules: '1/s', [name]: value } as never), 'limiter', name, pointer);
  });

  it('the node, Express and Hono middleware', () => {
    for (const make of [nodeLimit, expressLimit, honoLimit] as ((o: never) => unknown)[]) {
      for (const [name, value, pointer] of ROWS) refused(() => make({ rules: '1/s', [name]: value } as never), 'rateLimit', name, pointer);
    }
    // express-rate-limit's full options, pasted: the first foreign name is the one reported
    refused(() => express().use(expressLimit({ windowMs: 15 * 60 * 1000, limit: 100, standardHeaders: 'draft-8', legacyHeaders: false } as never)), 'rateLimit', 'windowMs', /rules: '100\/15m'/);
  });

  it('the Fastify plugin and a route\'s config.rateLimit', async () => {
    const app = Fastify();
    await assert.rejects(async () => { await app.register(ratekeeperPlugin, { rules: '1/s', max: 5 } as never); }, /ratekeeperPlugin\.max is not an option of ratekeeperPlugin \(express-rate-limit's max goes in `rules`/);
    const app2 = Fastify();
    await app2.register(ratekeeperPlugin, { rules: '1/s' });
    assert.throws(() => app2.get('/x', { config: { rateLimit: { keyGenerator: () => 'k' } as never } }, async () => 'x'),
      /config\.rateLimit\.keyGenerator of GET \/x is not an option of config\.rateLimit \(the client's key is `key`/);
    await app.close().catch(() => undefined);
    await app2.close();
  });

  it('a typo near a real name still gets "did you mean"; other options objects get no foreign pointer', async () => {
    refused(() => expressLimit({ rules: '1/s', skipFailedRequest: true } as never), 'rateLimit', 'skipFailedRequest', /did you mean `skipFailedRequests`\?/);
    const lim = limiter({ rules: '1/s' });
    await assert.rejects(lim.block('k', { duration: 60 } as never), (e: Error) => {
      assert.doesNotMatch(e.message, /rate-limiter-flexible/);
      assert.match(e.message, /block\.duration is not an option of block/);
      return true;
    });
  });
});
