// Decoders of the records bpf/java-gc.bpf.c sends through its ring buffers (layouts in
// bpf/java-gc.h): one event per collection, one per safepoint. Pure: unit-tested without a kernel.
import type { JavaGcEvent, JavaGcPool, JavaSafepoint } from '../../protocol/javaGc';
import { classify } from '../../model/javaGcKinds';
import { cString } from '../bpfObject';

export const JAVA_GC_MAX_POOLS = 16;
export const JAVA_GC_POOL_NAME_LEN = 48;
export const JAVA_GC_POOL_SIZE = 88;
export const JAVA_GC_HEADER_SIZE = 144;
export const JAVA_GC_MANAGER_LEN = 32;
export const JAVA_GC_VMOP_LEN = 48;
export const JAVA_SAFEPOINT_EVENT_SIZE = 80;
export const EV_CYCLE = 1;
export const JAVA_GC_EVENT_SIZE = JAVA_GC_HEADER_SIZE + JAVA_GC_MAX_POOLS * JAVA_GC_POOL_SIZE;
export const POOL_HAS_BEFORE = 1;
export const POOL_HAS_AFTER = 2;
/** indexes of the `counters` array map */
export const CTR_RINGBUF_FULL = 0;
export const CTR_INFLIGHT_FULL = 1;
export const CTR_POOLS_FULL = 2;
export const CTR_SAFEPOINT_LOST = 3;
export const CTR_EXECS_FULL = 4;

export interface RawGcPool {
  namePtr: bigint;
  usedBefore: bigint;
  usedAfter: bigint;
  committedAfter: bigint;
  flags: number;
  name: string;
}

export interface RawGcEvent {
  startNs: bigint;
  durationNs: bigint;
  pid: number;
  tid: number;
  cpu: number;
  full: boolean;
  cycle: boolean;
  seq: number;
  pauseStartNs: bigint;
  manager: string;
  vmop: string;
  pools: RawGcPool[];
}

export function decodeRawGcEvent(b: Buffer): RawGcEvent {
  if (b.length < JAVA_GC_EVENT_SIZE) throw new Error(`java-gc record is ${b.length} bytes, expected ${JAVA_GC_EVENT_SIZE}: dist/bpf/java-gc.bpf.o and the decoder disagree (rebuild)`);
  const npools = Math.min(b.readUInt32LE(48), JAVA_GC_MAX_POOLS);
  const pools: RawGcPool[] = [];
  for (let i = 0; i < npools; i++) {
    const o = JAVA_GC_HEADER_SIZE + i * JAVA_GC_POOL_SIZE;
    pools.push({
      namePtr: b.readBigUInt64LE(o),
      usedBefore: b.readBigUInt64LE(o + 8),
      usedAfter: b.readBigUInt64LE(o + 16),
      committedAfter: b.readBigUInt64LE(o + 24),
      flags: b.readUInt32LE(o + 32),
      name: cString(b, o + 40, JAVA_GC_POOL_NAME_LEN),
    });
  }
  return {
    startNs: b.readBigUInt64LE(0),
    durationNs: b.readBigUInt64LE(8),
    pauseStartNs: b.readBigUInt64LE(16),
    pid: b.readUInt32LE(32),
    tid: b.readUInt32LE(36),
    cpu: b.readUInt32LE(40),
    full: b.readUInt8(44) !== 0,
    cycle: (b.readUInt8(45) & EV_CYCLE) !== 0,
    seq: b.readUInt8(46),
    manager: cString(b, 64, JAVA_GC_MANAGER_LEN),
    vmop: cString(b, 96, JAVA_GC_VMOP_LEN),
    pools,
  };
}

/** The JSON event; pools seen only half (begin or end missing) are left out. */
export function decodeJavaGcEvent(b: Buffer): JavaGcEvent {
  const r = decodeRawGcEvent(b);
  const pools: JavaGcPool[] = r.pools
    .filter((p) => (p.flags & (POOL_HAS_BEFORE | POOL_HAS_AFTER)) === (POOL_HAS_BEFORE | POOL_HAS_AFTER))
    .map((p) => ({ name: p.name || '?', usedBefore: Number(p.usedBefore), usedAfter: Number(p.usedAfter), committedAfter: Number(p.committedAfter) }));
  const { collector, kind } = classify(r.manager, r.vmop, r.cycle);
  return {
    pid: r.pid,
    tid: r.tid,
    cpu: r.cpu,
    timestampNs: Number(r.startNs),
    durationNs: Number(r.durationNs),
    collector,
    kind,
    operation: r.cycle ? '' : r.vmop,
    escalated: r.seq > 0,
    full: kind === 'full',
    pools,
  };
}

export function decodeSafepoint(b: Buffer): JavaSafepoint {
  if (b.length < JAVA_SAFEPOINT_EVENT_SIZE) throw new Error(`java-gc safepoint record is ${b.length} bytes, expected ${JAVA_SAFEPOINT_EVENT_SIZE}: dist/bpf/java-gc.bpf.o and the decoder disagree (rebuild)`);
  return {
    timestampNs: Number(b.readBigUInt64LE(0)),
    timeToSafepointNs: Number(b.readBigUInt64LE(8)),
    durationNs: Number(b.readBigUInt64LE(16)),
    pid: b.readUInt32LE(24),
    tid: b.readUInt32LE(28),
    operation: cString(b, 32, JAVA_GC_VMOP_LEN),
  };
}
