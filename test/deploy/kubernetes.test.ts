/**
 * examples/kubernetes: the manifests parse, the Deployment probes the service with Kubernetes' gRPC probes on the
 * port the container and the Service name, mounts the ConfigMap as the directory the image reads, runs as the image's
 * non-root user, and the ConfigMap's configuration loads with `ratekeeper config check` (the same loader as serve).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/tmp.js';
import { run } from '../server/procs.js';
import { manifests, one, writeConfigMap } from './kube.js';

const CONTAINERFILE = fileURLToPath(new URL('../../../Containerfile', import.meta.url));

describe('examples/kubernetes', () => {
  test('a ConfigMap, a Deployment and a Service, each once', () => {
    const kinds = manifests().map((m) => m.object.kind).sort();
    assert.deepEqual(kinds, ['ConfigMap', 'Deployment', 'Service']);
  });

  test('the Deployment: gRPC readiness and liveness probes on the container\'s gRPC port, which the Service exposes', () => {
    const d = one('Deployment');
    const [c] = d.spec.template.spec.containers;
    const grpcPort = c.ports.find((p: { name: string }) => p.name === 'grpc').containerPort;
    assert.equal(grpcPort, 8081);
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      assert.deepEqual(Object.keys(c[probe]).filter((k) => ['grpc', 'httpGet', 'exec', 'tcpSocket'].includes(k)), ['grpc'], `${probe} is a gRPC probe`);
      assert.equal(c[probe].grpc.port, grpcPort, `${probe} asks the gRPC port`);
      assert.equal(c[probe].grpc.service, undefined, `${probe} asks the server's overall health (service "")`);
    }
    const args: string[] = c.args;
    assert.equal(args[args.indexOf('--grpc-port') + 1], String(grpcPort));
    const s = one('Service');
    assert.deepEqual(s.spec.selector, d.spec.selector.matchLabels);
    assert.deepEqual(d.spec.template.metadata.labels, d.spec.selector.matchLabels);
    const grpc = s.spec.ports.find((p: { name: string }) => p.name === 'grpc');
    assert.equal(grpc.targetPort, 'grpc');
    assert.equal(grpc.port, 8081);
  });

  test('the Deployment mounts the ConfigMap as the directory the image reads its configuration from, as a non-root user', () => {
    const d = one('Deployment');
    const pod = d.spec.template.spec;
    const [c] = pod.containers;
    const mount = c.volumeMounts.find((m: { name: string }) => m.name === 'config');
    const volume = pod.volumes.find((v: { name: string }) => v.name === 'config');
    assert.equal(volume.configMap.name, one('ConfigMap').metadata.name);
    // the image's default (Containerfile: ENV RATEKEEPER_CONFIG=…) and the args agree with the mount
    const image = /RATEKEEPER_CONFIG=(\S+)/.exec(readFileSync(CONTAINERFILE, 'utf8'));
    assert.ok(image !== null, 'the Containerfile sets RATEKEEPER_CONFIG');
    assert.equal(mount.mountPath, image[1]);
    assert.equal(c.args[c.args.indexOf('--config') + 1], mount.mountPath);
    assert.equal(mount.readOnly, true);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const user = /^USER (\d+)(?::\d+)?$/m.exec(readFileSync(CONTAINERFILE, 'utf8'));
    assert.ok(user !== null, 'the Containerfile names a numeric USER');
    assert.equal(String(pod.securityContext.runAsUser), user[1]);
  });

  test('the ConfigMap\'s configuration loads: ratekeeper config check on the mounted directory exits 0', async () => {
    const dir = tempDir('rk-kube-');
    const files = writeConfigMap(dir);
    assert.ok(files.length >= 1);
    const r = await run(['config', 'check', dir]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /^ok: 2 files, 1 domain, 2 limits, 1 policy/m);
    assert.match(r.stdout, /policy api: gcra 10\/1s/);
  });
});
