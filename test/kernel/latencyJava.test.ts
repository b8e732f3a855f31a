// `ebpf-studio latency --pid P Class.method` on a running JDK 17 JVM through our agent
// (native/javalatency): the fixture times its own calls (80 % ~1 ms busy spin, 20 % 20 ms sleep),
// our count must equal its count over the window (it pauses at the window's ends), p50 and p99
// within 5 % of its own, the slow calls' stacks start at the method with its file:line; after the
// session the class is back (a fast method's cost returns to its baseline) and a second session
// attaches again. Attacks: an unprivileged user aims the CLI and the helper at another user's JVM
// and at root's; the JVM's owner plants links and FIFOs where root places the jar and reads the
// snapshot. Nothing of root's changes, and the owner's own session still works.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import * as proto from '../../extension/protocol/protocol';
import type { LatencyResult } from '../../extension/protocol/latency';
import { AttackBed, asUser, attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';
import { cliJs, distDir, kernelSkipReason, runCli, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const JAR = path.join(distDir, 'ebpf-studio-javalatency.jar');
const baseSkip = kernelSkipReason() ?? (!fs.existsSync(`${JDK}/bin/javac`) ? `no JDK 17 at ${JDK}` : !fs.existsSync(JAR) ? `${JAR} is not built (no JDK 17-23 javac at build time)` : undefined);

/** The fixture JVM, driven line by line on stdin. */
class Fixture {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private waiters: (() => void)[] = [];

  constructor(dir: string, runAs?: { u: AttackUser; children: ChildProcess[] }) {
    const cmd = [`${JDK}/bin/java`, '-XX:TieredStopAtLevel=4', '-cp', dir, 'LatencyAgentTarget'];
    this.child = runAs ? spawnAsUser(runAs.u, cmd, { cwd: dir }, runAs.children) : spawn(cmd[0], cmd.slice(1), { cwd: dir, stdio: ['pipe', 'pipe', 'inherit'] });
    readline.createInterface({ input: this.child.stdout! }).on('line', (l) => {
      this.lines.push(l);
      this.waiters.splice(0).forEach((w) => w());
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  async next(prefix: string, timeoutMs = 60_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const i = this.lines.findIndex((l) => l.startsWith(prefix));
      if (i >= 0) return this.lines.splice(i, 1)[0];
      if (Date.now() > end) throw new Error(`the fixture did not say ${prefix}: ${this.lines.join(' | ')}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }

  async ask(cmd: string, prefix: string): Promise<Record<string, number>> {
    this.child.stdin!.write(`${cmd}\n`);
    const line = await this.next(prefix);
    return Object.fromEntries([...line.matchAll(/(\w+)=([\d.]+)/g)].map((m) => [m[1], Number(m[2])]));
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

function compile(dir: string): void {
  const jc = spawnSync(`${JDK}/bin/javac`, ['-d', dir, path.join(__dirname, '../fixtures/java/LatencyAgentTarget.java')], { encoding: 'utf8' });
  assert.equal(jc.status, 0, jc.stderr);
}

const snapshots = (pid: number) => fs.readdirSync(`/proc/${pid}/root/tmp`).filter((n) => n.startsWith(`.ebpf-studio-latency-${pid}-`));
const within = (ours: number, theirs: number, pct: number) => Math.abs(ours - theirs) <= (theirs * pct) / 100;

/** A CLI latency session run in the background, ended with SIGINT; its --json result. */
function session(args: string[], asUserU?: AttackUser) {
  const cmd = [process.execPath, cliJs, 'latency', ...args, '--json'];
  const child = asUserU ? spawnAsUser(asUserU, cmd) : spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const done = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    err: () => err,
    async end(): Promise<LatencyResult> {
      child.kill('SIGINT');
      const code = await done;
      assert.equal(code, 0, `latency exited ${code}: ${err}`);
      return JSON.parse(out) as LatencyResult;
    },
  };
}

describe('latency of a Java method on JDK 17 (agent)', { skip: baseSkip, timeout: 240_000 }, () => {
  let dir = '';
  let fx: Fixture;

  before(async () => {
    dir = fs.mkdtempSync('/var/tmp/ebpf-latjava-');
    fs.chmodSync(dir, 0o755);
    compile(dir);
    fx = new Fixture(dir);
    await fx.next('ready');
  });

  after(() => {
    fx?.kill();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('count exact, p50/p99 within 5 % of the program\'s own, slow stacks at the method; restored after stop', async () => {
    const base = (await fx.ask('bench 5000000', 'bench')).nsPerCall;
    const n0 = (await fx.ask('pause', 'paused')).calls;
    const s = session(['--pid', String(fx.pid), 'LatencyAgentTarget.work', '--threshold-ms', '10']);
    assert.ok(await waitFor(() => snapshots(fx.pid).length > 0, 60_000, 50), `the agent started: ${s.err()}`);
    await new Promise((r) => setTimeout(r, 300)); // the first snapshot is written after the rewrite
    await fx.ask('resume', 'resumed');
    await new Promise((r) => setTimeout(r, 4000));
    const n1 = (await fx.ask('pause', 'paused')).calls;
    const r = await s.end();
    await fx.ask('resume', 'resumed');
    const own = await fx.ask(`stats ${n0} ${n1}`, 'stats');
    console.log(`  ours: count ${r.stats.count} p50 ${r.stats.p50Ns} p99 ${r.stats.p99Ns} max ${r.stats.maxNs}; program's own: count ${own.count} p50 ${own.p50Ns} p99 ${own.p99Ns} max ${own.maxNs}`);
    assert.equal(r.probe.returns, 'java-agent');
    assert.equal(r.stats.count, own.count, 'every call of the window, once');
    assert.ok(within(r.stats.p50Ns, own.p50Ns, 5), `p50 ${r.stats.p50Ns} vs ${own.p50Ns}`);
    assert.ok(within(r.stats.p99Ns, own.p99Ns, 5), `p99 ${r.stats.p99Ns} vs ${own.p99Ns}`);
    assert.ok(r.slow.length > 0 && Math.abs((r.stats.slowCalls ?? 0) - own.over10ms) <= 2, `slow calls ${r.stats.slowCalls}, the program's own ${own.over10ms} at least 10 ms`);
    const top = r.slow[0].stack[0];
    assert.equal(top.function, 'LatencyAgentTarget.work');
    assert.equal(top.file, 'LatencyAgentTarget.java');
    assert.ok((top.line ?? 0) > 0, 'a line');
    assert.ok(r.slow[0].stack.some((f) => f.function === 'LatencyAgentTarget.worker' && f.file === 'LatencyAgentTarget.java'), 'its caller');
    assert.ok(r.histograms[0].count === r.stats.count, 'the histogram holds every call');
    assert.deepEqual(snapshots(fx.pid), [], 'the snapshot is removed');

    // a second session, on a fast method: its cost while timed, and back to baseline after
    const s2 = session(['--pid', String(fx.pid), 'LatencyAgentTarget.tiny(J)J']);
    assert.ok(await waitFor(() => snapshots(fx.pid).length > 0, 60_000, 50), `the second session started: ${s2.err()}`);
    await new Promise((r2) => setTimeout(r2, 300));
    const timed = (await fx.ask('bench 5000000', 'bench')).nsPerCall;
    const r2 = await s2.end();
    const after2 = (await fx.ask('bench 5000000', 'bench')).nsPerCall;
    console.log(`  tiny(): ${base.toFixed(2)} ns/call before, ${timed.toFixed(2)} timed (+${(timed - base).toFixed(1)} ns), ${after2.toFixed(2)} after stop; ${r2.stats.count} calls counted`);
    assert.ok(r2.stats.count >= 25_000_000, `every bench call counted: ${r2.stats.count}`);
    assert.ok(timed > base + 5, 'timing costs something while on');
    assert.ok(after2 < base * 1.5 + 2, `the class is restored: ${after2} ns/call vs ${base} before`);
  });

  /** One --profile-slow session over a window of the fixture's calls (paused at both ends): its result and the program's own figures. */
  async function profiled(thresholdMs: string): Promise<{ r: LatencyResult; own: Record<string, number>; total: number; under: (state: string) => number; inState: (state: string) => number }> {
    const n0 = (await fx.ask('pause', 'paused')).calls;
    const s = session(['--pid', String(fx.pid), 'LatencyAgentTarget.work', '--threshold-ms', thresholdMs, '--profile-slow']);
    assert.ok(await waitFor(() => snapshots(fx.pid).length > 0, 60_000, 50), `the agent started: ${s.err()}`);
    await new Promise((r) => setTimeout(r, 300));
    await fx.ask('resume', 'resumed');
    await new Promise((r) => setTimeout(r, 2000));
    const n1 = (await fx.ask('pause', 'paused')).calls;
    const r = await s.end();
    await fx.ask('resume', 'resumed');
    const own = await fx.ask(`stats ${n0} ${n1}`, 'stats');
    assert.ok(r.profile, `a profile: ${s.err()}`);
    const stacks = r.profile.stacks;
    const us = (st: { value?: number; count: number }) => st.value ?? st.count;
    const sum = (f: (st: (typeof stacks)[number]) => boolean) => stacks.filter(f).reduce((a, st) => a + us(st), 0);
    const underWork = (st: (typeof stacks)[number]) => st.frames.some((f) => f.function === 'LatencyAgentTarget.work');
    assert.deepEqual(snapshots(fx.pid), [], 'the snapshot is removed');
    return { r, own, total: sum(() => true), under: (state) => sum((st) => st.state === state && underWork(st)), inState: (state) => sum((st) => st.state === state) };
  }

  test('--profile-slow: the slow calls\' wall-clock profile is under the method, asleep (or on CPU), as long as the program slept (or spun); no slow call: empty, said', { skip: fs.existsSync(path.join(distDir, 'libebpf-studio-jvmagent.so')) ? undefined : 'the JVMTI agent is not built' }, async () => {
    const t0 = Date.now();
    // over 10 ms: the calls that sleep 20 ms
    const a = await profiled('10');
    const underA = ['sleep', 'oncpu', 'preempted'].reduce((x, st) => x + a.under(st), 0);
    console.log(`  slow calls (>= 10 ms) profiled: ${(a.total / 1000).toFixed(1)} ms, ${((100 * underA) / a.total).toFixed(1)} % under work(), asleep there ${(a.under('sleep') / 1000).toFixed(1)} ms (${((100 * a.under('sleep')) / a.total).toFixed(1)} %), ${a.r.stats.profiledSlow} calls; the program: ${a.own.over10ms} calls >= 10 ms taking ${(a.own.over10msNs / 1e6).toFixed(1)} ms, slept ${(a.own.sleptNs / 1e6).toFixed(1)} ms`);
    assert.ok(Math.abs((a.r.stats.profiledSlow ?? 0) - a.own.over10ms) <= 2, `profiled ${a.r.stats.profiledSlow} slow calls, the program made ${a.own.over10ms}`);
    assert.ok(underA >= 0.9 * a.total, `under the method: ${underA} of ${a.total} µs`);
    // asleep, but a loaded machine adds the wait for a CPU after each wake-up (preempted)
    assert.ok(a.under('sleep') >= 0.8 * a.total, `asleep under the method: ${a.under('sleep')} of ${a.total} µs`);
    assert.ok(within(a.under('sleep') * 1000, a.own.sleptNs, 10), `asleep ${a.under('sleep')} µs vs the program's slept ${a.own.sleptNs} ns`);
    assert.ok(within(a.total * 1000, a.own.over10msNs, 10), `the profile's ${a.total} µs vs the program's own time in its slow calls, ${a.own.over10msNs} ns`);
    // over 0.5 ms: every call, the 1 ms spins too: their on-CPU samples under work() with its Java frames
    const b = await profiled('0.5');
    const spunNs = b.own.totalNs - b.own.sleptNs;
    const ran = b.inState('oncpu') + b.inState('preempted');
    console.log(`  every call profiled: on CPU ${(b.inState('oncpu') / 1000).toFixed(1)} ms (${(b.under('oncpu') / 1000).toFixed(1)} under work()), preempted ${(b.inState('preempted') / 1000).toFixed(1)} ms (${(b.under('preempted') / 1000).toFixed(1)} under work()), asleep ${(b.inState('sleep') / 1000).toFixed(1)} ms; the program spun ${(spunNs / 1e6).toFixed(1)} ms, slept ${(b.own.sleptNs / 1e6).toFixed(1)} ms`);
    assert.ok(b.under('oncpu') + b.under('preempted') >= 0.9 * ran, 'on-CPU and preempted time under the method');
    // the spins' time: on CPU, or preempted (the CPUs are shared); the preempted time's Java stack
    // is where the thread ran on from, so a spin preempted at its end may land outside the window
    assert.ok(within(ran * 1000, spunNs, 25), `on CPU and preempted ${ran} µs vs the program's spin ${spunNs} ns`);
    // a threshold no call reaches: an empty profile, and the reason said
    const none = runCli(['latency', '--pid', String(fx.pid), 'LatencyAgentTarget.work', '--threshold-ms', '1000', '--profile-slow', '--duration', '1.5'], { timeoutMs: 60_000 });
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /slow calls profiled: 0: no call was slower than the threshold, so the profile is empty/);
    console.log(`  no call over 1000 ms: "${none.stdout.trim().split('\n').pop()}"; the three runs ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  });

  test('recursion is timed at every depth, calls ending by an exception are timed too', async () => {
    for (const [method, key] of [['LatencyAgentTarget.rec', 'recCalls'], ['LatencyAgentTarget.thrower', 'throwerCalls']] as const) {
      const s = session(['--pid', String(fx.pid), method]);
      assert.ok(await waitFor(() => snapshots(fx.pid).length > 0, 60_000, 50), `started: ${s.err()}`);
      await new Promise((r) => setTimeout(r, 300));
      const own = await fx.ask('shapes 1000', 'shapes');
      const r = await s.end();
      console.log(`  ${method}: ${r.stats.count} calls counted, the program made ${own[key]}${key === 'throwerCalls' ? ` (${own.thrown} threw)` : ''}`);
      assert.equal(r.stats.count, own[key]);
    }
  });

  test('--by-caller: leaf()\'s calls per caller equal the program\'s own counts, each at the line of its call', async () => {
    const t0 = Date.now();
    const s = session(['--pid', String(fx.pid), 'LatencyAgentTarget.leaf', '--by-caller']);
    // the snapshot itself (not just its lease): the class is rewritten
    assert.ok(await waitFor(() => snapshots(fx.pid).some((n) => n.endsWith('.json')), 60_000, 50), `started: ${s.err()}`);
    const own = await fx.ask('callers 3000 5000', 'callers');
    const r = await s.end();
    const src = fs.readFileSync(path.join(__dirname, '../fixtures/java/LatencyAgentTarget.java'), 'utf8').split('\n');
    const lineOf = (mark: string) => src.findIndex((l) => l.includes(mark)) + 1;
    const rows = (r.callers ?? []).map((c) => [c.caller, c.count, c.file, c.line]);
    console.log(`  by caller: ${JSON.stringify(rows)}; the program: viaA ${own.a}, viaB ${own.b} calls; ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.deepEqual(rows, [
      ['LatencyAgentTarget.viaB', own.b, 'LatencyAgentTarget.java', lineOf("viaB's call")],
      ['LatencyAgentTarget.viaA', own.a, 'LatencyAgentTarget.java', lineOf("viaA's call")],
    ]);
    assert.equal(r.stats.count, own.a + own.b);
    assert.deepEqual(snapshots(fx.pid), []);
  });

  test('the tool killed mid-session: the agent\'s lease lapses, it puts the class back and removes its files', async () => {
    const base = (await fx.ask('bench 2000000', 'bench')).nsPerCall;
    const s = session(['--pid', String(fx.pid), 'LatencyAgentTarget.tiny']);
    assert.ok(await waitFor(() => snapshots(fx.pid).length > 0, 60_000, 50), `started: ${s.err()}`);
    await new Promise((r) => setTimeout(r, 1500));
    s.child.kill('SIGKILL');
    const t0 = Date.now();
    assert.ok(await waitFor(() => snapshots(fx.pid).length === 0, 40_000, 200), 'the agent removed its files');
    const after2 = (await fx.ask('bench 2000000', 'bench')).nsPerCall;
    console.log(`  CLI killed: the agent stopped itself after ${((Date.now() - t0) / 1000).toFixed(1)} s; tiny() ${base.toFixed(2)} ns/call before, ${after2.toFixed(2)} after`);
    assert.ok(after2 < base * 1.5 + 2, `restored: ${after2} vs ${base}`);
  });

  test('clear errors: class not loaded, no such method, a non-Java operand on a JVM', () => {
    for (const [operand, re] of [
      ['com.example.NotLoaded.parse', /class com\.example\.NotLoaded is not loaded/],
      ['LatencyAgentTarget.nope', /no method nope .*LatencyAgentTarget/],
      ['LatencyAgentTarget.work(Ljava/lang/String;)V', /no method work\(Ljava\/lang\/String;\)V/],
      ['main.c:12', /is a JVM: name a Java method as Class\.method/],
    ] as const) {
      const r = runCli(['latency', '--pid', String(fx.pid), operand, '--duration', '1']);
      assert.notEqual(r.code, 0, operand);
      assert.match(r.stderr, re, r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    }
    assert.deepEqual(snapshots(fx.pid), []);
  });
});

describe('attacks on Java latency: another user\'s JVM, planted links and FIFOs', { skip: baseSkip ?? attackSkipReason(['gcc']), timeout: 240_000 }, () => {
  const tag = process.pid % 100000;
  let mallory: AttackUser | undefined;
  let bob: AttackUser | undefined;
  let bed: AttackBed;
  let dir = '';
  let bobFx: Fixture;
  let rootFx: Fixture;
  const secret = `root-secret-${crypto.randomBytes(8).toString('hex')}`;
  let victim = '';

  before(async () => {
    mallory = makeUser(`ebpfLm${tag}`);
    bob = makeUser(`ebpfLb${tag}`);
    bed = new AttackBed('latjava');
    victim = bed.victim('secret.txt', `${secret}\n`);
    dir = bed.userDir(bob, 'jvm');
    compile(dir);
    rootFx = new Fixture(dir);
    bobFx = new Fixture(dir, { u: bob, children: bed.children });
    await rootFx.next('ready');
    await bobFx.next('ready');
  });

  after(() => {
    rootFx?.kill();
    bobFx?.kill();
    for (const c of bed?.children ?? []) c.kill('SIGKILL');
    if (bed) fs.rmSync(bed.base, { recursive: true, force: true });
    // the jar (and the JVMTI agent of his slow calls' profile) bob's own sessions placed in the shared /tmp go with him
    for (const n of fs.readdirSync('/tmp').filter((f) => f.startsWith('ebpf-studio-javalatency-') || f.startsWith('ebpf-studio-jvmagent-'))) if (bob && fs.lstatSync(`/tmp/${n}`).uid === bob.uid) fs.rmSync(`/tmp/${n}`, { force: true });
    removeUser(mallory);
    removeUser(bob);
  });

  test('mallory is refused on bob\'s and root\'s JVM, through the CLI and the helper', async () => {
    const placed = () => fs.readdirSync('/tmp').filter((n) => n.startsWith('ebpf-studio-javalatency-') || n.startsWith('ebpf-studio-jvmagent-')).sort();
    const jarsBefore = placed();
    for (const [who, pid] of [['bob', bobFx.pid], ['root', rootFx.pid]] as const) {
      const r = asUser(mallory!, [process.execPath, cliJs, 'latency', '--pid', String(pid), 'LatencyAgentTarget.work', '--duration', '1']);
      assert.notEqual(r.status, 0, `${who}: ${r.stdout}`);
      assert.match(r.stderr, /refused|not yours/, r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
      console.log(`  mallory latency on ${who}'s JVM (CLI): exit ${r.status}: ${r.stderr.trim().split('\n')[0].slice(0, 140)}`);
      const h = bed.helperFor(mallory!);
      try {
        await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid, target: 'LatencyAgentTarget.work', thresholdMs: 0 } } as never), /refused|not yours/);
        // the slow calls' profile would load the JVMTI agent too: refused before anything is placed
        await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid, target: 'LatencyAgentTarget.work', thresholdMs: 10, profileSlow: true } } as never), /refused|not yours/);
        // and split by caller (another rewrite of the class): refused the same way
        await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid, target: 'LatencyAgentTarget.work', thresholdMs: 0, byCaller: true } } as never), /refused|not yours/);
      } finally {
        await h.close();
      }
      assert.deepEqual(snapshots(pid), [], `${who}'s JVM got no session`);
    }
    assert.deepEqual(placed(), jarsBefore, 'no jar or JVMTI agent was placed');
    // bob measures his own JVM, as himself
    const r = asUser(bob!, [process.execPath, cliJs, 'latency', '--pid', String(bobFx.pid), 'LatencyAgentTarget.work', '--duration', '3', '--json'], { timeoutMs: 90_000 });
    assert.equal(r.status, 0, r.stderr);
    const res = JSON.parse(r.stdout) as LatencyResult;
    assert.ok(res.stats.count > 0, 'bob gets his figures');
    console.log(`  bob on his own JVM: ${res.stats.count} calls, p50 ${res.stats.p50Ns} ns`);
    // and through the root-owned helper, as sudo would start it for him
    const h = bed.helperFor(bob!);
    try {
      const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: bobFx.pid, target: 'LatencyAgentTarget.work', thresholdMs: 10, profileSlow: true } } as never)) as proto.SessionStartResult;
      await new Promise((r) => setTimeout(r, 2000));
      const viaHelper = ((await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId })) as { result: LatencyResult }).result;
      assert.ok(viaHelper.stats.count > 0 && viaHelper.slow.length > 0, 'bob gets his figures through the helper');
      const profiled = viaHelper.profile?.stacks.filter((st) => st.frames.some((f) => f.function === 'LatencyAgentTarget.work')).length ?? 0;
      assert.ok(profiled > 0, 'and the profile of his slow calls');
      console.log(`  bob on his own JVM through the helper: ${viaHelper.stats.count} calls, ${viaHelper.slow.length} slow calls with stacks, ${viaHelper.stats.profiledSlow} profiled (${profiled} stacks under work())`);
    } finally {
      await h.close();
    }
    assert.deepEqual(snapshots(bobFx.pid), [], 'no file left in his /tmp');
  });

  test('bob\'s links and FIFOs at the jar and snapshot paths make root read or write nothing else', async () => {
    const fp = bed.fingerprint();
    const hash = crypto.createHash('sha256').update(fs.readFileSync(JAR)).digest('hex').slice(0, 16);
    const names = [`/tmp/ebpf-studio-javalatency-${hash}.jar`, `/tmp/ebpf-studio-javalatency-${hash}${bob!.uid.toString(16).padStart(8, '0')}.jar`];
    for (const n of names) fs.rmSync(n, { force: true });
    // the jar's names: a link to root's secret, and a FIFO
    assert.equal(asUser(bob!, ['ln', '-s', victim, names[0]]).status, 0);
    assert.equal(asUser(bob!, ['mkfifo', names[1]]).status, 0);
    const refused = runCli(['latency', '--pid', String(bobFx.pid), 'LatencyAgentTarget.work', '--duration', '1'], { timeoutMs: 60_000 });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /cannot place the Java latency agent/, refused.stderr);
    console.log(`  root on bob's JVM with the jar names planted: exit ${refused.code}: ${refused.stderr.trim().slice(0, 160)}`);
    for (const n of names) fs.rmSync(n, { force: true });
    // the snapshot: a C program as bob swaps links to root's secret and FIFOs in over it, fast
    const src = path.join(bed.base, 'swap.c');
    fs.writeFileSync(src, `#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>
int main(int c, char **v) { char p[512], t[600]; for (long i = 0; i < 4000000; i++) { DIR *d = opendir("/tmp"); struct dirent *e; if (!d) return 1;
  while ((e = readdir(d))) if (!strncmp(e->d_name, ".ebpf-studio-latency-", 21) && !strstr(e->d_name, ".new") && !strstr(e->d_name, ".x")) {
    snprintf(p, sizeof p, "/tmp/%s", e->d_name); snprintf(t, sizeof t, "%s.x", p);
    if (i & 1) symlink(v[1], t); else mkfifo(t, 0666); rename(t, p); }
  closedir(d); usleep(200); } return 0; }\n`);
    const swap = path.join(bed.base, 'swap');
    const gcc = spawnSync('gcc', ['-O2', '-o', swap, src], { encoding: 'utf8' });
    assert.equal(gcc.status, 0, gcc.stderr);
    fs.chmodSync(bed.base, 0o755);
    const s = session(['--pid', String(bobFx.pid), 'LatencyAgentTarget.work', '--threshold-ms', '10', '--interval', '0.2']);
    assert.ok(await waitFor(() => snapshots(bobFx.pid).length > 0, 60_000, 50), `the session started: ${s.err()}`);
    await new Promise((r) => setTimeout(r, 1500)); // past the start's own read of the answer
    const racer = spawnAsUser(bob!, [swap, victim], {}, bed.children);
    await new Promise((r) => setTimeout(r, 4000));
    racer.kill('SIGKILL');
    const r = await s.end();
    const all = JSON.stringify(r);
    assert.ok(!all.includes(secret), 'root\'s secret is not in the result');
    assert.deepEqual(bed.fingerprint(), fp, 'nothing of root\'s changed');
    for (const n of snapshots(bobFx.pid)) fs.rmSync(`/tmp/${n}`, { force: true });
    console.log(`  root's session on bob's JVM with bob swapping links/FIFOs in: exit 0, ${r.stats.count} calls, secret not read, victims unchanged`);
    // and bob's own session still works afterwards
    const b = asUser(bob!, [process.execPath, cliJs, 'latency', '--pid', String(bobFx.pid), 'LatencyAgentTarget.work', '--duration', '2', '--json'], { timeoutMs: 90_000 });
    assert.equal(b.status, 0, b.stderr);
    assert.ok((JSON.parse(b.stdout) as LatencyResult).stats.count > 0);
  });
});
