// DWARF (CFI) mode of the CPU profiler: decodes the ring-buffer samples of bpf/profile.bpf.c
// (mirrors struct profile_sample in bpf/profile.h), unwinds each user stack copy with the addon's
// libdw Unwinder (one per process, its modules' CFI parsed once), and counts identical stacks so
// the rest of the profiler (symbolization, assembly) sees the same RawStack shape as in
// frame-pointer mode.
import type { Unwinder } from '../../native/index';
import type { Addon } from '../native/addon';
import { cString } from './bpfObject';
import type { RawStack } from './profileStacks';

export const PROFILE_NREGS = 17;
export const PROFILE_SAMPLE_HEADER_SIZE = 176;
export const PROFILE_MAX_STACK_COPY = 32768;
/** What one sample copies by default: measured to reach main/thread start (issue 13 note, bench "profile unwind"). */
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

export interface DwarfStats {
  /** samples unwound */
  unwound: number;
  /** unwinds that ran out of copied stack before the outermost frame */
  truncated: number;
  /** samples of processes that had exited before we could read their mappings */
  noProcess: number;
  /** summed time in the unwinder, ns */
  unwindNs: bigint;
}

/** Refresh a process's mappings at most this often when a pc falls outside every known module. */
const REFRESH_MS = 500;

export class DwarfAggregator {
  readonly stats: DwarfStats = { unwound: 0, truncated: 0, noProcess: 0, unwindNs: 0n };
  private readonly buckets = new Map<string, Bucket>();
  private readonly unwinders = new Map<number, { u: Unwinder | null; refreshed: number; starts: bigint[]; ends: bigint[] }>();

  constructor(
    private readonly addon: Addon,
    private readonly stackCopyBytes: number,
    private readonly log: (m: string) => void,
  ) {}

  private unwinderFor(pid: number) {
    let e = this.unwinders.get(pid);
    if (!e) {
      let u: Unwinder | null = null;
      try {
        u = new this.addon.Unwinder(pid);
      } catch (err) {
        this.log(`profile: no unwinder for pid ${pid}: ${(err as Error).message}`);
      }
      e = { u, refreshed: Date.now(), starts: [], ends: [] };
      this.indexModules(e);
      this.unwinders.set(pid, e);
    }
    return e;
  }

  private indexModules(e: { u: Unwinder | null; starts: bigint[]; ends: bigint[] }) {
    if (!e.u) return;
    const mods = e.u.modules().sort((a, b) => (a.start < b.start ? -1 : 1));
    e.starts = mods.map((m) => m.start);
    e.ends = mods.map((m) => m.end);
  }

  /** The modules of a process as its unwinder sees them (for doctor and the view). */
  modules(pid: number) {
    return this.unwinderFor(pid).u?.modules() ?? [];
  }

  add(rec: Buffer): void {
    const s = decodeSample(rec);
    let user: BigUint64Array;
    let note: string | undefined;
    const ip = sampleIp(s);
    if (ip === 0n) {
      user = new BigUint64Array(0); // kernel thread: no user stack
    } else {
      const e = this.unwinderFor(s.pid);
      if (!e.u) {
        this.stats.noProcess++;
        user = BigUint64Array.of(ip);
        note = '[process exited before its stack was unwound]';
      } else {
        if (!covered(e.starts, e.ends, ip) && Date.now() - e.refreshed > REFRESH_MS) {
          e.refreshed = Date.now();
          if (e.u.refresh()) this.indexModules(e);
        }
        const t0 = process.hrtime.bigint();
        const r = e.u.unwind(s.tid, s.regs, s.stack);
        this.stats.unwindNs += process.hrtime.bigint() - t0;
        this.stats.unwound++;
        user = r.frames;
        if (r.truncated) {
          this.stats.truncated++;
          note = s.stack.length >= this.stackCopyBytes ? `[stack deeper than the ${this.stackCopyBytes / 1024} KiB copied: raise --stack-copy-kb]` : undefined;
        }
      }
    }
    const key = `${s.pid}/${s.tid}/${s.comm}/${s.kernStackId}/${user.join(',')}/${note ?? ''}`;
    const b = this.buckets.get(key);
    if (b) b.count++;
    else this.buckets.set(key, { pid: s.pid, tid: s.tid, comm: s.comm, kernStackId: s.kernStackId, user, note, count: 1 });
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
    for (const e of this.unwinders.values()) e.u?.close();
    this.unwinders.clear();
  }
}

function covered(starts: bigint[], ends: bigint[], pc: bigint): boolean {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (pc < starts[mid]) hi = mid - 1;
    else if (pc >= ends[mid]) lo = mid + 1;
    else return true;
  }
  return false;
}
