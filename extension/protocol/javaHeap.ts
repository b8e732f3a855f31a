// JSON shapes of the Java heap tracer: allocations a running JVM samples for us (JVMTI
// SampledObjectAlloc through eBPF Studio's agent) and which of the sampled objects the GCs have
// not collected. The result is the `ebpf-studio memleak --pid <JVM> --json` document: `stacks` in
// the shape of native memleak's (bytes, allocations, frames leaf first) plus the Java figures;
// `allocated` feeds `ebpf-studio profile --event alloc` (an allocation flame graph).
import type { MemleakFrame } from './memleak';

/** HotSpot's own default mean interval between sampled allocations (JVMTI SetHeapSamplingInterval). */
export const JAVA_HEAP_DEFAULT_INTERVAL_BYTES = 512 * 1024;
export const JAVA_HEAP_MAX_INTERVAL_BYTES = 2 ** 31 - 1;
export const JAVA_HEAP_DEFAULT_DEPTH = 64;
export const JAVA_HEAP_MAX_DEPTH = 256;

export interface JavaHeapOptions {
  /** the JVM */
  pid: number;
  /** mean bytes allocated between two sampled objects */
  intervalBytes: number;
  /** Java frames kept per sample */
  depth?: number;
  /** live sites kept in updates (0 = all) */
  top?: number;
  /** seconds between live updates */
  intervalS?: number;
}

/** A Java frame: `function` is Class.method, `file` the source path under a source root (com/x/Foo.java). */
export type JavaHeapFrame = MemleakFrame;

/** One allocation site: an allocated class and the Java stack that allocated it. */
export interface JavaHeapStack {
  /** estimated bytes of the site's objects still alive (not yet collected) */
  bytes: number;
  /** estimated objects still alive */
  allocations: number;
  bytesStdErr: number;
  allocationsStdErr: number;
  /** age of the oldest live sampled object, ms */
  oldestAgeMs: number;
  /** leaf first: frames[0] is the Java line that allocated */
  frames: JavaHeapFrame[];
  /** the allocated class as Java writes it ("byte[]", "java.lang.String") */
  class: string;
  /** GCs the oldest live sampled object of this site has survived */
  survivedGcs: number;
  /** estimated bytes and objects allocated here during the session (live or not) */
  allocatedBytes: number;
  allocatedObjects: number;
  allocatedBytesStdErr: number;
  /** live bytes' least-squares growth over the GCs of the session, bytes per second */
  growthBytesPerSecond: number;
  /** live bytes kept growing across GCs: the site holds on to what it allocates */
  leakCandidate: boolean;
  /** why (or why not yet) it is a leak candidate, in words */
  evidence?: string;
}

/** A stack of the allocation flame graph: Java frames leaf first (the allocating line first) and the allocated class. */
export interface JavaAllocStack {
  class: string;
  frames: JavaHeapFrame[];
  /** estimated bytes and objects allocated (unbiased), with standard errors */
  bytes: number;
  objects: number;
  bytesStdErr: number;
  /** samples behind the estimate */
  samples: number;
}

export interface JavaHeapResult {
  tracer: 'java-heap';
  pid: number;
  /** the mean interval in bytes: every figure is an estimate (see the standard errors) */
  sampleBytes: number;
  /** live sites, most live bytes first (only sites with a live sampled object) */
  stacks: JavaHeapStack[];
  /** every allocation site of the session, most bytes first */
  allocated: JavaAllocStack[];
  /** sampled objects */
  samples: number;
  /** GCs that finished during the session */
  gcs: number;
  durationMs: number;
  /** samples the agent could not queue (the helper fell behind) */
  dropped: number;
  /** sampled objects not tracked for liveness (the agent's table was full) */
  untracked: number;
  lost: number;
  /** time the JVM's allocating threads spent in the agent's sampling callback, ns */
  agentCallbackNs: number;
  /** the JDK's version as its release file says (e.g. "17.0.9") */
  jdk?: string;
}

export interface JavaHeapUpdate {
  atMs: number;
  /** live estimate over every site */
  totalBytes: number;
  totalAllocations: number;
  allocatedBytes: number;
  gcs: number;
  stacks: JavaHeapStack[];
  sampleBytes: number;
}
