// Figures drawn from Java GC events: the summary (exact nearest-rank percentiles, since every
// event is kept), the log2 µs pause histogram, and per-pool reclaim. Pure: shared by the
// tracer, the CLI's text output and the webview.
import { formatBytes } from './units';
import { bucketIndex, quantileExact, toBuckets, type Bucket } from './log2hist';
import type { JavaGcCollectorSummary, JavaGcEvent, JavaGcResult, JavaGcSummary, JavaSafepoint, JavaSafepointSummary } from '../protocol/javaGc';
import { isPause } from './javaGcKinds';

/** Counts over every collection; durations over the pauses among them (a concurrent cycle is no pause). */
export function summarize(events: readonly JavaGcEvent[]): JavaGcSummary {
  const d = events.filter((e) => isPause(e.kind)).map((e) => e.durationNs).sort((a, b) => a - b);
  return {
    count: events.length,
    fullCount: events.reduce((n, e) => n + (e.full ? 1 : 0), 0),
    pauseCount: d.length,
    totalPauseNs: d.reduce((s, v) => s + v, 0),
    p50Ns: quantileExact(d, 0.5),
    p90Ns: quantileExact(d, 0.9),
    p99Ns: quantileExact(d, 0.99),
    maxNs: d.length ? d[d.length - 1] : 0,
  };
}

/** One row per memory manager, in first-seen order: its count, escalations and duration figures. */
export function collectorSummaries(events: readonly JavaGcEvent[]): JavaGcCollectorSummary[] {
  const by = new Map<string, JavaGcEvent[]>();
  for (const e of events) {
    let l = by.get(e.collector);
    if (!l) by.set(e.collector, (l = []));
    l.push(e);
  }
  return [...by].map(([collector, list]) => {
    const d = list.map((e) => e.durationNs).sort((a, b) => a - b);
    return {
      collector,
      // A manager's kind may vary by operation (Shenandoah's degenerated/full pauses): the most frequent one.
      kind: mostFrequent(list.map((e) => e.kind)),
      count: list.length,
      escalated: list.filter((e) => e.escalated).length,
      totalNs: d.reduce((s, v) => s + v, 0),
      p50Ns: quantileExact(d, 0.5),
      p99Ns: quantileExact(d, 0.99),
      maxNs: d.length ? d[d.length - 1] : 0,
      histogram: toBuckets(pauseCounts(list)),
    };
  });
}

function mostFrequent<T>(xs: T[]): T {
  const n = new Map<T, number>();
  for (const x of xs) n.set(x, (n.get(x) ?? 0) + 1);
  return [...n].sort((a, b) => b[1] - a[1])[0][0];
}

export function summarizeSafepoints(sps: readonly JavaSafepoint[]): JavaSafepointSummary {
  const d = sps.map((s) => s.durationNs).sort((a, b) => a - b);
  const t = sps.map((s) => s.timeToSafepointNs).sort((a, b) => a - b);
  return {
    count: d.length,
    totalNs: d.reduce((s, v) => s + v, 0),
    ttsP50Ns: quantileExact(t, 0.5),
    ttsP99Ns: quantileExact(t, 0.99),
    ttsMaxNs: t.length ? t[t.length - 1] : 0,
    p50Ns: quantileExact(d, 0.5),
    p99Ns: quantileExact(d, 0.99),
    maxNs: d.length ? d[d.length - 1] : 0,
  };
}

export interface SafepointInput {
  available: boolean;
  reason?: string;
  events: readonly JavaSafepoint[];
  lost: number;
}

/** Each pause with the safepoint it ran in (same thread, the safepoint spans the pause). */
export function withSafepoints(events: readonly JavaGcEvent[], sps: readonly JavaSafepoint[]): JavaGcEvent[] {
  if (sps.length === 0) return [...events];
  const sorted = [...sps].sort((a, b) => a.timestampNs - b.timestampNs);
  return events.map((e) => {
    if (!isPause(e.kind)) return e;
    // The last safepoint starting at or before the pause.
    let lo = 0;
    let hi = sorted.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid].timestampNs <= e.timestampNs) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    for (let i = at; i >= 0 && i > at - 4; i--) {
      const s = sorted[i];
      if (s.tid === e.tid && s.pid === e.pid && e.timestampNs + e.durationNs <= s.timestampNs + s.durationNs) {
        return { ...e, safepoint: { timeToSafepointNs: s.timeToSafepointNs, durationNs: s.durationNs } };
      }
    }
    return e;
  });
}

/** The result document (the CLI's --json output) from the events kept. */
export function buildResult(pids: readonly number[], events: readonly JavaGcEvent[], lost: number, safepoints: SafepointInput = { available: false, reason: 'not traced', events: [], lost: 0 }): JavaGcResult {
  return {
    tracer: 'java-gc',
    pids: [...pids],
    events: withSafepoints(events, safepoints.events),
    summary: summarize(events),
    histogram: { unit: 'us', buckets: pauseHistogram(events) },
    lost,
    collectors: collectorSummaries(events),
    safepoints: { available: safepoints.available, ...(safepoints.reason ? { reason: safepoints.reason } : {}), events: [...safepoints.events], summary: summarizeSafepoints(safepoints.events), lost: safepoints.lost },
  };
}

/** Dense log2 counts of pause durations in µs (bucket i holds 2^(i-1) ≤ µs < 2^i). */
export function pauseCounts(events: readonly JavaGcEvent[], filter?: (e: JavaGcEvent) => boolean): number[] {
  const counts: number[] = [];
  for (const e of events) {
    if (filter && !filter(e)) continue;
    const i = bucketIndex(Math.floor(e.durationNs / 1000));
    while (counts.length <= i) counts.push(0);
    counts[i]++;
  }
  return counts;
}

/** The pauses' histogram (concurrent cycles are not pauses: they are in their collector's own). */
export function pauseHistogram(events: readonly JavaGcEvent[]): Bucket[] {
  return toBuckets(pauseCounts(events, (e) => isPause(e.kind)));
}

export interface PoolReclaim {
  name: string;
  /** the most recent GC that reported this pool */
  lastBefore: number;
  lastAfter: number;
  lastCommitted: number;
  /** sum over all GCs of usedBefore − usedAfter (negative when a pool grew, e.g. old gen on promotion) */
  totalReclaimed: number;
  /** GCs that reported this pool (a collector reports every pool it manages, changed or not) */
  gcs: number;
  /** GCs after which the pool's usage differed from before (Eden: every young GC; old gen: promotions and full GCs) */
  changed: number;
}

/** HotSpot's non-heap pools: GC reports them too, but they rarely change across a GC. */
export function isNonHeapPool(name: string): boolean {
  return /^(CodeHeap|Metaspace|Compressed Class Space|Code Cache)/.test(name);
}

/** Per-pool before → after: heap pools first, each group in first-seen order. */
export function poolReclaim(events: readonly JavaGcEvent[]): PoolReclaim[] {
  const byName = new Map<string, PoolReclaim>();
  for (const e of events) {
    for (const p of e.pools) {
      let r = byName.get(p.name);
      if (!r) byName.set(p.name, (r = { name: p.name, lastBefore: 0, lastAfter: 0, lastCommitted: 0, totalReclaimed: 0, gcs: 0, changed: 0 }));
      r.lastBefore = p.usedBefore;
      r.lastAfter = p.usedAfter;
      r.lastCommitted = p.committedAfter;
      r.totalReclaimed += p.usedBefore - p.usedAfter;
      r.gcs++;
      if (p.usedBefore !== p.usedAfter) r.changed++;
    }
  }
  const all = [...byName.values()];
  return [...all.filter((r) => !isNonHeapPool(r.name)), ...all.filter((r) => isNonHeapPool(r.name))];
}

/** Share of wall time spent in GC pauses, 0..100. */
export function overheadPercent(totalPauseNs: number, wallNs: number): number {
  return wallNs > 0 ? Math.min(100, (100 * totalPauseNs) / wallNs) : 0;
}

/** "812 KB", "3.4 MB", "-1.2 GB": pool sizes (signed: a pool may grow across a GC). */
export function formatSize(n: number): string {
  return formatBytes(n, 1024);
}

/** What GCs took out of a pool; a pool that filled up across GCs (promotion into the old generation) "grew". */
export function formatReclaim(n: number): string {
  return n < 0 ? `grew ${formatSize(-n)}` : formatSize(n);
}

export interface PausePhase {
  name: string;
  count: number;
  totalNs: number;
  /** of the pause time of the pauses that carry phases, % */
  share: number;
}

/** Where pause time went, by phase, over the pauses that carry phases (a Flight Recording's); heaviest first. */
export function pausePhases(events: readonly JavaGcEvent[]): PausePhase[] {
  const by = new Map<string, { count: number; totalNs: number }>();
  let pauseNs = 0;
  for (const e of events) {
    if (!e.phases) continue;
    pauseNs += e.durationNs;
    for (const p of e.phases) {
      const t = by.get(p.name) ?? { count: 0, totalNs: 0 };
      t.count++;
      t.totalNs += p.durationNs;
      by.set(p.name, t);
    }
  }
  return [...by].map(([name, t]) => ({ name, ...t, share: (100 * t.totalNs) / Math.max(1, pauseNs) })).sort((a, b) => b.totalNs - a.totalNs);
}
