// The live GC figures (model/javaGcLive.ts, model/quantileSketch.ts) against the batch functions
// over the same events (model/javaGcStats.ts): property-style, with fast-check drawing events
// and how they are split into updates. Seeds are printed by fast-check on failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { JavaGcEvent, JavaGcKind, JavaSafepoint } from '../../extension/protocol/javaGc';
import { collectorSummaries, pauseHistogram, poolReclaim, summarize, summarizeSafepoints } from '../../extension/model/javaGcStats';
import { GcLive, RECENT_EVENTS, TIMELINE_BINS } from '../../extension/model/javaGcLive';
import { EXACT_LIMIT, QuantileSketch, sketchBucket, sketchBucketRange } from '../../extension/model/quantileSketch';
import { quantileExact } from '../../extension/model/log2hist';

const S = 1e9;
const COLLECTORS: [string, JavaGcKind][] = [
  ['Copy', 'young'],
  ['MarkSweepCompact', 'full'],
  ['ZGC Cycles', 'concurrent-cycle'],
  ['ZGC Pauses', 'concurrent-pause'],
];

const arbEvent = fc
  .record({
    dt: fc.integer({ min: 0, max: 2e9 }),
    // pauses from 1 ns to ~17 minutes, log-uniform-ish
    exp: fc.integer({ min: 0, max: 40 }),
    frac: fc.double({ min: 0, max: 1, noNaN: true }),
    c: fc.integer({ min: 0, max: COLLECTORS.length - 1 }),
    escalated: fc.boolean(),
    eden: fc.integer({ min: 0, max: 1 << 20 }),
    old: fc.integer({ min: 0, max: 1 << 20 }),
  })
  .map((r) => r);

function toEvents(rs: { dt: number; exp: number; frac: number; c: number; escalated: boolean; eden: number; old: number }[]): JavaGcEvent[] {
  let t = 100 * S;
  return rs.map((r) => {
    t += r.dt;
    const [collector, kind] = COLLECTORS[r.c];
    return {
      pid: 7,
      tid: 8,
      cpu: 0,
      timestampNs: t,
      durationNs: Math.floor(2 ** r.exp * (1 + r.frac)),
      collector,
      kind,
      operation: 'op',
      escalated: r.escalated,
      full: kind === 'full',
      pools: [
        { name: 'Eden Space', usedBefore: r.eden, usedAfter: 0, committedAfter: 1 << 21 },
        { name: 'Tenured Gen', usedBefore: r.old, usedAfter: r.c === 1 ? r.old >> 1 : r.old, committedAfter: 1 << 21 },
        { name: 'Metaspace', usedBefore: 5, usedAfter: 5, committedAfter: 8 },
      ],
    };
  });
}

/** Splits events into updates at the given cut points, as the tracer's ticks would. */
function fedIn(events: JavaGcEvent[], cuts: number[]): GcLive {
  const g = new GcLive();
  const at = [...new Set(cuts.map((c) => c % (events.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const c of [...at, events.length]) {
    g.apply({ events: events.slice(from, c), lost: 0, pids: [7], startNs: 100 * S, nowNs: events[Math.max(0, c - 1)]?.timestampNs ?? 100 * S });
    from = Math.max(from, c);
  }
  return g;
}

test('incremental figures equal the batch computation over the same events, however they are split into updates', () => {
  fc.assert(
    fc.property(fc.array(arbEvent, { minLength: 0, maxLength: 300 }), fc.array(fc.nat(), { maxLength: 20 }), (rs, cuts) => {
      const events = toEvents(rs);
      const g = fedIn(events, cuts);
      // Few events: every figure is exact, quantiles included.
      assert.deepEqual(g.summary(), summarize(events));
      assert.deepEqual(g.collectors(), collectorSummaries(events));
      assert.deepEqual(g.pools(), poolReclaim(events));
      assert.deepEqual(g.toResult().histogram.buckets, pauseHistogram(events));
      assert.equal(g.count, events.length);
      assert.equal(g.youngCount, events.filter((e) => e.kind === 'young').length);
      // The timeline's bins hold every pause but the concurrent cycles, in their lanes.
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      assert.equal(sum(g.timeline.pauses.count), events.filter((e) => e.kind !== 'concurrent-cycle' && !e.full).length);
      assert.equal(sum(g.timeline.full.count), events.filter((e) => e.full).length);
      assert.ok(g.timeline.pauses.count.length <= TIMELINE_BINS && g.timeline.full.count.length <= TIMELINE_BINS);
      const maxOf = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b), 0);
      assert.equal(maxOf(g.timeline.full.maxNs), maxOf(events.filter((e) => e.full).map((e) => e.durationNs)));
    }),
    { numRuns: 150 },
  );
});

test('a saved state restores the same figures, and goes on as if it had never been saved', () => {
  fc.assert(
    fc.property(fc.array(arbEvent, { minLength: 1, maxLength: 200 }), fc.nat(), (rs, cut) => {
      const events = toEvents(rs);
      const k = cut % events.length;
      const whole = fedIn(events, [k]);
      const first = fedIn(events.slice(0, k), []);
      const restored = GcLive.from(JSON.parse(JSON.stringify(first.toJSON())));
      restored.apply({ events: events.slice(k), lost: 0, pids: [7], startNs: 100 * S, nowNs: events[events.length - 1].timestampNs });
      assert.deepEqual(restored.toJSON(), whole.toJSON());
    }),
    { numRuns: 100 },
  );
});

test('past EXACT_LIMIT, quantiles come from buckets within 1/64 of the exact nearest-rank value; counts, totals and max stay exact', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 40 }), { minLength: EXACT_LIMIT + 1, maxLength: EXACT_LIMIT * 3 }), (values) => {
      const k = new QuantileSketch();
      for (const v of values) k.add(v);
      assert.equal(k.isExact, false);
      const sorted = [...values].sort((a, b) => a - b);
      assert.equal(k.n, values.length);
      assert.equal(k.sum, values.reduce((a, b) => a + b, 0));
      assert.equal(k.max, sorted[sorted.length - 1]);
      assert.equal(k.min, sorted[0]);
      for (const q of [0.01, 0.5, 0.9, 0.99, 0.999, 1]) {
        const exact = quantileExact(sorted, q);
        assert.ok(Math.abs(k.quantile(q) - exact) <= exact / 64 + 0.5, `q ${q}: ${k.quantile(q)} vs ${exact}`);
      }
    }),
    { numRuns: 15 },
  );
});

test('sketches merge: two halves merged equal one sketch of everything', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 36 }), { maxLength: EXACT_LIMIT * 2 }), fc.nat(), (values, cut) => {
      const k = cut % (values.length + 1);
      const a = new QuantileSketch();
      const b = new QuantileSketch();
      const all = new QuantileSketch();
      values.slice(0, k).forEach((v) => a.add(v));
      values.slice(k).forEach((v) => b.add(v));
      values.forEach((v) => all.add(v));
      a.merge(b);
      for (const q of [0.5, 0.9, 0.99]) assert.equal(a.quantile(q), all.quantile(q));
      assert.deepEqual([a.n, a.sum, a.max], [all.n, all.sum, all.max]);
    }),
    { numRuns: 20 },
  );
});

test('sketch buckets: every value falls inside its bucket, and a bucket is at most 1/32 of its low bound wide', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 50 }), (v) => {
      const [low, width] = sketchBucketRange(sketchBucket(v));
      assert.ok(low <= v && v < low + width, `${v} not in [${low}, ${low + width})`);
      assert.ok(width === 1 || width <= low / 32);
    }),
  );
  for (const v of [0, 1, 63, 64, 65, 127, 128, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 12345]) {
    const [low, width] = sketchBucketRange(sketchBucket(v));
    assert.ok(low <= v && v < low + width, String(v));
  }
});

test('an hour at 50 GCs/s: state, timeline and the kept events stay bounded', () => {
  const g = new GcLive();
  const start = 100 * S;
  let t = start;
  for (let s = 0; s < 3600; s++) {
    const events: JavaGcEvent[] = [];
    for (let i = 0; i < 50; i++) {
      t += S / 50;
      const full = i === 0 && s % 60 === 0;
      events.push({ pid: 7, tid: 8, cpu: 0, timestampNs: t, durationNs: full ? 80e6 : 200_000 + ((s * 50 + i) % 97) * 1000, collector: full ? 'MarkSweepCompact' : 'Copy', kind: full ? 'full' : 'young', operation: 'op', escalated: false, full, pools: [] });
    }
    g.apply({ events, lost: 0, pids: [7], startNs: start, nowNs: t });
  }
  assert.equal(g.count, 180_000);
  assert.equal(g.fullCount, 60);
  assert.ok(g.recent.length <= RECENT_EVENTS * 1.5);
  assert.ok(g.timeline.pauses.count.length <= TIMELINE_BINS);
  // Every full GC of the hour is still its own mark in the full lane (one a minute, bins are ~2 s).
  assert.equal(g.timeline.full.count.filter((c) => c > 0).length, 60);
  assert.ok(JSON.stringify(g.toJSON()).length < 2_000_000);
  const s = g.summary();
  assert.equal(s.maxNs, 80e6);
  assert.ok(s.p50Ns >= 200_000 && s.p50Ns <= 300_000);
});

test('safepoint figures equal the batch ones', () => {
  fc.assert(
    fc.property(fc.array(fc.record({ tts: fc.integer({ min: 0, max: 1e7 }), d: fc.integer({ min: 0, max: 1e9 }) }), { maxLength: 200 }), (rs) => {
      const sps: JavaSafepoint[] = rs.map((r, i) => ({ pid: 7, tid: 8, timestampNs: 100 * S + i, timeToSafepointNs: r.tts, durationNs: r.d, operation: 'op' }));
      const g = new GcLive();
      g.apply({ events: [], safepoints: sps, safepointsAvailable: true, lost: 0, pids: [7], startNs: 100 * S, nowNs: 101 * S });
      assert.deepEqual(g.safepointSummary(), summarizeSafepoints(sps));
    }),
  );
});
