/**
 * compose/batch — the script of a batch of one client's checks of one policy (the store's batch.ts sends it): the
 * policy's check body as a Lua function, applied to each (now, cost) of ARGV in order, each reply as a single check's.
 * ARGV[1] — the batch's deadline ('' none); then (now, cost) pairs, now '' for the server's clock (one TIME per batch).
 */
import type { Policy } from '../../../core/policy.js';
import { body } from './body.js';
import { type Script, finish } from '../scripts.js';

/** batchScript — the check body of `policy` as a function, applied to each (now, cost) of ARGV in order. */
export function batchScript(policy: Policy): Script {
  const code = [
    'local key = KEYS[1]',
    "local deadline = ARGV[1]",
    "if deadline == '' then deadline = nil end",
    'local function one(now, cost, sclock, wall)',
    body(policy, 'check'),
    'end',
    'local n = (#ARGV - 1) / 2',
    'local wall = -1',
    'local clock = deadline ~= nil',
    "for i = 1, n do if ARGV[2 * i] == '' then clock = true end end",
    'if clock then',
    "  local t = redis.call('TIME')",
    '  wall = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000',
    'end',
    "if deadline and wall >= tonumber(deadline) then return redis.error_reply('LATE the caller gave up on this batch before it ran') end",
    'local out = {}',
    'for i = 1, n do',
    '  local now = ARGV[2 * i]',
    "  local sclock = now == ''",
    '  if sclock then now = wall else now = tonumber(now) end',
    '  out[i] = one(now, tonumber(ARGV[2 * i + 1]), sclock, wall)',
    'end',
    'return out',
  ].join('\n');
  return finish(`-- ratekeeper: a batch of checks of one client of one policy, in order (src/stores/redis/batch.ts)`, code);
}
