// Where a --json document says its target ran (cli/runTracer.ts, sys/proc/targetContainer.ts): a
// pid's container, null for a pid on the host, the container a --container filter names, nothing
// for a system-wide run; a launched command's pid counts as the target.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { targetContainer, type ContainerLookups } from '../../extension/sys/proc/targetContainer';
import { parseContainerCgroup, type ContainerInfo } from '../../extension/sys/proc/container';
import fs from 'node:fs';

const app: ContainerInfo = { runtime: 'podman', id: 'a'.repeat(64), name: 'app', image: 'localhost/app:1' };
const asked: string[] = [];
const look: ContainerLookups = {
  ofPid: (pid) => (asked.push(`pid ${pid}`), pid === 42 ? app : undefined),
  byQuery: (q) => (asked.push(`query ${q}`), q === 'app' ? app : undefined),
};

test('a pid in a container: its container; a pid on the host: null', () => {
  assert.deepEqual(targetContainer({ pid: 42, per: 'none' }, [42], look), app);
  assert.equal(targetContainer({ pid: 7 }, [7], look), null);
});

test('a system-wide run (pid 0, java-gc --all) names no container, and looks none up', () => {
  asked.length = 0;
  assert.equal(targetContainer({ pid: 0, per: 'process' }, [], look), undefined);
  assert.equal(targetContainer({ pid: 0, all: true }, [42, 7], look), undefined);
  assert.equal(targetContainer(undefined, [], look), undefined);
  assert.deepEqual(asked, []);
});

test('--container: the container it selected (null once it is gone)', () => {
  assert.deepEqual(targetContainer({ pid: 0, container: 'app' }, [], look), app);
  assert.equal(targetContainer({ pid: 0, container: 'gone' }, [], look), null);
});

test('memleak -- COMMAND: the launched process is the target', () => {
  assert.deepEqual(targetContainer({ launch: { command: ['x'] } }, [42], look), app);
  assert.equal(targetContainer({ launch: { command: ['x'] } }, [7], look), null);
});

test('this test process, through the real lookups: on the host, null (in a container, named by its cgroup)', (t) => {
  const inContainer = parseContainerCgroup(fs.readFileSync('/proc/self/cgroup', 'utf8'));
  const got = targetContainer({ pid: process.pid }, [process.pid]);
  if (inContainer) {
    t.diagnostic(`the tests run in ${inContainer.runtime} ${inContainer.id.slice(0, 12)}`);
    assert.equal(got?.id, inContainer.id);
  } else assert.equal(got, null);
});
