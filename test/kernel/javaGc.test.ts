// Java GC against a real JVM: test/fixtures/java/GcWorkload.java (compiled here) makes steady
// young GCs and a known number of System.gc() full GCs under -XX:+UseSerialGC, then prints the
// GarbageCollectorMXBean counts. The tracer must see exactly those GCs (bpftrace on the same
// probes, when installed, must agree), with plausible pauses and HotSpot's pool names; "all
// JVMs" mode started before the JVM must see them too; bad targets fail fast with the right code.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import { mappedFiles, readMaps } from '../../extension/sys/proc/maps';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import type { JavaGcUpdate } from '../../extension/protocol/javaGc';
import { helperJs, kernelSkipReason, repoRoot, runCli, sleep, startCli, waitFor } from '../helpers';
import { GcWorkloads, jdk, noJdkReason } from './gcWorkload';

const skip = kernelSkipReason() ?? noJdkReason;
const FULL_GCS = 3;

const children: ChildProcess[] = [];
let workloads: GcWorkloads;
const startWorkload = (fullGcs: number, allocMb: number) => workloads.start(fullGcs, allocMb);

/** bpftrace on the same probes, as an independent count; undefined when bpftrace is missing or does not attach. */
async function bpftracePeer(pid: number) {
  const bpftrace = ['/usr/bin/bpftrace', '/usr/sbin/bpftrace'].find((p) => fs.existsSync(p));
  if (!bpftrace) return undefined;
  const lib = mappedFiles(readMaps(pid), /^libjvm\.so$/)[0];
  const script = `usdt:${lib}:hotspot:gc__begin { @s[tid] = nsecs; @f[tid] = arg0; }
usdt:${lib}:hotspot:gc__end /@s[tid]/ { printf("gc %d %d %d\\n", pid, @f[tid], nsecs - @s[tid]); delete(@s[tid]); delete(@f[tid]); }`;
  // "Attaching N probes..." comes before the probes are attached, so a GC right after it would be
  // one the peer misses; with this variable bpftrace says when they are (its runtime tests use it).
  const child = spawn(bpftrace, ['-p', String(pid), '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, __BPFTRACE_NOTIFY_PROBES_ATTACHED: '1' } });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  if (!(await waitFor(() => err.includes('__BPFTRACE_NOTIFY_PROBES_ATTACHED'), 15_000))) {
    child.kill('SIGKILL');
    return undefined;
  }
  return {
    async result() {
      // bpftrace -p ends by itself when the traced pid exits; SIGINT in case it does not.
      await Promise.race([exited, sleep(3000)]);
      child.kill('SIGINT');
      await exited;
      const gcs = out.split('\n').filter((l) => l.startsWith('gc ')).map((l) => l.split(' ').map(Number));
      return { count: gcs.length, full: gcs.filter((g) => g[2] === 1).length };
    },
  };
}

function checkEvents(r: JavaGcResult, pid: number): void {
  const mine = r.events.filter((e) => e.pid === pid);
  for (const e of mine) {
    assert.ok(e.durationNs > 0 && e.durationNs < 5e9, `implausible pause ${e.durationNs} ns`);
    assert.ok(e.tid > 0 && e.tid !== pid, 'GC runs on the VM thread, not the main thread');
    const names = e.pools.map((p) => p.name);
    for (const n of ['Eden Space', 'Survivor Space', 'Tenured Gen']) assert.ok(names.includes(n), `GC at ${e.timestampNs} lacks pool ${n}: ${names.join(', ')}`);
    const eden = e.pools.find((p) => p.name === 'Eden Space')!;
    assert.ok(eden.usedBefore >= eden.usedAfter, 'a GC does not grow eden');
    assert.ok(eden.committedAfter > 0);
  }
  // Young GCs empty eden completely with SerialGC.
  assert.ok(mine.filter((e) => !e.full).every((e) => e.pools.find((p) => p.name === 'Eden Space')!.usedAfter === 0));
}

describe('java-gc tracer on a real JVM', { skip }, () => {
  before(() => {
    workloads = new GcWorkloads();
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    workloads?.dispose();
  });

  test('--pid: every GC the JVM reports, exact full count, ends by itself when the JVM exits', async (t) => {
    const w = await startWorkload(FULL_GCS, 1024);
    const cli = startCli(['java-gc', '--pid', String(w.pid), '--json', '--verbose']);
    assert.ok(await waitFor(() => /attached to .*libjvm\.so/.test(cli.stderr()), 15_000), `not attached: ${cli.stderr()}`);
    const peer = await bpftracePeer(w.pid);
    w.go();
    const jvm = await w.done;
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    // The session ends on its own (pidAlive poll every 500 ms + drain).
    assert.ok(Date.now() - jvm.exitedAt < 3000, `the CLI took ${Date.now() - jvm.exitedAt} ms to notice the exit`);
    const result = JSON.parse(r.stdout) as JavaGcResult;
    assert.equal(result.tracer, 'java-gc');
    assert.deepEqual(result.pids, [w.pid]);
    assert.equal(result.lost, 0);
    assert.equal(jvm.full, FULL_GCS);
    assert.ok(jvm.young >= 10, `the workload made only ${jvm.young} young GCs`);
    assert.equal(result.events.length, jvm.young + jvm.full, `JVM: ${jvm.young} young + ${jvm.full} full`);
    assert.equal(result.summary.count, jvm.young + jvm.full);
    assert.equal(result.summary.fullCount, FULL_GCS);
    assert.equal(result.events.filter((e) => e.full).length, FULL_GCS);
    assert.equal(result.histogram.buckets.reduce((n, b) => n + b.count, 0), result.summary.count);
    assert.ok(result.summary.p50Ns <= result.summary.p90Ns && result.summary.p90Ns <= result.summary.p99Ns && result.summary.p99Ns <= result.summary.maxNs);
    checkEvents(result, w.pid);
    t.diagnostic(`JVM ${jvm.young} young + ${jvm.full} full; traced ${result.summary.count} (${result.summary.fullCount} full), p50 ${result.summary.p50Ns} ns, max ${result.summary.maxNs} ns`);
    if (peer) {
      const p = await peer.result();
      t.diagnostic(`bpftrace on the same probes: ${p.count} GCs (${p.full} full)`);
      assert.equal(p.count, result.summary.count);
      assert.equal(p.full, result.summary.fullCount);
    } else t.diagnostic('bpftrace not available: no peer comparison');
  });

  test('through the helper (the editor path): the JVM is listed, updates stream live, the session ends with target-exited', async () => {
    const w = await startWorkload(1, 512);
    const child = spawn(process.execPath, [helperJs], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    const conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    const updates: { at: number; u: JavaGcUpdate }[] = [];
    let ended: proto.SessionEndedParams | undefined;
    conn.onNotification(proto.sessionData, (p) => {
      updates.push({ at: Date.now(), u: p.update as JavaGcUpdate });
    });
    conn.onNotification(proto.sessionEnded, (p) => {
      ended = p;
    });
    conn.listen();
    try {
      const jvms = await conn.sendRequest(proto.listProcesses, { jvmOnly: true });
      const me = jvms.find((p) => p.pid === w.pid);
      assert.ok(me?.jvm, 'the workload is listed as a JVM');
      assert.equal(me.jvm.main, 'GcWorkload');
      assert.equal(me.jvm.usdt, true);
      assert.equal(fs.realpathSync(me.jvm.javaHome), fs.realpathSync(jdk!.home));
      const start = await conn.sendRequest(proto.sessionStart, { tracer: 'java-gc', options: { pid: w.pid, all: false, minUs: 0 } });
      assert.deepEqual(start.targets, [w.pid]);
      const t0 = Date.now();
      assert.ok(await waitFor(() => updates.length > 0, 1500), 'a live update within a second');
      assert.ok(updates[0].at - t0 <= 1000);
      w.go();
      const jvm = await w.done;
      assert.ok(await waitFor(() => ended !== undefined, 3000), 'the session ends by itself when the JVM exits');
      assert.equal(ended!.reason, 'target-exited');
      const result = ended!.result as JavaGcResult;
      const streamed = updates.flatMap((x) => x.u.events);
      assert.equal(result.summary.count, jvm.young + jvm.full);
      assert.equal(streamed.length, result.summary.count, 'every event was streamed live as well');
      assert.equal(result.summary.fullCount, 1);

      // Stopped mid-run: what streamed before "ended" is exactly the result.
      const w2 = await startWorkload(0, 4096);
      updates.length = 0;
      ended = undefined;
      const s2 = await conn.sendRequest(proto.sessionStart, { tracer: 'java-gc', options: { pid: w2.pid, all: false, minUs: 0 } });
      w2.go();
      await sleep(150);
      const stopped = (await conn.sendRequest(proto.sessionStop, { sessionId: s2.sessionId })).result as JavaGcResult;
      assert.ok(await waitFor(() => ended !== undefined, 2000));
      assert.equal(ended!.reason, 'stopped');
      assert.ok(stopped.summary.count > 0, 'some GCs happened before the stop');
      assert.equal(updates.flatMap((x) => x.u.events).length, stopped.summary.count);
      await w2.done;
    } finally {
      conn.dispose();
      child.stdin!.end();
    }
  });

  test('--all started before the JVM sees its GCs and keeps running after it exits', async (t) => {
    const cli = startCli(['java-gc', '--all', '--json', '--verbose']);
    // a failed assertion must not leave the session running (the test file would never end)
    t.after(() => {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
    });
    assert.ok(await waitFor(() => /Tracing|attached to/.test(cli.stderr()), 15_000), `not attached: ${cli.stderr()}`);
    await waitFor(() => cli.stderr().split('\n').filter((l) => l.includes('attached to')).length >= 1, 5000);
    const w = await startWorkload(2, 512);
    // Found from its exec (no read of every process each second) while it waits to start.
    assert.ok(await waitFor(() => cli.stderr().includes(`java-gc: pid ${w.pid}: its own counters`), 5000), `the new JVM was not followed: ${cli.stderr()}`);
    w.go();
    const jvm = await w.done;
    await sleep(1500);
    assert.equal(cli.child.exitCode, null, '--all mode must not end when a JVM exits');
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as JavaGcResult;
    assert.ok(result.pids.includes(w.pid));
    const mine = result.events.filter((e) => e.pid === w.pid);
    assert.equal(mine.length, jvm.young + jvm.full);
    assert.equal(mine.filter((e) => e.full).length, 2);
    checkEvents(result, w.pid);
    assert.match(r.stderr, /looking for new JVMs every 1 s among processes that exec'd/);
    const check = result.jvmCounts?.find((c) => c.pid === w.pid);
    assert.equal(check?.verdict, 'agree', JSON.stringify(check));
  });

  test('--min-us drops shorter pauses in the kernel', async () => {
    const w = await startWorkload(2, 512);
    const cli = startCli(['java-gc', '--pid', String(w.pid), '--min-us', '1000', '--json', '--verbose']);
    assert.ok(await waitFor(() => /attached to/.test(cli.stderr()), 15_000));
    w.go();
    const jvm = await w.done;
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as JavaGcResult;
    assert.ok(result.events.every((e) => e.durationNs >= 1_000_000), 'a pause under 1 ms got through');
    assert.ok(result.events.length < jvm.young + jvm.full, 'young GCs of this workload take well under 1 ms: some must be filtered');
  });

  test('bad targets: each a clear message in under a second with the right exit code', async (t) => {
    const none = runCli(['java-gc', '--pid', '4194000']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no process with pid 4194000/);
    assert.ok(none.ms < 1000, `${none.ms} ms`);

    const sleeper = spawn('sleep', ['30']);
    children.push(sleeper);
    const notJvm = runCli(['java-gc', '--pid', String(sleeper.pid)]);
    assert.equal(notJvm.code, 4);
    assert.match(notJvm.stderr, new RegExp(`pid ${sleeper.pid} \\(sleep\\) has no libjvm\\.so mapped: is it a JVM\\?`));
    assert.ok(notJvm.ms < 1000, `${notJvm.ms} ms`);
    sleeper.kill('SIGKILL');

    // A "JDK" whose libjvm.so has no .note.stapsdt: a small program linked against a library of that name.
    const cc = ['/usr/bin/cc', '/usr/bin/gcc'].find((p) => fs.existsSync(p));
    if (!cc) t.diagnostic('no C compiler: the no-USDT case is not checked');
    else {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-fakejvm-'));
      try {
        const lib = path.join(dir, 'lib', 'server');
        fs.mkdirSync(lib, { recursive: true });
        fs.writeFileSync(path.join(dir, 'j.c'), 'int jvm_marker(void) { return 42; }\n');
        fs.writeFileSync(path.join(dir, 'm.c'), '#include <unistd.h>\nint jvm_marker(void);\nint main(void) { jvm_marker(); pause(); return 0; }\n');
        assert.equal(spawnSync(cc, ['-shared', '-fPIC', '-o', path.join(lib, 'libjvm.so'), path.join(dir, 'j.c')]).status, 0);
        assert.equal(spawnSync(cc, ['-o', path.join(dir, 'java'), path.join(dir, 'm.c'), `-L${lib}`, '-ljvm', `-Wl,-rpath,${lib}`]).status, 0);
        const fake = spawn(path.join(dir, 'java'));
        children.push(fake);
        await waitFor(() => fs.readFileSync(`/proc/${fake.pid}/maps`, 'utf8').includes('libjvm.so'), 5000);
        const noUsdt = runCli(['java-gc', '--pid', String(fake.pid)]);
        fake.kill('SIGKILL');
        assert.equal(noUsdt.code, 4);
        assert.match(noUsdt.stderr, /libjvm\.so has no \.note\.stapsdt section: this JDK was built without DTrace\/USDT probes/);
        assert.ok(noUsdt.ms < 1000, `${noUsdt.ms} ms`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }

    const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p));
    if (!setpriv) t.diagnostic('no setpriv: the privilege case is not checked');
    else {
      const t0 = Date.now();
      const r = spawnSync(setpriv, ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, path.join(repoRoot, 'dist', 'cli.js'), 'java-gc', '--pid', '1'], { encoding: 'utf8' });
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, /need root \(CAP_SYS_ADMIN\)/);
      assert.ok(Date.now() - t0 < 1000);
    }
  });
});
