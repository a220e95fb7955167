/**
 * bench/run — the one benchmark command: runs each suite (bench/<suite>.ts, compiled) in its own process, in
 * order, so that one suite's garbage and JIT state do not weigh on the next. `npm run bench [suite …]`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const all = ['core', 'redis', 'multi', 'http', 'config', 'server', 'admin', 'limits'];
const wanted = process.argv.slice(2);
const suites = (wanted.length > 0 ? wanted : all).filter((s) => {
  const ok = existsSync(join(here, `${s}.js`));
  if (!ok && wanted.length > 0) console.error(`bench: no suite named ${s}`);
  return ok;
});
let failed = 0;
for (const s of suites) {
  console.log(`\n## ${s}\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, `${s}.js`)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
