// Tracers on programs in containers that neither podman (as root) nor docker run: a containerd of
// the test's own driven by ctr (no docker daemon: containerd, its runc shim and runc, the way a
// Kubernetes node runs containers without the CRI), and rootless podman as a user the test makes
// (native overlay storage where the kernel allows it, else vfs; runc; on this machine's hybrid
// cgroup v1 the container gets no cgroup of its own).
// Traced from the host as root, each result against the program's own account: a C program's
// known 3:1 CPU split, the leak totals a C program prints (memleak injected: no seccomp filter under
// ctr, the default profile's filter allows every call of ours under rootless podman), a C program's own clock of its 3:1 blocked
// time, a JVM's -Xlog:gc and GarbageCollectorMXBeans (by --pid, and by java-gc --all and the JVM
// timeline for a JVM started later); the --json document, the process listing and the CLI's header
// name the container.
//
// The bed (image, fixtures built inside, the daemons and the user) is test/kernel/containerKit.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import type { JvmResult } from '../../extension/protocol/jvm';
import type { MemleakResult } from '../../extension/protocol/memleak';
import type { ContainerInfo } from '../../extension/sys/proc/container';
import { processInfo } from '../../extension/sys/proc/processes';
import { containerCgroup } from '../../extension/sys/proc/containerCgroup';
import { cgroup2Mount, cgroupOfPid } from '../../extension/sys/cgroup';
import { markerLines, repoRoot, sleep, startCli, waitFor } from '../helpers';
import { IMAGE, containerBed, containerdDaemon, containerPrep, lineFollower, rootlessPodman, runqlatMatchesSchedstat, rootlessSkipReason, type Containerd, type Contained, type RootlessPodman } from './containerKit';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const prep = containerPrep();
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const has = (s: ProfileStack, re: RegExp) => s.frames.some((f) => f.function !== null && re.test(f.function));
const countWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => has(s, re)).reduce((n, s) => n + s.count, 0);
const FIXTURES = {
  fixtures: ['c/cpusplit.c', 'c/leakpaths.c', 'c/offcpuwait.c', 'java/GcWorkload.java'],
  build:
    'gcc -g -O0 -fno-omit-frame-pointer -o /app/cpusplit /app/cpusplit.c && ' +
    'gcc -g -O2 -fno-omit-frame-pointer -o /app/leakpaths /app/leakpaths.c && ' +
    'gcc -g -O1 -fno-omit-frame-pointer -pthread -o /app/offcpuwait /app/offcpuwait.c && ' +
    'javac -d /app /app/GcWorkload.java',
};

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

/**
 * memleak --pid on leakpaths in the container: the bytes at each of its two malloc lines equal the
 * totals it printed, in the mode its seccomp filter leaves (inject without one, else uprobes on
 * the container's own libc).
 */
async function leakTotals(c: Contained, mode: 'inject' | 'uprobe', want: ContainerInfo, t: { diagnostic(s: string): void }) {
  const seccomp = /^Seccomp:\s+(\d)/m.exec(fs.readFileSync(`/proc/${c.hostPid}/status`, 'utf8'))?.[1];
  const t0 = Date.now();
  const cli = startCli(['memleak', '--pid', String(c.hostPid), '--json', '--verbose', '--top', '100', '--interval', '0.5']);
  assert.ok(await waitFor(() => /memleak: injected |attached in/.test(cli.stderr()) || cli.child.exitCode !== null, 30_000), `not attached: ${cli.stderr()}`);
  const attachMs = Date.now() - t0;
  const line = lineFollower(c);
  c.send('go');
  const [, b, cc] = await line(/^leaked b=(\d+) c=(\d+)/);
  // stopped while it lives (it waits for its input to end): the report needs no exit
  await sleep(700);
  cli.child.kill('SIGINT');
  const r = await cli.done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as MemleakResult;
  const marks = markerLines(path.join(repoRoot, 'test/fixtures/c/leakpaths.c'), /\/\* (ALLOC-[BC]) \*\//);
  const at = (name: string) => doc.stacks.filter((s) => s.frames[0]?.file === '/app/leakpaths.c' && s.frames[0].line === marks.get(name)).reduce((n, s) => n + s.bytes, 0);
  const elsewhere = doc.stacks.filter((s) => s.frames[0]?.file === '/app/leakpaths.c' && ![marks.get('ALLOC-B'), marks.get('ALLOC-C')].includes(s.frames[0].line ?? -1));
  t.diagnostic(`Seccomp ${seccomp}, mode ${doc.mode}: ours ALLOC-B ${at('ALLOC-B')} B, ALLOC-C ${at('ALLOC-C')} B; the program printed b=${b} c=${cc}; ${doc.allocationsSeen ?? '-'} allocations seen; attached in ${attachMs} ms`);
  assert.equal(doc.mode, mode, r.stderr);
  if (seccomp === '2') assert.match(r.stderr, /seccomp filter/i, mode === 'inject' ? 'the filter was read' : 'the fallback from injection says why');
  if (mode === 'uprobe') assert.match(r.stderr, /probing \/usr\/lib\/x86_64-linux-gnu\/libc\.so\.6 through \/proc\/\d+\/(map_files|root)/);
  assert.equal(at('ALLOC-B'), Number(b), "ALLOC-B's bytes: ours and the program's own total");
  assert.equal(at('ALLOC-C'), Number(cc), "ALLOC-C's bytes: ours and the program's own total");
  assert.deepEqual(elsewhere.map((s) => s.frames[0].line), [], 'no other line of the program leaks');
  assert.equal(doc.problem, undefined);
  assert.deepEqual((doc as { container?: unknown }).container, want, 'the --json document names the container');
}

/**
 * profile --event offcpu --pid on offcpuwait in the container: the sleeper's and the reader's
 * wait_long share against the program's own clock over the same window (counters it keeps in
 * /app/SPENT, read from the host's side of the bind mount).
 */
async function offcpuSplit(pid: number, spentFile: string, want: ContainerInfo, t: { diagnostic(s: string): void }) {
  const own = () => {
    const buf = fs.readFileSync(spentFile);
    const n = (i: number) => Number(buf.readBigUInt64LE(8 * i));
    return { long: n(0) + n(2), short: n(1) + n(3) };
  };
  const seconds = 3;
  const cli = startCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--min-block-us', '0', '--duration', String(seconds), '--json', '--verbose']);
  assert.ok(await waitFor(() => /attached via/.test(cli.stderr()) || cli.child.exitCode !== null, 20_000), `not attached: ${cli.stderr()}`);
  const s0 = own();
  await sleep(seconds * 1000);
  const s1 = own();
  const r = await cli.done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as ProfileResult;
  const us = (re: RegExp) => doc.stacks.filter((s) => has(s, re)).reduce((n, s) => n + (s.value ?? 0), 0);
  const [long, short] = [us(/^wait_long$/), us(/^wait_short$/)];
  const truth = (s1.long - s0.long) / (s1.long - s0.long + s1.short - s0.short);
  t.diagnostic(`wait_long ${(long / 1e3).toFixed(0)} ms, wait_short ${(short / 1e3).toFixed(0)} ms: share ${pct(long / (long + short))}; the program's own clock ${pct(truth)} (75 % on an idle machine)`);
  assert.ok(truth > 0.6 && truth < 0.8, `the program spent ${pct(truth)} of its waits in wait_long: not the 3:1 workload`);
  assert.ok(long + short > 0.8 * seconds * 2e6, 'the sleeper and the reader were off CPU most of the window under the two functions');
  assert.ok(Math.abs(long / (long + short) - truth) <= 0.03, `wait_long share ${pct(long / (long + short))} vs the program's own ${pct(truth)}`);
  assert.equal(doc.stacks.flatMap((s) => s.frames).find((f) => f.function === 'wait_long')?.file, '/app/offcpuwait.c');
  assert.ok(doc.stacks.some((s) => s.state === 'lock' && has(s, /^lock_wait$/)), 'the mutex wait is a lock wait');
  assert.deepEqual((doc as { container?: unknown }).container, want, 'the --json document names the container');
}

const containerdMissing = prep.skip ?? (['containerd', 'ctr', 'containerd-shim-runc-v2'].find((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0) && 'containerd is not installed (docker.io brings it: scripts/install-deps.sh --test)');

describe('tracers on programs in containerd containers run by ctr (no docker)', { skip: containerdMissing || false, timeout: 600_000 }, () => {
  let d: Containerd | undefined;
  before(async () => {
    const r = await containerdDaemon();
    if (typeof r === 'string') throw new Error(r);
    d = r;
  });
  const { contained, jvm, work } = containerBed({ ...FIXTURES, containerd: () => d! });
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

  test('memleak --pid: a C program in a ctr container (no seccomp filter: injected), its leaks\' lines and bytes as it prints them', { timeout: 90_000 }, async (t) => {
    const c = await contained(['/app/leakpaths']);
    await leakTotals(c, 'inject', want(c.name), t);
  });

  test('profile --event offcpu --pid: a C program in a ctr container, its 3:1 blocked-time split by its own clock', { timeout: 90_000 }, async (t) => {
    const c = await contained(['/app/offcpuwait', '/app/spent-ctr']);
    await offcpuSplit(c.hostPid, path.join(work, 'spent-ctr'), want(c.name), t);
  });

  test('java-gc --all and the JVM timeline: a JVM started later in a new ctr container, every pause its -Xlog:gc logs', { timeout: 120_000 }, async (t) => {
    const all = startCli(['java-gc', '--all', '--json', '--verbose']);
    let timeline: ReturnType<typeof startCli> | undefined;
    try {
      assert.ok(await waitFor(() => all.stderr().includes('looking for new JVMs') || all.child.exitCode !== null, 30_000), `--all did not start: ${all.stderr()}`);
      const j = await jvm(2, 128, 3000);
      // the timeline attaches while --all finds the JVM
      timeline = startCli(['jvm', '--pid', String(j.hostPid), '--frequency', '49', '--json', '--verbose']);
      const tl = timeline;
      assert.ok(await waitFor(() => new RegExp(`attached to .* as pid ${j.hostPid} maps it`).test(all.stderr()), 10_000), `the container's libjvm.so was not attached: ${all.stderr()}`);
      assert.ok(await waitFor(() => all.stderr().includes(`pid ${j.hostPid}: its own counters (`), 10_000), `counters not read: ${all.stderr()}`);
      assert.ok(await waitFor(() => /jvm: GC, run-queue and CPU tracers attached/.test(tl.stderr()) || tl.child.exitCode !== null, 30_000), `the timeline did not attach: ${tl.stderr()}`);
      j.send('go');
      const own = await j.done;
      await sleep(1500); // both look at it while it lingers
      all.child.kill('SIGINT');
      tl.child.kill('SIGINT');
      const [ra, rt] = [await all.done, await tl.done];
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(rt.code, 0, rt.stderr);
      const gc = JSON.parse(ra.stdout) as JavaGcResult;
      const res = JSON.parse(rt.stdout) as JvmResult;
      const n = (events: { collector: string }[], collector: string) => events.filter((e) => e.collector === collector).length;
      const mine = gc.events.filter((e) => e.pid === j.hostPid);
      const check = gc.jvmCounts?.find((x) => x.pid === j.hostPid);
      t.diagnostic(`-Xlog:gc: young ${own.logYoung} full ${own.logFull}; java-gc --all ${n(mine, 'Copy')}/${n(mine, 'MarkSweepCompact')}; timeline ${n(res.gc, 'Copy')}/${n(res.gc, 'MarkSweepCompact')}; ${check?.message}`);
      assert.ok(own.young > 5 && own.full >= 2, 'the workload collects');
      assert.equal(own.logYoung + own.logFull, own.young + own.full, "-Xlog:gc and the JVM's beans agree");
      for (const [what, events] of [['java-gc --all', mine], ['the timeline', res.gc]] as const) {
        assert.equal(n(events, 'Copy'), own.logYoung, `${what}: young pauses against -Xlog:gc`);
        assert.equal(n(events, 'MarkSweepCompact'), own.logFull, `${what}: full pauses against -Xlog:gc`);
      }
      assert.equal(check?.verdict, 'agree', check?.message);
    } finally {
      for (const cli of [all, timeline]) if (cli && cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
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
  const { contained, jvm, work } = containerBed({ ...FIXTURES, rootless: () => u! });
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
    const index = spawnSync('sh', ['-c', `ls ${u!.home}/.local/share/containers/storage/${u!.driver}-containers/containers.json`], { encoding: 'utf8' }).stdout.trim();
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

  // One container for the leak and the waits (a rootless start on vfs storage copies the image):
  // leakpaths is its main process, offcpuwait its child.
  let pair: Promise<{ leak: Contained; waiter: number; want: ContainerInfo }> | undefined;
  const leakAndWaits = () =>
    (pair ??= (async () => {
      const leak = await contained(['sh', '-c', '/app/offcpuwait /app/spent-rootless & exec /app/leakpaths']);
      let waiter = 0;
      const children = () => fs.readFileSync(`/proc/${leak.hostPid}/task/${leak.hostPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      assert.ok(await waitFor(() => /^ready \d+$/m.test(leak.out()) && (waiter = children().find((p) => fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'offcpuwait') ?? 0) > 0, 20_000), `offcpuwait did not start beside leakpaths: ${leak.out()}`);
      const id = spawnSync(...u!.command(['inspect', '--format', '{{.Id}}', leak.name]), { encoding: 'utf8' }).stdout.trim();
      return { leak, waiter, want: { runtime: 'podman', id, name: leak.name, image: IMAGE } };
    })());

  test('memleak --pid: a C program in a rootless container (its default seccomp filter allows our calls: injected), its leaks\' lines and bytes as it prints them', { timeout: 90_000 }, async (t) => {
    if (refused) return t.skip(refused);
    const { leak, want } = await leakAndWaits();
    await leakTotals(leak, 'inject', want, t);
  });

  test('profile --event offcpu --pid: a C program in a rootless container, its 3:1 blocked-time split by its own clock', { timeout: 90_000 }, async (t) => {
    if (refused) return t.skip(refused);
    const { waiter, want } = await leakAndWaits();
    await offcpuSplit(waiter, path.join(work, 'spent-rootless'), want, t);
  });

  // This hybrid host gives a rootless container no cgroup of its own; on cgroup v2 with systemd its
  // processes sit in user@UID.service/user.slice/libpod-ID.scope. The processes of the running
  // container are moved into that path in this host's real cgroup2 hierarchy (no systemd here owns
  // it), and then named and selected by it.
  test('cgroup v2: a rootless container in the path podman gives it under systemd is named and selected by it (runqlat --container)', { timeout: 60_000 }, async (t) => {
    if (refused) return t.skip(refused);
    const root = cgroup2Mount();
    if (!root) return t.skip('no cgroup2 hierarchy is mounted here');
    const { leak, waiter, want } = await leakAndWaits();
    const id = want.id;
    assert.match(id, /^[0-9a-f]{64}$/);
    const segs = ['user.slice', `user-${u!.uid}.slice`, `user@${u!.uid}.service`, 'user.slice', `libpod-${id}.scope`];
    const dir = `/${segs.join('/')}`;
    const was = [leak.hostPid, waiter].map((p) => cgroupOfPid(p)!);
    const made = segs.map((_, i) => path.join(root, ...segs.slice(0, i + 1))).filter((d) => !fs.existsSync(d));
    for (const d of made) fs.mkdirSync(d);
    try {
      for (const p of [leak.hostPid, waiter]) fs.writeFileSync(path.join(root, dir, 'cgroup.procs'), String(p));
      assert.equal(cgroupOfPid(waiter), dir);
      const cg = containerCgroup(leak.name);
      t.diagnostic(`${cg.label}: cgroup ${cg.cgroupPath} (level ${cg.level}); before the move ${was.join(', ')}`);
      assert.equal(cg.cgroupPath, dir);
      assert.deepEqual({ runtime: cg.container.runtime, id: cg.container.id, name: cg.container.name }, { runtime: 'podman', id, name: leak.name });
      // selected in the kernel by that cgroup: the waits of its two processes, as many as their timeslices
      await runqlatMatchesSchedstat(leak.name, 2, () => [leak.hostPid, waiter], 1, t);
    } finally {
      for (const [i, p] of [leak.hostPid, waiter].entries()) {
        try {
          fs.writeFileSync(path.join(root, was[i], 'cgroup.procs'), String(p));
        } catch {
          /* it ended */
        }
      }
      for (const d of made.reverse()) fs.rmdirSync(d);
    }
  });
});
