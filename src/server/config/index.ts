/** The service's configuration: envoyproxy/ratelimit's YAML and ratekeeper's policies → limits, a matcher, policies. */
export type { LimitSpec, Match, NativePolicy, RequestOverride, ServiceConfig, LoadOptions } from './types.js';
export { ConfigError, formatIssue, type ConfigIssue } from './errors.js';
export { loadConfig, parseConfig } from './load.js';
export { descriptorKey } from './key.js';
export { configCheck } from './check.js';
