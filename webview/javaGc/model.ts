// The Java GC view's data: what is drawn (summary, stacked duration histogram, two-lane timeline,
// collector and pool tables, safepoints, export files). The figures live in GcLive (model/
// javaGcLive.ts), kept incrementally, so a redraw costs the same after an hour as after a minute.
// Pure: no DOM, unit-tested.
import type { JavaGcCollectorSummary, JavaGcKind, JavaGcSummary, JavaGcUpdate, JavaSafepointSummary } from '../../extension/protocol/javaGc';
import { GcLive, type GcLiveState } from '../../extension/model/javaGcLive';
import { pausePhases, type PausePhase, type PoolReclaim } from '../../extension/model/javaGcStats';
import { bucketLow } from '../../extension/model/log2hist';
import { formatBucketBound } from '../../extension/model/units';
import type { SessionState } from './protocol';

export interface StackedHistogram {
  /** lower bound of each bar, µs */
  lowUs: number[];
  labels: string[];
  /** one series per collector, in first-seen order */
  series: { collector: string; kind: JavaGcKind; counts: number[] }[];
}

export interface TimelineMark {
  /** seconds since the view's time origin (the bin's start) */
  t: number;
  /** the longest pause in the bin */
  durationNs: number;
  /** pauses in the bin */
  count: number;
  full: boolean;
  collector: string;
}

export interface GcTimeline {
  /** seconds per bin (marks are at most one per bin and lane) */
  binS: number;
  /** young and other pauses */
  pauses: TimelineMark[];
  /** full collections, drawn in a lane of their own */
  full: TimelineMark[];
}

export class GcModel {
  live = new GcLive();
  state: SessionState = 'running';
  message = '';
  target = '';

  apply(u: JavaGcUpdate): void {
    // Once ended, the wall clock stays where it stopped (late updates bring no new time).
    const now = this.live.nowNs;
    this.live.apply(u);
    if (this.state !== 'running' && now) this.live.nowNs = now;
  }

  /**
   * "counted N — the JVM counts M" per JVM (the first few; --all may trace many), and whether
   * any disagrees so far that the figures cannot be trusted.
   */
  jvmCountLine(limit = 4): { text: string; bad: boolean } {
    const c = this.live.jvmCounts;
    const bad = c.filter((x) => x.verdict === 'missed');
    const shown = [...bad, ...c.filter((x) => x.verdict !== 'missed')].slice(0, limit).map((x) => x.message);
    const more = c.length > limit ? ` (and ${c.length - limit} more JVMs)` : '';
    return { text: shown.length ? shown.join(' · ') + more : '', bad: bad.length > 0 };
  }

  /** Loads the figures of a session kept elsewhere (a restored or reopened view). */
  restore(state: GcLiveState): void {
    this.live = GcLive.from(state);
  }

  end(reason: Exclude<SessionState, 'running'>, message?: string): void {
    this.state = reason;
    this.message = message ?? '';
  }

  /** Forget what was shown; the time axis restarts now. The session keeps running. */
  clear(): void {
    this.live.clear();
  }

  get pids(): number[] {
    return this.live.pids;
  }
  get lost(): number {
    return this.live.lost;
  }
  get safepointsAvailable(): boolean | undefined {
    return this.live.safepointsAvailable;
  }
  get safepointsReason(): string {
    return this.live.safepointsReason;
  }
  get wallNs(): number {
    return this.live.wallNs;
  }
  /** true while p50/p90/p99 are exact; after that they come from fine buckets (within 1.6 %) */
  get exactQuantiles(): boolean {
    return this.live.exactQuantiles;
  }

  summary(): JavaGcSummary & { overheadPercent: number; youngCount: number } {
    return { ...this.live.summary(), youngCount: this.live.youngCount, overheadPercent: this.live.overheadPercent() };
  }

  collectors(): JavaGcCollectorSummary[] {
    return this.live.collectors();
  }

  safepointSummary(): JavaSafepointSummary {
    return this.live.safepointSummary();
  }

  /** Counts per log2 µs bucket and collector, over the occupied range (at least `minBars` bars). */
  histogram(minBars = 6): StackedHistogram {
    const per = this.live.collectorCounts();
    const n = Math.max(0, ...per.map((c) => c.counts.length));
    let first = 0;
    while (first < n && !per.some((c) => c.counts[first])) first++;
    if (first >= n) first = Math.max(0, n - 1);
    let last = Math.max(n - 1, first);
    while (last - first + 1 < minBars) {
      if (first > 0) first--;
      else last++;
    }
    const out: StackedHistogram = { lowUs: [], labels: [], series: per.map((c) => ({ collector: c.collector, kind: c.kind, counts: [] })) };
    for (let i = first; i <= last; i++) {
      out.lowUs.push(bucketLow(i));
      out.labels.push(formatBucketLabel(bucketLow(i)));
      per.forEach((c, k) => out.series[k].counts.push(c.counts[i] ?? 0));
    }
    return out;
  }

  /** The timeline's marks: one per non-empty bin and lane (bounded by TIMELINE_BINS, not by events). */
  timeline(): GcTimeline {
    const t = this.live.timeline;
    const names = this.live.collectorNames();
    const off = (t.originNs - this.live.startNs) / 1e9;
    const marks = (lane: typeof t.pauses, full: boolean): TimelineMark[] => {
      const out: TimelineMark[] = [];
      for (let i = 0; i < lane.count.length; i++) {
        if (!lane.count[i]) continue;
        out.push({ t: off + (i * t.binNs) / 1e9, durationNs: lane.maxNs[i], count: lane.count[i], full, collector: names[lane.who[i]] ?? '' });
      }
      return out;
    };
    return { binS: t.binNs / 1e9, pauses: marks(t.pauses, false), full: marks(t.full, true) };
  }

  pools(): PoolReclaim[] {
    return this.live.pools();
  }

  /** Pause time by phase, over the kept pauses that carry phases (a Flight Recording's); none otherwise. */
  phases(): PausePhase[] {
    return pausePhases(this.live.recent);
  }

  /** The result document: figures over the whole session; events are the most recent ones kept. */
  toJson(): string {
    return JSON.stringify(this.live.toResult(), null, 2);
  }

  /** One row per GC kept (the most recent ones); two columns (used before, used after) per pool seen. */
  toCsv(): string {
    const pools = this.pools().map((p) => p.name);
    const head = ['pid', 'tid', 'cpu', 'timestampNs', 'durationNs', 'collector', 'kind', 'escalated', 'operation', 'full', ...pools.flatMap((p) => [`${p} usedBefore`, `${p} usedAfter`])];
    const rows = [head.map(csvField).join(',')];
    for (const e of this.live.recent) {
      const byName = new Map(e.pools.map((p) => [p.name, p]));
      const cells: (string | number)[] = [e.pid, e.tid, e.cpu, e.timestampNs, e.durationNs, e.collector, e.kind, e.escalated ? 'yes' : 'no', e.operation, e.full ? 'full' : 'no'];
      for (const p of pools) {
        const x = byName.get(p);
        cells.push(x ? x.usedBefore : '', x ? x.usedAfter : '');
      }
      rows.push(cells.map(csvField).join(','));
    }
    return rows.join('\n') + '\n';
  }
}

export function csvField(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Axis label of a log2 bucket's lower bound (µs), in the one format every histogram uses. */
export function formatBucketLabel(lowUs: number): string {
  return formatBucketBound(lowUs, 'us');
}
