// Cheap checks of a binary that predict bad stacks: missing frame pointers (the kernel walks
// user stacks by frame pointer only) and missing debug info (no file:line).
import { ElfFile } from './elf';

const PUSH_RBP = 0x55;
const MOV_RSP_RBP = Buffer.from([0x48, 0x89, 0xe5]);
/** How far into a function its `mov %rsp,%rbp` is looked for. */
const PROLOGUE_SCAN = 96;
const ENDBR64 = Buffer.from([0xf3, 0x0f, 0x1e, 0xfa]);
/** Startup and teardown code of the C runtime objects (crt1.o, crti.o, crtbegin.o) linked into executables. */
const CRT_FUNCTIONS = new Set(['_start', '_init', '_fini', 'deregister_tm_clones', 'register_tm_clones', '__do_global_dtors_aux', 'frame_dummy', '__libc_csu_init', '__libc_csu_fini', '_dl_relocate_static_pie', '__do_global_ctors_aux']);

export interface BinaryReport {
  path: string;
  debugInfo: boolean;
  /** share of sampled functions whose prologue sets up %rbp, 0..1; undefined if none sampled */
  framePointerShare?: number;
  buildId?: string;
  /** call frame information present (.eh_frame or .debug_frame): CFI unwinding works through it */
  cfi?: boolean;
}

export function checkBinary(path: string, sample = 200): BinaryReport {
  const elf = new ElfFile(path);
  try {
    const report: BinaryReport = { path, debugInfo: elf.hasDebugInfo(), buildId: elf.buildId(), cfi: elf.section('.eh_frame') !== undefined || elf.section('.debug_frame') !== undefined };
    const text = elf.section('.text');
    if (!text) return report;
    const inText = elf.symbols().filter((s) => s.type === 2 && s.size >= 16n && s.value >= text.addr && s.value < text.addr + BigInt(text.size));
    // The C runtime's startup code (crt1.o, crtbegin.o) is linked into every executable and never
    // sets up frame pointers, whatever the program was built with: in a small program it would
    // outnumber the program's own functions. Judge the program's functions when it has any.
    const own = inText.filter((s) => !CRT_FUNCTIONS.has(s.name));
    const funcs = own.length ? own : inText;
    if (funcs.length === 0) return report;
    const step = Math.max(1, Math.floor(funcs.length / sample));
    let seen = 0;
    let withFp = 0;
    for (let i = 0; i < funcs.length && seen < sample; i += step) {
      const off = Number(funcs[i].value - text.addr) + text.offset;
      const size = Number(funcs[i].size);
      let bytes = elf.read(off, Math.min(size, PROLOGUE_SCAN + 4));
      if (bytes.subarray(0, 4).equals(ENDBR64)) bytes = bytes.subarray(4);
      seen++;
      if (setsUpFramePointer(bytes)) withFp++;
    }
    report.framePointerShare = seen ? withFp / seen : undefined;
    return report;
  } finally {
    elf.close();
  }
}

/**
 * A frame-pointer prologue: `push %rbp` first, then `mov %rsp,%rbp`, which the compiler may
 * schedule a few instructions later (gcc -O2 -fno-omit-frame-pointer moves argument set-up in
 * between). A function that saves %rbp as an ordinary register never copies %rsp into it.
 */
function setsUpFramePointer(bytes: Buffer): boolean {
  return bytes[0] === PUSH_RBP && bytes.subarray(1, 1 + PROLOGUE_SCAN).includes(MOV_RSP_RBP);
}

/** Distributions whose C library and system libraries are built with frame pointers: the fix for frame-pointer-only tools that users can apply. */
export const FRAME_POINTER_DISTROS = 'Ubuntu 24.04+, Fedora 38+, Arch Linux (2024+)';

/** True when most functions skip the frame-pointer prologue (typical of -O2 without -fno-omit-frame-pointer). */
export function lacksFramePointers(r: BinaryReport): boolean {
  return r.framePointerShare !== undefined && r.framePointerShare < 0.5;
}
