// The frame shape shared by every consumer of the symbolizer (memleak, profiler, their views).
// Addresses travel as hex strings because JSON has no 64-bit integers.

export type FrameKind = 'kernel' | 'native' | 'jit' | 'interpreted';

export interface InlinedFrame {
  function: string;
  file?: string;
  line?: number;
  column?: number;
}

export interface Frame {
  /** "0x7f12..." */
  address: string;
  /** absolute path of the ELF, "[kernel]", "[jit]", "[vdso]", "[unknown]" */
  module: string;
  /** hex offset inside module (ELF: file offset); always set for native frames */
  offset?: string;
  /** demangled; undefined when unknown (then UIs show module+offset) */
  function?: string;
  /** of the outermost (real) function at that address */
  file?: string;
  line?: number;
  column?: number;
  /** functions inlined at this address, innermost first */
  inlined?: InlinedFrame[];
  kind: FrameKind;
  /** GNU build-id (hex) of module, when it has one */
  buildId?: string;
}

/** What a capture keeps; opaque to callers beyond the pid. */
export interface ProcessImage {
  readonly pid: number;
}

/** Symbol and line information of one address inside one module (cached per module identity). */
export interface SymResult {
  function?: string;
  file?: string;
  line?: number;
  column?: number;
  inlined?: readonly InlinedFrame[];
}

export const hex = (n: bigint): string => '0x' + n.toString(16);
