/**
 * Envoy's vocabulary in one place (src/server/envoy.ts) and the one request normaliser: the unit enum is rls.proto's,
 * a unit spelled like a member of Object.prototype is no unit, a request refused for the same fault names the same
 * field whether it came as /json or as gRPC's protobuf, and /v1/check's key is measured by the service (a key too
 * long under its policy's name is a BadRequest naming the transport's field, whoever calls the service).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CODE_NUMBER, ENVOY_UNITS, UNIT_MS, UNIT_NUMBER, unitOf, unitOfRequest } from '../../src/server/envoy.js';
import { parseConfig } from '../../src/server/config/index.js';
import { RateLimitService } from '../../src/server/service.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { BadRequest, requestFromJson } from '../../src/server/rls.js';
import { rlsService } from '../../src/server/grpc.js';
import { MAX_KEY_LENGTH } from '../../src/limiter.js';

const PROTO = fileURLToPath(new URL('../../../src/server/proto/rls.proto', import.meta.url));

const CONFIG = `
domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 5 }
policies:
  p:
    rules: '5/s'
`;

describe("Envoy's vocabulary", () => {
  test("ENVOY_UNITS and UNIT_NUMBER are rls.proto's RateLimit.Unit, number for number", () => {
    const proto = readFileSync(PROTO, 'utf8');
    const body = /enum Unit \{([^}]*)\}/.exec(proto)![1];
    const fromProto = [...body.matchAll(/(\w+) = (\d+);/g)].map((m) => [m[1], Number(m[2])] as const);
    assert.equal(fromProto.length, 8);
    for (const [name, n] of fromProto) {
      assert.equal(ENVOY_UNITS[n], name);
      assert.equal(UNIT_NUMBER[name as keyof typeof UNIT_NUMBER], n);
    }
    assert.deepEqual(Object.keys(UNIT_MS).sort(), fromProto.map(([name]) => name).filter((n) => n !== 'UNKNOWN').sort());
    assert.equal(UNIT_MS.MONTH, 30 * UNIT_MS.DAY);
    assert.equal(UNIT_MS.YEAR, 365 * UNIT_MS.DAY);
  });

  test("CODE_NUMBER is rls.proto's RateLimitResponse.Code, and no member of Object.prototype is a code", () => {
    const body = /enum Code \{([^}]*)\}/.exec(readFileSync(PROTO, 'utf8'))![1];
    const fromProto = Object.fromEntries([...body.matchAll(/(\w+) = (\d+);/g)].map((m) => [m[1], Number(m[2])]));
    assert.deepEqual({ ...CODE_NUMBER }, fromProto);
    assert.equal((CODE_NUMBER as Record<string, number>).constructor, undefined);
  });

  test('a unit spelled like a member of Object.prototype is no unit (config, request, and ServiceConfig.override)', () => {
    for (const u of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf']) {
      assert.equal(unitOf(u), undefined, u);
      assert.equal(unitOfRequest(u), undefined, u);
    }
    const cfg = parseConfig([{ name: 'c.yaml', text: CONFIG }]);
    for (const u of ['toString', 'constructor', '__proto__']) {
      // was: "fixedWindow.per must be a duration … got a function" (Object.prototype's member taken for a length)
      assert.throws(() => cfg.override('d', [{ key: 'k', value: 'v' }], { requestsPerUnit: 1, unit: u as never }), /descriptor limit\.unit must be SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR, got "/, u);
    }
  });
});

describe('the one request normaliser', () => {
  const service = new RateLimitService({ store: new MemoryStore() });
  service.setConfig(parseConfig([{ name: 'c.yaml', text: CONFIG }]));
  const def = rlsService().ShouldRateLimit;
  /** fault — the BadRequest `decide` throws for `req` (as its transport decoded it). */
  const fault = (req: unknown): { field: string; message: string } => {
    try {
      service.decide(req as never);
    } catch (e) {
      assert.ok(e instanceof BadRequest, String(e));
      return { field: e.field, message: e.message };
    }
    assert.fail('decided');
  };

  const cases: [string, Record<string, unknown>][] = [
    ['no domain', { domain: '', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] }],
    ['no descriptors', { domain: 'd', descriptors: [] }],
    ['a key past the cap', { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v'.repeat(MAX_KEY_LENGTH) }] }] }],
    ['an own limit of unit UNKNOWN', { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }, { entries: [{ key: 'k', value: 'w' }], limit: { requests_per_unit: 3, unit: 'UNKNOWN' } }] }],
  ];
  for (const [name, req] of cases) {
    test(`${name}: the same field and message from /json and from gRPC`, () => {
      const json = fault(requestFromJson(JSON.parse(JSON.stringify(req))));
      const grpc = fault(def.requestDeserialize(def.requestSerialize(req)));
      assert.deepEqual(grpc, json);
    });
  }

  test("/v1/check's key is measured by the service, naming the transport's field, before the policy is looked up", async () => {
    const long = 'x'.repeat(MAX_KEY_LENGTH);
    await assert.rejects(service.check('p', long, 1), (e: unknown) => e instanceof BadRequest && e.field === 'key' && /is too long/.test(e.message));
    assert.throws(() => service.checkNow('nope', long, 1, 'X-Ratekeeper-Key'), (e: unknown) => e instanceof BadRequest && e.field === 'X-Ratekeeper-Key');
    // a key that fits is decided
    const d = await service.check('p', 'x'.repeat(MAX_KEY_LENGTH - 5), 1);
    assert.equal(d.allowed, true);
  });
});
