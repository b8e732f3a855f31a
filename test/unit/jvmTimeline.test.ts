// The JVM timeline's pure parts: thread groups from HotSpot names, CPU slices cut from cumulative
// profiler snapshots (and their symbolized stacks at the end), per-range aggregation, the
// session file, the view's zoom/pan/selection and lanes, and the CLI's bad flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JavaGcEvent } from '../../extension/protocol/javaGc';
import type { ProfileFrame, ProfileStack } from '../../extension/protocol/profile';
import { CpuSlicer, fromSessionFile, JvmTimeline, stackKey, threadGroup, toSessionFile, type JvmUpdate } from '../../extension/model/jvmTimeline';
import { TimelineView } from '../../webview/jvmTimeline/model';
import { formatJvmResult, rangeFlag } from '../../extension/cli/commands/jvm';
import { jvmTracer } from '../../extension/tracers/jvm/tracer';

const MS = 1e6;
const frame = (address: string, fn: string | null = null, kind: ProfileFrame['kind'] = 'native'): ProfileFrame => ({ address, module: null, function: fn, file: null, line: null, kind });
const stack = (tid: number, count: number, addrs: string[], names?: string[]): ProfileStack => ({ count, pid: 100, tid, comm: `t${tid}`, frames: addrs.map((a, i) => frame(a, names?.[i] ?? null)) });

test('thread groups from HotSpot thread names (as the kernel truncates them)', () => {
  const cases: [string, string][] = [
    ['java', 'application'],
    ['pool-1-thread-1', 'application'],
    ['VM Thread', 'vm'],
    ['GC Thread#0', 'gc'],
    ['ParGC Thread#1', 'gc'],
    ['G1 Main Marker', 'gc'],
    ['G1 Conc#0', 'gc'],
    ['G1 Refine#0', 'gc'],
    ['ZDriver', 'gc'],
    ['ZWorker#3', 'gc'],
    ['Shenandoah Cont', 'gc'],
    ['C2 CompilerThre', 'compiler'],
    ['C1 CompilerThre', 'compiler'],
    ['Sweeper thread', 'compiler'],
    ['Signal Dispatch', 'jvm'],
    ['Reference Handl', 'jvm'],
    ['VM Periodic Tas', 'jvm'],
    ['Common-Cleaner', 'jvm'],
  ];
  for (const [comm, group] of cases) assert.equal(threadGroup(comm), group, comm);
});

test('CPU slices: cumulative counts become per-slice deltas; stacks numbered once; symbolized at the end', () => {
  const s = new CpuSlicer();
  const a = s.next([stack(1, 5, ['0x10', '0x20']), stack(2, 3, ['0x30'])], 0, 250 * MS);
  assert.deepEqual(a.slice.samples, [[0, 5], [1, 3]]);
  assert.equal(a.fresh.length, 2);
  const b = s.next([stack(1, 9, ['0x10', '0x20']), stack(2, 3, ['0x30']), stack(1, 2, ['0x40'])], 250 * MS, 500 * MS);
  assert.deepEqual(b.slice.samples, [[0, 4], [2, 2]]);
  assert.deepEqual(b.fresh.map((x) => x.frames[0].address), ['0x40']);
  assert.deepEqual([b.slice.startNs, b.slice.endNs], [250 * MS, 500 * MS]);
  // The final result: symbolized, with an inlined frame repeating its caller's address.
  const final = [{ ...stack(1, 9, ['0x10', '0x10', '0x20'], ['inner', 'outer', 'main']) }, stack(2, 3, ['0x30'], ['f'])];
  assert.equal(stackKey(final[0]), stackKey(stack(1, 1, ['0x10', '0x20'])));
  const sym = s.symbolized(final);
  assert.deepEqual(sym[0].frames.map((f) => f.function), ['inner', 'outer', 'main']);
  assert.equal(sym[1].frames[0].function, 'f');
  assert.equal(sym[2].frames[0].function, null, 'a stack without a final match keeps its addresses');
});

function gc(tMs: number, durMs: number, collector = 'PS MarkSweep', kind: JavaGcEvent['kind'] = 'full'): JavaGcEvent {
  return { pid: 100, tid: 3, cpu: 0, timestampNs: tMs * MS, durationNs: durMs * MS, collector, kind, operation: 'ParallelGCSystemGC', escalated: false, full: kind === 'full', pools: [] };
}

function update(): JvmUpdate {
  return {
    startNs: 0,
    nowNs: 1000 * MS,
    gc: [gc(300, 100), gc(700, 5, 'PS Scavenge', 'young')],
    safepoints: [{ pid: 100, tid: 3, timestampNs: 299 * MS, timeToSafepointNs: 0.5 * MS, durationNs: 102 * MS, operation: 'ParallelGCSystemGC' }],
    safepointsAvailable: true,
    runq: [
      { startNs: 0, endNs: 250 * MS, tid: 1, buckets: [{ low: 8, high: 15, count: 4 }] },
      { startNs: 250 * MS, endNs: 500 * MS, tid: 4, buckets: [{ low: 1024, high: 2047, count: 2 }] },
    ],
    cpu: [
      { startNs: 0, endNs: 250 * MS, samples: [[0, 20]] },
      { startNs: 250 * MS, endNs: 500 * MS, samples: [[1, 15], [0, 2]] },
      { startNs: 500 * MS, endNs: 750 * MS, samples: [[0, 24]] },
    ],
    stacks: [
      { tid: 1, comm: 'java', frames: [frame('0x1', 'spin')] },
      { tid: 4, comm: 'GC Thread#0', frames: [frame('0x2', 'PSParallelCompact::invoke')] },
    ],
    threads: [
      { tid: 1, comm: 'java', group: 'application' },
      { tid: 3, comm: 'VM Thread', group: 'vm' },
      { tid: 4, comm: 'GC Thread#0', group: 'gc' },
    ],
    lost: 0,
    dropped: 0,
  };
}

test('a range: its GCs, pause time clipped to it, safepoints, run-queue waits and CPU samples per group, its stacks', () => {
  const t = new JvmTimeline();
  t.pid = 100;
  t.apply(update());
  const r = t.range(280 * MS, 420 * MS);
  assert.deepEqual(r.gc.map((e) => e.collector), ['PS MarkSweep']);
  assert.equal(r.pauseNs, 100 * MS);
  assert.equal(r.safepoints.count, 1);
  assert.deepEqual(r.cpu, [
    { group: 'application', samples: 2 },
    { group: 'gc', samples: 15 },
  ]);
  assert.equal(r.cpuThreads[0].comm, 'GC Thread#0');
  assert.deepEqual(r.runq.map((g) => [g.group, g.stats.count]), [['gc', 2]]);
  assert.deepEqual(r.stacks.map((s) => [s.comm, s.count]), [['GC Thread#0', 15], ['java', 2]]);
  const half = t.range(350 * MS, 600 * MS);
  assert.equal(half.pauseNs, 50 * MS, 'a pause is clipped to the range');
  assert.deepEqual(half.gc.map((e) => e.collector), ['PS MarkSweep']);
  assert.deepEqual(t.range(800 * MS, 900 * MS).gc, []);
  assert.deepEqual(t.groups(), ['application', 'gc', 'vm']);
  assert.deepEqual(t.collectors(), ['PS MarkSweep', 'PS Scavenge']);
  assert.deepEqual(t.cpuHeat('application').map((h) => h.samples), [20, 2, 24]);
  assert.deepEqual(t.runqLane('gc').map((x) => [x.count, x.maxUs]), [[2, 2047]]);
});

test('session file: the shared envelope round-trips; wrong files say why', () => {
  const t = new JvmTimeline();
  t.apply(update());
  const doc = toSessionFile(t.toResult(), new Date(0));
  assert.equal(doc.format, 'ebpf-studio-session');
  assert.equal(doc.version, 1);
  assert.equal(doc.tracer, 'jvm');
  const back = JvmTimeline.fromResult(fromSessionFile(JSON.stringify(doc)));
  assert.deepEqual(back.range(0, 1000 * MS), t.range(0, 1000 * MS));
  assert.deepEqual(fromSessionFile(JSON.stringify(t.toResult())).gc.length, 2, 'the CLI\'s --json document opens too');
  assert.throws(() => fromSessionFile('{nope'), /not a JSON file/);
  assert.throws(() => fromSessionFile(JSON.stringify({ ...doc, version: 2 })), /version 2 is not supported/);
  assert.throws(() => fromSessionFile(JSON.stringify({ ...doc, tracer: 'memleak' })), /recorded by "memleak"/);
  assert.throws(() => fromSessionFile(JSON.stringify({ tracer: 'profile' })), /not a JVM timeline session/);
  assert.throws(() => fromSessionFile(JSON.stringify({ ...doc, result: { ...doc.result, cpu: 3 } })), /no "cpu" list/);
});

test('view: zoom around a point, pan within the session, select, lanes and marks', () => {
  const v = new TimelineView();
  v.apply(update());
  assert.deepEqual(v.visible(), [0, 1000 * MS]);
  v.zoom(0.5, 500 * MS);
  assert.deepEqual(v.visible(), [250 * MS, 750 * MS]);
  v.pan(-400 * MS);
  assert.deepEqual(v.visible(), [0, 500 * MS], 'panning stops at the start');
  v.zoom(10, 0);
  assert.equal(v.window, undefined, 'zooming out past the session shows it all');
  assert.equal(v.xToNs(50, 100), 500 * MS);
  assert.equal(v.nsToX(250 * MS, 100), 25);
  v.select(420 * MS, 280 * MS);
  assert.deepEqual(v.selection, [280 * MS, 420 * MS]);
  assert.equal(v.rangeStats().cpuTotal, 17);
  const p = v.rangeProfile();
  assert.equal(p.total, 17);
  assert.ok(p.frames.some((f) => f.name === 'GC Thread#0 [4]'), 'the flame graph is rooted by thread');
  v.zoomToSelection();
  assert.deepEqual(v.visible(), [280 * MS, 420 * MS]);
  v.resetZoom();
  const lanes = v.lanes();
  assert.deepEqual(lanes.map((l) => l.label), ['PS MarkSweep', 'PS Scavenge', 'Safepoints', 'Application threads', 'GC threads', 'VM thread']);
  const gcMarks = v.marks(lanes[0], 1000);
  assert.equal(gcMarks.length, 1);
  assert.deepEqual([gcMarks[0].x, gcMarks[0].w], [300, 100]);
  assert.match(gcMarks[0].label, /PS MarkSweep full: 100 ms \(ParallelGCSystemGC\)/);
  const heat = v.marks(lanes[3], 1000);
  assert.equal(heat.length, 3);
  assert.ok(heat[2].level > heat[1].level);
  assert.equal(v.runqMarks('gc', 1000).length, 1);
});

test('view: the final result replaces the streamed stacks, keeping zoom and selection', () => {
  const v = new TimelineView();
  v.apply(update());
  v.select(0, 250 * MS);
  v.zoom(0.5, 0);
  const final = { ...v.data.toResult(), stacks: [{ tid: 1, comm: 'java', frames: [frame('0x1', 'GcPhases.spin', 'jit')] }, v.data.stacks[1]] };
  v.end('stopped', undefined, final);
  assert.equal(v.state, 'stopped');
  assert.deepEqual(v.selection, [0, 250 * MS]);
  assert.ok(v.rangeProfile().frames.some((f) => f.name === 'GcPhases.spin'));
});

test('jvm options and the CLI range flag', () => {
  assert.deepEqual(jvmTracer.validate({ pid: 5 }), { pid: 5, frequency: 99, sliceMs: 250 });
  assert.throws(() => jvmTracer.validate({}), /pid is required/);
  assert.throws(() => jvmTracer.validate({ pid: 5, sliceMs: 10 }), /sliceMs must be between/);
  assert.deepEqual(rangeFlag('2.5:4'), [2.5, 4]);
  assert.equal(rangeFlag(undefined), undefined);
  assert.throws(() => rangeFlag('4:2'), /--range takes FROM:TO/);
  assert.throws(() => rangeFlag('abc'), /--range takes FROM:TO/);
});

test('CLI text: the whole session, or one range with its busiest threads and hottest functions', () => {
  const t = new JvmTimeline();
  t.pid = 100;
  t.apply(update());
  const all = formatJvmResult(t.toResult());
  assert.match(all, /JVM 100: 1\.0 s traced, 3 threads \(Application threads: 1, GC threads: 1, VM thread: 1\)/);
  assert.match(all, /GC: 2 collections, 105 ms paused \(PS MarkSweep 1, PS Scavenge 1\)/);
  assert.match(all, /Safepoints: 1, /);
  assert.match(all, /CPU samples: 61 — Application threads 46 \(75 %\), GC threads 15 \(25 %\)/);
  const range = formatJvmResult(t.toResult(), [0.28, 0.42]);
  assert.match(range, /Range 0\.280 s – 0\.420 s/);
  assert.match(range, /0\.300 s  PS MarkSweep full 100 ms  ParallelGCSystemGC/);
  assert.match(range, /15  GC Thread#0 \[4\]/);
  assert.match(range, /15  PSParallelCompact::invoke/);
  const noSp = formatJvmResult({ ...t.toResult(), safepointsAvailable: false, safepointsReason: 'no probes in this JDK' });
  assert.match(noSp, /Safepoints: not available \(no probes in this JDK\)/);
});

test('the whole session from running figures equals a pass over the events, however the updates came; lanes extend incrementally', () => {
  const u = update();
  // Split into one update per item, as a live session streams it.
  const t = new JvmTimeline();
  t.pid = 100;
  const rest = { ...u, gc: [], safepoints: [], runq: [], cpu: [], stacks: [], threads: [] };
  t.apply({ ...rest, threads: u.threads, stacks: u.stacks, nowNs: 0 });
  for (const g of u.gc) t.apply({ ...rest, gc: [g], nowNs: g.timestampNs });
  for (const sp of u.safepoints) t.apply({ ...rest, safepoints: [sp], nowNs: sp.timestampNs });
  const heatBefore = t.cpuHeat('application').length;
  const laneBefore = t.runqLane('application').length;
  for (const r of u.runq) t.apply({ ...rest, runq: [r], nowNs: r.endNs });
  for (const c of u.cpu) t.apply({ ...rest, cpu: [c], nowNs: c.endNs });
  t.apply({ ...rest, nowNs: u.nowNs });
  const batch = JvmTimeline.fromResult({ ...u, tracer: 'jvm', pid: 100, frequency: 99, sliceMs: 250, endNs: u.nowNs, warnings: [] });
  assert.deepEqual(t.range(t.startNs, t.endNs), t.scanRange(t.startNs, t.endNs));
  assert.deepEqual(t.range(t.startNs, t.endNs), batch.scanRange(batch.startNs, batch.endNs));
  assert.deepEqual(t.collectors(), batch.collectors());
  assert.equal(heatBefore, 0);
  assert.equal(laneBefore, 0);
  for (const g of ['application', 'gc', 'vm'] as const) {
    assert.deepEqual(t.cpuHeat(g), batch.cpuHeat(g));
    assert.deepEqual(t.runqLane(g), batch.runqLane(g));
  }
});
