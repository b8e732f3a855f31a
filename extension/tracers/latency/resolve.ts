// Which instructions of a running process to probe for "how long does FUNCTION (or the function
// at FILE:LINE) take": the function's entry and the instructions its calls end at. Files are the
// ones the process maps, reached through /proc/PID/map_files or /proc/PID/root (mappedFile.ts),
// never a same-named file here. Source lines come from the DWARF line tables (llvm-dwarfdump),
// return sites from the disassembly (objdump); a function only ever inlined is refused with the
// reason, since there is no entry to probe.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { inputError, unsuitableError } from '../../protocol/errors';
import { mapsOrExplain } from '../../sys/proc/processes';
import { reachMapped, type ReachedFile } from '../../sys/proc/mappedFile';
import { withElf, PT_LOAD, type ElfFile } from '../../sys/elf/elf';
import { parseDebugLine, pickLine, returnSites, type FunctionSymbol } from './lines';

export interface ResolvedFunction {
  /** as the user would write it (demangled) */
  name: string;
  module: ReachedFile;
  entry: bigint;
  size: bigint;
  /** file offsets for the uprobes */
  entryOffset: number;
  retOffsets: number[];
  tailCalls: string[];
  /** where a FILE:LINE target resolved to */
  line?: { file: string; line: number };
  /** why an exception (or a moving stack) may pass through a call: a C++ runtime, Go; undefined when none */
  unwinds?: string;
}

const STT_FUNC = 2;
const TOOL_MAX_BUFFER = 256 << 20;

function run(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { encoding: 'utf8', maxBuffer: TOOL_MAX_BUFFER });
  if (r.error) throw unsuitableError(`${tool} could not run (${r.error.message}); install it (apt-get install ${tool.startsWith('llvm') ? 'llvm' : 'binutils'})`);
  return r.stdout ?? '';
}

/** The process's executable first, then each other file it maps code from. */
function codeFiles(pid: number): ReachedFile[] {
  const maps = mapsOrExplain(pid);
  const exe = maps.find((m) => m.offset === 0n && m.path.startsWith('/'))?.path;
  const seen = new Set<string>();
  const out: ReachedFile[] = [];
  for (const m of [...maps].sort((a, b) => Number(b.path === exe) - Number(a.path === exe))) {
    if (!m.perms.includes('x') || !m.path.startsWith('/') || seen.has(m.path)) continue;
    seen.add(m.path);
    try {
      out.push(reachMapped(pid, m));
    } catch {
      // a file this process cannot reach is named when nothing else matched
    }
  }
  return out;
}

function functions(elf: ElfFile): FunctionSymbol[] {
  return elf.symbols('best').filter((s) => s.type === STT_FUNC && s.value !== 0n && s.size > 0n);
}

function fileOffset(elf: ElfFile, vaddr: bigint): number {
  const seg = elf.segments.find((s) => s.type === PT_LOAD && vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz);
  if (!seg) throw unsuitableError(`address 0x${vaddr.toString(16)} of ${elf.path} lies in no loaded segment`);
  return Number(vaddr - seg.vaddr + seg.offset);
}

/** Demangled names of C++ symbols that may be `name` (one llvm-cxxfilt run). */
function demangled(mangled: string[]): Map<string, string> {
  if (!mangled.length) return new Map();
  const out = run('llvm-cxxfilt', mangled).split('\n');
  return new Map(mangled.map((m, i) => [m, out[i] ?? m]));
}

function matches(symbols: FunctionSymbol[], name: string): FunctionSymbol[] {
  const exact = symbols.filter((s) => s.name === name);
  if (exact.length) return exact;
  const last = name.split('::').pop()!.replace(/\(.*$/, '');
  const cxx = demangled(symbols.filter((s) => s.name.startsWith('_Z') && s.name.includes(last)).map((s) => s.name));
  return symbols.filter((s) => {
    const d = cxx.get(s.name);
    return d !== undefined && (d === name || d.startsWith(`${name}(`));
  });
}

/** Why a function with no symbol of its own cannot be probed: inlined, or compiler clones only. */
function notFound(files: ReachedFile[], name: string): never {
  const exe = files[0];
  if (exe) {
    const clones = withElf(exe.path, (elf) => functions(elf).map((s) => s.name).filter((n) => n.startsWith(`${name}.`)));
    const info = run('llvm-dwarfdump', ['--debug-info', `--name=${name}`, exe.path]);
    if (/DW_AT_inline/.test(info) || (!clones.length && /DW_TAG_inlined_subroutine/.test(info))) {
      throw unsuitableError(`${name} is inlined into its callers everywhere in ${exe.name}: it has no entry of its own to probe (its DWARF says DW_AT_inline). Measure its caller, or build it with __attribute__((noinline))`);
    }
    if (clones.length) {
      throw unsuitableError(`${name} exists in ${exe.name} only as compiler clones (${clones.join(', ')}): name one of them to measure the calls that reach it`);
    }
  }
  if (files.length === 1) throw inputError(`no function ${name} in ${files[0].name} (its symbol tables name none): check the name (nm -C ${files[0].name})`);
  throw inputError(`no function ${name} in the files process maps code from (${files.map((f) => path.basename(f.name)).join(', ')})`);
}

function byName(files: ReachedFile[], name: string): { file: ReachedFile; sym: FunctionSymbol } {
  for (const file of files) {
    const found = withElf(file.path, (elf) => matches(functions(elf), name));
    const distinct = [...new Map(found.map((s) => [s.value, s])).values()];
    if (distinct.length > 1) throw inputError(`${distinct.length} functions are named ${name} in ${file.name} (${distinct.map((s) => `0x${s.value.toString(16)}`).join(', ')}): name it by FILE:LINE instead`);
    if (distinct.length === 1) return { file, sym: distinct[0] };
  }
  return notFound(files, name);
}

function byLine(files: ReachedFile[], file: string, line: number): { file: ReachedFile; sym: FunctionSymbol; line: { file: string; line: number } } {
  let why = '';
  for (const f of files) {
    const rows = parseDebugLine(run('llvm-dwarfdump', ['--debug-line', f.path]));
    if (!rows.length) continue;
    const pick = withElf(f.path, (elf) => pickLine(rows, functions(elf), file, line));
    if ('function' in pick) return { file: f, sym: pick.function, line: { file: pick.file, line: pick.line } };
    why ||= pick.why;
  }
  throw inputError(`${file}:${line}: ${why || 'no file the process maps has DWARF line tables (build with -g)'}`);
}

/** Why a uretprobe's swapped return address could break the program: C++ exceptions unwind through
 * calls (a C++ runtime is mapped or linked, or the module has exception tables), Go moves its
 * stacks. Without a pid (a file probed machine-wide) the file alone says. */
function unwinder(pid: number | undefined, elf: ElfFile): string | undefined {
  const cxx = pid === undefined ? undefined : mapsOrExplain(pid).find((m) => /\/lib(std)?c\+\+(abi)?\.so/.test(m.path));
  if (cxx) return `it maps the C++ runtime (${path.basename(cxx.path)}), whose exceptions unwind through calls`;
  const dynstr = elf.section('.dynstr');
  if (dynstr && /lib(std)?c\+\+(abi)?\.so/.test(elf.sectionData(dynstr).toString('latin1'))) return 'it links the C++ runtime, whose exceptions unwind through calls';
  if (elf.section('.gcc_except_table')) return 'it has C++ exception tables (.gcc_except_table)';
  if (elf.section('.gopclntab') || elf.section('.go.buildinfo')) return 'it is a Go program, whose runtime moves stacks';
  return undefined;
}

/** The entry, return sites and tail calls of a function symbol found in `file`. */
function describe(file: ReachedFile, sym: FunctionSymbol, line: ResolvedFunction['line'], pid: number | undefined): ResolvedFunction {
  return withElf(file.path, (elf) => {
    const dis = run('objdump', ['-d', '--no-show-raw-insn', `--start-address=0x${sym.value.toString(16)}`, `--stop-address=0x${(sym.value + sym.size).toString(16)}`, file.path]);
    const sites = returnSites(dis, sym.value, sym.value + sym.size);
    const name = sym.name.startsWith('_Z') ? (demangled([sym.name]).get(sym.name) ?? sym.name) : sym.name;
    return {
      name,
      module: file,
      entry: sym.value,
      size: sym.size,
      entryOffset: fileOffset(elf, sym.value),
      retOffsets: sites.rets.map((a) => fileOffset(elf, a)),
      tailCalls: sites.tailCalls,
      line,
      unwinds: unwinder(pid, elf),
    };
  });
}

/** A `FILE:LINE` target as [file, line], or undefined for a function name. */
function fileLine(target: string): [string, number] | undefined {
  const fl = /^(.*[./][^:]*):(\d+)$/.exec(target);
  return fl ? [fl[1], Number(fl[2])] : undefined;
}

/** The function of a `FUNCTION` or `FILE:LINE` target in a running process. */
export function resolveTarget(pid: number, target: string): ResolvedFunction {
  const files = codeFiles(pid);
  const fl = fileLine(target);
  const found = fl ? byLine(files, fl[0], fl[1]) : { ...byName(files, target), line: undefined };
  return describe(found.file, found.sym, found.line, pid);
}

/**
 * The function of a `FUNCTION` or `FILE:LINE` target in one file, whichever processes run it (the
 * fleet agent probes a file machine-wide): refused as resolveTarget refuses it (missing, only
 * inlined, only compiler clones, named twice).
 */
export function resolveInFile(file: ReachedFile, target: string): ResolvedFunction {
  const fl = fileLine(target);
  const found = fl ? byLine([file], fl[0], fl[1]) : { ...byName([file], target), line: undefined };
  return describe(found.file, found.sym, found.line, undefined);
}
