// Decoders of the records bpf/java-gc.bpf.c sends through its ring buffers (layouts in
// bpf/java-gc.h): one event per collection, one per safepoint. Pure: unit-tested without a kernel.
import type { JavaGcEvent, JavaGcKind, JavaGcPauseCounts, JavaGcPool, JavaSafepoint } from '../../protocol/javaGc';
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
export const CTR_HIST_FULL = 5;
/** Metrics-only histograms (bpf/java-gc.h): bucket upper bounds, 1-2-5 steps from 10 µs to 10 s. */
export const JAVA_GC_HIST_EDGES_NS = [1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10];
export const JAVA_GC_HIST_SLOTS = JAVA_GC_HIST_EDGES_NS.length + 1;
export const JAVA_GC_HIST_KEY_SIZE = 92;
export const JAVA_GC_HIST_VALUE_SIZE = 168;
const HIST_SAFEPOINT = 1;

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

/**
 * The entries of the `hists` map (keys and values back to back, as a map dump gives them), one
 * per JVM and collector (or per JVM for safepoints): entries that name the same collector (a
 * pause run by another VM operation) are added up.
 */
export function decodeHistEntries(keys: Buffer, values: Buffer, count: number): JavaGcPauseCounts[] {
  if (count && (keys.length !== count * JAVA_GC_HIST_KEY_SIZE || values.length !== count * JAVA_GC_HIST_VALUE_SIZE))
    throw new Error(`java-gc histogram entries are ${keys.length / count} + ${values.length / count} bytes, expected ${JAVA_GC_HIST_KEY_SIZE} + ${JAVA_GC_HIST_VALUE_SIZE}: dist/bpf/java-gc.bpf.o and the decoder disagree (rebuild)`);
  const out = new Map<string, JavaGcPauseCounts>();
  for (let i = 0; i < count; i++) {
    const k = keys.subarray(i * JAVA_GC_HIST_KEY_SIZE, (i + 1) * JAVA_GC_HIST_KEY_SIZE);
    const v = values.subarray(i * JAVA_GC_HIST_VALUE_SIZE, (i + 1) * JAVA_GC_HIST_VALUE_SIZE);
    const pid = k.readUInt32LE(0);
    const safepoint = k.readUInt32LE(4) === HIST_SAFEPOINT;
    const named: { collector?: string; kind?: JavaGcKind } = safepoint ? {} : classify(cString(k, 8, JAVA_GC_MANAGER_LEN), cString(k, 40, JAVA_GC_VMOP_LEN), false);
    const id = safepoint ? `${pid}` : `${pid}\u0000${named.collector}\u0000${named.kind}`;
    let e = out.get(id);
    if (!e) out.set(id, (e = { pid, what: safepoint ? 'safepoint' : 'pause', ...named, counts: new Array<number>(JAVA_GC_HIST_SLOTS).fill(0), sumNs: 0 }));
    for (let s = 0; s < JAVA_GC_HIST_SLOTS; s++) e.counts[s] += Number(v.readBigUInt64LE(s * 8));
    e.sumNs += Number(v.readBigUInt64LE(JAVA_GC_HIST_SLOTS * 8));
  }
  return [...out.values()];
}
