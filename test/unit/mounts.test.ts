// Which mount holds a folder in a process's namespace (extension/sys/proc/mounts.ts), and where
// inject mode can place the leak tracer library in a container (libraryHomes), from mountinfo text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execBlocker, mountAt } from '../../extension/sys/proc/mounts';
import { libraryHomes } from '../../extension/tracers/memleak/inject';

const root = '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro';
const tmpNoexec = '40 22 0:35 / /tmp rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw';
const shmNoexec = '41 22 0:36 / /dev/shm rw,nosuid,nodev,noexec - tmpfs shm rw';
const varTmpRo = '43 22 8:1 /var/tmp /var/tmp ro,relatime - ext4 /dev/sda1 rw';
const roRootSuper = '22 1 0:30 / / rw,relatime - overlay overlay ro,lowerdir=/l';

test('mountAt: the last mount on the longest mount point containing the folder', () => {
  assert.equal(mountAt('/tmp', [root, tmpNoexec].join('\n'))?.point, '/tmp');
  assert.equal(mountAt('/tmp/x/y', [root, tmpNoexec].join('\n'))?.point, '/tmp');
  assert.equal(mountAt('/tmpfoo', [root, tmpNoexec].join('\n'))?.point, '/', '/tmp does not hold /tmpfoo');
  assert.deepEqual(mountAt('/tmp', [root, tmpNoexec].join('\n'))?.superOptions, ['rw']);
  assert.equal(mountAt('/tmp', [root, tmpNoexec].join('\n'))?.fsType, 'tmpfs');
  const later = '44 40 0:37 / /tmp rw,relatime - tmpfs tmpfs rw';
  assert.ok(!mountAt('/tmp', [root, tmpNoexec, later].join('\n'))?.options.includes('noexec'), 'a later mount over /tmp hides the earlier one');
  assert.equal(mountAt('/tmp', ''), undefined);
});

test('execBlocker: read-only (the mount or its filesystem) and noexec folders cannot hold a library to load', () => {
  assert.equal(execBlocker('/tmp', root), undefined);
  assert.equal(execBlocker('/tmp', [root, tmpNoexec].join('\n')), '/tmp is mounted noexec');
  assert.equal(execBlocker('/var/tmp', [root, varTmpRo].join('\n')), '/var/tmp is read-only');
  assert.equal(execBlocker('/tmp', roRootSuper), '/tmp is read-only', 'a read-only filesystem under a rw mount');
  assert.equal(execBlocker('/tmp', ''), '/tmp is not mounted');
});

test('libraryHomes: the folders a container lets hold the library, in order, or why none does', () => {
  assert.deepEqual(libraryHomes(0, root), { dirs: ['/tmp', '/var/tmp', '/dev/shm'] });
  assert.deepEqual(libraryHomes(0, [root, tmpNoexec, shmNoexec].join('\n')), { dirs: ['/var/tmp'] });
  const none = libraryHomes(0, [root, tmpNoexec, shmNoexec, varTmpRo].join('\n'));
  assert.ok('why' in none);
  assert.equal(none.why, 'process 0 runs in a container whose filesystem cannot take the leak tracer library (/tmp is mounted noexec, /var/tmp is read-only, /dev/shm is mounted noexec)');
});
