// `profile --event vthread` on Temurin 25 (test/fixtures/java/VirtualWaits.java): 200 virtual
// threads each wait 30 ms in waitLong() for every 10 ms in waitShort() (Thread.sleep, which
// unmounts them), timing every wait themselves. Checked: the 3:1 split within 5 points, the total
// against the program's own sum, the state (sleeping), and that the carriers — which idle in
// ForkJoinPool meanwhile — are not reported as the program's waiting. JFR's jdk.ThreadSleep (JDK
// 25 records it for virtual threads; threshold 0 ms) is the reference in the same run. The fixture starts its
// threads only once the agent's thread exists, so every wait falls inside the profile. Then the
// off-CPU profile of another such JVM: the virtual threads' waits appear by their own stacks, and
// the carriers' parks in ForkJoinPool are carrier idle, not lock waits.
// In the same run, virtual threads contend for locks, and the leaf frame names who held them: an
// unnamed virtual thread holding a ReentrantLock while it sleeps in holdVirtual() ("held by
// virtual#<id> at …holdVirtual(…:line)"), a platform thread holding a monitor virtual threads
// unmount to wait for (JDK 24+), and a read lock, whose readers the JDK does not record ("held by
// readers (not named)"); each site's waiting against the program's own timing (JDK 25's JFR
// records no jdk.ThreadPark or jdk.JavaMonitorEnter for a virtual thread that unmounts to wait:
// its figures are reported, not compared). Last, `--event lock` on a third such JVM: the virtual
// threads' monitor waits, entered on another carrier than they started on, timed as the program
// timed them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { CARRIER_IDLE_FRAME, UNMOUNTED_FRAME } from '../../extension/tracers/javaLocks/decode';
import { compileJavaFixture, javaAgentSkipReason, markerLines, removeJavaFixture, repoRoot, startCli, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/temurin-25-jdk-amd64';
const SRC = path.join(repoRoot, 'test/fixtures/java/VirtualWaits.java');
const skip = javaAgentSkipReason() ?? (!fs.existsSync(`${JDK}/bin/javac`) ? `no Temurin 25 at ${JDK}` : undefined);

let work = '';
let child: ChildProcess | undefined;
let pid = 0;
let out = '';

const has = (s: ProfileStack, fn: string) => s.frames.some((f) => f.function === fn);
const sumUs = (stacks: ProfileStack[]) => stacks.reduce((a, s) => a + (s.value ?? 0), 0);

describe('profile --event vthread: virtual threads wait by their own stacks, carriers not counted', { skip, timeout: 120_000 }, () => {
  before(async () => {
    const c = compileJavaFixture('ebpf-java-vthreads-', 'VirtualWaits.java', JDK);
    work = c.work;
    child = spawn(path.join(JDK, 'bin/java'), ['-cp', c.classes, 'VirtualWaits', 'ebpf-studio-locks', '2000', '120000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'the JVM did not start');
    pid = child.pid!;
  });
  after(() => removeJavaFixture(child ? [child] : [], work));

  test('3:1 split of waiting within 5 points, total as the program timed it, sleeps as sleeping', async (t) => {
    // JFR first (the fixture waits for our agent, so JFR sees the whole workload too)
    const jfc = path.join(work, 'sleep.jfc');
    fs.writeFileSync(jfc, fs.readFileSync(`${JDK}/lib/jfr/profile.jfc`, 'utf8').replace(/(<event name="jdk\.(?:ThreadSleep|ThreadPark|JavaMonitorEnter)">[\s\S]*?<setting name="threshold"[^>]*>)[^<]*</g, '$10 ms<'));
    const jfrFile = path.join(work, 'sleep.jfr');
    const jstart = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'JFR.start', 'name=sleep', `settings=${jfc}`, `filename=${jfrFile}`], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(jstart.status, 0, jstart.stdout + jstart.stderr);
    const cli = startCli(['profile', '--pid', String(pid), '--event', 'vthread', '--duration', '5', '--json', '--verbose']);
    assert.ok(await waitFor(() => /done long-ns/.test(out), 60_000), `the workload did not finish: ${cli.stderr()}`);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const jstop = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'JFR.stop', 'name=sleep'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(jstop.status, 0, jstop.stdout + jstop.stderr);
    const printed = spawnSync(`${JDK}/bin/jfr`, ['print', '--json', '--stack-depth', '16', '--events', 'jdk.ThreadSleep,jdk.ThreadPark,jdk.JavaMonitorEnter', jfrFile], { encoding: 'utf8', maxBuffer: 512 << 20, timeout: 60_000 });
    assert.equal(printed.status, 0, printed.stderr);
    type Ev = { type: string; values: { duration: string; stackTrace?: { frames: { method: { type: { name: string }; name: string } }[] } } };
    const events = (JSON.parse(printed.stdout) as { recording: { events: Ev[] } }).recording.events;
    const durUs = (d: string) => {
      const m = /^PT(?:(\d+)M)?([\d.]+)S$/.exec(d);
      if (!m) throw new Error(`unknown JFR duration ${d}`);
      return (Number(m[1] ?? 0) * 60 + Number(m[2])) * 1e6;
    };
    const jfrAt = (method: string, type = 'jdk.ThreadSleep') => events.filter((e) => e.type === type && (e.values.stackTrace?.frames ?? []).some((x) => `${x.method.type.name.replace(/\//g, '.')}.${x.method.name}` === method)).reduce((a, e) => a + durUs(e.values.duration), 0);
    const jfrLongUs = jfrAt('VirtualWaits.waitLong');
    const jfrShortUs = jfrAt('VirtualWaits.waitShort');
    const truth = /done long-ns (\d+) short-ns (\d+) threads (\d+)/.exec(out)!;
    const truthLongUs = Number(truth[1]) / 1000;
    const truthShortUs = Number(truth[2]) / 1000;
    const doc = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(doc.event, 'vthread');
    assert.equal(doc.unit, 'us');
    const long = doc.stacks.filter((s) => has(s, 'VirtualWaits.waitLong'));
    const short = doc.stacks.filter((s) => has(s, 'VirtualWaits.waitShort'));
    const share = sumUs(long) / (sumUs(long) + sumUs(short));
    const truthShare = truthLongUs / (truthLongUs + truthShortUs);
    const f = (us: number) => `${(us / 1e6).toFixed(2)} s`;
    t.diagnostic(`waitLong share ${(100 * share).toFixed(1)} % (the program's own timing ${(100 * truthShare).toFixed(1)} %, design 75 %); waitLong ${f(sumUs(long))} vs program ${f(truthLongUs)}, waitShort ${f(sumUs(short))} vs program ${f(truthShortUs)}; ${doc.samples} waits of ${truth[3]} virtual threads`);
    t.diagnostic(`JFR jdk.ThreadSleep in the same run: waitLong ${f(jfrLongUs)}, waitShort ${f(jfrShortUs)}, share ${((100 * jfrLongUs) / (jfrLongUs + jfrShortUs)).toFixed(1)} % (${events.length} events)`);
    const cost = /([\d.]+) µs each/.exec(r.stderr);
    if (cost) t.diagnostic(`agent cost: ${cost[1]} µs per unmount (the virtual thread's stack taken)`);
    assert.ok(sumUs(long) + sumUs(short) > 100e6, 'the 200 virtual threads waited most of 2 s each');
    assert.ok(Math.abs(share - 0.75) <= 0.05, `waitLong share ${share}`);
    assert.ok(Math.abs(sumUs(long) + sumUs(short) - (truthLongUs + truthShortUs)) <= 0.05 * (truthLongUs + truthShortUs), 'total waiting within 5 % of what the program timed');
    // JFR times the sleep alone; ours runs to the next mount (the wait for a free carrier too)
    assert.ok(Math.abs(share - jfrLongUs / (jfrLongUs + jfrShortUs)) <= 0.05, 'the split as JFR saw it, within 5 points');
    assert.ok(Math.abs(sumUs(long) + sumUs(short) - (jfrLongUs + jfrShortUs)) <= 0.05 * (jfrLongUs + jfrShortUs), 'total waiting within 5 % of JFR\'s sleeps');
    assert.ok([...long, ...short].every((s) => s.state === 'sleep' && has(s, 'java.lang.Thread.sleep')), 'Thread.sleep in a virtual thread is sleeping');

    // lock holders: a virtual thread's ReentrantLock, a platform thread's monitor, readers
    const lockTruth = /lock-ns (\d+) holds (\d+) holder-id (\d+) monitor-ns (\d+) write-ns (\d+)/.exec(out)!;
    const [truthLockUs, truthMonitorUs, truthWriteUs] = [lockTruth[1], lockTruth[4], lockTruth[5]].map((x) => Number(x) / 1000);
    const marks = markerLines(SRC, /MARK (\w+)/);
    const site = (m: string) => {
      const all = doc.stacks.filter((s) => has(s, `VirtualWaits.${m}`));
      return { all, us: sumUs(all), under: (frame: string) => sumUs(all.filter((s) => s.frames[0].function === frame)) };
    };
    const rl = site('takeVirtual');
    const rlFrame = `[park java.util.concurrent.locks.ReentrantLock$NonfairSync held by virtual#${lockTruth[3]} at VirtualWaits.holdVirtual(VirtualWaits.java:${marks.get('holdVirtual')})]`;
    const mon = site('enterMonitor');
    const monFrame = `[lock VirtualWaits$Account held by mon-holder at VirtualWaits.holdMonitor(VirtualWaits.java:${marks.get('holdMonitor')})]`;
    const wr = site('takeWrite');
    const wrFrame = '[park java.util.concurrent.locks.ReentrantReadWriteLock$NonfairSync held by readers (not named)]';
    // JDK 25's JFR records no jdk.ThreadPark or jdk.JavaMonitorEnter for a virtual thread that
    // unmounts to wait: its figures are reported, not compared
    const jfrRl = jfrAt('VirtualWaits.takeVirtual', 'jdk.ThreadPark');
    const jfrMon = jfrAt('VirtualWaits.enterMonitor', 'jdk.JavaMonitorEnter');
    const jfrWr = jfrAt('VirtualWaits.takeWrite', 'jdk.ThreadPark');
    const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`;
    t.diagnostic(`ReentrantLock held by an unnamed virtual thread (${lockTruth[2]} holds): ours ${ms(rl.us)}, program ${ms(truthLockUs)}, JFR jdk.ThreadPark ${ms(jfrRl)}; under "held by virtual#${lockTruth[3]} at holdVirtual" ${ms(rl.under(rlFrame))}`);
    t.diagnostic(`monitor held by a platform thread: ours ${ms(mon.us)}, program ${ms(truthMonitorUs)}, JFR jdk.JavaMonitorEnter ${ms(jfrMon)}; under "held by mon-holder at holdMonitor" ${ms(mon.under(monFrame))}`);
    t.diagnostic(`write lock held by readers: ours ${ms(wr.us)}, program ${ms(truthWriteUs)}, JFR jdk.ThreadPark ${ms(jfrWr)}; under "held by readers (not named)" ${ms(wr.under(wrFrame))}`);
    const others = (x: { all: ProfileStack[] }) => x.all.map((s) => `${s.frames[0].function} ${s.value}`).join('; ');
    assert.ok(truthLockUs > 1e6 && truthMonitorUs > 1e6 && truthWriteUs > 0.3e6, `the fixture's lock waits were too short to judge: ${out}`);
    assert.ok(Math.abs(rl.us - truthLockUs) <= 0.05 * truthLockUs, `ReentrantLock waits ${ms(rl.us)} vs the program's ${ms(truthLockUs)}`);
    assert.ok(rl.under(rlFrame) >= 0.95 * rl.us, `ReentrantLock waits under ${rlFrame}: ${others(rl)}`);
    // a virtual thread blocked on a monitor unmounts after spinning a while (the program counts the spin)
    assert.ok(Math.abs(mon.us - truthMonitorUs) <= 0.1 * truthMonitorUs, `monitor waits ${ms(mon.us)} vs the program's ${ms(truthMonitorUs)}`);
    assert.ok(mon.under(monFrame) >= 0.9 * mon.us, `monitor waits under ${monFrame}: ${others(mon)}`);
    assert.ok(Math.abs(wr.us - truthWriteUs) <= 0.1 * truthWriteUs, `write-lock waits ${ms(wr.us)} vs the program's ${ms(truthWriteUs)}`);
    assert.ok(wr.under(wrFrame) >= 0.9 * wr.us, `write-lock waits under ${wrFrame}: ${others(wr)}`);
    assert.ok([...rl.all, ...mon.all, ...wr.all].every((s) => s.state === 'lock'), 'lock waits of virtual threads are in the lock state');
    assert.ok([...long, ...short].every((s) => /^vwaiter-\d+$/.test(s.comm)), 'each stack is a virtual thread, by its name');
    // the carriers: idle in ForkJoinPool between virtual threads, never the program's waiting
    const carrier = doc.stacks.filter((s) => /ForkJoinPool|CarrierThread/.test(s.comm) || s.frames.some((x) => /ForkJoinPool\.(awaitWork|runWorker)|CarrierThread/.test(x.function ?? '')));
    assert.equal(carrier.length, 0, `carrier stacks reported: ${carrier.map((s) => s.comm).join(', ')}`);
  });
});

describe('profile --event offcpu on virtual threads: their waits by their stacks, carriers idle', { skip, timeout: 120_000 }, () => {
  let owork = '';
  let ochild: ChildProcess | undefined;
  let oout = '';
  before(async () => {
    const c = compileJavaFixture('ebpf-offcpu-vthreads-', 'VirtualWaits.java', JDK);
    owork = c.work;
    ochild = spawn(path.join(JDK, 'bin/java'), ['-cp', c.classes, 'VirtualWaits', 'ebpf-studio-locks', '2000', '120000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    ochild.stdout!.on('data', (d) => (oout += d));
    assert.ok(await waitFor(() => oout.includes('ready'), 20_000), 'the JVM did not start');
  });
  after(() => removeJavaFixture(ochild ? [ochild] : [], owork));

  test('unmounted waits split 3:1 by method; carriers in ForkJoinPool are idle, not lock', async (t) => {
    const cli = startCli(['profile', '--pid', String(ochild!.pid), '--event', 'offcpu', '--duration', '5', '--json', '--verbose']);
    assert.ok(await waitFor(() => /done long-ns/.test(oout), 60_000), `the workload did not finish: ${cli.stderr()}`);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const truth = /done long-ns (\d+) short-ns (\d+)/.exec(oout)!;
    const truthUs = (Number(truth[1]) + Number(truth[2])) / 1000;
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const unmounted = doc.stacks.filter((s) => s.frames[0]?.function === UNMOUNTED_FRAME);
    const long = unmounted.filter((s) => has(s, 'VirtualWaits.waitLong'));
    const short = unmounted.filter((s) => has(s, 'VirtualWaits.waitShort'));
    const share = sumUs(long) / (sumUs(long) + sumUs(short));
    const carrierLock = doc.stacks.filter((s) => s.state === 'lock' && s.frames.some((f) => f.function === 'java.util.concurrent.ForkJoinPool.awaitWork'));
    const idle = doc.stacks.filter((s) => s.state === 'idle');
    t.diagnostic(`unmounted virtual threads: ${(sumUs(unmounted) / 1e6).toFixed(2)} s, of it in waitLong/waitShort ${((sumUs(long) + sumUs(short)) / 1e6).toFixed(2)} s (program ${(truthUs / 1e6).toFixed(2)} s), waitLong share ${(100 * share).toFixed(1)} %; carrier idle ${(sumUs(idle) / 1e6).toFixed(2)} s, carrier parks left as lock ${(sumUs(carrierLock) / 1e3).toFixed(1)} ms`);
    assert.ok(Math.abs(share - 0.75) <= 0.05, `waitLong share ${share}`);
    assert.ok(Math.abs(sumUs(long) + sumUs(short) - truthUs) <= 0.05 * truthUs, 'virtual threads\' waiting within 5 % of what the program timed');
    assert.ok(unmounted.every((s) => s.state === 'sleep' || !has(s, 'VirtualWaits.waitLong')), 'Thread.sleep in a virtual thread is sleeping');
    assert.ok(sumUs(idle) > 0 && idle.every((s) => s.frames[0].function === CARRIER_IDLE_FRAME), 'carriers idle, marked');
    assert.ok(sumUs(carrierLock) <= 0.05 * sumUs(idle), 'carrier parks in ForkJoinPool are not the program\'s lock waits');
  });
});

describe('profile --event lock on virtual threads: a monitor wait is timed across carriers, holder named', { skip, timeout: 120_000 }, () => {
  let lwork = '';
  let lchild: ChildProcess | undefined;
  let lout = '';
  before(async () => {
    const c = compileJavaFixture('ebpf-locks-vthreads-', 'VirtualWaits.java', JDK);
    lwork = c.work;
    lchild = spawn(path.join(JDK, 'bin/java'), ['-cp', c.classes, 'VirtualWaits', 'ebpf-studio-locks', '2000', '120000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    lchild.stdout!.on('data', (d) => (lout += d));
    assert.ok(await waitFor(() => lout.includes('ready'), 20_000), 'the JVM did not start');
  });
  after(() => removeJavaFixture(lchild ? [lchild] : [], lwork));

  test("virtual threads' monitor waits as the program timed them, under the platform holder at its line", async (t) => {
    // JDK 24+ unmounts a virtual thread waiting to enter a monitor; it is entered on whichever
    // carrier mounts it again, so the enter record follows the virtual thread, not the carrier
    const cli = startCli(['profile', '--pid', String(lchild!.pid), '--event', 'lock', '--duration', '5', '--json', '--verbose']);
    assert.ok(await waitFor(() => /done long-ns/.test(lout), 60_000), `the workload did not finish: ${cli.stderr()}`);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const truthUs = Number(/monitor-ns (\d+)/.exec(lout)![1]) / 1000;
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const frame = `[lock VirtualWaits$Account held by mon-holder at VirtualWaits.holdMonitor(VirtualWaits.java:${markerLines(SRC, /MARK (\w+)/).get('holdMonitor')})]`;
    const mon = doc.stacks.filter((s) => has(s, 'VirtualWaits.enterMonitor'));
    const named = mon.filter((s) => s.frames[0].function === frame);
    t.diagnostic(`virtual threads' monitor waits: ours ${(sumUs(mon) / 1000).toFixed(0)} ms (${mon.reduce((a, s) => a + s.count, 0)} waits), program ${(truthUs / 1000).toFixed(0)} ms; under "held by mon-holder at holdMonitor" ${(sumUs(named) / 1000).toFixed(0)} ms`);
    assert.ok(truthUs > 1e6, `the fixture's monitor waits were too short to judge: ${lout}`);
    assert.ok(Math.abs(sumUs(mon) - truthUs) <= 0.05 * truthUs, `monitor waits ${sumUs(mon)} µs vs the program's ${truthUs} µs`);
    assert.ok(sumUs(named) >= 0.9 * sumUs(mon), `monitor waits under ${frame}: ${mon.map((s) => `${s.frames[0].function} ${s.value}`).join('; ')}`);
    assert.ok(mon.every((s) => /^vmon-waiter-\d$/.test(s.comm) && s.frames[1].function === 'VirtualWaits.enterMonitor'), 'each a virtual waiter by its name, enterMonitor innermost');
  });
});
