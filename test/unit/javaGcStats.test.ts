// Java GC figures: exact percentiles, the log2 µs histogram, pool reclaim, and the CLI's text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JavaGcEvent } from '../../extension/protocol/javaGc';
import { buildResult, formatReclaim, formatSize, overheadPercent, pauseCounts, poolReclaim, summarize } from '../../extension/model/javaGcStats';
import { formatGcLines, formatGcResult, formatSafepoints } from '../../extension/cli/commands/javaGc';

function ev(durationUs: number, full = false, pools: JavaGcEvent['pools'] = [], t = 0): JavaGcEvent {
  return { pid: 7, tid: 8, cpu: 0, timestampNs: t, durationNs: durationUs * 1000, collector: full ? 'MarkSweepCompact' : 'Copy', kind: full ? 'full' : 'young', operation: '', escalated: false, full, pools };
}

test('summary: counts, total and nearest-rank percentiles', () => {
  // 1..100 ms: p50 = 50 ms, p90 = 90 ms, p99 = 99 ms, max 100 ms
  const events = Array.from({ length: 100 }, (_, i) => ev((100 - i) * 1000, i % 10 === 0));
  const s = summarize(events);
  assert.equal(s.count, 100);
  assert.equal(s.fullCount, 10);
  assert.equal(s.totalPauseNs, 5050 * 1e6);
  assert.equal(s.p50Ns, 50e6);
  assert.equal(s.p90Ns, 90e6);
  assert.equal(s.p99Ns, 99e6);
  assert.equal(s.maxNs, 100e6);
  assert.deepEqual(summarize([]), { count: 0, fullCount: 0, pauseCount: 0, totalPauseNs: 0, p50Ns: 0, p90Ns: 0, p99Ns: 0, maxNs: 0 });
});

test('histogram: µs log2 buckets, sub-µs pauses in bucket 0, young/full split', () => {
  const events = [ev(0.5), ev(1), ev(65), ev(127.9), ev(128, true), ev(1500, true)];
  const counts = pauseCounts(events);
  assert.equal(counts[0], 1); // 0 µs
  assert.equal(counts[1], 1); // 1 µs
  assert.equal(counts[7], 2); // 64..127
  assert.equal(counts[8], 1); // 128..255
  assert.equal(counts[11], 1); // 1024..2047
  assert.deepEqual(pauseCounts(events, (e) => e.full).filter((c) => c > 0), [1, 1]);
  const r = buildResult([7], events, 2);
  assert.equal(r.histogram.unit, 'us');
  assert.deepEqual(r.histogram.buckets.at(-1), { low: 1024, high: 2047, count: 1 });
  assert.equal(r.histogram.buckets.reduce((n, b) => n + b.count, 0), events.length);
  assert.equal(r.lost, 2);
  assert.deepEqual(Object.keys(r), ['tracer', 'pids', 'events', 'summary', 'histogram', 'lost', 'collectors', 'safepoints']);
  assert.deepEqual(r.collectors.map((c) => [c.collector, c.kind, c.count]), [
    ['Copy', 'young', 4],
    ['MarkSweepCompact', 'full', 2],
  ]);
  assert.equal(r.collectors[1].histogram.reduce((n, b) => n + b.count, 0), 2);
  assert.equal(r.safepoints.available, false);
});

test('concurrent cycles count as collections, not as pauses; escalations counted per collector', () => {
  const cycle: JavaGcEvent = { ...ev(50_000), collector: 'ZGC Cycles', kind: 'concurrent-cycle' };
  const pause: JavaGcEvent = { ...ev(40), collector: 'ZGC Pauses', kind: 'concurrent-pause', operation: 'ZMarkStart' };
  const escalated: JavaGcEvent = { ...ev(900, true), escalated: true };
  const s = summarize([cycle, pause, pause, escalated]);
  assert.equal(s.count, 4);
  assert.equal(s.pauseCount, 3);
  assert.equal(s.maxNs, 900_000, 'a 50 ms cycle is not a pause');
  const r = buildResult([7], [cycle, pause, pause, escalated], 0);
  assert.equal(r.histogram.buckets.reduce((n, b) => n + b.count, 0), 3);
  assert.deepEqual(r.collectors.map((c) => [c.collector, c.kind, c.count, c.escalated]), [
    ['ZGC Cycles', 'concurrent-cycle', 1, 0],
    ['ZGC Pauses', 'concurrent-pause', 2, 0],
    ['MarkSweepCompact', 'full', 1, 1],
  ]);
});

test('safepoints: time to safepoint and duration percentiles', () => {
  const sp = (tts: number, d: number) => ({ pid: 7, tid: 9, timestampNs: 0, timeToSafepointNs: tts, durationNs: d, operation: 'G1CollectForAllocation' });
  const r = buildResult([7], [], 0, { available: true, events: [sp(10, 100), sp(30, 300), sp(20, 200)], lost: 1 });
  assert.equal(r.safepoints.summary.count, 3);
  assert.equal(r.safepoints.summary.ttsP50Ns, 20);
  assert.equal(r.safepoints.summary.ttsMaxNs, 30);
  assert.equal(r.safepoints.summary.totalNs, 600);
  assert.match(formatSafepoints(r), /Safepoints: 3, total 600 ns/);
  assert.match(formatSafepoints(buildResult([7], [], 0, { available: false, reason: 'no probes here', events: [], lost: 0 })), /not available \(no probes here\)/);
});

test('pool reclaim: last GC before→after and the total reclaimed per pool', () => {
  const p = (name: string, usedBefore: number, usedAfter: number) => ({ name, usedBefore, usedAfter, committedAfter: 100 });
  const r = poolReclaim([ev(10, false, [p('Eden Space', 90, 0), p('Tenured Gen', 10, 15)]), ev(10, false, [p('Eden Space', 80, 5), p('Tenured Gen', 15, 20)])]);
  assert.deepEqual(r.map((x) => [x.name, x.lastBefore, x.lastAfter, x.totalReclaimed, x.gcs]), [
    ['Eden Space', 80, 5, 165, 2],
    ['Tenured Gen', 15, 20, -10, 2],
  ]);
});

test('overhead and sizes', () => {
  assert.equal(overheadPercent(5e8, 1e10), 5);
  assert.equal(overheadPercent(1, 0), 0);
  assert.equal(formatSize(17_891_328), '17.1 MB');
  assert.equal(formatSize(-65536), '-64.0 KB');
  assert.equal(formatSize(512), '512 B');
  assert.equal(formatReclaim(539_000_000), '514 MB');
  assert.equal(formatReclaim(-867_328), 'grew 847 KB', 'a pool that filled up across GCs is said to grow, not to reclaim a negative amount');
});

test('CLI text: one line per GC, then histogram, summary and pools', () => {
  const lines = formatGcLines({ events: [ev(2060, false, [], 1_000_000_000), ev(1930, true, [], 1_500_000_000)], lost: 0, pids: [7], startNs: 0, nowNs: 2_000_000_000 }, Date.UTC(2024, 0, 1, 12, 0, 2));
  assert.equal(lines.length, 2);
  assert.match(lines[0], /^\d\d:\d\d:01\.000\s+7\s+0\s+Copy\s+young\s+2\.06 ms$/);
  assert.match(lines[1], /^\d\d:\d\d:01\.500\s+7\s+0\s+MarkSweepCompact\s+full\s+1\.93 ms$/);
  const text = formatGcResult(buildResult([7], [ev(80), ev(2000, true, [{ name: 'Eden Space', usedBefore: 1 << 20, usedAfter: 0, committedAfter: 2 << 20 }])], 3));
  assert.match(text, /usecs\s+: count\s+distribution/);
  assert.match(text, /GCs: 2 collections \(2 pauses\) in pid 7/);
  assert.match(text, /Copy\s+young\s+1\s+0\s+80\.0 µs/);
  assert.match(text, /MarkSweepCompact\s+full\s+1\s+0\s+2\.00 ms/);
  assert.match(text, /\nCopy \(young\):\n\s+usecs/, 'a histogram per collector');
  assert.match(text, /p50 80\.0 µs .* max 2\.00 ms/);
  assert.match(text, /Eden Space\s+1\.0 MB → 0 B\s+1\.0 MB/);
  assert.match(text, /3 GC events lost/);
  assert.match(formatGcResult(buildResult([7], [], 0)), /No GC pauses seen/);
});

test('pool order: heap pools before CodeHeap/Metaspace', () => {
  const p = (name: string) => ({ name, usedBefore: 1, usedAfter: 1, committedAfter: 1 });
  const r = poolReclaim([ev(1, false, [p("CodeHeap 'non-nmethods'"), p('Metaspace'), p('Eden Space'), p('Compressed Class Space'), p('Tenured Gen')])]);
  assert.deepEqual(r.map((x) => x.name), ['Eden Space', 'Tenured Gen', "CodeHeap 'non-nmethods'", 'Metaspace', 'Compressed Class Space']);
});

test('each pause carries the safepoint it ran in (same thread, spanning it); cycles do not', () => {
  const sp = (t: number, tts: number, d: number, tid = 8) => ({ pid: 7, tid, timestampNs: t, timeToSafepointNs: tts, durationNs: d, operation: '' });
  const young = { ...ev(10, false, [], 1000) };
  const escalated = { ...ev(20, true, [], 12_000), escalated: true };
  const cycle: JavaGcEvent = { ...ev(500, false, [], 1500), collector: 'ZGC Cycles', kind: 'concurrent-cycle' };
  const other = { ...ev(5, false, [], 50_000) };
  const r = buildResult([7], [young, escalated, cycle, other], 0, { available: true, events: [sp(900, 40, 40_000), sp(49_000, 70, 60_000, 99)], lost: 0 });
  assert.deepEqual(r.events[0].safepoint, { timeToSafepointNs: 40, durationNs: 40_000 });
  assert.deepEqual(r.events[1].safepoint, { timeToSafepointNs: 40, durationNs: 40_000 }, 'both collections of an escalated pause share its safepoint');
  assert.equal(r.events[2].safepoint, undefined);
  assert.equal(r.events[3].safepoint, undefined, 'a safepoint of another thread does not count');
});
