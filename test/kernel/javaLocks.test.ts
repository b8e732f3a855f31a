// `profile --event lock` on a JDK 17 JVM (test/fixtures/java/LockContention.java): a holder keeps a
// synchronized monitor on an Account, another a ReentrantLock, 20 ms at a time, while 3 threads
// wait for each. The fixture times every acquisition itself (its truth), and JFR records
// jdk.JavaMonitorEnter and jdk.ThreadPark with thresholds at 0 ms in the same run (the reference).
// Checked: the waited time per site against both, the lock's class, and the holder with the line
// where it held the lock. The fixture starts its workload only once the agent's thread exists, so
// every wait falls inside the profile. Then the off-CPU profile of another JVM with a contended
// monitor and ReentrantLock (OffcpuWaits.java): its lock-state stacks gain the same lock frames.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { compileJavaFixture, javaAgentSkipReason, markerLines, removeJavaFixture, repoRoot, startCli, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = javaAgentSkipReason(JDK) ?? (!fs.existsSync(`${JDK}/bin/jfr`) ? `no jfr tool in ${JDK}` : undefined);
const SRC = path.join(repoRoot, 'test/fixtures/java/LockContention.java');

let work = '';
let child: ChildProcess | undefined;
let pid = 0;
let out = '';

const sumUs = (stacks: ProfileStack[]) => stacks.reduce((a, s) => a + (s.value ?? 0), 0);
const has = (s: ProfileStack, fn: string) => s.frames.some((f) => f.function === fn);

/** JFR's durations ("PT0.020463S", "20.46 ms" in older printers) in µs. */
function durationUs(d: unknown): number {
  if (typeof d === 'number') return d / 1000; // ns
  const s = String(d);
  const iso = /^PT(?:(\d+)M)?([\d.]+)S$/.exec(s);
  if (iso) return (Number(iso[1] ?? 0) * 60 + Number(iso[2])) * 1e6;
  throw new Error(`unknown JFR duration ${s}`);
}

interface JfrEvent {
  type: string;
  values: { duration: unknown; eventThread?: { javaName?: string }; stackTrace?: { frames: { method: { type: { name: string }; name: string }; lineNumber: number }[] } };
}

describe('profile --event lock: contended Java monitors and ReentrantLock parks', { skip, timeout: 150_000 }, () => {
  before(async () => {
    const c = compileJavaFixture('ebpf-java-locks-', 'LockContention.java', JDK);
    work = c.work;
    child = spawn(path.join(JDK, 'bin/java'), ['-cp', c.classes, 'LockContention', 'ebpf-studio-locks', '120000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'the JVM did not start');
    pid = child.pid!;
  });
  after(() => removeJavaFixture(child ? [child] : [], work));

  test('waited time per site matches the program and JFR; lock class and holder line are right', async (t) => {
    // JFR first (the fixture waits for our agent, so JFR sees the whole workload too), every monitor
    // enter and park recorded whatever its length
    const jfc = path.join(work, 'locks.jfc');
    fs.writeFileSync(
      jfc,
      fs
        .readFileSync(`${JDK}/lib/jfr/profile.jfc`, 'utf8')
        .replace(/(<event name="jdk\.(?:JavaMonitorEnter|ThreadPark)">[\s\S]*?<setting name="threshold"[^>]*>)[^<]*</g, '$10 ms<'),
    );
    const jfrFile = path.join(work, 'locks.jfr');
    const start = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'JFR.start', 'name=locks', `settings=${jfc}`, `filename=${jfrFile}`], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(start.status, 0, start.stdout + start.stderr);

    const cli = startCli(['profile', '--pid', String(pid), '--event', 'lock', '--duration', '5', '--json', '--verbose']);
    assert.ok(await waitFor(() => /done monitor-wait/.test(out), 60_000), `the workload did not finish: ${cli.stderr()}`);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const stop = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'JFR.stop', 'name=locks'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(stop.status, 0, stop.stdout + stop.stderr);
    // the agent part's output file is removed at stop (as the JVM's owner, inside its root)
    assert.deepEqual(fs.readdirSync(`/proc/${pid}/root/tmp`).filter((f) => f.startsWith(`.ebpf-studio-locks-${pid}-`)), [], "the lock tracer's file is left in the JVM's /tmp");

    const truth = /done monitor-wait (\d+) monitor-holder-wait (\d+) park-wait (\d+)/.exec(out)!;
    const truthMonitorUs = Number(truth[1]) / 1000;
    const truthParkUs = Number(truth[3]) / 1000;
    const marks = markerLines(SRC, /MARK (\w+)/);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(doc.unit, 'us');
    assert.equal(doc.event, 'lock');

    // synchronized: exact (MonitorContendedEnter → Entered)
    const monitor = doc.stacks.filter((s) => has(s, 'LockContention.enterMonitor'));
    const monitorHeld = monitor.filter((s) => s.frames[0].function === `[lock LockContention$Account held by mon-holder at LockContention.holdMonitor(LockContention.java:${marks.get('holdMonitor')})]`);
    // ReentrantLock: parked threads looked at every 2 ms
    const park = doc.stacks.filter((s) => has(s, 'LockContention.takeReentrant'));
    const parkHeld = park.filter((s) => s.frames[0].function === `[park java.util.concurrent.locks.ReentrantLock$NonfairSync held by rl-holder at LockContention.holdReentrant(LockContention.java:${marks.get('holdReentrant')})]`);

    // the reference: JFR's events in the same run, by the same sites
    const printed = spawnSync(`${JDK}/bin/jfr`, ['print', '--json', '--stack-depth', '64', '--events', 'jdk.JavaMonitorEnter,jdk.ThreadPark', jfrFile], { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 60_000 });
    assert.equal(printed.status, 0, printed.stderr);
    const events = (JSON.parse(printed.stdout) as { recording: { events: JfrEvent[] } }).recording.events;
    const jfrAt = (type: string, method: string) =>
      events.filter((e) => e.type === type && (e.values.stackTrace?.frames ?? []).some((f) => `${f.method.type.name.replace(/\//g, '.')}.${f.method.name}` === method)).reduce((a, e) => a + durationUs(e.values.duration), 0);
    const jfrMonitorUs = jfrAt('jdk.JavaMonitorEnter', 'LockContention.enterMonitor');
    const jfrParkUs = jfrAt('jdk.ThreadPark', 'LockContention.takeReentrant');

    const f = (us: number) => `${(us / 1000).toFixed(1)} ms`;
    t.diagnostic(`synchronized waiters: ours ${f(sumUs(monitor))} (${monitor.reduce((a, s) => a + s.count, 0)} waits), program ${f(truthMonitorUs)}, JFR jdk.JavaMonitorEnter ${f(jfrMonitorUs)}; held by mon-holder at holdMonitor: ${f(sumUs(monitorHeld))}`);
    t.diagnostic(`ReentrantLock waiters: ours ${f(sumUs(park))} (${park.reduce((a, s) => a + s.count, 0)} park episodes), program ${f(truthParkUs)}, JFR jdk.ThreadPark ${f(jfrParkUs)}; held by rl-holder at holdReentrant: ${f(sumUs(parkHeld))}`);
    const e = /(\d+) contended monitor enters, (\d+) park episodes, (\d+) looks; ([\d.]+) ms in monitor callbacks \(([\d.]+) µs each\), ([\d.]+) ms looking \(([\d.]+) µs each\)/.exec(r.stderr);
    if (e) t.diagnostic(`agent cost: ${e[5]} µs per contended enter, ${e[7]} µs per look (${e[3]} looks)`);

    assert.ok(truthMonitorUs > 1e6 && truthParkUs > 1e6, `the fixture waited too little to judge: ${out}`);
    const within = (a: number, b: number, tol: number) => Math.abs(a - b) <= tol * b;
    // monitors are timed exactly: within 5 % of the program's own timing (which adds the uncontended part of each enter)
    assert.ok(within(sumUs(monitor), truthMonitorUs, 0.05), `monitor waits ${f(sumUs(monitor))} vs the program's ${f(truthMonitorUs)}`);
    assert.ok(within(sumUs(monitor), jfrMonitorUs, 0.05), `monitor waits ${f(sumUs(monitor))} vs JFR's ${f(jfrMonitorUs)}`);
    // parks are sampled every 2 ms over ~150 waits of ~20 ms: within 10 %
    assert.ok(within(sumUs(park), truthParkUs, 0.1), `park waits ${f(sumUs(park))} vs the program's ${f(truthParkUs)}`);
    assert.ok(within(sumUs(park), jfrParkUs, 0.1), `park waits ${f(sumUs(park))} vs JFR's ${f(jfrParkUs)}`);
    // the holder: the waiters find the holder inside its 20 ms hold nearly always (a waiter that
    // just got the lock holds it for a few µs)
    assert.ok(sumUs(monitorHeld) >= 0.8 * sumUs(monitor), `monitor waits held by mon-holder at holdMonitor: ${monitor.map((s) => `${s.frames[0].function} ${s.value}`).join('; ')}`);
    assert.ok(sumUs(parkHeld) >= 0.8 * sumUs(park), `park waits held by rl-holder at holdReentrant: ${park.map((s) => `${s.frames[0].function} ${s.value}`).join('; ')}`);
    // the waiter's stack below the lock frame: its Java frames with file:line, the thread as comm
    assert.ok(monitor.every((s) => /^mon-waiter-\d$/.test(s.comm) && s.frames[1].function === 'LockContention.enterMonitor' && s.frames[1].file === 'LockContention.java'), 'monitor waits on mon-waiter threads, enterMonitor innermost');
    // at the synchronized line, interpreted or compiled
    const atSync = monitor.filter((s) => s.frames[1].line === marks.get('enterMonitor'));
    assert.ok(sumUs(atSync) >= 0.99 * sumUs(monitor), `monitor waits at the synchronized line ${marks.get('enterMonitor')}: ${monitor.map((s) => `${s.frames[1].line} ${s.value}`).join('; ')}`);
    assert.ok(park.every((s) => /^rl-waiter-\d$/.test(s.comm)), 'park waits on rl-waiter threads');
    // A look reads the thread's state, then its stack: a waiter woken in between is seen a few
    // frames further on (back in ReentrantLock.lock), so the park frame's share is asserted.
    const underPark = park.filter((s) => s.frames.some((x) => x.function === 'java.util.concurrent.locks.LockSupport.park'));
    assert.ok(sumUs(underPark) >= 0.95 * sumUs(park), `park waits under LockSupport.park: ${f(sumUs(underPark))} of ${f(sumUs(park))}; others: ${park.filter((s) => !underPark.includes(s)).map((s) => s.frames.slice(0, 4).map((x) => x.function).join(' < ')).join('; ')}`);
  });
});

describe('profile --event offcpu: Java lock waits gain the lock frame', { skip, timeout: 120_000 }, () => {
  let owork = '';
  let ochild: ChildProcess | undefined;
  let oout = '';
  before(async () => {
    const c = compileJavaFixture('ebpf-offcpu-locks-', 'OffcpuWaits.java', JDK);
    owork = c.work;
    ochild = spawn(path.join(JDK, 'bin/java'), ['-cp', c.classes, 'OffcpuWaits', '90000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    ochild.stdout!.on('data', (d) => (oout += d));
    assert.ok(await waitFor(() => oout.includes('ready'), 20_000), 'the JVM did not start');
  });
  after(() => removeJavaFixture(ochild ? [ochild] : [], owork));

  test('the ReentrantLock waiter\'s lock time is under its lock, holder and holding line, the monitor waiter\'s under its lock', async (t) => {
    const cli = startCli(['profile', '--pid', String(ochild!.pid), '--event', 'offcpu', '--duration', '4', '--json', '--verbose']);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const src = path.join(repoRoot, 'test/fixtures/java/OffcpuWaits.java');
    const lines = fs.readFileSync(src, 'utf8').split('\n');
    const lineOf = (text: string) => lines.findIndex((l) => l.includes(text)) + 1;
    const check = (comm: string, frame: string) => {
      const all = doc.stacks.filter((s) => s.comm === comm && s.state === 'lock');
      const named = all.filter((s) => s.frames[0].function === frame);
      t.diagnostic(`${comm}: ${(sumUs(named) / 1000).toFixed(0)} ms of ${(sumUs(all) / 1000).toFixed(0)} ms in the lock state under ${frame}`);
      assert.ok(sumUs(all) > 1e6, `${comm} waited in the lock state`);
      assert.ok(sumUs(named) >= 0.8 * sumUs(all), `${comm}: ${all.map((s) => `${s.frames[0].function} ${s.value}`).join('; ')}`);
    };
    check('lock-waiter', `[park java.util.concurrent.locks.ReentrantLock$NonfairSync held by lock-holder at OffcpuWaits.holdLock(OffcpuWaits.java:${lineOf('static void holdLock()')})]`);
    // a monitor's holder is not asked here (a safepoint per contended enter would show in the waits measured)
    check('monitor-waiter', '[lock java.lang.Object]');
  });
});
