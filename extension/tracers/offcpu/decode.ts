// Decoders for what bpf/offcpu.bpf.c leaves in its maps (layouts in bpf/offcpu.h). Pure:
// unit-tested without a kernel.
import type { ThreadState } from '../../protocol/profile';
import { cString } from '../bpfObject';
import type { CountEntry } from '../profile/decode';

export const OFFCPU_KEY_SIZE = 40;
export const OFFCPU_VAL_SIZE = 16;
export const OFFCPU_STAT = { switches: 0, blocks: 1, short: 2, lostUserStack: 3, lostKernelStack: 4, lostTotals: 5, lostStart: 6, samples: 7, lost: 8 } as const;
/** OFFCPU_STATE_* by value */
export const OFFCPU_STATES: ThreadState[] = ['oncpu', 'sleep', 'io', 'lock', 'preempted'];

/** One entry of the totals map: a CountEntry (so the profiler's stack helpers take it) plus state and time. */
export interface OffcpuEntry extends CountEntry {
  state: ThreadState;
  totalNs: number;
}

/** struct offcpu_key (40 bytes) + struct offcpu_val (16 bytes) of each dumped map entry. */
export function decodeTotals(keys: Buffer, values: Buffer, count: number): OffcpuEntry[] {
  const out: OffcpuEntry[] = [];
  for (let i = 0; i < count; i++) {
    const k = i * OFFCPU_KEY_SIZE;
    const v = i * OFFCPU_VAL_SIZE;
    const state = keys.readUInt32LE(k + 16);
    out.push({
      pid: keys.readUInt32LE(k),
      tid: keys.readUInt32LE(k + 4),
      userStackId: keys.readInt32LE(k + 8),
      kernStackId: keys.readInt32LE(k + 12),
      state: OFFCPU_STATES[state] ?? 'sleep',
      comm: cString(keys, k + 24, 16),
      totalNs: Number(values.readBigUInt64LE(v)),
      count: Number(values.readBigUInt64LE(v + 8)),
    });
  }
  return out;
}
