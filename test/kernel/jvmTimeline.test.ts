// The JVM timeline against a real JVM: GcPhases.java alternates CPU-bound phases on its main
// thread with forced full GCs (Parallel GC, a large live heap of small objects: the GC worker
// threads work while the main thread waits). `ebpf-studio jvm --pid P --json` must see every
// forced full GC; the range around each shows that GC and CPU samples that are mostly the GC's
// threads; the range of a CPU phase shows the main thread's samples and no GC. Also: the session
// file round-trips, and bad targets fail with the right codes. The allocation-rate lane: a JVM
// allocating at a paced rate (HeapSites.java), checked against its own count and the JVM's GC log.
// The off-CPU lanes: threads that wait known ways (OffcpuWaits.java), against /proc schedstat.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fromSessionFile, JvmTimeline, OFF_STATES, toSessionFile, type JvmResult } from '../../extension/model/jvmTimeline';
import { helperJs, kernelSkipReason, repoRoot, runCli, startCli, waitFor } from '../helpers';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import type { JvmUpdate } from '../../extension/model/jvmTimeline';
import { jdk, noJdkReason } from './gcWorkload';
import { formatRate } from '../../extension/model/allocRate';
import { kernelWalksTables } from '../../extension/tracers/cfiTables';
import type { ProfileFrame } from '../../extension/protocol/frames';

const skip = kernelSkipReason() ?? noJdkReason;

/** libjvm's frames down to HotSpot's thread entry, then libc's start_thread. */
function reachesThreadStart(frames: readonly ProfileFrame[]): boolean {
  const entry = frames.findIndex((f) => /^thread_native_entry/.test(f.function ?? '') && /libjvm\.so$/.test(f.module ?? ''));
  return entry > 0 && /libjvm\.so$/.test(frames[entry - 1].module ?? '') && frames.slice(entry + 1).some((f) => f.function === 'start_thread');
}
const ROUNDS = 3;

describe('jvm timeline on a real JVM', { skip }, () => {
  let classDir = '';
  const children: ChildProcess[] = [];
  before(() => {
    classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-jvmt-'));
    const r = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', classDir, ...['GcPhases.java', 'HeapSites.java', 'OffcpuWaits.java'].map((f) => path.join(repoRoot, 'test', 'fixtures', 'java', f))], { encoding: 'utf8' });
    assert.equal(r.status, 0, `javac failed: ${r.stderr}`);
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (classDir) fs.rmSync(classDir, { recursive: true, force: true });
  });

  test('forced full GCs: each range shows its GC and CPU samples of GC threads; a CPU phase shows the main thread', async (t) => {
    const child = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseParallelGC', '-XX:ParallelGCThreads=2', '-Xms512m', '-Xmx512m', '-cp', classDir, 'GcPhases', String(ROUNDS), '800', '200'], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    assert.ok(await waitFor(() => out.includes('ready'), 60_000), 'GcPhases did not start');
    const cli = startCli(['jvm', '--pid', String(child.pid), '--frequency', '199', '--slice-ms', '100', '--range', '0:3600', '--json', '--verbose']);
    // All three tracers, the CPU sampler last: a GC before it would have no samples in its range.
    assert.ok(await waitFor(() => /jvm: GC, run-queue and CPU tracers attached/.test(cli.stderr()), 30_000), `not attached: ${cli.stderr()}`);
    await new Promise((r) => setTimeout(r, 1000));
    child.stdin!.write('go\n');
    assert.equal(await exited, 0, out);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as JvmResult;
    assert.equal(res.tracer, 'jvm');
    assert.equal(res.pid, child.pid);
    const tl = JvmTimeline.fromResult(res);
    // --range with --json: the range's statistics ride along (here the whole session).
    assert.equal(res.range?.gc.length, res.gc.length);
    assert.equal(res.range?.cpuTotal, res.cpu.reduce((n, c) => n + c.samples.reduce((m, [, k]) => m + k, 0), 0));

    // Threads: named and grouped from HotSpot's names.
    const main = res.threads.find((x) => x.tid === child.pid);
    assert.ok(main, 'the main thread is listed');
    assert.equal(main.group, 'application');
    assert.ok(res.threads.some((x) => x.group === 'gc' && /^GC Thread/.test(x.comm)), `Parallel GC worker threads are grouped as GC: ${JSON.stringify(res.threads.map((x) => x.comm))}`);
    assert.ok(res.threads.some((x) => x.group === 'compiler'));
    assert.ok(res.threads.some((x) => x.group === 'vm'));

    // Parallel's System.gc() scavenges first (ScavengeBeforeFullGC), then runs PS MarkSweep.
    const forced = res.gc.filter((e) => e.operation === 'ParallelGCSystemGC' && e.collector === 'PS MarkSweep');
    assert.equal(forced.length, ROUNDS, `every System.gc() is on the timeline: ${JSON.stringify(res.gc.map((e) => [e.collector, e.operation, e.durationNs]))}`);

    // One clock: each forced GC lies inside the session and inside a safepoint; CPU slices and
    // run-queue slices cover the session.
    for (const e of forced) assert.ok(e.timestampNs > res.startNs - 5e9 && e.timestampNs < res.endNs, 'GC time on the session clock');
    if (res.safepointsAvailable) for (const e of forced) assert.ok(res.safepoints.some((s) => s.timestampNs <= e.timestampNs && e.timestampNs + e.durationNs <= s.timestampNs + s.durationNs), 'the GC is inside a safepoint');
    assert.ok(res.cpu.length > 5 && res.runq.length > 5);

    let gcShare = 0;
    // GC and VM threads run libjvm and libc, built without frame pointers: the kernel's table walk
    // takes their stacks through libjvm up to the thread's start.
    const vmStacks = { samples: 0, whole: 0 };
    for (const e of forced) {
      // The range a user would drag around the GC: from its start to its end.
      const range = tl.range(e.timestampNs, e.timestampNs + e.durationNs);
      assert.ok(range.gc.includes(e), 'the selected range shows the GC');
      const gcSamples = range.cpu.filter((g) => g.group === 'gc' || g.group === 'vm').reduce((n, g) => n + g.samples, 0);
      t.diagnostic(`GC ${(e.durationNs / 1e6).toFixed(0)} ms: ${range.cpuTotal} samples, ${gcSamples} of GC/VM threads; ${JSON.stringify(range.cpuThreads.slice(0, 4))}`);
      assert.ok(range.cpuTotal > 0, 'CPU samples in the range of a full GC');
      gcShare += gcSamples / range.cpuTotal;
      // The flame graph of that range is made of the GC threads' stacks.
      assert.ok(range.stacks.some((s) => /GC Thread|VM Thread/.test(s.comm)));
      for (const s of range.stacks.filter((x) => /GC Thread|VM Thread/.test(x.comm))) {
        vmStacks.samples += s.count;
        if (reachesThreadStart(s.frames)) vmStacks.whole += s.count;
      }
    }
    const vmExample = res.stacks.find((s) => /GC Thread|VM Thread/.test(s.comm) && reachesThreadStart(s.frames));
    t.diagnostic(`GC/VM thread samples in the forced GCs: ${vmStacks.whole} of ${vmStacks.samples} reach the thread's start through libjvm; e.g. ${vmExample?.frames.map((f) => f.function ?? '?').join(' < ')}`);
    if (kernelWalksTables()) assert.ok(/cfi: tables of pid \d+ loaded[^]*cfi: tables of pid \d+ loaded/.test(r.stderr), `the CPU and off-CPU parts walk unwind tables in the kernel: ${r.stderr}`);
    assert.ok(vmStacks.whole >= 0.9 * vmStacks.samples, `${vmStacks.whole} of ${vmStacks.samples} GC/VM thread samples reach thread_native_entry and start_thread through libjvm`);
    gcShare /= forced.length;
    // Off CPU: the thread that called System.gc() waits out each forced collection (a futex wait
    // for the VM thread), counted in the slice in which it woke, which overlaps the GC.
    assert.ok(res.offcpu?.length, `off-CPU slices: ${res.offcpuReason ?? 'none'}`);
    for (const e of forced) {
      const app = tl.range(e.timestampNs, e.timestampNs + e.durationNs).offcpu.find((g) => g.group === 'application');
      const waited = app ? app.us.reduce((a, b) => a + b, 0) * 1000 : 0;
      assert.ok(waited >= 0.8 * e.durationNs, `the application's threads were off CPU ${(waited / 1e6).toFixed(0)} ms around a ${(e.durationNs / 1e6).toFixed(0)} ms forced GC`);
    }
    assert.ok(gcShare >= 0.6, `in the ranges of the forced GCs, ${(gcShare * 100).toFixed(0)} % of the CPU samples are GC threads'`);

    // A CPU phase: the 800 ms before the first forced GC's 300 ms sleep.
    const phaseEnd = forced[0].timestampNs - 350e6;
    const phase = tl.range(phaseEnd - 600e6, phaseEnd);
    // The launcher runs main() on a second thread, also named "java".
    const top = phase.cpuThreads[0];
    const appSamples = phase.cpu.find((g) => g.group === 'application')?.samples ?? 0;
    t.diagnostic(`CPU phase: ${phase.cpuTotal} samples, application ${appSamples}, top ${JSON.stringify(top)}, GCs ${phase.gc.length}`);
    assert.ok(appSamples / Math.max(1, phase.cpuTotal) >= 0.6, 'a CPU phase is the application');
    assert.equal(top.comm, 'java');
    assert.equal(phase.gc.filter((e) => e.kind === 'full').length, 0);
    // Its stacks are symbolized: Java method names from the JVM's perf map, or at least libjvm/native ones.
    assert.ok(phase.stacks.some((s) => s.frames.some((f) => f.function)), 'the range\'s stacks have function names');

    // The session file round-trips.
    const file = JSON.stringify(toSessionFile(res));
    const back = JvmTimeline.fromResult(fromSessionFile(file));
    assert.deepEqual(back.range(forced[0].timestampNs, forced[0].timestampNs + forced[0].durationNs).cpu, tl.range(forced[0].timestampNs, forced[0].timestampNs + forced[0].durationNs).cpu);
  });

  test('through the helper (the editor path): updates stream live on one clock; Stop returns the symbolized session', async () => {
    const child = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseParallelGC', '-Xmx256m', '-cp', classDir, 'GcPhases', '2', '400', '50'], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 60_000), 'GcPhases did not start');
    const helper = spawn(process.execPath, [helperJs], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(helper);
    const conn = createMessageConnection(new StreamMessageReader(helper.stdout!), new StreamMessageWriter(helper.stdin!));
    const updates: JvmUpdate[] = [];
    let ended: proto.SessionEndedParams | undefined;
    conn.onNotification(proto.sessionData, (p) => void updates.push(p.update as JvmUpdate));
    conn.onNotification(proto.sessionEnded, (p) => void (ended = p));
    conn.listen();
    try {
      const s = await conn.sendRequest(proto.sessionStart, { tracer: 'jvm', options: { pid: child.pid!, frequency: 99, sliceMs: 250 } });
      assert.deepEqual(s.targets, [child.pid]);
      assert.ok(await waitFor(() => updates.length >= 2, 3000), 'live updates every slice');
      child.stdin!.write('go\n');
      assert.ok(await waitFor(() => out.includes('done'), 30_000));
      const streamedGcs = () => updates.flatMap((u) => u.gc).length;
      await waitFor(() => streamedGcs() >= 4, 3000);
      // The JVM exits right after "done": the session may have ended by itself (target-exited) first.
      const byStop = ended ? undefined : await conn.sendRequest(proto.sessionStop, { sessionId: s.sessionId }).catch(() => undefined);
      assert.ok(await waitFor(() => ended !== undefined, 5000));
      assert.ok(['stopped', 'target-exited'].includes(ended!.reason), ended!.reason);
      const stopped = (byStop?.result ?? ended!.result) as JvmResult;
      assert.equal(stopped.tracer, 'jvm');
      assert.equal(stopped.gc.length, updates.flatMap((u) => u.gc).length, 'every GC streamed live too');
      assert.ok(stopped.gc.filter((e) => e.operation === 'ParallelGCSystemGC' && e.collector === 'PS MarkSweep').length === 2);
      assert.equal(stopped.cpu.reduce((n, c) => n + c.samples.length, 0), updates.flatMap((u) => u.cpu).reduce((n, c) => n + c.samples.length, 0));
      // One clock: every slice and event lies within the session's span.
      for (const c of stopped.cpu) assert.ok(c.startNs >= stopped.startNs - 1e9 && c.endNs <= stopped.endNs + 1e6);
      for (const r of stopped.runq) assert.ok(r.endNs <= stopped.endNs + 1e6);
      assert.ok(stopped.stacks.some((st) => st.frames.some((f) => f.function)), 'stacks are symbolized at Stop');
    } finally {
      conn.dispose();
      helper.stdin!.end();
      child.kill('SIGKILL');
    }
  });

  test('allocation-rate lane: a JVM allocating a paced 150 MB/s; the lane\'s mean rate vs the program\'s own count and the JVM\'s GC log in the same run', async (t) => {
    // HeapSites: one thread allocating byte/int/char arrays at a paced 150 MB/s (its own counters
    // give the exact bytes between "start" and "stop"); Parallel GC with a 64 MB young generation:
    // a young GC every ~0.3 s. The JVM logs every GC with the heap before and after (-Xlog:gc).
    const log = path.join(classDir, `gc-${Date.now()}.log`);
    const child = spawn(path.join(jdk!.home, 'bin', 'java'), ['-XX:+UseParallelGC', '-Xms256m', '-Xmx256m', '-Xmn64m', `-Xlog:gc:file=${log}`, '-cp', classDir, 'HeapSites', '1', '150000000', '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 60_000), 'HeapSites did not start');
    const cli = startCli(['jvm', '--pid', String(child.pid), '--duration', '6', '--json', '--verbose']);
    assert.ok(await waitFor(() => /jvm: GC, run-queue and CPU tracers attached/.test(cli.stderr()), 30_000), `not attached: ${cli.stderr()}`);
    child.stdin!.write('start\n');
    const t0 = Date.now();
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    child.stdin!.write('stop\n');
    assert.ok(await waitFor(() => /totals A/.test(out), 10_000), out);
    const windowS = (Date.now() - t0) / 1000;
    child.stdin!.write('exit\n');
    const m = /totals A (\d+) B (\d+) C (\d+) L (\d+)/.exec(out)!;
    const truth = (Number(m[1]) + Number(m[2]) + Number(m[3]) + Number(m[4])) / windowS;

    const res = JSON.parse(r.stdout) as JvmResult;
    const tl = JvmTimeline.fromResult(res);
    const ours = tl.range(res.startNs, res.endNs + 1).alloc;
    // The JVM's own accounting: heap before GC n minus heap after GC n-1 over the time between
    // them (each line is logged at the GC's end: "[10.173s] ... Pause Young ... 56M->7M(249M) 0.790ms").
    const gcs = [...fs.readFileSync(log, 'utf8').matchAll(/\[(\d+\.\d+)s\].*Pause Young.* (\d+)M->(\d+)M\(\d+M\) (\d+\.\d+)ms/g)].map((g) => ({ endS: Number(g[1]), before: Number(g[2]) * 2 ** 20, after: Number(g[3]) * 2 ** 20, pauseS: Number(g[4]) / 1000 }));
    let logBytes = 0;
    let logS = 0;
    // from the third GC on: the first ones size the heap
    for (let i = 3; i < gcs.length; i++) {
      logBytes += gcs[i].before - gcs[i - 1].after;
      logS += gcs[i].endS - gcs[i].pauseS - gcs[i - 1].endS;
    }
    const logRate = logBytes / logS;
    t.diagnostic(`allocation rate: lane ${formatRate(ours.rate)} over ${ours.intervals} intervals (${(ours.coveredNs / 1e9).toFixed(1)} s of ${((res.endNs - res.startNs) / 1e9).toFixed(1)} s); the program's count ${formatRate(truth)}; the JVM's GC log ${formatRate(logRate)} over ${gcs.length - 3} intervals`);
    assert.ok(ours.intervals >= 8, `a young GC every ~0.3 s: ${ours.intervals} intervals`);
    assert.ok(Math.abs(ours.rate - truth) <= 0.1 * truth, `the lane's mean rate within 10 % of what the program allocated`);
    assert.ok(Math.abs(ours.rate - logRate) <= 0.1 * logRate, `the lane's mean rate within 10 % of the JVM's GC log`);
    // Each interval of a steady rate reads near it (no interval is off by the pause or a pool mix-up).
    const steady = tl.alloc.intervals.recent().filter((iv) => Math.abs(iv.rate - truth) <= 0.25 * truth).length;
    assert.ok(steady >= 0.8 * tl.alloc.intervals.length, `${steady} of ${tl.alloc.intervals.length} intervals within 25 % of the paced rate`);
    // The heap lane: one point per GC with the three Parallel heap pools.
    assert.equal(tl.alloc.heap.length, res.gc.filter((e) => e.pools.length).length);
    assert.deepEqual(tl.alloc.heap.recent()[tl.alloc.heap.length - 1].pools.map(([name]) => name).sort(), ['PS Eden Space', 'PS Old Gen', 'PS Survivor Space']);
  });

  test('off-CPU lanes: time off CPU per thread and state, against the kernel\'s own per-thread CPU time (/proc/TID/schedstat) in the same run', async (t) => {
    // OffcpuWaits: five application threads that are off CPU nearly all the time (sleeps of
    // 10-30 ms, a contended ReentrantLock and monitor), waking every few ms so that counting each
    // interval when it ends leaves little out. Reference: for each thread, the window minus the
    // CPU time schedstat adds over it (on-CPU ns; run-queue waits count as off CPU, preempted).
    const child = spawn(path.join(jdk!.home, 'bin', 'java'), ['-cp', classDir, 'OffcpuWaits', '60000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 60_000), 'OffcpuWaits did not start');
    const names = ['sleeper', 'monitor-holder', 'monitor-waiter', 'lock-holder', 'lock-waiter'];
    const tids = new Map<number, string>();
    for (const tid of fs.readdirSync(`/proc/${child.pid}/task`).map(Number)) {
      const comm = fs.readFileSync(`/proc/${child.pid}/task/${tid}/comm`, 'utf8').trim();
      if (names.includes(comm)) tids.set(tid, comm);
    }
    assert.equal(tids.size, names.length, `the fixture's threads: ${JSON.stringify([...tids])}`);
    const onCpuNs = () => new Map([...tids.keys()].map((tid) => [tid, Number(fs.readFileSync(`/proc/${child.pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])]));
    const cli = startCli(['jvm', '--pid', String(child.pid), '--duration', '6', '--json', '--verbose']);
    assert.ok(await waitFor(() => /jvm: GC, run-queue and CPU tracers attached/.test(cli.stderr()), 30_000), `not attached: ${cli.stderr()}`);
    const cpu0 = onCpuNs();
    const t0 = process.hrtime.bigint();
    const r = await cli.done;
    const cpu1 = onCpuNs();
    const windowNs = Number(process.hrtime.bigint() - t0);
    child.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as JvmResult;
    assert.ok(res.offcpu && res.offcpu.length >= 4, `off-CPU slices about once a second: ${res.offcpuReason ?? res.offcpu?.length}`);
    // Our figures cover the off-CPU slices (the last read is before the tracers stop).
    const sessionNs = res.offcpu[res.offcpu.length - 1].endNs - res.offcpu[0].startNs;
    const ours = new Map<number, number[]>();
    for (const o of res.offcpu) {
      for (let k = 0; k + 2 < o.rows.length; k += 3) {
        const per = ours.get(o.rows[k]) ?? [0, 0, 0, 0];
        per[o.rows[k + 1]] += o.rows[k + 2];
        ours.set(o.rows[k], per);
      }
    }
    let oursTotal = 0;
    let refTotal = 0;
    for (const [tid, comm] of tids) {
      const per = ours.get(tid) ?? [0, 0, 0, 0];
      const mine = per.reduce((a, b) => a + b, 0) * 1000 / sessionNs;
      const ref = (windowNs - (cpu1.get(tid)! - cpu0.get(tid)!)) / windowNs;
      t.diagnostic(`${comm}: off CPU ${(100 * mine).toFixed(1)} % of the traced time (${OFF_STATES.map((st, i) => `${st} ${(per[i] / 1e3).toFixed(0)} ms`).join(', ')}); schedstat: ${(100 * ref).toFixed(1)} % of the window`);
      assert.equal(tids.size, 5);
      // In a JVM, sleeps, parks and monitor waits are all futex waits: state "lock".
      assert.ok(per[OFF_STATES.indexOf('lock')] >= 0.8 * per.reduce((a, b) => a + b, 0), `${comm}: futex waits are most of its off-CPU time`);
      oursTotal += mine;
      refTotal += ref;
    }
    t.diagnostic(`five threads: off CPU ${(oursTotal).toFixed(2)} thread-s per s (ours), ${(refTotal).toFixed(2)} (schedstat)`);
    assert.ok(Math.abs(oursTotal - refTotal) <= 0.1 * refTotal, `the threads' off-CPU time within 10 % of the kernel's accounting`);
    // The timeline's lanes and ranges read the same figures by thread group.
    const tl = JvmTimeline.fromResult(res);
    const app = tl.range(res.startNs, res.endNs + 1).offcpu.find((g) => g.group === 'application')!;
    assert.ok(app.us.reduce((a, b) => a + b, 0) >= [...tids.keys()].reduce((n, tid) => n + (ours.get(tid) ?? []).reduce((a, b) => a + b, 0), 0));
    assert.ok(tl.offcpuLane('application').recent().length >= 4);
  });

  test('bad targets: not a JVM, no such pid, bad flags', async () => {
    const none = runCli(['jvm', '--pid', '4194000']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no process with pid 4194000/);
    const sleeper = spawn('sleep', ['30']);
    children.push(sleeper);
    const notJvm = runCli(['jvm', '--pid', String(sleeper.pid)]);
    assert.equal(notJvm.code, 4);
    assert.match(notJvm.stderr, /has no libjvm\.so mapped: is it a JVM\?/);
    sleeper.kill('SIGKILL');
    const noPid = runCli(['jvm']);
    assert.equal(noPid.code, 2);
    assert.match(noPid.stderr, /give --pid PID/);
    const badRange = runCli(['jvm', '--pid', '1', '--range', '5:2']);
    assert.equal(badRange.code, 2);
    assert.match(badRange.stderr, /--range takes FROM:TO/);
    const badSlice = runCli(['jvm', '--pid', '1', '--slice-ms', '5']);
    assert.equal(badSlice.code, 2);
    assert.match(badSlice.stderr, /--slice-ms/);
  });
});
