// deploy/kubernetes/ holds together without a cluster: every file is in the kustomization, the
// DaemonSet runs the agent privileged in the host's pid namespace, mounts every volume it names,
// gives the agent read-only every runtime's files the container lookup reads (and not
// containerd's socket), and its config (the ConfigMap's agent.json, read by the agent's own
// parser) names files the Secrets provide; the Service, the ServiceMonitor and the prometheus.io
// annotations agree on the port, the scheme, the certificate's name and the token's Secret.
// YAML is read with python3's PyYAML (Debian's python3-yaml); schema validation against the
// Kubernetes and Prometheus Operator OpenAPI schemas was done once by hand (docs/agent.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../../extension/agent/config';
import { METADATA_DIRS } from '../../extension/sys/proc/container';

const dir = path.join(__dirname, '..', '..', 'deploy', 'kubernetes');
const yamlToJson = spawnSync('python3', ['-c', 'import yaml'], { encoding: 'utf8' });
const skip = yamlToJson.status === 0 ? false : 'python3 with PyYAML is missing (apt-get install python3-yaml)';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

function load(file: string): Doc[] {
  const r = spawnSync('python3', ['-c', 'import sys, yaml, json; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))', path.join(dir, file)], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${file} is not YAML: ${r.stderr}`);
  return JSON.parse(r.stdout) as Doc[];
}

let cached: Map<string, Doc> | undefined;
/** Every object of the manifests by kind, read once (python3 per file). */
function objects(): Map<string, Doc> {
  if (cached) return cached;
  cached = new Map<string, Doc>();
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml'))
    for (const d of load(f)) cached.set(d.kind, d);
  return cached;
}

const under = (p: string, mount: string) => p === mount || p.startsWith(`${mount}/`);

test('the kustomization lists every manifest, all in one namespace', { skip }, () => {
  const k = load('kustomization.yaml')[0];
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort();
  assert.deepEqual([...k.resources].sort(), files);
  const o = objects();
  assert.deepEqual([...o.keys()].sort(), ['ConfigMap', 'DaemonSet', 'Namespace', 'Service', 'ServiceMonitor']);
  const ns = o.get('Namespace').metadata.name;
  for (const [kind, d] of o) if (kind !== 'Namespace') assert.equal(d.metadata.namespace, ns, kind);
  assert.equal(o.get('Namespace').metadata.labels['pod-security.kubernetes.io/enforce'], 'privileged');
});

test('the DaemonSet: privileged, host pid namespace, every runtime\'s files read-only, no runtime socket', { skip }, () => {
  const ds = objects().get('DaemonSet');
  const pod = ds.spec.template.spec;
  assert.equal(pod.hostPID, true);
  assert.equal(pod.automountServiceAccountToken, false);
  assert.deepEqual(ds.spec.selector.matchLabels, ds.spec.template.metadata.labels);
  const c = pod.containers[0];
  assert.equal(c.securityContext.privileged, true);
  const volumes = new Map<string, Doc>(pod.volumes.map((v: Doc) => [v.name, v]));
  for (const m of c.volumeMounts) assert.ok(volumes.has(m.name), `volumeMount ${m.name} has no volume`);
  const hostMounts = c.volumeMounts.filter((m: Doc) => volumes.get(m.name).hostPath);
  for (const m of hostMounts) {
    assert.equal(volumes.get(m.name).hostPath.path, m.mountPath, `${m.name} is not mounted at the host's path: the agent reads it there`);
    if (!m.mountPath.startsWith('/sys/')) assert.equal(m.readOnly, true, `${m.mountPath} is not read-only`);
    assert.ok(!['/run', '/run/containerd', '/var/run', '/var/run/containerd', '/run/crio'].includes(m.mountPath), `${m.mountPath} holds a runtime's socket`);
  }
  for (const [runtime, dirs] of Object.entries(METADATA_DIRS))
    assert.ok(dirs.some((d) => hostMounts.some((m: Doc) => under(d, m.mountPath))), `no mount gives the agent ${runtime}'s files (${dirs.join(', ')})`);
  assert.ok(hostMounts.some((m: Doc) => m.mountPath === '/sys/kernel/tracing'));
});

test('the config: the agent\'s parser accepts it, its files are in the mounted Secrets, its port is the pod\'s', { skip }, () => {
  const o = objects();
  const c = o.get('DaemonSet').spec.template.spec.containers[0];
  const volumes = new Map<string, Doc>(o.get('DaemonSet').spec.template.spec.volumes.map((v: Doc) => [v.name, v]));
  const cfgMount = c.volumeMounts.find((m: Doc) => volumes.get(m.name).configMap);
  assert.equal(c.args[c.args.indexOf('--config') + 1], cfgMount.mountPath);
  const cfg = parseConfig(o.get('ConfigMap').data[cfgMount.subPath], 'agent.json');
  const secretFile = (file: string | undefined) => {
    const m = c.volumeMounts.find((v: Doc) => file && volumes.get(v.name).secret && under(file, v.mountPath));
    assert.ok(m, `${file} is in no mounted Secret`);
    return { secret: volumes.get(m.name).secret, key: path.relative(m.mountPath, file!) };
  };
  assert.ok(cfg.tls, 'beyond loopback the agent needs tls');
  const cert = secretFile(cfg.tls.certFile);
  assert.equal(secretFile(cfg.tls.keyFile).secret.secretName, cert.secret.secretName);
  const token = secretFile(cfg.auth?.bearerTokenFile);
  assert.equal(token.secret.defaultMode, 0o400, 'the token is a secret: 0400');
  assert.equal(cert.secret.defaultMode, 0o400, 'the TLS key is a secret: 0400');
  const port = c.ports.find((p: Doc) => p.name === 'metrics').containerPort;
  assert.equal(cfg.listen, `0.0.0.0:${port}`);
  assert.ok(c.securityContext.readOnlyRootFilesystem, 'read-only root');
  assert.ok(c.volumeMounts.some((m: Doc) => m.mountPath === '/tmp'), 'a writable /tmp beside a read-only root');

  // The ServiceMonitor scrapes the Service's port over https with that token and the certificate's name.
  const svc = o.get('Service');
  const sm = o.get('ServiceMonitor');
  assert.deepEqual(svc.spec.selector, o.get('DaemonSet').spec.template.metadata.labels);
  assert.equal(svc.spec.ports[0].targetPort, 'metrics');
  assert.equal(svc.spec.ports[0].port, port);
  for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) assert.equal(svc.metadata.labels[k], v);
  const ep = sm.spec.endpoints[0];
  assert.equal(ep.port, svc.spec.ports[0].name);
  assert.equal(ep.scheme, 'https');
  assert.equal(ep.honorLabels, true, 'the JVMs\' container, pod and namespace labels must win over the agent pod\'s target labels');
  assert.ok(ep.relabelings.some((r: Doc) => r.action === 'labeldrop' && new RegExp(`^(?:${r.regex})$`).test('pod') && new RegExp(`^(?:${r.regex})$`).test('namespace') && new RegExp(`^(?:${r.regex})$`).test('container')), 'the agent pod\'s container, pod and namespace target labels are dropped');
  assert.equal(ep.tlsConfig.serverName, `${svc.metadata.name}.${svc.metadata.namespace}.svc`);
  assert.equal(ep.authorization.credentials.name, token.secret.secretName);
  assert.equal(ep.authorization.credentials.key, token.key);
  for (const a of [o.get('DaemonSet').spec.template.metadata.annotations, svc.metadata.annotations]) {
    assert.equal(a['prometheus.io/scrape'], 'true');
    assert.equal(a['prometheus.io/port'], String(port));
    assert.equal(a['prometheus.io/scheme'], 'https');
  }
});
