// Cheap checks of a binary that predict bad stacks: missing frame pointers (the kernel walks
// user stacks by frame pointer only) and missing debug info (no file:line).
import { ElfFile } from './elf';

const PUSH_RBP_MOV = Buffer.from([0x55, 0x48, 0x89, 0xe5]);
const ENDBR64 = Buffer.from([0xf3, 0x0f, 0x1e, 0xfa]);

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
    const funcs = elf.symbols().filter((s) => s.type === 2 && s.size >= 16n && s.value >= text.addr && s.value < text.addr + BigInt(text.size));
    if (funcs.length === 0) return report;
    const step = Math.max(1, Math.floor(funcs.length / sample));
    let seen = 0;
    let withFp = 0;
    for (let i = 0; i < funcs.length && seen < sample; i += step) {
      const off = Number(funcs[i].value - text.addr) + text.offset;
      let bytes = elf.read(off, 12);
      if (bytes.subarray(0, 4).equals(ENDBR64)) bytes = bytes.subarray(4);
      seen++;
      if (bytes.subarray(0, 4).equals(PUSH_RBP_MOV)) withFp++;
    }
    report.framePointerShare = seen ? withFp / seen : undefined;
    return report;
  } finally {
    elf.close();
  }
}

/** Distributions whose C library and system libraries are built with frame pointers: the fix for frame-pointer-only tools that users can apply. */
export const FRAME_POINTER_DISTROS = 'Ubuntu 24.04+, Fedora 38+, Arch Linux (2024+)';

/** True when most functions skip the frame-pointer prologue (typical of -O2 without -fno-omit-frame-pointer). */
export function lacksFramePointers(r: BinaryReport): boolean {
  return r.framePointerShare !== undefined && r.framePointerShare < 0.5;
}
