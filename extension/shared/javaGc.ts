// JSON shapes of the Java GC tracer (hotspot USDT gc__begin/gc__end + memory-pool probes).
// JavaGcResult is exactly the document `ebpf-studio java-gc --json` prints.

export interface JavaGcOptions {
  /** the JVM to trace (ignored when `all`) */
  pid: number;
  /** every JVM, including ones that start later: each libjvm.so with USDT, attached with pid -1 */
  all: boolean;
  /** GCs shorter than this (µs) are dropped in the kernel */
  minUs: number;
}

export interface JavaGcPool {
  /** HotSpot's pool name, e.g. "Eden Space", "Tenured Gen", "Metaspace" */
  name: string;
  usedBefore: number;
  usedAfter: number;
  committedAfter: number;
}

export interface JavaGcEvent {
  pid: number;
  /** the thread that ran the pause (HotSpot's VM thread) */
  tid: number;
  /** CPU at gc__end */
  cpu: number;
  /** gc__begin, CLOCK_MONOTONIC ns (bpf_ktime_get_ns) */
  timestampNs: number;
  /** gc__begin → gc__end on the same thread */
  durationNs: number;
  full: boolean;
  pools: JavaGcPool[];
}

export interface JavaGcUpdate {
  /** GCs since the previous update */
  events: JavaGcEvent[];
  /** total events the kernel could not deliver so far */
  lost: number;
  /** every JVM pid seen so far (the target in --pid mode) */
  pids: number[];
  /** session start and now, CLOCK_MONOTONIC ns: the time axis and the wall time for GC overhead */
  startNs: number;
  nowNs: number;
}

export interface JavaGcSummary {
  count: number;
  fullCount: number;
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
}
