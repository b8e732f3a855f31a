// Java method latency and method timing through JDK 25's JFR (JEP 520), against the program's own
// clock and the JDK's own tools in the same run. Temurin 25 runs test/fixtures/java/MethodLatency.java,
// whose work() takes ~1 ms in 4 calls of 5 and ~20 ms in the fifth, and which times each call with
// System.nanoTime(): `latency --pid P MethodLatency.work` counts exactly its calls (they all run
// inside the session), p50 and p99 within 5 % of its own, the calls over the threshold equal its
// own count, their stacks are work() under main() at the line of the call, and nothing is left
// recording in the JVM afterwards. `jfr --record --method-timing/--method-trace` makes a
// recording whose jdk.MethodTrace and jdk.MethodTiming counts equal `jfr summary`'s, and whose
// per-method figures equal `jfr print`'s. A JDK 17 JVM is refused with its version named.
// Needs a JDK, not BPF (the JVM is asked through its attach socket, as its owner).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { LatencyResult } from '../../extension/protocol/latency';
import * as proto from '../../extension/protocol/protocol';
import { cliJs, compileJavaFixture, distDir, kernelSkipReason, removeJavaFixture, runCli, startCli, waitFor } from '../helpers';
import { AttackBed, asUser, attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';

const JDK25 = '/usr/lib/jvm/temurin-25-jdk-amd64';
const JDK17 = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = !fs.existsSync(`${JDK25}/bin/jfr`) ? `no Temurin 25 at ${JDK25}` : undefined;

interface Own {
  calls: number;
  p50Ns: number;
  p99Ns: number;
  maxNs: number;
  over10ms: number;
  /** the time the calls over 10 ms spent in Thread.sleep */
  slowSleptNs: number;
}

interface Fixture {
  child: ChildProcess;
  out: () => string;
  go(): void;
  own(): Promise<Own>;
}

function startFixture(jdk: string, classes: string, calls: number, children: ChildProcess[], as?: AttackUser): Fixture {
  const cmd = [`${jdk}/bin/java`, '-cp', classes, 'MethodLatency', String(calls)];
  const child = as ? spawnAsUser(as, cmd, {}, children) : spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  if (!as) children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  return {
    child,
    out: () => out,
    go: () => child.stdin!.write('go\n'),
    async own() {
      assert.ok(await waitFor(() => /done calls=/.test(out), 120_000), `the fixture did not finish: ${out}`);
      const m = /done calls=(\d+) p50Ns=(\d+) p99Ns=(\d+) maxNs=(\d+) totalNs=\d+ over10ms=(\d+) slowSleptNs=(\d+)/.exec(out)!;
      return { calls: +m[1], p50Ns: +m[2], p99Ns: +m[3], maxNs: +m[4], over10ms: +m[5], slowSleptNs: +m[6] };
    },
  };
}

function jcmd(pid: number, what: string, as?: AttackUser): string {
  const cmd = [`${JDK25}/bin/jcmd`, String(pid), what];
  return as ? asUser(as, cmd, { timeoutMs: 30_000 }).stdout : spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', timeout: 30_000 }).stdout;
}

/** Waits until the JVM runs a recording of ours (the tracing is in place before the calls start). */
async function recordingStarted(pid: number): Promise<void> {
  assert.ok(await waitFor(() => /ebpf-studio/.test(jcmd(pid, 'JFR.check')), 30_000, 300), 'no recording of ours started in the JVM');
}

/** The line of the fixture's source holding `mark`. */
const lineOf = (mark: string) => fs.readFileSync(path.join(__dirname, '../fixtures/java/MethodLatency.java'), 'utf8').split('\n').findIndex((l) => l.includes(mark)) + 1;

const within = (ours: number, theirs: number, pct: number, what: string) => assert.ok(Math.abs(ours - theirs) <= (theirs * pct) / 100, `${what}: ours ${ours} vs the program's ${theirs} (more than ${pct} % apart)`);

describe('Java method latency and timing through JDK 25 JFR', { skip, timeout: 600_000 }, () => {
  let work = '';
  let classes = '';
  const children: ChildProcess[] = [];
  before(() => ({ work, classes } = compileJavaFixture('ebpf-latjfr-', 'MethodLatency.java', JDK25)));
  after(() => removeJavaFixture(children, work));

  test('latency --pid P Class.method: exact count, p50/p99 within 5 % of the program, slow stacks, by caller, nothing left running', async () => {
    const fx = startFixture(JDK25, classes, 400, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    const cli = startCli(['latency', '--pid', String(pid), 'MethodLatency.work', '--threshold-ms', '10', '--duration', '120', '--json']);
    await recordingStarted(pid);
    fx.go();
    const own = await fx.own();
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as LatencyResult;
    console.log(`ours: count ${res.stats.count} p50 ${res.stats.p50Ns} p99 ${res.stats.p99Ns} max ${res.stats.maxNs} slow ${res.stats.slowCalls}; program: ${JSON.stringify(own)}`);
    assert.equal(res.probe.returns, 'jfr-method-trace');
    assert.equal(res.stats.count, own.calls);
    assert.equal(res.histograms[0].count, own.calls);
    within(res.stats.p50Ns, own.p50Ns, 5, 'p50');
    within(res.stats.p99Ns, own.p99Ns, 5, 'p99');
    assert.ok(res.stats.maxNs <= own.maxNs, `max ${res.stats.maxNs} above the program's own ${own.maxNs}`);
    assert.equal(res.stats.slowCalls, own.over10ms);
    assert.ok(res.slow.length > 0);
    for (const s of res.slow) {
      assert.ok(s.durationNs >= 10e6);
      assert.equal(s.stack[0].function, 'MethodLatency.work');
      assert.equal(s.stack[1].function, 'MethodLatency.main');
      assert.equal(s.stack[1].file, 'MethodLatency.java');
      assert.equal(s.stack[1].line, lineOf('            work(i);'));
    }
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
    // --by-caller in the same JVM: leaf()'s calls from viaA and viaB, each event's top frame its caller
    const t0 = Date.now();
    const byCaller = startCli(['latency', '--pid', String(pid), 'MethodLatency.leaf', '--by-caller', '--duration', '120', '--json']);
    await recordingStarted(pid);
    fx.child.stdin!.write('callers 3000 5000\n');
    assert.ok(await waitFor(() => /callers a=/.test(fx.out()), 60_000), fx.out());
    const [, a, b] = /callers a=(\d+) b=(\d+)/.exec(fx.out())!.map(Number);
    byCaller.child.kill('SIGINT');
    const rc = await byCaller.done;
    assert.equal(rc.code, 0, rc.stderr);
    const rows = ((JSON.parse(rc.stdout) as LatencyResult).callers ?? []).map((c) => [c.caller, c.count, c.file, c.line]);
    console.log(`by caller: ${JSON.stringify(rows)}; the program: viaA ${a}, viaB ${b} calls; ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.deepEqual(rows, [
      ['MethodLatency.viaB', b, 'MethodLatency.java', lineOf("viaB's call")],
      ['MethodLatency.viaA', a, 'MethodLatency.java', lineOf("viaA's call")],
    ]);
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
    fx.child.stdin!.end();
  });

  test('latency --profile-slow: the slow calls\' profile is under work(), asleep, as long as they slept; the fast calls\' 1 ms sleeps are not in it', { skip: kernelSkipReason() ?? (fs.existsSync(path.join(distDir, 'libebpf-studio-jvmagent.so')) ? undefined : 'the JVMTI agent is not built') }, async () => {
    const t0 = Date.now();
    const fx = startFixture(JDK25, classes, 200, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    const cli = startCli(['latency', '--pid', String(pid), 'MethodLatency.work', '--threshold-ms', '10', '--profile-slow', '--duration', '120', '--json']);
    await recordingStarted(pid);
    fx.go();
    const own = await fx.own();
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout) as LatencyResult;
    const p = res.profile;
    assert.ok(p, r.stderr);
    const us = (st: { value?: number; count: number }) => st.value ?? st.count;
    const total = p.stacks.reduce((a, st) => a + us(st), 0);
    const under = p.stacks.filter((st) => st.frames.some((f) => f.function === 'MethodLatency.work')).reduce((a, st) => a + us(st), 0);
    const sleeping = p.stacks.filter((st) => st.state === 'sleep').reduce((a, st) => a + us(st), 0);
    console.log(`profile of the slow calls: ${(total / 1000).toFixed(1)} ms, ${((100 * under) / total).toFixed(1)} % under work(), ${((100 * sleeping) / total).toFixed(1)} % sleeping, ${res.stats.profiledSlow} calls profiled; the program: ${own.over10ms} calls >= 10 ms slept ${(own.slowSleptNs / 1e6).toFixed(1)} ms (all ${own.calls} calls: ${(own.calls - own.over10ms)} more sleeps of 1 ms); ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // every call JFR timed over the threshold is a window; the program's own clock (around the call, not in it) may count one more or less under load
    assert.equal(res.stats.profiledSlow, res.stats.slowCalls);
    assert.ok(Math.abs((res.stats.profiledSlow ?? 0) - own.over10ms) <= 2, `profiled ${res.stats.profiledSlow}, the program's own ${own.over10ms}`);
    assert.ok(under >= 0.9 * total, `under the method: ${under} of ${total} µs`);
    // asleep, but a loaded machine adds the wait for a CPU after each wake-up (preempted)
    assert.ok(sleeping >= 0.8 * total, `sleeping: ${sleeping} of ${total} µs`);
    within(sleeping * 1000, own.slowSleptNs, 10, 'the profile\'s time asleep vs the slow calls\' sleep');
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
    fx.child.stdin!.end();
  });

  test('latency text mode prints live figures while the calls run', async () => {
    const fx = startFixture(JDK25, classes, 1000, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    const cli = startCli(['latency', '--pid', String(pid), 'MethodLatency::work', '--interval', '1', '--duration', '120']);
    await recordingStarted(pid);
    fx.go();
    // a figure line while the calls still run (they take ~5 s; a live read comes every 2 s)
    await waitFor(() => /count [1-9]/.test(cli.stdout()) || fx.out().includes('done'), 60_000);
    assert.match(cli.stdout(), /count [1-9]\d*, p50/, `no live figure before the program finished: ${cli.stdout()}`);
    const own = await fx.own();
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`count ${own.calls}, p50`));
    assert.match(r.stdout, /MethodLatency\.work in JVM pid \d+ \(JDK 25[^)]*\): JFR method tracing/);
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
    fx.child.stdin!.end();
  });

  test('a CLI killed with SIGKILL mid-session leaves no recording running in the JVM (latency and jfr --record)', async () => {
    const fx = startFixture(JDK25, classes, 1, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    for (const args of [['latency', '--pid', String(pid), 'MethodLatency.work', '--duration', '120'], ['jfr', '--record', String(pid), '--out', path.join(work, 'killed.jfr'), '--duration', '120', '--method-trace', 'MethodLatency::work']]) {
      const cli = startCli(args);
      await recordingStarted(pid);
      cli.child.kill('SIGKILL');
      await cli.done;
      // the guard, not the dead CLI, stops it: the JVM no longer traces the method for nobody
      assert.ok(await waitFor(() => /No available recordings/.test(jcmd(pid, 'JFR.check')), 20_000, 300), `${args[0]}: a recording still runs after the CLI was killed: ${jcmd(pid, 'JFR.check')}`);
    }
    assert.ok(!fs.existsSync(path.join(work, 'killed.jfr')), 'a killed recording wrote no file of ours');
    fx.child.stdin!.end();
  });

  test('jfr --record --method-timing/--method-trace: counts equal jfr summary, timing equals jfr print', async () => {
    const fx = startFixture(JDK25, classes, 200, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    const rec = path.join(work, 'timed.jfr');
    const cli = startCli(['jfr', '--record', String(pid), '--out', rec, '--duration', '15', '--method-timing', 'MethodLatency::work,MethodLatency::rank', '--method-trace', 'MethodLatency::work']);
    await recordingStarted(pid);
    fx.go();
    const own = await fx.own();
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const summary = spawnSync(`${JDK25}/bin/jfr`, ['summary', rec], { encoding: 'utf8' }).stdout;
    const theirs = (t: string) => Number(new RegExp(`^\\s*${t.replace('.', '\\.')}\\s+(\\d+)`, 'm').exec(summary)?.[1]);
    const mine = runCli(['jfr', rec, '--json']);
    assert.equal(mine.code, 0, mine.stderr);
    const types = (JSON.parse(mine.stdout) as { types: { type: string; count: number }[] }).types;
    const ours = (t: string) => types.find((x) => x.type === t)?.count;
    console.log(`jfr summary: MethodTrace ${theirs('jdk.MethodTrace')} MethodTiming ${theirs('jdk.MethodTiming')}; ours ${ours('jdk.MethodTrace')} ${ours('jdk.MethodTiming')}; program calls ${own.calls}`);
    assert.equal(ours('jdk.MethodTrace'), theirs('jdk.MethodTrace'));
    assert.equal(ours('jdk.MethodTiming'), theirs('jdk.MethodTiming'));
    assert.equal(theirs('jdk.MethodTrace'), own.calls);
    const timing = runCli(['jfr', rec, '--event', 'method-timing', '--json']);
    assert.equal(timing.code, 0, timing.stderr);
    const rows = (JSON.parse(timing.stdout) as { methods: { method: string; invocations: number; avgNs: number; maxNs: number }[] }).methods;
    const printed = JSON.parse(spawnSync(`${JDK25}/bin/jfr`, ['print', '--json', '--events', 'jdk.MethodTiming', rec], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout) as { recording: { events: { values: { method: { name: string }; invocations: number } }[] } };
    const last = new Map<string, number>();
    for (const e of printed.recording.events) last.set(e.values.method.name, Math.max(last.get(e.values.method.name) ?? 0, e.values.invocations));
    const row = rows.find((x) => x.method.startsWith('MethodLatency.work'));
    assert.ok(row, `no MethodLatency.work row: ${timing.stdout}`);
    console.log(`method timing: ours ${JSON.stringify(row)}; jfr print invocations ${last.get('work')}; program ${JSON.stringify(own)}`);
    assert.equal(row.invocations, last.get('work'));
    assert.equal(row.invocations, own.calls);
    within(row.maxNs, own.maxNs, 5, 'max');
    assert.match(runCli(['jfr', rec, '--event', 'method-timing']).stdout, /MethodLatency\.work\(I\)\s+200\s/);
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
    fx.child.stdin!.end();
  });

  test('one overload by descriptor; a wrong one times nothing and says so; the JVM exiting mid-session ends it with the figures so far', async () => {
    const fx = startFixture(JDK25, classes, 2000, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    const right = startCli(['latency', '--pid', String(pid), 'MethodLatency.work(I)J', '--duration', '120', '--json', '--verbose']);
    const wrong = startCli(['latency', '--pid', String(pid), 'MethodLatency.work(J)J', '--duration', '120', '--json', '--verbose']);
    // another method's session at the same time: JFR unites the filters, each session keeps its own method
    const other = startCli(['latency', '--pid', String(pid), 'MethodLatency.leaf', '--duration', '120', '--json', '--verbose']);
    // each session says when its recording runs (a jcmd every few hundred ms would start a JVM each time, and attach beside ours)
    const said = () => [right, wrong, other].every((c) => /latency: JFR recording \S+ traces/.test(c.stderr()) || c.child.exitCode !== null);
    assert.ok(await waitFor(said, 60_000, 200), `the three sessions did not start:\n(I)J: ${right.stderr()}\n(J)J: ${wrong.stderr()}\nleaf: ${other.stderr()}`);
    const check = jcmd(pid, 'JFR.check');
    assert.equal(check.match(/ebpf-studio-latency/g)?.length, 3, `the three recordings started: ${check}\n(I)J: ${right.stderr()}\n(J)J: ${wrong.stderr()}\nleaf: ${other.stderr()}`);
    fx.go();
    // past a live read (every 2 s), then the JVM dies mid-run
    await new Promise((r) => setTimeout(r, 5000));
    wrong.child.kill('SIGINT');
    other.child.kill('SIGINT');
    const b = await wrong.done;
    const o = await other.done;
    assert.equal((JSON.parse(o.stdout) as LatencyResult).stats.count, 0, `leaf() was not called, yet: ${o.stdout.slice(0, 300)}`);
    assert.match(b.stderr, /warning: no call of MethodLatency::work\(J\)J was timed/);
    fx.child.kill('SIGKILL');
    const a = await right.done;
    assert.equal(a.code, 0, a.stderr);
    const ra = JSON.parse(a.stdout) as LatencyResult;
    const rb = JSON.parse(b.stdout) as LatencyResult;
    console.log(`JVM killed mid-run: the (I)J session had ${ra.stats.count} calls, p50 ${ra.stats.p50Ns}; the (J)J one ${rb.stats.count}; stderr: ${b.stderr.trim().split('\n').pop()}`);
    assert.ok(ra.stats.count > 0 && ra.stats.count < 2000, `figures so far: ${ra.stats.count}`);
    assert.ok(ra.stats.p50Ns > 0.9e6 && ra.stats.p50Ns < 2e6, `p50 ${ra.stats.p50Ns}`);
    assert.equal(rb.stats.count, 0);
  });

  test('a JDK 17 JVM is refused by name; a bad method filter is a usage error', { skip: fs.existsSync(`${JDK17}/bin/java`) ? undefined : `no JDK 17 at ${JDK17}` }, async () => {
    const { work: w17, classes: c17 } = compileJavaFixture('ebpf-latjfr17-', 'MethodLatency.java', JDK17);
    const fx = startFixture(JDK17, c17, 10, children);
    try {
      assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
      const r = runCli(['jfr', '--record', String(fx.child.pid), '--out', path.join(w17, 'x.jfr'), '--duration', '1', '--method-timing', 'MethodLatency::work']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /runs JDK 17[.\d]* .*need JDK 25 or later/);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
      const bad = runCli(['jfr', '--record', String(fx.child.pid), '--out', path.join(w17, 'y.jfr'), '--method-timing', 'a b;c']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /is not a method filter/);
    } finally {
      fx.child.kill('SIGKILL');
      fs.rmSync(w17, { recursive: true, force: true });
    }
  });
});

// An unprivileged user asks for the JFR method tracing of another user's and root's JDK 25 JVMs,
// through the CLI (latency, and jfr --record --method-timing) and through the installed helper
// (which runs as root for it): every request is refused before the JVM is asked anything, and
// neither JVM runs a recording afterwards. The JVM's owner measures it, as himself and through
// the helper, in the same test.
describe('attack: JFR method tracing of another user\'s JVM', { skip: skip ?? attackSkipReason(), timeout: 600_000 }, () => {
  const tag = process.pid % 100000;
  let mallory: AttackUser | undefined;
  let bob: AttackUser | undefined;
  let bed: AttackBed | undefined;
  let work = '';
  const children: ChildProcess[] = [];

  before(() => {
    mallory = makeUser(`ebpfJm${tag}`);
    bob = makeUser(`ebpfJb${tag}`);
    bed = new AttackBed('latjfr');
    ({ work } = compileJavaFixture('ebpf-latjfr-att-', 'MethodLatency.java', JDK25));
  });
  after(() => {
    removeJavaFixture(children, work);
    for (const c of bed?.children ?? []) c.kill('SIGKILL');
    bed?.dispose();
    removeUser(mallory);
    removeUser(bob);
  });

  test('mallory is refused on bob\'s and root\'s JVM (CLI and helper); bob measures his own', async () => {
    const dir = bed!.userDir(bob!, 'jvm');
    fs.copyFileSync(path.join(work, 'classes', 'MethodLatency.class'), path.join(dir, 'MethodLatency.class'));
    fs.chmodSync(path.join(dir, 'MethodLatency.class'), 0o644);
    const bobFx = startFixture(JDK25, dir, 100, bed!.children, bob);
    const rootFx = startFixture(JDK25, dir, 100, children);
    assert.ok(await waitFor(() => bobFx.out().includes('ready') && rootFx.out().includes('ready'), 30_000), 'the JVMs did not start');
    for (const [who, fx, owner] of [['bob', bobFx, bob], ['root', rootFx, undefined]] as const) {
      const pid = fx.child.pid!;
      for (const args of [['latency', '--pid', String(pid), 'MethodLatency.work', '--duration', '2'], ['jfr', '--record', String(pid), '--out', '/tmp/ebpf-mallory.jfr', '--duration', '1', '--method-timing', 'MethodLatency::work']]) {
        const r = asUser(mallory!, [process.execPath, cliJs, ...args], { timeoutMs: 60_000 });
        assert.notEqual(r.status, 0, `${who} ${args[0]}: ${r.stdout}`);
        assert.match(r.stderr, /not yours|refused/, r.stderr);
        assert.doesNotMatch(r.stderr, /\n\s+at /);
        console.log(`  mallory ${args[0]} on ${who}'s JVM (CLI): exit ${r.status}: ${r.stderr.trim().split('\n')[0].slice(0, 140)}`);
      }
      const h = bed!.helperFor(mallory!);
      try {
        await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid, target: 'MethodLatency.work', thresholdMs: 0 } } as never), /not yours|refused/);
        await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid, target: 'MethodLatency.work', thresholdMs: 0, byCaller: true } } as never), /not yours|refused/);
      } finally {
        await h.close();
      }
      assert.match(jcmd(pid, 'JFR.check', owner), /No available recordings/, `${who}'s JVM runs no recording`);
    }
    assert.ok(!fs.existsSync('/tmp/ebpf-mallory.jfr'));
    // bob, as himself through the CLI, then through the helper
    const cli = spawnAsUser(bob!, [process.execPath, cliJs, 'latency', '--pid', String(bobFx.child.pid), 'MethodLatency.work', '--duration', '120', '--json'], {}, bed!.children);
    let out = '';
    cli.stdout!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => cli.once('exit', resolve));
    await recordingStarted(bobFx.child.pid!).catch(async () => assert.ok(await waitFor(() => /ebpf-studio/.test(jcmd(bobFx.child.pid!, 'JFR.check', bob)), 30_000, 300)));
    bobFx.go();
    const own = await bobFx.own();
    cli.kill('SIGINT');
    assert.equal(await exited, 0);
    const res = JSON.parse(out) as LatencyResult;
    assert.equal(res.stats.count, own.calls);
    const bobFx2 = startFixture(JDK25, dir, 50, bed!.children, bob);
    assert.ok(await waitFor(() => bobFx2.out().includes('ready'), 30_000));
    const h = bed!.helperFor(bob!);
    try {
      const refused = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: rootFx.child.pid, target: 'MethodLatency.work', thresholdMs: 0 } } as never).catch((e: Error) => e)) as Error;
      assert.match(String(refused.message), /not yours|refused/, 'bob is refused on root\'s JVM through the helper');
      const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: bobFx2.child.pid, target: 'MethodLatency.work', thresholdMs: 10 } } as never)) as proto.SessionStartResult;
      bobFx2.go();
      const own2 = await bobFx2.own();
      const r = (await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId } as never)) as proto.SessionResult<'latency'>;
      console.log(`  bob through the helper: ${r.result.stats.count} calls of ${own2.calls}, ${r.result.stats.slowCalls} over 10 ms (his program: ${own2.over10ms})`);
      assert.equal(r.result.stats.count, own2.calls);
      assert.equal(r.result.stats.slowCalls, own2.over10ms);
      assert.match(jcmd(bobFx2.child.pid!, 'JFR.check', bob), /No available recordings/);
      bobFx2.child.stdin!.end();
    } finally {
      await h.close();
    }
    console.log(`  bob on his own JVM: ${res.stats.count} calls of ${own.calls}, p50 ${res.stats.p50Ns} ns (his program: ${own.p50Ns})`);
    assert.match(jcmd(bobFx.child.pid!, 'JFR.check', bob), /No available recordings/);
    bobFx.child.stdin!.end();
    rootFx.child.stdin!.end();
  });
});
