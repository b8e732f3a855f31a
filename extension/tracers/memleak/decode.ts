// Decoders for the memleak maps and events (mirror bpf/memleak.h) and the pure aggregation of
// outstanding allocations by stack, kept apart from attach logic so unit tests can drive them.
import { SampledTotals } from '../../model/memleakSampling';
import type { MemleakResult, MemleakUpdate } from '../../protocol/memleak';

export const ALLOC_SIZE = 24;
export const TOTALS_SIZE = 16;
export const EXIT_EVENT_SIZE = 8;
export const CNT = { allocsFull: 0, stackLost: 1, totalsFull: 2, pendingFull: 3, allocs: 4, frees: 5, exitHolds: 6, exitLost: 7, copyLost: 8 } as const;
export const CNT_MAX = 9;

export interface AllocRecord {
  address: bigint;
  size: number;
  timestampNs: bigint;
  /** -1: the stack could not be stored */
  stackId: number;
}

/** struct memleak_alloc (24 bytes) keyed by a u64 address. */
export function decodeAlloc(key: Buffer, value: Buffer): AllocRecord {
  return {
    address: key.readBigUInt64LE(0),
    size: Number(value.readBigUInt64LE(0)),
    timestampNs: value.readBigUInt64LE(8),
    stackId: Number(value.readBigInt64LE(16)),
  };
}

export function decodeAllocDump(dump: { keys: Buffer; values: Buffer; count: number }): AllocRecord[] {
  const out: AllocRecord[] = new Array(dump.count);
  for (let i = 0; i < dump.count; i++) {
    out[i] = decodeAlloc(dump.keys.subarray(i * 8, i * 8 + 8), dump.values.subarray(i * ALLOC_SIZE, (i + 1) * ALLOC_SIZE));
  }
  return out;
}

/** struct memleak_totals (16 bytes) keyed by an s64 stack id. */
export function decodeTotals(key: Buffer, value: Buffer): { stackId: number; bytes: number; count: number } {
  // The kernel side subtracts with wrap-around; a transiently negative total reads as huge.
  return { stackId: Number(key.readBigInt64LE(0)), bytes: Number(value.readBigInt64LE(0)), count: Number(value.readBigInt64LE(8)) };
}

/** struct memleak_exit_event (8 bytes) */
export function decodeExitEvent(b: Buffer): { tgid: number; tid: number } {
  return { tgid: b.readUInt32LE(0), tid: b.readUInt32LE(4) };
}

export interface StackAggregate {
  stackId: number;
  bytes: number;
  allocations: number;
  oldestNs: bigint;
  /** sampled (meanBytes > 0): bytes and allocations are rounded estimates with these errors */
  bytesStdErr?: number;
  allocationsStdErr?: number;
}

/**
 * Groups outstanding allocations by stack, counting only those at least minAgeMs old at `nowNs`
 * (both CLOCK_MONOTONIC), largest bytes first (ties: more allocations, then older). With
 * `meanBytes` > 0 the records are Poisson samples and each stack's figures are estimates.
 */
export function aggregate(records: AllocRecord[], nowNs: bigint, minAgeMs: number, meanBytes = 0): StackAggregate[] {
  if (meanBytes > 0) return aggregateSampled(records, nowNs, minAgeMs, meanBytes);
  const cutoff = nowNs - BigInt(Math.round(minAgeMs * 1e6));
  const by = new Map<number, StackAggregate>();
  for (const r of records) {
    if (minAgeMs > 0 && r.timestampNs > cutoff) continue;
    const a = by.get(r.stackId);
    if (a) {
      a.bytes += r.size;
      a.allocations++;
      if (r.timestampNs < a.oldestNs) a.oldestNs = r.timestampNs;
    } else {
      by.set(r.stackId, { stackId: r.stackId, bytes: r.size, allocations: 1, oldestNs: r.timestampNs });
    }
  }
  return [...by.values()].sort((a, b) => b.bytes - a.bytes || b.allocations - a.allocations || (a.oldestNs < b.oldestNs ? -1 : 1));
}

export function ageMs(nowNs: bigint, thenNs: bigint): number {
  return thenNs >= nowNs ? 0 : Number((nowNs - thenNs) / 1_000_000n);
}

function aggregateSampled(records: AllocRecord[], nowNs: bigint, minAgeMs: number, meanBytes: number): StackAggregate[] {
  const cutoff = nowNs - BigInt(Math.round(minAgeMs * 1e6));
  const by = new Map<number, { t: SampledTotals; oldestNs: bigint }>();
  for (const r of records) {
    if (minAgeMs > 0 && r.timestampNs > cutoff) continue;
    let g = by.get(r.stackId);
    if (!g) by.set(r.stackId, (g = { t: new SampledTotals(), oldestNs: r.timestampNs }));
    g.t.add(r.size, meanBytes);
    if (r.timestampNs < g.oldestNs) g.oldestNs = r.timestampNs;
  }
  return [...by.entries()]
    .map(([stackId, { t, oldestNs }]) => ({
      stackId,
      bytes: Math.round(t.bytes),
      allocations: Math.max(1, Math.round(t.allocations)),
      oldestNs,
      bytesStdErr: Math.round(t.bytesStdErr),
      allocationsStdErr: Math.round(t.allocationsStdErr * 10) / 10,
    }))
    .sort((a, b) => b.bytes - a.bytes || b.allocations - a.allocations || (a.oldestNs < b.oldestNs ? -1 : 1));
}

/** The last live update of a session: what the program printed since the last report, with the final numbers. */
export function finalUpdate(r: MemleakResult, atMs: number, output: string): MemleakUpdate {
  const totalBytes = r.stacks.reduce((a, x) => a + x.bytes, 0);
  const totalAllocations = r.stacks.reduce((a, x) => a + x.allocations, 0);
  return { atMs, totalBytes, totalAllocations, stacks: r.stacks, dropped: r.dropped, output };
}
