// Decoders for what bpf/offcpu.bpf.c leaves in its maps (layouts in bpf/offcpu.h). Pure:
// unit-tested without a kernel.
import type { ThreadState } from '../../protocol/profile';
import { cString } from '../bpfObject';
import type { CountEntry } from '../profile/decode';

export const OFFCPU_KEY_SIZE = 40;
export const OFFCPU_VAL_SIZE = 16;
export const OFFCPU_STAT = { switches: 0, blocks: 1, short: 2, lostUserStack: 3, lostKernelStack: 4, lostTotals: 5, lostStart: 6, samples: 7, lost: 8, java: 9, walks: 10, reused: 11, checks: 12, mismatch: 13, uncached: 14 } as const;
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

export const OFFCPU_START_SIZE = 72;
/** struct offcpu_thread_rec: tid, pid, then struct offcpu_start (what the dump_threads iterator writes per thread). */
export const OFFCPU_THREAD_REC_SIZE = 8 + OFFCPU_START_SIZE;

/** The open interval of each thread record (struct offcpu_start at offset 8); threads on CPU (ts 0) have none and are left out. */
export function decodeStarts(records: Buffer): { tid: number; ts: bigint; userStackId: number; kernStackId: number; state: ThreadState }[] {
  const out = [];
  for (let r = 0; r + OFFCPU_THREAD_REC_SIZE <= records.length; r += OFFCPU_THREAD_REC_SIZE) {
    const v = r + 8;
    if (records.readBigUInt64LE(v) === 0n) continue;
    out.push({ tid: records.readUInt32LE(r), ts: records.readBigUInt64LE(v), userStackId: records.readInt32LE(v + 8), kernStackId: records.readInt32LE(v + 12), state: OFFCPU_STATES[records.readUInt32LE(v + 16)] ?? 'sleep' });
  }
  return out;
}

/** The running totals each thread record holds (struct offcpu_start's agg_* fields: intervals not yet added to the totals map), as totals entries. */
export function decodeHeld(records: Buffer): OffcpuEntry[] {
  const out: OffcpuEntry[] = [];
  for (let r = 0; r + OFFCPU_THREAD_REC_SIZE <= records.length; r += OFFCPU_THREAD_REC_SIZE) {
    const v = r + 8;
    const n = Number(records.readBigUInt64LE(v + 32));
    if (n === 0) continue;
    out.push({
      pid: records.readUInt32LE(v + 52),
      tid: records.readUInt32LE(r),
      userStackId: records.readInt32LE(v + 40),
      kernStackId: records.readInt32LE(v + 44),
      state: OFFCPU_STATES[records.readUInt32LE(v + 48)] ?? 'sleep',
      comm: cString(records, v + 56, 16),
      totalNs: Number(records.readBigUInt64LE(v + 24)),
      count: n,
    });
  }
  return out;
}

/** Totals entries with the held running totals added (same pid, tid, stacks, state and comm: the same key of the totals map). */
export function addHeld(entries: OffcpuEntry[], held: OffcpuEntry[]): OffcpuEntry[] {
  const key = (e: OffcpuEntry) => `${e.pid}/${e.tid}/${e.userStackId}/${e.kernStackId}/${e.state}/${e.comm}`;
  const out = entries.map((e) => ({ ...e }));
  const byKey = new Map(out.map((e) => [key(e), e]));
  for (const h of held) {
    const e = byKey.get(key(h));
    if (e) {
      e.totalNs += h.totalNs;
      e.count += h.count;
    } else {
      const n = { ...h };
      byKey.set(key(n), n);
      out.push(n);
    }
  }
  return out;
}

/** Adds the intervals still open when tracing stops (a thread off CPU since its last switch-out) to the totals. */
export function addOpenIntervals(entries: OffcpuEntry[], open: { tid: number; pid: number; comm: string; ns: number; userStackId: number; kernStackId: number; state: ThreadState }[]): OffcpuEntry[] {
  const key = (e: { pid: number; tid: number; userStackId: number; kernStackId: number; state: ThreadState }) => `${e.pid}/${e.tid}/${e.userStackId}/${e.kernStackId}/${e.state}`;
  const byKey = new Map(entries.map((e) => [key(e), e]));
  const out = [...entries];
  for (const o of open) {
    const e = byKey.get(key(o));
    if (e) {
      e.totalNs += o.ns;
      e.count++;
    } else {
      const n: OffcpuEntry = { pid: o.pid, tid: o.tid, userStackId: o.userStackId, kernStackId: o.kernStackId, comm: o.comm, state: o.state, totalNs: o.ns, count: 1 };
      byKey.set(key(n), n);
      out.push(n);
    }
  }
  return out;
}

/** A thread's state letter (/proc/T/stat) as why it is off CPU; undefined when it runs. */
export function stateOfLetter(letter: string): ThreadState | undefined {
  if (letter === 'R') return undefined;
  if (letter === 'D') return 'io';
  return 'sleep';
}

/** /proc/P/task/T/stack ("[<0>] do_nanosleep+0x6c/0x170" per line, leaf first) → function names. */
export function parseProcStack(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /\]\s+([^+\s]+)/.exec(line);
    if (m) out.push(m[1]);
  }
  return out;
}

export const OFFCPU_JAVA_SIZE = 40;

/** struct offcpu_java: an interval held until sys_exit and sent with the thread's signal. */
export interface OffcpuJavaRecord {
  ktimeNs: bigint;
  totalNs: number;
  tid: number;
  nsTid: number;
  userStackId: number;
  kernStackId: number;
  state: ThreadState;
  count: number;
}

export function decodeJavaRecord(b: Buffer): OffcpuJavaRecord {
  if (b.length < OFFCPU_JAVA_SIZE) throw new Error(`offcpu Java record of ${b.length} bytes is shorter than ${OFFCPU_JAVA_SIZE}`);
  return {
    ktimeNs: b.readBigUInt64LE(0),
    totalNs: Number(b.readBigUInt64LE(8)),
    tid: b.readUInt32LE(16),
    nsTid: b.readUInt32LE(20),
    userStackId: b.readInt32LE(24),
    kernStackId: b.readInt32LE(28),
    state: OFFCPU_STATES[b.readUInt32LE(32)] ?? 'sleep',
    count: b.readUInt32LE(36),
  };
}
