// A latency view's data, without DOM: cumulative and per-interval log2 counts, per-key
// histograms, the histogram bars, the heat-map grid and the key table. The tracer's nouns (its
// key labels) come from the catalog. Unit-tested.
import { bucketHigh, bucketLow, toBuckets, total } from '../../extension/model/log2hist';
import { HistLive, MAX_INTERVALS, OTHER_KEY, type IntervalCounts, type HistLiveState } from '../../extension/model/histLive';
import { formatBucketBound } from '../../extension/model/units';
import type { HistResult, HistUnit, HistUpdate } from '../../extension/protocol/histogram';
import { statsOf, type HistStats } from '../../extension/model/log2hist';
import { histogramOf, keyText, type HistogramTracer } from '../../extension/protocol/catalog';
import type { SessionState } from './latencyProtocol';

export { MAX_INTERVALS, type IntervalCounts };

export interface HistogramBars {
  /** one per bucket from 0 to the highest non-empty one */
  labels: string[];
  counts: number[];
  low: number[];
  high: number[];
  /** share of all events in the bucket, 0..100 */
  percent: number[];
  /** share of events in this bucket or below, 0..100 */
  cumPercent: number[];
  total: number;
}

export interface HeatMap {
  /** column i is interval firstIndex + i */
  firstIndex: number;
  columns: IntervalCounts[];
  /** bucket range shown, bottom to top, inclusive */
  minBucket: number;
  maxBucket: number;
  /** largest cell count, for the color scale */
  max: number;
}

export interface HeatLayout {
  plot: { x: number; y: number; w: number; h: number };
  cellW: number;
  cellH: number;
}

export type SortKey = 'p99' | 'count';

export interface KeyRow extends HistStats {
  key: number;
  comm: string;
  /** the key as shown: "4242", "254:0", "10.0.0.1", "other" */
  label: string;
  /** the kernel's name for it where that says more than the label ("java", "vda"), else '' */
  name: string;
  counts: number[];
}

/** The figures (HistLive, kept incrementally) plus what the view shows of them. */
export class LatencyModel extends HistLive {
  scope = '';
  per = 'none';
  unit: HistUnit = 'us';
  state: SessionState = 'running';
  message = '';
  /** index into intervals of the column whose histogram is shown; undefined = cumulative */
  selected: number | undefined;
  sortBy: SortKey = 'p99';
  expanded = new Set<number>();

  constructor(public tracer: HistogramTracer) {
    super();
  }

  override apply(u: HistUpdate): number {
    const n = super.apply(u);
    if (n && this.selected !== undefined) this.selected = this.selected >= n ? this.selected - n : undefined;
    return n;
  }

  /** Loads the figures of a session kept elsewhere (a restored or reopened view). */
  restore(state: HistLiveState): void {
    this.load(state);
    this.selected = undefined;
  }

  end(reason: Exclude<SessionState, 'running'>, message?: string): void {
    this.state = reason;
    this.message = message ?? '';
  }

  /** Forgets the data shown so far; the session (if running) keeps adding to a fresh view. */
  clear(): void {
    this.reset();
    this.selected = undefined;
    this.expanded.clear();
  }

  select(index: number | undefined): void {
    this.selected = index !== undefined && index >= 0 && index < this.intervals.length ? index : undefined;
  }

  /** Counts of the selected interval, or of the whole session. */
  shownCounts(): number[] {
    return this.selected === undefined ? this.counts : this.intervals[this.selected].counts;
  }

  stats(counts = this.shownCounts()): HistStats {
    return statsOf(toBuckets(counts));
  }

  histogram(counts = this.shownCounts()): HistogramBars {
    return histogramBars(counts, this.unit);
  }

  heatMap(maxColumns: number): HeatMap {
    return heatMap(this.intervals, maxColumns);
  }

  keyRows(): KeyRow[] {
    const rows = [...this.keys].map(([key, k]) => {
      const label = key === OTHER_KEY ? 'other' : keyText(this.tracer, this.per, key);
      return { key, comm: k.comm, label, name: keyName(label, k.comm), counts: k.counts, ...statsOf(toBuckets(k.counts)) };
    });
    const by = this.sortBy;
    return rows.sort((a, b) => b[by] - a[by] || b.count - a.count || a.key - b.key);
  }

  /** Whether the key table needs a name column: some key's name says more than the key itself
   *  (a pid's command, a disk's "vda"), not where the name only repeats it (an address). */
  showsNames(rows = this.keyRows()): boolean {
    return rows.some((r) => r.name !== '');
  }

  keyLabel(): string {
    return histogramOf(this.tracer).keyLabels[this.per] ?? this.per;
  }

  /** The key as a noun ("process", "disk"). */
  keyNoun(): string {
    return histogramOf(this.tracer).keyNouns[this.per] ?? this.per;
  }

  /** What the view holds, in the CLI's --json shape. */
  toResult(): HistResult {
    const histograms =
      this.per === 'none'
        ? [{ key: -1, comm: 'all', count: total(this.counts), buckets: toBuckets(this.counts) }]
        : [...this.keys].sort((a, b) => a[0] - b[0]).map(([key, k]) => ({ key, comm: k.comm, count: total(k.counts), buckets: toBuckets(k.counts) }));
    return {
      tracer: this.tracer,
      unit: this.unit,
      histograms,
      intervals: this.intervals.map((iv) => ({ timestampNs: iv.timestampNs, buckets: toBuckets(iv.counts) })),
      dropped: this.dropped,
    };
  }
}

/** A key's name where it adds to the key's text (the CLI prints it beside the key on the same rule). */
export function keyName(label: string, comm: string): string {
  return comm && comm !== label ? comm : '';
}

export function histogramBars(counts: number[], unit: HistUnit): HistogramBars {
  let top = counts.length - 1;
  while (top > 0 && !counts[top]) top--;
  const n = total(counts);
  const bars: HistogramBars = { labels: [], counts: [], low: [], high: [], percent: [], cumPercent: [], total: n };
  let seen = 0;
  for (let i = 0; i <= Math.max(top, 0); i++) {
    const c = counts[i] ?? 0;
    seen += c;
    bars.labels.push(bucketLabel(i, unit));
    bars.counts.push(c);
    bars.low.push(bucketLow(i));
    bars.high.push(bucketHigh(i));
    bars.percent.push(n ? (100 * c) / n : 0);
    bars.cumPercent.push(n ? (100 * seen) / n : 0);
  }
  return bars;
}

/** A bucket's lower bound in the one bucket-label format (units.formatBucketBound): "64 µs", "1.02 ms". */
export function bucketLabel(i: number, unit: HistUnit): string {
  return formatBucketBound(bucketLow(i), unit);
}

/** "64 µs – 127 µs" */
export function bucketRange(i: number, unit: HistUnit): string {
  if (i === 0) return `< 1 ${unit === 'ms' ? 'ms' : 'µs'}`;
  return `${bucketLabel(i, unit)} – ${formatBucketBound(bucketHigh(i), unit)}`;
}

/** The last maxColumns intervals, with the bucket range that holds any of their events. */
export function heatMap(intervals: IntervalCounts[], maxColumns: number): HeatMap {
  const firstIndex = Math.max(0, intervals.length - Math.max(1, maxColumns));
  const columns = intervals.slice(firstIndex);
  let minBucket = Infinity;
  let maxBucket = -1;
  let max = 0;
  for (const c of columns) {
    c.counts.forEach((v, i) => {
      if (!v) return;
      minBucket = Math.min(minBucket, i);
      maxBucket = Math.max(maxBucket, i);
      max = Math.max(max, v);
    });
  }
  if (maxBucket < 0) return { firstIndex, columns, minBucket: 0, maxBucket: 0, max: 0 };
  return { firstIndex, columns, minBucket, maxBucket, max };
}

/**
 * Color intensity 0..1 of a cell: logarithmic, because a few long ones beside thousands of short
 * ones must stay visible; 0 only for empty cells.
 */
export function heatIntensity(count: number, max: number): number {
  if (count <= 0 || max <= 0) return 0;
  return 0.15 + 0.85 * (Math.log1p(count) / Math.log1p(max));
}

const HEAT_PAD = { left: 64, right: 8, top: 6, bottom: 22 };

export function heatLayout(map: HeatMap, width: number, height: number, maxColumns: number): HeatLayout {
  const plot = { x: HEAT_PAD.left, y: HEAT_PAD.top, w: Math.max(10, width - HEAT_PAD.left - HEAT_PAD.right), h: Math.max(10, height - HEAT_PAD.top - HEAT_PAD.bottom) };
  const rows = map.maxBucket - map.minBucket + 1;
  return { plot, cellW: plot.w / Math.max(1, maxColumns), cellH: plot.h / rows };
}

/** Which interval (index into the model's intervals) and bucket a point is over; undefined outside. */
export function heatCellAt(map: HeatMap, layout: HeatLayout, x: number, y: number): { interval: number; bucket: number } | undefined {
  const p = layout.plot;
  if (x < p.x || x >= p.x + p.w || y < p.y || y >= p.y + p.h) return undefined;
  const col = Math.floor((x - p.x) / layout.cellW);
  if (col >= map.columns.length) return undefined;
  const row = Math.floor((p.y + p.h - y) / layout.cellH);
  return { interval: map.firstIndex + col, bucket: Math.min(map.maxBucket, map.minBucket + row) };
}
