// Off-CPU profile of a JVM (JDK 17, no -XX:+PreserveFramePointer) with the Java agent: each blocked
// thread's Java stack is taken when it returns from the blocking system call, so the 3:1 split
// between sleepLong() and sleepShort() shows by Java method, Thread.sleep counts as sleeping (not
// as the futex it is underneath), and a ReentrantLock waiter's time is a lock wait in takeLock()
// under LockSupport.park. Every interval sent with a signal has the agent's record for it. Live
// snapshots (the editor's graph while it runs) already carry the lock frames the agent names.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { annotationsFromResult, waitsForFile } from '../../extension/model/profileSource';
import { compileJavaFixture, javaAgentSkipReason, removeJavaFixture, repoRoot, runCli, sleep, waitFor } from '../helpers';
import { offcpuTracer } from '../../extension/tracers/offcpu/tracer';
import { cliEnv } from '../../extension/cli/env';
import { processInfo } from '../../extension/sys/proc/processes';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = javaAgentSkipReason(JDK);

let work = '';
let child: ChildProcess | undefined;
let pid = 0;

const has = (s: ProfileStack, fn: string) => s.frames.some((f) => (f.function ?? '').includes(fn));
const sumUs = (stacks: ProfileStack[]) => stacks.reduce((a, s) => a + (s.value ?? 0), 0);

describe('off-CPU profile of a JVM with Java stacks', { skip, timeout: 120_000 }, () => {
  before(async () => {
    const c = compileJavaFixture('ebpf-offcpu-java-', 'OffcpuWaits.java', JDK);
    work = c.work;
    child = spawn(path.join(JDK, 'bin/java'), ['-cp', c.classes, 'OffcpuWaits', '90000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'the JVM did not start');
    pid = child.pid!;
  });
  after(() => removeJavaFixture(child ? [child] : [], work));

  test('sleep split 3:1 by Java method, sleeps as sleeping, ReentrantLock waits as lock in takeLock', (t) => {
    const r = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--duration', '5', '--json', '--verbose'], { timeoutMs: 90_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Java stacks from the agent at each return to user space/);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const long = doc.stacks.filter((s) => has(s, 'OffcpuWaits.sleepLong'));
    const short = doc.stacks.filter((s) => has(s, 'OffcpuWaits.sleepShort'));
    const share = sumUs(long) / (sumUs(long) + sumUs(short));
    t.diagnostic(`sleepLong share ${(100 * share).toFixed(1)} % (truth 75 %): ${(sumUs(long) / 1e3).toFixed(0)} ms vs ${(sumUs(short) / 1e3).toFixed(0)} ms`);
    assert.ok(sumUs(long) + sumUs(short) > 2e6, 'the sleeper was off CPU most of 5 s, under Java frames');
    assert.ok(Math.abs(share - 0.75) <= 0.05, `sleepLong share ${share}`);
    assert.ok([...long, ...short].every((s) => s.state === 'sleep' && has(s, 'java.lang.Thread.sleep')), 'Thread.sleep is sleeping');
    // Java frames sit above the native and kernel part of the same stack
    const one = long[0].frames.map((f) => f.function ?? '');
    assert.ok(one.findIndex((f) => /futex/.test(f)) < one.findIndex((f) => f.includes('OffcpuWaits.sleepLong')), `kernel futex frames under the Java ones: ${one.join(' < ')}`);

    const lockWait = doc.stacks.filter((s) => s.comm === 'lock-waiter' && has(s, 'OffcpuWaits.takeLock'));
    const lockAll = doc.stacks.filter((s) => s.comm === 'lock-waiter');
    t.diagnostic(`lock-waiter: ${(sumUs(lockWait) / 1e3).toFixed(0)} ms in takeLock of ${(sumUs(lockAll) / 1e3).toFixed(0)} ms off CPU`);
    assert.ok(sumUs(lockWait) > 0.5 * sumUs(lockAll), 'most of the lock waiter\'s time is in takeLock');
    // A fresh JVM's thread can also wait briefly on the VM's own locks here (the JIT's queue, a
    // safepoint): those are lock waits without a park, so the park's share of the time is asserted.
    const lockStates = lockWait.filter((s) => s.state === 'lock');
    const parked = sumUs(lockStates.filter((s) => has(s, 'LockSupport.park')));
    assert.ok(parked >= 0.95 * sumUs(lockStates), `ReentrantLock waits park: ${parked} of ${sumUs(lockStates)} µs of lock waits in takeLock`);
    assert.ok(sumUs(lockWait.filter((s) => s.state === 'lock')) > 0.5 * sumUs(lockWait), 'ReentrantLock waits are lock waits');

    // the editor's CodeLens: wait time on the fixture's lines that block (the agent's file:line)
    const lines = waitsForFile(annotationsFromResult(doc), path.join(repoRoot, 'test/fixtures/java/OffcpuWaits.java'));
    assert.ok(lines, `no wait lines for OffcpuWaits.java in ${doc.stacks.flatMap((s) => s.frames.filter((f) => f.file).map((f) => `${f.file}:${f.line}`)).slice(0, 10).join(', ')}`);
    const at = (line: number) => lines.get(line) ?? { total: 0, states: {} };
    t.diagnostic(`lens lines: ${[...lines].map(([l, w]) => `${l}: ${(w.total / 1e3).toFixed(0)} ms ${JSON.stringify(w.states)}`).join('; ')}`);
    const lensShare = at(11).total / (at(11).total + at(12).total);
    assert.ok(Math.abs(lensShare - 0.75) <= 0.05, `sleepLong's line holds ${lensShare} of the sleeper's lens time`);
    assert.ok((at(11).states.sleep ?? 0) >= 0.95 * at(11).total, 'Thread.sleep in sleepLong is sleeping');
    assert.ok((at(17).states.lock ?? 0) > 0.5 * sumUs(lockWait.filter((s) => s.state === 'lock')), `takeLock's line (17) shows the ReentrantLock wait as lock: ${JSON.stringify(at(17))}`);

    const m = /(\d+) BPF samples, (\d+) agent records, (\d+) joined/.exec(r.stderr);
    assert.ok(m, r.stderr);
    t.diagnostic(`intervals sent at sys_exit ${m[1]}, agent records ${m[2]}, joined ${m[3]}`);
    assert.ok(Number(m[3]) >= 0.95 * Number(m[1]), 'nearly every interval joined its Java stack');
  });

  test("the process listing names the JVM's JDK (the editor offers virtual threads from JDK 21)", () => {
    const jvm = processInfo(pid)?.jvm;
    assert.equal(jvm?.feature, 17, JSON.stringify(jvm));
    assert.match(jvm?.version ?? '', /^17\./);
  });

  test('live snapshots before Stop carry the lock frames: the ReentrantLock waiter under [park … held by lock-holder …] (tracer API)', async (t) => {
    const session = await offcpuTracer.start(offcpuTracer.validate({ pid, event: 'offcpu', java: 'agent' }), { ...cliEnv(false), log: () => undefined }, { update: () => undefined, ended: () => undefined });
    let live: ProfileResult | undefined;
    try {
      for (let i = 0; i < 8 && !live; i++) {
        await sleep(1000);
        const r = session.snapshot();
        if (r.stacks.some((s) => s.comm === 'lock-waiter' && /^\[park /.test(s.frames[0]?.function ?? ''))) live = r;
      }
    } finally {
      await session.stop();
    }
    assert.ok(live, 'no live snapshot in 8 s showed the lock waiter under a [park …] frame');
    const parked = live.stacks.filter((s) => s.comm === 'lock-waiter' && s.state === 'lock' && has(s, 'OffcpuWaits.takeLock'));
    const named = parked.filter((s) => /^\[park java\.util\.concurrent\.locks\.ReentrantLock\$NonfairSync held by lock-holder at /.test(s.frames[0].function ?? ''));
    t.diagnostic(`live: ${(sumUs(named) / 1e3).toFixed(0)} of ${(sumUs(parked) / 1e3).toFixed(0)} ms of takeLock's lock waits under the ReentrantLock frame; e.g. ${named[0]?.frames[0].function}`);
    assert.ok(sumUs(named) > 0.5 * sumUs(parked), "most of takeLock's live lock time names the ReentrantLock and its holder");
  });
});
