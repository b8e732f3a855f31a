// The JVM timeline's bounded memory: only the last `rawWindowNs` of raw events are kept while the
// lanes (time bins over the whole session, with each bin's highest item) and the whole-session
// figures keep everything. Checked against an unbounded model fed the same updates: the same
// lanes, the same marks at any zoom the bins resolve, the same whole-session figures, the same
// range statistics inside the window (and a range reaching further back says where it starts);
// a session saved with its timeline state comes back with the same lanes and figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JavaGcEvent } from '../../extension/protocol/javaGc';
import { JvmTimeline, THREAD_GROUPS, type JvmResult, type JvmUpdate } from '../../extension/model/jvmTimeline';
import { TimelineView } from '../../webview/jvmTimeline/model';
import { formatJvmResult } from '../../extension/cli/commands/jvm';

const MS = 1e6;
const SLICE = 250 * MS;
const START = 5e9;
const comms = ['main', 'worker-1', 'worker-2', 'GC Thread#0', 'VM Thread', 'C2 CompilerThre'];
const groupOf = (c: string) => (c === 'VM Thread' ? 'vm' : /^GC/.test(c) ? 'gc' : /Compiler/.test(c) ? 'compiler' : 'application');

/** Slice i of a session: 4 GCs (a full one every 100), a safepoint each, run-queue waits of 6 threads, CPU samples over the stacks seen. */
function slice(i: number): JvmUpdate {
  const s0 = START + i * SLICE;
  const gc: JavaGcEvent[] = [];
  for (let k = 0; k < 4; k++) {
    const n = i * 4 + k;
    const full = n % 100 === 0;
    const t = s0 + k * 60 * MS + 1 * MS;
    gc.push({ pid: 9, tid: 13, cpu: 0, timestampNs: t, durationNs: full ? 30 * MS : (0.2 + (n % 7) * 0.1) * MS, collector: full ? 'G1 Old Generation' : 'G1 Young Generation', kind: full ? 'full' : 'young', operation: 'G1CollectForAllocation', escalated: false, full, pools: [
      { name: 'G1 Eden Space', usedBefore: 40e6 + (n % 11) * 1e6, usedAfter: 0, committedAfter: 64e6 },
      { name: 'G1 Old Gen', usedBefore: 100e6, usedAfter: full ? 60e6 : 100e6 + (n % 5) * 1e5, committedAfter: 256e6 },
    ] });
  }
  const stacks = i % 5 === 0 ? [{ tid: 100 + ((i / 5) % comms.length), comm: comms[(i / 5) % comms.length], frames: [{ address: `0x${(i + 16).toString(16)}`, module: null, function: `f${i}`, file: null, line: null, kind: 'native' as const }] }] : [];
  const known = Math.floor(i / 5) + 1;
  return {
    startNs: START,
    nowNs: s0 + SLICE,
    gc,
    safepoints: gc.map((e) => ({ pid: 9, tid: 13, timestampNs: e.timestampNs - 10_000, timeToSafepointNs: 10_000 + (i % 3) * 1000, durationNs: e.durationNs + 20_000, operation: e.operation })),
    safepointsAvailable: true,
    runq: comms.map((_, k) => ({ startNs: s0, endNs: s0 + SLICE, tid: 100 + k, buckets: [{ low: 2 ** (3 + ((i + k) % 6)), high: 2 ** (4 + ((i + k) % 6)) - 1, count: 1 + ((i * k) % 4) }] })),
    cpu: [{ startNs: s0, endNs: s0 + SLICE, samples: [[i % known, 3 + (i % 4)], [(i * 7) % known, 1]] as [number, number][] }].map((c) => ({ ...c, samples: c.samples.filter(([a], j, all) => all.findIndex(([b]) => b === a) === j) })),
    stacks,
    // Off-CPU totals once a second: each thread off CPU part of it, in a state by thread.
    ...(i % 4 === 3 ? { offcpu: [{ startNs: s0 - 3 * SLICE, endNs: s0 + SLICE, rows: comms.flatMap((_, k) => [100 + k, k % 4, 100_000 + ((i * 37 + k * 101) % 800_000)]) }] } : {}),
    threads: i === 0 ? comms.map((comm, k) => ({ tid: 100 + k, comm, group: groupOf(comm) })) : [],
    lost: 0,
    dropped: 0,
  };
}

const SLICES = 480; // 120 s
const WINDOW = 20e9;

function feed(window: number): JvmTimeline {
  const t = new JvmTimeline(window);
  t.pid = 9;
  t.frequency = 99;
  t.sliceMs = 250;
  for (let i = 0; i < SLICES; i++) t.apply(slice(i));
  return t;
}

const vbLanes = (t: JvmTimeline) => viewOf(t).lanes().map((l) => l.id);

function viewOf(t: JvmTimeline): TimelineView {
  const v = new TimelineView();
  v.data = t;
  return v;
}

/** Every lane's marks as [x, w, level, label]. */
function marks(v: TimelineView, width: number): [string, (string | number)[][]][] {
  return v.lanes().map((l) => [l.id, [...v.marks(l, width), ...(l.kind === 'group' ? v.runqMarks(l.group, width) : [])].map((m) => [Math.round(m.x * 100), Math.round(m.w * 100), Math.round(m.level * 1e6), m.label])]);
}

const whole = (t: JvmTimeline) => {
  const { gc: _gc, ...rest } = t.range(0, Infinity);
  return rest;
};

test('bounded raw events: the same lanes, marks and whole-session figures as an unbounded model; raw events only for the window', () => {
  const bounded = feed(WINDOW);
  const all = feed(Infinity);
  // Raw events: only the window (plus at most a tenth of it, trimmed in steps).
  assert.ok(bounded.droppedBeforeNs >= bounded.endNs - WINDOW * 1.1 && bounded.droppedBeforeNs <= bounded.endNs - WINDOW, `${(bounded.endNs - bounded.droppedBeforeNs) / 1e9} s kept`);
  assert.ok(bounded.gc.length <= 4 * 4 * 22 && bounded.gc.every((e) => e.timestampNs >= bounded.droppedBeforeNs));
  assert.ok(bounded.cpu.length <= 4 * 22 && bounded.runq.length <= 6 * 4 * 22);
  assert.equal(all.gc.length, SLICES * 4);
  // Lanes: identical bins over the whole session.
  for (const c of all.collectors()) assert.deepEqual(bounded.gcLane(c).bins, all.gcLane(c).bins, c);
  assert.deepEqual(bounded.safepointLane().bins, all.safepointLane().bins);
  assert.deepEqual(bounded.alloc.intervals.bins, all.alloc.intervals.bins);
  assert.deepEqual(bounded.alloc.heap.bins, all.alloc.heap.bins);
  for (const g of THREAD_GROUPS) {
    assert.deepEqual(bounded.heatLane(g).bins, all.heatLane(g).bins, g);
    assert.deepEqual(bounded.runqLaneOf(g).bins, all.runqLaneOf(g).bins, g);
    assert.deepEqual(bounded.offcpuLane(g).bins, all.offcpuLane(g).bins, g);
  }
  assert.ok(vbLanes(bounded).includes('offcpu:gc'), 'an off-CPU lane per thread group');
  // Whole-session figures: running sums, unaffected by the drop.
  assert.deepEqual(whole(bounded), whole(all));
  assert.equal(bounded.range(0, Infinity).collectors.reduce((n, c) => n + c.count, 0), SLICES * 4);
  // Off-CPU totals of the whole session: every second's rows, by group and state.
  const offBatch = new Map<string, number[]>();
  for (let i = 3; i < SLICES; i += 4) for (const [k] of comms.entries()) {
    const g = groupOf(comms[k]);
    const per = offBatch.get(g) ?? [0, 0, 0, 0];
    per[k % 4] += 100_000 + ((i * 37 + k * 101) % 800_000);
    offBatch.set(g, per);
  }
  assert.deepEqual(Object.fromEntries(bounded.range(0, Infinity).offcpu.map((o) => [o.group, o.us])), Object.fromEntries(offBatch));
  // Marks: the whole session, and a zoom into the dropped past (bins finer than its pixels).
  const vb = viewOf(bounded);
  const va = viewOf(all);
  assert.deepEqual(marks(vb, 800), marks(va, 800));
  vb.window = va.window = [START + 10e9, START + 40e9];
  assert.deepEqual(marks(vb, 800), marks(va, 800));
  // Zoomed further into the past than the bins resolve: still drawn (from the bins), not empty.
  vb.window = [START + 10e9, START + 10.5e9];
  const gcLane = vb.lanes().find((l) => l.id === 'gc:G1 Young Generation')!;
  assert.ok(vb.marks(gcLane, 800).length > 0);
  // A range inside the window: the same statistics; one reaching before it says where it starts.
  const inside: [number, number] = [bounded.endNs - 10e9, bounded.endNs - 2e9];
  assert.deepEqual(bounded.range(...inside), all.range(...inside));
  const back = bounded.range(START + 5e9, bounded.endNs - 2e9);
  assert.equal(back.coveredFromNs, bounded.droppedBeforeNs);
  assert.equal(all.range(START + 5e9, bounded.endNs - 2e9).coveredFromNs, undefined);
  assert.match(formatJvmResult(bounded.toResult(), [5, 110]), /covers from \d+\.\d+ s: the session kept only its last 10 minutes of raw events/);
});

test('a session saved with its timeline (export, checkpoint) comes back with the same lanes, marks and figures', () => {
  const bounded = feed(WINDOW);
  const file = JSON.parse(JSON.stringify(bounded.toResult({ withTimeline: true }))) as JvmResult;
  assert.ok(file.timeline && file.droppedBeforeNs === bounded.droppedBeforeNs);
  const back = JvmTimeline.fromResult(file);
  assert.deepEqual(whole(back), whole(bounded));
  const vb = viewOf(bounded);
  const vr = viewOf(back);
  assert.deepEqual(marks(vr, 800), marks(vb, 800));
  vb.window = vr.window = [START + 30e9, START + 60e9];
  assert.deepEqual(marks(vr, 800), marks(vb, 800));
  const inside: [number, number] = [bounded.endNs - 10e9, bounded.endNs - 2e9];
  assert.deepEqual(back.range(...inside), bounded.range(...inside));
  // A checkpoint keeps fewer raw events (the last 5 s here): the same lanes, and ranges inside those 5 s.
  const small = JSON.parse(JSON.stringify(bounded.toResult({ withTimeline: true, rawFromNs: bounded.endNs - 5e9 }))) as JvmResult;
  assert.ok(JSON.stringify(small).length < JSON.stringify(file).length);
  assert.ok(small.gc.every((e) => e.timestampNs >= bounded.endNs - 5e9) && small.droppedBeforeNs === bounded.endNs - 5e9);
  const fromSmall = JvmTimeline.fromResult(small);
  const vs = viewOf(fromSmall);
  vb.window = vs.window = undefined;
  assert.deepEqual(marks(vs, 800), marks(vb, 800));
  vb.window = vs.window = [START + 30e9, START + 60e9];
  assert.deepEqual(marks(vs, 800), marks(vb, 800));
  assert.deepEqual(whole(fromSmall), whole(bounded));
  const last: [number, number] = [bounded.endNs - 4e9, bounded.endNs - 1e9];
  assert.deepEqual(fromSmall.range(...last), bounded.range(...last));
  assert.equal(fromSmall.range(...inside).coveredFromNs, bounded.endNs - 5e9);
  // Without the timeline (the CLI's --json): the raw window only, and it says what was dropped.
  const plain = JvmTimeline.fromResult(JSON.parse(JSON.stringify(bounded.toResult())) as JvmResult);
  assert.equal(plain.droppedBeforeNs, bounded.droppedBeforeNs);
  // A stopped view keeps its lanes when the final result (the raw window) arrives.
  const v = viewOf(feed(WINDOW));
  const before = marks(v, 800);
  v.end('stopped', undefined, v.data.toResult());
  assert.deepEqual(marks(v, 800), before);
});
