// A sorted, binary-searched table of address ranges, used for ELF symbols, /proc/kallsyms and
// JVM perf maps. Ranges may overlap (perf maps reuse code-cache addresses; later entries win),
// which is why lookups walk back while a running maximum of range ends still covers the address.

export interface Range<T> {
  start: bigint;
  /** exclusive; for open-ended symbols the caller fills in the next start or a section end */
  end: bigint;
  value: T;
}

export class AddressTable<T> {
  private readonly starts: BigUint64Array;
  private readonly ends: BigUint64Array;
  /** max of ends[0..i]: lets a lookup stop walking back as soon as nothing earlier can cover addr */
  private readonly maxEnd: BigUint64Array;
  /** insertion order, so that among overlapping ranges the one added last wins */
  private readonly seq: Uint32Array;
  private readonly values: T[];

  /**
   * latestWins: among overlapping ranges the one added last wins (perf maps, where the JIT reuses
   * addresses); otherwise the innermost (greatest start) wins (nested ELF symbols).
   */
  constructor(
    ranges: Range<T>[],
    private readonly latestWins = false,
  ) {
    const order = ranges.map((_, i) => i).sort((a, b) => {
      const x = ranges[a].start;
      const y = ranges[b].start;
      return x < y ? -1 : x > y ? 1 : a - b;
    });
    const n = order.length;
    this.starts = new BigUint64Array(n);
    this.ends = new BigUint64Array(n);
    this.maxEnd = new BigUint64Array(n);
    this.seq = new Uint32Array(n);
    this.values = new Array(n);
    let max = 0n;
    for (let i = 0; i < n; i++) {
      const r = ranges[order[i]];
      this.starts[i] = r.start;
      this.ends[i] = r.end;
      if (r.end > max) max = r.end;
      this.maxEnd[i] = max;
      this.seq[i] = order[i];
      this.values[i] = r.value;
    }
  }

  get size(): number {
    return this.values.length;
  }

  /** The range holding addr, with its bounds. */
  lookup(addr: bigint): { value: T; start: bigint; end: bigint } | undefined {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid] <= addr) lo = mid + 1;
      else hi = mid - 1;
    }
    let best = -1;
    for (let i = hi; i >= 0 && this.maxEnd[i] > addr; i--) {
      if (addr >= this.ends[i]) continue;
      if (!this.latestWins) {
        best = i;
        break;
      }
      if (best < 0 || this.seq[i] > this.seq[best]) best = i;
    }
    return best < 0 ? undefined : { value: this.values[best], start: this.starts[best], end: this.ends[best] };
  }
}
