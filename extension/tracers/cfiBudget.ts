// Where each file's unwind table lives within a whole-host session's table memory cap, and which
// tables go when a newly met file needs room: the least recently used first, and only tables no
// walk has used for a while (two files both in use never push each other out every second; the
// newcomer waits, its stacks cut and counted, until a table goes idle). Pure bookkeeping: the
// caller (./cfiHost.ts) writes the maps.

export interface Span {
  start: number;
  len: number;
}

/** Contiguous spans of units [0, size): first fit; a freed span merges with its free neighbours. */
export class SpanAllocator {
  /** free spans, sorted by start, never adjacent */
  private free: Span[];

  constructor(readonly size: number) {
    this.free = size > 0 ? [{ start: 0, len: size }] : [];
  }

  /** The start of n free units taken, or undefined when no free span is that long. */
  alloc(n: number): number | undefined {
    if (n <= 0) return undefined;
    const i = this.free.findIndex((f) => f.len >= n);
    if (i < 0) return undefined;
    const f = this.free[i];
    const start = f.start;
    if (f.len === n) this.free.splice(i, 1);
    else this.free[i] = { start: f.start + n, len: f.len - n };
    return start;
  }

  release(s: Span): void {
    if (s.len <= 0) return;
    let i = 0;
    while (i < this.free.length && this.free[i].start < s.start) i++;
    const prev = this.free[i - 1];
    const next = this.free[i];
    if ((prev && prev.start + prev.len > s.start) || (next && s.start + s.len > next.start) || s.start < 0 || s.start + s.len > this.size) throw new Error(`span ${s.start}+${s.len} is not in use`);
    let span = { ...s };
    if (prev && prev.start + prev.len === span.start) {
      span = { start: prev.start, len: prev.len + span.len };
      this.free.splice(--i, 1);
    }
    if (next && span.start + span.len === next.start) {
      span = { start: span.start, len: span.len + next.len };
      this.free.splice(i, 1);
    }
    this.free.splice(i, 0, span);
  }

  get freeUnits(): number {
    return this.free.reduce((n, f) => n + f.len, 0);
  }

  clone(): SpanAllocator {
    const c = new SpanAllocator(this.size);
    c.free = this.free.map((f) => ({ ...f }));
    return c;
  }
}

/** A resident table: its row blocks and page-index entries. */
export interface Placement {
  rows: Span;
  pages: Span;
}

export interface Placed {
  at: Placement;
  /** tables evicted to make room, least recently used first */
  evicted: string[];
}

/** The table memory cap's bookkeeping: row blocks and page entries per resident file. */
export class CfiBudget {
  private readonly rows: SpanAllocator;
  private readonly pages: SpanAllocator;
  readonly resident = new Map<string, Placement>();
  evictions = 0;

  /** minIdleMs: a table used by a walk this recently is never evicted for another */
  constructor(
    rowBlocks: number,
    pageEntries: number,
    private readonly minIdleMs: number,
  ) {
    this.rows = new SpanAllocator(rowBlocks);
    this.pages = new SpanAllocator(pageEntries);
  }

  /** Whether a table of this size could ever be resident (it fits the cap on its own). */
  fitsCap(rowBlocks: number, pageEntries: number): boolean {
    return rowBlocks <= this.rows.size && pageEntries <= this.pages.size;
  }

  /**
   * Makes key's table resident: in free room, else after evicting the least recently used tables
   * idle for minIdleMs (lastUse: ms on the walks' clock, 0 = never used). Undefined, with nothing
   * evicted, when even that leaves too little contiguous room.
   */
  place(key: string, rowBlocks: number, pageEntries: number, lastUse: (key: string) => number, nowMs: number): Placed | undefined {
    if (this.resident.has(key)) throw new Error(`${key} is resident already`);
    const evicted = this.victims(rowBlocks, pageEntries, lastUse, nowMs);
    if (!evicted) return undefined;
    for (const k of evicted) this.remove(k);
    this.evictions += evicted.length;
    const at = { rows: { start: this.rows.alloc(rowBlocks)!, len: rowBlocks }, pages: { start: this.pages.alloc(pageEntries)!, len: pageEntries } };
    this.resident.set(key, at);
    return { at, evicted };
  }

  /**
   * The tables a table of this size would evict now (least recently used first, idle ones only),
   * [] when there is free room, undefined when it cannot be placed. Nothing changes.
   */
  victims(rowBlocks: number, pageEntries: number, lastUse: (key: string) => number, nowMs: number): string[] | undefined {
    if (!this.fitsCap(rowBlocks, pageEntries)) return undefined;
    const idle = [...this.resident.keys()].filter((k) => nowMs - lastUse(k) >= this.minIdleMs).sort((a, b) => lastUse(a) - lastUse(b));
    // the fewest victims, oldest first, that leave contiguous room: tried on copies
    const rows = this.rows.clone();
    const pages = this.pages.clone();
    let n = 0;
    for (;;) {
      const r = rows.alloc(rowBlocks);
      const p = r === undefined ? undefined : pages.alloc(pageEntries);
      if (r !== undefined && p !== undefined) return idle.slice(0, n);
      if (r !== undefined) rows.release({ start: r, len: rowBlocks });
      if (n >= idle.length) return undefined;
      const v = this.resident.get(idle[n++])!;
      rows.release(v.rows);
      pages.release(v.pages);
    }
  }

  /** Frees key's room (its file is gone); false when it was not resident. */
  remove(key: string): boolean {
    const at = this.resident.get(key);
    if (!at) return false;
    this.rows.release(at.rows);
    this.pages.release(at.pages);
    this.resident.delete(key);
    return true;
  }

  /** Units in use: row blocks and page entries. */
  get used(): { rowBlocks: number; pageEntries: number } {
    return { rowBlocks: this.rows.size - this.rows.freeUnits, pageEntries: this.pages.size - this.pages.freeUnits };
  }
}
