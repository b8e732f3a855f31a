// Tracers on programs in containers that neither podman (as root) nor docker run: a containerd of
// the test's own driven by ctr (no docker daemon: containerd, its runc shim and runc, the way a
// Kubernetes node runs containers without the CRI), and rootless podman as a user the test makes
// (vfs storage, runc; on this machine's hybrid cgroup v1 the container gets no cgroup of its own).
// Traced from the host as root, each result against the program's own account: a C program's
// known 3:1 CPU split, a JVM's -Xlog:gc and GarbageCollectorMXBeans; the --json document, the
// process listing and the CLI's header name the container.
//
// The bed (image, fixtures built inside, the daemons and the user) is test/kernel/containerKit.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import type { ContainerInfo } from '../../extension/sys/proc/container';
import { processInfo } from '../../extension/sys/proc/processes';
import { containerCgroup } from '../../extension/sys/proc/containerCgroup';
import { cgroup2Mount } from '../../extension/sys/cgroup';
import { startCli, waitFor } from '../helpers';
import { IMAGE, containerBed, containerdDaemon, containerPrep, rootlessPodman, rootlessSkipReason, type Containerd, type Contained, type RootlessPodman } from './containerKit';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const prep = containerPrep();
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const has = (s: ProfileStack, re: RegExp) => s.frames.some((f) => f.function !== null && re.test(f.function));
const countWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => has(s, re)).reduce((n, s) => n + s.count, 0);
const FIXTURES = { fixtures: ['c/cpusplit.c', 'java/GcWorkload.java'], build: 'gcc -g -O0 -fno-omit-frame-pointer -o /app/cpusplit /app/cpusplit.c && javac -d /app /app/GcWorkload.java' };

/** profile --pid on cpusplit in the container: hot_a's 3:1 share, file:line from the container's binary, the container named. */
async function profileSplit(c: Contained, want: ContainerInfo, t: { diagnostic(s: string): void }) {
  const r = await startCli(['profile', '--pid', String(c.hostPid), '--frequency', '499', '--duration', '5', '--json']).done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as ProfileResult;
  const [a, b] = [countWith(doc, /^hot_a$/), countWith(doc, /^hot_b$/)];
  t.diagnostic(`hot_a ${a}, hot_b ${b}: hot_a's share ${pct(a / (a + b))} (known 75 %), ${doc.samples} samples; ${doc.cpuCheck?.message}`);
  assert.ok(doc.samples >= 300, `only ${doc.samples} samples in 5 s at 499 Hz`);
  assert.equal(doc.cpuCheck?.verdict, 'agree', doc.cpuCheck?.message);
  assert.ok(a + b >= 0.9 * doc.samples, 'nearly all samples are in the two functions');
  assert.ok(Math.abs(a / (a + b) - 0.75) <= 0.05, `hot_a's share ${pct(a / (a + b))}, known 75 % ± 5`);
  const leaf = doc.stacks.find((s) => s.frames[0]?.function === 'hot_a')!.frames[0];
  assert.equal(leaf.file, '/app/cpusplit.c', "the source file as the container's compiler named it");
  assert.deepEqual((doc as { container?: unknown }).container, want, 'the --json document names the container');
}

/** java-gc --pid on GcWorkload in the container: every pause its -Xlog:gc and its beans count. */
async function javaGcPauses(j: Contained & { done: Promise<{ young: number; full: number; logYoung: number; logFull: number }> }, t: { diagnostic(s: string): void }) {
  const cli = startCli(['java-gc', '--pid', String(j.hostPid), '--json', '--verbose']);
  assert.ok(await waitFor(() => cli.stderr().includes(`pid ${j.hostPid}: its own counters (`) || cli.child.exitCode !== null, 30_000), `not attached: ${cli.stderr()}`);
  j.send('go');
  const own = await j.done;
  const r = await cli.done;
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout) as JavaGcResult;
  const n = (collector: string) => result.events.filter((e) => e.pid === j.hostPid && e.collector === collector).length;
  const check = result.jvmCounts?.find((c) => c.pid === j.hostPid);
  t.diagnostic(`-Xlog:gc: young ${own.logYoung} full ${own.logFull}; beans ${own.young}/${own.full}; ours ${n('Copy')}/${n('MarkSweepCompact')}; ${check?.message}`);
  assert.ok(own.young > 10 && own.full >= 3, 'the workload collects');
  assert.equal(n('Copy'), own.logYoung, 'young pauses: ours and -Xlog:gc');
  assert.equal(n('MarkSweepCompact'), own.logFull, 'full pauses: ours and -Xlog:gc');
  assert.equal(own.logYoung + own.logFull, own.young + own.full, "-Xlog:gc and the JVM's beans agree");
  assert.equal(check?.verdict, 'agree', check?.message);
}

const containerdMissing = prep.skip ?? (['containerd', 'ctr', 'containerd-shim-runc-v2'].find((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0) && 'containerd is not installed (docker.io brings it: scripts/install-deps.sh --test)');

describe('tracers on programs in containerd containers run by ctr (no docker)', { skip: containerdMissing || false, timeout: 600_000 }, () => {
  let d: Containerd | undefined;
  before(async () => {
    const r = await containerdDaemon();
    if (typeof r === 'string') throw new Error(r);
    d = r;
  });
  const { contained, jvm } = containerBed({ ...FIXTURES, containerd: () => d! });
  after(() => d?.stop());

  const want = (id: string): ContainerInfo => ({ runtime: 'containerd', id, name: id, namespace: d!.namespace, image: IMAGE });

  test('profile --pid: a C program in a ctr container, 3:1 CPU split; the document, the listing and the header name it', { timeout: 120_000 }, async (t) => {
    t.diagnostic(d!.note);
    const c = await contained(['sh', '-c', 'echo ready; exec /app/cpusplit 40']);
    t.diagnostic(`/proc/${c.hostPid}/cgroup: ${spawnSync('sh', ['-c', `grep '^0::' /proc/${c.hostPid}/cgroup`], { encoding: 'utf8' }).stdout.trim()}`);
    await profileSplit(c, want(c.name), t);
    assert.equal(processInfo(c.hostPid)?.container, `containerd: ${c.name}, image ${IMAGE}`);
    // --container selects it by its cgroup (cgroupfs: /NAMESPACE/ID), as the scheduler tracers filter
    if (cgroup2Mount()) assert.equal(containerCgroup(c.name).cgroupPath, `/${d!.namespace}/${c.name}`);
    const r = await startCli(['profile', '--pid', String(c.hostPid), '--duration', '1']).done;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.includes(`Sampling pid ${c.hostPid} (containerd: ${c.name}, image ${IMAGE}) at`), r.stderr);
  });

  test('java-gc --pid: a JVM in a ctr container, every pause its -Xlog:gc logs', { timeout: 120_000 }, async (t) => {
    const j = await jvm(3, 192, 200);
    await javaGcPauses(j, t);
  });
});

const rootlessMissing = prep.skip ?? rootlessSkipReason();

describe('tracers on programs in rootless podman containers, from the host as root', { skip: rootlessMissing ?? false, timeout: 600_000 }, () => {
  let u: RootlessPodman | undefined;
  // where this kernel or machine refuses rootless containers, each case skips with podman's own words
  let refused: string | undefined;
  before(() => {
    const r = rootlessPodman();
    if (typeof r === 'string') refused = r;
    else u = r;
  });
  const { contained, jvm } = containerBed({ ...FIXTURES, rootless: () => u! });
  after(() => u?.stop());

  test('profile --pid: a C program in a rootless container, 3:1 CPU split, named from its user\'s store', { timeout: 120_000 }, async (t) => {
    if (refused) return t.skip(refused);
    t.diagnostic(u!.note);
    const c = await contained(['sh', '-c', 'echo ready; exec /app/cpusplit 40']);
    const inspect = spawnSync(...u!.command(['inspect', '--format', '{{.Id}}', c.name]), { encoding: 'utf8' });
    const id = inspect.stdout.trim();
    assert.match(id, /^[0-9a-f]{64}$/, `podman inspect as ${u!.user}: ${inspect.stderr}`);
    t.diagnostic(`/proc/${c.hostPid}/cgroup: ${spawnSync('sh', ['-c', `grep -E '^(0|[0-9]+:name=systemd):' /proc/${c.hostPid}/cgroup | tr '\\n' ' '`], { encoding: 'utf8' }).stdout.trim()}`);
    await profileSplit(c, { runtime: 'podman', id, name: c.name, image: IMAGE }, t);
    assert.equal(processInfo(c.hostPid)?.container, `podman: ${c.name}, image ${IMAGE}`);
  });

  test('a store file the user does not own names nothing: the pid is still traced, by the id from conmon', { timeout: 120_000 }, async (t) => {
    if (refused) return t.skip(refused);
    const c = await contained(['sh', '-c', 'echo ready; exec /app/cpusplit 20']);
    const id = spawnSync(...u!.command(['inspect', '--format', '{{.Id}}', c.name]), { encoding: 'utf8' }).stdout.trim();
    const index = spawnSync('sh', ['-c', `ls ${u!.home}/.local/share/containers/storage/vfs-containers/containers.json`], { encoding: 'utf8' }).stdout.trim();
    assert.ok(index, 'the user\'s containers.json');
    fs.chownSync(index, 0, 0);
    try {
      const r = await startCli(['profile', '--pid', String(c.hostPid), '--frequency', '499', '--duration', '1', '--json']).done;
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout) as ProfileResult;
      t.diagnostic(`${doc.samples} samples (${doc.cpuCheck?.message}); container ${JSON.stringify((doc as { container?: unknown }).container)}`);
      assert.ok(doc.samples > 0);
      assert.equal(doc.cpuCheck?.verdict, 'agree', doc.cpuCheck?.message);
      assert.deepEqual((doc as { container?: unknown }).container, { runtime: 'podman', id });
    } finally {
      fs.chownSync(index, u!.uid, u!.gid);
    }
  });

  test('java-gc --pid: a JVM in a rootless container, every pause its -Xlog:gc logs', { timeout: 150_000 }, async (t) => {
    if (refused) return t.skip(refused);
    const j = await jvm(3, 192, 200);
    await javaGcPauses(j, t);
  });
});
