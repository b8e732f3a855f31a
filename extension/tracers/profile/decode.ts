// Decoders for what bpf/profile.bpf.c leaves in its maps (layouts in bpf/profile.h), and the
// online-CPU list the perf events are opened on. Pure: unit-tested without a kernel.
import { cString } from '../bpfObject';

export const PROFILE_KEY_SIZE = 32;
export const PROFILE_STAT = { samples: 0, lostUserStack: 1, lostKernelStack: 2, lostCounts: 3, lost: 4, samplesDwarf: 5, lostRingbuf: 6, noUserRegs: 7 } as const;
export const PROFILE_STAT_COUNT = 8;
const EEXIST = 17;
const ENOMEM = 12;

/** struct profile_key (bpf/profile.h), 32 bytes */
export interface ProfileKey {
  pid: number;
  tid: number;
  userStackId: number;
  kernStackId: number;
  comm: string;
}

export function decodeProfileKey(b: Buffer, off = 0): ProfileKey {
  return {
    pid: b.readUInt32LE(off),
    tid: b.readUInt32LE(off + 4),
    userStackId: b.readInt32LE(off + 8),
    kernStackId: b.readInt32LE(off + 12),
    comm: cString(b, off + 16, 16),
  };
}

export interface CountEntry extends ProfileKey {
  count: number;
}

/** Entries of a mapDump of the counts map (keys back to back, u64 values back to back). */
export function decodeCounts(keys: Buffer, values: Buffer, count: number): CountEntry[] {
  const out: CountEntry[] = [];
  for (let i = 0; i < count; i++) out.push({ ...decodeProfileKey(keys, i * PROFILE_KEY_SIZE), count: Number(values.readBigUInt64LE(i * 8)) });
  return out;
}

/** A stack id < 0 is an errno: says whether a stack existed but was dropped (vs. never existed). */
export function stackIdLost(id: number): boolean {
  return id === -EEXIST || id === -ENOMEM;
}

/** Parses /sys/devices/system/cpu/online ("0-3,6,8-9"). */
export function parseCpuList(text: string): number[] {
  const out: number[] = [];
  for (const part of text.trim().split(',')) {
    if (!part) continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`unexpected CPU list "${text.trim()}"`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    for (let c = a; c <= b; c++) out.push(c);
  }
  return out;
}

export function hex(addr: bigint | number): string {
  return `0x${addr.toString(16)}`;
}
