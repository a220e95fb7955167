/**
 * check — `ratekeeper config check PATH`: loads the configuration as the service would and says what it holds, or
 * every problem, one per line.
 */
import { ConfigError, formatIssue } from './errors.js';
import { loadConfig } from './load.js';
import type { LoadOptions } from './types.js';
import type { RuleConfig } from '../../core/algorithms/common.js';
import { formatDuration } from '../../core/duration.js';

/**
 * ruleText — one rule as the summary shows it: the algorithm, the rate and the knobs that change what it admits
 * (`earrrl 20/1s half-life 10s`, `gcra 10/1s burst 20`, `fixedWindow 100/1m strict`), then its name when it is not
 * the default one: a rule named `recent` must not hide its rate.
 */
export function ruleText(r: RuleConfig): string {
  const rate = `${r.limit}/${formatDuration(r.per)}`;
  let text = `${r.algorithm} ${rate}`;
  if (r.algorithm === 'earrrl') text += ` half-life ${formatDuration(r.halfLife)}`;
  else if (r.algorithm !== 'exponential' && r.burst !== r.limit) text += ` burst ${r.burst}`;
  if (r.accounting !== (r.algorithm === 'earrrl' ? 'strict' : 'leaky')) text += ` ${r.accounting}`;
  return r.name === rate ? text : `${text} "${r.name}"`;
}

/**
 * configCheck — prints (through `out`, one line per call) a summary of the configuration at `path` and returns 0, or
 * prints every issue as `file:line: path: message` and returns 1.
 */
export async function configCheck(path: string, out: (line: string) => void, options: LoadOptions = {}): Promise<number> {
  try {
    const config = await loadConfig(path, options);
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
    out(`ok: ${plural(config.files.length, 'file')}, ${plural(config.domains.length, 'domain')}, ${plural(config.limits.length, 'limit')}, ${plural(config.policies.size, 'policy').replace(/policys$/, 'policies')}`);
    for (const f of config.files) out(`  file ${f}`);
    for (const d of config.domains) {
      const limits = config.limits.filter((l) => l.domain === d);
      out(`  domain ${d}: ${plural(limits.length, 'limit')}`);
      for (const l of limits) {
        const what = l.unlimited ? 'unlimited' : l.denyAll ? 'refuses every request' : l.rules.map(ruleText).join(' + ');
        const flags = [l.shadowMode ? 'shadow_mode' : '', l.replaces.length > 0 ? `replaces ${l.replaces.join(', ')}` : '', l.name ? `limit name "${l.name}"` : '']
          .filter((s) => s !== '');
        out(`    ${l.path}: ${what}${flags.length > 0 ? ` (${flags.join('; ')})` : ''}`);
      }
    }
    for (const p of config.policies.values()) {
      out(`  policy ${p.name}: ${p.rules.map(ruleText).join(' + ')}${p.dryRun ? ' (dry run)' : ''}`);
    }
    return 0;
  } catch (e) {
    if (e instanceof ConfigError) {
      for (const i of e.issues) out(formatIssue(i));
      out(`${e.issues.length} problem${e.issues.length === 1 ? '' : 's'}: the configuration was not loaded`);
      return 1;
    }
    out(`error: ${(e as Error).message}`);
    return 1;
  }
}
