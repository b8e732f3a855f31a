// Fixed time bins over a lane's items (GC collections, safepoints, CPU slices, run-queue slices):
// per bin the number of items, the highest level among them and which item it was, and the extent
// the items cover. Adding an item is O(1); when the session outgrows MAX_BINS, pairs of bins
// merge (the width doubles). A view drawing a window wider than a bin per pixel reads the bins,
// not the items, so drawing a lane costs the same after an hour as after a minute. Pure.

/** Bins per lane: a few per pixel of the widest plot, so a lane costs the same to keep and draw after hours as after a minute. */
export const MAX_BINS = 4096;

export class TimeBins {
  originNs = 0;
  binNs: number;
  count: number[] = [];
  level: number[] = [];
  /** index (in the lane's item list) of each bin's highest item; -1 when empty */
  best: number[] = [];
  /** earliest start and latest end of the bin's items */
  start: number[] = [];
  end: number[] = [];

  constructor(firstBinNs = 1e6) {
    this.binNs = firstBinNs;
  }

  add(index: number, startNs: number, endNs: number, level: number): void {
    if (this.count.length === 0 && this.originNs === 0) this.originNs = startNs;
    let bin = Math.max(0, Math.floor((startNs - this.originNs) / this.binNs));
    while (bin >= MAX_BINS) {
      this.coarsen();
      bin = Math.max(0, Math.floor((startNs - this.originNs) / this.binNs));
    }
    while (this.count.length <= bin) {
      this.count.push(0);
      this.level.push(-Infinity);
      this.best.push(-1);
      this.start.push(Infinity);
      this.end.push(-Infinity);
    }
    this.count[bin]++;
    if (level > this.level[bin]) {
      this.level[bin] = level;
      this.best[bin] = index;
    }
    if (startNs < this.start[bin]) this.start[bin] = startNs;
    if (endNs > this.end[bin]) this.end[bin] = endNs;
  }

  /** Bins [first, last] that may hold items overlapping [a, b] (an item lies in its start's bin). */
  span(a: number, b: number, reachNs = 0): [number, number] {
    const first = Math.max(0, Math.floor((a - reachNs - this.originNs) / this.binNs));
    const last = Math.min(this.count.length - 1, Math.floor((b - this.originNs) / this.binNs));
    return [first, last];
  }

  private coarsen(): void {
    this.binNs *= 2;
    const n = Math.ceil(this.count.length / 2);
    const merged = { count: [] as number[], level: [] as number[], best: [] as number[], start: [] as number[], end: [] as number[] };
    for (let i = 0; i < n; i++) {
      const a = 2 * i;
      const b = a + 1 < this.count.length ? a + 1 : a;
      const other = b !== a;
      merged.count.push(this.count[a] + (other ? this.count[b] : 0));
      const bWins = other && this.level[b] > this.level[a];
      merged.level.push(bWins ? this.level[b] : this.level[a]);
      merged.best.push(bWins ? this.best[b] : this.best[a]);
      merged.start.push(Math.min(this.start[a], this.start[b]));
      merged.end.push(Math.max(this.end[a], this.end[b]));
    }
    Object.assign(this, merged);
  }

  /** The bin an item starting at startNs lies in. */
  binOf(startNs: number): number {
    return Math.max(0, Math.floor((startNs - this.originNs) / this.binNs));
  }

  toJSON(): TimeBinsState {
    return { originNs: this.originNs, binNs: this.binNs, count: this.count, level: this.level.map((l) => (l === -Infinity ? null : l)), best: this.best, start: this.start.map((x) => (x === Infinity ? null : x)), end: this.end.map((x) => (x === -Infinity ? null : x)) };
  }

  static from(s: TimeBinsState): TimeBins {
    const b = new TimeBins(s.binNs);
    b.originNs = s.originNs;
    b.count = [...s.count];
    b.level = s.level.map((l) => l ?? -Infinity);
    b.best = [...s.best];
    b.start = s.start.map((x) => x ?? Infinity);
    b.end = s.end.map((x) => x ?? -Infinity);
    return b;
  }
}

/** TimeBins as JSON (empty bins' infinities as null). */
export interface TimeBinsState {
  originNs: number;
  binNs: number;
  count: number[];
  level: (number | null)[];
  best: number[];
  start: (number | null)[];
  end: (number | null)[];
}
