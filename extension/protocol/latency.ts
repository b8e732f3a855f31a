// JSON shapes of the latency tracer (how long one function of a running process takes): the
// log2-histogram kit's shapes plus the exact figures kept in the kernel and the slow calls, each
// with its stack. The result is exactly the CLI's --json document.
import type { Frame } from './frames';
import type { Bucket, HistOptions, HistResult, HistUpdate } from './histogram';
import type { ProfileResult } from './profile';

export interface LatencyOptions extends HistOptions<'none'> {
  /** FUNCTION (a symbol of the program or a library it maps) or FILE:LINE */
  target: string;
  /** calls at least this slow are sent with their stacks; 0 = none */
  thresholdMs: number;
  /** how returns are caught: at the function's ret instructions, a uretprobe, or chosen (auto) */
  returns?: 'auto' | 'ret' | 'uretprobe';
  /** "profile the slow calls": a wall-clock profile (on- and off-CPU, with states) of only what
   * happened inside calls at least thresholdMs long (needs a threshold) */
  profileSlow?: boolean;
  /** on-CPU samples per second of that profile */
  frequency?: number;
  /** how that profile walks user stacks: the target's unwind tables (default) or frame pointers */
  unwind?: 'cfi' | 'fp';
  /** also the figures per caller (the function each call returns to) */
  byCaller?: boolean;
}

/** The calls from one calling function (its call sites together), cumulative over the session. */
export interface CallerLatency {
  /** the calling function, innermost inlined one first; its address when it has no symbol */
  caller: string;
  module: string | null;
  /** the source of its busiest call site, when the module has line tables */
  file: string | null;
  line: number | null;
  /** call sites (return addresses) counted together here */
  sites: number;
  count: number;
  totalNs: number;
  maxNs: number;
  /** log2 histogram in the session's unit */
  buckets: Bucket[];
}

/** Figures of all calls so far (percentiles from the kernel's log-linear histogram, within ~3 %). */
export interface LatencyStats {
  count: number;
  totalNs: number;
  p50Ns: number;
  p90Ns: number;
  p99Ns: number;
  maxNs: number;
  /** calls per second of the session so far */
  callsPerS: number;
  /** entries dropped: the call was left by longjmp or an exception, never returning */
  abandoned: number;
  /** entries dropped: the thread exited mid-call */
  exited: number;
  /** calls not timed: recursion deeper than the kernel keeps */
  tooDeep: number;
  /** slow calls counted but not sent (the ring buffer was full) */
  slowLost: number;
  /** calls at least the threshold long (sent or not) */
  slowCalls?: number;
  /** profileSlow: outermost calls whose samples were kept (slow) and dropped (fast), and samples not kept (a buffer full) */
  profiledSlow?: number;
  profiledFast?: number;
  profileLost?: number;
  /** byCaller: calls not split by caller (more call sites than the kernel keeps) */
  callersFull?: number;
}

export interface SlowCall {
  durationNs: number;
  tid: number;
  /** CLOCK_MONOTONIC ns when it returned */
  endNs: number;
  /** the function, then its caller, ...; symbolized */
  stack: Frame[];
}

/** What was probed. */
export interface LatencyProbe {
  function: string;
  /** the file as the process knows it */
  module: string;
  /** link-time address of the entry */
  address: string;
  /** how the return is caught ('jfr-method-trace': the JVM times the Java method itself, JDK 25's JFR) */
  returns: 'ret-instructions' | 'uretprobe' | 'jfr-method-trace' | 'java-agent';
}

export interface LatencyUpdate extends HistUpdate {
  stats: LatencyStats;
  /** slow calls that arrived in this interval (at most MAX_SLOW_PER_UPDATE) */
  slow: SlowCall[];
  /** byCaller: every caller so far, most calls first */
  callers?: CallerLatency[];
  /** found during the session (the CLI says each once on stderr) */
  warnings?: string[];
}

export interface LatencyResult extends HistResult<'latency'> {
  probe: LatencyProbe;
  stats: LatencyStats;
  /** the slowest calls sent, slowest first (at most MAX_SLOW_KEPT) */
  slow: SlowCall[];
  /** profileSlow: the wall-clock profile of the slow calls (µs per stack and state) */
  profile?: ProfileResult;
  /** byCaller: every caller, most calls first */
  callers?: CallerLatency[];
}
