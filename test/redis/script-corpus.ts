/**
 * scriptCorpus — a corpus of policies whose composed scripts (policyScript, refundScript, compoundScript, opScript)
 * pin the composer's output: every algorithm alone, 1 and 2 rules, more rules than one flat reply takes, a shared id,
 * several sliding logs, strict and leaky, dry-run, auto-blocks, negative-looking constants. It takes the library's
 * functions as arguments so that the same corpus runs against another build (the fixture was generated from main's
 * f65c9cc: test/redis/fixtures/script-shas.json; script-shas.test.ts compares).
 */
import type { Policy, PolicyOptions } from '../../src/core/policy.js';
import type { rules as Rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';

/** ScriptApi — what the corpus needs of a build. */
export interface ScriptApi {
  rules: typeof Rules;
  Policy: new (o: PolicyOptions) => Policy;
  policyScript(p: Policy): { sha: string };
  refundScript(p: Policy): { sha: string };
  compoundScript(ps: readonly Policy[]): { sha: string };
  opScript(name: 'override' | 'unoverride' | 'reset' | 'refile'): { sha: string };
}

/** scriptCorpus — name → SHA1 of every script of the corpus, in a fixed order. */
export function scriptCorpus(api: ScriptApi): Record<string, string> {
  const { rules, Policy } = api;
  const one = (a: string, i: number, extra: Record<string, unknown> = {}): RuleConfig => {
    const base = { limit: 3 + i, per: 1_000 * (i + 1), name: `${a}${i}`, ...extra };
    switch (a) {
      case 'gcra': return rules.gcra({ ...base, burst: 2 + (i % 3) });
      case 'tokenBucket': return rules.tokenBucket({ ...base, burst: 5 + i });
      case 'leakyBucket': return rules.leakyBucket({ ...base, burst: 4 });
      case 'earrrl': return rules.earrrl({ ...base, halfLife: 700 + i });
      case 'fixedWindow': return rules.fixedWindow(base);
      case 'slidingWindow': return rules.slidingWindow(base);
      case 'slidingLog': return rules.slidingLog(base);
      case 'exponential': return rules.exponential(base);
    }
    throw new Error(a);
  };
  const algorithms = ['gcra', 'tokenBucket', 'leakyBucket', 'earrrl', 'fixedWindow', 'slidingWindow', 'slidingLog', 'exponential'];
  const policies: [string, PolicyOptions][] = [];
  for (const a of algorithms) {
    policies.push([`${a}`, { rules: [one(a, 0)] }]);
    policies.push([`${a} strict`, { rules: [one(a, 1, { accounting: 'strict' })] }]);
    policies.push([`${a} shared`, { rules: [one(a, 2)], id: `id-${a}` }]);
    policies.push([`${a} dry`, { rules: [one(a, 3)], dryRun: true }]);
    policies.push([`${a} + gcra`, { rules: [one(a, 4), one('gcra', 9)] }]);
  }
  policies.push(['fast rates', { rules: [rules.gcra({ limit: 1e9, per: 1, burst: 1e9, name: 'g' }), rules.tokenBucket({ limit: 3, per: 7, burst: 1.5, name: 't' }), rules.earrrl({ limit: 1e6, per: 3, halfLife: 1, name: 'e' })] }]);
  policies.push(['two logs', { rules: [one('slidingLog', 0), one('slidingLog', 5), one('gcra', 1)] }]);
  policies.push(['three logs strict', { rules: [one('slidingLog', 3, { accounting: 'strict' }), one('slidingLog', 1, { accounting: 'strict' }), one('slidingLog', 7, { accounting: 'strict' })] }]);
  policies.push(['every algorithm', { rules: algorithms.map((a, i) => one(a, i)) }]);
  policies.push(['every algorithm shared', { rules: algorithms.map((a, i) => one(a, i, { accounting: i % 2 ? 'strict' : 'leaky' })), id: 'all' }]);
  policies.push(['twelve', { rules: Array.from({ length: 12 }, (_, i) => one(algorithms[i % 8], i)) }]);
  policies.push(['twelve dry shared', { rules: Array.from({ length: 12 }, (_, i) => one(algorithms[(i + 3) % 8], i)), id: 'x', dryRun: true }]);
  policies.push(['nine no log', { rules: Array.from({ length: 9 }, (_, i) => one(algorithms[i % 6], i)) }]);
  policies.push(['two gcra shared', { rules: [one('gcra', 0), one('gcra', 1)], id: 'g2' }]);
  policies.push(['auto-block', { rules: [one('fixedWindow', 0), one('leakyBucket', 1)], autoBlock: { for: 1_000, reason: 'r' } }]);
  policies.push(['odd names', { rules: [rules.gcra({ limit: 2, per: 1_000, name: 'x\nreturn 1 $LOCALS $S1 ]] é' }), rules.fixedWindow({ limit: 1, per: 10, name: '$1 @decide' })] }]);
  const out: Record<string, string> = {};
  const made: Policy[] = [];
  for (const [name, o] of policies) {
    const p = new Policy(o);
    made.push(p);
    out[`check ${name}`] = api.policyScript(p).sha;
    out[`refund ${name}`] = api.refundScript(p).sha;
    out[`compound ${name}`] = api.compoundScript([p]).sha;
  }
  out['compound mixed'] = api.compoundScript([made[0], made[6], made[0], made[30], made[41]]).sha;
  out['compound dry and shared'] = api.compoundScript([made[3], made[2], made[made.length - 1]]).sha;
  for (const op of ['override', 'unoverride', 'reset', 'refile'] as const) out[`op ${op}`] = api.opScript(op).sha;
  return out;
}
