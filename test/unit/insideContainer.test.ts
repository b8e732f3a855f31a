import { test } from 'node:test';
import assert from 'node:assert/strict';
import { containerLimits } from '../../extension/sys/proc/insideContainer';

test('containerLimits: one sentence per limit, each with the Dev Container recipe; none on the host or with --privileged --pid=host', () => {
  assert.deepEqual(containerLimits(undefined), []);
  assert.deepEqual(containerLimits({ runtime: 'docker', privileged: true, ownPidNamespace: false }), []);
  const both = containerLimits({ runtime: 'podman', privileged: false, ownPidNamespace: true });
  assert.equal(both.length, 2);
  assert.match(both[0], /^inside a podman container without privileges: the container refuses BPF even to root/);
  assert.match(both[1], /own pid namespace: .*--pid is refused/);
  for (const s of both) assert.match(s, /"runArgs": \["--privileged", "--pid=host"\]/);
  assert.match(containerLimits({ runtime: 'a container', privileged: true, ownPidNamespace: true })[0], /^inside a container with its own pid namespace/);
});
