// The Java GC view's state and everything derived from it (summary cards, histogram stacked by
// collector, timeline marks, collector and pool tables, safepoints, export files). Pure: no DOM,
// unit-tested.
import type { JavaGcCollectorSummary, JavaGcEvent, JavaGcKind, JavaGcSummary, JavaGcUpdate, JavaSafepoint, JavaSafepointSummary } from '../../extension/protocol/javaGc';
import { buildResult, collectorSummaries, overheadPercent, pauseCounts, poolReclaim, summarize, summarizeSafepoints, type PoolReclaim } from '../../extension/model/javaGcStats';
import { bucketLow } from '../../extension/model/log2hist';
import type { SessionState } from './protocol';

export interface StackedHistogram {
  /** lower bound of each bar, µs */
  lowUs: number[];
  labels: string[];
  /** one series per collector, in first-seen order */
  series: { collector: string; kind: JavaGcKind; counts: number[] }[];
}

export interface TimelineMark {
  /** seconds since the view's time origin */
  t: number;
  durationNs: number;
  full: boolean;
  collector: string;
  kind: JavaGcKind;
}

export class GcModel {
  events: JavaGcEvent[] = [];
  safepoints: JavaSafepoint[] = [];
  /** undefined until the tracer said */
  safepointsAvailable: boolean | undefined;
  safepointsReason = '';
  pids: number[] = [];
  lost = 0;
  state: SessionState = 'running';
  message = '';
  target = '';
  /** CLOCK_MONOTONIC ns: the start of the time axis (session start, or the last Clear) */
  originNs = 0;
  nowNs = 0;

  apply(u: JavaGcUpdate): void {
    if (this.originNs === 0) this.originNs = u.startNs;
    if (this.state === 'running') this.nowNs = Math.max(this.nowNs, u.nowNs);
    this.events.push(...u.events);
    if (u.safepoints) this.safepoints.push(...u.safepoints);
    if (u.safepointsAvailable !== undefined) {
      this.safepointsAvailable = u.safepointsAvailable;
      this.safepointsReason = u.safepointsReason ?? '';
    }
    this.pids = u.pids;
    this.lost = u.lost;
  }

  end(reason: Exclude<SessionState, 'running'>, message?: string): void {
    this.state = reason;
    this.message = message ?? '';
  }

  /** Forget what was shown; the time axis restarts now. The session keeps running. */
  clear(): void {
    this.events = [];
    this.safepoints = [];
    if (this.nowNs) this.originNs = this.nowNs;
  }

  get wallNs(): number {
    return Math.max(0, this.nowNs - this.originNs);
  }

  summary(): JavaGcSummary & { overheadPercent: number; youngCount: number } {
    const s = summarize(this.events);
    return { ...s, youngCount: this.events.filter((e) => e.kind === 'young').length, overheadPercent: overheadPercent(s.totalPauseNs, this.wallNs) };
  }

  collectors(): JavaGcCollectorSummary[] {
    return collectorSummaries(this.events);
  }

  safepointSummary(): JavaSafepointSummary {
    return summarizeSafepoints(this.safepoints);
  }

  /** Counts per log2 µs bucket and collector, over the occupied range (at least `minBars` bars). */
  histogram(minBars = 6): StackedHistogram {
    const cols = this.collectors();
    const per = cols.map((c) => pauseCounts(this.events, (e) => e.collector === c.collector));
    const n = Math.max(0, ...per.map((c) => c.length));
    let first = 0;
    while (first < n && !per.some((c) => c[first])) first++;
    if (first >= n) first = Math.max(0, n - 1);
    let last = Math.max(n - 1, first);
    while (last - first + 1 < minBars) {
      if (first > 0) first--;
      else last++;
    }
    const out: StackedHistogram = { lowUs: [], labels: [], series: cols.map((c) => ({ collector: c.collector, kind: c.kind, counts: [] })) };
    for (let i = first; i <= last; i++) {
      out.lowUs.push(bucketLow(i));
      out.labels.push(formatBucketLabel(bucketLow(i)));
      per.forEach((c, k) => out.series[k].counts.push(c[i] ?? 0));
    }
    return out;
  }

  timeline(): TimelineMark[] {
    // Pauses only: a concurrent cycle runs beside the application, and its length (often 1000× a
    // pause) would flatten every pause mark.
    return this.events.filter((e) => e.kind !== 'concurrent-cycle').map((e) => ({ t: (e.timestampNs - this.originNs) / 1e9, durationNs: e.durationNs, full: e.full, collector: e.collector, kind: e.kind }));
  }

  pools(): PoolReclaim[] {
    return poolReclaim(this.events);
  }

  toJson(): string {
    const sp = { available: Boolean(this.safepointsAvailable), reason: this.safepointsReason || undefined, events: this.safepoints, lost: 0 };
    return JSON.stringify(buildResult(this.pids, this.events, this.lost, sp), null, 2);
  }

  /** One row per GC; two columns (used before, used after) per pool seen. */
  toCsv(): string {
    const pools = this.pools().map((p) => p.name);
    const head = ['pid', 'tid', 'cpu', 'timestampNs', 'durationNs', 'collector', 'kind', 'escalated', 'operation', 'full', ...pools.flatMap((p) => [`${p} usedBefore`, `${p} usedAfter`])];
    const rows = [head.map(csvField).join(',')];
    for (const e of this.events) {
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

/** Axis label of a log2 bucket's lower bound: "0", "64 µs", "1.0 ms", "16 ms", "1.0 s". */
export function formatBucketLabel(lowUs: number): string {
  if (lowUs < 1000) return `${lowUs}${lowUs === 0 ? '' : ' µs'}`;
  const [v, unit] = lowUs < 1e6 ? [lowUs / 1e3, 'ms'] : [lowUs / 1e6, 's'];
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${unit}`;
}
