// The frame shape every stack uses, from the symbolizer through the tracers' results to the views:
// one native, JIT, interpreted or kernel frame. Addresses travel as hex strings because JSON has
// no 64-bit integers.

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


/** How a perf-map entry ran: HotSpot names its interpreter stubs "Interpreter", the rest is JIT code. */
export function perfMapKind(name: string): FrameKind {
  return /^Interpreter\b/.test(name) ? 'interpreted' : 'jit';
}
