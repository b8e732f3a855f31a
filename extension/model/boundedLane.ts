// A timeline lane's items with bounded memory: the lane's TimeBins cover the whole session (a
// bounded number of bins: they merge as the session grows), while the items themselves are kept
// only for a recent window. An item that falls out of the window is kept only when it is the
// best (highest) item of its bin, so the view can still draw and describe a mark for every bin
// of the whole session; at most one item per bin, so the lane's memory stops growing. Pure.
import { MAX_BINS, TimeBins, type TimeBinsState } from './timeBins';

export class BoundedLane<T> {
  bins = new TimeBins();
  /** the recent items; items[0] has the absolute index `base` */
  private items: T[] = [];
  private base = 0;
  /** items before `base` that were their bin's best when they left the window */
  private kept = new Map<number, T>();

  /**
   * startOf: an item's start (items arrive in nearly ascending order of it). compact: what of an
   * item is kept once it leaves the window and what a saved lane holds (what its mark and tooltip
   * need; e.g. a GC without its memory pools).
   */
  constructor(
    private readonly startOf: (t: T) => number,
    private readonly compact: (t: T) => T = (t) => t,
  ) {}

  /** Items ever pushed (the next absolute index). */
  get length(): number {
    return this.base + this.items.length;
  }

  /** Absolute index of the first recent item. */
  get first(): number {
    return this.base;
  }

  /** The recent items, oldest first (absolute index of recent()[i] is first + i). */
  recent(): readonly T[] {
    return this.items;
  }

  push(item: T, startNs: number, endNs: number, level: number): number {
    const i = this.length;
    this.bins.add(i, startNs, endNs, level);
    this.items.push(item);
    return i;
  }

  /** Replaces a recent item (a slice whose figures grew); its bin takes the new level. */
  set(i: number, item: T, startNs: number, endNs: number, level: number): void {
    if (i < this.base) return;
    this.items[i - this.base] = item;
    this.bins.add(i, startNs, endNs, level);
    // add() counted it again: an update is not a new item.
    this.bins.count[this.bins.binOf(startNs)]--;
  }

  get(i: number): T | undefined {
    return i >= this.base ? this.items[i - this.base] : this.kept.get(i);
  }

  /** Start of the oldest recent item (Infinity when none is held). */
  recentFromNs(): number {
    return this.items.length ? this.startOf(this.items[0]) : Infinity;
  }

  /** Drops recent items that start before `beforeNs` (from the front), keeping each bin's best. */
  trim(beforeNs: number): void {
    let k = 0;
    while (k < this.items.length && this.startOf(this.items[k]) < beforeNs) {
      const it = this.items[k];
      const i = this.base + k;
      if (this.bins.best[this.bins.binOf(this.startOf(it))] === i) this.kept.set(i, this.compact(it));
      k++;
    }
    if (!k) return;
    this.items = this.items.slice(k);
    this.base += k;
    // Bins merge as the session grows: the best of a merged bin is one of its halves' bests, so
    // kept items that are no longer any bin's best can go.
    if (this.kept.size > MAX_BINS * 1.5) {
      const best = new Set(this.bins.best);
      for (const i of this.kept.keys()) if (!best.has(i)) this.kept.delete(i);
    }
  }

  /**
   * The lane as JSON. `withItems` false: the recent items are left out (the caller saves them
   * elsewhere and passes them to from()). `fromNs`: saved as if trimmed there (a smaller document).
   */
  toJSON(withItems = true, fromNs = -Infinity): BoundedLaneState<T> {
    let k = 0;
    const kept = [...this.kept];
    while (k < this.items.length && this.startOf(this.items[k]) < fromNs) {
      const it = this.items[k];
      if (this.bins.best[this.bins.binOf(this.startOf(it))] === this.base + k) kept.push([this.base + k, this.compact(it)]);
      k++;
    }
    return { bins: this.bins.toJSON(), base: this.base + k, length: this.length, items: withItems ? this.items.slice(k).map(this.compact) : [], kept };
  }

  /** A saved lane; `items`: its recent items when they were saved elsewhere (the last of them are taken). */
  static from<T>(s: BoundedLaneState<T>, startOf: (t: T) => number, compact?: (t: T) => T, items?: readonly T[]): BoundedLane<T> {
    const l = new BoundedLane<T>(startOf, compact);
    l.bins = TimeBins.from(s.bins);
    const recent = items ? items.slice(Math.max(0, items.length - ((s.length ?? s.base + s.items.length) - s.base))) : s.items;
    l.items = [...recent];
    l.base = (s.length ?? s.base + s.items.length) - l.items.length;
    l.kept = new Map(s.kept);
    return l;
  }
}

export interface BoundedLaneState<T> {
  bins: TimeBinsState;
  base: number;
  /** items ever pushed */
  length?: number;
  items: T[];
  kept: [number, T][];
}
