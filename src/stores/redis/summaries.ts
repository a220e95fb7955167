/**
 * summaries — the operators' view shared across processes: each process writes its summary of a policy (the
 * dashboard's top keys, observe/sharing.ts) into one hash per policy and namespace, kept a while (lua/share.lua),
 * and reads everyone's. Imports the script (scripts.ts) and nothing of the store: its calls are passed in.
 */
import { Script, lua } from './scripts.js';

const shareScript = new Script(lua('share'));

/** summaryKeys — where the processes' summaries of policy `id` in namespace `space` (encoded) live under `prefix` (one hash slot). */
export function summaryKeys(prefix: string, id: string, space: string): { hash: string; seen: string } {
  const base = `${prefix}{top:${id}${space === '' ? '' : `:${space}`}}`;
  return { hash: `${base}:s`, seen: `${base}:w` };
}

/** SummaryCalls — the store's script call and plain command (within its timeout). */
export interface SummaryCalls {
  run(script: Script, keys: string[], args: (string | number)[]): Promise<unknown>;
  callBuffer(command: string, ...args: string[]): Promise<unknown>;
}

/** shareSummary — writes this process's summary `text` as `instance`, kept `ttl` ms. */
export async function shareSummary(calls: SummaryCalls, keys: { hash: string; seen: string }, instance: string, text: string, ttl: number): Promise<void> {
  await calls.run(shareScript, [keys.hash, keys.seen], [instance, text, String(Math.ceil(ttl))]);
}

/** sharedSummaries — every process's latest summary. */
export async function sharedSummaries(calls: SummaryCalls, keys: { hash: string }): Promise<string[]> {
  const reply = await calls.callBuffer('HVALS', keys.hash);
  return Array.isArray(reply) ? reply.map((b) => String(b)) : [];
}
