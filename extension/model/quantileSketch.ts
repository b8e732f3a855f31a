// A mergeable summary of durations for live views: count, sum, min and max exactly, quantiles
// exactly while few values have been seen (they are kept sorted), then from log-linear buckets.
// Adding a value costs O(log n) while exact and O(1) after, never a pass over what came before,
// so a view that redraws every frame does not slow down as the session grows.
//
// Written here rather than taken from a library (hdr-histogram-js, tdigest) because its state
// must be plain JSON shared by the extension host, the webview and saved session files, must
// merge by adding counts, and must give the exact nearest-rank figures for short sessions that
// the batch functions (javaGcStats.ts) give; ~100 lines do that.

/** Values kept exactly; past this, quantiles come from the buckets. */
export const EXACT_LIMIT = 4096;
/** Sub-buckets per power of two: a bucket's width is at most 1/32 of its lower bound. */
const SUB_BITS = 5;
const SUB = 1 << SUB_BITS;

export interface SketchState {
  n: number;
  sum: number;
  min: number;
  max: number;
  /** sorted values while n ≤ EXACT_LIMIT */
  exact?: number[];
  /** [bucket, count] pairs, ascending, once past EXACT_LIMIT */
  buckets?: [number, number][];
}

/** Bucket of a non-negative integer: exact below 2·SUB, then SUB buckets per power of two. */
export function sketchBucket(v: number): number {
  const x = Math.max(0, Math.floor(v));
  if (x < 2 * SUB) return x;
  let e = Math.floor(Math.log2(x));
  // log2 of large integers can land one off; settle it so 2^e ≤ x < 2^(e+1).
  if (2 ** e > x) e--;
  else if (2 ** (e + 1) <= x) e++;
  const shift = e - SUB_BITS;
  return (shift + 1) * SUB + (Math.floor(x / 2 ** shift) - SUB);
}

/** [low, width] of a bucket: it holds low ≤ v < low + width. */
export function sketchBucketRange(i: number): [number, number] {
  if (i < 2 * SUB) return [i, 1];
  const shift = Math.floor(i / SUB) - 1;
  const mant = SUB + (i % SUB);
  return [mant * 2 ** shift, 2 ** shift];
}

export class QuantileSketch {
  n = 0;
  sum = 0;
  min = Infinity;
  max = 0;
  private exact: number[] | undefined = [];
  private counts = new Map<number, number>();

  add(v: number): void {
    this.n++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    if (this.exact) {
      // Binary search for the insertion point keeps the values sorted.
      let lo = 0;
      let hi = this.exact.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.exact[mid] <= v) lo = mid + 1;
        else hi = mid;
      }
      this.exact.splice(lo, 0, v);
      if (this.exact.length > EXACT_LIMIT) this.toBuckets();
    } else this.bump(sketchBucket(v), 1);
  }

  /** Adds another sketch's values to this one. */
  merge(o: QuantileSketch): void {
    if (o.n === 0) return;
    this.n += o.n;
    this.sum += o.sum;
    this.min = Math.min(this.min, o.min);
    this.max = Math.max(this.max, o.max);
    if (this.exact && o.exact && this.exact.length + o.exact.length <= EXACT_LIMIT) {
      this.exact = [...this.exact, ...o.exact].sort((a, b) => a - b);
      return;
    }
    this.toBuckets();
    if (o.exact) for (const v of o.exact) this.bump(sketchBucket(v), 1);
    else for (const [b, c] of o.counts) this.bump(b, c);
  }

  /** True while quantiles are exact (every value kept). */
  get isExact(): boolean {
    return this.exact !== undefined;
  }

  /**
   * The nearest-rank q-quantile (0..1): exact while isExact; after, the middle of the bucket
   * holding the rank, within [min, max] (at most 1/64 of the value away from the exact one).
   */
  quantile(q: number): number {
    if (this.n === 0) return 0;
    const rank = Math.min(this.n, Math.max(1, Math.ceil(q * this.n)));
    if (this.exact) return this.exact[rank - 1];
    if (rank === this.n) return this.max;
    let seen = 0;
    for (const b of [...this.counts.keys()].sort((x, y) => x - y)) {
      seen += this.counts.get(b)!;
      if (seen >= rank) {
        const [low, width] = sketchBucketRange(b);
        return Math.min(this.max, Math.max(this.min, width === 1 ? low : low + width / 2));
      }
    }
    return this.max;
  }

  toJSON(): SketchState {
    const s: SketchState = { n: this.n, sum: this.sum, min: this.n ? this.min : 0, max: this.max };
    if (this.exact) s.exact = [...this.exact];
    else s.buckets = [...this.counts].sort((a, b) => a[0] - b[0]);
    return s;
  }

  static from(s: SketchState | undefined): QuantileSketch {
    const k = new QuantileSketch();
    if (!s || !s.n) return k;
    k.n = s.n;
    k.sum = s.sum;
    k.min = s.min;
    k.max = s.max;
    if (s.exact) k.exact = [...s.exact].sort((a, b) => a - b);
    else {
      k.exact = undefined;
      for (const [b, c] of s.buckets ?? []) k.counts.set(b, c);
    }
    return k;
  }

  private toBuckets(): void {
    if (!this.exact) return;
    const values = this.exact;
    this.exact = undefined;
    for (const v of values) this.bump(sketchBucket(v), 1);
  }

  private bump(b: number, c: number): void {
    this.counts.set(b, (this.counts.get(b) ?? 0) + c);
  }
}
