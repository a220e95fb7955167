export * from './types.js';
export { RatekeeperError } from './errors.js';
export { parseDuration, formatDuration, type Duration } from './duration.js';
export { rules, parseRules, ruleOf, ALGORITHMS, type RuleOptions, type BurstOptions, type EarrrlOptions, type ParseOptions } from './rules.js';
export type { RuleConfig } from './algorithms/common.js';
export { Policy, type PolicyOptions } from './policy.js';
export { Log } from './algorithms/slidingLog.js';
