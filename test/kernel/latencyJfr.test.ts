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
import { compileJavaFixture, removeJavaFixture, runCli, startCli, waitFor } from '../helpers';

const JDK25 = '/usr/lib/jvm/temurin-25-jdk-amd64';
const JDK17 = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = !fs.existsSync(`${JDK25}/bin/jfr`) ? `no Temurin 25 at ${JDK25}` : undefined;

interface Own {
  calls: number;
  p50Ns: number;
  p99Ns: number;
  maxNs: number;
  over10ms: number;
}

interface Fixture {
  child: ChildProcess;
  out: () => string;
  go(): void;
  own(): Promise<Own>;
}

function startFixture(jdk: string, classes: string, calls: number, children: ChildProcess[]): Fixture {
  const child = spawn(`${jdk}/bin/java`, ['-cp', classes, 'MethodLatency', String(calls)], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  return {
    child,
    out: () => out,
    go: () => child.stdin!.write('go\n'),
    async own() {
      assert.ok(await waitFor(() => /done calls=/.test(out), 120_000), `the fixture did not finish: ${out}`);
      const m = /done calls=(\d+) p50Ns=(\d+) p99Ns=(\d+) maxNs=(\d+) totalNs=\d+ over10ms=(\d+)/.exec(out)!;
      return { calls: +m[1], p50Ns: +m[2], p99Ns: +m[3], maxNs: +m[4], over10ms: +m[5] };
    },
  };
}

function jcmd(pid: number, what: string): string {
  return spawnSync(`${JDK25}/bin/jcmd`, [String(pid), what], { encoding: 'utf8', timeout: 30_000 }).stdout;
}

/** Waits until the JVM runs a recording of ours (the tracing is in place before the calls start). */
async function recordingStarted(pid: number): Promise<void> {
  assert.ok(await waitFor(() => /ebpf-studio/.test(jcmd(pid, 'JFR.check')), 30_000, 300), 'no recording of ours started in the JVM');
}

const within = (ours: number, theirs: number, pct: number, what: string) => assert.ok(Math.abs(ours - theirs) <= (theirs * pct) / 100, `${what}: ours ${ours} vs the program's ${theirs} (more than ${pct} % apart)`);

describe('Java method latency and timing through JDK 25 JFR', { skip, timeout: 600_000 }, () => {
  let work = '';
  let classes = '';
  const children: ChildProcess[] = [];
  before(() => ({ work, classes } = compileJavaFixture('ebpf-latjfr-', 'MethodLatency.java', JDK25)));
  after(() => removeJavaFixture(children, work));

  test('latency --pid P Class.method: exact count, p50/p99 within 5 % of the program, slow stacks, nothing left running', async () => {
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
      assert.equal(s.stack[1].line, 32);
    }
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
    fx.child.stdin!.end();
  });

  test('latency text mode prints live figures while the calls run', async () => {
    const fx = startFixture(JDK25, classes, 600, children);
    assert.ok(await waitFor(() => fx.out().includes('ready'), 30_000));
    const pid = fx.child.pid!;
    const cli = startCli(['latency', '--pid', String(pid), 'MethodLatency::work', '--interval', '1', '--duration', '120']);
    await recordingStarted(pid);
    fx.go();
    assert.ok(await waitFor(() => /count [1-9]/.test(cli.stdout()) && !/done/.test(fx.out()), 60_000) || /count [1-9]/.test(cli.stdout()), `no live figure: ${cli.stdout()}`);
    const own = await fx.own();
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`count ${own.calls}, p50`));
    assert.match(r.stdout, /MethodLatency\.work in JVM pid \d+ \(JDK 25[^)]*\): JFR method tracing/);
    assert.match(jcmd(pid, 'JFR.check'), /No available recordings/);
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
