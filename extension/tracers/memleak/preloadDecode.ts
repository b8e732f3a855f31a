// Decoder of the report file the leak interposer keeps (mirrors native/preload/leak_table.h):
// header, outstanding table and interned stacks. Pure: the
// session (memleakPreload.ts) does the file I/O, unit tests feed it buffers.
import type { AllocRecord } from './decode';

export const LEAK_MAGIC = 0x4b41454c53504245n;
export const LEAK_VERSION = 1;
export const HEADER_SIZE = 256;
export const SLOT_SIZE = 32;
export const STATE_OFFSET = 152;
export const STATE = { running: 0, exiting: 1, released: 2 } as const;

export interface LeakHeader {
  version: number;
  pid: number;
  slots: number;
  slotsOff: number;
  stackSlots: number;
  indexOff: number;
  maxStacks: number;
  dirOff: number;
  maxFrames: number;
  framesOff: number;
  stacksUsed: number;
  framesUsed: number;
  allocs: number;
  frees: number;
  tableFull: number;
  stackLost: number;
  state: number;
  /** 1 libunwind, 2 libgcc */
  unwinder: number;
  startedNs: bigint;
}

/** The header, or undefined while the file is not (yet) one of ours. */
export function decodeHeader(b: Buffer): LeakHeader | undefined {
  if (b.length < HEADER_SIZE || b.readBigUInt64LE(0) !== LEAK_MAGIC) return undefined;
  const u = (o: number) => Number(b.readBigUInt64LE(o));
  return {
    version: b.readUInt32LE(8),
    pid: b.readUInt32LE(12),
    slots: u(16),
    slotsOff: u(24),
    stackSlots: u(32),
    indexOff: u(40),
    maxStacks: u(48),
    dirOff: u(56),
    maxFrames: u(64),
    framesOff: u(72),
    stacksUsed: u(80),
    framesUsed: u(88),
    allocs: u(120),
    frees: u(128),
    tableFull: u(136),
    stackLost: u(144),
    state: b.readUInt32LE(152),
    unwinder: b.readUInt32LE(156),
    startedNs: b.readBigUInt64LE(160),
  };
}

/** Occupied slots of the outstanding table (struct leak_slot, 32 bytes: addr, size, time, stack). */
export function decodeSlots(b: Buffer): AllocRecord[] {
  const out: AllocRecord[] = [];
  for (let o = 0; o + SLOT_SIZE <= b.length; o += SLOT_SIZE) {
    // addr is non-zero for a record; a cheap two-word test skips the (mostly empty) rest
    if (b.readUInt32LE(o) === 0 && b.readUInt32LE(o + 4) === 0) continue;
    out.push({ address: b.readBigUInt64LE(o), size: Number(b.readBigUInt64LE(o + 8)), timestampNs: b.readBigUInt64LE(o + 16), stackId: Number(b.readBigInt64LE(o + 24)) });
  }
  return out;
}

/** Stack `id`'s return addresses, leaf first, from the directory (8 bytes each) and the frame pool. */
export function stackOf(dir: Buffer, framesBuf: Buffer, id: number): bigint[] {
  if (id < 0 || (id + 1) * 8 > dir.length) return [];
  const first = dir.readUInt32LE(id * 8);
  const depth = dir.readUInt32LE(id * 8 + 4);
  const out: bigint[] = [];
  for (let k = 0; k < depth && (first + k + 1) * 8 <= framesBuf.length; k++) out.push(framesBuf.readBigUInt64LE((first + k) * 8));
  return out;
}
