// The allocation rate and the heap after each GC, from what the GC tracer already reports (each
// collection's memory pools, used before and after): no extra probe, no agent. The rate is
// computed as GC logs are read: what the application allocated between two collections is the
// eden usage before collection n minus the eden usage left after collection n-1 (the young
// generation is where new objects are placed; survivors and the old generation only receive
// copies), divided by the time between the end of n-1 and the start of n. Collections that report
// no eden (G1 Remark/Cleanup, concurrent cycles) are skipped; ZGC and Shenandoah, whose heaps have
// no eden and allocate during their concurrent cycles, get no rate (say so, do not guess).
// Objects placed straight in the old generation (G1 humongous arrays, Parallel's large arrays when
// eden is full) are not counted. Incremental (O(1) per collection) and unit-tested against the
// batch computation. Pure.
import type { JavaGcEvent, JavaGcPool } from '../protocol/javaGc';
import { TimeBins } from './timeBins';

/** What the allocation lane's tooltip and legend say about how the figure is computed. */
export const ALLOC_RATE_METHOD =
  'Allocation rate between two collections = (eden used before this GC − eden left after the previous GC) ÷ the time between them, as GC logs are read. No extra tracing cost. Objects placed straight in the old generation (e.g. G1 humongous arrays) are not counted.';
export const ALLOC_RATE_UNAVAILABLE = 'this collector has no eden (ZGC, Shenandoah allocate during their concurrent cycles): no allocation rate from GC figures';

/** Bytes the application allocated between the end of one collection and the start of the next. */
export interface AllocInterval {
  startNs: number;
  endNs: number;
  bytes: number;
  /** bytes per second */
  rate: number;
}

/** The heap just after one collection: every heap pool's usage (last known for pools it did not report). */
export interface HeapPoint {
  /** end of the collection */
  ns: number;
  /** the collection's start, for a mark as wide as the pause */
  startNs: number;
  totalBytes: number;
  pools: [string, number][];
}

const isEden = (p: JavaGcPool) => /Eden/.test(p.name);
/** Pools outside the Java heap: class metadata and compiled code. */
const NON_HEAP = /Metaspace|Compressed Class Space|CodeHeap|Code Cache/;

/** The eden usage of a collection (before, after), or undefined when it reports no eden pool. */
export function edenOf(e: JavaGcEvent): { before: number; after: number } | undefined {
  let before = 0;
  let after = 0;
  let any = false;
  for (const p of e.pools) {
    if (!isEden(p)) continue;
    any = true;
    before += p.usedBefore;
    after += p.usedAfter;
  }
  return any ? { before, after } : undefined;
}

/** Shorter gaps (the second collection of an escalated pause) give no rate. */
const MIN_GAP_NS = 1e6;

export class AllocRate {
  readonly intervals: AllocInterval[] = [];
  readonly bins = new TimeBins();
  readonly heap: HeapPoint[] = [];
  readonly heapBins = new TimeBins();
  /** collections with pools but none of them an eden */
  withoutEden = 0;
  totalBytes = 0;
  totalNs = 0;
  maxRate = 0;
  maxHeap = 0;
  private prev: { endNs: number; edenAfter: number } | undefined;
  private readonly lastPool = new Map<string, number>();

  add(e: JavaGcEvent): void {
    const endNs = e.timestampNs + e.durationNs;
    const heapPools = e.pools.filter((p) => !NON_HEAP.test(p.name));
    if (heapPools.length) {
      for (const p of heapPools) this.lastPool.set(p.name, p.usedAfter);
      const pools = [...this.lastPool];
      const totalBytes = pools.reduce((s, [, b]) => s + b, 0);
      // Collections arrive in order of their end; a mark that would go back in time is not drawn.
      const last = this.heap[this.heap.length - 1];
      if (!last || endNs >= last.ns) {
        this.heapBins.add(this.heap.length, e.timestampNs, endNs, totalBytes);
        this.heap.push({ ns: endNs, startNs: e.timestampNs, totalBytes, pools });
        if (totalBytes > this.maxHeap) this.maxHeap = totalBytes;
      }
    }
    const eden = edenOf(e);
    if (!eden) {
      if (heapPools.length) this.withoutEden++;
      return;
    }
    const prev = this.prev;
    if (prev && e.timestampNs < prev.endNs) return; // out of order: keep the later collection as the reference
    this.prev = { endNs, edenAfter: eden.after };
    if (!prev || e.timestampNs - prev.endNs < MIN_GAP_NS) return;
    const bytes = Math.max(0, eden.before - prev.edenAfter);
    const ns = e.timestampNs - prev.endNs;
    const rate = bytes / (ns / 1e9);
    this.bins.add(this.intervals.length, prev.endNs, e.timestampNs, rate);
    this.intervals.push({ startNs: prev.endNs, endNs: e.timestampNs, bytes, rate });
    this.totalBytes += bytes;
    this.totalNs += ns;
    if (rate > this.maxRate) this.maxRate = rate;
  }

  /** True when collections reported heap pools but no allocation rate could be computed from them. */
  unavailable(): boolean {
    return this.intervals.length === 0 && this.withoutEden > 0 && this.prev === undefined;
  }

  /**
   * Bytes allocated in [a, b) and the time covered by intervals: an interval partly inside counts
   * in proportion (the rate is taken as even between two collections, as a GC log would).
   */
  range(a: number, b: number): AllocRangeStats {
    if (a <= (this.intervals[0]?.startNs ?? Infinity) && b >= (this.intervals[this.intervals.length - 1]?.endNs ?? -Infinity)) {
      return { bytes: this.totalBytes, coveredNs: this.totalNs, intervals: this.intervals.length, rate: this.totalNs ? this.totalBytes / (this.totalNs / 1e9) : 0 };
    }
    // Intervals are in time order and do not overlap: binary search the first that ends after a.
    let lo = 0;
    let hi = this.intervals.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.intervals[mid].endNs <= a) lo = mid + 1;
      else hi = mid;
    }
    let bytes = 0;
    let coveredNs = 0;
    let n = 0;
    for (let i = lo; i < this.intervals.length && this.intervals[i].startNs < b; i++) {
      const iv = this.intervals[i];
      const over = Math.min(b, iv.endNs) - Math.max(a, iv.startNs);
      if (over <= 0) continue;
      bytes += (iv.bytes * over) / (iv.endNs - iv.startNs);
      coveredNs += over;
      n++;
    }
    return { bytes, coveredNs, intervals: n, rate: coveredNs ? bytes / (coveredNs / 1e9) : 0 };
  }
}

export interface AllocRangeStats {
  /** bytes allocated in the range (intervals partly inside counted in proportion) */
  bytes: number;
  /** time of the range between two collections with eden figures */
  coveredNs: number;
  intervals: number;
  /** bytes per second over coveredNs */
  rate: number;
}

/** The same intervals computed in one pass over a session's collections (the reference the incremental model is tested against). */
export function allocIntervals(events: readonly JavaGcEvent[]): AllocInterval[] {
  const withEden = events.map((e) => ({ e, eden: edenOf(e) })).filter((x) => x.eden);
  const out: AllocInterval[] = [];
  let ref: { endNs: number; after: number } | undefined;
  for (const { e, eden } of withEden) {
    if (ref && e.timestampNs < ref.endNs) continue;
    if (ref && e.timestampNs - ref.endNs >= MIN_GAP_NS) {
      const bytes = Math.max(0, eden!.before - ref.after);
      out.push({ startNs: ref.endNs, endNs: e.timestampNs, bytes, rate: bytes / ((e.timestampNs - ref.endNs) / 1e9) });
    }
    ref = { endNs: e.timestampNs + e.durationNs, after: eden!.after };
  }
  return out;
}

/** "152 MB/s" (decimal megabytes, as GC logs and JFR print rates). */
export function formatRate(bytesPerSecond: number): string {
  const mb = bytesPerSecond / 1e6;
  return `${mb >= 100 ? mb.toFixed(0) : mb >= 10 ? mb.toFixed(1) : mb.toFixed(2)} MB/s`;
}

export function formatMb(bytes: number): string {
  const mb = bytes / 1e6;
  return `${mb >= 100 ? mb.toFixed(0) : mb.toFixed(1)} MB`;
}
