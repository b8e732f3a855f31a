// Options of the Java lock tracer (`ebpf-studio profile --pid P --event lock`): contended
// `synchronized` monitors and java.util.concurrent parks of a running JVM, through eBPF Studio's
// JVMTI agent (native/jvmagent/locks.c). Its result is a ProfileResult (./profile.ts) with
// event 'lock' and unit 'us': each stack is a waiter's Java stack under a leaf frame naming the
// lock's class and, where known, the thread that held it and where. With `vthreads` (event
// 'vthread'), the waits of virtual threads instead, each stack in the state its wait was in.
export interface JavaLocksOptions {
  /** the JVM */
  pid: number;
  /** Java frames kept per wait */
  depth?: number;
  /** µs between two looks at which threads are parked (java.util.concurrent waits are sampled) */
  parkPeriodUs?: number;
  /**
   * Virtual threads (JDK 21+) instead of locks: the time each virtual thread spent unmounted
   * (parked, sleeping, blocked), by its Java stack at the unmount; carriers are not counted.
   */
  vthreads?: boolean;
}

export const JAVA_LOCKS_DEFAULT_DEPTH = 64;
export const JAVA_LOCKS_MAX_DEPTH = 256;
export const JAVA_LOCKS_DEFAULT_PARK_PERIOD_US = 2000;
export const JAVA_LOCKS_MIN_PARK_PERIOD_US = 100;
export const JAVA_LOCKS_MAX_PARK_PERIOD_US = 1_000_000;
/** module of the lock frame at the leaf of each stack (keeps it apart from methods); its kind is native: no Java code runs there */
export const LOCK_MODULE = '[lock]';
