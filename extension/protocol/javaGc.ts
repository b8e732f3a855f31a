// JSON shapes of the Java GC tracer (hotspot USDT gc__begin/gc__end + memory-pool probes).
// JavaGcResult is exactly the document `ebpf-studio java-gc --json` prints.

export interface JavaGcOptions {
  /** the JVM to trace (ignored when `all`) */
  pid: number;
  /** every JVM, including ones that start later: each libjvm.so with USDT, attached with pid -1 */
  all: boolean;
  /** GCs shorter than this (µs) are dropped in the kernel */
  minUs: number;
  /** false: updates only, no event kept for the result (a long-running agent's memory stays flat) */
  retain?: boolean;
  /**
   * The result keeps the figures over the whole session but only the most recent events
   * (model/javaGcLive.ts RECENT_EVENTS): for a client that drew the live updates (the editor).
   * Unset, the result holds every event (the CLI's --json).
   */
  boundedResult?: boolean;
  /**
   * false: the JVMs' own collection counters (hsperfdata) are read for results and snapshots
   * only, and updates carry no jvmCounts (a service that shows no live view: the agent). Unset:
   * read with every update.
   */
  liveCounts?: boolean;
  /**
   * true: pauses and safepoints are counted in kernel histograms (bucketed at
   * JAVA_GC_HIST_EDGES_NS, tracers/javaGc/decode.ts) that updates carry as `histograms`, and no
   * event or safepoint is sent (a metrics service: the agent). Unset: one event per collection.
   */
  metricsOnly?: boolean;
  /**
   * all mode: program names (comm, matched by their first 15 bytes as the kernel keeps them)
   * whose execs are looked at as they happen, besides the JDK's launchers (JVM_LAUNCHERS); execs
   * of any other name are looked at every 30 s.
   */
  launchers?: string[];
}

/**
 * Pauses of one JVM since the previous update, counted in the kernel (metricsOnly): a collector's
 * pauses (`collector` and `kind` set) or the JVM's safepoints.
 */
export interface JavaGcPauseCounts {
  pid: number;
  what: 'pause' | 'safepoint';
  collector?: string;
  kind?: JavaGcKind;
  /** per bucket: durations <= JAVA_GC_HIST_EDGES_NS[i]; the last one, those above the last edge */
  counts: number[];
  sumNs: number;
}

export interface JavaGcPool {
  /** HotSpot's pool name, e.g. "Eden Space", "Tenured Gen", "Metaspace" */
  name: string;
  usedBefore: number;
  usedAfter: number;
  committedAfter: number;
}

/**
 * What a collection is, in the JVM's terms: young / full for the generational collectors'
 * managers (a full collection of Serial, Parallel, G1), concurrent-pause for a stop-the-world
 * phase of a concurrent collector (G1 Remark/Cleanup, ZGC and Shenandoah pauses),
 * concurrent-cycle for ZGC's and Shenandoah's whole cycles (not a pause), degenerated for
 * Shenandoah's degenerated cycle, pause when the manager is not known.
 */
export type JavaGcKind = 'young' | 'full' | 'concurrent-pause' | 'concurrent-cycle' | 'degenerated' | 'pause';

export interface JavaGcEvent {
  pid: number;
  /** the thread that ran it (HotSpot's VM thread; a concurrent cycle: the collector's driver thread) */
  tid: number;
  /** CPU at its end */
  cpu: number;
  /** start, CLOCK_MONOTONIC ns (bpf_ktime_get_ns): gc__begin, or its manager's first pool probe */
  timestampNs: number;
  /** start → end on the same thread; a pause holding two collections (an escalation) is split at
   * the first manager's last pool probe */
  durationNs: number;
  /** the memory manager (GarbageCollectorMXBean name): "Copy", "PS MarkSweep", "G1 Young Generation",
   * "ZGC Cycles", "Shenandoah Pauses", ... */
  collector: string;
  kind: JavaGcKind;
  /** the VM operation that ran the pause (e.g. "G1PauseRemark", "ZMarkStart"); "" for a cycle */
  operation: string;
  /** this collection followed another in the same pause (a young collection escalated into this one) */
  escalated: boolean;
  /** kind === 'full' (kept for older readers of the JSON) */
  full: boolean;
  pools: JavaGcPool[];
  /** the safepoint this pause ran at (result documents only, when safepoints were traced): the
   * time every thread took to stop before it, and the whole safepoint */
  safepoint?: { timeToSafepointNs: number; durationNs: number };
  /** the pause's phases in order, where a Flight Recording has them (jdk.GCPhasePauseLevel1) */
  phases?: { name: string; durationNs: number }[];
}

/** A safepoint: every Java thread stopped for a VM operation (hs_private:safepoint__begin/end). */
export interface JavaSafepoint {
  pid: number;
  tid: number;
  /** safepoint__begin, CLOCK_MONOTONIC ns */
  timestampNs: number;
  /** safepoint__begin → the first VM operation inside it starts, i.e. every thread has stopped */
  timeToSafepointNs: number;
  /** safepoint__begin → safepoint__end */
  durationNs: number;
  /** the first VM operation run at it ("" when none ran) */
  operation: string;
}

export interface JavaSafepointSummary {
  count: number;
  totalNs: number;
  ttsP50Ns: number;
  ttsP99Ns: number;
  ttsMaxNs: number;
  p50Ns: number;
  p99Ns: number;
  maxNs: number;
}

/** Per GarbageCollectorMXBean: the JVM's own getCollectionCount()/getCollectionTime() counterpart. */
export interface JavaGcCollectorSummary {
  collector: string;
  kind: JavaGcKind;
  count: number;
  /** collections that followed another in the same pause */
  escalated: number;
  totalNs: number;
  p50Ns: number;
  p99Ns: number;
  maxNs: number;
  histogram: JavaGcHistogramBucket[];
}

export interface JavaGcUpdate {
  /** GCs since the previous update */
  events: JavaGcEvent[];
  /** safepoints since the previous update (absent when the JDK has no safepoint probes) */
  safepoints?: JavaSafepoint[];
  /** false with the reason when this JDK has no safepoint probes */
  safepointsAvailable?: boolean;
  safepointsReason?: string;
  /** total events the kernel could not deliver so far */
  lost: number;
  /** every JVM pid seen so far (the target in --pid mode) */
  pids: number[];
  /** session start and now, CLOCK_MONOTONIC ns: the time axis and the wall time for GC overhead */
  startNs: number;
  nowNs: number;
  /** what was traced in each JVM against the JVM's own counters so far */
  jvmCounts?: JavaGcJvmCount[];
  /** what the session found since it started (a JVM that cannot be traced), each said once by the CLI */
  warnings?: string[];
  /** metricsOnly: the pauses and safepoints counted in the kernel since the previous update */
  histograms?: JavaGcPauseCounts[];
  /** all mode: the JVMs found since the previous update (sent as they are found, so they can be named while they run) */
  found?: number[];
}

/**
 * The collections traced in one JVM during the session against HotSpot's own collection counters
 * (hsperfdata's sun.gc.collector.N.invocations) over the same time: a tracer that saw nothing
 * while the JVM collected says so instead of reporting a quiet JVM.
 */
export interface JavaGcJvmCount {
  pid: number;
  /** collections traced in this JVM (those the JVM's counters count, when they are comparable) */
  counted: number;
  /** the JVM's own count over the session, absent when its counters could not be read */
  jvmCounted?: number;
  /** HotSpot's counters, each with its delta over the session and which of our kinds it counts */
  collectors?: { name: string; invocations: number; kinds?: JavaGcKind[] }[];
  /**
   * agree: equal (or off by a collection in flight at the session's edges); missed: far fewer
   * than the JVM counted (none at all, or under half) — an error; fewer / more: otherwise apart;
   * unread: the counters could not be read (no check); loose: HotSpot's counters for this
   * collector count other things than its collections (ZGC, Shenandoah), so only a JVM that
   * collected while nothing was traced is caught; filtered: --min-us drops short collections,
   * so fewer is expected
   */
  verdict: 'agree' | 'missed' | 'fewer' | 'more' | 'unread' | 'loose' | 'filtered';
  /** the sentence for reports: "pid 12: counted 19 — the JVM counts 19" (and the likely cause when they disagree) */
  message: string;
}

export interface JavaGcSummary {
  /** collections, as the JVM counts them (the sum of every collector's count) */
  count: number;
  fullCount: number;
  /** stop-the-world pauses among them (concurrent cycles are not pauses); the durations below are theirs */
  pauseCount: number;
  totalPauseNs: number;
  p50Ns: number;
  p90Ns: number;
  p99Ns: number;
  maxNs: number;
}

export interface JavaGcHistogramBucket {
  /** µs, inclusive */
  low: number;
  /** µs, inclusive */
  high: number;
  count: number;
}

export interface JavaGcResult {
  tracer: 'java-gc';
  pids: number[];
  events: JavaGcEvent[];
  summary: JavaGcSummary;
  histogram: { unit: 'us'; buckets: JavaGcHistogramBucket[] };
  /** GCs the kernel side dropped (ring buffer full, in-flight map full) */
  lost: number;
  /** per memory manager, in first-seen order */
  collectors: JavaGcCollectorSummary[];
  /** safepoints: `available` false (with the reason) when this JDK has no safepoint probes */
  safepoints: { available: boolean; reason?: string; events: JavaSafepoint[]; summary: JavaSafepointSummary; lost: number };
  /** each traced JVM's count against its own counters (absent from documents older than this check) */
  jvmCounts?: JavaGcJvmCount[];
  /** set when what was traced disagrees with a JVM's own counters so far that the result cannot be trusted (the CLI exits non-zero) */
  problem?: string;
}
