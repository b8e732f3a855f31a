// One distinct ELF file (by device, inode, mtime and size) held open for the Symbolizer's
// lifetime, so that it can still be read after the process that mapped it exits or the file is
// replaced on disk (a rebuilt binary). llvm-symbolizer reads it through /proc/OURPID/fd/N: that
// path never changes meaning while we keep the fd, so llvm-symbolizer's own per-path cache
// stays correct.
import fs from 'node:fs';
import path from 'node:path';
import { ElfFile, PT_LOAD, SHT_SYMTAB, type Segment } from '../elf/elf';
import { checkBinary, lacksFramePointers, type BinaryReport } from '../elf/binaryChecks';
import { AddressTable, type Range } from './addressTable';

const SHF_EXECINSTR = 0x4n;
const STT_FUNC = 2;

export class ModuleFile {
  /** where we (and llvm-symbolizer) read it */
  readonly fdPath: string;
  readonly buildId?: string;
  /** cache key for symbolization results: build-id, else the file identity */
  readonly cacheKey: string;
  /** why it cannot be symbolized (not ELF, unreadable); frames then show module+offset only */
  readonly problem?: string;
  private readonly loads: Segment[] = [];
  private symbolTable?: AddressTable<string>;
  private report?: BinaryReport;
  private debugInfo?: boolean;

  constructor(
    readonly fd: number,
    /** dev:ino:mtime:size */
    readonly identity: string,
    /** a path it was mapped under, for messages */
    readonly displayPath: string,
    private readonly debugDirs: string[],
  ) {
    this.fdPath = `/proc/${process.pid}/fd/${fd}`;
    try {
      const elf = new ElfFile(this.fdPath);
      try {
        this.loads = elf.segments.filter((s) => s.type === PT_LOAD);
        this.buildId = elf.buildId();
      } finally {
        elf.close();
      }
    } catch (e) {
      this.problem = (e as Error).message.replace(this.fdPath, displayPath);
    }
    this.cacheKey = this.buildId ? `b:${this.buildId}` : `f:${identity}`;
  }

  /** Link-time virtual address of a file offset, via the PT_LOAD that holds it. */
  offsetToVaddr(offset: bigint): bigint | undefined {
    for (const s of this.loads) {
      if (offset >= s.offset && offset < s.offset + s.filesz) return offset - s.offset + s.vaddr;
    }
    return undefined;
  }

  /** /usr/lib/debug/.build-id/xx/rest.debug if one exists (libc6-dbg and friends). */
  debugFile(): string | undefined {
    if (!this.buildId || this.buildId.length < 3) return undefined;
    for (const dir of this.debugDirs) {
      const p = path.join(dir, '.build-id', this.buildId.slice(0, 2), this.buildId.slice(2) + '.debug');
      if (fs.existsSync(p)) return p;
    }
    return undefined;
  }

  hasDebugInfo(): boolean {
    if (this.debugInfo === undefined) {
      this.debugInfo = !this.problem && (this.binaryReport()?.debugInfo === true || this.debugFile() !== undefined);
    }
    return this.debugInfo;
  }

  hasSymbols(): boolean {
    return this.symbols().size > 0;
  }

  /** .eh_frame or .debug_frame present, in the binary or its build-id debug file */
  hasCfi(): boolean {
    return this.binaryReport()?.cfi === true || this.debugFile() !== undefined;
  }

  /** undefined when unknown (not ELF, no sampled functions) */
  lacksFramePointers(): boolean {
    const r = this.binaryReport();
    return r !== undefined && lacksFramePointers(r);
  }

  private binaryReport(): BinaryReport | undefined {
    if (this.problem) return undefined;
    if (!this.report) {
      try {
        this.report = checkBinary(this.fdPath);
      } catch {
        return undefined;
      }
    }
    return this.report;
  }

  /**
   * Function symbols of .symtab (the binary's, else its build-id debug file's), else .dynsym,
   * sorted for binary search. Sizeless symbols (hand-written assembly) run to the next symbol
   * or the end of their section.
   */
  symbols(): AddressTable<string> {
    if (this.symbolTable) return this.symbolTable;
    this.symbolTable = new AddressTable<string>([]);
    if (this.problem) return this.symbolTable;
    try {
      let ranges = readFunctionRanges(this.fdPath, false);
      const dbg = ranges.fromSymtab ? undefined : this.debugFile();
      if (dbg) {
        const fromDebug = readFunctionRanges(dbg, true);
        if (fromDebug.ranges.length > ranges.ranges.length) ranges = fromDebug;
      }
      this.symbolTable = new AddressTable(ranges.ranges);
    } catch {
      /* unreadable symbol table: names stay unknown */
    }
    return this.symbolTable;
  }
}

function readFunctionRanges(file: string, symtabOnly: boolean): { ranges: Range<string>[]; fromSymtab: boolean } {
  const elf = new ElfFile(file);
  try {
    const fromSymtab = elf.sections.some((s) => s.type === SHT_SYMTAB);
    if (symtabOnly && !fromSymtab) return { ranges: [], fromSymtab };
    const exec = elf.sections.filter((s) => (s.flags & SHF_EXECINSTR) !== 0n && s.addr !== 0n);
    const sectionEnd = (a: bigint) => {
      const s = exec.find((x) => a >= x.addr && a < x.addr + BigInt(x.size));
      return s ? s.addr + BigInt(s.size) : undefined;
    };
    // Aliases share an address (malloc, __libc_malloc): keep the most readable name.
    const byAddr = new Map<bigint, { name: string; size: bigint; type: number }>();
    for (const s of elf.symbols()) {
      if (!s.name || (s.type !== STT_FUNC && s.type !== 10 && s.type !== 0)) continue;
      const cur = byAddr.get(s.value);
      if (!cur || better(s, cur)) byAddr.set(s.value, { name: stripVersion(s.name), size: s.size, type: s.type });
    }
    const addrs = [...byAddr.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const ranges: Range<string>[] = [];
    for (let i = 0; i < addrs.length; i++) {
      const start = addrs[i];
      const s = byAddr.get(start)!;
      const secEnd = sectionEnd(start);
      if (secEnd === undefined) continue;
      let end = start + s.size;
      if (s.size === 0n) {
        const next = i + 1 < addrs.length ? addrs[i + 1] : secEnd;
        end = next < secEnd ? next : secEnd;
      }
      ranges.push({ start, end, value: s.name });
    }
    return { ranges, fromSymtab };
  } finally {
    elf.close();
  }
}

function better(a: { name: string; type: number }, b: { name: string; type: number }): boolean {
  if ((a.type === STT_FUNC) !== (b.type === STT_FUNC)) return a.type === STT_FUNC;
  const ua = /^_*/.exec(a.name)![0].length;
  const ub = /^_*/.exec(b.name)![0].length;
  if (ua !== ub) return ua < ub;
  return a.name.length < b.name.length;
}

function stripVersion(name: string): string {
  const at = name.indexOf('@');
  return at > 0 ? name.slice(0, at) : name;
}
