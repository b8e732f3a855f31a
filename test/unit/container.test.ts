// Which container a process runs in: the id and runtime from /proc/PID/cgroup texts as each
// runtime lays them out (cgroup v2, hybrid with v1 controllers, systemd and cgroupfs managers,
// Kubernetes QoS slices), and the names from the runtimes' own files under a made-up root
// (podman's containers.json, docker's config.v2.json, containerd's and CRI-O's OCI bundles, runc's
// state), including files that must not be read: a FIFO, a huge file, one not owned by root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ContainerLookup, CONTAINER_LIMITS, containerText, parseContainerCgroup } from '../../extension/sys/proc/container';
import { JvmSelector, containerLabels } from '../../extension/agent/select';

const ID = '993c539891aecd30d1275cd7d23be2f8de1b3de31e778aae77ebb014525381e5';
const ID2 = '4f1c2e9a0b7d11112222333344445555666677778888999900001111aaaabbbb';
const V1 = (p: string) => ['cpu', 'memory', 'pids', 'name=systemd'].map((c, i) => `${9 - i}:${c}:${p}`).join('\n');

test('cgroup texts name the container and its runtime in every layout', () => {
  const cases: [string, string, object | undefined][] = [
    ['podman, v2, systemd', `0::/machine.slice/libpod-${ID}.scope/container\n`, { runtime: 'podman', id: ID }],
    ['podman, v2, systemd, no payload cgroup', `0::/machine.slice/libpod-${ID}.scope\n`, { runtime: 'podman', id: ID }],
    ['podman, hybrid, cgroupfs (this machine)', `${V1(`/libpod_parent/libpod-${ID}`)}\n0::/libpod_parent/libpod-${ID}\n`, { runtime: 'podman', id: ID }],
    ['podman conmon is no container', `0::/machine.slice/libpod-conmon-${ID}.scope\n`, undefined],
    ['rootless podman', `0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-${ID}.scope\n`, { runtime: 'podman', id: ID }],
    ['docker, v2, systemd', `0::/system.slice/docker-${ID}.scope\n`, { runtime: 'docker', id: ID }],
    ['docker, v1, cgroupfs, v2 line at the root', `${V1(`/docker/${ID}`)}\n0::/\n`, { runtime: 'docker', id: ID }],
    ['containerd under kubepods, systemd', `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e3d4c_5b6a_7980_a1b2_c3d4e5f60718.slice/cri-containerd-${ID}.scope\n`, { runtime: 'containerd', id: ID, podUid: '1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718' }],
    ['containerd under kubepods, systemd, best-effort QoS', `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1f2e3d4c_5b6a_7980_a1b2_c3d4e5f60718.slice/cri-containerd-${ID}.scope\n`, { runtime: 'containerd', id: ID, podUid: '1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718' }],
    ['CRI-O under kubepods, systemd, guaranteed QoS', `0::/kubepods.slice/kubepods-pod1f2e3d4c_5b6a_7980_a1b2_c3d4e5f60718.slice/crio-${ID}.scope\n`, { runtime: 'cri-o', id: ID, podUid: '1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718' }],
    ['CRI-O conmon is no container', `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1f2e3d4c_5b6a_7980_a1b2_c3d4e5f60718.slice/crio-conmon-${ID}.scope\n`, undefined],
    ['kubepods, hybrid, cgroupfs driver', `${V1(`/kubepods/besteffort/pod1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718/${ID}`)}\n0::/\n`, { runtime: 'kubernetes', id: ID, podUid: '1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718' }],
    ['nested: podman inside docker, innermost wins', `0::/system.slice/docker-${ID2}.scope/libpod-${ID}.scope/container\n`, { runtime: 'podman', id: ID }],
    ['a bare id elsewhere', `0::/custom/${ID}\n`, { runtime: 'container', id: ID }],
    ['containerd, seen from a private cgroup namespace (a pod on cgroup v2)', `0::/../../kubepods-besteffort-pod1f2e3d4c_5b6a_7980_a1b2_c3d4e5f60718.slice/cri-containerd-${ID}.scope\n`, { runtime: 'containerd', id: ID, podUid: '1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718' }],
    ['a host service', '0::/system.slice/ssh.service\n', undefined],
    ['a login session, hybrid', `${V1('/user.slice/user-0.slice/session-3.scope')}\n0::/user.slice/user-0.slice/session-3.scope\n`, undefined],
    ['a short hex segment is no id', '0::/system.slice/docker-993c539891ae.scope\n', undefined],
    ['empty', '', undefined],
  ];
  for (const [what, text, want] of cases) assert.deepEqual(parseContainerCgroup(text), want, what);
});

const root = process.getuid?.() === 0;

/** A made-up root with each runtime's files for one id. */
function fakeRoot(): string {
  const r = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-ctr-meta-'));
  const put = (p: string, v: unknown) => {
    fs.mkdirSync(path.dirname(path.join(r, p)), { recursive: true });
    fs.writeFileSync(path.join(r, p), typeof v === 'string' ? v : JSON.stringify(v));
  };
  const idOf = (n: number) => n.toString(16).padStart(64, 'a');
  put('/var/lib/containers/storage/overlay-containers/containers.json', [
    { id: idOf(1), names: ['web'], metadata: JSON.stringify({ 'image-name': 'localhost/web:1', name: 'web' }) },
    { id: idOf(6), names: ['evil\nname\u0007'], metadata: JSON.stringify({ 'image-name': 'x'.repeat(5000) }) },
  ]);
  put(`/var/lib/docker/containers/${idOf(2)}/config.v2.json`, { Name: '/api', Config: { Image: 'openjdk:17', Labels: {} } });
  put(`/run/containerd/io.containerd.runtime.v2.task/k8s.io/${idOf(3)}/config.json`, {
    annotations: { 'io.kubernetes.cri.container-name': 'orders', 'io.kubernetes.cri.sandbox-name': 'orders-7d9f-abc', 'io.kubernetes.cri.sandbox-namespace': 'shop', 'io.kubernetes.cri.image-name': 'registry.example/orders:2.1' },
  });
  put(`/run/containers/storage/overlay-containers/${idOf(4)}/userdata/config.json`, {
    annotations: { 'io.kubernetes.container.name': 'billing', 'io.kubernetes.pod.name': 'billing-0', 'io.kubernetes.pod.namespace': 'finance', 'io.kubernetes.cri-o.ImageName': 'quay.io/x/billing:5' },
  });
  put(`/run/runc/${idOf(5)}/state.json`, { config: { labels: ['a=b', `bundle=/bundles/${idOf(5)}`] } });
  put(`/bundles/${idOf(5)}/config.json`, { annotations: { 'io.kubernetes.pod.name': 'batch-1', 'io.kubernetes.pod.namespace': 'jobs', 'io.kubernetes.container.name': 'worker' } });
  return r;
}

test('names come from each runtime\'s own files', { skip: root ? false : 'the files must be owned by root: run as root' }, () => {
  const r = fakeRoot();
  try {
    const idOf = (n: number) => n.toString(16).padStart(64, 'a');
    const l = new ContainerLookup([r]);
    assert.deepEqual(l.describe({ runtime: 'podman', id: idOf(1) }), { runtime: 'podman', id: idOf(1), name: 'web', image: 'localhost/web:1' });
    assert.deepEqual(l.describe({ runtime: 'docker', id: idOf(2) }), { runtime: 'docker', id: idOf(2), name: 'api', image: 'openjdk:17' });
    assert.deepEqual(l.describe({ runtime: 'containerd', id: idOf(3) }), { runtime: 'containerd', id: idOf(3), name: 'orders', image: 'registry.example/orders:2.1', pod: 'orders-7d9f-abc', namespace: 'shop' });
    assert.deepEqual(l.describe({ runtime: 'cri-o', id: idOf(4) }), { runtime: 'cri-o', id: idOf(4), name: 'billing', image: 'quay.io/x/billing:5', pod: 'billing-0', namespace: 'finance' });
    // The cgroupfs driver does not say which CRI runtime: the files do.
    assert.equal(l.describe({ runtime: 'kubernetes', id: idOf(3) }).runtime, 'containerd');
    assert.equal(l.describe({ runtime: 'kubernetes', id: idOf(4) }).runtime, 'cri-o');
    assert.deepEqual(l.describe({ runtime: 'kubernetes', id: idOf(5) }), { runtime: 'kubernetes', id: idOf(5), name: 'worker', pod: 'batch-1', namespace: 'jobs' });
    // Names are label values: no control characters, bounded length.
    const evil = l.describe({ runtime: 'podman', id: idOf(6) });
    assert.equal(evil.name, 'evilname');
    assert.equal(evil.image!.length, CONTAINER_LIMITS.maxLabelChars);
    // Unknown: the id alone.
    assert.deepEqual(l.describe({ runtime: 'docker', id: idOf(9) }), { runtime: 'docker', id: idOf(9) });
    assert.equal(containerText(l.describe({ runtime: 'containerd', id: idOf(3) })), `shop/orders-7d9f-abc/orders (containerd ${idOf(3).slice(0, 12)}, registry.example/orders:2.1)`);
  } finally {
    fs.rmSync(r, { recursive: true, force: true });
  }
});

test('a FIFO, an oversized file and a file not owned by root are not read', { skip: root ? false : 'needs root to chown' }, () => {
  const r = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-ctr-meta-'));
  try {
    const dir = path.join(r, 'var/lib/containers/storage/overlay-containers');
    fs.mkdirSync(dir, { recursive: true });
    assert.equal(spawnSync('mkfifo', [path.join(dir, 'containers.json')]).status, 0);
    const t0 = Date.now();
    assert.deepEqual(new ContainerLookup([r]).describe({ runtime: 'podman', id: ID }), { runtime: 'podman', id: ID });
    assert.ok(Date.now() - t0 < 2000, 'a FIFO must not block the lookup');
    fs.rmSync(path.join(dir, 'containers.json'));
    fs.writeFileSync(path.join(dir, 'containers.json'), JSON.stringify([{ id: ID, names: ['x'] }]).padEnd(CONTAINER_LIMITS.maxIndexBytes + 1, ' '));
    assert.equal(new ContainerLookup([r]).describe({ runtime: 'podman', id: ID }).name, undefined, 'past maxIndexBytes');
    fs.writeFileSync(path.join(dir, 'containers.json'), JSON.stringify([{ id: ID, names: ['forged'] }]));
    fs.chownSync(path.join(dir, 'containers.json'), 65534, 65534);
    assert.equal(new ContainerLookup([r]).describe({ runtime: 'podman', id: ID }).name, undefined, 'a file a user wrote names nothing');
    fs.chownSync(path.join(dir, 'containers.json'), 0, 0);
    assert.equal(new ContainerLookup([r]).describe({ runtime: 'podman', id: ID }).name, 'forged');
  } finally {
    fs.rmSync(r, { recursive: true, force: true });
  }
});

test('a container whose files appear later is named on a lookup after retryMs', { skip: root ? false : 'the files must be owned by root' }, () => {
  const r = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-ctr-meta-'));
  try {
    const l = new ContainerLookup([r]);
    assert.equal(l.describe({ runtime: 'docker', id: ID }, 1000).name, undefined);
    fs.mkdirSync(path.join(r, `var/lib/docker/containers/${ID}`), { recursive: true });
    fs.writeFileSync(path.join(r, `var/lib/docker/containers/${ID}/config.v2.json`), JSON.stringify({ Name: '/late', Config: { Image: 'i' } }));
    assert.equal(l.describe({ runtime: 'docker', id: ID }, 2000).name, undefined, 'cached within retryMs');
    assert.equal(l.describe({ runtime: 'docker', id: ID }, 1000 + CONTAINER_LIMITS.retryMs).name, 'late');
  } finally {
    fs.rmSync(r, { recursive: true, force: true });
  }
});

test('the agent labels a JVM by its container and selects it by the id a hybrid machine shows only in v1 lines', () => {
  assert.deepEqual(containerLabels(undefined), {});
  assert.deepEqual(containerLabels({ runtime: 'docker', id: ID }), { container: ID.slice(0, 12), container_id: ID.slice(0, 12) });
  assert.deepEqual(containerLabels({ runtime: 'containerd', id: ID, name: 'orders', image: 'r/orders:2', pod: 'orders-0', namespace: 'shop' }), { container: 'orders', container_id: ID.slice(0, 12), image: 'r/orders:2', pod: 'orders-0', namespace: 'shop' });
  const sel = new JvmSelector(undefined, [ID.slice(0, 12)]);
  const hybrid = `${V1(`/docker/${ID}`)}\n0::/\n`;
  assert.equal(sel.coversCgroup('/'), false);
  assert.equal(sel.coversCgroup('/', parseContainerCgroup(hybrid)?.id), true);
  assert.equal(sel.coversCgroup('/', ID2), false);
});
