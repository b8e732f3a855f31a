// DWARF (CFI) mode of the CPU profiler: decodes the ring-buffer samples of bpf/profile.bpf.c
// (mirrors struct profile_sample in bpf/profile.h), unwinds each user stack copy with the addon's
// libdw Unwinder (one per process, its modules' CFI parsed once), and counts identical stacks so
// the rest of the profiler (symbolization, assembly) sees the same RawStack shape as in
// frame-pointer mode.
import type { Addon } from '../../sys/addon';
import { UnwinderPool } from '../unwinderPool';
import { cString } from '../bpfObject';
import type { RawStack } from './stacks';

export const PROFILE_NREGS = 17;
export const PROFILE_SAMPLE_HEADER_SIZE = 184;
export const PROFILE_MAX_STACK_COPY = 32768;
/** What one sample copies by default: measured to reach main/thread start (bench "profile unwind"). */
export const PROFILE_DEFAULT_STACK_COPY = 16384;
const REG_IP = 16;
const REG_SP = 7;

/** struct profile_sample (bpf/profile.h): the fixed header; `stack` is a view of the copied bytes. */
export interface DwarfSample {
  ts: bigint;
  pid: number;
  tid: number;
  kernStackId: number;
  comm: string;
  /** the tid in the thread's own pid namespace (0 = unknown): the Java agent's join key in a container */
  nsTid: number;
  /** 17 u64, DWARF order, as a Buffer view (136 bytes) */
  regs: Buffer;
  stack: Buffer;
}

export function decodeSample(rec: Buffer): DwarfSample {
  if (rec.length < PROFILE_SAMPLE_HEADER_SIZE) throw new Error(`profile sample of ${rec.length} bytes is shorter than its ${PROFILE_SAMPLE_HEADER_SIZE}-byte header`);
  const stackLen = rec.readUInt32LE(20);
  return {
    ts: rec.readBigUInt64LE(0),
    pid: rec.readUInt32LE(8),
    tid: rec.readUInt32LE(12),
    kernStackId: rec.readInt32LE(16),
    comm: cString(rec, 24, 16),
    regs: rec.subarray(40, 40 + PROFILE_NREGS * 8),
    nsTid: rec.readUInt32LE(176),
    stack: rec.subarray(PROFILE_SAMPLE_HEADER_SIZE, PROFILE_SAMPLE_HEADER_SIZE + Math.min(stackLen, rec.length - PROFILE_SAMPLE_HEADER_SIZE)),
  };
}

export const sampleIp = (s: DwarfSample): bigint => s.regs.readBigUInt64LE(REG_IP * 8);
export const sampleSp = (s: DwarfSample): bigint => s.regs.readBigUInt64LE(REG_SP * 8);

interface Bucket {
  pid: number;
  tid: number;
  comm: string;
  kernStackId: number;
  user: BigUint64Array;
  note?: string;
  count: number;
}

export class DwarfAggregator {
  private readonly buckets = new Map<string, Bucket>();
  readonly pool: UnwinderPool;

  constructor(
    addon: Addon,
    private readonly stackCopyBytes: number,
    log: (m: string) => void,
  ) {
    this.pool = new UnwinderPool(addon, (m) => log(`profile: ${m}`));
  }

  get stats() {
    return this.pool.stats;
  }

  modules(pid: number) {
    return this.pool.modules(pid);
  }

  /** Unwinds and counts one ring-buffer record; returns the sample and its unwound user stack. */
  add(rec: Buffer): { sample: DwarfSample; user: BigUint64Array; note?: string } {
    const s = decodeSample(rec);
    let user: BigUint64Array;
    let note: string | undefined;
    if (sampleIp(s) === 0n) {
      user = new BigUint64Array(0); // kernel thread: no user stack
    } else {
      const r = this.pool.unwind(s.pid, s.tid, s.regs, s.stack);
      user = r.frames;
      if (r.noProcess) note = `[user stack not unwound: ${r.reason ?? 'no mappings'}]`;
      else if (r.truncated && s.stack.length >= this.stackCopyBytes) note = `[stack deeper than the ${this.stackCopyBytes / 1024} KiB copied: raise --stack-copy-kb]`;
    }
    const key = `${s.pid}/${s.tid}/${s.comm}/${s.kernStackId}/${user.join(',')}/${note ?? ''}`;
    const b = this.buckets.get(key);
    if (b) b.count++;
    else this.buckets.set(key, { pid: s.pid, tid: s.tid, comm: s.comm, kernStackId: s.kernStackId, user, note, count: 1 });
    return { sample: s, user, note };
  }

  /** The counted stacks so far, kernel stacks read by id through `readKernel`. */
  raw(readKernel: (id: number) => BigUint64Array): RawStack[] {
    const cache = new Map<number, BigUint64Array>();
    const kernel = (id: number) => {
      if (id < 0) return new BigUint64Array(0);
      let k = cache.get(id);
      if (!k) cache.set(id, (k = readKernel(id)));
      return k;
    };
    return [...this.buckets.values()].map((b) => ({
      entry: { pid: b.pid, tid: b.tid, comm: b.comm, userStackId: b.user.length ? 0 : -14, kernStackId: b.kernStackId, count: b.count },
      user: b.user,
      kernel: kernel(b.kernStackId),
      note: b.note,
    }));
  }

  close(): void {
    this.pool.close();
  }
}
