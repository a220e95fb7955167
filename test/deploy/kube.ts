/**
 * test/deploy/kube — examples/kubernetes read as Kubernetes would: every document of every file, and the ConfigMap's
 * data written out as the directory the kubelet mounts (each key a file).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

/** KUBE — examples/kubernetes/. */
export const KUBE = fileURLToPath(new URL('../../../examples/kubernetes/', import.meta.url));

/** Manifest — one Kubernetes object, as parsed (only the fields the tests read are typed). */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  spec?: any;
  data?: Record<string, string>;
}

/** manifests — every object of every *.yaml in examples/kubernetes, with the file it came from; a YAML error throws. */
export function manifests(): { file: string; object: Manifest }[] {
  const out: { file: string; object: Manifest }[] = [];
  for (const file of readdirSync(KUBE).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(KUBE, file), 'utf8'))) {
      if (!('errors' in doc) || doc.errors.length > 0) throw new Error(`${file}: ${'errors' in doc ? doc.errors.map((e) => e.message).join('; ') : 'not a document'}`);
      const object = doc.toJS() as Manifest | null;
      if (object !== null) out.push({ file, object });
    }
  }
  return out;
}

/** one — the only object of `kind`; throws when there is none or several. */
export function one(kind: string): Manifest {
  const found = manifests().filter((m) => m.object.kind === kind);
  if (found.length !== 1) throw new Error(`examples/kubernetes has ${found.length} ${kind} objects, expected 1`);
  return found[0].object;
}

/** writeConfigMap — the ConfigMap's data as the directory a pod sees (a file per key) in `dir`; the file names. */
export function writeConfigMap(dir: string): string[] {
  const data = one('ConfigMap').data ?? {};
  for (const [name, text] of Object.entries(data)) writeFileSync(join(dir, name), text);
  return Object.keys(data);
}
