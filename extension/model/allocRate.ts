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
import { BoundedLane, type BoundedLaneState } from './boundedLane';

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
  /** the intervals between GCs: the whole session in bins, the recent ones as items */
  intervals = new BoundedLane<AllocInterval>((iv) => iv.startNs);
  heap = new BoundedLane<HeapPoint>((h) => h.startNs);
  /** collections with pools but none of them an eden */
  withoutEden = 0;
  totalBytes = 0;
  totalNs = 0;
  maxRate = 0;
  maxHeap = 0;
  private prev: { endNs: number; edenAfter: number } | undefined;
  private lastPool = new Map<string, number>();
  private lastHeapNs = -Infinity;

  add(e: JavaGcEvent): void {
    const endNs = e.timestampNs + e.durationNs;
    const heapPools = e.pools.filter((p) => !NON_HEAP.test(p.name));
    if (heapPools.length) {
      for (const p of heapPools) this.lastPool.set(p.name, p.usedAfter);
      const pools = [...this.lastPool];
      const totalBytes = pools.reduce((s, [, b]) => s + b, 0);
      // Collections arrive in order of their end; a mark that would go back in time is not drawn.
      if (endNs >= this.lastHeapNs) {
        this.lastHeapNs = endNs;
        this.heap.push({ ns: endNs, startNs: e.timestampNs, totalBytes, pools }, e.timestampNs, endNs, totalBytes);
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
    this.intervals.push({ startNs: prev.endNs, endNs: e.timestampNs, bytes, rate }, prev.endNs, e.timestampNs, rate);
    this.totalBytes += bytes;
    this.totalNs += ns;
    if (rate > this.maxRate) this.maxRate = rate;
  }

  /** Drops the items (not the bins, not the totals) that start before `beforeNs`. */
  trim(beforeNs: number): void {
    this.intervals.trim(beforeNs);
    this.heap.trim(beforeNs);
  }

  toJSON(fromNs = -Infinity): AllocRateState {
    return { intervals: this.intervals.toJSON(true, fromNs), heap: this.heap.toJSON(true, fromNs), withoutEden: this.withoutEden, totalBytes: this.totalBytes, totalNs: this.totalNs, maxRate: this.maxRate, maxHeap: this.maxHeap, prev: this.prev, lastPool: [...this.lastPool], lastHeapNs: Number.isFinite(this.lastHeapNs) ? this.lastHeapNs : null };
  }

  static from(s: AllocRateState): AllocRate {
    const a = new AllocRate();
    a.intervals = BoundedLane.from(s.intervals, (iv) => iv.startNs);
    a.heap = BoundedLane.from(s.heap, (h) => h.startNs);
    Object.assign(a, { withoutEden: s.withoutEden, totalBytes: s.totalBytes, totalNs: s.totalNs, maxRate: s.maxRate, maxHeap: s.maxHeap, prev: s.prev });
    a.lastPool = new Map(s.lastPool);
    a.lastHeapNs = s.lastHeapNs ?? -Infinity;
    return a;
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
    const items = this.intervals.recent();
    const first = this.intervals.get(0);
    const last = items[items.length - 1];
    if (!first || !last || (a <= first.startNs && b >= last.endNs)) {
      return { bytes: this.totalBytes, coveredNs: this.totalNs, intervals: this.intervals.length, rate: this.totalNs ? this.totalBytes / (this.totalNs / 1e9) : 0 };
    }
    // Intervals are in time order and do not overlap: binary search the first that ends after a.
    // Only the recent ones are held: a range reaching further back counts from the oldest held.
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid].endNs <= a) lo = mid + 1;
      else hi = mid;
    }
    let bytes = 0;
    let coveredNs = 0;
    let n = 0;
    for (let i = lo; i < items.length && items[i].startNs < b; i++) {
      const iv = items[i];
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

export interface AllocRateState {
  intervals: BoundedLaneState<AllocInterval>;
  heap: BoundedLaneState<HeapPoint>;
  withoutEden: number;
  totalBytes: number;
  totalNs: number;
  maxRate: number;
  maxHeap: number;
  prev: { endNs: number; edenAfter: number } | undefined;
  lastPool: [string, number][];
  lastHeapNs: number | null;
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
