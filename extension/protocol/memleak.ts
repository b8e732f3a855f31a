// JSON shapes of the memleak tracer: outstanding allocations grouped by allocation stack.
// The result is the `ebpf-studio memleak --json` document, plus `lost`/`dropped`.
import type { MemleakFrame } from './frames';

// The frame type is one of the family of ./frames.ts.
export type { MemleakFrame } from './frames';

export interface MemleakLaunch {
  /** program and its arguments (argv[0] is looked up in PATH like execvp does) */
  command: string[];
  cwd?: string;
  /** added to (and overriding) the environment the tracer runs in */
  env?: Record<string, string>;
  /** run the program as this user/group (the helper runs as root; the program should not) */
  uid?: number;
  gid?: number;
  /**
   * where the program's output goes: 'inherit' shares the tracer's stdio (CLI text mode),
   * 'stderr' sends its stdout to the tracer's stderr (CLI --json), 'capture' delivers it in updates
   */
  output: 'inherit' | 'stderr' | 'capture';
}

export const MEMLEAK_DEFAULT_MAX_OUTSTANDING = 1_000_000;

/**
 * Mean sampling interval for attaching to a running process (--pid, Find Memory Leaks) unless
 * --sample-bytes says otherwise; launching stays exact. Decided from bench/RESULTS.md (memleak
 * sampled rows): see docs/cli.md's memleak section for the reasoning.
 */
export const MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES = 0;

/**
 * How user-space allocations are seen. preload: our interposer library in LD_PRELOAD of a
 * launched command (no kernel trap per call); inject: the same library loaded into a running
 * process (--pid) and its allocator calls redirected to it; uprobe: BPF uprobes on the allocator
 * (works for static and setuid programs too, at a kernel trap per call); auto: preload for a
 * launched command, inject for --pid, uprobes where neither can be used (the reason is said).
 */
export type MemleakMode = 'preload' | 'inject' | 'uprobe' | 'auto';
export const MEMLEAK_MODES: readonly MemleakMode[] = ['preload', 'inject', 'uprobe', 'auto'];

export interface MemleakOptions {
  /** attach to this running process (exactly one of pid / launch / kernel-only) */
  pid?: number;
  /** start this command stopped, attach, then let it run (memleak -c) */
  launch?: MemleakLaunch;
  /** trace kernel allocations (kmem tracepoints) instead of a user-space allocator */
  kernel: boolean;
  /** only allocations older than this count as outstanding (memleak -o) */
  minAgeMs: number;
  /** record every Nth allocation (1 = all) */
  sampleRate: number;
  minSize: number;
  /** 0 = no upper bound */
  maxSize: number;
  /** stacks kept in updates and the result, largest first (0 = all) */
  top: number;
  /** seconds between live reports */
  intervalS: number;
  /** capacity of the kernel's table of outstanding allocations; beyond it they are counted as dropped */
  maxOutstanding?: number;
  /** another allocator library (e.g. libjemalloc.so.2) probed besides libc */
  allocatorLib?: string;
  /** symbol prefix in that library, e.g. "je_" or "tc_" */
  symbolPrefix?: string;
  /**
   * user-space stacks: CFI from a stack copy per recorded allocation (dwarf), the target's unwind
   * tables walked in the kernel (cfi: uprobe mode, a running process), or frame pointers walked in the kernel (fp)
   */
  unwind?: 'auto' | 'dwarf' | 'fp' | 'cfi';
  /** dwarf: bytes of user stack copied per recorded allocation */
  stackCopyBytes?: number;
  /** default auto */
  mode?: MemleakMode;
  /**
   * Byte-based Poisson sampling (uprobe and kernel modes): mean bytes between recorded
   * allocations; 0 or absent = exact. Figures become estimates with standard errors.
   */
  sampleBytes?: number;
}


export interface MemleakStack {
  bytes: number;
  allocations: number;
  oldestAgeMs: number;
  /** leaf first: frames[0] is the allocating call site */
  frames: MemleakFrame[];
  /** sampled sessions: bytes and allocations above are estimates, with these standard errors */
  bytesStdErr?: number;
  allocationsStdErr?: number;
}

export interface MemleakResult {
  tracer: 'memleak';
  /** the traced process; 0 for kernel mode without a pid */
  pid: number;
  stacks: MemleakStack[];
  /** allocations not recorded: allocation table full, stack map full/collision, pending table full */
  dropped: number;
  /** exit-hold events that did not reach user space */
  lost: number;
  /** how allocations were seen (absent in documents from before preload mode: uprobe) */
  mode?: 'preload' | 'inject' | 'uprobe' | 'kernel';
  /** present when sampled: the mean interval in bytes; every figure is then an estimate (see bytesStdErr) */
  sampleBytes?: number;
  /** uprobe mode on a running process: allocations the probes saw in the session (recorded or not) */
  allocationsSeen?: number;
  /** set when the session cannot be trusted: none seen while the process ran (the CLI exits 1) */
  problem?: string;
}

export interface MemleakUpdate {
  /** ms since the session started */
  atMs: number;
  /** all outstanding bytes/allocations (every stack, not only the top ones) */
  totalBytes: number;
  totalAllocations: number;
  stacks: MemleakStack[];
  dropped: number;
  /** present when sampled (figures are estimates), as in the result */
  sampleBytes?: number;
  /** output of a launched program (output: 'capture') since the last update */
  output?: string;
}
