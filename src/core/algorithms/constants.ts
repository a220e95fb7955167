import type { RuleConfig } from './common.js';
import { countConstants } from './common.js';
import { gcraConstants } from './gcra.js';
import { bucketConstants } from './tokenBucket.js';
import { earrrlConstants } from './earrrl.js';
import { exponentialConstants } from './exponential.js';

/**
 * constantsOf — a rule's derived numbers by its algorithm, from the function beside each algorithm (gcraConstants …):
 * the same doubles its class computes in its constructor. The Redis composer (src/stores/redis/) writes them into the
 * rule's Lua twin as literals, named by their keys in upper snake case (tolSlack → $TOL_SLACK).
 */
export function constantsOf(config: RuleConfig): Readonly<Record<string, number>> {
  switch (config.algorithm) {
    case 'gcra': return gcraConstants(config);
    case 'tokenBucket': case 'leakyBucket': return bucketConstants(config);
    case 'earrrl': return earrrlConstants(config);
    case 'exponential': return exponentialConstants(config);
    case 'fixedWindow': case 'slidingWindow': case 'slidingLog': return countConstants(config);
  }
}
