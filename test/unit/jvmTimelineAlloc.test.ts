// The allocation-rate and heap-after-GC lanes of the JVM timeline (extension/model/allocRate.ts):
// the rate between GCs from eden before/after, computed incrementally as updates arrive and equal
// to the batch computation over the same collections; ranges prorate; collectors without an eden
// say so; and the view's lanes and tooltips carry units.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JavaGcEvent, JavaGcPool } from '../../extension/protocol/javaGc';
import { AllocRate, allocIntervals, edenOf, formatRate } from '../../extension/model/allocRate';
import { JvmTimeline, type JvmUpdate } from '../../extension/model/jvmTimeline';
import { TimelineView } from '../../webview/jvmTimeline/model';

const MS = 1e6;
const pool = (name: string, usedBefore: number, usedAfter: number): JavaGcPool => ({ name, usedBefore, usedAfter, committedAfter: usedBefore });
const gc = (t: number, d: number, pools: JavaGcPool[], collector = 'G1 Young Generation'): JavaGcEvent => ({ pid: 1, tid: 2, cpu: 0, timestampNs: t, durationNs: d, collector, kind: 'young', operation: '', escalated: false, full: false, pools });
const update = (gcs: JavaGcEvent[], nowNs: number): JvmUpdate => ({ startNs: 0, nowNs, gc: gcs, safepoints: [], safepointsAvailable: false, runq: [], cpu: [], stacks: [], threads: [], lost: 0, dropped: 0 });

/** A G1-like session: eden fills at `rate` bytes/s between GCs every `every` ns (with 2 ms pauses), some left in eden after. */
function session(n: number, rate: (i: number) => number, every = 500 * MS): JavaGcEvent[] {
  const out: JavaGcEvent[] = [];
  let left = 0;
  let old = 10e6;
  for (let i = 0; i < n; i++) {
    const t = 1e9 + i * every;
    const gapS = (every - 2 * MS) / 1e9;
    const before = i === 0 ? 40e6 : left + rate(i) * gapS;
    const after = (i % 3) * 1e6;
    old += 1e6;
    out.push(gc(t, 2 * MS, [pool('Metaspace', 5e6, 5e6), pool('G1 Eden Space', before, after), pool('G1 Survivor Space', 3e6, 4e6), pool('G1 Old Gen', old - 1e6, old)]));
    left = after;
  }
  return out;
}

test('allocation rate between GCs: eden before − eden after the previous, over the gap; the whole session is the known rate', () => {
  const events = session(21, () => 150e6);
  const a = new AllocRate();
  for (const e of events) a.add(e);
  assert.equal(a.intervals.length, 20, 'one interval per pair of consecutive GCs');
  for (const iv of a.intervals.recent()) assert.ok(Math.abs(iv.rate - 150e6) < 1, `${iv.rate}`);
  assert.equal(a.intervals.recent()[0].startNs, events[0].timestampNs + 2 * MS, 'from the end of the previous pause');
  assert.equal(a.intervals.recent()[0].endNs, events[1].timestampNs, 'to the start of this one');
  const whole = a.range(0, 1e12);
  assert.ok(Math.abs(whole.rate - 150e6) < 1);
  assert.ok(Math.abs(whole.bytes - 150e6 * 20 * 0.498) < 10);
  assert.equal(formatRate(whole.rate), '150 MB/s');
  // The heap after each GC: every heap pool (Metaspace is not heap).
  assert.equal(a.heap.length, 21);
  const last = a.heap.recent()[20];
  assert.deepEqual(last.pools.map(([name]) => name), ['G1 Eden Space', 'G1 Survivor Space', 'G1 Old Gen']);
  assert.equal(last.totalBytes, 2e6 + 4e6 + 31e6);
});

test('a range prorates the intervals it cuts; a range between two GCs has their rate', () => {
  const events = session(11, (i) => (i <= 5 ? 100e6 : 300e6));
  const a = new AllocRate();
  for (const e of events) a.add(e);
  const mid = a.intervals.recent()[2];
  const inside = a.range(mid.startNs + 100 * MS, mid.startNs + 200 * MS);
  assert.equal(inside.intervals, 1);
  assert.ok(Math.abs(inside.rate - 100e6) < 1);
  assert.ok(Math.abs(inside.bytes - 10e6) < 1, 'a tenth of a second at 100 MB/s');
  // Half at 100, half at 300 MB/s (intervals 1-5 and 6-10, equal lengths).
  const both = a.range(0, 1e12);
  assert.ok(Math.abs(both.rate - 200e6) < 1, `${both.rate}`);
  const late = a.range(a.intervals.recent()[5].startNs, a.intervals.recent()[9].endNs);
  assert.ok(Math.abs(late.rate - 300e6) < 1);
});

test('incremental (updates in chunks through the timeline) equals the batch computation over the same GCs', () => {
  // Irregular gaps and rates, G1 Remark (no pools) and an escalated full GC right after a young one.
  const events: JavaGcEvent[] = [];
  let t = 1e9;
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  let after = 0;
  for (let i = 0; i < 400; i++) {
    t += (50 + rnd() * 900) * MS;
    const d = (0.2 + rnd() * 5) * MS;
    const before = after + rnd() * 200e6;
    const a2 = rnd() < 0.2 ? rnd() * 5e6 : 0;
    events.push(gc(t, d, [pool('PS Eden Space', before, a2), pool('PS Survivor Space', 1e6, 1e6)], 'PS Scavenge'));
    after = a2;
    t += d;
    if (i % 37 === 0) events.push({ ...gc(t + 5 * MS, MS, []), collector: 'G1 Concurrent GC', kind: 'concurrent-pause' });
    if (i % 53 === 0) {
      // escalation: the full collection starts as the young one ends (no gap, no interval)
      events.push({ ...gc(t, 30 * MS, [pool('PS Eden Space', a2, 0), pool('PS Old Gen', 50e6, 20e6)], 'PS MarkSweep'), kind: 'full', full: true, escalated: true });
      after = 0;
      t += 30 * MS;
    }
  }
  const batch = allocIntervals(events);
  const tl = new JvmTimeline();
  for (let i = 0; i < events.length; ) {
    const n = 1 + Math.floor(rnd() * 9);
    tl.apply(update(events.slice(i, i + n), events[Math.min(events.length, i + n) - 1].timestampNs));
    i += n;
  }
  assert.deepEqual(tl.alloc.intervals.recent(), batch);
  assert.ok(batch.length >= 390 && batch.length < 400, `${batch.length} intervals (escalations give none)`);
  // The whole-session figure (running sums) equals the batch sum, and a range scan over everything.
  const sum = batch.reduce((s, iv) => s + iv.bytes, 0);
  const ns = batch.reduce((s, iv) => s + iv.endNs - iv.startNs, 0);
  const whole = tl.range(0, 1e15).alloc;
  assert.ok(Math.abs(whole.bytes - sum) < 1e-3 * sum);
  assert.ok(Math.abs(whole.rate - sum / (ns / 1e9)) < 1e-6 * whole.rate);
  const scan = tl.alloc.range(batch[0].startNs + 1, batch[batch.length - 1].endNs - 1);
  assert.ok(Math.abs(scan.bytes - sum) / sum < 1e-3, `${scan.bytes} vs ${sum}`);
  // The same from a session file.
  assert.deepEqual(JvmTimeline.fromResult(tl.toResult()).alloc.intervals.recent(), batch);
});

test('collectors without an eden (ZGC, Shenandoah) give no rate and say so', () => {
  const a = new AllocRate();
  for (let i = 0; i < 5; i++) a.add({ ...gc(1e9 + i * 1e9, 300 * MS, [pool('ZHeap', 100e6, 30e6)], 'ZGC Cycles'), kind: 'concurrent-cycle' });
  assert.equal(a.intervals.length, 0);
  assert.equal(a.unavailable(), true);
  assert.equal(edenOf(gc(0, 1, [pool('ZHeap', 1, 1)])), undefined);
  const tl = new JvmTimeline();
  tl.apply(update([], 2e9));
  const v = new TimelineView();
  for (let i = 0; i < 5; i++) v.apply(update([{ ...gc(1e9 + i * 1e9, 300 * MS, [pool('ZHeap', 100e6, 30e6)], 'ZGC Cycles'), kind: 'concurrent-cycle' }], 2e9 + i * 1e9));
  assert.ok(v.lanes().some((l) => l.kind === 'alloc' && /not available/.test(l.label)));
});

test('the view: heap and allocation lanes with their maxima in MB and MB/s; tooltips say the figures', () => {
  const v = new TimelineView();
  const events = session(11, () => 80e6);
  v.apply(update(events.slice(0, 5), events[4].timestampNs));
  v.apply(update(events.slice(5), events[10].timestampNs + 100 * MS));
  const lanes = v.lanes();
  const alloc = lanes.find((l) => l.kind === 'alloc')!;
  const heap = lanes.find((l) => l.kind === 'heap')!;
  assert.equal(alloc.label, 'Allocation (max 80.0 MB/s)');
  assert.match(heap.label, /^Heap after GC \(max \d+\.\d MB\)$/);
  const marks = v.marks(alloc, 1000);
  assert.equal(marks.length, 10);
  for (const m of marks) assert.ok(Math.abs(m.level - 1) < 1e-9);
  assert.match(marks[0].label, /^80\.0 MB\/s: 39\.8 MB allocated in 498 ms between two GCs/);
  assert.match(v.marks(heap, 1000)[10].label, /heap after GC .* MB \(G1 Eden Space 1\.0 MB, G1 Survivor Space 4\.0 MB, G1 Old Gen 21\.0 MB\)/);
  assert.ok(Math.abs(v.rangeStats().alloc.rate - 80e6) < 1);
  // Zoomed out over many GCs (bins instead of items) the marks stay one per pixel column at most.
  const many = new TimelineView();
  const lots = session(5000, (i) => 50e6 + (i % 10) * 10e6, 100 * MS);
  many.apply(update(lots, lots[lots.length - 1].timestampNs));
  const wide = many.marks(many.lanes().find((l) => l.kind === 'alloc')!, 300);
  assert.ok(wide.length <= 301 && wide.length > 100, `${wide.length} marks`);
  assert.ok(wide.every((m) => m.level > 0.5 && m.level <= 1));
});

test('the off-CPU lane of a thread group: its share of the group\'s thread time per slice, stacked by state, described in seconds', async () => {
  const { OFF_STATES } = await import('../../extension/model/jvmTimeline');
  const v = new TimelineView();
  const threads = [
    { tid: 1, comm: 'GC Thread#0', group: 'gc' as const },
    { tid: 2, comm: 'GC Thread#1', group: 'gc' as const },
    { tid: 3, comm: 'main', group: 'application' as const },
  ];
  // One second: both GC threads off CPU 0.9 s (lock) and 0.1 s (preempted); main 0.2 s asleep.
  v.apply({ ...update([], 2e9), threads, offcpu: [{ startNs: 1e9, endNs: 2e9, rows: [1, 2, 900_000, 1, 3, 100_000, 2, 2, 900_000, 2, 3, 100_000, 3, 0, 200_000] }] });
  const lanes = v.lanes();
  assert.deepEqual(lanes.filter((l) => l.kind === 'offcpu').map((l) => l.label), ['Application off CPU', 'GC off CPU']);
  const gcMarks = v.marks(lanes.find((l) => l.id === 'offcpu:gc')!, 1000);
  assert.equal(gcMarks.length, 1);
  assert.ok(Math.abs(gcMarks[0].level - 1) < 1e-9, 'all of both GC threads\' second');
  assert.equal(gcMarks[0].label, 'GC threads off CPU 2.00 thread-s in 1000 ms (2 threads): sleeping 0.00 s, I/O 0.00 s, lock (futex) 1.80 s, preempted 0.20 s');
  const app = v.marks(lanes.find((l) => l.id === 'offcpu:application')!, 1000)[0];
  assert.ok(Math.abs(app.level - 0.2) < 1e-9);
  const r = v.rangeStats();
  assert.deepEqual(r.offcpu.find((g) => g.group === 'gc')!.us, [0, 0, 1_800_000, 200_000]);
  assert.equal(OFF_STATES.length, 4);
  // A session without off-CPU figures has no such lanes.
  const none = new TimelineView();
  none.apply({ ...update([], 2e9), threads });
  assert.ok(!none.lanes().some((l) => l.kind === 'offcpu'));
});
