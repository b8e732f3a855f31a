// `ebpf-studio jfr` against the JDK's own `jfr` tool on a recording made in this test: OpenJDK 17
// runs test/fixtures/java/JfrWorkload.java (CPU in hotLoop, allocation, contended monitors and
// parks) under -XX:StartFlightRecording with the profile settings and -Xlog:gc. In the same run:
// event counts and bytes per type equal `jfr summary`'s; the top frames of the execution samples,
// their self and total counts, the allocation bytes and the lock waits equal what `jfr print --json`
// says aggregated here; GC pauses equal -Xlog:gc's; the JVM timeline made of the recording holds
// its samples per thread, its lock waits, GCs and safepoints. A truncated copy and fuzzed copies end with
// exit 2 and a byte offset (or read cleanly), never a stack trace. The same again with Temurin 25,
// whose recording also has JEP 509's CPU-time samples (jdk.CPUTimeSample), compared with JDK 25's
// own jfr tool. Needs a JDK, not BPF; the Record JFR step runs as root (the JVM's owner here).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import type { ProfileResult } from '../../extension/protocol/profile';
import type { JvmResult } from '../../extension/protocol/jvm';
import { fromSessionFile } from '../../extension/model/jvmTimeline';
import { compileJavaFixture, removeJavaFixture, runCli, waitFor } from '../helpers';
import { dumpJfr, recordJfr } from '../../extension/sys/jvm/jfrRecord';

const JDK17 = '/usr/lib/jvm/java-17-openjdk-amd64';
const JDK25 = '/usr/lib/jvm/temurin-25-jdk-amd64';
const skipOf = (jdk: string) => (!fs.existsSync(`${jdk}/bin/javac`) ? `no JDK at ${jdk}` : !fs.existsSync(`${jdk}/bin/jfr`) ? `no jfr tool in ${jdk}` : undefined);

interface JfrFrame {
  method: { type: { name: string }; name: string };
  lineNumber: number;
  type: string;
}
interface JfrEvent {
  type: string;
  values: { duration?: string; weight?: number; stackTrace?: { frames: JfrFrame[] } | null; sampledThread?: { javaName: string }; eventThread?: { javaName: string } };
}

/** "PT0.0129S" → µs */
function isoUs(d: string | undefined): number {
  const m = /^PT(?:(\d+)M)?([\d.]+)S$/.exec(d ?? '');
  assert.ok(m, `unknown JFR duration ${d}`);
  return (Number(m[1] ?? 0) * 60 + Number(m[2])) * 1e6;
}

/** Self (leaf) and total (on the stack) weight per function name. */
function shares(stacks: { names: string[]; weight: number }[]): { self: Map<string, number>; total: Map<string, number>; sum: number } {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let sum = 0;
  for (const s of stacks) {
    sum += s.weight;
    if (s.names.length) self.set(s.names[0], (self.get(s.names[0]) ?? 0) + s.weight);
    for (const n of new Set(s.names)) total.set(n, (total.get(n) ?? 0) + s.weight);
  }
  return { self, total, sum };
}

const jfrName = (f: JfrFrame) => `${f.method.type.name.replace(/\//g, '.')}.${f.method.name}`;
const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, n);

function suite(label: string, JDK: string, cpuType: string, settings: string): void {
  const JFR = `${JDK}/bin/jfr`;
  let work = '';
  let rec = '';
  let gcLog = '';
function jfrTool(args: string[]): string {
    const r = spawnSync(JFR, args, { encoding: 'utf8', maxBuffer: 1 << 30, timeout: 120_000 });
    assert.equal(r.status, 0, `jfr ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }
  
  function jfrPrint(events: string): JfrEvent[] {
    return (JSON.parse(jfrTool(['print', '--json', '--stack-depth', '2048', '--events', events, rec])) as { recording: { events: JfrEvent[] } }).recording.events;
  }

  function ours(event: string): ProfileResult {
    const r = runCli(['jfr', rec, '--event', event, '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as ProfileResult;
  }

describe(`ebpf-studio jfr on ${label} recording`, { skip: skipOf(JDK), timeout: 300_000 }, () => {
  before(() => {
    ({ work } = compileJavaFixture('ebpf-jfr-', 'JfrWorkload.java', JDK));
    rec = path.join(work, 'rec.jfr');
    gcLog = path.join(work, 'gc.log');
    // a young generation larger than what JFR's start allocates: no collection happens before the recording starts
    const args = ['-Xms512m', '-Xmx512m', '-Xmn96m', `-Xlog:gc:file=${gcLog}`, `-XX:StartFlightRecording=filename=${rec},settings=profile${settings}`, '-cp', path.join(work, 'classes'), 'JfrWorkload', '3'];
    const r = spawnSync(`${JDK}/bin/java`, args, { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `java: ${r.stderr}`);
    assert.ok(fs.statSync(rec).size > 0);
  });
  const children: ChildProcess[] = [];
  after(() => removeJavaFixture(children, work));

  test('event counts and bytes per type equal jfr summary', () => {
    const theirs = new Map<string, [number, number]>();
    for (const line of jfrTool(['summary', rec]).split('\n')) {
      const m = /^\s*(jdk\.\w+)\s+(\d+)\s+(\d+)\s*$/.exec(line);
      // JDK 25's jfr tool spells the constant pool events jdk.Checkpoint, 17's (and ours) jdk.CheckPoint
        if (m && Number(m[2]) > 0) theirs.set(m[1] === 'jdk.Checkpoint' ? 'jdk.CheckPoint' : m[1], [Number(m[2]), Number(m[3])]);
    }
    const r = runCli(['jfr', rec, '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    const mine = new Map((JSON.parse(r.stdout) as { types: { type: string; count: number; bytes: number }[] }).types.map((t) => [t.type, [t.count, t.bytes] as [number, number]]));
    assert.ok(theirs.size > 50, `jfr summary lists ${theirs.size} event types`);
    assert.deepEqual(Object.fromEntries([...mine].sort()), Object.fromEntries([...theirs].sort()));
    const total = [...mine.values()].reduce((a, [c]) => a + c, 0);
    console.log(`  ${mine.size} event types, ${total} events, ${fs.statSync(rec).size} bytes: counts and bytes equal jfr summary's`);
    // a recording is a sequence of chunks: the file twice over is two chunks' worth, for both readers
    const twice = path.join(work, 'twice.jfr');
    fs.writeFileSync(twice, Buffer.concat([fs.readFileSync(rec), fs.readFileSync(rec)]));
    const r2 = runCli(['jfr', twice, '--json'], { timeoutMs: 120_000 });
    assert.equal(r2.code, 0, r2.stderr);
    const doubled = (JSON.parse(r2.stdout) as { chunks: number; types: { type: string; count: number }[] });
    const theirs2 = jfrTool(['summary', twice]);
    const sample = /^\s*jdk\.ExecutionSample\s+(\d+)/m.exec(theirs2);
    assert.equal(doubled.types.find((t) => t.type === 'jdk.ExecutionSample')?.count, Number(sample?.[1]));
    assert.equal(doubled.types.find((t) => t.type === 'jdk.ExecutionSample')?.count, 2 * (mine.get('jdk.ExecutionSample')?.[0] ?? 0));
  });

  test(`${cpuType}: top frames and their self/total shares equal jfr print --json`, () => {
    const theirs = shares(jfrPrint(cpuType).map((e) => ({ names: (e.values.stackTrace?.frames ?? []).map(jfrName), weight: 1 })));
    const r = ours(cpuType === 'jdk.ExecutionSample' ? 'cpu' : cpuType);
    if (cpuType === 'jdk.CPUTimeSample') assert.equal(ours('cpu').samples, r.samples, '--event cpu takes the CPU-time samples where the recording has them');
    const mine = shares(r.stacks.map((s) => ({ names: s.frames.map((f) => f.function ?? '?'), weight: s.count })));
    assert.equal(r.samples, theirs.sum);
    assert.ok(theirs.sum > 50, `only ${theirs.sum} samples`);
    assert.deepEqual(top(mine.self, 10), top(theirs.self, 10));
    assert.deepEqual(top(mine.total, 15), top(theirs.total, 15));
    const hot = r.stacks.flatMap((s) => s.frames).find((f) => f.function === 'JfrWorkload.hotLoop');
    assert.equal(hot?.file, 'JfrWorkload.java', 'Java frames carry file:line');
    assert.ok((hot?.line ?? 0) > 0);
    const [name, n] = top(mine.self, 1)[0];
    console.log(`  ${r.samples} samples; top self ${name} ${((100 * n) / mine.sum).toFixed(1)}% in both; top 10 self and top 15 total equal`);
  });

  test('allocation samples and lock waits equal jfr print --json', () => {
    const allocs = jfrPrint('jdk.ObjectAllocationSample');
    const a = ours('alloc');
    assert.equal(a.unit, 'bytes');
    assert.equal(a.samples, allocs.length);
    assert.equal(a.stacks.reduce((x, s) => x + (s.value ?? 0), 0), allocs.reduce((x, e) => x + (e.values.weight ?? 0), 0));
    const waits = jfrPrint('jdk.JavaMonitorEnter,jdk.ThreadPark');
    const l = ours('lock');
    assert.equal(l.event, 'lock');
    assert.equal(l.samples, waits.length);
    const theirUs = waits.reduce((x, e) => x + isoUs(e.values.duration), 0);
    const myUs = l.stacks.reduce((x, s) => x + (s.value ?? 0), 0);
    assert.ok(Math.abs(myUs - theirUs) <= theirUs * 1e-3 + waits.length, `lock µs ${myUs} vs jfr's ${theirUs}`);
    const mon = l.stacks.filter((s) => s.frames[0].function === '[lock java.lang.Object]');
    assert.ok(mon.length > 0 && mon.every((s) => s.frames.some((f) => f.function === 'JfrWorkload.enterMonitor')));
    console.log(`  ${a.samples} allocation samples (${a.stacks.reduce((x, s) => x + (s.value ?? 0), 0)} bytes), ${l.samples} waits (${(myUs / 1e3).toFixed(1)} ms vs jfr ${(theirUs / 1e3).toFixed(1)} ms)`);
  });

  test('profile-diff reads recordings: a recording against itself moves nothing', () => {
    const r = runCli(['profile-diff', rec, rec, '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    const d = JSON.parse(r.stdout) as { base: { samples: number }; movers: { selfDelta: number; totalDelta: number }[] };
    assert.ok(d.base.samples > 0);
    assert.ok(d.movers.every((m) => m.selfDelta === 0 && m.totalDelta === 0));
  });

  test('GC pauses equal -Xlog:gc of the same JVM', () => {
    const log = fs.readFileSync(gcLog, 'utf8');
    const pauses = log.split('\n').filter((x) => /GC\(\d+\) Pause /.test(x));
    const young = pauses.filter((x) => / Pause Young /.test(x)).length;
    const r = runCli(['jfr', rec, '--event', 'gc', '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    const gc = JSON.parse(r.stdout) as JavaGcResult;
    assert.ok(pauses.length > 5, `only ${pauses.length} pauses`);
    assert.equal(gc.summary.pauseCount, pauses.length);
    assert.equal(gc.events.filter((e) => e.kind === 'young').length, young);
    assert.ok(gc.safepoints.available && gc.safepoints.events.length >= pauses.length);
    // each pause's phases (jdk.GCPhasePauseLevel1), every one of the recording's under its pause
    const level1 = /^\s*jdk\.GCPhasePauseLevel1\s+(\d+)/m.exec(jfrTool(['summary', rec]));
    assert.equal(gc.events.reduce((n, e) => n + (e.phases?.length ?? 0), 0), Number(level1?.[1] ?? 0), 'every level-1 phase under its pause');
    assert.ok(gc.events.every((e) => (e.phases ?? []).reduce((n, p) => n + p.durationNs, 0) <= e.durationNs + 1000), 'phases within their pause');
    assert.match(runCli(['jfr', rec, '--event', 'gc'], { timeoutMs: 120_000 }).stdout, /^PAUSE PHASE\s+COUNT\s+TOTAL\s+SHARE$/m);
    console.log(`  ${gc.summary.pauseCount} pauses (${young} young) = -Xlog:gc's ${pauses.length}; ${gc.safepoints.events.length} safepoints`);
  });

  test('the JVM timeline of a recording: its CPU samples, waits, GCs and safepoints on one clock, as jfr print has them', () => {
    const r = runCli(['jfr', rec, '--event', 'timeline', '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    const tl = JSON.parse(r.stdout) as JvmResult;
    assert.equal(tl.tracer, 'jvm');
    // CPU: every sample of the recording's CPU type in a slice, each under its thread and stack
    const samples = jfrPrint(cpuType);
    const perThread = new Map<string, number>();
    for (const e of samples) {
      const name = (e.values.sampledThread ?? e.values.eventThread)?.javaName ?? '?';
      perThread.set(name, (perThread.get(name) ?? 0) + 1);
    }
    const mine = new Map<string, number>();
    for (const sl of tl.cpu) for (const [i, n] of sl.samples) mine.set(tl.stacks[i].comm, (mine.get(tl.stacks[i].comm) ?? 0) + n);
    assert.deepEqual(Object.fromEntries([...mine].sort()), Object.fromEntries([...perThread].sort()), 'CPU samples per thread');
    assert.ok(tl.cpu.every((sl) => sl.startNs >= tl.startNs && sl.endNs <= tl.endNs + tl.sliceMs * 1e6), 'slices within the recording');
    // waits: parks and monitor enters as lock time, in µs, as jfr has their durations
    const waits = jfrPrint('jdk.JavaMonitorEnter,jdk.ThreadPark');
    const theirUs = waits.reduce((x, e) => x + isoUs(e.values.duration), 0);
    let lockUs = 0;
    for (const sl of tl.offcpu ?? []) for (let i = 0; i < sl.rows.length; i += 3) if (sl.rows[i + 1] === 2) lockUs += sl.rows[i + 2];
    assert.ok(Math.abs(lockUs - theirUs) <= theirUs * 1e-3 + waits.length, `lock µs ${lockUs} vs jfr's ${theirUs}`);
    // GCs and safepoints: what --event gc finds, moved onto the timeline's clock
    const gc = JSON.parse(runCli(['jfr', rec, '--event', 'gc', '--json'], { timeoutMs: 120_000 }).stdout) as JavaGcResult;
    assert.equal(tl.gc.length, gc.events.length);
    assert.equal(tl.safepoints.length, gc.safepoints.events.length);
    assert.ok(tl.gc.every((e) => e.timestampNs > tl.startNs && e.timestampNs < tl.endNs), 'GCs within the recording');
    assert.match(tl.warnings.join(' '), /no run-queue waits/);
    // the text report and the editor's timeline read it (a bare `jvm --json` document)
    const text = runCli(['jfr', rec, '--event', 'timeline'], { timeoutMs: 120_000 });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`CPU samples: ${samples.length}\\b`));
    // G1's eden before and after each collection (jdk.G1HeapSummary) gives the allocation rate
    assert.match(text.stdout, /Allocation: \d+ MB\/s/);
    assert.doesNotThrow(() => fromSessionFile(r.stdout));
    console.log(`  timeline: ${samples.length} CPU samples in ${tl.cpu.length} slices of ${tl.sliceMs} ms (${perThread.size} threads), ${(lockUs / 1e3).toFixed(1)} ms of lock waits (jfr ${(theirUs / 1e3).toFixed(1)} ms), ${tl.gc.length} GCs, ${tl.safepoints.length} safepoints; ${tl.frequency} samples/s per thread`);
  });

  test('a truncated and fuzzed recordings end with exit 2 and a byte offset, never a stack trace', () => {
    const bytes = fs.readFileSync(rec);
    const bad = path.join(work, 'bad.jfr');
    const check = (what: string, mustFail: boolean) => {
      const r = runCli(['jfr', bad, '--event', 'cpu'], { timeoutMs: 60_000 });
      assert.ok(r.code === 2 || (!mustFail && r.code === 0), `${what}: exit ${r.code} ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: a stack trace`);
      if (r.code === 2) assert.match(r.stderr, /at byte \d+/, what);
      return r;
    };
    fs.writeFileSync(bad, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    const t = check('truncated', true);
    console.log(`  truncated: ${t.stderr.trim()}`);
    // a run of 0xff inside the first chunk's events: sizes and lengths no longer fit
    const f = Buffer.from(bytes);
    f.fill(0xff, 5000, 5064);
    fs.writeFileSync(bad, f);
    console.log(`  fuzzed: ${check('0xff run', true).stderr.trim()}`);
    // random bytes at random places: whatever they hit, the read ends cleanly
    let seed = 41;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    let failed = 0;
    for (let i = 0; i < 8; i++) {
      const g = Buffer.from(bytes);
      for (let k = 0; k < 16; k++) g[Math.floor(rnd() * g.length)] = Math.floor(rnd() * 256);
      fs.writeFileSync(bad, g);
      if (check(`fuzz ${i}`, false).code === 2) failed++;
    }
    console.log(`  8 randomly fuzzed copies: ${failed} refused with an offset, ${8 - failed} read`);
  });

  test('Record JFR on a running JVM through its attach socket, and dump its continuous recording', async () => {
    // a JVM that already records continuously (no file), as production JVMs do
    const jvm = spawn(`${JDK}/bin/java`, ['-XX:StartFlightRecording', '-cp', path.join(work, 'classes'), 'JfrWorkload', '60'], { stdio: 'ignore' });
    children.push(jvm);
    assert.ok(await waitFor(() => fs.existsSync(`/tmp/hsperfdata_root/${jvm.pid}`), 15_000), 'the JVM started');
    await new Promise((r) => setTimeout(r, 1500));
    const dest = path.join(work, 'recorded.jfr');
    await recordJfr(jvm.pid!, { durationS: 3, settings: 'profile', dest, timeoutMs: 20_000 });
    const dumped = await dumpJfr(jvm.pid!, { dest: path.join(work, 'dumped.jfr'), timeoutMs: 20_000 });
    for (const f of [dest, dumped]) {
      const theirs = /^\s*jdk\.ExecutionSample\s+(\d+)/m.exec(jfrTool(['summary', f]));
      const r = runCli(['jfr', f, '--json'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      const mine = (JSON.parse(r.stdout) as { types: { type: string; count: number }[] }).types.find((t) => t.type === 'jdk.ExecutionSample')?.count;
      assert.ok(Number(theirs?.[1]) > 0, `${f}: jfr summary counts ${theirs?.[1]} samples`);
      assert.equal(mine, Number(theirs?.[1]), path.basename(f));
      console.log(`  ${path.basename(f)}: ${fs.statSync(f).size} bytes, ${mine} execution samples = jfr summary's`);
    }
    // the JVM's own copies are gone from its /tmp
    assert.deepEqual(fs.readdirSync('/tmp').filter((n) => n.startsWith(`ebpf-studio-${process.pid}-`)), []);
    jvm.kill('SIGKILL');
  });
});
}

suite('an OpenJDK 17', JDK17, 'jdk.ExecutionSample', '');
suite('a Temurin 25', JDK25, 'jdk.CPUTimeSample', ',jdk.CPUTimeSample#enabled=true,jdk.CPUTimeSample#throttle=10ms');
