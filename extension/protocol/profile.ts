// JSON shapes of the CPU profiler (perf_event cpu-clock sampling with user and kernel stacks).
// ProfileResult is exactly the document `ebpf-studio profile --json` prints.

import type { ProfileFrame } from './frames';

// The frame types are one family, defined in ./frames.ts.
export type { FrameKind, JavaFrameType, ProfileFrame } from './frames';
export { JAVA_FRAME_TYPES } from './frames';

/** How user stacks are unwound: frame pointers in the kernel, or CFI (.eh_frame/.debug_frame) in user space from a stack copy. */
/** fp: frame pointers walked in the kernel; dwarf: CFI in user space from a stack copy; cfi: unwind tables walked in the kernel */
export type UnwindMode = 'fp' | 'dwarf' | 'cfi';
export const UNWIND_CHOICES = ['auto', 'fp', 'dwarf', 'cfi'] as const;
export type UnwindChoice = (typeof UNWIND_CHOICES)[number];

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
  /** user-stack unwinding; auto = CFI (frame pointers only for code without CFI, e.g. JIT) */
  unwind?: UnwindChoice;
  /** dwarf mode: bytes of user stack copied per sample */
  stackCopyBytes?: number;
  /** cfi, whole host (pid 0): bytes of unwind tables the kernel may hold; the least recently used go first */
  cfiMaxBytes?: number;
}

/** Where a module's frames come from in this profile (doctor --pid and the view show it). */
export interface UnwindModuleInfo {
  module: string;
  /** 'eh_frame' / 'debug_frame': unwound by CFI; 'none': frame pointers only */
  cfi: 'eh_frame' | 'debug_frame' | 'none';
  /** share of functions with a frame-pointer prologue, when measured */
  framePointers?: number;
}

export interface UnwindInfo {
  mode: UnwindMode;
  /** dwarf: samples whose stack was deeper than the copy */
  truncated?: number;
  /** dwarf: mean user-space unwind time per sample, ns */
  unwindNsPerSample?: number;
  /** dwarf, one process profiled: its modules and how each is unwound */
  modules?: UnwindModuleInfo[];
  /** a JVM profiled with the Java agent: Java frames come from the agent, not from the unwind */
  javaAgent?: boolean;
  /** a JVM profiled without the agent: its JIT frames are named from the perf map it wrote */
  perfMap?: boolean;
  /**
   * cfi: the unwind tables in the kernel (files, rows, bytes), the mean BPF ns a walk took, and how
   * walks ended, by why. Whole-host sessions also: the table memory cap, tables evicted to make
   * room, files kept out by the cap at the end, processes whose mappings were loaded.
   */
  cfiTables?: { files: number; rows: number; bytes: number; fpMappings: number; nsPerWalk?: number; capBytes?: number; evictions?: number; cappedFiles?: number; processes?: number };
  cfiStops?: Record<string, number>;
  /** cfi, whole host: samples whose stack was cut because a file's table did not fit the table memory cap */
  cutByCap?: number;
}

export interface ProfileUpdate {
  /** samples taken so far (after the pid filter) */
  samples: number;
  lost: number;
  elapsedMs: number;
  /** said during the session (e.g. at the end: the JVM's perf map could not be fetched) */
  warnings?: string[];
}

/** What a profile's `value`s measure: CPU samples, microseconds (off-CPU and wall time), bytes (allocations). */
export type ProfileUnit = 'samples' | 'us' | 'bytes';

/**
 * Where a thread's time went (off-CPU and wall-clock profiles): on a CPU, asleep (interruptible:
 * nanosleep, poll, a pipe or socket read), in uninterruptible sleep (disk I/O, page faults,
 * kernel locks), asleep in a futex (a mutex, condition variable or Java park), or preempted
 * while runnable (waiting in the run queue); idle: a JVM's virtual-thread carrier with no virtual
 * thread to run (its park in ForkJoinPool is not the program's wait).
 */
export type ThreadState = 'oncpu' | 'sleep' | 'io' | 'lock' | 'preempted' | 'idle';
export const THREAD_STATES: ThreadState[] = ['oncpu', 'sleep', 'io', 'lock', 'preempted', 'idle'];
export const THREAD_STATE_LABEL: Record<ThreadState, string> = { oncpu: 'on CPU', sleep: 'sleeping', io: 'I/O (uninterruptible)', lock: 'lock (futex wait)', preempted: 'preempted (run queue)', idle: 'carrier idle (no virtual thread)' };

/** The event a profile measures: CPU samples, off-CPU time, both (wall clock), a JVM's lock waits (Java monitors and parks), or its virtual threads' waits. */
export type ProfileEvent = 'cpu' | 'offcpu' | 'wall' | 'lock' | 'vthread';
export const PROFILE_EVENTS: ProfileEvent[] = ['cpu', 'offcpu', 'wall'];

export interface ProfileStack {
  /** samples (CPU), or off-CPU intervals */
  count: number;
  /** the stack's weight in the profile's unit (ProfileResult.unit); absent in older documents: count */
  value?: number;
  /** off-CPU and wall profiles: where the thread was */
  state?: ThreadState;
  pid: number;
  tid: number;
  comm: string;
  /** leaf first: kernel frames, then user frames */
  frames: ProfileFrame[];
}

export interface ProfileResult {
  tracer: 'profile';
  /** the unit of each stack's value (absent in older documents: samples) */
  unit?: ProfileUnit;
  /** what was measured (absent: cpu) */
  event?: ProfileEvent;
  /** off-CPU and wall profiles: the total value per thread state */
  states?: Partial<Record<ThreadState, number>>;
  frequency: number;
  samples: number;
  lost: number;
  stacks: ProfileStack[];
  /** how user stacks were unwound (absent in documents written before CFI unwinding existed) */
  unwind?: UnwindInfo;
  /** GNU build-id (hex) of each module path that had one: pprof mappings carry it */
  buildIds?: Record<string, string>;
  /** --pid CPU profiles: the samples taken against the target's own CPU time */
  cpuCheck?: ProfileCpuCheck;
  /** set when the profile cannot be trusted (far fewer samples than its CPU time implies): the CLI exits 1 */
  problem?: string;
}

export type ProfileCpuVerdict = 'agree' | 'fewer' | 'missed' | 'idle' | 'unread';

export interface ProfileCpuCheck {
  pid: number;
  verdict: ProfileCpuVerdict;
  /** samples taken (the lost ones among them) */
  sampled: number;
  /** samples its CPU time implies at the frequency */
  expected?: number;
  cpuMs?: number;
  message: string;
}

export const PROFILE_DEFAULT_FREQUENCY = 99;
export const PROFILE_MAX_FREQUENCY = 10000;
/** bcc profile's default; each slot holds 127 frames (~1 KiB of kernel memory) */
export const PROFILE_DEFAULT_STACK_STORAGE = 16384;
export const PROFILE_MAX_STACK_STORAGE = 262144;
/**
 * Bytes of user stack copied per sample for CFI unwinding, chosen from javac (a deep, recursive
 * Java program) profiled with the Java agent at 8, 16 and 32 KiB (`npm run bench`, java-walk rows):
 * with the agent the copy only has to reach the first Java frame (the Java part comes from
 * AsyncGetCallTrace); at most 13 native frames sat above it and no sample with a Java stack was
 * cut at any of the three sizes. The copies that were cut (2.4–3.6 % of the samples at 8 and
 * 16 KiB, 0.2–1.3 % at 32) all belonged to samples the agent could not walk, whose frame-pointer
 * tail through javac's recursion is deeper than the copy. 16 KiB keeps a margin over what JVM
 * stacks needed and covers deep native programs, at half the per-sample copy cost of 32.
 */
export const PROFILE_DEFAULT_STACK_COPY_KB = 16;
export const PROFILE_MAX_STACK_COPY_KB = 32;

/** A stack's weight in its profile's unit (documents before `value` existed: its count). */
export const stackValue = (s: Pick<ProfileStack, 'count' | 'value'>): number => s.value ?? s.count;
