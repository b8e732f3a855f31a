// CFI (dwarf) leak stacks in uprobe mode (issue 13): decodes the `stack_copies` ring buffer of
// bpf/memleak.bpf.c (mirrors struct memleak_stack_copy in bpf/memleak.h), unwinds each copy with
// the shared UnwinderPool, and interns identical stacks, so the per-allocation ids the kernel
// stores (>= MEMLEAK_DWARF_ID_BASE) can be grouped by real stack before aggregation.
import type { Addon } from '../native/addon';
import type { AllocRecord } from './memleakDecode';
import { UnwinderPool } from './unwinderPool';

export const MEMLEAK_DWARF_ID_BASE = 2 ** 40;
export const MEMLEAK_STACK_COPY_HEADER_SIZE = 160;
export const MEMLEAK_MAX_STACK_COPY = 16384;
export const MEMLEAK_DEFAULT_STACK_COPY = 8192;
/** Interned stacks get ids above every per-allocation id the kernel hands out. */
const INTERNED_BASE = 2 ** 52;
/** A dwarf id whose copy has not been unwound yet (still in the ring buffer): no stack to show. */
export const PENDING_STACK_ID = -2;

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
  /** per-allocation id → interned stack id */
  private readonly byAlloc = new Map<number, number>();
  private readonly interned = new Map<string, number>();
  private readonly frames: BigUint64Array[] = [];
  /** copies unwound so far */
  added = 0;

  constructor(addon: Addon, log: (m: string) => void) {
    this.pool = new UnwinderPool(addon, (m) => log(`memleak: ${m}`));
  }

  add(rec: Buffer): void {
    const c = decodeStackCopy(rec);
    const { frames } = this.pool.unwind(c.pid, c.tid, c.regs, c.stack);
    const key = frames.join(',');
    let id = this.interned.get(key);
    if (id === undefined) {
      id = INTERNED_BASE + this.frames.length;
      this.frames.push(frames);
      this.interned.set(key, id);
    }
    this.byAlloc.set(c.stackId, id);
    this.added++;
  }

  /**
   * Replaces per-allocation dwarf ids by interned stack ids (pending ones by PENDING_STACK_ID),
   * and forgets the allocations no longer outstanding so the table stays as large as the
   * kernel's.
   */
  remap(records: AllocRecord[]): AllocRecord[] {
    const live = new Set<number>();
    let newest = MEMLEAK_DWARF_ID_BASE;
    const out = records.map((r) => {
      if (r.stackId < MEMLEAK_DWARF_ID_BASE) return r;
      live.add(r.stackId);
      if (r.stackId > newest) newest = r.stackId;
      return { ...r, stackId: this.byAlloc.get(r.stackId) ?? PENDING_STACK_ID };
    });
    // Ids are handed out in order: a copy unwound after this dump was read is newer than every
    // outstanding allocation in it, and must not be forgotten.
    for (const id of this.byAlloc.keys()) if (!live.has(id) && id <= newest) this.byAlloc.delete(id);
    return out;
  }

  isInterned(id: number): boolean {
    return id >= INTERNED_BASE;
  }

  /** The unwound stack (return addresses, leaf first) of an interned id. */
  stack(id: number): BigUint64Array {
    return this.frames[id - INTERNED_BASE] ?? new BigUint64Array(0);
  }

  close(): void {
    this.pool.close();
  }
}
