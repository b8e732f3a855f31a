// CFI (dwarf) leak stacks in uprobe mode: decodes the `stack_copies` ring buffer of
// bpf/memleak.bpf.c (mirrors struct memleak_stack_copy in bpf/memleak.h), unwinds each copy with
// the shared UnwinderPool, and interns identical stacks, so the per-allocation ids the kernel
// stores (>= MEMLEAK_DWARF_ID_BASE) can be grouped by real stack before aggregation.
import type { Addon } from '../../sys/addon';
import type { AllocRecord } from './decode';
import { UnwinderPool } from '../unwinderPool';

export const MEMLEAK_DWARF_ID_BASE = 2 ** 40;
export const MEMLEAK_STACK_COPY_HEADER_SIZE = 160;
export const MEMLEAK_MAX_STACK_COPY = 16384;
export const MEMLEAK_DEFAULT_STACK_COPY = 8192;
/** Interned stacks get ids above every per-allocation id the kernel hands out. */
const INTERNED_BASE = 2 ** 52;
/** A dwarf id whose copy has not been unwound yet (still in the ring buffer): no stack to show. */
export const PENDING_STACK_ID = -2;
/** The deepest stack kept (the addon's unwind() default). */
const MAX_FRAMES = 127;
/**
 * The BPF program stores an allocation's record microseconds after it sends the stack copy; a
 * copy unwound this long ago whose allocation is not in a dump was freed, even when no newer
 * allocation is outstanding (a program that frees everything between reports).
 */
const SETTLE_MS = 1000;

export interface StackCopy {
  stackId: number;
  pid: number;
  tid: number;
  regs: Buffer;
  stack: Buffer;
}

export function decodeStackCopy(rec: Buffer): StackCopy {
  if (rec.length < MEMLEAK_STACK_COPY_HEADER_SIZE) throw new Error(`stack copy of ${rec.length} bytes is shorter than its ${MEMLEAK_STACK_COPY_HEADER_SIZE}-byte header`);
  const len = Math.min(rec.readUInt32LE(16), rec.length - MEMLEAK_STACK_COPY_HEADER_SIZE);
  return {
    stackId: Number(rec.readBigInt64LE(0)),
    pid: rec.readUInt32LE(8),
    tid: rec.readUInt32LE(12),
    regs: rec.subarray(24, 24 + 17 * 8),
    stack: rec.subarray(MEMLEAK_STACK_COPY_HEADER_SIZE, MEMLEAK_STACK_COPY_HEADER_SIZE + len),
  };
}

export class MemleakDwarfStacks {
  readonly pool: UnwinderPool;
  /**
   * per-allocation id − MEMLEAK_DWARF_ID_BASE → index into `frames`. Small integers on both
   * sides: V8 stores them in the table itself, where ids near 2^40 and 2^52 would each be a heap
   * object; 10k of those a second, each living until the next remap, kept growing V8's young
   * generation (objects that survive a scavenge count towards its growth).
   */
  private readonly byAlloc = new Map<number, number>();
  /** stack (its frames' bytes) → index into `frames` */
  private readonly interned = new Map<string, number>();
  private readonly frames: BigUint64Array[] = [];
  /** copies unwound so far */
  added = 0;
  /** the newest per-allocation id unwound so far (− MEMLEAK_DWARF_ID_BASE) */
  private newestAdded = -1;
  /** newestAdded as each remap began, until SETTLE_MS old */
  private readonly marks: { seq: number; at: number }[] = [];
  /** the newest id unwound at least SETTLE_MS before the current remap */
  private settled = -1;
  private readonly scratch = new BigUint64Array(MAX_FRAMES);
  private readonly scratchBytes = Buffer.from(this.scratch.buffer);

  constructor(
    addon: Addon,
    log: (m: string) => void,
    private readonly clock: () => number = Date.now,
  ) {
    this.pool = new UnwinderPool(addon, (m) => log(`memleak: ${m}`));
  }

  add(rec: Buffer): void {
    const c = decodeStackCopy(rec);
    // At 10k copies a second, per-copy garbage (a result object, an off-heap typed array, a
    // string of decimal BigInts) kept V8's young generation and the malloc heap growing; so
    // frames land in one scratch array and the key is their raw bytes, one short string.
    const n = this.pool.unwindInto(c.pid, c.tid, c.regs, c.stack, this.scratch);
    const key = this.scratchBytes.toString('latin1', 0, n * 8);
    let index = this.interned.get(key);
    if (index === undefined) {
      index = this.frames.length;
      this.frames.push(this.scratch.slice(0, n));
      this.interned.set(key, index);
    }
    const seq = c.stackId - MEMLEAK_DWARF_ID_BASE;
    this.byAlloc.set(seq, index);
    if (seq > this.newestAdded) this.newestAdded = seq;
    this.added++;
  }

  /**
   * Replaces per-allocation dwarf ids by interned stack ids (pending ones by PENDING_STACK_ID),
   * and forgets the allocations no longer outstanding so the table stays as large as the
   * kernel's.
   */
  remap(records: AllocRecord[]): AllocRecord[] {
    const live = new Set<number>();
    let newest = 0;
    const out = records.map((r) => {
      if (r.stackId < MEMLEAK_DWARF_ID_BASE) return r;
      const seq = r.stackId - MEMLEAK_DWARF_ID_BASE;
      live.add(seq);
      if (seq > newest) newest = seq;
      const index = this.byAlloc.get(seq);
      return { ...r, stackId: index === undefined ? PENDING_STACK_ID : INTERNED_BASE + index };
    });
    // Ids are handed out in order: a copy unwound after this dump was read is newer than every
    // outstanding allocation in it, and must not be forgotten; nor one unwound just before it,
    // whose record the kernel may not have stored yet. Copies older than that, not in the dump,
    // were freed: forgetting them keeps the table as small as the outstanding allocations.
    const now = this.clock();
    this.marks.push({ seq: this.newestAdded, at: now });
    while (this.marks.length && this.marks[0].at <= now - SETTLE_MS) this.settled = Math.max(this.settled, this.marks.shift()!.seq);
    const cutoff = Math.max(newest, this.settled);
    for (const id of this.byAlloc.keys()) if (!live.has(id) && id <= cutoff) this.byAlloc.delete(id);
    return out;
  }

  isInterned(id: number): boolean {
    return id >= INTERNED_BASE;
  }

  /** The unwound stack (return addresses, leaf first) of an interned id. */
  stack(id: number): BigUint64Array {
    return this.frames[id - INTERNED_BASE] ?? new BigUint64Array(0);
  }

  /** Per-allocation ids remembered (outstanding, or unwound too recently to tell). */
  get remembered(): number {
    return this.byAlloc.size;
  }

  /** Distinct stacks interned. */
  get stacks(): number {
    return this.frames.length;
  }

  close(): void {
    this.pool.close();
  }
}
