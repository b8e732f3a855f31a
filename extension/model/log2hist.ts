// Log2 histograms as the kernel side builds them (bucket i counts values v with
// 2^(i-1) <= v < 2^i; bucket 0 counts v == 0), and the figures drawn from them. Shared by the
// tracers, the CLI's text output and the webviews; no DOM, no Node.

import type { Bucket } from '../protocol/histogram';

export type { Bucket };

/** Index of the bucket holding v, the same as the BPF side's log2l(v) + 1 for v > 0. */
export function bucketIndex(v: number | bigint): number {
  if (typeof v === 'number' && v < 2 ** 32) {
    // The common case without BigInt: live views call this for every bucket of every update.
    const n = Math.floor(v);
    return n <= 0 ? 0 : 32 - Math.clz32(n);
  }
  let x = typeof v === 'bigint' ? v : BigInt(Math.max(0, Math.floor(v)));
  if (x <= 0n) return 0;
  let i = 0;
  while (x > 0n) {
    x >>= 1n;
    i++;
  }
  return i;
}

export function bucketLow(i: number): number {
  return i === 0 ? 0 : 2 ** (i - 1);
}

export function bucketHigh(i: number): number {
  return i === 0 ? 0 : 2 ** i - 1;
}

/** Dense counts (index = bucket) → bucket objects, trailing empty buckets dropped. */
export function toBuckets(counts: ArrayLike<number>): Bucket[] {
  let last = counts.length - 1;
  while (last >= 0 && counts[last] === 0) last--;
  const out: Bucket[] = [];
  for (let i = 0; i <= last; i++) out.push({ low: bucketLow(i), high: bucketHigh(i), count: counts[i] });
  return out;
}

export function fromBuckets(buckets: Bucket[]): number[] {
  const out: number[] = [];
  for (const b of buckets) out[bucketIndex(b.low === 0 ? 0 : b.low)] = b.count;
  for (let i = 0; i < out.length; i++) out[i] ??= 0;
  return out;
}

export function addCounts(into: number[], from: ArrayLike<number>): number[] {
  for (let i = 0; i < from.length; i++) into[i] = (into[i] ?? 0) + from[i];
  return into;
}

export function total(counts: ArrayLike<number>): number {
  let t = 0;
  for (let i = 0; i < counts.length; i++) t += counts[i];
  return t;
}

/**
 * Estimate of the q-quantile (0..1) from dense log2 counts: the bucket holding the rank, with
 * linear interpolation inside it (values are assumed spread evenly across the bucket).
 */
export function quantileFromCounts(counts: ArrayLike<number>, q: number): number {
  const n = total(counts);
  if (n === 0) return 0;
  const rank = Math.min(n, Math.max(1, Math.ceil(q * n)));
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i];
    if (c === 0) continue;
    if (seen + c >= rank) {
      const lo = bucketLow(i);
      const hi = bucketHigh(i) + (i === 0 ? 0 : 1);
      return lo + ((rank - seen) / c) * (hi - lo);
    }
    seen += c;
  }
  return bucketHigh(counts.length - 1);
}

/** Exact quantile of raw values (nearest-rank), for tracers that keep every event. */
export function quantileExact(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1];
}

/** "812 µs", "3.4 ms", "1.20 s" from a value in the given unit. */
export function formatDuration(value: number, unit: 'ns' | 'us' | 'ms' = 'us'): string {
  const ns = unit === 'ns' ? value : unit === 'us' ? value * 1e3 : value * 1e6;
  if (ns < 1e3) return `${Math.round(ns)} ns`;
  if (ns < 1e6) return `${trim(ns / 1e3)} µs`;
  if (ns < 1e9) return `${trim(ns / 1e6)} ms`;
  return `${trim(ns / 1e9)} s`;
}

function trim(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/** runqlat-style text histogram: "     usecs   : count    distribution" with star bars. */
export function renderText(buckets: Bucket[], unitLabel: string, width = 40): string {
  const max = Math.max(0, ...buckets.map((b) => b.count));
  const lines = [`${unitLabel.padStart(18)}     : count    distribution`];
  for (const b of buckets) {
    const stars = max === 0 ? 0 : Math.round((b.count / max) * width);
    lines.push(`${String(b.low).padStart(10)} -> ${String(b.high).padEnd(10)}: ${String(b.count).padEnd(8)} |${'*'.repeat(stars).padEnd(width)}|`);
  }
  return lines.join('\n');
}

/** The figures every view and the CLI show for a log2 histogram. */
export interface HistStats {
  count: number;
  /** estimates from the buckets (quantileFromCounts), in the histogram's unit */
  p50: number;
  p90: number;
  p99: number;
  /** upper bound of the highest non-empty bucket: the true maximum is at most this */
  max: number;
}

export function statsOf(buckets: Bucket[]): HistStats {
  const counts = fromBuckets(buckets);
  let top = counts.length - 1;
  while (top >= 0 && counts[top] === 0) top--;
  return {
    count: total(counts),
    p50: quantileFromCounts(counts, 0.5),
    p90: quantileFromCounts(counts, 0.9),
    p99: quantileFromCounts(counts, 0.99),
    max: top < 0 ? 0 : bucketHigh(top),
  };
}
