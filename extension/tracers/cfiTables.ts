// Unwind tables for the in-kernel user-stack walk (bpf/cfi_walk.bpf.h): each executable file a
// traced process maps is compiled once (extension/sys/elf/cfiTable.ts), keyed by device and inode,
// and its rows written once into the object's cfi_rows, where every process that maps the same
// file shares them; each process gets its sorted executable mappings with their load bias and
// their file's row range. Compiled tables are also kept in this helper process (by device, inode,
// size and mtime) so the next session does not compile libc again.
import fs from 'node:fs';
import type { BpfObject } from '../../native/index';
import { compileCfi, encodeRows, CFI_ROW_SIZE, type CfiRow, type CfiTable } from '../sys/elf/cfiTable';
import { cacheKey, CfiDiskCache, debugDepsChanged, debugDepsOf, type CachedTable } from './cfiCache';
import { ElfFile, PT_LOAD } from '../sys/elf/elf';
import { readMaps, type Mapping } from '../sys/proc/maps';
import { reachMapped } from '../sys/proc/mappedFile';
import { readCounter } from './bpfObject';
import type { UnwindInfo } from '../protocol/profile';
import { kernelRelease, releaseAtLeast } from '../sys/kernelRelease';

/** Whether this kernel runs the table walk: bpf_loop (5.17) for its frames, bpf_task_pt_regs (5.15) for the user registers. */
export function kernelWalksTables(): boolean {
  return releaseAtLeast(kernelRelease(), 5, 17);
}

/** Mirrors bpf/cfi_walk.h. */
export const CFI_MAX_MAPPINGS = 256;
export const CFI_MAX_FRAMES = 127;
export const CFI_STACK_ID_BASE = 0x40000000;
export const CFI_MAPPING_SIZE = 48;
export const CFI_PROC_SIZE = 8 + CFI_MAPPING_SIZE * CFI_MAX_MAPPINGS;
const CFI_STACK_HEADER = 16;
/** Rows per cfi_rows entry (struct cfi_row_block), page-index entries per cfi_pages entry */
export const CFI_BLOCK_ROWS = 512;
export const CFI_BLOCK_PAGES = 1024;
const PAGE = 1 << 12; // CFI_PAGE_SHIFT

/** A file's page index (bpf/cfi_walk.h): entry k = the row covering the start of page base + k; count + 1 entries. */
export function pageIndex(rows: { pc: number }[]): { base: number; idx: Uint32Array } {
  if (!rows.length) return { base: 0, idx: new Uint32Array(0) };
  const base = Math.floor(rows[0].pc / PAGE);
  const count = Math.floor(rows[rows.length - 1].pc / PAGE) - base + 1;
  const idx = new Uint32Array(count + 1);
  let r = 0;
  for (let k = 0; k <= count; k++) {
    const start = (base + k) * PAGE;
    while (r + 1 < rows.length && rows[r + 1].pc <= start) r++;
    idx[k] = r;
  }
  return { base, idx };
}

/** An array map written in blocks of entries, with a copy here: a block that gains entries is written whole. */
class BlockArray {
  capacity = 0;
  used = 0;
  private mirror = Buffer.alloc(0);

  constructor(
    private readonly map: string,
    private readonly entrySize: number,
    private readonly perBlock: number,
  ) {}

  size(obj: BpfObject, entries: number): void {
    const blocks = Math.max(1, Math.ceil(entries / this.perBlock));
    this.capacity = blocks * this.perBlock;
    this.mirror = Buffer.alloc(blocks * this.perBlock * this.entrySize);
    obj.setMaxEntries(this.map, blocks);
  }

  fits(n: number): boolean {
    return this.used + n <= this.capacity;
  }

  /** Appends n entries (data: n × entrySize bytes); returns their first index. */
  append(obj: BpfObject, data: Buffer, n: number): number {
    const start = this.used;
    data.copy(this.mirror, start * this.entrySize);
    const bytes = this.perBlock * this.entrySize;
    for (let b = Math.floor(start / this.perBlock); b <= Math.floor((start + n - 1) / this.perBlock); b++) obj.mapUpdate(this.map, u32(b), this.mirror.subarray(b * bytes, (b + 1) * bytes));
    this.used += n;
    return start;
  }
}
export const CFI_STOP = ['end', 'no-mapping', 'no-row', 'unsupported', 'read', 'depth', 'loop'] as const;
export type CfiStop = (typeof CFI_STOP)[number];
export const CFI_STAT = { walks: 7, frames: 8, fpFrames: 9, lost: 10, noTable: 11, walkNs: 12, cutByCap: 13 } as const;
/** struct cfi_stack flags: the walk met a file whose table was still compiling, or kept out by the memory cap */
export const CFI_FLAG = { pending: 1, capped: 2 } as const;

/** A .eh_frame larger than this is not compiled (its mappings are walked by frame pointers): node's is 2.7 MB. */
const MAX_EH_FRAME_BYTES = 16 << 20;
/** Where a file's separate debug file is looked up by build-id, for .debug_frame rows where .eh_frame leaves code uncovered (root-owned: what the helper reads there no user placed). */
const DEBUG_DIRS = ['/usr/lib/debug'];
/** Rows this helper keeps compiled across sessions (12 bytes each in BPF, more here). */
const CACHE_MAX_ROWS = 4_000_000;

export interface Compiled {
  stamp: string;
  table: CfiTable;
  /** link-time vaddr − file offset of each PT_LOAD (the load bias follows from a mapping's offset) */
  loads: { offset: bigint; filesz: bigint; delta: bigint }[];
  /** the separate debug files the table depends on, as CachedTable.debugDeps */
  debugDeps?: [string, string][];
}

const compiledCache = new Map<string, Compiled>();

function cacheRows(): number {
  let n = 0;
  for (const c of compiledCache.values()) n += c.table.rows.length;
  return n;
}

/** The PT_LOAD segments of an ELF file, as Compiled.loads. */
export function loadSegments(elf: ElfFile): Compiled['loads'] {
  return elf.segments.filter((s) => s.type === PT_LOAD).map((s) => ({ offset: s.offset, filesz: s.filesz, delta: s.vaddr - s.offset }));
}

/** Compiles the table of the ELF file at path (no cache): rows, and its load segments. */
export function compileElf(path: string, debugDirs: readonly string[] = DEBUG_DIRS): Omit<Compiled, 'stamp'> {
  const elf = new ElfFile(path);
  try {
    const eh = elf.section('.eh_frame');
    const table = eh && eh.size > MAX_EH_FRAME_BYTES ? { rows: [], fdes: 0, unsupported: { 'eh_frame-too-large': 1 } } : compileCfi(elf, { debugDirs });
    return { table, loads: loadSegments(elf) };
  } finally {
    elf.close();
  }
}

/**
 * The table of the ELF file at p: from the disk cache when it holds one for this very file, else
 * compiled (and stored there, unless the file changed while it compiled).
 */
export function compileCached(p: string, cache: CfiDiskCache | undefined, log: (m: string) => void = () => undefined, debugDirs: readonly string[] = DEBUG_DIRS): CachedTable & { hit: boolean; compiled?: CfiRow[] } {
  const key = cache ? cacheKey(p) : '';
  const hit = cache?.get(key);
  // a debug file installed (or removed) since: the entry is compiled afresh and replaced
  if (hit && !debugDepsChanged(hit.debugDeps)) return { ...hit, hit: true };
  const c = compileElf(p, debugDirs);
  const debugDeps = debugDepsOf(c.table.debugFiles);
  const t: CachedTable = { rows: encodeRows(c.table.rows), nrows: c.table.rows.length, pages: pageIndex(c.table.rows), fdes: c.table.fdes, debugFrameFdes: c.table.debugFrameFdes, unsupported: c.table.unsupported, loads: c.loads, ...(debugDeps ? { debugDeps } : {}) };
  if (cache && t.nrows && cacheKey(p) === key) {
    try {
      cache.put(key, t);
    } catch (e) {
      log(`cfi: table not kept on disk: ${(e as Error).message}`);
    }
  }
  // the rows as compiled too, so a caller that wants them as objects need not decode its own encoding
  return { ...t, hit: false, compiled: c.table.rows };
}

/** Rows back from struct cfi_row bytes. */
export function decodeRows(b: Buffer, n: number): CfiRow[] {
  const rows = new Array<CfiRow>(n);
  for (let i = 0, o = 0; i < n; i++, o += CFI_ROW_SIZE) rows[i] = { pc: b.readUInt32LE(o), cfaOff: b.readInt32LE(o + 4), rbpOff: b.readInt16LE(o + 8), kind: b[o + 10], arg: b[o + 11] };
  return rows;
}

/** This helper's disk cache, opened on first use (undefined: not root, or no safe place for it). */
let diskCache: CfiDiskCache | undefined | null = null;
function disk(): CfiDiskCache | undefined {
  if (diskCache === null) diskCache = CfiDiskCache.open(() => undefined);
  return diskCache;
}

/** A mapping's load bias (runtime − link-time address) from its file's segments; undefined when no segment holds its offset. */
export function mappingBias(loads: Compiled['loads'], m: Mapping): bigint | undefined {
  const load = loads.find((l) => m.offset >= l.offset && m.offset < l.offset + (l.filesz || 1n));
  return load ? m.start - m.offset - load.delta : undefined;
}

/** The file's table, compiled now or from this helper's cache. */
function compiledFor(pid: number, m: Mapping): Compiled {
  const reached = reachMapped(pid, m);
  const st = fs.statSync(reached.path);
  const key = `${m.dev}:${m.inode}`;
  const stamp = `${st.size}:${st.mtimeMs}`;
  const hit = compiledCache.get(key);
  if (hit && hit.stamp === stamp && !debugDepsChanged(hit.debugDeps)) {
    compiledCache.delete(key); // most recently used last
    compiledCache.set(key, hit);
    return hit;
  }
  const t = compileCached(reached.path, disk());
  const c = { stamp, table: { rows: t.compiled ?? decodeRows(t.rows, t.nrows), fdes: t.fdes, debugFrameFdes: t.debugFrameFdes, unsupported: t.unsupported }, loads: t.loads, debugDeps: t.debugDeps };
  compiledCache.set(key, c);
  while (cacheRows() > CACHE_MAX_ROWS && compiledCache.size > 1) compiledCache.delete(compiledCache.keys().next().value as string);
  return c;
}

/** Rows per .eh_frame byte, at most (0.16–0.18 measured on libc, python3.11): sizes the maps before the tables are compiled. */
const ROWS_PER_EH_FRAME_BYTE = 0.25;

/** Rows and page-index entries a file's table will take, from its section headers alone (or its compiled table). */
function estimateFor(pid: number, m: Mapping): { rows: number; pages: number } {
  const reached = reachMapped(pid, m);
  const st = fs.statSync(reached.path);
  const hit = compiledCache.get(`${m.dev}:${m.inode}`);
  if (hit && hit.stamp === `${st.size}:${st.mtimeMs}`) return { rows: hit.table.rows.length, pages: pageIndex(hit.table.rows).idx.length };
  const elf = new ElfFile(reached.path);
  try {
    const eh = elf.section('.eh_frame');
    // a program built with -fno-asynchronous-unwind-tables -g has its CFI in .debug_frame
    const cfiBytes = (eh?.size ?? 0) + (elf.section('.debug_frame')?.size ?? 0);
    if (!cfiBytes || (eh && eh.size > MAX_EH_FRAME_BYTES)) return { rows: 0, pages: 0 };
    const text = elf.segments.filter((s) => s.type === PT_LOAD && s.flags & 1).reduce((n, s) => n + Number(s.memsz), 0);
    return { rows: Math.ceil(cfiBytes * ROWS_PER_EH_FRAME_BYTE), pages: Math.ceil(text / PAGE) + 2 };
  } finally {
    elf.close();
  }
}

interface PlannedMapping {
  start: bigint;
  end: bigint;
  bias: bigint;
  /** undefined: walked by frame pointers */
  file?: string;
}

export interface CfiTableStats {
  files: number;
  rows: number;
  bytes: number;
  /** executable mappings walked by frame pointers (no file, no .eh_frame, unreadable) */
  fpMappings: number;
  unsupported: Record<string, number>;
  /** whole-host sessions: the table memory cap, tables evicted for room, files kept out now, processes with mappings loaded */
  capBytes?: number;
  evictions?: number;
  cappedFiles?: number;
  processes?: number;
}

/** What the summary and the result header read of a session's tables. */
export interface CfiTableSource {
  planMs: number;
  stats(): CfiTableStats;
}

/** The tables of one BPF object: which files' rows are loaded where, and each process's mappings. */
export class CfiTables {
  private readonly files = new Map<string, { table: CfiTable; start?: number; pages?: { start: number; base: number; count: number } }>();
  private readonly procs = new Map<number, PlannedMapping[]>();
  private readonly rows = new BlockArray('cfi_rows', CFI_ROW_SIZE, CFI_BLOCK_ROWS);
  private readonly pages = new BlockArray('cfi_pages', 4, CFI_BLOCK_PAGES);
  fpMappings = 0;
  /** ms spent reading mappings and compiling (or finding compiled) tables */
  planMs = 0;

  /** planLater: the process whose files compile in the background, and the rows and page entries they will take */
  private later?: { pid: number; files: Mapping[]; rows: number; pages: number };
  /** ms from planLater until its tables were in the kernel */
  readyMs?: number;

  constructor(private readonly log: (m: string) => void) {}

  /**
   * Reads pid's executable mappings and estimates their tables' size from section headers (a few
   * ms) without compiling them; loadLater compiles and loads them once the session samples. A big
   * process's files take 0.3–3 s to compile: its first stacks are walked by frame pointers instead
   * of the session starting that much later.
   */
  planLater(pid: number): void {
    const maps = this.mapsOf(pid);
    if (!maps) return;
    const files = new Map<string, Mapping>();
    for (const m of maps) if (m.perms[2] === 'x' && m.path.startsWith('/') && m.inode) files.set(`${m.dev}:${m.inode}`, m);
    const later = { pid, files: [...files.values()], rows: 0, pages: 0 };
    for (const m of later.files) {
      try {
        const e = estimateFor(pid, m);
        later.rows += e.rows;
        later.pages += e.pages;
      } catch {
        /* unreadable: walked by frame pointers, as plan will say */
      }
    }
    this.later = later;
  }

  /** Whether the tables planLater deferred are in the kernel (true when nothing was deferred). */
  get ready(): boolean {
    return this.later === undefined;
  }

  /** Compiles planLater's files one per event-loop turn, then loads them and the process's mappings into obj (unless closed by then). */
  async loadLater(obj: BpfObject, closed: () => boolean): Promise<void> {
    const later = this.later;
    if (!later) return;
    const t0 = performance.now();
    for (const m of later.files) {
      await new Promise((r) => setImmediate(r));
      if (closed()) return;
      const t = performance.now();
      try {
        compiledFor(later.pid, m);
      } catch {
        /* plan below says why and walks it by frame pointers */
      } finally {
        this.planMs += performance.now() - t;
      }
    }
    if (closed()) return;
    this.plan(later.pid);
    this.load(obj);
    this.later = undefined;
    this.readyMs = performance.now() - t0;
    this.log(`cfi: tables of pid ${later.pid} loaded ${Math.round(this.readyMs)} ms after sampling began (${this.plannedRows} rows); stacks before were walked by frame pointers`);
  }

  /** Rows to size cfi_rows for: those planned, or planLater's estimate. */
  get sizingRows(): number {
    return Math.max(this.plannedRows, this.later?.rows ?? 0);
  }

  /** Compiles (or finds) the tables of pid's executable mappings; call before load to size cfi_rows. */
  plan(pid: number): void {
    const t0 = performance.now();
    try {
      this.planProcess(pid);
    } finally {
      this.planMs += performance.now() - t0;
    }
  }

  /** pid's mappings, or undefined (said in the log) when they cannot be read. */
  private mapsOf(pid: number): Mapping[] | undefined {
    try {
      return readMaps(pid);
    } catch (e) {
      this.log(`cfi: cannot read /proc/${pid}/maps: ${(e as Error).message}`);
      return undefined;
    }
  }

  private planProcess(pid: number): void {
    const maps = this.mapsOf(pid);
    if (!maps) return;
    const out: PlannedMapping[] = [];
    for (const m of maps) {
      if (m.perms[2] !== 'x' || m.path === '[vsyscall]') continue;
      out.push(this.planMapping(pid, m));
    }
    out.sort((a, b) => (a.start < b.start ? -1 : 1));
    if (out.length > CFI_MAX_MAPPINGS) this.log(`cfi: pid ${pid} has ${out.length} executable mappings; the first ${CFI_MAX_MAPPINGS} are walked`);
    this.procs.set(pid, out.slice(0, CFI_MAX_MAPPINGS));
  }

  private planMapping(pid: number, m: Mapping): PlannedMapping {
    const fp: PlannedMapping = { start: m.start, end: m.end, bias: 0n };
    if (!m.path.startsWith('/') || !m.inode) {
      this.fpMappings++;
      return fp;
    }
    const key = `${m.dev}:${m.inode}`;
    try {
      const c = compiledFor(pid, m);
      const bias = mappingBias(c.loads, m);
      if (!c.table.rows.length || bias === undefined) {
        this.fpMappings++;
        return fp;
      }
      if (!this.files.has(key)) {
        // a session holds at most what the kernel map may (a process mapping many huge files
        // gets frame pointers for the rest, not a helper out of memory)
        if (this.plannedRows + c.table.rows.length > CFI_MAX_ROWS) {
          this.log(`cfi: ${m.path} of pid ${pid}: over ${CFI_MAX_ROWS} rows for this session; walked by frame pointers`);
          this.fpMappings++;
          return fp;
        }
        this.files.set(key, { table: c.table });
      }
      return { start: m.start, end: m.end, bias, file: key };
    } catch (e) {
      this.log(`cfi: ${m.path} of pid ${pid}: no table (${(e as Error).message}); walked by frame pointers`);
      this.fpMappings++;
      return fp;
    }
  }

  /** Rows planned so far (size cfi_rows for them plus room for later mappings). */
  get plannedRows(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.table.rows.length;
    return n;
  }

  /** Sets the map sizes on an opened, not yet loaded object (page index: room in the same proportion as rows). */
  size(obj: BpfObject, rows: number, stacks: number): void {
    let pages = 0;
    for (const f of this.files.values()) pages += pageIndex(f.table.rows).idx.length;
    this.rows.size(obj, rows);
    const later = this.later ? Math.ceil((this.later.pages * rows) / Math.max(1, this.later.rows)) : 0;
    this.pages.size(obj, Math.max(later, Math.ceil((pages * rows) / Math.max(1, this.plannedRows))) + 1024);
    obj.setMaxEntries('cfi_stacks', Math.max(1, stacks));
  }

  /** Writes new files' rows and every planned process's mappings into the loaded object. */
  load(obj: BpfObject): void {
    for (const [key, f] of this.files) {
      if (f.start !== undefined) continue;
      const pi = pageIndex(f.table.rows);
      if (!this.rows.fits(f.table.rows.length) || !this.pages.fits(pi.idx.length)) {
        this.log(`cfi: no room for the ${f.table.rows.length} rows of ${key} (${this.rows.used} of ${this.rows.capacity} used); its mappings are walked by frame pointers`);
        continue;
      }
      const start = this.rows.append(obj, encodeRows(f.table.rows), f.table.rows.length);
      const idx = Buffer.alloc(pi.idx.length * 4);
      pi.idx.forEach((r, i) => idx.writeUInt32LE(start + r, i * 4));
      f.pages = { start: this.pages.append(obj, idx, pi.idx.length), base: pi.base, count: pi.idx.length - 1 };
      f.start = start;
    }
    for (const [pid, maps] of this.procs) obj.mapUpdate('cfi_procs', u32(pid), this.procValue(maps));
  }

  private procValue(maps: PlannedMapping[]): Buffer {
    const v = Buffer.alloc(CFI_PROC_SIZE);
    v.writeUInt32LE(maps.length, 0);
    maps.forEach((m, i) => {
      const o = 8 + i * CFI_MAPPING_SIZE;
      const f = m.file ? this.files.get(m.file) : undefined;
      v.writeBigUInt64LE(m.start, o);
      v.writeBigUInt64LE(m.end, o + 8);
      v.writeBigUInt64LE(BigInt.asUintN(64, m.bias), o + 16);
      v.writeUInt32LE(f?.start ?? 0, o + 24);
      v.writeUInt32LE(f?.start !== undefined ? f.table.rows.length : 0, o + 28);
      v.writeUInt32LE(f?.pages?.start ?? 0, o + 32);
      v.writeUInt32LE(f?.pages?.base ?? 0, o + 36);
      v.writeUInt32LE(f?.pages?.count ?? 0, o + 40);
    });
    return v;
  }

  stats(): CfiTableStats {
    const unsupported: Record<string, number> = {};
    let rows = 0;
    let files = 0;
    for (const f of this.files.values()) {
      if (f.start === undefined) continue;
      files++;
      rows += f.table.rows.length;
      for (const [k, n] of Object.entries(f.table.unsupported)) unsupported[k] = (unsupported[k] ?? 0) + n;
    }
    return { files, rows, bytes: rows * CFI_ROW_SIZE, fpMappings: this.fpMappings, unsupported };
  }
}

export function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

export interface CfiStack {
  pcs: BigUint64Array;
  stop: CfiStop;
  fpFrames: number;
  /** CFI_FLAG bits */
  flags: number;
}

/** A walked stack from cfi_stacks (id ≥ CFI_STACK_ID_BASE); empty when absent. */
export function readCfiStack(obj: BpfObject, id: number): CfiStack {
  const v = obj.mapLookup('cfi_stacks', u32(id));
  if (!v || v.length < CFI_STACK_HEADER) return { pcs: new BigUint64Array(0), stop: 'end', fpFrames: 0, flags: 0 };
  const depth = Math.min(v.readUInt32LE(8), CFI_MAX_FRAMES, (v.length - CFI_STACK_HEADER) / 8);
  const pcs = new BigUint64Array(depth);
  for (let i = 0; i < depth; i++) pcs[i] = v.readBigUInt64LE(CFI_STACK_HEADER + i * 8);
  return { pcs, stop: CFI_STOP[v[12]] ?? 'end', fpFrames: v[13], flags: v[14] };
}

export const isCfiStackId = (id: number) => id >= CFI_STACK_ID_BASE;

/** What a stop other than the outermost frame means, as the last frame of a stack. */
export function cfiStopNote(stop: CfiStop): string | undefined {
  switch (stop) {
    case 'end':
      return undefined;
    case 'no-mapping':
      return '[stack ends: code in no mapped file with unwind rows (JIT code without frame pointers, or mapped after the session began)]';
    case 'no-row':
    case 'unsupported':
      return `[stack ends: the file's unwind table ${stop === 'no-row' ? 'does not cover this code' : 'has a rule the kernel walk cannot follow here'}]`;
    case 'read':
      return '[stack ends: the stack could not be read there]';
    case 'depth':
      return `[stack cut at ${CFI_MAX_FRAMES} frames]`;
    case 'loop':
      return '[stack ends: a frame did not move up the stack]';
  }
}

/** Rows one session may hold in the kernel (12 bytes each: 48 MiB); files past it are walked by frame pointers. */
export const CFI_MAX_ROWS = 4 << 20;

/** cfi_rows entries for the rows planned at start plus room for libraries loaded later, within CFI_MAX_ROWS. */
export function cfiRowCapacity(planned: number): number {
  return Math.min(CFI_MAX_ROWS, Math.ceil(planned * 1.25) + 65536);
}

/** The last frame of a stack the kernel walked by frame pointers because the process's tables were not loaded yet. */
export const CFI_NOT_YET_NOTE = '[stack walked by frame pointers: the unwind tables were still compiling]';
/** The last frame of a stack cut because a file's table was kept out (or evicted) by the table memory cap. */
export const CFI_CAP_NOTE = "[stack cut: a file's unwind table did not fit the table memory cap (--cfi-max-mb)]";

/** The note a walked stack ends with: why it stopped short, and which table was missing if one was. */
export function cfiStackNote(s: CfiStack): string | undefined {
  if (s.stop !== 'end' && s.flags & CFI_FLAG.capped) return CFI_CAP_NOTE;
  if (s.stop !== 'end' && s.flags & CFI_FLAG.pending) return CFI_NOT_YET_NOTE;
  return cfiStopNote(s.stop);
}

interface RawWithNote {
  entry: { userStackId: number };
  note?: string;
}

/** Reads stack ids of either kind; notes() marks stacks whose walk stopped before the outermost frame. */
export function cfiStackReader(obj: BpfObject, readMapStack: (id: number) => BigUint64Array) {
  const walked = new Map<number, CfiStack>();
  const get = (id: number) => {
    let s = walked.get(id);
    if (!s) walked.set(id, (s = readCfiStack(obj, id)));
    return s;
  };
  return {
    read: (id: number) => (isCfiStackId(id) ? get(id).pcs : readMapStack(id)),
    notes: <T extends RawWithNote>(raw: T[]): T[] =>
      raw.map((r) => {
        const id = r.entry.userStackId;
        const note = isCfiStackId(id) ? cfiStackNote(get(id)) : id >= 0 ? CFI_NOT_YET_NOTE : undefined;
        return note && !r.note ? { ...r, note } : r;
      }),
  };
}

/** One log line: the tables loaded and how the kernel's walks ended. */
export function cfiSummary(obj: BpfObject, cfi: CfiTableSource): string {
  const stat = (i: number) => readCounter(obj, 'cfi_stats', i);
  const t = cfi.stats();
  const stops = CFI_STOP.map((s, i) => `${s} ${stat(i)}`).join(', ');
  const unsupported = Object.entries(t.unsupported)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const walks = stat(CFI_STAT.walks);
  const ns = walks ? Math.round(stat(CFI_STAT.walkNs) / walks) : 0;
  const cap = t.capBytes === undefined ? '' : ` of a ${(t.capBytes / 2 ** 20).toFixed(2)} MiB cap (${t.processes} processes, ${t.evictions} tables evicted, ${t.cappedFiles} files kept out now, ${stat(CFI_STAT.cutByCap)} stacks cut by the cap)`;
  return `cfi: ${t.files} files, ${t.rows} rows (${(t.bytes / 1024).toFixed(0)} KiB) in the kernel${cap}, compiled or found in ${Math.round(cfi.planMs)} ms, ${t.fpMappings} mappings by frame pointers${unsupported ? `; rows not expressed: ${unsupported}` : ''}; ${walks} walks, ${ns} ns a walk, ${stat(CFI_STAT.frames)} frames (${stat(CFI_STAT.fpFrames)} by frame pointers), ${stat(CFI_STAT.lost)} lost; stops: ${stops}`;
}

/** The result header's figures: tables loaded and walks by how they ended. */
export function cfiUnwindInfo(obj: BpfObject, cfi: CfiTableSource): Pick<UnwindInfo, 'cfiTables' | 'cfiStops' | 'cutByCap'> {
  const t = cfi.stats();
  const cfiStops: Record<string, number> = {};
  CFI_STOP.forEach((s, i) => (cfiStops[s] = readCounter(obj, 'cfi_stats', i)));
  const walks = readCounter(obj, 'cfi_stats', CFI_STAT.walks);
  const nsPerWalk = walks ? Math.round(readCounter(obj, 'cfi_stats', CFI_STAT.walkNs) / walks) : undefined;
  const cfiTables: NonNullable<UnwindInfo['cfiTables']> = { files: t.files, rows: t.rows, bytes: t.bytes, fpMappings: t.fpMappings, nsPerWalk };
  if (t.capBytes === undefined) return { cfiTables, cfiStops };
  return { cfiTables: { ...cfiTables, capBytes: t.capBytes, evictions: t.evictions, cappedFiles: t.cappedFiles, processes: t.processes }, cfiStops, cutByCap: readCounter(obj, 'cfi_stats', CFI_STAT.cutByCap) };
}
