// What bpf/latency.bpf.c leaves: the log-linear histogram percentiles are read from (32 slots per
// power of two of nanoseconds), the statistics counters and the slow-call records. Pure.
import type { MapDump } from '../../../native/index';

export const FINE_SUB_BITS = 5;
export const FINE_SUB = 1 << FINE_SUB_BITS;
export const FINE_SLOTS = 1920;
export const STACK_MAX = 48;
const SLOW_HEADER = 40;

/** Indexes of `lat_stats`. */
export const STAT = { calls: 0, sumNs: 1, abandoned: 2, exited: 3, tooDeep: 4, slowSent: 5, slowLost: 6, maxNs: 7, profKept: 8, profDropped: 9, profLost: 10, callersFull: 11 } as const;

/** [low, high) in ns of a fine slot (the inverse of fine_slot() in the BPF program). */
export function fineBounds(slot: number): [number, number] {
  if (slot < FINE_SUB) return [slot, slot + 1];
  const octave = Math.floor(slot / FINE_SUB) + FINE_SUB_BITS - 1;
  const width = 2 ** (octave - FINE_SUB_BITS);
  const low = (FINE_SUB + (slot % FINE_SUB)) * width;
  return [low, low + width];
}

/** The fine slot of a value, as the BPF program computes it (for tests). */
export function fineSlot(ns: number): number {
  if (ns < FINE_SUB) return Math.floor(ns);
  const octave = Math.floor(Math.log2(ns));
  const slot = (octave - (FINE_SUB_BITS - 1)) * FINE_SUB + (Math.floor(ns / 2 ** (octave - FINE_SUB_BITS)) & (FINE_SUB - 1));
  return Math.min(slot, FINE_SLOTS - 1);
}

/** Per-slot counts of the per-CPU `fine` array (keys u32 slot, values one u64 per CPU). */
export function decodeFine(dump: MapDump): number[] {
  const counts = new Array<number>(FINE_SLOTS).fill(0);
  const stride = dump.count ? dump.values.length / dump.count : 0;
  for (let i = 0; i < dump.count; i++) {
    const slot = dump.keys.readUInt32LE(i * 4);
    let n = 0;
    for (let o = i * stride; o + 8 <= (i + 1) * stride; o += 8) n += Number(dump.values.readBigUInt64LE(o));
    if (slot < FINE_SLOTS) counts[slot] += n;
  }
  return counts;
}

/** The p-th percentile (nearest rank) in ns, interpolated inside its slot; 0 without calls. */
export function percentile(counts: number[], p: number): number {
  const n = counts.reduce((a, b) => a + b, 0);
  if (!n) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  let before = 0;
  for (let s = 0; s < counts.length; s++) {
    const c = counts[s];
    if (!c) continue;
    if (before + c >= rank) {
      const [low, high] = fineBounds(s);
      return low + ((high - low) * (rank - before - 0.5)) / c;
    }
    before += c;
  }
  return fineBounds(counts.length - 1)[0];
}

export interface SlowRecord {
  durationNs: number;
  endNs: number;
  tid: number;
  /** return addresses to symbolize: the function's caller first */
  addresses: bigint[];
}

/** One slow-call record; `retInsns`: taken at a ret instruction (the caller is in ret_addr). */
export function decodeSlow(rec: Buffer, retInsns: boolean): SlowRecord {
  const bytes = rec.readInt32LE(24);
  const stack: bigint[] = [];
  for (let i = 0; i < Math.min(STACK_MAX, Math.max(0, bytes) / 8); i++) {
    const a = rec.readBigUInt64LE(SLOW_HEADER + i * 8);
    if (!a) break;
    stack.push(a);
  }
  const retAddr = rec.readBigUInt64LE(32);
  // At a ret instruction the first frame is that ret (the function, named apart by its entry) and
  // the frame-pointer walk goes on from the caller's saved bp: the caller's own return address is
  // only on the stack at sp (ret_addr), put in its place. At a uretprobe the ip is in the caller.
  const addresses = retInsns ? [...(retAddr ? [retAddr] : []), ...stack.slice(1).filter((a, i) => i > 0 || a !== retAddr)] : stack;
  return { durationNs: Number(rec.readBigUInt64LE(0)), endNs: Number(rec.readBigUInt64LE(8)), tid: rec.readUInt32LE(16), addresses };
}
