/**
 * test/support/tmp — temporary directories that a test run leaves no trace of: each one made by `tempDir` is removed
 * when the process exits (tests that clean up sooner still may; removing twice is harmless).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** made — every directory made in this process and not yet removed. */
const made = new Set<string>();
let hooked = false;

/** tempDir — a new directory under the system's temporary directory, named `<prefix>XXXXXX`; removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}
