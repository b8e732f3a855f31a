// Options of the off-CPU / wall-clock profiler (bpf/offcpu.bpf.c). Its result is a ProfileResult
// (./profile.ts) with unit 'us' and a state per stack, so the flame graph, folded and pprof
// output read it as they read a CPU profile.
export interface OffcpuOptions {
  /** process to trace; 0 = the whole system */
  pid: number;
  /** offcpu: blocked time only; wall: on-CPU samples too, weighed in µs */
  event: 'offcpu' | 'wall';
  /** off-CPU intervals shorter than this are not added to the profile */
  minBlockUs: number;
  /** wall: on-CPU samples per second per CPU */
  frequency: number;
  /** distinct stacks the kernel can keep (user and kernel together) */
  stackStorageSize: number;
  /** for a JVM: fetch its perf map through the attach socket at the end, to name JIT frames */
  javaPerfMap: boolean;
  /**
   * For a JVM target: 'agent' loads eBPF Studio's JVMTI agent and takes each blocked thread's Java
   * stack when it returns to user space (never signalling a sleeping thread); 'perfmap' names JIT
   * frames from the perf map only (whole Java stacks need -XX:+PreserveFramePointer);
   * 'auto' (default) = agent when the JVM runs without -XX:+PreserveFramePointer.
   */
  java?: 'agent' | 'perfmap' | 'auto';
  /**
   * User stacks: 'fp' walks frame pointers in the kernel; 'cfi' walks the processes' unwind tables
   * (compiled from .eh_frame/.debug_frame, loaded into BPF maps) in the kernel, so callers of code
   * built without frame pointers are kept; 'auto' (default) = cfi on a kernel that runs the walk
   * (5.17+), fp otherwise.
   */
  unwind?: 'auto' | 'fp' | 'cfi';
  /** the whole system with cfi: bytes of unwind tables the kernel holds (default CFI_HOST_DEFAULT_MAX_BYTES) */
  cfiMaxBytes?: number;
}

export const OFFCPU_DEFAULT_MIN_BLOCK_US = 1;
export const OFFCPU_MAX_MIN_BLOCK_US = 60_000_000;
export const WALL_DEFAULT_FREQUENCY = 99;
