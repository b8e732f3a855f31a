// Unwind tables for a whole-host profile (profile --all --unwind cfi): nothing is compiled up
// front. A process gets its executable mappings in cfi_procs when its first sample finds none
// (cfi_wanted, bpf/cfi_walk.bpf.h); each file it maps gets a slot in cfi_files (by device and
// inode, shared by every process that maps it), and a file's table is compiled only once walks
// have met it (its use in cfi_file_use), off the sampling path (one file per event-loop turn),
// the files met most per byte of .eh_frame first, within a CPU budget: a burst at the start, then
// a steady trickle, so a host that keeps starting new programs (compilers, test builds) never
// has the profiler compiling all the time. Until a table lands, walks step through its code by
// frame pointers. Tables live within a memory cap (./cfiBudget.ts): when a newly met file needs
// room, the least recently used idle tables are evicted; a file that finds none stays out and the
// stacks it cuts are counted (cfi_stats CFI_STAT_CUT_BY_CAP), never dropped silently.
import os from 'node:os';
import { CFI_ROW_SIZE } from '../sys/elf/cfiTable';
import { ElfFile } from '../sys/elf/elf';
import { readMaps, type Mapping } from '../sys/proc/maps';
import { reachMapped } from '../sys/proc/mappedFile';
import { pidAlive, readStat } from '../sys/proc/processes';
import type { BpfObject } from '../../native/index';
import { CfiBudget } from './cfiBudget';
import { CfiDiskCache } from './cfiCache';
import { CFI_BLOCK_PAGES, CFI_BLOCK_ROWS, CFI_MAPPING_SIZE, CFI_MAX_MAPPINGS, CFI_PROC_SIZE, compileCached, loadSegments, mappingBias, u32, type CfiTableStats, type Compiled } from './cfiTables';

/** Default table memory cap of a whole-host session: the desktop set of bench cfi-host (node, java, python3, clangd) takes 43 MiB. */
export const CFI_HOST_DEFAULT_MAX_BYTES = 64 << 20;
/** 0.01 MiB: one block of rows and one of page index */
export const CFI_HOST_MIN_MAX_BYTES = Math.ceil(0.01 * 2 ** 20);
export const CFI_HOST_MAX_MAX_BYTES = 1 << 30;
/**
 * Compiling: up to COMPILE_BURST_MS of CPU in the session's first COMPILE_STARTUP_MS (the tables
 * of what runs now), then COMPILE_MS_PER_S_PER_CPU (0.15 % of the machine), saved up to
 * COMPILE_STEADY_MS (one libc-sized file at once; a bigger one overdraws, and the next waits).
 */
const COMPILE_BURST_MS = 3000;
const COMPILE_STARTUP_MS = 5000;
const COMPILE_STEADY_MS = 500;
const COMPILE_MS_PER_S_PER_CPU = 1.5;
/** A table a walk used this recently is never evicted for another's. */
export const CFI_HOST_MIN_IDLE_MS = 2000;
const ROW_BLOCK_BYTES = CFI_BLOCK_ROWS * CFI_ROW_SIZE;
const MAX_SLOTS = 8192;
const MAX_PROCS = 4096;
/** A process whose walks meet code in no mapping we know is re-read at most this often (JIT code maps new pages all the time). */
const REMAP_EVERY_MS = 10_000;
/** bpf/cfi_walk.h CFI_FILE_* */
const FILE_STATE = { loaded: 0, pending: 1, capped: 2, none: 3 } as const;

/** How a cap divides into row blocks and page-index entries (the index takes ~1 % of the rows' bytes measured; 1/32 here, one block at least). */
export function capLayout(capBytes: number): { rowBlocks: number; pageEntries: number } {
  const pageEntries = Math.max(CFI_BLOCK_PAGES, Math.floor(capBytes / 32 / 4 / CFI_BLOCK_PAGES) * CFI_BLOCK_PAGES);
  return { rowBlocks: Math.max(1, Math.floor((capBytes - pageEntries * 4) / ROW_BLOCK_BYTES)), pageEntries };
}

interface HostFile {
  key: string;
  slot: number;
  state: keyof typeof FILE_STATE;
  loads: Compiled['loads'];
  /** a process that maps it and the mapping: how to open it for compiling */
  from: { pid: number; m: Mapping };
  /** .eh_frame bytes: what compiling it costs, roughly (files compile by walks per byte) */
  ehBytes: number;
  /** compiled: rows as struct cfi_row, and the page index (row numbers relative to the file) */
  rows?: Buffer;
  /** rows and page-index entries once compiled (kept when the compiled rows are dropped) */
  nrows: number;
  pageEntries: number;
  pages?: { base: number; idx: Uint32Array };
  unsupported?: Record<string, number>;
  /** ms on the walks' clock (CLOCK_MONOTONIC), 0 = never met */
  lastUse: number;
  /** walks that met it */
  walks: number;
  /** lastUse when the cap last kept it out: placed again only once walks meet it after that */
  cappedUse?: number;
  refs: number;
  /** kept out, its rows dropped, and room found since: the compile loop takes it again */
  recompile?: boolean;
  /** the process it was to be read through has exited: waits for another that maps it */
  orphan?: boolean;
}

export interface HostCfiOptions {
  /** CPUs sampled: the steady compile budget scales with them, as the sampling does */
  cpus?: number;
  /**
   * Whether the log names files (and errors reading them): only for a requester who may see
   * every process's (root). The log reaches the requester, and a whole-host session meets other
   * users' programs; otherwise files are named by device and inode.
   */
  showPaths?: boolean;
  /** walked by frame pointers, no tables: this process */
  selfPid?: number;
  /** keep compiled tables on disk across sessions (root only; ./cfiCache.ts): default true */
  diskCache?: boolean;
}

interface HostProc {
  startTime: number;
  files: Set<string>;
  plannedMs: number;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
/** Rows per .eh_frame byte, at least (0.16–0.18 measured on libc, python3.11, node): a file surely too big for the room is not compiled. */
const MIN_ROWS_PER_EH_BYTE = 0.1;

/** Row blocks and page entries a file's table takes: exact once compiled, else the least it can take. */
function sizeOf(f: { nrows: number; pageEntries: number; ehBytes: number }): [number, number] {
  return f.nrows ? [Math.ceil(f.nrows / CFI_BLOCK_ROWS), f.pageEntries] : [Math.max(1, Math.ceil((f.ehBytes * MIN_ROWS_PER_EH_BYTE) / CFI_BLOCK_ROWS)), 1];
}

export class HostCfiTables {
  private readonly files = new Map<string, HostFile>();
  private readonly bySlot = new Map<number, HostFile>();
  private readonly freeSlots: number[] = [];
  private readonly procs = new Map<number, HostProc>();
  private readonly budget: CfiBudget;
  private readonly layout: { rowBlocks: number; pageEntries: number };
  private pageMirror: Uint32Array;
  private obj?: BpfObject;
  private compiling = false;
  private ticks = 0;
  private told = new Set<string>();
  /** the tick resident tables' use was last read */
  private useReadAt = -1;
  private readonly cpus: number;
  private readonly showPaths: boolean;
  private readonly selfPid: number;
  /** compile budget (ms of CPU) and when it was last topped up */
  private budgetMs = COMPILE_BURST_MS;
  private budgetAt = performance.now();
  private readonly startedAt = performance.now();
  private readonly disk?: CfiDiskCache;
  /** tables read from the disk cache instead of compiled */
  cacheHits = 0;
  fpMappings = 0;
  /** ms spent reading mappings, ELF headers and compiling */
  planMs = 0;

  constructor(
    private readonly log: (m: string) => void,
    readonly capBytes: number,
    opts: HostCfiOptions = {},
  ) {
    this.cpus = opts.cpus ?? os.cpus().length;
    this.showPaths = opts.showPaths ?? false;
    this.selfPid = opts.selfPid ?? process.pid;
    this.layout = capLayout(capBytes);
    if (opts.diskCache !== false) this.disk = CfiDiskCache.open(log);
    this.budget = new CfiBudget(this.layout.rowBlocks, this.layout.pageEntries, CFI_HOST_MIN_IDLE_MS);
    this.pageMirror = new Uint32Array(this.layout.pageEntries);
    for (let s = MAX_SLOTS - 1; s >= 1; s--) this.freeSlots.push(s);
  }

  /** Sets the map sizes on an opened, not yet loaded object: the cap, preallocated. */
  size(obj: BpfObject, stacks: number): void {
    obj.setMaxEntries('cfi_rows', this.layout.rowBlocks);
    obj.setMaxEntries('cfi_pages', this.layout.pageEntries / CFI_BLOCK_PAGES);
    obj.setMaxEntries('cfi_files', MAX_SLOTS);
    obj.setMaxEntries('cfi_file_use', MAX_SLOTS);
    obj.setMaxEntries('cfi_procs', MAX_PROCS);
    obj.setMaxEntries('cfi_stacks', Math.max(1, stacks));
  }

  /** The loaded object the tables go into. */
  attach(obj: BpfObject): void {
    this.obj = obj;
  }

  /** Once a second: processes asked for, use stamps read, files met compiled (in the background) or placed again, exited processes dropped. */
  tick(closed: () => boolean): void {
    const obj = this.obj;
    if (!obj) return;
    const t0 = performance.now();
    try {
      this.readWanted(obj);
      this.readUse(obj);
      if (++this.ticks % 5 === 0) this.reap(obj);
      this.retryCapped(obj);
    } finally {
      this.planMs += performance.now() - t0;
    }
    if (!this.compiling) {
      this.compiling = true;
      this.compileMet(obj, closed)
        .catch((e: Error) => this.log(`cfi: compiling tables: ${this.showPaths ? e.message : e.name}`))
        .finally(() => (this.compiling = false));
    }
  }

  private readWanted(obj: BpfObject): void {
    const d = obj.mapDump('cfi_wanted', { delete: true });
    const now = nowMs();
    // a process asked for again (new code mapped, or its entry found no room) is re-read at most every REMAP_EVERY_MS
    for (let i = 0; i < d.count; i++) {
      const pid = d.keys.readUInt32LE(i * 4);
      const p = this.procs.get(pid);
      const fresh = !p || readStat(pid)?.startTime !== p.startTime;
      if (fresh || now - p.plannedMs >= REMAP_EVERY_MS) this.planProcess(obj, pid);
    }
  }

  /**
   * The use of files waiting for a table (pending, kept out), slot by slot: a batch read of the
   * whole array costs the kernel ~0.5 µs an entry, used or not. Loaded files' use matters only
   * when a table must make room: read then (freshUse).
   */
  private readUse(obj: BpfObject, loaded = false): void {
    for (const [slot, f] of this.bySlot) {
      if (f.state === 'none' || (f.state === 'loaded') !== loaded) continue;
      const v = obj.mapLookup('cfi_file_use', u32(slot));
      const ns = v ? v.readBigUInt64LE(0) : 0n;
      if (!ns) continue;
      f.lastUse = Number(ns) / 1e6;
      f.walks = Number(v!.readBigUInt64LE(8));
    }
  }

  /** Resident tables' use read now (once a tick at most), before deciding which to evict. */
  private freshUse(obj: BpfObject): void {
    if (this.useReadAt === this.ticks) return;
    this.useReadAt = this.ticks;
    this.readUse(obj, true);
  }

  /** Reads pid's executable mappings and writes them, each with its file's slot, into cfi_procs. */
  private planProcess(obj: BpfObject, pid: number): void {
    const st = readStat(pid);
    if (!st) return;
    let maps: Mapping[];
    try {
      maps = readMaps(pid);
    } catch (e) {
      this.once(`maps ${pid}`, `cfi: cannot read /proc/${pid}/maps: ${(e as Error).message}; its stacks are walked by frame pointers`);
      this.procs.set(pid, { startTime: st.startTime, files: new Set(), plannedMs: nowMs() });
      return;
    }
    const files = new Set<string>();
    const out: { start: bigint; end: bigint; bias: bigint; slot: number }[] = [];
    for (const m of maps) {
      if (m.perms[2] !== 'x' || m.path === '[vsyscall]') continue;
      // the profiler's own stacks are walked by frame pointers: tables for them would only unwind this work
      const f = pid === this.selfPid ? undefined : this.fileFor(pid, m);
      const bias = f ? mappingBias(f.loads, m) : undefined;
      if (f && bias !== undefined) {
        files.add(f.key);
        f.from = { pid, m };
        f.orphan = false;
        out.push({ start: m.start, end: m.end, bias, slot: f.slot });
      } else {
        this.fpMappings++;
        out.push({ start: m.start, end: m.end, bias: 0n, slot: 0 });
      }
    }
    out.sort((a, b) => (a.start < b.start ? -1 : 1));
    this.setRefs(pid, files);
    this.procs.set(pid, { startTime: st.startTime, files, plannedMs: nowMs() });
    try {
      obj.mapUpdate('cfi_procs', u32(pid), procValue(out.slice(0, CFI_MAX_MAPPINGS)));
    } catch (e) {
      this.once('procs full', `cfi: no room for the mappings of pid ${pid} (${(e as Error).message}); such processes are walked by frame pointers`);
    }
  }

  private setRefs(pid: number, files: Set<string>): void {
    const old = this.procs.get(pid)?.files ?? new Set<string>();
    for (const k of files) if (!old.has(k)) this.files.get(k)!.refs++;
    for (const k of old) if (!files.has(k)) this.files.get(k)!.refs--;
  }

  /** The file of an executable mapping, with a slot (pending until a walk meets it); undefined: walked by frame pointers. */
  private fileFor(pid: number, m: Mapping): HostFile | undefined {
    if (!m.path.startsWith('/') || !m.inode) return undefined;
    const key = `${m.dev}:${m.inode}`;
    const known = this.files.get(key);
    if (known) return known.state === 'none' ? undefined : known;
    const slot = this.freeSlots.pop() ?? this.reclaimSlot();
    if (slot === undefined) {
      this.once('slots', `cfi: more than ${MAX_SLOTS - 1} files met; further files are walked by frame pointers`);
      return undefined;
    }
    let loads: Compiled['loads'] = [];
    let state: HostFile['state'] = 'pending';
    let ehBytes = 0;
    try {
      const elf = new ElfFile(reachMapped(pid, m).path);
      try {
        loads = loadSegments(elf);
        ehBytes = Number(elf.section('.eh_frame')?.size ?? 0);
        if (!ehBytes) state = 'none';
      } finally {
        elf.close();
      }
    } catch {
      state = 'none'; // unreadable or not ELF: frame pointers
    }
    const f: HostFile = { key, slot, state, loads, from: { pid, m }, ehBytes, nrows: 0, pageEntries: 0, lastUse: 0, walks: 0, refs: 0 };
    this.files.set(key, f);
    this.bySlot.set(slot, f);
    this.writeSlot(f);
    return state === 'none' ? undefined : f;
  }

  /** A slot of a file no process maps any more, the least recently used (its table goes). */
  private reclaimSlot(): number | undefined {
    let victim: HostFile | undefined;
    for (const f of this.files.values()) if (f.refs <= 0 && (!victim || f.lastUse < victim.lastUse)) victim = f;
    if (!victim) return undefined;
    this.budget.remove(victim.key);
    this.files.delete(victim.key);
    this.bySlot.delete(victim.slot);
    return victim.slot;
  }

  /** The file to compile next: walks that met it per byte of .eh_frame (what a ms of compiling buys), highest first. */
  private nextToCompile(): HostFile | undefined {
    let next: HostFile | undefined;
    const worth = (f: HostFile) => f.walks / Math.max(1, f.ehBytes);
    for (const f of this.files.values()) if (((f.state === 'pending' && f.lastUse > 0) || f.recompile) && !f.orphan && (!next || worth(f) > worth(next))) next = f;
    return next;
  }

  /** ms of compiling the budget allows now (negative: overdrawn by the last file). */
  private compileAllowance(): number {
    const now = performance.now();
    const cap = now - this.startedAt < COMPILE_STARTUP_MS ? COMPILE_BURST_MS : COMPILE_STEADY_MS;
    this.budgetMs = Math.min(cap, this.budgetMs + ((now - this.budgetAt) / 1000) * COMPILE_MS_PER_S_PER_CPU * this.cpus);
    this.budgetAt = now;
    return this.budgetMs;
  }

  /** Compiles the pending files walks have met, one per event-loop turn while the budget lasts, placing each. */
  private async compileMet(obj: BpfObject, closed: () => boolean): Promise<void> {
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (closed() || this.compileAllowance() <= 0) return;
      const next = this.nextToCompile();
      if (!next) return;
      const t = performance.now();
      try {
        next.recompile = false;
        // no room for it even after evicting idle tables: kept out uncompiled (tried again when met again)
        this.freshUse(obj);
        if (!this.budget.victims(...sizeOf(next), this.lastUse, nowMs())) {
          this.keepOut(next);
          continue;
        }
        this.compile(next);
        if (next.rows && (next.state === 'pending' || next.state === 'capped')) this.place(obj, next);
        this.trimCompiled();
      } finally {
        this.planMs += performance.now() - t;
        this.budgetMs -= performance.now() - t;
      }
    }
  }

  private compile(f: HostFile): void {
    const t0 = performance.now();
    try {
      const c = compileCached(reachMapped(f.from.pid, f.from.m).path, this.disk, this.log);
      f.unsupported = c.unsupported;
      if (!c.nrows) throw new Error('no rows');
      f.rows = c.rows;
      f.nrows = c.nrows;
      f.pages = c.pages;
      f.pageEntries = f.pages.idx.length;
      if (c.hit) this.cacheHits++;
      this.log(`cfi: ${this.name(f)}: ${f.nrows} rows ${c.hit ? 'read from the table cache' : 'compiled'} in ${Math.round(performance.now() - t0)} ms`);
    } catch (e) {
      // short-lived processes: the file is read through the next process planned that maps it
      if (!pidAlive(f.from.pid)) {
        f.orphan = true;
        return;
      }
      this.log(`cfi: ${this.name(f)}: no table${this.showPaths ? ` (${(e as Error).message})` : ''}; walked by frame pointers`);
      f.state = 'none';
      this.writeSlot(f);
    }
  }

  /** Puts a compiled table within the cap (evicting idle ones as needed), or marks it kept out. */
  private place(obj: BpfObject, f: HostFile): void {
    const blocks = Math.ceil(f.nrows / CFI_BLOCK_ROWS);
    const placed = this.budget.place(f.key, blocks, f.pages!.idx.length, this.lastUse, nowMs());
    if (!placed) {
      this.keepOut(f);
      return;
    }
    for (const k of placed.evicted) this.keepOut(this.files.get(k)!);
    const rowStart = placed.at.rows.start * CFI_BLOCK_ROWS;
    for (let b = 0; b < blocks; b++) {
      const block = Buffer.alloc(ROW_BLOCK_BYTES);
      f.rows!.copy(block, 0, b * ROW_BLOCK_BYTES, Math.min(f.rows!.length, (b + 1) * ROW_BLOCK_BYTES));
      obj.mapUpdate('cfi_rows', u32(placed.at.rows.start + b), block);
    }
    const p = placed.at.pages;
    f.pages!.idx.forEach((r, i) => (this.pageMirror[p.start + i] = rowStart + r));
    for (let b = Math.floor(p.start / CFI_BLOCK_PAGES); b <= Math.floor((p.start + p.len - 1) / CFI_BLOCK_PAGES); b++) {
      obj.mapUpdate('cfi_pages', u32(b), Buffer.from(this.pageMirror.buffer, b * CFI_BLOCK_PAGES * 4, CFI_BLOCK_PAGES * 4));
    }
    f.state = 'loaded';
    this.writeSlot(f);
  }

  /** Marks a file's table out of the kernel for the cap (walks through it count as cut). */
  private keepOut(f: HostFile): void {
    if (f.state !== 'capped') this.once(`cap ${f.key}`, `cfi: ${this.name(f)} (${f.nrows ? `${f.nrows} rows` : `${f.ehBytes} bytes of .eh_frame`}) ${f.state === 'loaded' ? 'evicted' : 'kept out'} for the table memory cap of ${(this.capBytes / 2 ** 20).toFixed(2)} MiB; stacks through it are cut and counted`);
    const write = f.state !== 'capped';
    f.state = 'capped';
    f.cappedUse = f.lastUse;
    if (write) this.writeSlot(f);
  }

  /**
   * Compiled rows kept here for tables out of the kernel (evicted or kept out) stay within the
   * cap too: beyond it the least recently used are dropped (compiled again if met again).
   */
  private trimCompiled(): void {
    const out = [...this.files.values()].filter((f) => f.rows && f.state !== 'loaded').sort((a, b) => a.lastUse - b.lastUse);
    let bytes = out.reduce((n, f) => n + f.rows!.length, 0);
    for (const f of out) {
      if (bytes <= this.capBytes) break;
      bytes -= f.rows!.length;
      f.rows = undefined;
      f.pages = undefined;
    }
  }

  /** Files the cap kept out that walks met again: placed if idle tables can make room now. */
  private readonly lastUse = (k: string) => this.files.get(k)?.lastUse ?? 0;

  private retryCapped(obj: BpfObject): void {
    const now = nowMs();
    for (const f of this.files.values()) {
      if (f.state !== 'capped' || f.lastUse <= (f.cappedUse ?? 0)) continue;
      f.cappedUse = f.lastUse;
      this.freshUse(obj);
      if (!this.budget.victims(...sizeOf(f), this.lastUse, now)) continue;
      // its compiled rows were dropped: compiled again (it stays out, its stacks cut, until then)
      if (!f.rows) f.recompile = true;
      else this.place(obj, f);
    }
  }

  /** Drops exited processes' mappings (a pid taken by a new process is planned afresh when it asks). */
  private reap(obj: BpfObject): void {
    for (const [pid, p] of this.procs) {
      if (pidAlive(pid) && readStat(pid)?.startTime === p.startTime) continue;
      this.setRefs(pid, new Set());
      this.procs.delete(pid);
      obj.mapDelete('cfi_procs', u32(pid));
    }
  }

  private writeSlot(f: HostFile): void {
    const v = Buffer.alloc(24);
    const at = f.state === 'loaded' ? this.budget.resident.get(f.key) : undefined;
    if (at) {
      v.writeUInt32LE(at.rows.start * CFI_BLOCK_ROWS, 0);
      v.writeUInt32LE(f.nrows, 4);
      v.writeUInt32LE(at.pages.start, 8);
      v.writeUInt32LE(f.pages!.base, 12);
      v.writeUInt32LE(f.pages!.idx.length - 1, 16);
    }
    v.writeUInt32LE(FILE_STATE[f.state], 20);
    this.obj?.mapUpdate('cfi_files', u32(f.slot), v);
  }

  /** A file as the log names it (see HostCfiOptions.showPaths). */
  private name(f: HostFile): string {
    return this.showPaths ? f.from.m.path : `file ${f.key} (device:inode)`;
  }

  private once(key: string, message: string): void {
    if (this.told.has(key)) return;
    this.told.add(key);
    this.log(message);
  }

  stats(): CfiTableStats {
    const unsupported: Record<string, number> = {};
    let rows = 0;
    let files = 0;
    let capped = 0;
    for (const f of this.files.values()) {
      if (f.state === 'capped') capped++;
      if (f.state !== 'loaded') continue;
      files++;
      rows += f.nrows;
      for (const [k, n] of Object.entries(f.unsupported ?? {})) unsupported[k] = (unsupported[k] ?? 0) + n;
    }
    const used = this.budget.used;
    return { files, rows, bytes: used.rowBlocks * ROW_BLOCK_BYTES + used.pageEntries * 4, fpMappings: this.fpMappings, unsupported, capBytes: this.capBytes, evictions: this.budget.evictions, cappedFiles: capped, processes: this.procs.size };
  }
}

function procValue(maps: { start: bigint; end: bigint; bias: bigint; slot: number }[]): Buffer {
  const v = Buffer.alloc(CFI_PROC_SIZE);
  v.writeUInt32LE(maps.length, 0);
  maps.forEach((m, i) => {
    const o = 8 + i * CFI_MAPPING_SIZE;
    v.writeBigUInt64LE(m.start, o);
    v.writeBigUInt64LE(m.end, o + 8);
    v.writeBigUInt64LE(BigInt.asUintN(64, m.bias), o + 16);
    v.writeUInt32LE(m.slot, o + 44);
  });
  return v;
}

/** One turn of a session's host tables, from its timer: a table that fails to load is logged under the tracer's name, and the session goes on. */
export function tickHostTables(host: HostCfiTables, closed: () => boolean, log: (line: string) => void, tracer: string): void {
  if (closed()) return;
  try {
    host.tick(closed);
  } catch (e) {
    log(`${tracer}: loading unwind tables: ${(e as Error).message}`);
  }
}
