/**
 * The service's configuration as the server codes against it: envoyproxy/ratelimit's descriptors (as limits and a
 * matcher) and ratekeeper's named policies. Types only: loading and validation live in load.ts, matching in match.ts,
 * the units in ../envoy.ts; config/index.ts is the folder's public face.
 */
import type { RuleConfig } from '../../core/algorithms/common.js';
import type { EnvoyUnit } from '../envoy.js';

/** LimitSpec — one configured limit: the `rate_limit` (or `rate_limits`) of one descriptor node of one domain. */
export interface LimitSpec {
  /**
   * id — stable identity: the domain and the node's config path, `'mongo_cps:database=users'`,
   * `'messaging:message_type=marketing&to_number'` (a value-less key stands alone), escaped as the store keys are.
   * Unique within a configuration.
   */
  id: string;
  domain: string;
  /**
   * path — the node's config path as envoyproxy/ratelimit names its stats, without the domain: `'database_users'`,
   * `'message_type_marketing.to_number'`, `'wild_foo*'`.
   */
  path: string;
  /** name — `rate_limit.name` (of the first item of `rate_limits`): what `replaces` refers to and `current_limit.name` reports. */
  name?: string;
  /** unlimited — `rate_limit.unlimited`: always OK, never charged (LimitRemaining is reported as 2^32 − 1). */
  unlimited: boolean;
  /**
   * denyAll — `requests_per_unit: 0`: every request with a hits_addend > 0 is over the limit (and one of 0 is OK),
   * as envoyproxy/ratelimit's "black list" example. `rules` is empty; `report` says `{ requestsPerUnit: 0, unit }`.
   */
  denyAll: boolean;
  /** shadowMode — `shadow_mode`: decide and count as usual, but always answer OK. */
  shadowMode: boolean;
  /** replaces — the `replaces[].name` of the rate_limit: limits of these names matched by the same request are not evaluated. */
  replaces: string[];
  detailedMetric: boolean;
  valueToMetric: boolean;
  /** shareThreshold — `share_threshold` on this node itself (ancestors' flags act through {@link Match.key}). */
  shareThreshold: boolean;
  /** rules — from `rules.*`, decided all-or-nothing as one policy; empty when `unlimited` or `denyAll`. */
  rules: RuleConfig[];
  /**
   * report — how the limit is reported over RLS (`current_limit`): the first rule's `requests_per_unit` and `unit` as
   * written. For a `per` that is not one unit, the same average rate in the largest unit not longer than `per`
   * (`100` per `5m` → 20/MINUTE; `7` per `90s` → 4/MINUTE, rounded down; under a second → per SECOND).
   * Undefined when `unlimited`.
   */
  report?: { requestsPerUnit: number; unit: EnvoyUnit };
  /** metadata — `metadata` of the descriptor (arbitrary YAML map), for RLS dynamic metadata. */
  metadata?: Record<string, unknown>;
  /**
   * fingerprint — equal ⇔ the store's state means the same thing: the same rules (every field, names included, in
   * order), `unlimited` and `denyAll`. Keep a limit's client state across a reload when equal. Fields that only
   * change how a decision is reported or used (shadowMode, replaces, name, metrics flags) are not in it: read them
   * from the new LimitSpec.
   */
  fingerprint: string;
  /** file, line — where the node is defined (line 1-based; 0 when unknown), for logs and errors. */
  file: string;
  line: number;
}

/** Match — what {@link ServiceConfig.match} found for one descriptor of a request. */
export interface Match {
  limit: LimitSpec;
  /**
   * key — the client's store key for this limit: an injective, readable encoding of the domain and the request's
   * entries (see {@link descriptorKey}), where an entry matched by a `share_threshold` wildcard is written as the
   * wildcard itself (`files=files/*`), so that every value it matches shares one counter.
   */
  key: string;
  /** keyLength — the length of {@link key}, known without building it (the store's cap is checked on it). */
  keyLength: number;
  /**
   * client — the client's key in the limit's limiter, as the operators see it: {@link key} without the domain
   * (`remote_address=10.0.0.1`). The limiter puts the domain back below its API (its namespace), so the store key is
   * {@link key}.
   */
  client: string;
  /**
   * metricKey — the metric label, as envoyproxy/ratelimit builds its stats key (without the leading `domain.`): the
   * config path, with request values only where `detailed_metric` or `value_to_metric` ask for them.
   */
  metricKey: string;
}

/** NativePolicy — a named policy of the native form (`policies:`), for `POST /v1/check { policy, key, cost? }`. */
export interface NativePolicy {
  name: string;
  rules: RuleConfig[];
  dryRun: boolean;
  /**
   * autoBlock — `auto_block`: once the rules refuse a client, it is blocked for `for` ms (LimiterOptions.autoBlock),
   * listed with `reason` (default `automatic: refused at <rule>`). Undefined: no automatic block.
   */
  autoBlock?: { for: number; reason?: string };
  /** fingerprint — equal ⇔ the same rules (every field, in order): the client state may be kept across a reload. */
  fingerprint: string;
  file: string;
}

/** RequestOverride — a request descriptor's own `limit` (rls.proto `RateLimitDescriptor.RateLimitOverride`). */
export interface RequestOverride {
  requestsPerUnit: number;
  /** unit — the enum name or number of rls.proto (UNKNOWN/0 is refused). */
  unit: EnvoyUnit | number;
}

/** ServiceConfig — a loaded, validated configuration. Immutable; a reload builds a new one. */
export interface ServiceConfig {
  /** files — what was loaded (absolute paths from loadConfig, the given names from parseConfig), in load order. */
  files: string[];
  /** loadedAt — ms since the epoch. */
  loadedAt: number;
  domains: string[];
  limits: readonly LimitSpec[];
  policies: ReadonlyMap<string, NativePolicy>;
  /** match — envoy's GetLimit: the limit for one descriptor of a request in `domain`, or undefined (no limit). */
  match(domain: string, entries: readonly { key: string; value: string }[]): Match | undefined;
  /**
   * override — a descriptor that carries its own `limit`: envoy's GetLimit answers it with that limit (a fixed window
   * of `unit`) whatever the config says, as long as the domain is known; undefined when it is not. The LimitSpec is
   * shared by every descriptor with the same override (the key tells the clients apart); its metricKey is
   * `override` (its path), nothing of the request's. Throws a RatekeeperError (ERR_ARGUMENT) naming the field
   * for a unit that is not one or a requestsPerUnit that is not a uint32.
   */
  override(domain: string, entries: readonly { key: string; value: string }[], limit: RequestOverride): Match | undefined;
  hasDomain(domain: string): boolean;
}

/** LoadOptions — how a configuration is assembled from its files. */
export interface LoadOptions {
  /**
   * mergeDomains — several files may describe one domain; their descriptors are merged (a descriptor defined twice is
   * still an error). envoyproxy/ratelimit's `MERGE_DOMAIN_CONFIG=true`. @default false (a domain in two files is an error)
   */
  mergeDomains?: boolean;
}
