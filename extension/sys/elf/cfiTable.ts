// Compiles an x86_64 ELF file's .eh_frame into the compact unwind rows the BPF walker reads
// (bpf/cfi_walk.bpf.h): for each code range, where the canonical frame address (CFA) is and where
// the caller's rbp was saved. The return address is always at CFA-8 on x86_64 (the call pushed
// it); a row whose rules say otherwise is marked unsupported, and the walk stops there.
//
// Why compile in user space: a DWARF CFI program is a little interpreter (advance, remember/restore
// state, expressions); the kernel side must be a bounded binary search plus two reads. The forms
// glibc, libstdc++ and gcc output actually use are kept: CFA = rsp+N or rbp+N, the .plt CFA
// expression (its value depends on the pc's position in a 16-byte stub), and the signal
// trampoline's (registers read from the ucontext the kernel pushed). The rest is counted by kind.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { ElfFile, PT_LOAD, withElf, type Section } from './elf';

/** Row kinds, as bpf/cfi_walk.bpf.h reads them. */
export const CFI_KIND = {
  /** no CFI covers this pc (between FDEs): the walk stops */
  none: 0,
  /** CFA = rsp + cfaOff */
  sp: 1,
  /** CFA = rbp + cfaOff */
  bp: 2,
  /** .plt stub: CFA = rsp + cfaOff, + 8 once (pc & 15) >= arg (past the stub's push) */
  plt: 3,
  /** signal trampoline (__restore_rt): the interrupted rip, rsp and rbp are in the ucontext at rsp */
  signal: 4,
  /** the return address is undefined: the outermost frame (_start, clone's child) */
  outermost: 5,
  /** CFI this table cannot express (counted): the walk stops */
  unsupported: 6,
} as const;

export interface CfiRow {
  /** link-time virtual address where the rule starts to apply */
  pc: number;
  kind: number;
  cfaOff: number;
  /** where the caller's rbp is saved, relative to the CFA (negative); 0 = rbp unchanged */
  rbpOff: number;
  arg: number;
}

export interface CfiTable {
  rows: CfiRow[];
  /** FDEs compiled */
  fdes: number;
  /** of which from .debug_frame, for code .eh_frame does not cover */
  debugFrameFdes?: number;
  /** rows that could not be expressed, by why (e.g. "cfa-expression", "cfa-register 10") */
  unsupported: Record<string, number>;
  /**
   * Where a separate debug file was looked for (.eh_frame left code uncovered and the file has no
   * .debug_frame of its own): one added, changed or removed there changes the table.
   */
  debugFiles?: string[];
}

/** Bytes per row in the BPF map (struct cfi_row). */
export const CFI_ROW_SIZE = 12;

/** Rows one file may compile to (node's 22 MB executable has 372k): a crafted .eh_frame stops here with an error, not after gigabytes of rows. */
export const CFI_MAX_FILE_ROWS = 1_500_000;

const DW_CFA_REG_RBP = 6;
const DW_CFA_REG_RSP = 7;
const DW_CFA_REG_RA = 16;

type RegRule = { kind: 'undef' } | { kind: 'same' } | { kind: 'offset'; off: number } | { kind: 'other'; what: string };
type CfaRule = { kind: 'reg'; reg: number; off: number } | { kind: 'expr'; expr: Buffer };
interface State {
  cfa: CfaRule;
  rbp: RegRule;
  ra: RegRule;
}

interface Cie {
  codeAlign: number;
  dataAlign: number;
  raReg: number;
  fdeEnc: number;
  hasAugData: boolean;
  signal: boolean;
  initial: Buffer;
}

class Reader {
  constructor(
    readonly buf: Buffer,
    public pos: number,
    /** virtual address of buf[0], for pc-relative pointers */
    readonly vaddr: number,
  ) {}
  u8(): number {
    return this.buf[this.pos++];
  }
  u16(): number {
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  s32(): number {
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  u64(): number {
    const v = Number(this.buf.readBigUInt64LE(this.pos));
    this.pos += 8;
    return v;
  }
  uleb(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw new RangeError('uleb128 past the end');
      result += (b & 0x7f) * mul;
      mul *= 128;
      if (!(b & 0x80)) return result;
    }
  }
  sleb(): number {
    let result = 0;
    let mul = 1;
    let b: number;
    do {
      b = this.buf[this.pos++];
      if (b === undefined) throw new RangeError('sleb128 past the end');
      result += (b & 0x7f) * mul;
      mul *= 128;
    } while (b & 0x80);
    return b & 0x40 ? result - mul : result;
  }
  /** A DWARF block: uleb128 length, then the bytes. */
  block(): Buffer {
    const n = this.uleb();
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  cstr(): string {
    const end = this.buf.indexOf(0, this.pos);
    const s = this.buf.toString('latin1', this.pos, end);
    this.pos = end + 1;
    return s;
  }
  /** A DW_EH_PE-encoded pointer; pcrel is relative to the field's own address. */
  pointer(enc: number): number {
    if (enc === 0xff) return 0;
    const at = this.vaddr + this.pos;
    let v: number;
    switch (enc & 0x0f) {
      case 0x00:
        v = this.u64();
        break;
      case 0x01:
        v = this.uleb();
        break;
      case 0x02:
        v = this.u16();
        break;
      case 0x03:
        v = this.u32();
        break;
      case 0x04:
        v = this.u64();
        break;
      case 0x09:
        v = this.sleb();
        break;
      case 0x0a:
        v = this.buf.readInt16LE(this.pos);
        this.pos += 2;
        break;
      case 0x0b:
        v = this.s32();
        break;
      case 0x0c:
        v = Number(this.buf.readBigInt64LE(this.pos));
        this.pos += 8;
        break;
      default:
        throw new RangeError(`pointer encoding 0x${enc.toString(16)}`);
    }
    if ((enc & 0x70) === 0x10) v += at;
    return v;
  }
}

function parseCie(r: Reader, end: number): Cie {
  const version = r.u8();
  const aug = r.cstr();
  if (aug.includes('eh')) r.u64();
  const codeAlign = r.uleb();
  const dataAlign = r.sleb();
  // DWARF 4 CIEs (.debug_frame) give the address and segment selector sizes here
  if (version >= 4) r.pos += 2;
  const raReg = version === 1 ? r.u8() : r.uleb();
  const cie: Cie = { codeAlign, dataAlign, raReg, fdeEnc: 0, hasAugData: false, signal: false, initial: Buffer.alloc(0) };
  if (aug.startsWith('z')) {
    cie.hasAugData = true;
    const len = r.uleb();
    const augEnd = r.pos + len;
    for (const c of aug.slice(1)) {
      if (c === 'R') cie.fdeEnc = r.u8();
      else if (c === 'P') r.pointer(r.u8() & 0x7f);
      else if (c === 'L') r.u8();
      else if (c === 'S') cie.signal = true;
    }
    r.pos = augEnd;
  }
  cie.initial = r.buf.subarray(r.pos, end);
  return cie;
}

/** The gcc/binutils .plt CFA expression: rsp+8, +8 more once (rip & 15) >= N. Returns N. */
function pltThreshold(e: Buffer): number | undefined {
  // DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
  if (e.length !== 11 || e[0] !== 0x77 || e[1] !== 0x08 || e[2] !== 0x80 || e[3] !== 0x00 || e[4] !== 0x3f || e[5] !== 0x1a) return undefined;
  if (e[6] < 0x30 || e[6] > 0x4f || e[7] !== 0x2a || e[8] !== 0x33 || e[9] !== 0x24 || e[10] !== 0x22) return undefined;
  return e[6] - 0x30;
}

/** glibc's __restore_rt: CFA = *(rsp + N) (the saved rsp in the ucontext). */
function isSignalCfa(e: Buffer): boolean {
  return e.length >= 3 && e[0] === 0x77 && e[e.length - 1] === 0x06;
}

/** Counts a row that cannot be expressed, by why; returns it (kind unsupported). */
function bad(row: CfiRow, unsupported: Record<string, number>, why: string): CfiRow {
  unsupported[why] = (unsupported[why] ?? 0) + 1;
  return row;
}

function compact(s: State, cie: Cie, pc: number, unsupported: Record<string, number>): CfiRow {
  const row: CfiRow = { pc, kind: CFI_KIND.unsupported, cfaOff: 0, rbpOff: 0, arg: 0 };
  if (s.ra.kind === 'undef') return { ...row, kind: CFI_KIND.outermost };
  if (s.cfa.kind === 'expr') {
    const n = pltThreshold(s.cfa.expr);
    if (n !== undefined) return { ...row, kind: CFI_KIND.plt, cfaOff: 8, arg: n };
    if (cie.signal && isSignalCfa(s.cfa.expr)) return { ...row, kind: CFI_KIND.signal };
    return bad(row, unsupported, 'cfa-expression');
  }
  if (s.ra.kind !== 'offset' || s.ra.off !== -8) return bad(row, unsupported, 'return-address-rule');
  if (s.cfa.reg !== DW_CFA_REG_RSP && s.cfa.reg !== DW_CFA_REG_RBP) return bad(row, unsupported, `cfa-register ${s.cfa.reg}`);
  if (s.cfa.off < -0x80000000 || s.cfa.off > 0x7fffffff) return bad(row, unsupported, 'cfa-offset-range');
  if (s.rbp.kind === 'offset') {
    if (s.rbp.off < -0x8000 || s.rbp.off >= 0 || s.rbp.off === 0) return bad(row, unsupported, 'rbp-offset-range');
    row.rbpOff = s.rbp.off;
  } else if (s.rbp.kind === 'other') return bad(row, unsupported, `rbp-${s.rbp.what}`);
  row.kind = s.cfa.reg === DW_CFA_REG_RSP ? CFI_KIND.sp : CFI_KIND.bp;
  row.cfaOff = s.cfa.off;
  return row;
}

const clone = (s: State): State => ({ cfa: { ...s.cfa }, rbp: { ...s.rbp }, ra: { ...s.ra } });

function setReg(s: State, reg: number, rule: RegRule): void {
  if (reg === DW_CFA_REG_RBP) s.rbp = rule;
  else if (reg === DW_CFA_REG_RA) s.ra = rule;
}

/** Runs a CFI program from `state`, calling emit(loc, state) before each advance. initial: the CIE's state (DW_CFA_restore). */
function execute(r: Reader, end: number, cie: Cie, state: State, initial: State | undefined, loc: { pc: number }, emit: (pc: number, s: State) => void): void {
  const stack: State[] = [];
  const advance = (delta: number) => {
    emit(loc.pc, state);
    loc.pc += delta * cie.codeAlign;
  };
  const restore = (reg: number) => {
    if (!initial) return;
    if (reg === DW_CFA_REG_RBP) state.rbp = { ...initial.rbp };
    else if (reg === DW_CFA_REG_RA) state.ra = { ...initial.ra };
  };
  while (r.pos < end) {
    const op = r.u8();
    const hi = op & 0xc0;
    const low = op & 0x3f;
    if (hi === 0x40) advance(low);
    else if (hi === 0x80) setReg(state, low, { kind: 'offset', off: r.uleb() * cie.dataAlign });
    else if (hi === 0xc0) restore(low);
    else executeExtended(r, op, cie, state, stack, advance, restore, loc, emit);
  }
}

function executeExtended(r: Reader, op: number, cie: Cie, state: State, stack: State[], advance: (d: number) => void, restore: (reg: number) => void, loc: { pc: number }, emit: (pc: number, s: State) => void): void {
  switch (op) {
    case 0x00: // nop
    case 0x2e: // GNU_args_size
      if (op === 0x2e) r.uleb();
      return;
    case 0x01: {
      const to = r.pointer(cie.fdeEnc);
      emit(loc.pc, state);
      loc.pc = to;
      return;
    }
    case 0x02:
      return advance(r.u8());
    case 0x03:
      return advance(r.u16());
    case 0x04:
      return advance(r.u32());
    case 0x05:
      return setReg(state, r.uleb(), { kind: 'offset', off: r.uleb() * cie.dataAlign });
    case 0x06:
      return restore(r.uleb());
    case 0x07:
      return setReg(state, r.uleb(), { kind: 'undef' });
    case 0x08:
      return setReg(state, r.uleb(), { kind: 'same' });
    case 0x09: {
      const reg = r.uleb();
      r.uleb();
      return setReg(state, reg, { kind: 'other', what: 'register' });
    }
    case 0x0a:
      stack.push(clone(state));
      return;
    case 0x0b: {
      const s = stack.pop();
      if (s) Object.assign(state, s);
      return;
    }
    case 0x0c:
      state.cfa = { kind: 'reg', reg: r.uleb(), off: r.uleb() };
      return;
    case 0x0d: {
      const reg = r.uleb();
      state.cfa = { kind: 'reg', reg, off: state.cfa.kind === 'reg' ? state.cfa.off : 0 };
      return;
    }
    case 0x0e:
      if (state.cfa.kind === 'reg') state.cfa.off = r.uleb();
      else r.uleb();
      return;
    case 0x0f:
      state.cfa = { kind: 'expr', expr: r.block() };
      return;
    case 0x10:
    case 0x16: {
      const reg = r.uleb();
      r.block();
      return setReg(state, reg, { kind: 'other', what: op === 0x10 ? 'expression' : 'val-expression' });
    }
    case 0x11:
      return setReg(state, r.uleb(), { kind: 'offset', off: r.sleb() * cie.dataAlign });
    case 0x12:
      state.cfa = { kind: 'reg', reg: r.uleb(), off: r.sleb() * cie.dataAlign };
      return;
    case 0x13:
      if (state.cfa.kind === 'reg') state.cfa.off = r.sleb() * cie.dataAlign;
      else r.sleb();
      return;
    case 0x14:
    case 0x15: {
      const reg = r.uleb();
      if (op === 0x14) r.uleb();
      else r.sleb();
      return setReg(state, reg, { kind: 'other', what: 'val-offset' });
    }
    case 0x2f:
      return setReg(state, r.uleb(), { kind: 'offset', off: -r.uleb() * cie.dataAlign });
    default:
      throw new RangeError(`unknown CFA opcode 0x${op.toString(16)}`);
  }
}

interface FdeRows {
  start: number;
  end: number;
  rows: CfiRow[];
}

/** One FDE's rows, from its start to its end (exclusive). */
function fdeRows(r: Reader, end: number, cie: Cie, start: number, range: number, unsupported: Record<string, number>): FdeRows {
  const init: State = { cfa: { kind: 'reg', reg: DW_CFA_REG_RSP, off: 8 }, rbp: { kind: 'same' }, ra: { kind: 'offset', off: -8 } };
  const loc = { pc: start };
  const states: { pc: number; s: State }[] = [];
  const emit = (pc: number, s: State) => {
    if (states.length && states[states.length - 1].pc === pc) states[states.length - 1].s = clone(s);
    else states.push({ pc, s: clone(s) });
  };
  const ci = new Reader(cie.initial, 0, 0);
  execute(ci, cie.initial.length, cie, init, undefined, { pc: start }, () => undefined);
  const state = clone(init);
  execute(r, end, cie, state, init, loc, emit);
  emit(loc.pc, state);
  const rows: CfiRow[] = [];
  for (const { pc, s } of states) {
    if (pc >= start + range) break;
    rows.push(compact(s, cie, pc, unsupported));
  }
  return { start, end: start + range, rows };
}

const sameRule = (a: CfiRow, b: CfiRow) => a.kind === b.kind && a.cfaOff === b.cfaOff && a.rbpOff === b.rbpOff && a.arg === b.arg;

/** A CFI section's bytes: .eh_frame (pc-relative pointers, CIE id 0) or .debug_frame (absolute addresses, CIE id all ones). */
interface FrameSection {
  data: Buffer;
  vaddr: number;
  eh: boolean;
}

/** One CIE or FDE record: its body (after length and id), end, and id (a CIE pointer in an FDE). */
interface Entry {
  body: number;
  end: number;
  cie: boolean;
  /** where the FDE's CIE starts */
  ciePos: number;
}

function entryAt(f: FrameSection, pos: number): Entry | undefined {
  const { data } = f;
  if (pos + 8 > data.length) return undefined;
  let len = data.readUInt32LE(pos);
  let hdr = 4;
  if (len === 0xffffffff) {
    if (pos + 16 > data.length) return undefined;
    len = Number(data.readBigUInt64LE(pos + 4));
    hdr = 12;
  }
  const end = pos + hdr + len;
  // .debug_frame's 64-bit format has 8-byte CIE ids and pointers; .eh_frame's are always 4 bytes
  const wide = !f.eh && hdr === 12;
  const idAt = pos + hdr;
  if (len === 0 || end > data.length || idAt + (wide ? 8 : 4) > end) return { body: end, end, cie: false, ciePos: -1 };
  const id = wide ? data.readBigUInt64LE(idAt) : BigInt(data.readUInt32LE(idAt));
  const body = idAt + (wide ? 8 : 4);
  const cie = f.eh ? id === 0n : id === (wide ? 0xffffffffffffffffn : 0xffffffffn);
  return { body, end, cie, ciePos: cie ? pos : f.eh ? idAt - Number(id) : Number(id) };
}

/** Executable sections (SHF_ALLOC | SHF_EXECINSTR), else executable segments: where code is (FDEs elsewhere, e.g. of code the linker dropped, are left out). */
function codeRanges(elf: ElfFile): [number, number][] {
  const secs = elf.sections.filter((s) => (s.flags & 6n) === 6n && s.size > 0);
  if (secs.length) return secs.map((s) => [Number(s.addr), Number(s.addr) + s.size]);
  return elf.segments.filter((s) => s.type === PT_LOAD && s.flags & 1).map((s) => [Number(s.vaddr), Number(s.vaddr + s.memsz)]);
}

/** Decoded CIEs of one section by record position. */
function cieReader(f: FrameSection): (pos: number) => Cie | undefined {
  const cies = new Map<number, Cie | undefined>();
  return (pos) => {
    if (cies.has(pos)) return cies.get(pos);
    const e = entryAt(f, pos);
    let cie: Cie | undefined;
    if (e?.cie && e.end > e.body) {
      cie = parseCie(new Reader(f.data, e.body, f.vaddr), e.end);
      // .debug_frame: addresses are plain 8-byte values (the CIE has no 'R' augmentation)
      if (!f.eh && !cie.hasAugData) cie.fdeEnc = 0;
    }
    cies.set(pos, cie);
    return cie;
  };
}

/**
 * The FDEs of one CFI section, compiled. keep(start, end) says which code ranges to compile (the
 * rest is skipped before its program runs); rows count against budget.
 */
function sectionFdes(f: FrameSection, keep: (start: number, end: number) => boolean, unsupported: Record<string, number>, budget: { rows: number; max: number }): FdeRows[] {
  const cieAt = cieReader(f);
  const fdes: FdeRows[] = [];
  for (let pos = 0, e = entryAt(f, 0); e; pos = e.end, e = entryAt(f, pos)) {
    // a zero length ends the section (the .eh_frame terminator; readelf reads .debug_frame so too)
    if (e.end === e.body && e.ciePos < 0 && f.data.readUInt32LE(pos) === 0) break;
    if (e.cie || e.ciePos < 0) continue;
    const cie = cieAt(e.ciePos);
    if (!cie) {
      unsupported['fde-without-cie'] = (unsupported['fde-without-cie'] ?? 0) + 1;
      continue;
    }
    const r = new Reader(f.data, e.body, f.vaddr);
    const start = r.pointer(cie.fdeEnc);
    const range = r.pointer(cie.fdeEnc & 0x0f);
    if (range <= 0 || !keep(start, start + range)) continue;
    if (cie.hasAugData) r.pos += r.uleb();
    const rows = fdeRows(r, e.end, cie, start, range, unsupported);
    budget.rows += rows.rows.length;
    if (budget.rows > budget.max) throw new RangeError(`${f.eh ? '.eh_frame' : '.debug_frame'} compiles to more than ${budget.max} rows`);
    fdes.push(rows);
  }
  return fdes;
}

/** Whether [start, end) overlaps a range of sorted, disjoint-start FDEs. */
function overlaps(sorted: FdeRows[], start: number, end: number): boolean {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid].start < end) lo = mid + 1;
    else hi = mid;
  }
  // sorted[lo - 1] is the last FDE starting before end; an earlier one may reach further
  for (let i = lo - 1; i >= 0 && i >= lo - 4; i--) if (sorted[i].end > start) return true;
  return false;
}

/** Bytes of the file's code no FDE covers, gaps under 16 bytes (alignment padding) left out. */
function uncoveredCode(sorted: FdeRows[], code: [number, number][]): number {
  let n = 0;
  for (const [lo, hi] of code) {
    let at = lo;
    for (const f of sorted) {
      if (f.end <= at || f.start >= hi) continue;
      if (f.start - at >= 16) n += f.start - at;
      at = Math.max(at, f.end);
    }
    if (hi - at >= 16) n += hi - at;
  }
  return n;
}

/** .debug_frame decompressed from SHF_COMPRESSED (zlib) when it is; undefined when it cannot be read within maxBytes. */
function debugFrameData(elf: ElfFile, sec: Section, maxBytes: number, unsupported: Record<string, number>): Buffer | undefined {
  const SHF_COMPRESSED = 0x800n;
  if (!(sec.flags & SHF_COMPRESSED)) {
    if (sec.size <= maxBytes) return elf.sectionData(sec);
    unsupported['debug_frame-too-large'] = 1;
    return undefined;
  }
  const raw = elf.sectionData(sec);
  // Elf64_Chdr: ch_type (1 = zlib), reserved, ch_size, ch_addralign
  if (raw.length < 24 || raw.readUInt32LE(0) !== 1) {
    unsupported['debug_frame-compression'] = 1;
    return undefined;
  }
  if (Number(raw.readBigUInt64LE(8)) > maxBytes) {
    unsupported['debug_frame-too-large'] = 1;
    return undefined;
  }
  try {
    return zlib.inflateSync(raw.subarray(24), { maxOutputLength: maxBytes });
  } catch {
    unsupported['debug_frame-corrupt'] = 1;
    return undefined;
  }
}

/** Where the file's separate debug file may be, by build-id (DIR/.build-id/xx/rest.debug), in the order looked at. */
function debugFileCandidates(elf: ElfFile, debugDirs: readonly string[]): string[] {
  const id = elf.buildId();
  if (!id || !/^[0-9a-f]{4,}$/.test(id)) return [];
  return debugDirs.map((dir) => path.join(dir, '.build-id', id.slice(0, 2), `${id.slice(2)}.debug`));
}

/** The file's separate debug file by build-id (/usr/lib/debug/.build-id/xx/rest.debug), checked to carry the same build-id. */
export function separateDebugFile(elf: ElfFile, debugDirs: readonly string[]): ElfFile | undefined {
  const id = elf.buildId();
  for (const p of debugFileCandidates(elf, debugDirs)) {
    let dbg: ElfFile | undefined;
    try {
      if (!fs.statSync(p).isFile()) continue;
      dbg = new ElfFile(p);
      if (dbg.buildId() === id) return dbg;
    } catch {
      /* absent or unreadable: the next directory */
    }
    dbg?.close();
  }
  return undefined;
}

export interface CompileOptions {
  /** rows the file may compile to */
  maxRows?: number;
  /** where separate debug files are looked up by build-id (none: only the file's own .debug_frame) */
  debugDirs?: readonly string[];
}

/** .debug_frame bytes read at most (decompressed): libjvm's debug file has 1.6 MB. */
const MAX_DEBUG_FRAME_BYTES = 32 << 20;

/**
 * Compiles .eh_frame of an open ELF file and, where it leaves code uncovered (programs built with
 * -fno-asynchronous-unwind-tables -g keep their CFI in .debug_frame only), the FDEs of .debug_frame
 * (the file's own, else its separate debug file's) for that code. An empty table when it has neither.
 */
export function compileCfi(elf: ElfFile, opts: CompileOptions | number = {}): CfiTable {
  const { maxRows = CFI_MAX_FILE_ROWS, debugDirs = [] } = typeof opts === 'number' ? { maxRows: opts } : opts;
  const unsupported: Record<string, number> = {};
  const budget = { rows: 0, max: maxRows };
  const code = codeRanges(elf);
  const inCode = (start: number) => code.some(([lo, hi]) => start >= lo && start < hi);
  const sec = elf.section('.eh_frame');
  const fdes = sec?.size ? sectionFdes({ data: elf.sectionData(sec), vaddr: Number(sec.addr), eh: true }, () => true, unsupported, budget) : [];
  fdes.sort((a, b) => a.start - b.start);
  const uncovered = uncoveredCode(fdes, code);
  const extra = uncovered ? debugFrameFdes(elf, fdes, inCode, debugDirs, unsupported, budget) : [];
  const debugFiles = uncovered && !elf.section('.debug_frame') ? debugFileCandidates(elf, debugDirs) : [];
  // rows keep 32-bit pcs (link-time addresses of shared objects and PIEs start at 0)
  const rows = mergeFdes([...fdes, ...extra]).filter((r) => r.pc <= 0xffffffff || !(unsupported['pc-above-4GiB'] = (unsupported['pc-above-4GiB'] ?? 0) + 1));
  return { rows, fdes: fdes.length + extra.length, ...(extra.length ? { debugFrameFdes: extra.length } : {}), unsupported, ...(debugFiles.length ? { debugFiles } : {}) };
}

/** FDEs of .debug_frame (the file's, else its separate debug file's) for code in no .eh_frame FDE. */
function debugFrameFdes(elf: ElfFile, eh: FdeRows[], inCode: (pc: number) => boolean, debugDirs: readonly string[], unsupported: Record<string, number>, budget: { rows: number; max: number }): FdeRows[] {
  const own = elf.section('.debug_frame');
  const dbg = own ? undefined : separateDebugFile(elf, debugDirs);
  try {
    const sec = own ?? dbg?.section('.debug_frame');
    if (!sec || !sec.size) return [];
    const data = debugFrameData(dbg ?? elf, sec, MAX_DEBUG_FRAME_BYTES, unsupported);
    if (!data) return [];
    return sectionFdes({ data, vaddr: 0, eh: false }, (start, end) => inCode(start) && !overlaps(eh, start, end), unsupported, budget);
  } catch (e) {
    // a .debug_frame that cannot be read leaves the .eh_frame rows as they are
    unsupported[e instanceof RangeError && /more than/.test(e.message) ? 'debug_frame-too-many-rows' : 'debug_frame-corrupt'] = 1;
    return [];
  } finally {
    dbg?.close();
  }
}

/** Sorted rows of all FDEs, a "none" row at each gap, consecutive equal rules merged. */
function mergeFdes(fdes: FdeRows[]): CfiRow[] {
  fdes.sort((a, b) => a.start - b.start);
  const out: CfiRow[] = [];
  const push = (row: CfiRow) => {
    const last = out[out.length - 1];
    if (last && last.pc === row.pc) out[out.length - 1] = row;
    else if (!last || !sameRule(last, row)) out.push(row);
  };
  for (let i = 0; i < fdes.length; i++) {
    const f = fdes[i];
    for (const row of f.rows) push(row);
    const next = fdes[i + 1];
    if (!next || next.start > f.end) push({ pc: f.end, kind: CFI_KIND.none, cfaOff: 0, rbpOff: 0, arg: 0 });
  }
  return out;
}

export function compileCfiFile(file: string, opts: CompileOptions = {}): CfiTable {
  return withElf(file, (elf) => compileCfi(elf, opts));
}

/** Rows as struct cfi_row (12 bytes each): u32 pc, s32 cfa_off, s16 rbp_off, u8 kind, u8 arg. */
export function encodeRows(rows: CfiRow[]): Buffer {
  const b = Buffer.alloc(rows.length * CFI_ROW_SIZE);
  rows.forEach((r, i) => {
    const o = i * CFI_ROW_SIZE;
    b.writeUInt32LE(r.pc >>> 0, o);
    b.writeInt32LE(r.cfaOff, o + 4);
    b.writeInt16LE(r.rbpOff, o + 8);
    b.writeUInt8(r.kind, o + 10);
    b.writeUInt8(r.arg, o + 11);
  });
  return b;
}
