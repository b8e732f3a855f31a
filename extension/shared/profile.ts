// JSON shapes of the CPU profiler (perf_event cpu-clock sampling with user and kernel stacks).
// ProfileResult is exactly the document `ebpf-studio profile --json` prints (issue 7).

export type FrameKind = 'kernel' | 'native' | 'jit' | 'interpreted';

export interface ProfileOptions {
  /** process to profile; 0 = the whole system */
  pid: number;
  /** samples per second per CPU */
  frequency: number;
  /** system-wide only: count the idle task (pid 0) too */
  includeIdle: boolean;
  /** for a JVM: fetch its perf map through the attach socket at the end (Compiler.perfmap) */
  javaPerfMap: boolean;
  /** distinct stacks the kernel can keep (user and kernel together); a sample whose stack finds no room is lost */
  stackStorageSize?: number;
  /**
   * For a JVM target: 'agent' loads eBPF Studio's JVMTI agent (AsyncGetCallTrace) for whole Java
   * stacks; 'perfmap' names JIT frames from the perf map (whole stacks need -XX:+PreserveFramePointer);
   * 'auto' (default) = agent when the JVM lacks -XX:+PreserveFramePointer.
   */
  java?: 'agent' | 'perfmap' | 'auto';
}

export interface ProfileUpdate {
  /** samples taken so far (after the pid filter) */
  samples: number;
  lost: number;
  elapsedMs: number;
  /** said during the session (e.g. at the end: the JVM's perf map could not be fetched) */
  warnings?: string[];
}

export interface ProfileFrame {
  /** instruction address, hex ("0xffffffff81000000") */
  address: string;
  /** binary, "[kernel]" or "[perf-map]"/"[jit]"; null when no mapping covers the address */
  module: string | null;
  function: string | null;
  file: string | null;
  line: number | null;
  kind: FrameKind;
}

export interface ProfileStack {
  count: number;
  pid: number;
  tid: number;
  comm: string;
  /** leaf first: kernel frames, then user frames */
  frames: ProfileFrame[];
}

export interface ProfileResult {
  tracer: 'profile';
  frequency: number;
  samples: number;
  lost: number;
  stacks: ProfileStack[];
}

export const PROFILE_DEFAULT_FREQUENCY = 99;
export const PROFILE_MAX_FREQUENCY = 10000;
/** bcc profile's default; each slot holds 127 frames (~1 KiB of kernel memory) */
export const PROFILE_DEFAULT_STACK_STORAGE = 16384;
export const PROFILE_MAX_STACK_STORAGE = 262144;
