import { watch, type FSWatcher } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * signature — what identifies the configuration's files as they are now: for a file, its real path, size, mtime,
 * ctime, inode and mode (so a file made readable again by `chmod` is looked at again); for a directory, the same for every file the loader reads (`*.yaml`/`*.yml`, subdirectories included,
 * dot-entries skipped, symlinks followed, so a Kubernetes ConfigMap's `..data` swap changes it), and every
 * directory's real path. Two equal signatures mean nothing to reload.
 */
export async function signature(path: string): Promise<string> {
  const st = await stat(path);
  if (!st.isDirectory()) return describe(await realpath(path), st);
  const parts: string[] = [];
  await walk(path, parts, new Set());
  return parts.join('\n');
}

/** walk — the signature parts of `dir` and its subdirectories, as the loader lists them (each real directory once). */
async function walk(dir: string, parts: string[], seen: Set<string>): Promise<void> {
  const real = await realpath(dir);
  if (seen.has(real)) return;
  seen.add(real);
  parts.push(real);
  const names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
  for (const n of names) {
    const p = join(dir, n);
    try {
      const st = await stat(p);
      if (st.isDirectory()) await walk(p, parts, seen);
      else if (st.isFile() && (n.endsWith('.yaml') || n.endsWith('.yml'))) parts.push(describe(await realpath(p), st));
    } catch {
      parts.push(`${p}:gone`);
    }
  }
}

/** describe — one file's part of the signature: a write changes size or mtime, a `chmod` the mode and ctime. */
function describe(real: string, st: { size: number; mtimeMs: number; ctimeMs: number; ino: number; mode: number }): string {
  return `${real}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}:${st.mode}`;
}

/** QUIET_MS — how long the files must stay unchanged before they are loaded (ms). */
export const QUIET_MS = 300;

/** ConfigWatcherOptions — what to watch and what to do with a change. */
export interface ConfigWatcherOptions {
  path: string;
  /** reload — loads and applies the configuration; rejects (the old one keeps serving) when it is bad. */
  reload: () => Promise<void>;
  /** pollMs — how often the files are looked at even without a file-system event. @default 250 */
  pollMs?: number;
  /**
   * quietMs — a change is loaded only once the files' signature has stayed the same for this long (ms): a file
   * rewritten in place, in several writes, is never loaded half-written while the writer pauses less than this.
   * @default QUIET_MS (300)
   */
  quietMs?: number;
  log: (line: string) => void;
}

/**
 * ConfigWatcher — reloads the configuration within a second of a change: file-system events (on the file's
 * directory, since editors and ConfigMaps replace files rather than write them) trigger a look at once, and a poll
 * catches what events miss (network file systems, a swapped symlink's target). A change is loaded once the files
 * have stopped changing (two looks `quietMs` apart agree), so a file rewritten in place is not loaded half-written. A bad configuration is rejected
 * whole by `reload`; the watcher retries only once the files change again. `close()` stops it (nothing else keeps
 * the process alive).
 */
export class ConfigWatcher {
  private last: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  private busy = false;
  private again = false;
  private closed = false;

  constructor(private readonly options: ConfigWatcherOptions) {}

  /** start — remembers the files as they are (already loaded) and starts watching. */
  async start(): Promise<void> {
    this.last = await signature(this.options.path).catch(() => undefined);
    const st = await stat(this.options.path).catch(() => undefined);
    const dir = st?.isDirectory() ? this.options.path : dirname(this.options.path);
    try {
      this.watcher = watch(dir, { persistent: false }, () => void this.look());
      this.watcher.on('error', () => undefined);
    } catch {
      // no events on this file system: the poll alone
    }
    this.timer = setInterval(() => void this.look(), this.options.pollMs ?? 250);
    this.timer.unref();
  }

  /** look — reloads when the files' signature changed since the last load (one load at a time). */
  async look(): Promise<void> {
    if (this.closed) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      do {
        this.again = false;
        const seen = await signature(this.options.path).catch(() => undefined);
        if (seen === undefined || seen === this.last) continue;
        const sig = await this.settle(seen);
        if (sig === undefined || sig === this.last) continue;
        this.last = sig;
        await this.options.reload().catch((e: unknown) => this.options.log(`config reload rejected, the previous configuration keeps serving: ${(e as Error)?.message ?? String(e)}`));
      } while (this.again && !this.closed);
    } finally {
      this.busy = false;
    }
  }

  /**
   * settle — the files' signature once two looks `quietMs` apart agree (the writer has stopped), or undefined when
   * they are gone or the watcher is closed meanwhile.
   */
  private async settle(sig: string): Promise<string | undefined> {
    const quiet = this.options.quietMs ?? QUIET_MS;
    for (;;) {
      await new Promise<void>((resolve) => setTimeout(resolve, quiet).unref());
      if (this.closed) return undefined;
      const again = await signature(this.options.path).catch(() => undefined);
      if (again === undefined || again === sig) return again;
      sig = again;
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.watcher?.close();
  }
}
