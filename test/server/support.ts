/** test/server/support — configurations written to temporary files and loaded as the service loads them. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/tmp.js';
import { loadConfig } from '../../src/server/config/index.js';
import type { ServiceConfig } from '../../src/server/config/types.js';

/** configFile — `text` in a new temporary directory as `name`; returns the file's path. */
export function configFile(text: string, name = 'config.yaml'): string {
  const dir = tempDir('rk-config-'); // removed when the test process exits
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** configFrom — `text` loaded through the service's own loader (from a file). */
export function configFrom(text: string): Promise<ServiceConfig> {
  return loadConfig(configFile(text));
}
