// Prometheus text exposition (format 0.0.4) of the agent's metrics, written by hand. prom-client
// (the well-kept Node library) was judged and not used: its Histogram only takes one observation
// at a time, while run-queue latency arrives as log2 bucket counts already summed in the kernel
// (the same reason cloudflare's ebpf_exporter builds its histograms itself), and the agent's
// series come and go with the JVMs it follows. What is needed is small: HELP/TYPE lines, label
// escaping, cumulative buckets with _sum and _count, and `promtool check metrics` stays clean.

import type { Bucket } from '../protocol/histogram';
import { fromBuckets } from '../model/log2hist';

export type Labels = Record<string, string>;

/** GC pauses and safepoints: 1-2-5 steps per decade from 10 µs to 10 s, so histogram_quantile
 * interpolates inside a bucket at most 2.5 times wider than its lower edge anywhere in that range. */
export const PAUSE_BUCKETS_S = [1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10];

/** Run-queue latency: the kernel's log2 buckets (µs) kept as they are, 1 µs .. 2^24 µs (16.8 s):
 * re-bucketing them would invent precision the kernel never had. Slot i counts waits below 2^i µs. */
export const RUNQ_SLOTS = 25;
export const RUNQ_BUCKETS_S = Array.from({ length: RUNQ_SLOTS }, (_, i) => 2 ** i * 1e-6);

/** Kernel log2 buckets in µs (the kit's, bucket i counts 2^(i-1) <= v < 2^i µs) added to RUNQ_BUCKETS_S series. */
export function addLog2(h: Histograms, labels: Labels, buckets: Bucket[]): void {
  addLog2Slots(h, labels, fromBuckets(buckets));
}

/** The same from the kernel's slots as they are (slot i: 2^(i-1) <= v < 2^i µs). */
export function addLog2Slots(h: Histograms, labels: Labels, slots: number[]): void {
  const counts = slots.slice(0, RUNQ_SLOTS);
  const over = slots.slice(RUNQ_SLOTS).reduce((a, b) => a + b, 0);
  // The kernel keeps counts only: the sum is estimated at each bucket's middle (1.5 × 2^(i-1) µs).
  const sum = slots.reduce((acc, c, i) => acc + c * (i === 0 ? 0.5 : 1.5 * 2 ** (i - 1)), 0) * 1e-6;
  h.add(labels, counts, over, sum);
}

/** A histogram per label set, over fixed upper bounds (seconds). */
export class Histograms {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  /** the series in exposition order with their label text, made again only when a series comes or goes */
  private sorted?: { s: { labels: Labels; counts: number[]; sum: number; count: number }; key: string }[];
  /** each bound's `le` text */
  private readonly les: string[];

  constructor(readonly bounds: number[]) {
    this.les = bounds.map(formatNumber);
  }

  private get(labels: Labels) {
    // The key is the label values in order: cheaper than the escaped text on every observation.
    const key = Object.values(labels).join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      s = { labels, counts: new Array(this.bounds.length).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
      this.sorted = undefined;
    }
    return s;
  }

  /** One observation (seconds). */
  observe(labels: Labels, v: number): void {
    const s = this.get(labels);
    const i = this.bounds.findIndex((b) => v <= b);
    if (i >= 0) s.counts[i]++;
    s.sum += v;
    s.count++;
  }

  /** Pre-bucketed counts (per bound, non-cumulative; `over` above the last bound) and their sum. */
  add(labels: Labels, counts: number[], over: number, sum: number): void {
    const s = this.get(labels);
    for (let i = 0; i < this.bounds.length; i++) s.counts[i] += counts[i] ?? 0;
    s.count += counts.reduce((a, b) => a + b, 0) + over;
    s.sum += sum;
  }

  /** Drops the series whose labels match. */
  forget(match: (l: Labels) => boolean): void {
    for (const [k, s] of this.series) {
      if (!match(s.labels)) continue;
      this.series.delete(k);
      this.sorted = undefined;
    }
  }

  get size(): number {
    return this.series.size;
  }

  lines(name: string, out: string[]): void {
    // A stable order by label text, each text made once per series (not per scrape, nor per
    // bucket: escaping every label of every bucket line was most of a scrape's garbage), and
    // plain comparison: localeCompare built an ICU collator per comparison.
    this.sorted ??= [...this.series.values()].map((s) => ({ s, key: labelText(s.labels) })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { s, key } of this.sorted) {
      // `le` goes last, after the series' own labels.
      const le = key ? `${key.slice(0, -1)},le="` : '{le="';
      let cum = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cum += s.counts[i];
        out.push(`${name}_bucket${le}${this.les[i]}"} ${cum}`);
      }
      out.push(`${name}_bucket${le}+Inf"} ${s.count}`);
      out.push(`${name}_sum${key} ${formatNumber(s.sum)}`);
      out.push(`${name}_count${key} ${s.count}`);
    }
  }
}

/** Builds one exposition: families in the order added, HELP and TYPE before each. */
export class Exposition {
  private readonly out: string[] = [];

  family(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): this {
    this.out.push(`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    this.out.push(`${name}${labelText(labels)} ${formatNumber(value)}`);
    return this;
  }

  histogram(name: string, help: string, h: Histograms): this {
    this.family(name, 'histogram', help);
    h.lines(name, this.out);
    return this;
  }

  text(): string {
    return this.out.join('\n') + '\n';
  }
}

export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function labelText(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${escapeLabel(labels[k])}"`).join(',')}}`;
}

/** Go's strconv.FormatFloat(v, 'g', -1, 64) spelling is not required; this keeps values exact and short. */
export function formatNumber(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(15)));
}
