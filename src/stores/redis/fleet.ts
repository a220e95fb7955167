/**
 * fleet — how many instances share the store's Redis, so that onError 'memory' admits this instance's share of a
 * limit while Redis is away instead of the whole limit in every instance. The registry: one sorted set per prefix,
 * `<prefix>{fleet}` (one hash slot), each instance's random id scored by when its registration expires (server
 * TIME); every `interval` ms a heartbeat (lua/fleet.lua) registers this instance, drops the expired and counts the
 * live ones (`Fleet.size`, N). The share: `fleetPolicy`, the policy's rules with their amounts divided by N
 * (docs/fleet.md says what scales per algorithm and why). Imports the script (scripts.ts) and the core
 * rules; the store's calls are passed in.
 */
import { randomBytes } from 'node:crypto';
import { Policy } from '../../core/policy.js';
import { ruleOf } from '../../core/rules.js';
import type { RuleConfig } from '../../core/algorithms/common.js';
import { RatekeeperError, show } from '../../core/errors.js';
import { Script, lua } from './scripts.js';

/**
 * FleetOptions — how the store learns the fleet's size N: a registry in Redis (`expiry`, `interval`), a fixed count
 * (`instances`, no registry), or `false` (N = 1: each instance's fallback admits the whole limit, as before).
 * @example redisStore({ client, onError: 'memory', fleet: { expiry: 15_000 } })
 */
export type FleetOptions =
  | {
    /** expiry — ms an instance stays counted after its last heartbeat (a crashed instance drops out after it). @default 15_000 */
    expiry?: number;
    /** interval — ms between heartbeats, under `expiry`. @default expiry / 3 */
    interval?: number;
  }
  | {
    /** instances — N, fixed: no registry in Redis (a fleet of known size). */
    instances: number;
  }
  | false;

/** FLEET_EXPIRY — the default `expiry`, ms: three missed heartbeats (5 s apart) before an instance is no longer counted. */
export const FLEET_EXPIRY = 15_000;

/** FleetSettings — FleetOptions checked: a registry (expiry, interval ms), a fixed N, or none. */
export type FleetSettings = { expiry: number; interval: number } | { instances: number } | undefined;

/**
 * readFleet — `fleet` checked, with its defaults: undefined means a registry under onError 'memory' (the only
 * policy N changes anything for) and none otherwise.
 */
export function readFleet(fleet: FleetOptions | undefined, memory: boolean): FleetSettings {
  if (fleet === undefined) return memory ? { expiry: FLEET_EXPIRY, interval: FLEET_EXPIRY / 3 } : undefined;
  if (fleet === false) return undefined;
  const bad = (): never => {
    throw new RatekeeperError(`redisStore.fleet must be false, { instances: integer >= 1 } or { expiry?: ms >= 10, interval?: ms < expiry }, got ${show(fleet)}`);
  };
  if (typeof fleet !== 'object' || fleet === null) return bad();
  const keys = Object.keys(fleet);
  if ('instances' in fleet) {
    if (keys.length !== 1 || !Number.isSafeInteger(fleet.instances) || fleet.instances < 1) return bad();
    return { instances: fleet.instances };
  }
  if (keys.some((k) => k !== 'expiry' && k !== 'interval')) return bad();
  const expiry = fleet.expiry ?? FLEET_EXPIRY;
  if (typeof expiry !== 'number' || !Number.isFinite(expiry) || expiry < 10 || expiry > 2 ** 31 - 1) return bad();
  const interval = fleet.interval ?? expiry / 3;
  if (typeof interval !== 'number' || !Number.isFinite(interval) || interval < 1 || interval >= expiry) return bad();
  return { expiry: Math.ceil(expiry), interval };
}

/** FleetCalls — the store's script call (within its timeout and pending bound) and plain command. */
export interface FleetCalls {
  run(script: Script, keys: string[], args: (string | number)[]): Promise<unknown>;
  callBuffer(command: string, ...args: string[]): Promise<unknown>;
}

const heartbeatScript = new Script(lua('fleet'));

/** fleetKey — the registry of the instances of the stores under `prefix`. */
export const fleetKey = (prefix: string): string => `${prefix}{fleet}`;

/**
 * Fleet — this instance's place in the registry: its heartbeat (an unref'd timer: it never keeps the process alive;
 * close() stops it and unregisters) and the latest live count. A failed heartbeat changes nothing: N stays the
 * last count read, which is what the fallback needs while Redis is away.
 */
export class Fleet {
  /** size — N: the live instances at the latest heartbeat that answered, this one included (>= 1; 1 before the first). */
  size: number;
  /** id — this instance's member in the registry (random: two stores in one process are two instances). */
  readonly id = randomBytes(8).toString('hex');
  /** beats — heartbeats answered since the store was made. */
  beats = 0;
  private timer: NodeJS.Timeout | undefined;
  /** beating — the heartbeat in flight, if any: a beat asked meanwhile waits for it (a hung server is not asked twice). */
  private beating: Promise<number> | undefined;
  private closed = false;

  constructor(private readonly calls: FleetCalls, readonly key: string, readonly settings: NonNullable<FleetSettings>) {
    if ('instances' in settings) {
      this.size = settings.instances;
      return;
    }
    this.size = 1;
    void this.beat();
    this.timer = setInterval(() => void this.beat(), settings.interval);
    this.timer.unref();
  }

  /** beat — one heartbeat now (or the one in flight); resolves to N after it (the previous N when it failed). Never rejects. */
  beat(): Promise<number> {
    const s = this.settings;
    if (this.closed || 'instances' in s) return Promise.resolve(this.size);
    this.beating ??= this.calls.run(heartbeatScript, [this.key], [this.id, String(s.expiry)]).then(
      (reply) => {
        const n = Number(reply);
        if (!this.closed && Number.isSafeInteger(n) && n >= 1) {
          this.size = n;
          this.beats++;
        }
      },
      () => {}, // Redis away: N stays the last count read
    ).then(() => {
      this.beating = undefined;
      return this.size;
    });
    return this.beating;
  }

  /** close — stops the heartbeat and unregisters (best effort: a registration Redis did not get expires by itself). */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    clearInterval(this.timer);
    if ('instances' in this.settings) return Promise.resolve();
    return this.calls.callBuffer('ZREM', this.key, this.id).then(() => undefined, () => undefined);
  }
}

/**
 * scaleAmount — `amount` (a limit or burst, cost units) divided by `n`, but never under one request's cost (1 cost
 * unit) nor over the amount itself: a limit of 3 over 10 instances is 1 per instance, a limit of 0.5 stays 0.5.
 */
export function scaleAmount(amount: number, n: number): number {
  const share = amount / n;
  return share >= 1 ? share : Math.min(amount, 1);
}

/**
 * scaleRule — `rule` with the amounts it admits divided by `n` (scaleAmount): `limit` for every algorithm (a
 * window's count, a bucket's rate, earrrl's and exponential's rate), and `burst` for the bucket algorithms
 * (tokenBucket, leakyBucket, gcra). Name, period, half-life and accounting stay. A burst below one cost unit is a
 * limit's default (a burst given must be >= 1): it stays the default, which is then the limit, itself not divided.
 */
export function scaleRule(rule: RuleConfig, n: number): RuleConfig {
  if (n <= 1) return rule;
  const o: Parameters<typeof ruleOf>[1] = { limit: scaleAmount(rule.limit, n), per: rule.per, name: rule.name, accounting: rule.accounting };
  const bursty = rule.algorithm === 'tokenBucket' || rule.algorithm === 'leakyBucket' || rule.algorithm === 'gcra';
  if (bursty && rule.burst >= 1) o.burst = scaleAmount(rule.burst, n);
  if (rule.algorithm === 'earrrl') o.halfLife = rule.halfLife;
  return ruleOf(rule.algorithm, o);
}

/**
 * fleetPolicy — the policy an instance's fallback decides by when the fleet has `n` instances: `policy` itself for
 * n <= 1, else its rules scaled (scaleRule), with its id, dry-run and automatic block (and the block's reason). It is
 * compatible with `policy` (same algorithms and periods), so a fallback table moves to it with its clients.
 */
export function fleetPolicy(policy: Policy, n: number): Policy {
  if (n <= 1) return policy;
  const rules = policy.rules.map((r) => scaleRule(r, n));
  const options: ConstructorParameters<typeof Policy>[0] = { rules, dryRun: policy.dryRun };
  if (policy.id !== undefined) options.id = policy.id;
  if (policy.blockFor > 0) {
    const reason = policy.blockReasons[0];
    // the default reason names the refusing rule, and the names stay: given only when it was given
    options.autoBlock = reason === `automatic: refused at ${policy.rules[0].name}` ? { for: policy.blockFor } : { for: policy.blockFor, reason };
  }
  return new Policy(options);
}
