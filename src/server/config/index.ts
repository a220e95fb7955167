// TEMPORARY stand-in for the config helper's module (replaced at merge).
import type { ServiceConfig } from './types.js';
export type * from './types.js';
export async function loadConfig(path: string): Promise<ServiceConfig> {
  throw new Error(`config loader not merged yet (${path})`);
}
export async function configCheck(path: string, out: (line: string) => void): Promise<number> {
  out(`config loader not merged yet (${path})`);
  return 1;
}
