// `profile --event vthread` on Temurin 25 (test/fixtures/java/VirtualWaits.java): 200 virtual
// threads each wait 30 ms in waitLong() for every 10 ms in waitShort() (Thread.sleep, which
// unmounts them), timing every wait themselves. Checked: the 3:1 split within 5 points, the total
// against the program's own sum, the state (sleeping), and that the carriers — which idle in
// ForkJoinPool meanwhile — are not reported as the program's waiting. JFR's jdk.ThreadSleep (JDK
// 25 records it for virtual threads; threshold 0 ms) is the reference in the same run. The fixture starts its
// threads only once the agent's thread exists, so every wait falls inside the profile. Then the
// off-CPU profile of another such JVM: the virtual threads' waits appear by their own stacks, and
// the carriers' parks in ForkJoinPool are carrier idle, not lock waits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { CARRIER_IDLE_FRAME, UNMOUNTED_FRAME } from '../../extension/tracers/javaLocks/decode';
import { compileJavaFixture, javaAgentSkipReason, removeJavaFixture, startCli, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/temurin-25-jdk-amd64';
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
    fs.writeFileSync(jfc, fs.readFileSync(`${JDK}/lib/jfr/profile.jfc`, 'utf8').replace(/(<event name="jdk\.ThreadSleep">[\s\S]*?<setting name="threshold"[^>]*>)[^<]*</, '$10 ms<'));
    const jfrFile = path.join(work, 'sleep.jfr');
    const jstart = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'JFR.start', 'name=sleep', `settings=${jfc}`, `filename=${jfrFile}`], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(jstart.status, 0, jstart.stdout + jstart.stderr);
    const cli = startCli(['profile', '--pid', String(pid), '--event', 'vthread', '--duration', '5', '--json', '--verbose']);
    assert.ok(await waitFor(() => /done long-ns/.test(out), 60_000), `the workload did not finish: ${cli.stderr()}`);
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const jstop = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'JFR.stop', 'name=sleep'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(jstop.status, 0, jstop.stdout + jstop.stderr);
    const printed = spawnSync(`${JDK}/bin/jfr`, ['print', '--json', '--stack-depth', '16', '--events', 'jdk.ThreadSleep', jfrFile], { encoding: 'utf8', maxBuffer: 512 << 20, timeout: 60_000 });
    assert.equal(printed.status, 0, printed.stderr);
    type Ev = { values: { duration: string; stackTrace?: { frames: { method: { type: { name: string }; name: string } }[] } } };
    const events = (JSON.parse(printed.stdout) as { recording: { events: Ev[] } }).recording.events;
    const durUs = (d: string) => {
      const m = /^PT(?:(\d+)M)?([\d.]+)S$/.exec(d);
      if (!m) throw new Error(`unknown JFR duration ${d}`);
      return (Number(m[1] ?? 0) * 60 + Number(m[2])) * 1e6;
    };
    const jfrAt = (method: string) => events.filter((e) => (e.values.stackTrace?.frames ?? []).some((x) => `${x.method.type.name.replace(/\//g, '.')}.${x.method.name}` === method)).reduce((a, e) => a + durUs(e.values.duration), 0);
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
    t.diagnostic(`unmounted virtual threads: ${(sumUs(unmounted) / 1e6).toFixed(2)} s (program ${(truthUs / 1e6).toFixed(2)} s), waitLong share ${(100 * share).toFixed(1)} %; carrier idle ${(sumUs(idle) / 1e6).toFixed(2)} s, carrier parks left as lock ${(sumUs(carrierLock) / 1e3).toFixed(1)} ms`);
    assert.ok(Math.abs(share - 0.75) <= 0.05, `waitLong share ${share}`);
    assert.ok(Math.abs(sumUs(long) + sumUs(short) - truthUs) <= 0.05 * truthUs, 'virtual threads\' waiting within 5 % of what the program timed');
    assert.ok(unmounted.every((s) => s.state === 'sleep' || !has(s, 'VirtualWaits.waitLong')), 'Thread.sleep in a virtual thread is sleeping');
    assert.ok(sumUs(idle) > 0 && idle.every((s) => s.frames[0].function === CARRIER_IDLE_FRAME), 'carriers idle, marked');
    assert.ok(sumUs(carrierLock) <= 0.05 * sumUs(idle), 'carrier parks in ForkJoinPool are not the program\'s lock waits');
  });
});
