/**
 * load — a configuration from YAML files: `parseConfig` (pure: names and texts in, a {@link ServiceConfig} out, or a
 * {@link ConfigError} with every issue of every file) and `loadConfig` (a file, or a directory of `*.yaml`/`*.yml`
 * read recursively, dot-entries skipped, symlinks followed: a Kubernetes ConfigMap mount works as it is).
 */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, Issues, sortIssues, type ConfigIssue } from './errors.js';
import { DNode, Config } from './match.js';
import { rootLevel, walkDescriptors, type Tree } from './descriptors.js';
import { walkPolicies } from './policies.js';
import type { LoadOptions, NativePolicy, ServiceConfig } from './types.js';
import { fields, isMapNode, kindOf, lateIssues, parseYaml, text, toJs, unknownFields } from './yaml.js';
import { show } from '../../core/errors.js';

const ROOT_FIELDS: ReadonlySet<string> = new Set(['domain', 'descriptors', 'policies']);
const ROOT_HINTS: Readonly<Record<string, string>> = { policy: 'policies', descriptor: 'descriptors', rate_limit: 'descriptors: [{ key, rate_limit }]' };

/**
 * parseConfig — every file's text → one configuration. A file has a `domain` (with `descriptors`), `policies`, or
 * both. Throws a ConfigError listing every issue found in every file.
 */
export function parseConfig(files: { name: string; text: string }[], options: LoadOptions = {}): ServiceConfig {
  const issues = new Issues();
  const tree: Tree = { roots: new Map(), limits: [], depth: 0 };
  const domainFile = new Map<string, string>();
  const policies = new Map<string, NativePolicy>();
  const policySeen = new Map<string, string>();
  for (const file of files) {
    const parsed = parseYaml(file.name, file.text, issues);
    if (parsed === undefined) continue;
    const { src, root } = parsed;
    const at = { src, path: '', line: 1 };
    if (root === null || !isMapNode(root)) {
      issues.add(file.name, 1, '', '', toJs(src, root),
        root === null
          ? 'the file is empty: a configuration file has a domain (with descriptors), policies, or both'
          : `the file must be a map with domain and descriptors, or policies, got ${kindOf(src, root)}`);
      continue;
    }
    const f = fields(at, root, '')!;
    unknownFields(at, f, ROOT_FIELDS, 'a configuration file', ROOT_HINTS);
    const df = f.get('domain');
    const domain = df === undefined ? '' : text(at, df);
    const descriptors = f.get('descriptors');
    const pf = f.get('policies');
    if (domain === '' && (df !== undefined || descriptors !== undefined || pf === undefined)) {
      issues.add(file.name, df?.line ?? 1, '', 'domain', domain,
        'config file cannot have empty domain: a file with descriptors names their domain (domain: my_domain); a file of policies only has policies:');
    } else if (domain !== undefined && domain !== '') {
      const first = domainFile.get(domain);
      if (first !== undefined && options.mergeDomains !== true) {
        issues.add(file.name, df!.line, '', 'domain', domain,
          `duplicate domain '${domain}' in config file: it is already defined in ${first} (a domain lives in one file)`);
      } else {
        if (first === undefined) domainFile.set(domain, file.name);
        let node = tree.roots.get(domain);
        if (node === undefined) {
          node = new DNode('', undefined, false, false, file.name, df!.line);
          tree.roots.set(domain, node);
        }
        if (descriptors !== undefined) {
          walkDescriptors({ src, path: `domain: ${domain}`, line: descriptors.line }, descriptors.value, rootLevel(node, domain), tree);
        }
      }
    }
    if (pf !== undefined) walkPolicies({ src, path: '', line: pf.line }, pf.value, policies, policySeen);
    lateIssues(src);
  }
  issues.throwIfAny();
  return new Config(files.map((f) => f.name), Date.now(), tree.roots, Object.freeze(tree.limits), policies, Math.max(1, tree.depth));
}

/** isConfigFile — a name the directory loader reads: `*.yaml` or `*.yml`, not a dot-file. */
function isConfigFile(name: string): boolean {
  return !name.startsWith('.') && (name.endsWith('.yaml') || name.endsWith('.yml'));
}

/**
 * listFiles — the config files under `dir`: the path to show (under `dir`, as given) and the path to read (symlinks
 * resolved). Dot-entries are skipped (a ConfigMap's `..data` and `..2024_…` dirs are reached through the symlinks
 * of its files); subdirectories are read, each real directory once. Sorted by shown path.
 */
async function listFiles(dir: string, issues: Issues, seen = new Set<string>()): Promise<{ shown: string; real: string }[]> {
  const real = await realpath(dir);
  if (seen.has(real)) return [];
  seen.add(real);
  const out: { shown: string; real: string }[] = [];
  const names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
  for (const name of names) {
    const shown = join(dir, name);
    try {
      const s = await stat(shown);
      if (s.isDirectory()) out.push(...(await listFiles(shown, issues, seen)));
      else if (s.isFile() && isConfigFile(name)) out.push({ shown, real: await realpath(shown) });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // a dangling symlink: not a file
      issues.add(shown, undefined, '', '', undefined, `cannot read: ${(e as Error).message}`);
    }
  }
  return out;
}

/**
 * loadConfig — a file (any name) or a directory of `*.yaml` / `*.yml` files (see {@link listFiles}). Every file's
 * symlinks are resolved before any is read, so a ConfigMap's `..data` swap in the middle of a load gives the old or
 * the new files, or a read error, never a mix of the two. Throws a ConfigError with every issue (a missing path, an
 * empty directory, and each file's problems).
 */
export async function loadConfig(path: string, options: LoadOptions = {}): Promise<ServiceConfig> {
  const issues = new Issues();
  const root = resolve(path);
  let list: { shown: string; real: string }[] = [];
  try {
    const s = await stat(root);
    if (s.isDirectory()) {
      list = await listFiles(root, issues);
      if (list.length === 0 && issues.size === 0) {
        issues.add(root, undefined, '', '', undefined, 'no configuration file: the directory has no *.yaml or *.yml file');
      }
    } else {
      list = [{ shown: root, real: await realpath(root) }];
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    issues.add(root, undefined, '', '', path, code === 'ENOENT' ? `no such file or directory: ${show(path)}` : `cannot read ${show(path)}: ${(e as Error).message}`);
  }
  const texts: { name: string; text: string }[] = [];
  for (const f of list) {
    try {
      texts.push({ name: f.shown, text: await readFile(f.real, 'utf8') });
    } catch (e) {
      issues.add(f.shown, undefined, '', '', undefined, `cannot read: ${(e as Error).message}`);
    }
  }
  let parseIssues: readonly ConfigIssue[] = [];
  let config: ServiceConfig | undefined;
  try {
    config = parseConfig(texts, options);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    parseIssues = e.issues;
  }
  if (issues.size > 0 || parseIssues.length > 0) throw new ConfigError(sortIssues([...issues.list, ...parseIssues]));
  return config!;
}
