// The Java GC view's model and the reusable histogram/timeline layouts (no DOM).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JavaGcEvent, JavaGcResult } from '../../extension/protocol/javaGc';
import { csvField, formatBucketLabel, GcModel } from '../../webview/javaGc/model';
import { bucketAt, layoutHistogram, niceTicks } from '../../webview/common/histogramChart';
import { LABEL_GAP, layoutTimeline } from '../../webview/javaGc/timelineChart';

const S = 1e9;
function ev(tS: number, durationUs: number, full = false): JavaGcEvent {
  return {
    pid: 7,
    tid: 8,
    cpu: 1,
    timestampNs: 100 * S + tS * S,
    durationNs: durationUs * 1000,
    collector: full ? 'MarkSweepCompact' : 'Copy',
    kind: full ? 'full' : 'young',
    operation: 'GenCollectForAllocation',
    escalated: false,
    full,
    pools: [
      { name: 'Eden Space', usedBefore: 1000, usedAfter: 0, committedAfter: 2000 },
      { name: "CodeHeap 'a, b'", usedBefore: 5, usedAfter: 5, committedAfter: 8 },
    ],
  };
}

function fed(): GcModel {
  const m = new GcModel();
  m.apply({ events: [ev(1, 100), ev(2, 100), ev(3, 3000, true)], lost: 0, pids: [7], startNs: 100 * S, nowNs: 104 * S });
  m.apply({ events: [ev(5, 900)], lost: 4, pids: [7], startNs: 100 * S, nowNs: 110 * S });
  return m;
}

test('updates accumulate; summary has overhead over wall time since start', () => {
  const m = fed();
  const s = m.summary();
  assert.equal(s.count, 4);
  assert.equal(s.youngCount, 3);
  assert.equal(s.fullCount, 1);
  assert.equal(s.totalPauseNs, 4.1e6);
  assert.equal(m.wallNs, 10 * S);
  assert.ok(Math.abs(s.overheadPercent - 0.041) < 1e-9);
  assert.equal(s.maxNs, 3e6);
  assert.equal(m.lost, 4);
});

test('stacked histogram covers the occupied buckets, split by collector, labelled µs/ms', () => {
  const h = fed().histogram();
  // 100 µs → 64..127, 900 µs → 512..1023, 3000 µs → 2048..4095
  assert.deepEqual(h.lowUs, [64, 128, 256, 512, 1024, 2048]);
  assert.deepEqual(h.labels, ['64 µs', '128 µs', '256 µs', '512 µs', '1.02 ms', '2.05 ms']);
  assert.deepEqual(h.series.map((x) => [x.collector, x.kind, x.counts]), [
    ['Copy', 'young', [2, 0, 0, 1, 0, 0]],
    ['MarkSweepCompact', 'full', [0, 0, 0, 0, 0, 1]],
  ]);
  const empty = new GcModel().histogram();
  assert.equal(empty.labels.length, 6);
  assert.equal(empty.series.length, 0);
});

test('bucket labels', () => {
  assert.equal(formatBucketLabel(0), '0');
  assert.equal(formatBucketLabel(512), '512 µs');
  assert.equal(formatBucketLabel(16384), '16.4 ms');
  assert.equal(formatBucketLabel(1048576), '1.05 s');
});

test('end keeps data and freezes the wall clock; clear restarts the axis', () => {
  const m = fed();
  m.end('target-exited', 'pid 7 exited');
  m.apply({ events: [], lost: 4, pids: [7], startNs: 100 * S, nowNs: 200 * S });
  assert.equal(m.state, 'target-exited');
  assert.equal(m.wallNs, 10 * S);
  assert.equal(m.summary().count, 4);
  const json = JSON.parse(m.toJson()) as JavaGcResult;
  assert.equal(json.tracer, 'java-gc');
  assert.equal(json.events.length, 4);
  assert.equal(json.summary.fullCount, 1);
  assert.equal(json.lost, 4);
  m.clear();
  assert.equal(m.summary().count, 0);
  assert.equal(m.wallNs, 0);
});

test('timeline marks sit at seconds since the origin; full collections get a lane of their own', () => {
  const m = fed();
  const tl = m.timeline();
  assert.deepEqual(tl.pauses.map((t) => [Math.round(t.t * 1000) / 1000, t.count, t.collector]), [[1, 1, 'Copy'], [2, 1, 'Copy'], [5, 1, 'Copy']]);
  assert.deepEqual(tl.full.map((t) => [Math.round(t.t * 1000) / 1000, t.durationNs]), [[3, 3e6]]);
  const l = layoutTimeline(tl, m.wallNs / 1e9, 664, 128);
  // plot is 584 px wide from x=72, 100 px tall from y=8; span 10 s; lanes 54 px (pauses) and 36 px (full) with a 10 px gap
  assert.equal(l.spanS, 10);
  assert.deepEqual(l.lanes.map((x) => [x.name, x.y, x.h]), [['young & other', 8, 54], ['full', 72, 36]]);
  assert.ok(Math.abs(l.marks[0].x - (72 + 58.4)) < 1e-9);
  const full = l.marks.find((x) => x.full)!;
  assert.equal(full.h, 36); // the one full GC fills its own lane, however short the young ones are
  assert.equal(full.y, 72);
  assert.equal(l.marks[2].h, 54); // the longest young pause fills the other lane
  assert.ok(Math.abs(l.marks[0].h - (54 * 100) / 900) < 1e-9);
});

test('the left margin fits the widest lane label in the font at hand ("young & other" was cut to "ung & other")', () => {
  const tl = fed().timeline();
  // 7.5 px a character: "young & other" is 97.5 px, wider than the 72 px margin that clipped it
  const l = layoutTimeline(tl, 10, 664, 128, (text) => text.length * 7.5);
  const widest = Math.max(...l.lanes.map((x) => x.name.length * 7.5));
  assert.ok(l.plot.x - LABEL_GAP >= widest, `labels ${widest} px, room ${l.plot.x - LABEL_GAP} px`);
  assert.equal(l.plot.x + l.plot.w, 664 - 8, 'the plot keeps its right edge');
  assert.equal(layoutTimeline(tl, 10, 664, 128, (text) => text.length * 4).plot.x, 72, 'a narrow font keeps the usual margin');
  assert.ok(layoutTimeline(tl, 10, 664, 128, () => 1e6).plot.x <= 160, 'an absurd measure cannot squeeze the plot away');
});

test('CSV: a row per GC, before/after columns per pool, quoted names', () => {
  const csv = fed().toCsv().trim().split('\n');
  assert.equal(csv.length, 5);
  assert.equal(csv[0], 'pid,tid,cpu,timestampNs,durationNs,collector,kind,escalated,operation,full,Eden Space usedBefore,Eden Space usedAfter,"CodeHeap \'a, b\' usedBefore","CodeHeap \'a, b\' usedAfter"');
  assert.equal(csv[3], `7,8,1,${103 * S},3000000,MarkSweepCompact,full,no,GenCollectForAllocation,full,1000,0,5,5`);
  assert.equal(csvField('a"b'), '"a""b"');
});

test('histogram layout: stacked bars scale to the tallest total; hit testing', () => {
  const data = { labels: ['a', 'b', 'c', 'd'], series: [{ name: 'young', color: 'blue', counts: [2, 0, 4, 0] }, { name: 'full', color: 'red', counts: [0, 1, 4, 0] }] };
  const l = layoutHistogram(data, 452, 252);
  // plot: x 44..444 (w 400), y 18..218 (h 200); max total 8
  assert.equal(l.maxTotal, 8);
  assert.equal(l.bars.length, 4);
  const c = l.bars.filter((b) => b.bucket === 2);
  assert.equal(c[0].h + c[1].h, 200);
  assert.equal(c[1].y, 18); // full stacked on top reaches the top
  assert.equal(c[0].y + c[0].h, 218);
  assert.equal(bucketAt(l, 4, 44 + 150, 100), 1);
  assert.equal(bucketAt(l, 4, 10, 100), -1);
  assert.deepEqual(niceTicks(8), [0, 2, 4, 6, 8]);
  assert.deepEqual(niceTicks(0), [0]);
  assert.deepEqual(niceTicks(130), [0, 50, 100]);
});

test('collectors table and safepoints: counted per manager; "not available" carried with its reason', () => {
  const m = fed();
  assert.deepEqual(m.collectors().map((c) => [c.collector, c.kind, c.count]), [
    ['Copy', 'young', 3],
    ['MarkSweepCompact', 'full', 1],
  ]);
  assert.equal(m.safepointsAvailable, undefined, 'unknown until the tracer says');
  m.apply({ events: [], safepoints: [], safepointsAvailable: false, safepointsReason: 'no hs_private probes', lost: 0, pids: [7], startNs: 100 * S, nowNs: 111 * S });
  assert.equal(m.safepointsAvailable, false);
  assert.equal(m.safepointsReason, 'no hs_private probes');
  const json = JSON.parse(m.toJson()) as JavaGcResult;
  assert.deepEqual([json.safepoints.available, json.safepoints.reason], [false, 'no hs_private probes']);
  m.apply({ events: [], safepoints: [{ pid: 7, tid: 8, timestampNs: 101 * S, timeToSafepointNs: 2000, durationNs: 90_000, operation: 'GenCollectForAllocation' }], safepointsAvailable: true, lost: 0, pids: [7], startNs: 100 * S, nowNs: 112 * S });
  assert.equal(m.safepointSummary().count, 1);
  assert.equal(m.safepointSummary().ttsMaxNs, 2000);
  m.clear();
  assert.equal(m.safepointSummary().count, 0);
});

test('the pause timeline leaves concurrent cycles out', () => {
  const m = new GcModel();
  const cycle: JavaGcEvent = { ...ev(1, 50_000), collector: 'ZGC Cycles', kind: 'concurrent-cycle', full: false };
  const pause: JavaGcEvent = { ...ev(1.01, 40), collector: 'ZGC Pauses', kind: 'concurrent-pause', full: false };
  m.apply({ events: [cycle, pause], lost: 0, pids: [7], startNs: 100 * S, nowNs: 102 * S });
  assert.deepEqual(m.timeline().pauses.map((x) => x.collector), ['ZGC Pauses']);
  assert.deepEqual(m.timeline().full, []);
  assert.equal(m.summary().count, 2);
});
