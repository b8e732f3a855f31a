// The live Java GC figures, kept incrementally: every table, histogram and quantile the GC view
// shows is updated as events arrive (O(new events) per update), never recomputed over the whole
// session. A bounded window of the most recent raw events stays for export; the timeline keeps
// fixed time bins (merged pairwise as the session grows), so drawing it costs the same after an
// hour as after a minute. The state is plain JSON: the extension host keeps one for the saved
// session, the webview one for drawing, and a restored view loads the same figures.
// Pure: no DOM, no Node.
import type { JavaGcCollectorSummary, JavaGcEvent, JavaGcJvmCount, JavaGcKind, JavaGcResult, JavaGcSummary, JavaGcUpdate, JavaSafepoint, JavaSafepointSummary } from '../protocol/javaGc';
import { isPause } from './javaGcKinds';
import { bucketIndex, toBuckets } from './log2hist';
import { isNonHeapPool, overheadPercent, withSafepoints, type PoolReclaim } from './javaGcStats';
import { QuantileSketch, type SketchState } from './quantileSketch';

/** Raw events (and safepoints) kept for export and the saved session: the most recent ones. */
export const RECENT_EVENTS = 2000;
/** Timeline bins: enough for one per pixel column of a wide panel. */
export const TIMELINE_BINS = 2048;
/** The first bin width; it doubles (pairs merge) whenever the session outgrows TIMELINE_BINS. */
const FIRST_BIN_NS = 50e6;

interface CollectorAgg {
  collector: string;
  kinds: Map<JavaGcKind, number>;
  count: number;
  escalated: number;
  durations: QuantileSketch;
  /** dense log2 µs counts (log2hist's buckets) */
  log2us: number[];
}

/** One timeline lane: per bin the number of pauses, the longest, and whose it was. */
export interface TimelineLane {
  count: number[];
  maxNs: number[];
  /** index into the collectors (first-seen order) of each bin's longest pause; -1 when empty */
  who: number[];
}

export interface TimelineBins {
  /** CLOCK_MONOTONIC ns of bin 0's start */
  originNs: number;
  binNs: number;
  /** young and other pauses (every pause but a full collection) */
  pauses: TimelineLane;
  /** full collections: a lane of their own, so a few long ones stay visible beside many short ones */
  full: TimelineLane;
}

export interface GcLiveState {
  version: 1;
  count: number;
  fullCount: number;
  youngCount: number;
  pauses: SketchState;
  pauseLog2us: number[];
  collectors: { collector: string; kinds: [JavaGcKind, number][]; count: number; escalated: number; durations: SketchState; log2us: number[] }[];
  pools: PoolReclaim[];
  safepoints: { durations: SketchState; tts: SketchState };
  timeline: TimelineBins;
  recent: JavaGcEvent[];
  recentSafepoints: JavaSafepoint[];
  pids: number[];
  lost: number;
  safepointsAvailable?: boolean;
  safepointsReason?: string;
  /** each JVM's traced count against its own counters, as of the last update */
  jvmCounts?: JavaGcJvmCount[];
  startNs: number;
  nowNs: number;
}

const emptyLane = (): TimelineLane => ({ count: [], maxNs: [], who: [] });

function pushBounded<T>(into: T[], items: readonly T[], limit: number): void {
  for (const x of items) into.push(x);
  // Trimmed in blocks so a long session does not shift the array on every update.
  if (into.length > limit * 1.5) into.splice(0, into.length - limit);
}

export class GcLive {
  count = 0;
  fullCount = 0;
  youngCount = 0;
  /** durations of the stop-the-world pauses (concurrent cycles are not pauses) */
  pauses = new QuantileSketch();
  /** dense log2 µs counts of the pauses */
  private pauseLog2us: number[] = [];
  private byCollector = new Map<string, CollectorAgg>();
  private poolsByName = new Map<string, PoolReclaim>();
  spDurations = new QuantileSketch();
  spTts = new QuantileSketch();
  timeline: TimelineBins = { originNs: 0, binNs: FIRST_BIN_NS, pauses: emptyLane(), full: emptyLane() };
  recent: JavaGcEvent[] = [];
  recentSafepoints: JavaSafepoint[] = [];
  pids: number[] = [];
  lost = 0;
  safepointsAvailable: boolean | undefined;
  safepointsReason = '';
  jvmCounts: JavaGcJvmCount[] = [];
  startNs = 0;
  nowNs = 0;

  /** Takes one live update (the GCs and safepoints since the previous one). */
  apply(u: JavaGcUpdate): void {
    if (this.startNs === 0) this.startNs = u.startNs;
    if (this.timeline.originNs === 0) this.timeline.originNs = u.startNs;
    this.nowNs = Math.max(this.nowNs, u.nowNs);
    this.addEvents(u.events);
    if (u.safepoints) this.addSafepoints(u.safepoints);
    if (u.safepointsAvailable !== undefined) {
      this.safepointsAvailable = u.safepointsAvailable;
      this.safepointsReason = u.safepointsReason ?? '';
    }
    this.pids = u.pids;
    this.lost = u.lost;
    if (u.jvmCounts) this.jvmCounts = u.jvmCounts;
  }

  addEvents(events: readonly JavaGcEvent[]): void {
    for (const e of events) {
      this.count++;
      if (e.full) this.fullCount++;
      if (e.kind === 'young') this.youngCount++;
      const i = bucketIndex(Math.floor(e.durationNs / 1000));
      if (isPause(e.kind)) {
        this.pauses.add(e.durationNs);
        while (this.pauseLog2us.length <= i) this.pauseLog2us.push(0);
        this.pauseLog2us[i]++;
      }
      let c = this.byCollector.get(e.collector);
      if (!c) this.byCollector.set(e.collector, (c = { collector: e.collector, kinds: new Map(), count: 0, escalated: 0, durations: new QuantileSketch(), log2us: [] }));
      c.count++;
      if (e.escalated) c.escalated++;
      c.kinds.set(e.kind, (c.kinds.get(e.kind) ?? 0) + 1);
      c.durations.add(e.durationNs);
      while (c.log2us.length <= i) c.log2us.push(0);
      c.log2us[i]++;
      for (const p of e.pools) {
        let r = this.poolsByName.get(p.name);
        if (!r) this.poolsByName.set(p.name, (r = { name: p.name, lastBefore: 0, lastAfter: 0, lastCommitted: 0, totalReclaimed: 0, gcs: 0, changed: 0 }));
        r.lastBefore = p.usedBefore;
        r.lastAfter = p.usedAfter;
        r.lastCommitted = p.committedAfter;
        r.totalReclaimed += p.usedBefore - p.usedAfter;
        r.gcs++;
        if (p.usedBefore !== p.usedAfter) r.changed++;
      }
      // Pauses only: a concurrent cycle runs beside the application, and its length (often 1000×
      // a pause) would flatten every pause mark.
      if (e.kind !== 'concurrent-cycle') this.addToTimeline(e, [...this.byCollector.keys()].indexOf(e.collector));
    }
    pushBounded(this.recent, events, RECENT_EVENTS);
  }

  addSafepoints(sps: readonly JavaSafepoint[]): void {
    for (const s of sps) {
      this.spDurations.add(s.durationNs);
      this.spTts.add(s.timeToSafepointNs);
    }
    pushBounded(this.recentSafepoints, sps, RECENT_EVENTS);
  }

  /** Forgets the figures; the time axis restarts at `nowNs` (the view's Clear). */
  clear(): void {
    const keep = { pids: this.pids, lost: this.lost, sa: this.safepointsAvailable, sr: this.safepointsReason, now: this.nowNs, counts: this.jvmCounts };
    Object.assign(this, new GcLive());
    // The JVMs' counts are over the session (the next update brings them anyway).
    this.jvmCounts = keep.counts;
    this.pids = keep.pids;
    this.lost = keep.lost;
    this.safepointsAvailable = keep.sa;
    this.safepointsReason = keep.sr;
    this.startNs = keep.now;
    this.nowNs = keep.now;
    this.timeline.originNs = keep.now;
  }

  get wallNs(): number {
    return Math.max(0, this.nowNs - this.startNs);
  }

  summary(): JavaGcSummary {
    const d = this.pauses;
    return { count: this.count, fullCount: this.fullCount, pauseCount: d.n, totalPauseNs: d.sum, p50Ns: d.quantile(0.5), p90Ns: d.quantile(0.9), p99Ns: d.quantile(0.99), maxNs: d.max };
  }

  overheadPercent(): number {
    return overheadPercent(this.pauses.sum, this.wallNs);
  }

  /** One row per memory manager, in first-seen order (javaGcStats.collectorSummaries, kept live). */
  collectors(): JavaGcCollectorSummary[] {
    return [...this.byCollector.values()].map((c) => ({
      collector: c.collector,
      kind: mostFrequent(c.kinds),
      count: c.count,
      escalated: c.escalated,
      totalNs: c.durations.sum,
      p50Ns: c.durations.quantile(0.5),
      p99Ns: c.durations.quantile(0.99),
      maxNs: c.durations.max,
      histogram: toBuckets(c.log2us),
    }));
  }

  /** Dense log2 µs counts per collector, first-seen order. */
  collectorCounts(): { collector: string; kind: JavaGcKind; counts: number[] }[] {
    return [...this.byCollector.values()].map((c) => ({ collector: c.collector, kind: mostFrequent(c.kinds), counts: c.log2us }));
  }

  collectorNames(): string[] {
    return [...this.byCollector.keys()];
  }

  /** True when every figure is exact (quantiles too); false once they come from buckets. */
  get exactQuantiles(): boolean {
    return this.pauses.isExact && [...this.byCollector.values()].every((c) => c.durations.isExact);
  }

  /** Per-pool before → after: heap pools first, each group in first-seen order. */
  pools(): PoolReclaim[] {
    const all = [...this.poolsByName.values()].map((p) => ({ ...p }));
    return [...all.filter((r) => !isNonHeapPool(r.name)), ...all.filter((r) => isNonHeapPool(r.name))];
  }

  safepointSummary(): JavaSafepointSummary {
    const d = this.spDurations;
    const t = this.spTts;
    return { count: d.n, totalNs: d.sum, ttsP50Ns: t.quantile(0.5), ttsP99Ns: t.quantile(0.99), ttsMaxNs: t.max, p50Ns: d.quantile(0.5), p99Ns: d.quantile(0.99), maxNs: d.max };
  }

  /**
   * The result document (the CLI's --json shape): figures over the whole session, `events` and
   * the safepoint events the most recent ones kept (RECENT_EVENTS).
   */
  toResult(): JavaGcResult {
    return {
      tracer: 'java-gc',
      pids: [...this.pids],
      events: withSafepoints(this.recent, this.recentSafepoints),
      summary: this.summary(),
      histogram: { unit: 'us', buckets: toBuckets(this.pauseCounts()) },
      lost: this.lost,
      collectors: this.collectors(),
      safepoints: {
        available: Boolean(this.safepointsAvailable),
        ...(this.safepointsReason ? { reason: this.safepointsReason } : {}),
        events: [...this.recentSafepoints],
        summary: this.safepointSummary(),
        lost: 0,
      },
      ...(this.jvmCounts.length ? { jvmCounts: [...this.jvmCounts] } : {}),
    };
  }

  /** Dense log2 µs counts of the pauses of every collector (concurrent cycles left out). */
  pauseCounts(): number[] {
    return [...this.pauseLog2us];
  }

  toJSON(): GcLiveState {
    return {
      version: 1,
      count: this.count,
      fullCount: this.fullCount,
      youngCount: this.youngCount,
      pauses: this.pauses.toJSON(),
      pauseLog2us: [...this.pauseLog2us],
      collectors: [...this.byCollector.values()].map((c) => ({ collector: c.collector, kinds: [...c.kinds], count: c.count, escalated: c.escalated, durations: c.durations.toJSON(), log2us: [...c.log2us] })),
      pools: [...this.poolsByName.values()].map((p) => ({ ...p })),
      safepoints: { durations: this.spDurations.toJSON(), tts: this.spTts.toJSON() },
      timeline: structuredCloneLane(this.timeline),
      recent: [...this.recent],
      recentSafepoints: [...this.recentSafepoints],
      pids: [...this.pids],
      lost: this.lost,
      ...(this.safepointsAvailable !== undefined ? { safepointsAvailable: this.safepointsAvailable, safepointsReason: this.safepointsReason } : {}),
      ...(this.jvmCounts.length ? { jvmCounts: [...this.jvmCounts] } : {}),
      startNs: this.startNs,
      nowNs: this.nowNs,
    };
  }

  static from(s: GcLiveState): GcLive {
    const g = new GcLive();
    g.count = s.count;
    g.fullCount = s.fullCount;
    g.youngCount = s.youngCount;
    g.pauses = QuantileSketch.from(s.pauses);
    g.pauseLog2us = [...(s.pauseLog2us ?? [])];
    for (const c of s.collectors) g.byCollector.set(c.collector, { collector: c.collector, kinds: new Map(c.kinds), count: c.count, escalated: c.escalated, durations: QuantileSketch.from(c.durations), log2us: [...c.log2us] });
    for (const p of s.pools) g.poolsByName.set(p.name, { ...p, changed: p.changed ?? 0 });
    g.spDurations = QuantileSketch.from(s.safepoints.durations);
    g.spTts = QuantileSketch.from(s.safepoints.tts);
    g.timeline = structuredCloneLane(s.timeline);
    g.recent = [...s.recent];
    g.recentSafepoints = [...s.recentSafepoints];
    g.pids = [...s.pids];
    g.lost = s.lost;
    g.safepointsAvailable = s.safepointsAvailable;
    g.safepointsReason = s.safepointsReason ?? '';
    g.jvmCounts = [...(s.jvmCounts ?? [])];
    g.startNs = s.startNs;
    g.nowNs = s.nowNs;
    return g;
  }

  private addToTimeline(e: JavaGcEvent, who: number): void {
    const t = this.timeline;
    if (t.originNs === 0) t.originNs = e.timestampNs;
    let bin = Math.max(0, Math.floor((e.timestampNs - t.originNs) / t.binNs));
    while (bin >= TIMELINE_BINS) {
      coarsen(t);
      bin = Math.max(0, Math.floor((e.timestampNs - t.originNs) / t.binNs));
    }
    const lane = e.full ? t.full : t.pauses;
    while (lane.count.length <= bin) {
      lane.count.push(0);
      lane.maxNs.push(0);
      lane.who.push(-1);
    }
    lane.count[bin]++;
    if (e.durationNs >= lane.maxNs[bin]) {
      lane.maxNs[bin] = e.durationNs;
      lane.who[bin] = who;
    }
  }
}

/** Doubles the bin width: each pair of bins becomes one. */
function coarsen(t: TimelineBins): void {
  t.binNs *= 2;
  for (const lane of [t.pauses, t.full]) {
    const n = Math.ceil(lane.count.length / 2);
    const out = emptyLane();
    for (let i = 0; i < n; i++) {
      const a = 2 * i;
      const b = a + 1;
      out.count.push(lane.count[a] + (lane.count[b] ?? 0));
      const bWins = b < lane.count.length && lane.maxNs[b] >= lane.maxNs[a] && lane.count[b] > 0;
      out.maxNs.push(bWins ? lane.maxNs[b] : lane.maxNs[a]);
      out.who.push(bWins ? lane.who[b] : lane.who[a]);
    }
    Object.assign(lane, out);
  }
}

function structuredCloneLane(t: TimelineBins): TimelineBins {
  const lane = (l: TimelineLane): TimelineLane => ({ count: [...l.count], maxNs: [...l.maxNs], who: [...l.who] });
  return { originNs: t.originNs, binNs: t.binNs, pauses: lane(t.pauses), full: lane(t.full) };
}

function mostFrequent<T>(counts: Map<T, number>): T {
  let best: T | undefined;
  let n = -1;
  for (const [k, c] of counts) {
    if (c > n) {
      best = k;
      n = c;
    }
  }
  return best as T;
}

/** Whether a value is a GcLiveState (a saved session's `state`), without checking every field. */
export function isGcLiveState(v: unknown): v is GcLiveState {
  const s = v as Partial<GcLiveState> | null;
  return typeof s === 'object' && s !== null && s.version === 1 && Array.isArray(s.collectors) && Array.isArray(s.recent) && typeof s.timeline === 'object';
}
