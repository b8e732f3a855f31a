// A pid named with its container in reports and pickers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerLabel, labelPids, pidLabel } from '../../extension/sys/proc/targetLabel';
import type { ContainerInfo } from '../../extension/sys/proc/container';
import { CONTAINER_QUERY, containerCgroup, containerDir } from '../../extension/sys/proc/containerCgroup';

const ID = '993c539891ae0123456789abcdef0123456789abcdef0123456789abcdef0123';
const podman: ContainerInfo = { runtime: 'podman', id: ID, name: 'my-app', image: 'debian:bookworm' };

test('a container: runtime, name and image; the short id when it has no name; pod-qualified under Kubernetes', () => {
  assert.equal(pidLabel(1234, podman), 'pid 1234 (podman: my-app, image debian:bookworm)');
  assert.equal(containerLabel({ runtime: 'docker', id: ID }), 'docker 993c539891ae');
  assert.equal(containerLabel({ runtime: 'containerd', id: ID, name: 'api', pod: 'api-7d9f', namespace: 'shop', image: 'registry/api:2' }), 'containerd: shop/api-7d9f/api, image registry/api:2');
});

test('a host process is its pid alone', () => {
  assert.equal(pidLabel(1234, undefined), 'pid 1234');
});

test('headers: each target pid labelled at its first mention; a pid-like prefix is not matched; no mention appends', () => {
  const of = (pid: number) => (pid === 12 ? podman : undefined);
  assert.equal(labelPids('Sampling pid 12 at 99 Hz... pid 12 again', [12], of), 'Sampling pid 12 (podman: my-app, image debian:bookworm) at 99 Hz... pid 12 again');
  assert.equal(labelPids('Sampling pid 123 at 99 Hz', [12], of), 'Sampling pid 123 at 99 Hz [pid 12 (podman: my-app, image debian:bookworm)]');
  assert.equal(labelPids('Tracing pid 7', [7], of), 'Tracing pid 7');
});

test('--container: the cgroup directory that names the container, and what a query may be', () => {
  assert.equal(containerDir(`/machine.slice/libpod-${ID}.scope/container`, ID), `/machine.slice/libpod-${ID}.scope`);
  assert.equal(containerDir(`/kubepods/burstable/pod1234/${ID}`, ID), `/kubepods/burstable/pod1234/${ID}`);
  assert.equal(containerDir('/user.slice/session-1.scope', ID), undefined);
  for (const ok of ['my-app', '993c', 'shop_api.v2', 'api-7d9f/api']) assert.ok(CONTAINER_QUERY.test(ok), ok);
  for (const bad of ['', '../x', '-rf', 'a b', 'x'.repeat(200), 'a;b']) assert.ok(!CONTAINER_QUERY.test(bad), bad);
  assert.throws(() => containerCgroup('a b'), /--container takes a container's name or id/);
});
