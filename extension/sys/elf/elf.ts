// A small ELF64 little-endian reader: section headers, program headers, notes (build-id,
// SystemTap USDT probes) and symbol tables. Written by hand because no maintained npm package
// reads ELF notes and symbols without pulling in a whole toolchain; reads are positional, so
// a 20 MB libjvm.so costs a few KB of I/O for a note lookup.
import fs from 'node:fs';

export interface Section {
  name: string;
  type: number;
  flags: bigint;
  addr: bigint;
  offset: number;
  size: number;
  link: number;
  entsize: number;
}

export interface Segment {
  type: number;
  flags: number;
  offset: bigint;
  vaddr: bigint;
  filesz: bigint;
  memsz: bigint;
}

export interface ElfSymbol {
  name: string;
  value: bigint;
  size: bigint;
  /** STT_FUNC = 2, STT_OBJECT = 1, STT_GNU_IFUNC = 10 */
  type: number;
}

export interface UsdtProbe {
  provider: string;
  name: string;
  /** address of the probe instruction (link-time vaddr) */
  location: bigint;
  base: bigint;
  semaphore: bigint;
  /** argument spec, e.g. "1@%dil 8@%rax" */
  args: string;
}

export const PT_LOAD = 1;
export const SHT_SYMTAB = 2;
export const SHT_NOTE = 7;
export const SHT_DYNSYM = 11;
export const SHT_NOBITS = 8;

export class ElfError extends Error {}

export interface ElfNote {
  name: string;
  type: number;
  desc: Buffer;
  section: string;
}

const NT_GNU_BUILD_ID = 3;

/** The notes of one note section's bytes (Elf64_Nhdr records, name and desc each 4-aligned). */
export function parseNotes(d: Buffer, section: string): ElfNote[] {
  const out: ElfNote[] = [];
  let o = 0;
  while (o + 12 <= d.length) {
    const namesz = d.readUInt32LE(o);
    const descsz = d.readUInt32LE(o + 4);
    const type = d.readUInt32LE(o + 8);
    o += 12;
    const name = d.toString('latin1', o, o + Math.max(0, namesz - 1));
    o += align4(namesz);
    const desc = d.subarray(o, o + descsz);
    o += align4(descsz);
    out.push({ name, type, desc, section });
  }
  return out;
}

/** The GNU build-id (hex) among notes, if one is there. */
export function gnuBuildId(notes: ElfNote[]): string | undefined {
  return notes.find((x) => x.name === 'GNU' && x.type === NT_GNU_BUILD_ID)?.desc.toString('hex');
}

/**
 * The running kernel's GNU build-id: /sys/kernel/notes holds the kernel image's raw ELF notes
 * (no ELF header around them). undefined when the file is unreadable or has no build-id.
 */
export function kernelBuildId(): string | undefined {
  try {
    return gnuBuildId(parseNotes(fs.readFileSync('/sys/kernel/notes'), '/sys/kernel/notes'));
  } catch {
    return undefined;
  }
}

export class ElfFile {
  readonly sections: Section[] = [];
  readonly segments: Segment[] = [];
  /** ET_EXEC = 2, ET_DYN = 3 */
  readonly type: number;
  private readonly fd: number;

  constructor(readonly path: string) {
    this.fd = fs.openSync(path, 'r');
    try {
      const h = this.read(0, 64);
      if (h.length < 64 || h.readUInt32BE(0) !== 0x7f454c46) throw new ElfError(`${path} is not an ELF file`);
      if (h[4] !== 2 || h[5] !== 1) throw new ElfError(`${path} is not a 64-bit little-endian ELF file`);
      this.type = h.readUInt16LE(16);
      const phoff = Number(h.readBigUInt64LE(32));
      const shoff = Number(h.readBigUInt64LE(40));
      const phentsize = h.readUInt16LE(54);
      const phnum = h.readUInt16LE(56);
      const shentsize = h.readUInt16LE(58);
      const shnum = h.readUInt16LE(60);
      const shstrndx = h.readUInt16LE(62);
      if (phnum) {
        const ph = this.read(phoff, phentsize * phnum);
        for (let i = 0; i < phnum; i++) {
          const o = i * phentsize;
          this.segments.push({
            type: ph.readUInt32LE(o),
            flags: ph.readUInt32LE(o + 4),
            offset: ph.readBigUInt64LE(o + 8),
            vaddr: ph.readBigUInt64LE(o + 16),
            filesz: ph.readBigUInt64LE(o + 32),
            memsz: ph.readBigUInt64LE(o + 40),
          });
        }
      }
      if (shnum && shoff) {
        const sh = this.read(shoff, shentsize * shnum);
        const raw = [];
        for (let i = 0; i < shnum; i++) {
          const o = i * shentsize;
          raw.push({
            nameOff: sh.readUInt32LE(o),
            type: sh.readUInt32LE(o + 4),
            flags: sh.readBigUInt64LE(o + 8),
            addr: sh.readBigUInt64LE(o + 16),
            offset: Number(sh.readBigUInt64LE(o + 24)),
            size: Number(sh.readBigUInt64LE(o + 32)),
            link: sh.readUInt32LE(o + 40),
            entsize: Number(sh.readBigUInt64LE(o + 56)),
          });
        }
        const strtab = raw[shstrndx] ? this.read(raw[shstrndx].offset, raw[shstrndx].size) : Buffer.alloc(0);
        for (const r of raw) this.sections.push({ ...r, name: cstr(strtab, r.nameOff) });
      }
    } catch (e) {
      fs.closeSync(this.fd);
      throw e;
    }
  }

  close(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      /* already closed */
    }
  }

  read(offset: number, length: number): Buffer {
    const buf = Buffer.alloc(length);
    const n = fs.readSync(this.fd, buf, 0, length, offset);
    return n === length ? buf : buf.subarray(0, n);
  }

  section(name: string): Section | undefined {
    return this.sections.find((s) => s.name === name);
  }

  sectionData(s: Section): Buffer {
    return s.type === SHT_NOBITS ? Buffer.alloc(0) : this.read(s.offset, s.size);
  }

  /** All notes of the NOTE sections (or PT_NOTE segments when sections are stripped). */
  notes(sectionName?: string): ElfNote[] {
    const out: ElfNote[] = [];
    for (const s of this.sections) {
      if (s.type !== SHT_NOTE || (sectionName && s.name !== sectionName)) continue;
      out.push(...parseNotes(this.sectionData(s), s.name));
    }
    return out;
  }

  buildId(): string | undefined {
    return gnuBuildId(this.notes('.note.gnu.build-id'));
  }

  hasUsdt(): boolean {
    return this.section('.note.stapsdt') !== undefined;
  }

  usdtProbes(): UsdtProbe[] {
    const out: UsdtProbe[] = [];
    for (const n of this.notes('.note.stapsdt')) {
      if (n.name !== 'stapsdt' || n.type !== 3 || n.desc.length < 24) continue;
      const location = n.desc.readBigUInt64LE(0);
      const base = n.desc.readBigUInt64LE(8);
      const semaphore = n.desc.readBigUInt64LE(16);
      const strings = n.desc.toString('latin1', 24).split('\0');
      out.push({ provider: strings[0] ?? '', name: strings[1] ?? '', args: strings[2] ?? '', location, base, semaphore });
    }
    return out;
  }

  /** Function-like symbols of .symtab, or .dynsym when stripped. */
  symbols(which: 'symtab' | 'dynsym' | 'best' = 'best'): ElfSymbol[] {
    const pick = (type: number) => this.sections.find((s) => s.type === type);
    const sec = which === 'symtab' ? pick(SHT_SYMTAB) : which === 'dynsym' ? pick(SHT_DYNSYM) : pick(SHT_SYMTAB) ?? pick(SHT_DYNSYM);
    if (!sec) return [];
    const strSec = this.sections[sec.link];
    const strtab = strSec ? this.sectionData(strSec) : Buffer.alloc(0);
    const data = this.sectionData(sec);
    const out: ElfSymbol[] = [];
    const ent = sec.entsize || 24;
    for (let o = 0; o + ent <= data.length; o += ent) {
      const info = data[o + 4];
      const shndx = data.readUInt16LE(o + 6);
      const type = info & 0xf;
      if (shndx === 0 || (type !== 2 && type !== 10 && type !== 0 && type !== 1)) continue;
      const value = data.readBigUInt64LE(o + 8);
      if (value === 0n) continue;
      out.push({ name: cstr(strtab, data.readUInt32LE(o)), value, size: data.readBigUInt64LE(o + 16), type });
    }
    return out;
  }

  /**
   * Whether .dynsym defines `name` as a symbol other objects can bind to (dlsym finds it):
   * defined (not SHN_UNDEF), GLOBAL or WEAK binding, DEFAULT or PROTECTED visibility.
   * undefined when the file has no section headers or no .dynsym (the answer is unknown).
   */
  exportsDynamic(name: string): boolean | undefined {
    const sec = this.sections.find((s) => s.type === SHT_DYNSYM);
    if (!sec) return undefined;
    const strSec = this.sections[sec.link];
    if (!strSec) return undefined;
    const strtab = this.sectionData(strSec);
    const data = this.sectionData(sec);
    const want = Buffer.from(name + '\0', 'utf8');
    const ent = sec.entsize || 24;
    for (let o = 0; o + ent <= data.length; o += ent) {
      const off = data.readUInt32LE(o);
      if (off + want.length > strtab.length || strtab.compare(want, 0, want.length, off, off + want.length) !== 0) continue;
      const bind = data[o + 4] >> 4; // STB_GLOBAL = 1, STB_WEAK = 2
      const visibility = data[o + 5] & 3; // STV_DEFAULT = 0, STV_PROTECTED = 3
      const shndx = data.readUInt16LE(o + 6);
      if (shndx !== 0 && (bind === 1 || bind === 2) && (visibility === 0 || visibility === 3)) return true;
    }
    return false;
  }

  /** Converts a file offset into the link-time virtual address via the PT_LOAD holding it. */
  offsetToVaddr(offset: bigint): bigint | undefined {
    for (const s of this.segments) {
      if (s.type !== PT_LOAD) continue;
      if (offset >= s.offset && offset < s.offset + s.filesz) return offset - s.offset + s.vaddr;
    }
    return undefined;
  }

  hasDebugInfo(): boolean {
    return this.section('.debug_info') !== undefined || this.section('.debug_line') !== undefined;
  }
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

function cstr(buf: Buffer, off: number): string {
  if (off >= buf.length) return '';
  const end = buf.indexOf(0, off);
  return buf.toString('utf8', off, end < 0 ? buf.length : end);
}

/** Opens, runs fn, closes; ElfError and fs errors propagate. */
export function withElf<T>(path: string, fn: (elf: ElfFile) => T): T {
  const elf = new ElfFile(path);
  try {
    return fn(elf);
  } finally {
    elf.close();
  }
}
