// One CFI unwinder (addon Unwinder, libdw) per process, shared by every tracer that copies user
// stacks for unwinding in user space (the profiler's dwarf mode; memleak's uprobe mode with
// --unwind dwarf). Each process's modules are parsed once; its mappings are re-read when a pc
// falls outside every known module (dlopen), at most every REFRESH_MS.
import fs from 'node:fs';
import type { Unwinder, UnwindModule } from '../../native/index';
import type { Addon } from '../sys/addon';

const REFRESH_MS = 500;

export interface UnwindStats {
  /** stacks unwound */
  unwound: number;
  /** unwinds that ran out of copied stack before the outermost frame */
  truncated: number;
  /** stacks of processes that had exited before we could read their mappings */
  noProcess: number;
  /** summed time in the unwinder, ns */
  unwindNs: bigint;
}

export interface Unwound {
  /** leaf first: the pc, then return addresses */
  frames: BigUint64Array;
  truncated: boolean;
  /** no unwinder for the process (gone, or its mappings unreadable): frames hold the pc alone */
  noProcess: boolean;
  /** why, when noProcess */
  reason?: string;
}

interface Entry {
  u: Unwinder | null;
  reason?: string;
  refreshed: number;
  starts: bigint[];
  ends: bigint[];
}

export class UnwinderPool {
  readonly stats: UnwindStats = { unwound: 0, truncated: 0, noProcess: 0, unwindNs: 0n };
  private readonly byPid = new Map<number, Entry>();

  constructor(
    private readonly addon: Addon,
    private readonly log: (m: string) => void,
  ) {}

  private entry(pid: number): Entry {
    let e = this.byPid.get(pid);
    if (!e) {
      let u: Unwinder | null = null;
      let reason: string | undefined;
      try {
        u = new this.addon.Unwinder(pid);
      } catch (err) {
        this.log(`no unwinder for pid ${pid}: ${(err as Error).message}`);
        const why = (err as Error).message.replace(/^new Unwinder\(\d+\): /, '');
        const gone = !fs.existsSync(`/proc/${pid}`) || /No such process|Exec format error/.test(why);
        reason = gone ? 'the process exited or exec\'d first' : process.geteuid?.() === 0 ? `its modules could not be read (${why})` : `its mappings are unreadable without root (${why})`;
      }
      e = { u, reason, refreshed: Date.now(), starts: [], ends: [] };
      index(e);
      this.byPid.set(pid, e);
    }
    return e;
  }

  /**
   * Reads a process's mappings now, while it surely lives: stacks copied just before it exits are
   * unwound after it is gone, from the module list read here and the files on disk.
   */
  prime(pid: number): void {
    this.entry(pid);
  }

  /** The modules of a process as its unwinder sees them (doctor, the view). */
  modules(pid: number): UnwindModule[] {
    return this.entry(pid).u?.modules() ?? [];
  }

  /** regs: 17 u64 (x86_64 DWARF order, rip = regs[16]); stack: the bytes copied from regs[7]. */
  unwind(pid: number, tid: number, regs: Buffer, stack: Buffer): Unwound {
    const ip = regs.readBigUInt64LE(16 * 8);
    const e = this.entry(pid);
    if (!e.u) {
      this.stats.noProcess++;
      return { frames: BigUint64Array.of(ip), truncated: false, noProcess: true, reason: e.reason };
    }
    if (!covered(e.starts, e.ends, ip) && Date.now() - e.refreshed > REFRESH_MS) {
      e.refreshed = Date.now();
      if (e.u.refresh()) index(e);
    }
    const t0 = process.hrtime.bigint();
    let r = e.u.unwind(tid, regs, stack);
    // Stopped at a pc no known module covers (a library mapped since the last read): read the
    // mappings again and retry once.
    const last = r.frames[r.frames.length - 1];
    if (r.frames.length > 0 && !covered(e.starts, e.ends, last) && Date.now() - e.refreshed > REFRESH_MS) {
      e.refreshed = Date.now();
      if (e.u.refresh()) {
        index(e);
        if (covered(e.starts, e.ends, last)) r = e.u.unwind(tid, regs, stack);
      }
    }
    this.stats.unwindNs += process.hrtime.bigint() - t0;
    this.stats.unwound++;
    if (r.truncated) this.stats.truncated++;
    return { frames: r.frames, truncated: r.truncated, noProcess: false };
  }

  /**
   * unwind() without a result object or typed array per stack: writes at most out.length frames
   * into out and returns their number (the pc alone, 1, without an unwinder for the process).
   * For the tens of thousands of stacks a second memleak's dwarf mode unwinds.
   */
  unwindInto(pid: number, tid: number, regs: Buffer, stack: Buffer, out: BigUint64Array): number {
    const e = this.entry(pid);
    if (!e.u) {
      this.stats.noProcess++;
      out[0] = regs.readBigUInt64LE(16 * 8);
      return 1;
    }
    const ip = regs.readBigUInt64LE(16 * 8);
    if (!covered(e.starts, e.ends, ip) && Date.now() - e.refreshed > REFRESH_MS) {
      e.refreshed = Date.now();
      if (e.u.refresh()) index(e);
    }
    const t0 = process.hrtime.bigint();
    let n = e.u.unwindInto(tid, regs, stack, out);
    const last = out[n - 1];
    if (!covered(e.starts, e.ends, last) && Date.now() - e.refreshed > REFRESH_MS) {
      e.refreshed = Date.now();
      if (e.u.refresh()) {
        index(e);
        if (covered(e.starts, e.ends, last)) n = e.u.unwindInto(tid, regs, stack, out);
      }
    }
    this.stats.unwindNs += process.hrtime.bigint() - t0;
    this.stats.unwound++;
    if (e.u.truncated) this.stats.truncated++;
    return n;
  }

  /** Mean unwind time per stack, ns (undefined before the first). */
  nsPerStack(): number | undefined {
    return this.stats.unwound ? Number(this.stats.unwindNs / BigInt(this.stats.unwound)) : undefined;
  }

  close(): void {
    for (const e of this.byPid.values()) e.u?.close();
    this.byPid.clear();
  }
}

function index(e: Entry): void {
  if (!e.u) return;
  const mods = e.u.modules().sort((a, b) => (a.start < b.start ? -1 : 1));
  e.starts = mods.map((m) => m.start);
  e.ends = mods.map((m) => m.end);
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
