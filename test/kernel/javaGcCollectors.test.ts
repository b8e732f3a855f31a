// Java GC counted as the JVM counts it, under every collector this JDK has: GcCollectors.java
// makes young collections, fills the old generation until collections escalate or go full by
// themselves, and calls System.gc(); at the end it prints each GarbageCollectorMXBean's own
// count. Ours, per collector (memory manager), must equal them exactly. Pauses that JDK 17's
// beans do not count (G1 Remark/Cleanup, JDK 20+'s "G1 Concurrent GC") may be extra, and nothing else.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import { kernelSkipReason, repoRoot, startCli, waitFor } from '../helpers';
import { jdk, noJdkReason } from './gcWorkload';

const skip = kernelSkipReason() ?? noJdkReason;

const ONLY = process.env.GC_ONLY;
/** What -Xlog:gc says per collection, by the manager that counts it (JDK 17's wording). */
type LogCounts = Record<string, RegExp>;
const COLLECTORS: { flag: string; name: string; extra?: string[]; log: LogCounts }[] = [
  { flag: '-XX:+UseSerialGC', name: 'Serial', log: { Copy: /Pause Young/, MarkSweepCompact: /Pause Full/ } },
  { flag: '-XX:+UseParallelGC', name: 'Parallel', log: { 'PS Scavenge': /Pause Young/, 'PS MarkSweep': /Pause Full/ } },
  { flag: '-XX:+UseG1GC', name: 'G1', log: { 'G1 Young Generation': /Pause Young/, 'G1 Old Generation': /Pause Full/, 'G1 Concurrent GC': /Pause (Remark|Cleanup)/ } },
  { flag: '-XX:+UseZGC', name: 'ZGC', extra: ['-XX:-ZProactive'], log: { 'ZGC Cycles': /Garbage Collection \(/ } },
  { flag: '-XX:+UseShenandoahGC', name: 'Shenandoah', log: { 'Shenandoah Pauses': / Pause / } },
];

/** Whether this JDK runs with the flag, or why not. */
function unsupported(flag: string): string | undefined {
  if (!jdk) return noJdkReason;
  const r = spawnSync(path.join(jdk.home, 'bin', 'java'), [flag, '-version'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `this JDK does not run ${flag}: ${(r.stderr || '').split('\n')[0]}`;
}

interface Jvm {
  pid: number;
  go(): void;
  /** the JVM's own counts per GarbageCollectorMXBean after go(), and when it counted (CLOCK_MONOTONIC ns) */
  done: Promise<{ counts: Map<string, number>; atNs: number }>;
  /** the -Xlog:gc lines written after go(), with their CLOCK_MONOTONIC time (the end of the collection) */
  log(): { ns: number; text: string }[];
}

function parseCounts(block: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of block.split('\n')) {
    const x = /^gc (.+)=(\d+)$/.exec(l.trim());
    if (x) m.set(x[1], Number(x[2]));
  }
  return m;
}

describe('java-gc counts equal the JVM\'s own, per collector', { skip }, () => {
  let classDir = '';
  const children: ChildProcess[] = [];
  before(() => {
    classDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-gcc-'));
    const r = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', classDir, path.join(repoRoot, 'test', 'fixtures', 'java', 'GcCollectors.java')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `javac failed: ${r.stderr}`);
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (classDir) fs.rmSync(classDir, { recursive: true, force: true });
  });

  async function startJvm(flags: string[]): Promise<Jvm> {
    const logFile = path.join(classDir, `gc-${Date.now()}.log`);
    const child = spawn(path.join(jdk!.home, 'bin', 'java'), [...flags, '-Xmx64m', `-Xlog:gc:file=${logFile}:timenanos`, '-cp', classDir, 'GcCollectors', '3', '2'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const readLog = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '');
    let logStart = 0;
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    assert.ok(await waitFor(() => out.includes('end-of-counts'), 20_000), 'GcCollectors did not start');
    const baseline = parseCounts(out.split('end-of-counts')[0]);
    return {
      pid: child.pid!,
      go: () => {
        logStart = readLog().length;
        child.stdin!.write('go\n');
      },
      log: () =>
        readLog()
          .slice(logStart)
          .split('\n')
          .map((text) => ({ ns: Number(/^\[(\d+)ns\]/.exec(text)?.[1] ?? NaN), text })),
      done: (async () => {
        const code = await exited;
        assert.equal(code, 0, `GcCollectors exited with ${code}: ${out}`);
        const tail = out.slice(out.indexOf('\ndone'));
        const end = parseCounts(tail.split('end-of-counts')[0]);
        const atNs = Number(/done nanos=(\d+)/.exec(tail)?.[1]);
        assert.ok(atNs > 0, `no time on the done line: ${tail}`);
        return { counts: new Map([...end].map(([k, v]) => [k, v - (baseline.get(k) ?? 0)])), atNs };
      })(),
    };
  }

  for (const c of COLLECTORS) {
    test(`${c.name}: every collector's count equals its GarbageCollectorMXBean's`, { skip: ONLY && ONLY !== c.name ? 'GC_ONLY' : unsupported(c.flag) }, async (t) => {
      const jvm = await startJvm([c.flag, ...(c.extra ?? [])]);
      const cli = startCli(['java-gc', '--pid', String(jvm.pid), '--json', '--verbose']);
      assert.ok(await waitFor(() => /attached to .*libjvm\.so/.test(cli.stderr()), 15_000), `not attached: ${cli.stderr()}`);
      jvm.go();
      const { counts, atNs } = await jvm.done;
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as JavaGcResult;
      assert.equal(result.lost, 0);
      // The JVM counted at atNs; a concurrent collector may start another collection while the VM
      // exits (Shenandoah's heuristics do, now and then). Compare what had ended by then.
      const counted = result.events.filter((e) => e.timestampNs + e.durationNs <= atNs);
      const later = result.events.length - counted.length;
      if (later) t.diagnostic(`${later} collections ended after the JVM counted: ${JSON.stringify(result.events.slice(counted.length).map((e) => [e.collector, e.operation]))}`);
      assert.ok(later <= 2, `${later} collections after the JVM's count: the workload did not rest`);
      const ours = new Map<string, number>();
      for (const e of counted) ours.set(e.collector, (ours.get(e.collector) ?? 0) + 1);
      t.diagnostic(`JVM: ${JSON.stringify([...counts])}; ours: ${JSON.stringify(result.collectors.map((x) => [x.collector, x.kind, x.count, x.escalated]))}`);
      // A pause that straddles the JVM's reading (its bean counted, our end a little later, or the
      // reverse) may go either way: the JVM's count lies between ours ended and ours begun by then.
      const begun = new Map<string, number>();
      for (const e of result.events) if (e.timestampNs <= atNs) begun.set(e.collector, (begun.get(e.collector) ?? 0) + 1);
      for (const [name, n] of counts) {
        const [lo, hi] = [ours.get(name) ?? 0, begun.get(name) ?? 0];
        if (n !== lo) t.diagnostic(`${name}: the JVM counted ${n}; ${lo} ended and ${hi} begun by its reading`);
        assert.ok(lo <= n && n <= hi && hi - lo <= 1, `${name}: the JVM counted ${n}, we ${lo} (${hi} begun by then)`);
      }
      // The JVM's log, read independently, says the same (and counts G1's Remark/Cleanup pauses).
      const log = jvm.log().filter((l) => l.ns <= atNs);
      for (const [name, re] of Object.entries(c.log)) {
        const n = log.filter((l) => re.test(l.text)).length;
        const [lo, hi] = [ours.get(name) ?? 0, begun.get(name) ?? 0];
        assert.ok(lo <= n && n <= hi, `${name}: -Xlog:gc has ${n} lines matching ${re}, we counted ${lo} (${hi} begun by then)`);
      }
      for (const x of result.collectors) {
        if (counts.has(x.collector)) continue;
        // JDK 17 has no bean for G1's Remark and Cleanup pauses (JDK 20+ counts them as "G1 Concurrent GC").
        assert.equal(x.collector, 'G1 Concurrent GC', `${x.collector} is not one of the JVM's collectors`);
        assert.equal(x.kind, 'concurrent-pause');
      }
      assert.equal(result.summary.count, result.events.length);
      for (const e of result.events) {
        assert.ok(e.durationNs > 0 && e.durationNs < 30e9, `implausible duration ${e.durationNs}`);
        assert.equal(e.full, e.kind === 'full');
      }
      const kinds = new Set(result.events.map((e) => e.kind));
      if (['Serial', 'Parallel', 'G1'].includes(c.name)) {
        assert.ok(kinds.has('young') && kinds.has('full'), `young and full collections expected, saw ${[...kinds].join(', ')}`);
        // Every full collection reports the heap pools too.
        assert.ok(result.events.filter((e) => e.kind !== 'concurrent-pause').every((e) => e.pools.length > 0));
      } else {
        assert.ok(kinds.has('concurrent-cycle') && kinds.has('concurrent-pause'), `cycles and pauses expected, saw ${[...kinds].join(', ')}`);
        assert.ok(result.events.filter((e) => e.kind === 'concurrent-cycle').every((e) => e.pools.some((p) => /Z|Shenandoah|Heap/.test(p.name))));
        assert.ok(result.summary.pauseCount < result.summary.count, 'cycles are not pauses');
      }
      if (c.name === 'Serial') {
        // Serial runs an escalated young→full collection inside one pause: two collections.
        const esc = result.events.filter((e) => e.escalated);
        assert.ok(esc.length >= 1, 'the workload makes young collections escalate');
        for (const e of esc) {
          assert.equal(e.collector, 'MarkSweepCompact');
          const young = result.events.find((y) => y.collector === 'Copy' && y.timestampNs < e.timestampNs && y.timestampNs + y.durationNs <= e.timestampNs + 1000);
          assert.ok(young, 'the young half of the pause comes first, and ends before the full half starts');
        }
      }
      if (result.safepoints.available) {
        // An escalation is two collections in one pause, at one safepoint.
        const pauses = result.summary.pauseCount - result.events.filter((e) => e.escalated).length;
        t.diagnostic(`${pauses} pauses, ${result.safepoints.summary.count} safepoints, time to safepoint p50 ${result.safepoints.summary.ttsP50Ns} ns`);
        assert.ok(result.safepoints.summary.count >= pauses, 'every pause runs at a safepoint');
        // Each pause lies inside a safepoint of the same thread.
        for (const e of result.events.filter((x) => x.kind !== 'concurrent-cycle')) {
          assert.ok(result.safepoints.events.some((s) => s.tid === e.tid && s.timestampNs <= e.timestampNs && e.timestampNs + e.durationNs <= s.timestampNs + s.durationNs), `the ${e.collector} pause at ${e.timestampNs} is inside no safepoint`);
          assert.ok(e.safepoint && e.safepoint.timeToSafepointNs <= e.safepoint.durationNs && e.safepoint.durationNs >= e.durationNs, `the ${e.collector} pause at ${e.timestampNs} carries its safepoint`);
        }
        for (const s of result.safepoints.events) assert.ok(s.timeToSafepointNs <= s.durationNs);
      }
    });
  }
});
