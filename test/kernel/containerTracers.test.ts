// CPU, off-CPU, Java locks, Java heap and the JVM timeline on programs in real containers (podman
// + runc, an image built from Debian's packages with its own OpenJDK 17, gcc and libc: other inodes
// than the host's files of the same path), traced from the host as root. Each result is compared
// with the program's known shares or its own counters: a C program whose threads split CPU 3:1
// (and blocked time 3:1) between two functions, a JVM splitting CPU 3:1 between two methods, a
// JVM timing its own lock waits, a JVM counting its own allocation bytes per site, a JVM whose
// forced GCs are known. The programs are built inside the image, under /app, a path the host does
// not have: every file:line comes from the container's files.
//
// The bed (image, containers, fixtures built inside) is test/kernel/containerKit.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import type { JavaHeapResult } from '../../extension/protocol/javaHeap';
import type { JvmResult } from '../../extension/protocol/jvm';
import { agentSplitShare, markerLines, repoRoot, sleep, startCli, waitFor } from '../helpers';
import { IMAGE, containerBed, containerPrep, lineFollower, podman, runqlatMatchesSchedstat, timeslices } from './containerKit';
import { processInfo } from '../../extension/sys/proc/processes';
import { containerCgroup, listContainers } from '../../extension/sys/proc/containerCgroup';
import { cgroup2Mount } from '../../extension/sys/cgroup';
import type { HistResult } from '../../extension/protocol/histogram';
import type { MemleakResult } from '../../extension/protocol/memleak';
import path from 'node:path';

const prep = containerPrep();

const has = (s: ProfileStack, re: RegExp) => s.frames.some((f) => f.function !== null && re.test(f.function));
const countWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => has(s, re)).reduce((n, s) => n + s.count, 0);
const usWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => has(s, re)).reduce((n, s) => n + (s.value ?? 0), 0);
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/** A --json document names the container its target ran in as podman does: runtime, name, full id, image. */
const containerId = (name: string) => podman(['inspect', '-f', '{{.Id}}', name], 30_000).stdout.trim();
function assertNamesContainer(doc: unknown, name: string, id = containerId(name)): void {
  assert.match(id, /^[0-9a-f]{64}$/);
  assert.deepEqual((doc as { container?: unknown }).container, { runtime: 'podman', id, name, image: IMAGE }, `the document names container ${name}`);
}

/** Each thread's run-queue wait (ns) and timeslices run so far (/proc/PID/task/TID/schedstat). */
function threadSched(pid: number): Map<number, { delayNs: number; slices: number }> {
  const m = new Map<number, { delayNs: number; slices: number }>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const [, delay, slices] = fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
      m.set(Number(tid), { delayNs: delay, slices });
    } catch {
      /* the thread ended */
    }
  }
  return m;
}

/**
 * A thread's off-CPU share in `long` against what its waits make it: each sleep of [longMs,
 * shortMs] lasts that long plus the wait for a CPU after waking (its mean from schedstat over the
 * session: on a loaded machine that is milliseconds, and it moves a 3:1 split towards 1:1).
 */
function sharePerSchedstat(stacks: ProfileStack[], long: RegExp, short: RegExp, [longMs, shortMs]: [number, number], a: { delayNs: number; slices: number }, b: { delayNs: number; slices: number }, t: { diagnostic(s: string): void }) {
  const doc = { stacks } as ProfileResult;
  const [l, s] = [usWith(doc, long), usWith(doc, short)];
  const d = (b.delayNs - a.delayNs) / Math.max(1, b.slices - a.slices) / 1e6;
  const expected = (longMs + d) / (longMs + shortMs + 2 * d);
  t.diagnostic(`one thread: ${(l / 1e3).toFixed(0)} ms vs ${(s / 1e3).toFixed(0)} ms, share ${pct(l / (l + s))}; its mean wait for a CPU after waking ${d.toFixed(2)} ms, so ${pct(expected)} expected (${pct(longMs / (longMs + shortMs))} on an idle machine)`);
  return { ours: l / (l + s), expected };
}

describe('CPU, off-CPU and JVM tracers on programs in real containers', { skip: prep.skip, timeout: 600_000 }, () => {
  const { contained } = containerBed({
    fixtures: ['c/cpusplit.c', 'c/offcpuwait.c', 'c/arenaalloc.c', 'java/AgentSplit.java', 'java/LockContention.java', 'java/HeapSites.java', 'java/GcPhases.java', 'java/FixtureRun.java', 'java/OffcpuWaits.java'],
    build:
      'gcc -g -O0 -fno-omit-frame-pointer -o /app/cpusplit /app/cpusplit.c && ' +
      'gcc -g -O1 -fno-omit-frame-pointer -pthread -o /app/offcpuwait /app/offcpuwait.c && ' +
      'gcc -g -O1 -o /app/arenaalloc /app/arenaalloc.c && ' +
      'javac -d /app /app/AgentSplit.java /app/LockContention.java /app/HeapSites.java /app/GcPhases.java /app/FixtureRun.java /app/OffcpuWaits.java',
  });

  test('the image', (t) => {
    t.diagnostic(prep.note);
    assert.equal(fs.existsSync('/app'), false, 'the host has /app: the programs\' paths would not prove they come from the container');
  });

  test('profile --pid: a C program in a container, 3:1 CPU split with file:line from its own binary', { timeout: 90_000 }, async (t) => {
    const c = await contained(['sh', '-c', 'echo ready; exec /app/cpusplit 60']);
    const r = await startCli(['profile', '--pid', String(c.hostPid), '--frequency', '499', '--duration', '5', '--json']).done;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const a = countWith(doc, /^hot_a$/);
    const b = countWith(doc, /^hot_b$/);
    t.diagnostic(`hot_a ${a}, hot_b ${b}: hot_a's share ${pct(a / (a + b))} (known 75 %), ${doc.samples} samples`);
    assert.ok(doc.samples >= 300, `only ${doc.samples} samples in 5 s at 499 Hz`);
    // the samples against the program's own CPU time (utime + stime) over the session
    t.diagnostic(doc.cpuCheck?.message ?? 'no CPU check');
    assert.equal(doc.cpuCheck?.verdict, 'agree', doc.cpuCheck?.message);
    // within 3 % on an idle machine; at load 20 (others' tests) up to 25 % more samples than its CPU time implies, never fewer
    assert.ok(doc.cpuCheck.sampled >= 0.9 * doc.cpuCheck.expected!, 'no fewer samples than its CPU time implies');
    assert.equal(doc.problem, undefined);
    assert.ok(a + b >= 0.9 * doc.samples, 'nearly all samples are in the two functions');
    assert.ok(Math.abs(a / (a + b) - 0.75) <= 0.05, `hot_a's share ${pct(a / (a + b))}, known 75 % ± 5`);
    for (const [fn, lines] of [['hot_a', [11, 12, 13]], ['hot_b', [17, 18, 19]]] as const) {
      const leaf = doc.stacks.find((s) => s.frames[0]?.function === fn)!.frames[0];
      assert.equal(leaf.file, '/app/cpusplit.c', `${fn}'s source file as the container's compiler named it`);
      assert.ok((lines as readonly number[]).includes(leaf.line!), `${fn} at line ${leaf.line}`);
      assert.match(leaf.module ?? '', /\/app\/cpusplit$/);
    }
    const main = doc.stacks.find((s) => s.frames[0]?.function === 'hot_a')!;
    assert.equal(main.frames[1].function, 'main');
    assertNamesContainer(doc, c.name);
  });

  test('the process listing and the CLI header name the container (runtime, name, image) beside the pid', { timeout: 60_000 }, async (t) => {
    const c = await contained(['sh', '-c', 'echo ready; exec /app/cpusplit 30']);
    const info = processInfo(c.hostPid);
    t.diagnostic(`listing: ${info?.container}`);
    assert.equal(info?.container, `podman: ${c.name}, image ${IMAGE}`);
    assert.equal(processInfo(process.pid)?.container, undefined, 'a host process names no container');
    const r = await startCli(['profile', '--pid', String(c.hostPid), '--duration', '1']).done;
    assert.equal(r.code, 0, r.stderr);
    t.diagnostic(r.stderr.split('\n').find((l) => l.startsWith('Sampling')) ?? r.stderr);
    assert.ok(r.stderr.includes(`Sampling pid ${c.hostPid} (podman: ${c.name}, image ${IMAGE}) at`), r.stderr);
  });

  test('runqlat and cpudist --container: only the container\'s tasks, as many waits as their own schedstat counts', { timeout: 90_000 }, async (t) => {
    // three busy processes on two CPUs wait in the run queue all the time; the other container sleeps
    const busy = await contained(['sh', '-c', 'for i in 1 2 3; do /app/cpusplit 40 & done; echo ready; wait']);
    const idle = await contained(['sh', '-c', 'echo ready; exec sleep 60']);
    const cg = containerCgroup(busy.name);
    t.diagnostic(`${cg.label}: cgroup ${cg.cgroupPath}`);
    // the editor's container scope lists it from the same scan, with its names and processes
    const listed = listContainers().find((l) => l.container.name === busy.name);
    assert.deepEqual(listed && { ...listed, processes: listed.processes >= 4 }, { container: { runtime: 'podman', id: containerId(busy.name), name: busy.name, image: IMAGE }, label: `podman: ${busy.name}, image ${IMAGE}`, processes: true });
    // the processes of its cgroup and those below it
    const procs = (dir = path.join(cgroup2Mount()!, cg.cgroupPath)): number[] => [
      ...fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number),
      ...fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).flatMap((d) => procs(path.join(dir, d.name))),
    ];
    const res = await runqlatMatchesSchedstat(busy.name, 4, procs, 3, t);
    assertNamesContainer(res, busy.name);
    // cpudist: each run on a CPU of the container's threads, the same timeslices
    const d0 = timeslices(procs());
    const dist = await startCli(['cpudist', '--container', busy.name, '--duration', '3', '--json']).done;
    const d1 = timeslices(procs());
    assert.equal(dist.code, 0, dist.stderr);
    const runs = (JSON.parse(dist.stdout) as HistResult).histograms.reduce((n, h) => n + h.count, 0);
    assertNamesContainer(JSON.parse(dist.stdout), busy.name);
    t.diagnostic(`cpudist: ${runs} runs; schedstat: ${d1 - d0} timeslices (the window includes cpudist's start-up)`);
    assert.ok(runs > 0 && runs <= d1 - d0 + 5, `cpudist's runs ${runs} are the container's (at most its ${d1 - d0} timeslices)`);
    const quiet = await startCli(['runqlat', '--container', idle.name, '--duration', '2', '--json']).done;
    assert.equal(quiet.code, 0, quiet.stderr);
    const q = (JSON.parse(quiet.stdout) as HistResult).histograms.reduce((n, h) => n + h.count, 0);
    t.diagnostic(`the sleeping container: ${q} waits`);
    assert.ok(q <= 5, 'a sleeping container waits for no CPU');
    const none = await startCli(['runqlat', '--container', 'no-such-container-here', '--duration', '1']).done;
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no running container is named "no-such-container-here"/);
  });

  test('biolatency --container: the direct writes a container starts, one request each', { timeout: 90_000 }, async (t) => {
    const writes = 300;
    const c = await contained(['sh', '-c', `echo ready; read x; dd if=/dev/zero of=/app/dd-${process.pid} bs=4k count=${writes} oflag=direct 2>/dev/null; echo done`]);
    const idle = await contained(['sh', '-c', 'echo ready; exec sleep 60']);
    const id = containerId(c.name); // the container is gone (--rm) once dd is done
    const cli = startCli(['biolatency', '--container', c.name, '--per-process', '--json', '--verbose']);
    const quiet = startCli(['biolatency', '--container', idle.name, '--json', '--verbose']);
    assert.ok(await waitFor(() => [cli, quiet].every((x) => /biolatency: attached via/.test(x.stderr()) || x.child.exitCode !== null), 20_000), cli.stderr() + quiet.stderr());
    c.send('go');
    assert.ok(await waitFor(() => c.out().includes('done'), 60_000), `dd did not finish: ${c.out()}`);
    await sleep(500);
    cli.child.kill('SIGINT');
    quiet.child.kill('SIGINT');
    const [r, q] = [await cli.done, await quiet.done];
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as HistResult;
    // every request the container's tasks started (its shell starts none): once a CI run named the
    // key "sh" where dd's tid made them, so the count is not tied to the name
    const dd = res.histograms.reduce((n, h) => n + h.count, 0);
    const idleCount = (JSON.parse(q.stdout) as HistResult).histograms.reduce((n, h) => n + h.count, 0);
    t.diagnostic(`biolatency: ${dd} requests in the container (${res.histograms.map((h) => `${h.comm} ${h.count}`).join(', ')}) for its ${writes} direct 4 KiB writes; the sleeping container ${idleCount}`);
    // each O_DIRECT write is one request from dd; the file system's journal is written by its own threads
    // one per O_DIRECT write, and a few for the new file's own blocks when its writer starts them (305 seen)
    assert.ok(dd >= writes - 3 && dd <= writes + 8, `the container's requests ${dd} for ${writes} direct writes`);
    assert.equal(idleCount, 0, 'the sleeping container started no I/O');
    assertNamesContainer(res, c.name, id);
    assertNamesContainer(JSON.parse(q.stdout), idle.name);
  });

  test('memleak --pid: a program in a container allocating from its own arena — "saw nothing" is an error naming the cause', { timeout: 60_000 }, async (t) => {
    const c = await contained(['/app/arenaalloc', '30']);
    const r = await startCli(['memleak', '--pid', String(c.hostPid), '--duration', '3', '--json']).done;
    t.diagnostic(r.stderr.split('\n').find((l) => l.includes('error:')) ?? r.stderr);
    assert.equal(r.code, 1, `exit 1 when nothing was seen while it ran: ${r.stderr}`);
    const res = JSON.parse(r.stdout) as MemleakResult;
    assert.equal(res.allocationsSeen, 0);
    assertNamesContainer(res, c.name);
    assert.match(res.problem ?? '', /no allocation was seen in pid \d+ while it ran \(\d+ ms of CPU, \d+ minor page faults: it touched new memory during the session\)/);
    assert.match(r.stderr, /ebpf-studio: error: .*--allocator-lib PATH/);
  });

  test('profile --event offcpu --pid: a C program in a container, 3:1 blocked-time split', { timeout: 90_000 }, async (t) => {
    const c = await contained(['/app/offcpuwait']);
    const before = threadSched(c.hostPid);
    const r = await startCli(['profile', '--pid', String(c.hostPid), '--event', 'offcpu', '--min-block-us', '0', '--duration', '5', '--json']).done;
    const after = threadSched(c.hostPid);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const long = usWith(doc, /^wait_long$/);
    const short = usWith(doc, /^wait_short$/);
    t.diagnostic(`sleeper and reader: wait_long ${(long / 1e3).toFixed(0)} ms, wait_short ${(short / 1e3).toFixed(0)} ms: share ${pct(long / (long + short))} (75 % plus the wake-up delays)`);
    assert.ok(long + short > 4e6, 'the sleeper and reader were off CPU most of 5 s under the two functions');
    // the sleeper alone, against its sleeps (90 ms and 30 ms) each lengthened by its own mean run-queue wait after waking
    const sleeper = (s: ProfileStack) => has(s, /^block_sleep$/);
    const tid = doc.stacks.find((s) => sleeper(s) && has(s, /^wait_long$/))!.tid;
    const share = sharePerSchedstat(doc.stacks.filter(sleeper), /^wait_long$/, /^wait_short$/, [90, 30], before.get(tid)!, after.get(tid)!, t);
    assert.ok(Math.abs(share.ours - share.expected) <= 0.05, `the sleeper's wait_long share ${pct(share.ours)}, expected ${pct(share.expected)}`);
    const frame = doc.stacks.flatMap((s) => s.frames).find((f) => f.function === 'wait_long')!;
    assert.equal(frame.file, '/app/offcpuwait.c');
    assert.ok(doc.stacks.some((s) => s.state === 'lock' && has(s, /^lock_wait$/)), 'the mutex wait is a lock wait');
    assertNamesContainer(doc, c.name);
  });

  test('profile --java agent --pid: a JVM in a container, Java frames in its 3:1 split', { timeout: 120_000 }, async (t) => {
    const c = await contained(['sh', '-c', 'echo ready; exec java -cp /app AgentSplit 90']);
    await sleep(2000); // heavy/light/mix compiled
    const from = c.out().length;
    const r = await startCli(['profile', '--pid', String(c.hostPid), '--java', 'agent', '--frequency', '299', '--duration', '8', '--json', '--verbose']).done;
    const truth = agentSplitShare(c.out(), from);
    assert.ok(truth !== undefined, `the JVM printed no split: ${c.out().slice(-500)}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Java agent started/);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const heavy = countWith(doc, /^AgentSplit\.heavy$/);
    const light = countWith(doc, /^AgentSplit\.light$/);
    t.diagnostic(`heavy ${heavy}, light ${light}: heavy's share ${pct(heavy / (heavy + light))} (the program measured ${pct(truth)}), ${doc.samples} samples`);
    t.diagnostic(doc.cpuCheck?.message ?? 'no CPU check');
    assert.equal(doc.cpuCheck?.verdict, 'agree', 'every thread\'s samples against the JVM\'s own CPU time');
    // ~1200 samples of heavy/light on an idle machine; at load 20 (2 cores) the JVM gets ~0.7 s of CPU
    // in 8 s, ~100 samples: the share is held to 5 points or 2.5 standard errors, whichever is wider
    const n = heavy + light;
    assert.ok(n >= 80, `only ${n} samples in heavy/light`);
    const tolerance = Math.max(0.05, 2.5 * Math.sqrt((truth * (1 - truth)) / n));
    assert.ok(Math.abs(heavy / n - truth) <= tolerance, `heavy's share ${pct(heavy / n)}, the program measured ${pct(truth)} ± ${pct(tolerance)} at ${n} samples`);
    const chain = doc.stacks.find((s) => s.frames[0]?.function === 'AgentSplit.mix' && s.frames[1]?.function === 'AgentSplit.heavy');
    assert.ok(chain, 'a stack with mix called from heavy');
    assert.equal(chain.frames[1].file, 'AgentSplit.java');
    assert.equal(chain.frames[1].line, 21);
    assert.deepEqual(fs.readdirSync(`/proc/${c.hostPid}/root/tmp`).filter((f) => f.startsWith('.ebpf-studio-jvm-')), [], "the agent's sample file is removed from the container's /tmp");
  });

  test('profile --event offcpu --pid: a JVM in a container, 3:1 sleep split by Java method', { timeout: 120_000 }, async (t) => {
    const c = await contained(['java', '-cp', '/app', 'OffcpuWaits', '90000']);
    const before = threadSched(c.hostPid);
    const r = await startCli(['profile', '--pid', String(c.hostPid), '--event', 'offcpu', '--duration', '5', '--json', '--verbose']).done;
    const after = threadSched(c.hostPid);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Java stacks from the agent at each return to user space/);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const sleeper = doc.stacks.filter((s) => s.comm === 'sleeper');
    assert.ok(usWith({ ...doc, stacks: sleeper }, /^OffcpuWaits\.sleep(Long|Short)$/) > 2e6, 'the sleeper was off CPU most of 5 s under Java frames');
    // Thread.sleep(30) and Thread.sleep(10), each lengthened by the thread's own mean run-queue wait after waking
    const share = sharePerSchedstat(sleeper, /^OffcpuWaits\.sleepLong$/, /^OffcpuWaits\.sleepShort$/, [30, 10], before.get(sleeper[0].tid)!, after.get(sleeper[0].tid)!, t);
    assert.ok(Math.abs(share.ours - share.expected) <= 0.05, `sleepLong's share ${pct(share.ours)}, expected ${pct(share.expected)}`);
  });

  test('profile --event lock --pid: a JVM in a container, waits per site against its own timing', { timeout: 150_000 }, async (t) => {
    const c = await contained(['java', '-cp', '/app', 'LockContention', 'ebpf-studio-locks', '120000']);
    const cli = startCli(['profile', '--pid', String(c.hostPid), '--event', 'lock', '--duration', '5', '--json', '--verbose']);
    assert.ok(await waitFor(() => /done monitor-wait/.test(c.out()) || cli.child.exitCode !== null, 90_000), `the workload did not finish: ${cli.stderr()}`);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const truth = /done monitor-wait (\d+) monitor-holder-wait (\d+) park-wait (\d+)/.exec(c.out())!;
    const [monitorUs, parkUs] = [Number(truth[1]) / 1000, Number(truth[3]) / 1000];
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const monitor = usWith(doc, /^LockContention\.enterMonitor$/);
    const park = usWith(doc, /^LockContention\.takeReentrant$/);
    t.diagnostic(`synchronized: ours ${(monitor / 1e3).toFixed(0)} ms, program ${(monitorUs / 1e3).toFixed(0)} ms; ReentrantLock: ours ${(park / 1e3).toFixed(0)} ms, program ${(parkUs / 1e3).toFixed(0)} ms`);
    assert.ok(monitorUs > 1e6 && parkUs > 1e6, `the fixture waited too little to judge: ${c.out()}`);
    assert.ok(Math.abs(monitor - monitorUs) <= 0.05 * monitorUs, 'monitor waits within 5 % of the program\'s timing');
    assert.ok(Math.abs(park - parkUs) <= 0.1 * parkUs, 'park waits within 10 % of the program\'s timing');
    const marks = markerLines(path.join(repoRoot, 'test/fixtures/java/LockContention.java'), /MARK (\w+)/);
    assert.ok(doc.stacks.some((s) => s.frames[0].function === `[lock LockContention$Account held by mon-holder at LockContention.holdMonitor(LockContention.java:${marks.get('holdMonitor')})]`), 'the holder and its line are named');
    assert.deepEqual(fs.readdirSync(`/proc/${c.hostPid}/root/tmp`).filter((f) => f.startsWith('.ebpf-studio-locks-')), [], "the lock tracer's file is removed from the container's /tmp");
    assertNamesContainer(doc, c.name);
  });

  test('memleak --pid: a JVM in a container, allocation shares per site against its own byte counts', { timeout: 120_000 }, async (t) => {
    const c = await contained(['java', '-Xms384m', '-Xmx384m', '-XX:+UseG1GC', '-cp', '/app', 'HeapSites', '1', '150000000', '640']);
    const next = lineFollower(c);
    await next(/^ready$/);
    const cli = startCli(['memleak', '--pid', String(c.hostPid), '--json', '--verbose', '--interval-bytes', '131072']);
    assert.ok(await waitFor(() => /java-heap: sampling every/.test(cli.stderr()) || cli.child.exitCode !== null, 30_000), `the heap sampler did not start: ${cli.stderr()}`);
    c.send('start');
    await next(/^started$/);
    await sleep(5000);
    c.send('stop');
    const m = await next(/^totals A (\d+) B (\d+) C (\d+) L (\d+) leaked (\d+)/);
    await sleep(1000);
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as JavaHeapResult;
    const lines = markerLines(path.join(repoRoot, 'test/fixtures/java/HeapSites.java'), /\/\/ site ([A-Z])\b/);
    const truth: Record<string, number> = { A: Number(m[1]), B: Number(m[2]), C: Number(m[3]), L: Number(m[4]) };
    const ours: Record<string, number> = { A: 0, B: 0, C: 0, L: 0 };
    for (const s of res.allocated) {
      const f = s.frames[0];
      const k = f && /HeapSites\.(churn|leak)$/.test(f.function ?? '') ? [...lines].find(([, l]) => l === f.line)?.[0] : undefined;
      if (k) ours[k] += s.bytes;
    }
    const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
    const share = (o: Record<string, number>, k: string) => (100 * o[k]) / sum(o);
    t.diagnostic(`shares: program ${Object.keys(truth).map((k) => `${k} ${share(truth, k).toFixed(1)}`).join(', ')} | ours ${Object.keys(ours).map((k) => `${k} ${share(ours, k).toFixed(1)}`).join(', ')}; ${res.samples} samples`);
    for (const k of Object.keys(truth)) assert.ok(Math.abs(share(ours, k) - share(truth, k)) <= 5, `site ${k}: ours ${share(ours, k).toFixed(1)} % vs the program's ${share(truth, k).toFixed(1)} %`);
    assert.equal(res.stacks[0]?.frames[0].line, lines.get('L'), 'the leaking line is the top live site');
    assertNamesContainer(res, c.name);
    c.send('exit');
  });

  test('jvm --pid: a JVM in a container, its forced full GCs on the timeline with GC-thread CPU', { timeout: 120_000 }, async (t) => {
    const rounds = 3;
    const c = await contained(['java', '-XX:+UseParallelGC', '-XX:ParallelGCThreads=2', '-Xms512m', '-Xmx512m', '-cp', '/app', 'GcPhases', String(rounds), '800', '200']);
    const id = containerId(c.name); // the container is gone (--rm) once the JVM exits
    const cli = startCli(['jvm', '--pid', String(c.hostPid), '--frequency', '199', '--slice-ms', '100', '--json', '--verbose']);
    assert.ok(await waitFor(() => /jvm: GC, run-queue and CPU tracers attached/.test(cli.stderr()) || cli.child.exitCode !== null, 30_000), `not attached: ${cli.stderr()}`);
    await sleep(1000);
    c.send('go');
    assert.equal(await c.exited, 0, c.out());
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.trim(), `no result: ${r.stderr}`);
    const res = JSON.parse(r.stdout) as JvmResult;
    const forced = res.gc.filter((e) => e.operation === 'ParallelGCSystemGC' && e.collector === 'PS MarkSweep');
    t.diagnostic(`${res.gc.length} GCs (${forced.length} forced full, the program ran ${rounds}), ${res.cpu.length} CPU slices, ${res.threads.length} threads`);
    assert.equal(forced.length, rounds, 'every System.gc() is on the timeline');
    assert.ok(res.threads.some((x) => x.group === 'gc' && /^GC Thread/.test(x.comm)), 'GC threads named and grouped');
    // CPU samples of the GC threads (stacks carry the thread's name)
    const gcSamples = res.cpu.reduce((n, sl) => n + sl.samples.filter(([i]) => /^GC Thread/.test(res.stacks[i]?.comm ?? '')).reduce((m, [, k]) => m + k, 0), 0);
    const all = res.cpu.reduce((n, sl) => n + sl.samples.reduce((m, [, k]) => m + k, 0), 0);
    t.diagnostic(`${gcSamples} of ${all} CPU samples on GC threads`);
    assert.ok(gcSamples > 0, 'CPU samples of GC threads');
    assertNamesContainer(res, c.name, id);
  });
});
