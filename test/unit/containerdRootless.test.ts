// Containers whose cgroup path names no id by its form: a containerd task `ctr run` started
// (cgroupfs "/NS/ID", systemd ".../NS-ID.scope"), named only when runc's root-owned state.json puts
// it in that cgroup; and a rootless podman container, found from its conmon parent's command line
// and named from its user's own store, read only when that user owns the file and never through a
// symbolic link the user planted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ContainerLookup, cgroupPathOf, containerdCandidates } from '../../extension/sys/proc/container';
import { parseConmonArgs, readUserOwnedFile } from '../../extension/sys/proc/rootlessPodman';
import { boltValue } from '../../extension/sys/proc/boltRead';

const ID = '993c539891aecd30d1275cd7d23be2f8de1b3de31e778aae77ebb014525381e5';
const root = process.getuid?.() === 0;

test('a cgroup path gives containerd (namespace, id) candidates as its runc shim places tasks', () => {
  const ns = () => ['default', 'ebpf', 'k8s.io', '../x'];
  assert.deepEqual(containerdCandidates('/ebpf/web-1', ns), [{ ns: 'ebpf', id: 'web-1' }]);
  // ctr run without -n: containerd's default namespace (cgroupfs, the same path on v1 and v2)
  assert.deepEqual(containerdCandidates('/default/web-1', ns), [{ ns: 'default', id: 'web-1' }]);
  assert.deepEqual(containerdCandidates('/system.slice/ebpf-web-1.scope', ns), [{ ns: 'system.slice', id: 'ebpf-web-1.scope' }, { ns: 'ebpf', id: 'web-1' }]);
  assert.deepEqual(containerdCandidates('/', ns), []);
  assert.deepEqual(containerdCandidates('/only', ns), []);
  assert.deepEqual(containerdCandidates('/a/..', ns), [], 'no ".." reaches a path');
  assert.deepEqual(containerdCandidates('/a/-x', ns), []);
  assert.equal(cgroupPathOf('9:name=systemd:/ns/id\n0::/ns/id\n'), '/ns/id');
  assert.equal(cgroupPathOf('9:name=systemd:/ns/id\n4:memory:/m\n'), '/ns/id');
  assert.equal(cgroupPathOf('4:memory:/m\n'), undefined);
});

function fakeContainerd(r: string, cgroup: string, annotations: object = {}) {
  const put = (p: string, v: unknown) => {
    fs.mkdirSync(path.dirname(path.join(r, p)), { recursive: true });
    fs.writeFileSync(path.join(r, p), JSON.stringify(v));
  };
  put('/run/containerd/runc/ebpf/web-1/state.json', { id: 'web-1', cgroup_paths: { '': `/sys/fs/cgroup/unified${cgroup}`, memory: `/sys/fs/cgroup/memory${cgroup}` }, config: { labels: ['bundle=/state/ebpf/web-1'] } });
  put('/state/ebpf/web-1/config.json', { annotations });
}

test('a ctr-run task is named from runc\'s state.json when that file puts it in the same cgroup', { skip: root ? false : 'the files must be owned by root' }, () => {
  const r = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-ctrd-'));
  try {
    const text = (p: string) => `9:name=systemd:${p}\n4:memory:${p}\n0::${p}\n`;
    fakeContainerd(r, '/ebpf/web-1');
    const lookup = (p: string) => new ContainerLookup([r], () => text(p)).of(999_999_999);
    assert.deepEqual(lookup('/ebpf/web-1'), { runtime: 'containerd', id: 'web-1', name: 'web-1', namespace: 'ebpf' });
    assert.equal(lookup('/other/web-1'), undefined, 'a path of the same id elsewhere is not it');
    fakeContainerd(r, '/system.slice/ebpf-web-1.scope', { 'io.kubernetes.cri.image-name': 'r/web:2', 'io.kubernetes.cri.container-name': 'web' });
    assert.deepEqual(lookup('/system.slice/ebpf-web-1.scope'), { runtime: 'containerd', id: 'web-1', name: 'web', namespace: 'ebpf', image: 'r/web:2' });
    // a state.json a user wrote names nothing
    fs.chownSync(path.join(r, 'run/containerd/runc/ebpf/web-1/state.json'), 65534, 65534);
    assert.equal(lookup('/system.slice/ebpf-web-1.scope'), undefined);
  } finally {
    fs.rmSync(r, { recursive: true, force: true });
  }
});

test('conmon\'s command line gives the id and the store index, nothing else', () => {
  const args = (...a: string[]) => ['/usr/bin/conmon', '--api-version', '1', ...a].join('\0') + '\0';
  assert.deepEqual(parseConmonArgs(args('-c', ID, '-u', ID, '-b', `/home/u/.local/share/containers/storage/vfs-containers/${ID}/userdata`)), { id: ID, index: '/home/u/.local/share/containers/storage/vfs-containers/containers.json' });
  assert.deepEqual(parseConmonArgs(args('-c', ID, '-b', `/x/overlay-containers/${ID}/userdata`))?.index, '/x/overlay-containers/containers.json');
  assert.equal(parseConmonArgs(args('-c', ID, '-b', `/x/../etc/overlay-containers/${ID}/userdata`)), undefined);
  assert.equal(parseConmonArgs(args('-c', ID, '-b', `/x/overlay-containers/${ID.replace('9', '8')}/userdata`)), undefined, 'the bundle of another id');
  assert.equal(parseConmonArgs(args('-c', 'short', '-b', '/x/overlay-containers/short/userdata')), undefined);
  assert.equal(parseConmonArgs(args('-c', ID)), undefined);
});

test('a user\'s store file is read only when that user owns it, never through a link or a FIFO', { skip: root ? false : 'needs root to chown' }, () => {
  const r = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-rootless-'));
  try {
    const file = path.join(r, 'store/containers.json');
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, '[1]');
    fs.chownSync(file, 65534, 65534);
    assert.equal(readUserOwnedFile(file, 65534, 100), '[1]');
    assert.equal(readUserOwnedFile('/store/containers.json', 65534, 100, r), '[1]', 'below a directory of ours (/proc/1/root in a container)');
    assert.equal(readUserOwnedFile(file, 65533, 100), undefined, 'another user\'s file');
    assert.equal(readUserOwnedFile(file, 65534, 2), undefined, 'past the limit');
    assert.equal(readUserOwnedFile(`${r}/store/../store/containers.json`, 65534, 100), undefined);
    // a link at the end and one on the way, both to the user's own file: not followed
    fs.symlinkSync(file, path.join(r, 'last.json'));
    assert.equal(readUserOwnedFile(path.join(r, 'last.json'), 65534, 100), undefined);
    fs.symlinkSync(path.join(r, 'store'), path.join(r, 'dirlink'));
    assert.equal(readUserOwnedFile(path.join(r, 'dirlink/containers.json'), 65534, 100), undefined);
    const fifo = path.join(r, 'store/fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    fs.chownSync(fifo, 65534, 65534);
    const t0 = Date.now();
    assert.equal(readUserOwnedFile(fifo, 65534, 100), undefined);
    assert.ok(Date.now() - t0 < 2000, 'a FIFO does not block');
  } finally {
    fs.rmSync(r, { recursive: true, force: true });
  }
});

test('a file that is not a bbolt database, or is torn, names no image and never throws', () => {
  const r = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-bolt-'));
  try {
    const keys = ['v1', 'ns', 'containers', 'id', 'image'];
    const tryBuf = (b: Buffer) => {
      fs.writeFileSync(path.join(r, 'meta.db'), b);
      const fd = fs.openSync(path.join(r, 'meta.db'), 'r');
      try {
        return boltValue(fd, b.length, keys);
      } finally {
        fs.closeSync(fd);
      }
    };
    assert.equal(tryBuf(Buffer.alloc(0)), undefined);
    let seed = 7;
    const noise = Buffer.from(Buffer.alloc(65536).map(() => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff));
    assert.equal(tryBuf(noise), undefined);
    // a valid meta page whose root points past the end, then at itself with a huge element count
    const meta = Buffer.alloc(8192);
    meta.writeUInt32LE(0xed0cdaed, 16);
    meta.writeUInt32LE(2, 20);
    meta.writeUInt32LE(4096, 24);
    meta.writeBigUInt64LE(99n, 32);
    assert.equal(tryBuf(meta), undefined);
    meta.writeBigUInt64LE(1n, 32);
    meta.writeBigUInt64LE(1n, 4096);
    meta.writeUInt16LE(0x02, 4096 + 8);
    meta.writeUInt16LE(65535, 4096 + 10);
    assert.equal(tryBuf(meta), undefined);
  } finally {
    fs.rmSync(r, { recursive: true, force: true });
  }
});
