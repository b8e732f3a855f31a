// JSON shapes of the JVM timeline session (`ebpf-studio jvm --json` prints JvmResult): the
// options, the live update and the result. The model over them is extension/model/jvmTimeline.ts,
// which fills in the result's range statistics and timeline state types.
import type { JavaGcEvent, JavaSafepoint } from './javaGc';
import type { ProfileFrame } from './profile';
import type { Bucket } from './histogram';

/** HotSpot names its threads; the kernel keeps the first 15 bytes of each name. */
export type ThreadGroup = 'application' | 'gc' | 'vm' | 'compiler' | 'jvm';
/** The off-CPU states the timeline shows (the off-CPU tracer's states but on-CPU). */
export type OffState = 'sleep' | 'io' | 'lock' | 'preempted';

export interface JvmOptions {
  pid: number;
  /** CPU samples per second per CPU */
  frequency: number;
  /** width of a time slice: how often the run-queue histograms are read and CPU counts diffed */
  sliceMs: number;
}

export interface JvmThread {
  tid: number;
  comm: string;
  group: ThreadGroup;
}

/** One thread's run-queue waits during one slice, µs log2 buckets. */
export interface JvmRunqSlice {
  /** end of the slice, CLOCK_MONOTONIC ns */
  endNs: number;
  /** start of the slice (the previous read) */
  startNs: number;
  tid: number;
  buckets: Bucket[];
}

/** CPU samples taken during one slice: [stack index, samples] pairs. */
export interface JvmCpuSlice {
  startNs: number;
  endNs: number;
  samples: [number, number][];
}

/**
 * Time threads spent off CPU, by state, counted in the slice in which each interval ended (the
 * thread woke): [tid, state index in OFF_STATES, µs] triples, flat.
 */
export interface JvmOffcpuSlice {
  startNs: number;
  endNs: number;
  rows: number[];
}

/** A distinct (thread, stack), leaf first; symbolized when the session stops. */
export interface JvmStack {
  tid: number;
  comm: string;
  frames: ProfileFrame[];
}

/** What a live update (what is new since the last one) and the final result both carry. */
export interface JvmEvents {
  gc: JavaGcEvent[];
  safepoints: JavaSafepoint[];
  safepointsAvailable: boolean;
  safepointsReason?: string;
  runq: JvmRunqSlice[];
  cpu: JvmCpuSlice[];
  stacks: JvmStack[];
  /** off-CPU time by thread and state (absent when the off-CPU tracer could not run, and in older documents) */
  offcpu?: JvmOffcpuSlice[];
  /** why there are no off-CPU figures */
  offcpuReason?: string;
}

export interface JvmUpdate extends JvmEvents {
  startNs: number;
  nowNs: number;
  /** stacks first seen since the previous update, in index order (index = position in the session's list) */
  stacks: JvmStack[];
  /** threads first seen or renamed since the previous update */
  threads: JvmThread[];
  lost: number;
  dropped: number;
  warnings?: string[];
}

/**
 * What the model adds to a result document (the range statistics and the timeline state): its
 * types live in extension/model/jvmTimeline.ts, which declares them into this interface, so the
 * protocol names no model type.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface JvmResultExtras {}

export interface JvmResult extends JvmEvents, JvmResultExtras {
  /** raw events that started before this (CLOCK_MONOTONIC ns) were dropped: only the last RAW_WINDOW_NS of them are kept */
  droppedBeforeNs?: number;
  tracer: 'jvm';
  pid: number;
  frequency: number;
  sliceMs: number;
  startNs: number;
  endNs: number;
  threads: JvmThread[];
  /** GC events, safepoints and CPU samples the kernel could not keep */
  lost: number;
  /** run-queue waits dropped (a kernel map full) */
  dropped: number;
  warnings: string[];
}
