// TEMPORARY stand-in for the config helper's module (replaced at merge): the interface the service codes against.
import type { RuleConfig } from '../../core/algorithms/common.js';
export type EnvoyUnit = 'UNKNOWN' | 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'MONTH' | 'YEAR' | 'WEEK';
export interface LimitSpec {
  id: string; domain: string; path: string; name?: string; unlimited: boolean; shadowMode: boolean; replaces: string[];
  detailedMetric: boolean; valueToMetric: boolean; rules: RuleConfig[];
  report?: { requestsPerUnit: number; unit: EnvoyUnit }; fingerprint: string;
}
export interface Match { limit: LimitSpec; key: string; metricKey: string }
export interface NativePolicy { name: string; rules: RuleConfig[]; dryRun: boolean; fingerprint: string; file: string }
export interface ServiceConfig {
  files: string[]; loadedAt: number; domains: string[]; limits: readonly LimitSpec[];
  policies: ReadonlyMap<string, NativePolicy>;
  match(domain: string, entries: readonly { key: string; value: string }[]): Match | undefined;
  hasDomain(domain: string): boolean;
}
